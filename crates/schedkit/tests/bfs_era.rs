//! Scenario tests of the BFS-era machines and workloads (issue 14): the wakeup-latency probe's
//! cyclictest semantics, RT tasks among normal ones, the x264 row dependencies, Turbo CORE.

use schedkit::class::RtBalance;
use schedkit::machine::{Governor, Machine};
use schedkit::metrics::RunResult;
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::workload::{file, Workload};

fn run_w(
    policy: &str,
    machine: &str,
    w: &Workload,
    ms: u64,
    governor: Option<Governor>,
    rt_pushpull: bool,
) -> RunResult {
    let m = Machine::load(machine).unwrap();
    let cfg = SimConfig {
        duration_ns: ms * 1_000_000,
        seed: 3,
        audit_every: 0,
        progress: None,
        lock_mode: Default::default(),
        max_live_tasks: schedkit::workload::limits::MAX_TASKS,
        trace: None,
        governor,
        phases: Vec::new(),
        starve: None,
    };
    let mode = if rt_pushpull {
        RtBalance::PushPull
    } else {
        RtBalance::Passive
    };
    PolicyKind::parse(policy)
        .unwrap()
        .simulate_with(mode, &m, w, cfg)
        .unwrap_or_else(|e| panic!("{policy} on {machine} / {}: {e}", w.name))
}

fn run(policy: &str, machine: &str, workload: &str, ms: u64) -> RunResult {
    run_w(
        policy,
        machine,
        &Workload::parse(workload).unwrap(),
        ms,
        None,
        false,
    )
}

/// cyclictest's loop skips expiries it has already missed: a probe whose work (15 ms) is
/// longer than its period (10 ms), alone on one CPU, wakes at 10 ms, works until 25 ms, finds
/// expiry 20 passed (5 ms late), works until 40, finds 30 passed (10 ms late) and skips 40,
/// works until 55, finds 50 passed (5 ms late), … so its lateness alternates 5 and 10 ms and
/// never grows. (An rt-app absolute timer catches up instead, 5, 10, 15, … ms late, and
/// measures nothing: the test checks that it records no lateness.)
#[test]
fn a_cyclic_timer_measures_lateness_and_skips_missed_expiries() {
    let text = r#"
[[channel]]
name = "t"
kind = "task-timer"

[[group]]
name = "probe"
program = ["loop forever", "timer t 10ms cyclic", "compute 15ms", "count", "end"]
"#;
    let w = file::parse_str(text, "probe.toml", "probe").unwrap();
    let r = run_w("o1", "up-2002", &w, 1000, None, false);
    let p = r.metrics.probe_latency_us.expect("a probe ran");
    // Activations: 0..=1000 ms at 15 ms of work each, the first at 10 ms.
    assert!((64..=67).contains(&p.count), "{p:?}");
    // The first wakeup is a few microseconds late (a switch on an idle CPU); the others are
    // about 5 or 10 ms late: each 15 ms of work also carries the kernel's own time (ticks,
    // the timer system call), which shifts later activations by up to a fraction of a ms.
    assert!(p.max >= 10_000.0 && p.max < 10_500.0, "{p:?}");
    assert!(p.p50 >= 5_000.0 && p.p50 < 5_500.0, "{p:?}");
    // rt-app's absolute timer is not cyclictest's loop: it catches up on missed expiries
    // instead of skipping them (its lateness would grow by 5 ms a period) and records none.
    let absolute = text.replace("10ms cyclic", "10ms absolute");
    let w = file::parse_str(&absolute, "abs.toml", "abs").unwrap();
    let r = run_w("o1", "up-2002", &w, 1000, None, false);
    assert!(r.metrics.probe_latency_us.is_none(), "no lateness op");
}

/// The probe beside a build reports its lateness; a probe whose CPU is idle is late only by
/// the switch.
#[test]
fn the_probe_reports_its_lateness_beside_a_workload() {
    let r = run("bfs", "phenom-x6", "makej:jobs=3,units=12+probe", 30_000);
    let p = r.metrics.probe_latency_us.expect("probe latency");
    // 1 ms period over the build's length.
    let expected = r.simulated_s * 1000.0;
    assert!(
        (p.count as f64) > expected * 0.95 && (p.count as f64) < expected * 1.05,
        "{p:?} over {} s",
        r.simulated_s
    );
    // With 3 jobs on 6 cores a CPU is always idle for BFS to wake the probe on: never later
    // than a switch, an IPI and leaving C1E (phenom-x6: 0.49 + 1 + 2 µs) plus the timer call.
    assert!(p.max < 10.0, "{p:?}");
    assert_eq!(
        r.metrics.throughput.unit, "jobs/s",
        "the build is the figure"
    );
}

/// "BFS in real time": two RT tasks and two hogs on a dual CPU. The per-CPU O(1) class with
/// passive RT balancing leaves both RT tasks on the CPU their parent forked them on (the
/// periodic balancer sees two tasks per CPU: balanced), so each RT activation waits for the
/// other's 3 ms; push/pull moves the second RT task to the CPU running a hog, and BFS's global
/// queue preempts the CPU running the worst task.
#[test]
fn rt_tasks_among_hogs_stack_on_one_cpu_only_under_passive_balancing() {
    let w = Workload::parse("rtmix:rt=2,normal=2,period=10ms,work=3ms").unwrap();
    let passive = run_w("o1", "smp2-2002", &w, 3000, None, false);
    let pushpull = run_w("o1", "smp2-2002", &w, 3000, None, true);
    let bfs = run_w("bfs", "smp2-2002", &w, 3000, None, false);
    let late = |r: &RunResult| r.metrics.probe_latency_us.unwrap().p99;
    assert!(
        late(&passive) > 2_000.0,
        "{:?}",
        passive.metrics.probe_latency_us
    );
    assert!(
        late(&pushpull) < 50.0,
        "{:?}",
        pushpull.metrics.probe_latency_us
    );
    assert!(late(&bfs) < 50.0, "{:?}", bfs.metrics.probe_latency_us);
    // Every RT period is served in all three (3 ms of 10 ms each, two tasks, two CPUs).
    for r in [&passive, &pushpull, &bfs] {
        assert!((r.metrics.throughput.value - 200.0).abs() < 2.0, "{r:?}");
    }
}

/// x264's row dependency: with the motion-vector range as long as the frame (each row waits
/// for the whole previous frame), two frame threads on two CPUs encode one frame after the
/// other; with a range of 1 row the next frame follows a row behind and the two overlap.
#[test]
fn x264_frames_overlap_only_as_far_as_the_mv_range_allows() {
    let spec = |mv| format!("x264:threads=2,frames=8,rows=16,row=1ms,mvrange={mv},lookahead=0");
    let serial = run("cfs", "smp2-2002", &spec(15), 10_000);
    let pipelined = run("cfs", "smp2-2002", &spec(1), 10_000);
    assert!(serial.completed && pipelined.completed);
    // Serial: 8 frames x 16 rows x ~1 ms (log-normal around 1 ms, mean e^(0.045) = 1.046).
    assert!(
        serial.simulated_s > 0.8 * 8.0 * 16.0 * 1.046e-3,
        "{}",
        serial.simulated_s
    );
    // Pipelined: two threads keep both CPUs busy, nearly half the time.
    assert!(
        pipelined.simulated_s < serial.simulated_s * 0.65,
        "{} vs {}",
        pipelined.simulated_s,
        serial.simulated_s
    );
    assert!((serial.metrics.throughput.value * serial.simulated_s - 8.0).abs() < 0.01);
}

/// Turbo CORE (phenom-x6): up to three busy cores run at 3.6 GHz, four or more at the base
/// 3.2 GHz. One second of work at 3.2 GHz therefore takes 3200/3600 s on three threads and a
/// full second on four (the performance governor: no P-state change).
#[test]
fn turbo_core_boosts_only_up_to_three_busy_cores() {
    let t = |n| {
        let w = Workload::parse(&format!("cpujob:threads={n},work=1s")).unwrap();
        run_w(
            "cfs",
            "phenom-x6",
            &w,
            5000,
            Some(Governor::Performance),
            false,
        )
        .simulated_s
    };
    let three = t(3);
    let four = t(4);
    assert!((three - 3200.0 / 3600.0).abs() < 0.002, "{three}");
    assert!((four - 1.0).abs() < 0.002, "{four}");
}

/// Per-core P-states under ondemand: a task that sleeps 40 ms and then computes 5 ms (at the
/// top clock) finds its core lowered to 800 MHz by the samples of its sleep; a 10 ms sample
/// that straddles a burst sees at most about half the window busy at 800 MHz, under the 95 %
/// threshold, so most bursts run at 800 MHz throughout (four times as long). Under performance
/// every burst runs at the one-busy-core turbo bin, 3.6 GHz.
#[test]
fn ondemand_leaves_a_bursty_task_on_a_lowered_core() {
    let text = r#"
[[group]]
name = "burst"
program = ["loop 40", "sleep 40ms", "compute 5ms", "count", "end"]
"#;
    let w = file::parse_str(text, "burst.toml", "burst").unwrap();
    let od = run_w(
        "cfs",
        "phenom-x6",
        &w,
        10_000,
        Some(Governor::Ondemand),
        false,
    );
    let perf = run_w(
        "cfs",
        "phenom-x6",
        &w,
        10_000,
        Some(Governor::Performance),
        false,
    );
    let mean_mhz = |r: &RunResult| {
        let p = r.metrics.power.as_ref().unwrap();
        p.busy_at_mhz.iter().map(|f| f.mhz * f.share).sum::<f64>()
    };
    assert!(
        (mean_mhz(&perf) - 3600.0).abs() < 1.0,
        "{}",
        mean_mhz(&perf)
    );
    assert!(mean_mhz(&od) < 1500.0, "{}", mean_mhz(&od));
    // 40 x (40 ms + 5 ms x 3200/3600) under performance.
    assert!((perf.simulated_s - 40.0 * (0.040 + 0.005 * 3200.0 / 3600.0)).abs() < 0.01);
    assert!(
        od.simulated_s > perf.simulated_s + 0.3,
        "{}",
        od.simulated_s
    );
}

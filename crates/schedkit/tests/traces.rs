//! Traces out and back in: a simulated run written as ftrace text and read again gives back
//! the run's own figures; the Perfetto writer carries every event.

use schedkit::machine::Machine;
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::trace::{self, figures::figures, TraceRecorder};
use schedkit::workload::Workload;

fn traced(
    policy: PolicyKind,
    machine: &str,
    workload: &str,
    window: Option<(u64, u64)>,
) -> (schedkit::metrics::RunResult, trace::Trace) {
    let m = Machine::load(machine).unwrap();
    let w = Workload::parse(workload).unwrap();
    let mut rec = TraceRecorder::new(window);
    let cfg = SimConfig {
        duration_ns: 200_000_000,
        trace: Some(&mut rec),
        ..Default::default()
    };
    let r = policy.simulate(&m, &w, cfg).unwrap();
    (r, rec.finish())
}

#[test]
fn a_traced_run_gives_back_its_own_figures() {
    for policy in [PolicyKind::O1, PolicyKind::Eevdf] {
        let (r, t) = traced(policy, "smp2-2002", "hackbench:groups=2,loops=20", None);
        let f = figures(&t);
        let m = &r.metrics;
        assert_eq!(f.context_switches, m.context_switches, "{policy:?}");
        assert_eq!(f.migrations, m.migrations, "{policy:?}");
        // Every task the run created is in the trace (each is forked or started by a
        // sched_wakeup_new).
        assert_eq!(t.tasks.len() as u64, m.tasks_created, "{policy:?}");
        // The run counts each task it starts (no fork) as a wakeup to its first run; the
        // trace's figures do not (a recorded kernel never woke the tasks it had before its
        // trace began), and count every other one alike.
        let started = t.tasks.len()
            - t.events
                .iter()
                .filter(|e| matches!(e.kind, trace::EventKind::Fork { .. }))
                .count();
        assert!(started > 0, "{policy:?}");
        assert_eq!(
            f.wakeup_latency_us.count + started as u64,
            m.wakeup_latency_us.count,
            "{policy:?}"
        );
        // CPU time: the tasks' intervals on CPUs against the CPUs' time not idle. The trace
        // cuts at the switch, where the context switch's own cost begins, so schedule()
        // time falls on either side of it; the idle task's share of it is not a task's.
        let cpu = &m.cpu_time_s;
        let busy = cpu.user + cpu.sys + cpu.sched + cpu.lock_spin + cpu.cache_refill + cpu.irq;
        assert!(
            (f.busy_cpu_s - busy).abs() / busy < 0.02,
            "{policy:?}: trace {} s vs run {} s",
            f.busy_cpu_s,
            busy
        );
        // Written as ftrace text and read back: the same trace, the same figures.
        let text = trace::ftrace::to_string(&t);
        let back = trace::import::parse(&text).unwrap();
        assert_eq!(back.stats.malformed + back.stats.truncated_edges, 0);
        assert_eq!(back.events.len(), t.events.len());
        let fb = figures(&back);
        assert_eq!(fb.context_switches, f.context_switches);
        assert_eq!(fb.migrations, f.migrations);
        assert_eq!(fb.wakeups, f.wakeups);
        assert_eq!(fb.busy_cpu_s, f.busy_cpu_s);
        assert_eq!(fb.wakeup_latency_us, f.wakeup_latency_us);
        // And as Perfetto protobuf: every event, waking ones twice (waking + wakeup).
        let pb = trace::perfetto::decode(&trace::perfetto::encode(&t)).unwrap();
        let n: usize = pb
            .packet
            .iter()
            .filter_map(|p| p.ftrace_events.as_ref())
            .map(|b| b.event.len())
            .sum();
        let wakings = t
            .events
            .iter()
            .filter(|e| matches!(e.kind, trace::EventKind::Waking { .. }))
            .count();
        assert_eq!(n, t.events.len() + wakings);
    }
}

#[test]
fn a_window_keeps_only_its_events() {
    let (_, all) = traced(
        PolicyKind::O1,
        "smp2-2002",
        "chat:rooms=2,messages=50",
        None,
    );
    let (_, part) = traced(
        PolicyKind::O1,
        "smp2-2002",
        "chat:rooms=2,messages=50",
        Some((10_000_000, 20_000_000)),
    );
    assert!(!part.events.is_empty());
    assert!(part.events.len() < all.events.len());
    assert!(part
        .events
        .iter()
        .all(|e| (10_000_000..=20_000_000).contains(&e.ts)));
    assert_eq!((part.start_ns, part.end_ns), (10_000_000, 20_000_000));
}

#[test]
fn tracing_does_not_change_the_run() {
    let m = Machine::load("smp2-2002").unwrap();
    let w = Workload::parse("chat:rooms=2,messages=50").unwrap();
    let plain = PolicyKind::Cfs
        .simulate(
            &m,
            &w,
            SimConfig {
                duration_ns: 200_000_000,
                ..Default::default()
            },
        )
        .unwrap();
    let (mut traced_run, _) = traced(
        PolicyKind::Cfs,
        "smp2-2002",
        "chat:rooms=2,messages=50",
        None,
    );
    let mut plain = plain;
    plain.metrics.sim.wall_s = 0.0;
    traced_run.metrics.sim.wall_s = 0.0;
    assert_eq!(plain, traced_run);
}

#[test]
fn a_simulated_trace_replays_into_a_workload() {
    let (r, t) = traced(
        PolicyKind::Eevdf,
        "smp2-2002",
        "hackbench:groups=1,loops=10",
        None,
    );
    let (w, rep) = trace::replay::workload(
        &t,
        "replayed",
        &trace::replay::OpPrices::of_machine(&Machine::load("smp2-2002").unwrap()),
    )
    .unwrap();
    assert!(rep.stats.task_wakeups > 0);
    assert_eq!(rep.stats.forks, figures(&t).forks);
    let m = Machine::load("smp2-2002").unwrap();
    let again = PolicyKind::Eevdf
        .simulate(
            &m,
            &w,
            SimConfig {
                duration_ns: 2_000_000_000,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(again.completed, "{:?}", again.deadlock);
    // The replay runs the recorded CPU time plus its own system calls.
    let busy =
        |r: &schedkit::metrics::RunResult| r.metrics.cpu_time_s.user + r.metrics.cpu_time_s.sys;
    assert!(
        busy(&again) > 0.5 * busy(&r),
        "{} vs {}",
        busy(&again),
        busy(&r)
    );
}

/// Replay of the traces recorded on the project VM (traces/, scripts/record-trace.sh) under
/// eevdf on `host`, against the recorded figures. The errors asserted are the ones
/// docs/traces.md states and explains (pipe −0.2% switches, +1.5% CPU; messaging −36.4%
/// switches, +2.1% CPU).
#[test]
fn recorded_traces_replay_within_the_documented_error() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces");
    // The host profile as written (the 2-vCPU VM the traces were recorded on), not with this
    // machine's /sys topology: the test must not depend on where it runs.
    let host = Machine::from_toml(
        include_str!("../../../profiles/host.toml"),
        "profiles/host.toml",
    )
    .unwrap();
    assert_eq!(host.ncpus(), 2);
    let prices = trace::replay::OpPrices::of_machine(&host);
    let replay = |name: &str| {
        let t = trace::input::load(std::path::Path::new(&format!("{dir}/{name}"))).unwrap();
        let (w, _) = trace::replay::workload(&t, name, &prices).unwrap();
        let mut rec = TraceRecorder::new(None);
        let r = PolicyKind::Eevdf
            .simulate(
                &host,
                &w,
                SimConfig {
                    duration_ns: 2_000_000_000,
                    trace: Some(&mut rec),
                    ..Default::default()
                },
            )
            .unwrap();
        assert!(r.completed, "{name}: {:?}", r.deadlock);
        (figures(&t), figures(&rec.finish()))
    };
    let ratio = |a: f64, b: f64| a / b;

    // Ping-pong over a pipe: every switch is a sleep or a wakeup the trace records, so the
    // replay's switches follow; its CPU time is the recorded one, the switches and IPIs the
    // recorded runs already paid taken off them (the simulator charges its own).
    let (rec, sim) = replay("pipe-vm.txt");
    let cs = ratio(sim.context_switches as f64, rec.context_switches as f64);
    let cpu = ratio(sim.busy_cpu_s, rec.busy_cpu_s);
    assert!((0.95..=1.05).contains(&cs), "pipe switches {cs}");
    assert!((0.97..=1.05).contains(&cpu), "pipe CPU {cpu}");

    // Messaging (perf bench sched messaging): CPU time holds; the simulated EEVDF switches
    // less than the recorded kernel did (docs/traces.md: receivers find their wakeups
    // already posted more often, so they sleep less).
    let (rec, sim) = replay("messaging-vm.txt");
    let cs = ratio(sim.context_switches as f64, rec.context_switches as f64);
    let cpu = ratio(sim.busy_cpu_s, rec.busy_cpu_s);
    assert!((0.97..=1.05).contains(&cpu), "messaging CPU {cpu}");
    assert!((0.5..=1.1).contains(&cs), "messaging switches {cs}");
}

/// Where a statement or task came from: a line of the file when read from TOML, the trace
/// task when built as data. All else must be equal.
fn without_origins(mut w: Workload) -> Workload {
    for p in &mut w.programs {
        p.source = None;
    }
    for t in &mut w.tasks {
        t.origin = None;
    }
    w
}

/// Every trace file under `dir` (not its subfolders).
fn traces_in(dir: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".txt") || n.ends_with(".txt.gz") || n.ends_with(".dat")
        })
        .collect();
    v.sort();
    v
}

/// A replay's workload, built as data, is the one its exported TOML (`--emit-workload`)
/// reads back into, for every recorded trace of the repository.
#[test]
fn a_replay_built_as_data_is_its_exported_toml_read_back() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces");
    let host = Machine::from_toml(
        include_str!("../../../profiles/host.toml"),
        "profiles/host.toml",
    )
    .unwrap();
    let prices = trace::replay::OpPrices::of_machine(&host);
    let mut files = traces_in(root);
    files.extend(traces_in(&format!("{root}/validation")));
    files.extend(traces_in(&format!("{root}/holdout")));
    assert!(files.len() >= 20, "{files:?}");
    for f in files {
        let t = trace::input::load(&f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let (built, rep) = trace::replay::workload(&t, &name, &prices).unwrap();
        let read = schedkit::workload::file::parse_str(&rep.toml(), &name, &name).unwrap();
        // Two of them simulated both ways: the same run, bit for bit.
        if name == "pipe-vm.txt" || name == "messaging-vm.txt" {
            let run = |w: &Workload| {
                let mut r = PolicyKind::Eevdf
                    .simulate(
                        &host,
                        w,
                        SimConfig {
                            duration_ns: 500_000_000,
                            ..Default::default()
                        },
                    )
                    .unwrap();
                r.metrics.sim.wall_s = 0.0;
                r
            };
            assert_eq!(run(&built), run(&read), "{name}");
        }
        assert!(
            without_origins(built) == without_origins(read),
            "{}: the workload built as data differs from its TOML read back",
            f.display()
        );
    }
}

/// `send CH sync` (what a replay writes for an exiting task's wakeup of its parent in
/// `wait()`) wakes the reader with WF_SYNC. Under 6.18's class, on a machine whose two CPUs have a cache each
/// (smp2-2002), `wake_affine_idle` then takes the waker's CPU, where the waker is the only
/// task, and `select_idle_sibling` keeps it there (the reader's idle CPU shares no cache with
/// it): the reader moves. A plain send finds the reader's own CPU idle and leaves it there.
#[test]
fn a_sync_send_pulls_its_reader_onto_the_wakers_cpu() {
    let m = Machine::load("smp2-2002").unwrap();
    let reader_cpus = |send: &str| {
        let text = format!(
            "name = \"sync\"\n[[channel]]\nname = \"wake\"\nkind = \"semaphore\"\n\
             [[group]]\nname = \"reader\"\nprogram = [\"affinity 1\", \"compute 100us\", \"affinity 0,1\", \"recv wake\", \"compute 100us\"]\n\
             [[group]]\nname = \"waker\"\nprogram = [\"affinity 0\", \"compute 1ms\", \"affinity 0,1\", \"{send}\", \"compute 1ms\"]\n"
        );
        let w = schedkit::workload::file::parse_str(&text, "sync.toml", "sync").unwrap();
        let mut rec = TraceRecorder::new(None);
        let cfg = SimConfig {
            duration_ns: 100_000_000,
            trace: Some(&mut rec),
            ..Default::default()
        };
        let r = PolicyKind::Eevdf618(Default::default())
            .simulate(&m, &w, cfg)
            .unwrap();
        assert!(r.completed, "{:?}", r.deadlock);
        let t = rec.finish();
        let reader = t
            .tasks
            .iter()
            .position(|k| k.comm.contains("reader"))
            .expect("the reader is in the trace");
        // The CPUs the reader ran on after its wakeup.
        let mut woken = false;
        let mut cpus = vec![];
        for e in &t.events {
            match e.kind {
                trace::EventKind::Waking { task, .. } if task == reader => woken = true,
                trace::EventKind::Switch { next: Some(n), .. } if n == reader && woken => {
                    cpus.push(e.cpu)
                }
                _ => {}
            }
        }
        cpus
    };
    assert_eq!(reader_cpus("send wake"), [1]);
    assert_eq!(reader_cpus("send wake sync"), [0]);
}

/// A timed sleep that names the CPU of its interrupt (`sleep D irq-on N`, what a replay
/// writes for a recorded interrupt's wakeup) is woken from that CPU: its `sched_waking` is
/// there, and so are the interrupt and the wakeup's choice of CPU (`select_task_rq` runs on
/// the waking CPU). Without it, the interrupt is the sleeper's own CPU's.
#[test]
fn a_sleep_is_woken_from_the_cpu_its_interrupt_names() {
    let m = Machine::load("host").unwrap();
    let wakings_on = |irq: &str, hogs: bool| {
        let mut text = format!(
            "name = \"irq\"\n[[group]]\nname = \"sleeper\"\naffinity = [0]\nprogram = [\"loop 20\", \"compute 50us\", \"sleep 200us{irq}\", \"end\"]\n"
        );
        if hogs {
            for cpu in 0..2 {
                text += &format!("[[group]]\nname = \"hog{cpu}\"\naffinity = [{cpu}]\nbackground = true\nprogram = [\"loop forever\", \"compute 1ms\", \"end\"]\n");
            }
        }
        let w = schedkit::workload::file::parse_str(&text, "irq.toml", "irq").unwrap();
        let mut rec = TraceRecorder::new(None);
        let cfg = SimConfig {
            duration_ns: 100_000_000,
            trace: Some(&mut rec),
            ..Default::default()
        };
        let r = PolicyKind::Eevdf.simulate(&m, &w, cfg).unwrap();
        assert!(r.completed, "{:?}", r.deadlock);
        let t = rec.finish();
        let sleeper = t
            .tasks
            .iter()
            .position(|k| k.comm.contains("sleeper"))
            .expect("the sleeper is in the trace");
        let mut cpus = [0u32; 2];
        for e in &t.events {
            if matches!(e.kind, trace::EventKind::Waking { task, .. } if task == sleeper) {
                cpus[e.cpu as usize] += 1;
            }
        }
        assert_eq!(
            figures(&t).tasks[sleeper].wakeups,
            20,
            "irq '{irq}', hogs {hogs}"
        );
        cpus
    };
    assert_eq!(wakings_on("", false), [20, 0]);
    assert_eq!(wakings_on(" irq-on 1", false), [0, 20]);
    // With both CPUs busy (a hog on each), CPU 1's interrupt wakes the sleeper onto CPU 0
    // with an IPI, sent after the waking: every switch-in follows its own waking, so the
    // trace's figures count all 20 wakeups (its start, with no fork, is not one).
    assert_eq!(wakings_on(" irq-on 1", true), [0, 20]);
    // A CPU the machine lacks is refused, naming the program and the CPU.
    let text =
        "name = \"irq\"\n[[group]]\nname = \"sleeper\"\nprogram = [\"sleep 200us irq-on 7\"]\n";
    let w = schedkit::workload::file::parse_str(text, "irq.toml", "irq").unwrap();
    let e = PolicyKind::Eevdf
        .simulate(&m, &w, SimConfig::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("'sleeper'") && e.contains("CPU 7"), "{e}");
}

//! Tasks that start later (`start=`) and changes made to live tasks from outside at a given
//! time (`renice=`, `chpolicy=`): the building blocks of the CFS v19 report's procedure
//! (issue 29), checked against shares computed by hand from the classes' weights.

use schedkit::class::RtBalance;
use schedkit::machine::Machine;
use schedkit::metrics::RunResult;
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::workload::Workload;

fn run(policy: &str, workload: &str, ms: u64) -> RunResult {
    let m = Machine::load("up-2002").unwrap();
    let cfg = SimConfig {
        duration_ns: ms * 1_000_000,
        seed: 1,
        ..Default::default()
    };
    PolicyKind::parse(policy)
        .unwrap()
        .simulate_with(
            RtBalance::Passive,
            &m,
            &Workload::parse(workload).unwrap(),
            cfg,
        )
        .unwrap_or_else(|e| panic!("{policy} / {workload}: {e}"))
}

fn cpu_s_per_s(r: &RunResult) -> f64 {
    r.metrics.throughput.value
}

/// Two loops that start at 1 s of a 2 s run: the CPU is idle for the first half and the
/// loops share the second, under every class; the run waits for them instead of ending (or
/// being declared stuck) at once.
#[test]
fn tasks_that_start_later_leave_the_cpu_idle_until_then() {
    for policy in ["goodness", "o1", "cfs", "eevdf", "bfs"] {
        let r = run(policy, "loops:n=2,start=1s", 2000);
        assert!(
            (r.metrics.idle_fraction - 0.5).abs() < 0.01,
            "{policy}: idle {}",
            r.metrics.idle_fraction
        );
        assert!((cpu_s_per_s(&r) - 0.5).abs() < 0.02, "{policy}");
        assert_eq!(r.metrics.tasks_created, 2);
    }
}

/// A nice-0 loop beside a nice-19 one reniced to 0 at 1 s. EEVDF's weights (1024 against
/// 15) give the first loop 1024/1039 = 98.6 % of the first second and half of the second:
/// 0.743 CPU-s/s in all. Without the renice it keeps 98.6 %.
#[test]
fn a_renice_at_a_time_changes_the_share_from_then_on() {
    let with = run("eevdf", "loops:n=1+loops:n=1,nice=19,renice=1s/0", 2000);
    let without = run("eevdf", "loops:n=1+loops:n=1,nice=19", 2000);
    let expect = (1024.0 / 1039.0 + 0.5) / 2.0;
    assert!(
        (cpu_s_per_s(&with) - expect).abs() < 0.02,
        "{} against {expect}",
        cpu_s_per_s(&with)
    );
    assert!((cpu_s_per_s(&without) - 1024.0 / 1039.0).abs() < 0.02);
}

/// `chrt -i -p 0` at 1 s: the second loop becomes SCHED_IDLE (weight 3 in EEVDF) and the
/// first gets 1024/1027 of the second half instead of half of it.
#[test]
fn a_policy_change_to_sched_idle_leaves_the_cpu_to_the_other_loop() {
    let r = run("eevdf", "loops:n=1+loops:n=1,chpolicy=1s/idle", 2000);
    let expect = (0.5 + 1024.0 / 1027.0) / 2.0;
    assert!(
        (cpu_s_per_s(&r) - expect).abs() < 0.02,
        "{} against {expect}",
        cpu_s_per_s(&r)
    );
}

/// A task reniced while it sleeps: the class must take the new weight when it wakes. The
/// second group sleeps 0.5 s and then loops; reniced to 19 at 0.25 s (asleep), it gets 15/1039
/// of the CPU beside the nice-0 loop after waking, under the classes that keep a load weight.
#[test]
fn a_sleeping_task_reniced_wakes_with_its_new_weight() {
    let dir = std::env::temp_dir().join(format!("schedkit-timed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sleeper.toml");
    std::fs::write(
        &file,
        r#"
[[group]]
name = "sleeper"
renice = ["250ms/19"]
program = ["sleep 500ms", "loop forever", "compute 10ms", "end"]
"#,
    )
    .unwrap();
    let spec = format!("loops:n=1+{}", file.display());
    for policy in ["cfs:era=2.6.23", "cfs", "eevdf", "eevdf:era=6.18"] {
        let r = run(policy, &spec, 2000);
        // The first 0.5 s alone, then 1024/1039 of the rest.
        let expect = (0.5 + 1.5 * 1024.0 / 1039.0) / 2.0;
        assert!(
            (cpu_s_per_s(&r) - expect).abs() < 0.03,
            "{policy}: {} against {expect}",
            cpu_s_per_s(&r)
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A change reaches every live task of the group, those forked from its program too: a
/// nice-0 shell forks two loops (group `hog`, a template), which are made SCHED_IDLE at 1 s
/// beside a nice-0 loop. Under EEVDF the two hogs then weigh 3 each against 1024.
#[test]
fn a_change_reaches_the_tasks_forked_from_the_group() {
    let dir = std::env::temp_dir().join(format!("schedkit-timed-f-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("forked.toml");
    std::fs::write(
        &file,
        r#"
[[group]]
name = "main"
program = ["loop forever", "compute 10ms", "count", "end"]

[[group]]
name = "shell"
background = true
program = ["fork hog", "fork hog", "loop forever", "sleep 1s", "end"]

[[group]]
name = "hog"
count = 0
background = true
chpolicy = ["1s/idle"]
program = ["loop forever", "compute 10ms", "end"]
"#,
    )
    .unwrap();
    let r = run("eevdf", file.to_str().unwrap(), 2000);
    // A third of the first second, then 1024/1030 of the second; `count` every 10 ms of CPU
    // makes 100 a second of the whole CPU.
    let expect = 100.0 * (1.0 / 3.0 + 1024.0 / 1030.0) / 2.0;
    assert!(
        (cpu_s_per_s(&r) - expect).abs() < 3.0,
        "{} against {expect}",
        cpu_s_per_s(&r)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A change addressed to tasks that have already exited is dropped, while a change at the
/// same time reaches the live tasks of another group: the run goes on to its end, and the main
/// loop gets more of the CPU than without the second change. (The short group's tasks exit
/// within 2 ms; the changes come at 10 ms; the loop keeps the run alive to 300 ms.)
#[test]
fn a_change_to_a_task_that_exited_is_skipped() {
    let dir = std::env::temp_dir().join(format!("schedkit-timed-x-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = r#"
[[group]]
name = "main"
program = ["loop forever", "compute 1ms", "count", "end"]

[[group]]
name = "short"
count = 2
background = true
chpolicy = ["10ms/idle"]
program = ["compute 1ms", "exit"]

[[group]]
name = "other"
background = true
renice = ["10ms/19"]
program = ["loop forever", "compute 1ms", "end"]
"#;
    let share = |text: &str, name: &str| {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let r = run("eevdf", file.to_str().unwrap(), 300);
        assert_eq!(r.stop_reason, "time_limit");
        r.metrics.throughput.count
    };
    let with = share(text, "with.toml");
    let without = share(
        &text.replace("renice = [\"10ms/19\"]\n", ""),
        "without.toml",
    );
    assert!(with > without, "{with} counts against {without}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A change made at the instant its group starts reaches it: starts come first.
#[test]
fn a_change_at_the_start_of_its_group_applies() {
    let with = run("eevdf", "loops:n=1+loops:n=1,start=1s,renice=1s/19", 2000);
    let expect = (1.0 + 1024.0 / 1039.0) / 2.0;
    assert!(
        (cpu_s_per_s(&with) - expect).abs() < 0.02,
        "{} against {expect}",
        cpu_s_per_s(&with)
    );
}

/// A change that makes a queued task SCHED_FIFO takes the CPU at once (an IPI to the task's
/// CPU), not at the next tick: the loop made RT at 1.0135 s gets the CPU within microseconds.
#[test]
fn a_change_to_rt_preempts_at_once() {
    for policy in ["cfs", "eevdf", "o1"] {
        let m = Machine::load("up-2002").unwrap();
        let mut rec = schedkit::trace::TraceRecorder::new(None);
        let cfg = SimConfig {
            duration_ns: 1_100_000_000,
            trace: Some(&mut rec),
            ..Default::default()
        };
        let w = Workload::parse("loops:n=1+loops:n=1,chpolicy=1013500us/fifo:10").unwrap();
        PolicyKind::parse(policy)
            .unwrap()
            .simulate_with(RtBalance::Passive, &m, &w, cfg)
            .unwrap();
        let trace = rec.finish();
        // After the change, the RT loop (task 1, the second part) runs without a break: no
        // switch away from it, and its first switch-in after 1.0135 s comes before 1.014 s.
        let first_in = trace
            .events
            .iter()
            .filter(|e| e.ts >= 1_013_500_000)
            .find_map(|e| match &e.kind {
                schedkit::trace::EventKind::Switch { next: Some(n), .. }
                    if trace.tasks[*n].pid == 2 =>
                {
                    Some(e.ts)
                }
                _ => None,
            });
        assert!(
            first_in.is_some_and(|t| t < 1_014_000_000),
            "{policy}: the RT task first ran at {first_in:?}"
        );
    }
}

/// A start or a change after the run's end is refused, naming it.
#[test]
fn starts_and_changes_after_the_end_are_refused() {
    let m = Machine::load("up-2002").unwrap();
    for (spec, says) in [
        ("loops:n=1+loops:n=1,start=2s", "starts at 2 s"),
        ("loops:n=1,renice=3s/5", "at or after the run's end"),
    ] {
        let cfg = SimConfig {
            duration_ns: 1_000_000_000,
            ..Default::default()
        };
        let e = PolicyKind::parse("cfs")
            .unwrap()
            .simulate(&m, &Workload::parse(spec).unwrap(), cfg)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{spec}: {e}");
    }
}

#[test]
fn bad_changes_are_refused_with_the_reason() {
    let err = |spec: &str| Workload::parse(spec).unwrap_err().to_string();
    assert!(err("loops:renice=1s").contains("TIME/NICE"));
    assert!(err("loops:renice=1s/25").contains("outside -20..=19"));
    assert!(err("loops:renice=soon/5").contains("renice=soon/5"));
    assert!(err("loops:chpolicy=1s/rr").contains("needs a priority"));
    assert!(err("loops:chpolicy=1s/idle:3").contains("takes no priority"));
    assert!(err("loops:chpolicy=1s/fifo:100").contains("1..=99"));
    assert!(err("loops:chpolicy=1s/deadline").contains("chpolicy to deadline is not supported"));
    assert!(err("loops:start=2s,renice=1s/0").contains("before the tasks start"));
    assert!(err("loops:start=-1s").contains("start"));
    // A renice level written with its sign is not split off as a workload of its own.
    let w = Workload::parse("loops:n=1+loops:n=1,renice=1s/+5+desktop").unwrap();
    assert_eq!(w.changes.len(), 1);
    assert_eq!(w.changes[0].change.to, schedkit::workload::AttrTo::Nice(5));
    assert!(w.name.ends_with("renice=1s/5+desktop"), "{}", w.name);
    // Names with parameters added parse back, a built-in without parameters of its own too.
    let w = Workload::parse("loops:n=1+desktop:start=1s").unwrap();
    assert_eq!(w.name, "loops:n=1+desktop:start=1s");
    assert_eq!(Workload::parse(&w.name).unwrap(), w);
    let e = schedkit::workload::file::parse_str(
        "[[group]]\nname = \"t\"\ncount = 0\nstart = \"1s\"\nprogram = [\"exit\"]\n[[group]]\nname = \"m\"\nprogram = [\"exit\"]\n",
        "t.toml",
        "t",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("template"), "{e}");
}

/// The changes show in the workload's name, in the form the parser reads back.
#[test]
fn a_workload_with_changes_names_them_and_parses_back() {
    let w = Workload::parse("loops:n=2,start=500ms,renice=1s/5,chpolicy=2s/fifo:50").unwrap();
    assert_eq!(
        w.name,
        "loops:n=2,start=500ms,renice=1s/5,chpolicy=2s/fifo:50"
    );
    assert_eq!(Workload::parse(&w.name).unwrap(), w);
}

/// The phases of a run split its figures: the switches and audio periods of the phases add
/// up to the run's, and each phase sees only its own part (no audio before the player
/// starts).
#[test]
fn phases_split_the_run_and_add_up() {
    let m = Machine::load("athlonmp2-2007").unwrap();
    let cfg = SimConfig {
        duration_ns: 3_000_000_000,
        seed: 1,
        phases: vec![1_000_000_000, 2_000_000_000],
        ..Default::default()
    };
    let w = Workload::parse("mpg123:start=1s+interactive+loops:n=8,nice=19").unwrap();
    let r = PolicyKind::parse("cfs")
        .unwrap()
        .simulate_with(RtBalance::Passive, &m, &w, cfg)
        .unwrap();
    assert_eq!(r.phases.len(), 3);
    let switches: f64 = r
        .phases
        .iter()
        .map(|p| p.context_switches_per_s * (p.to_s - p.from_s))
        .sum();
    assert!((switches - r.metrics.context_switches as f64).abs() < 0.5);
    assert!(r.phases[0].audio.is_none(), "the player starts at 1 s");
    let periods: u64 = r
        .phases
        .iter()
        .filter_map(|p| p.audio)
        .map(|a| a.chunks)
        .sum();
    assert_eq!(periods, r.metrics.audio.unwrap().chunks);
    assert_eq!(
        r.phases.iter().map(|p| p.migrations).sum::<u64>(),
        r.metrics.migrations
    );
    assert_eq!((r.phases[1].from_s, r.phases[2].to_s), (1.0, 3.0));
}

/// Loops forked by a shell: the shell (nice 0) forks each, each renices itself and execs the
/// loop; the shell is gone once all are started, and the loops run at nice 19 (a nice-0
/// task beside them gets 1024/(1024 + 8 × 15) of the CPU under EEVDF once they run).
#[test]
fn loops_forked_from_a_shell_are_started_one_by_one() {
    let r = run("eevdf", "loops:n=1+loops:n=8,nice=19,from=shell", 2000);
    assert_eq!(r.metrics.tasks_created, 1 + 1 + 8);
    let expect = 1024.0 / (1024.0 + 8.0 * 15.0);
    assert!(
        (cpu_s_per_s(&r) - expect).abs() < 0.03,
        "{} against {expect}",
        cpu_s_per_s(&r)
    );
    let w = Workload::parse("loops:n=8,nice=19,from=shell").unwrap();
    assert_eq!(w.tasks.len(), 1, "one shell at the start");
    assert_eq!(w.tasks[0].nice, 0, "the shell stays at nice 0");
    assert!(Workload::parse("loops:from=bash")
        .unwrap_err()
        .to_string()
        .contains("from=bash"));
}

/// mpg123's cost per ALSA period, from its documented decode time: 19 s of a 366 MHz
/// Pentium II for 598 s of sound, per 125 ms period.
#[test]
fn mpg123_decodes_a_period_in_the_documented_cycles() {
    let w = Workload::parse("mpg123").unwrap();
    let cycles = w.programs[0]
        .ops
        .iter()
        .find_map(|op| match op {
            schedkit::workload::Op::ComputeCycles(c) => Some(*c),
            _ => None,
        })
        .unwrap();
    assert_eq!(cycles, (19.0 * 366e6 / 598.0 * 0.125f64).round() as u64);
    let r = run("o1", "mpg123", 2000);
    let a = r.metrics.audio.unwrap();
    assert_eq!(a.underruns, 0);
    // A 125 ms period: 8 a second, and the ring of 4 filled at the start.
    assert!((14..=20).contains(&a.chunks), "{}", a.chunks);
}

/// The desktop background wakes about as often as the PowerTOP report it comes from (79.9 a
/// second less the governor's 10) and takes about its C0 share of the CPU (69.9 × 0.24 ms).
#[test]
fn the_desktop_background_wakes_at_the_reported_rate() {
    let r = run("cfs", "loops:n=1+desktop", 20_000);
    let busy = 1.0 - cpu_s_per_s(&r);
    let expect = 69.9 * 0.019 / 79.9;
    // The loop also loses what the switches and refills around each wakeup cost (up-2002's
    // 64 KB working sets refill from memory): somewhat more than the work itself.
    assert!(
        busy > expect && busy < expect + 0.01,
        "the loop lost {busy} of the CPU, expected a little more than {expect}"
    );
    let w = Workload::parse("loops:n=1+desktop:scale=2").unwrap();
    assert!(w.name.ends_with("desktop:scale=2"));
    assert!(Workload::parse("desktop:scale=0").is_err());
}

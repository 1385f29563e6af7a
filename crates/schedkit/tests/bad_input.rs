//! Bad and extreme input: each case here once crashed, exhausted memory, or was silently
//! accepted (issue 10); now each is refused up front with an error that names the problem,
//! the limit and, for files, the line.

use schedkit::workload::{file, Workload};

fn file_err(text: &str) -> String {
    file::parse_str(text, "bad.toml", "bad")
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn deeply_nested_loops_are_refused_not_a_stack_overflow() {
    let depth = 100_000;
    let mut prog = String::new();
    for _ in 0..depth {
        prog.push_str("\"loop 1\",");
    }
    prog.push_str("\"yield\",");
    for _ in 0..depth {
        prog.push_str("\"end\",");
    }
    let text = format!("[[group]]\nname = \"deep\"\nprogram = [{prog}]\n");
    let e = file_err(&text);
    assert!(e.contains("nested more than 1000 deep"), "{e}");
}

#[test]
fn huge_counts_are_refused_at_their_field() {
    let text = "[[group]]\nname = \"g\"\ncount = 4294967295\nprogram = [\"yield\"]\n";
    let e = file_err(text);
    assert!(e.contains("line 3:") && e.contains("0..=1000000"), "{e}");

    let text = "[[channel]]\nname = \"c\"\ncount = 4294967295\n[[group]]\nname = \"g\"\nprogram = [\"send c.0\"]\n";
    let e = file_err(text);
    assert!(e.contains("line 3:") && e.contains("1..=1000000"), "{e}");

    let text = "[[group]]\nname = \"a\"\ncount = 600000\nprogram = [\"yield\"]\n[[group]]\nname = \"b\"\ncount = 600000\nprogram = [\"yield\"]\n";
    let e = file_err(text);
    assert!(
        e.contains("1200000 tasks in all") && e.contains("line 7:"),
        "{e}"
    );
}

#[test]
fn aim7_within_its_parameter_limits_is_refused_before_it_is_built() {
    let e = Workload::parse("aim7:tasks=100000,jobs=100000")
        .unwrap_err()
        .to_string();
    assert!(e.contains("limit of 20000000"), "{e}");
}

#[test]
fn a_group_shares_one_program_among_its_tasks() {
    // 100 000 tasks each running a 10 000-statement program: once a copy per task (a
    // billion statements), now one program.
    let mut prog = String::from("\"loop forever\",");
    for _ in 0..10_000 {
        prog.push_str("\"compute 1us\",");
    }
    prog.push_str("\"end\"");
    let text = format!("[[group]]\nname = \"g\"\ncount = 100000\nprogram = [{prog}]\n");
    let w = file::parse_str(&text, "big.toml", "big").unwrap();
    assert_eq!(w.programs.len(), 1);
    assert_eq!(w.tasks.len(), 100_000);
}

#[test]
fn channel_indices_must_exist() {
    let base =
        "[[channel]]\nname = \"p\"\ncount = 3\n[[group]]\nname = \"g\"\nprogram = [\"send p.7\"]\n";
    let e = file_err(base);
    assert!(
        e.contains("p.0 to p.2 (got p.7)") && e.contains("line 6:"),
        "{e}"
    );
    let e = file_err(&base.replace("p.7", "p.-1"));
    assert!(e.contains("got p.-1"), "{e}");
    // Relative indices stay modulo the array, as documented.
    assert!(file::parse_str(&base.replace("p.7", "p.{i+7}"), "ok.toml", "ok").is_ok());
}

#[test]
fn rt_priorities_only_with_rt_policies_and_no_trailing_words() {
    let text = "[[group]]\nname = \"g\"\nrt_priority = 5\nprogram = [\"yield\"]\n";
    let e = file_err(text);
    assert!(
        e.contains("rt_priority needs policy fifo or rr") && e.contains("line 3:"),
        "{e}"
    );
    let text = "[[group]]\nname = \"g\"\nprogram = [\"policy normal 50\"]\n";
    let e = file_err(text);
    assert!(e.contains("takes no priority"), "{e}");
    let text = "[[group]]\nname = \"g\"\nprogram = [\"policy fifo 50 60\"]\n";
    let e = file_err(text);
    assert!(e.contains("unexpected '60'"), "{e}");
}

#[test]
fn loops_with_nothing_inside_are_refused() {
    let text = "[[group]]\nname = \"g\"\nprogram = [\"yield\", \"loop forever\", \"end\"]\n";
    let e = file_err(text);
    assert!(e.contains("nothing inside") && e.contains("line 3:"), "{e}");
}

#[test]
fn a_workload_of_background_tasks_alone_is_refused() {
    let e = Workload::parse("interactive").unwrap_err().to_string();
    assert!(e.contains("runs in the background"), "{e}");
    assert!(Workload::parse("yield:instances=1+interactive").is_ok());
}

#[test]
fn a_parameter_given_twice_says_so() {
    let e = Workload::parse("yield:instances=2,instances=3")
        .unwrap_err()
        .to_string();
    assert!(e.contains("'instances' is given twice"), "{e}");
}

#[test]
fn the_nice_error_names_the_field_line() {
    let text = "[[group]]\nname = \"g\"\n\nnice = 40\nprogram = [\"yield\"]\n";
    let e = file_err(text);
    assert!(
        e.contains(&format!("line {}:", line_of(text, "nice = 40"))),
        "{e}"
    );
}

// ----- the simulator: leaks, deadlocks, lock misuse, runs too short for rates -----

use schedkit::machine::Machine;
use schedkit::metrics::RunResult;
use schedkit::registry::PolicyKind;
use schedkit::sim::{SimConfig, SimError};

fn sim(policy: PolicyKind, w: &Workload, ms: u64) -> Result<RunResult, SimError> {
    let m = Machine::load("smp2-2002").unwrap();
    policy.simulate(
        &m,
        w,
        SimConfig {
            duration_ns: ms * 1_000_000,
            audit_every: 997,
            ..Default::default()
        },
    )
}

#[test]
fn dead_tasks_slots_are_reused() {
    // fork:mode=exit keeps about two tasks alive; the task table once grew with every fork.
    for &p in PolicyKind::ALL {
        let w = Workload::parse("fork:mode=exit").unwrap();
        let r = sim(p, &w, 1000).unwrap();
        assert!(
            r.metrics.tasks_created > 3000,
            "{}",
            r.metrics.tasks_created
        );
        assert!(
            r.metrics.sim.task_slots <= 3,
            "{}: {} slots for {} tasks",
            p.name(),
            r.metrics.sim.task_slots,
            r.metrics.tasks_created
        );
    }
}

#[test]
fn a_fork_bomb_stops_at_the_task_limit() {
    let text = "[[group]]\nname = \"bomb\"\nprogram = [\"loop forever\", \"fork bomb\", \"end\"]\n";
    let w = file::parse_str(text, "bomb.toml", "bomb").unwrap();
    let m = Machine::load("smp2-2002").unwrap();
    let cfg = SimConfig {
        duration_ns: 100_000_000_000,
        max_live_tasks: 5_000,
        ..Default::default()
    };
    let e = PolicyKind::O1
        .simulate(&m, &w, cfg)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("limit of 5000 live tasks") && e.contains("bomb.toml line 3"),
        "{e}"
    );
}

fn deadlock_of(text: &str) -> RunResult {
    let w = file::parse_str(text, "dl.toml", "dl").unwrap();
    sim(PolicyKind::O1, &w, 10_000).unwrap()
}

#[test]
fn a_run_in_which_nothing_can_run_again_stops_and_says_why() {
    // A recv nobody sends to.
    let r = deadlock_of(
        "[[channel]]\nname = \"c\"\n[[group]]\nname = \"g\"\nprogram = [\"compute 1ms\", \"recv c\"]\n",
    );
    assert_eq!(r.stop_reason, "deadlock");
    assert!(!r.completed);
    assert!(
        r.simulated_s < 0.1,
        "stopped at {} s, not at the duration",
        r.simulated_s
    );
    let waits = r.deadlock.unwrap();
    assert!(
        waits[0].contains("a message on channel 0") && waits[0].contains("dl.toml line 5"),
        "{waits:?}"
    );
    // A lock never released.
    let r = deadlock_of(
        "[[lock]]\nname = \"L\"\nkind = \"mutex\"\n[[group]]\nname = \"g\"\ncount = 2\nprogram = [\"lock L\", \"sleep 1ms\", \"exit\"]\n",
    );
    assert_eq!(r.stop_reason, "deadlock");
    assert!(r.deadlock.unwrap().iter().any(|w| w.contains("lock 'L'")));
    // A full channel.
    let r = deadlock_of(
        "[[channel]]\nname = \"c\"\ncapacity = 1\n[[group]]\nname = \"g\"\nprogram = [\"send c\", \"send c\"]\n",
    );
    assert_eq!(r.stop_reason, "deadlock");
    assert!(r.deadlock.unwrap()[0].contains("room on full channel 0"));
    // A run that merely idles between timers is not a deadlock.
    let r =
        deadlock_of("[[group]]\nname = \"g\"\nprogram = [\"loop 3\", \"sleep 100ms\", \"end\"]\n");
    assert_eq!(r.stop_reason, "completed");
}

#[test]
fn only_a_holder_releases_a_lock() {
    let text = "[[lock]]\nname = \"L\"\nkind = \"semaphore\"\n[[group]]\nname = \"g\"\nprogram = [\"compute 1ms\",\n \"unlock L\"]\n";
    let w = file::parse_str(text, "u.toml", "u").unwrap();
    let e = sim(PolicyKind::O1, &w, 100).unwrap_err().to_string();
    assert!(
        e.contains("releases lock 'L', which it does not hold") && e.contains("u.toml line 7"),
        "{e}"
    );
}

#[test]
fn a_run_shorter_than_a_tick_reports_no_rates() {
    let w = Workload::parse("yield:instances=2").unwrap();
    let m = Machine::load("smp2-2002").unwrap();
    let r = PolicyKind::O1
        .simulate(
            &m,
            &w,
            SimConfig {
                duration_ns: 1,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(r.metrics.context_switches_per_s.is_nan());
    assert!(r.metrics.throughput.value.is_nan());
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"context_switches_per_s\":null"), "{json}");
    // A program that exits at once completes, with no rates either.
    let w = file::parse_str(
        "[[group]]\nname = \"g\"\nprogram = [\"exit\"]\n",
        "e.toml",
        "e",
    )
    .unwrap();
    let r = sim(PolicyKind::O1, &w, 1000).unwrap();
    assert!(r.completed && r.metrics.context_switches_per_s.is_nan());
}

// ----- machine profiles: ranges that mean something -----

fn profile_with(field: &str, value: &str) -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/smp2-2002.toml"
    ))
    .unwrap();
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with(&format!("{field} ")) {
                format!("{field} = {value}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn absurd_profile_numbers_are_refused_with_their_range() {
    for (field, value, says) in [
        ("syscall_ns", "1e300", "costs.syscall_ns"),
        ("timer_irq_ns", "1e300", "costs.timer_irq_ns"),
        ("mhz", "1e-300", "clock.mhz"),
        ("mem_read_mb_s", "0", "costs.mem_read_mb_s"),
        ("size_kb", "0", "cache.size_kb"),
    ] {
        let e = Machine::from_toml(&profile_with(field, value), "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(says) && e.contains("must be within"),
            "{field}: {e}"
        );
    }
    // An interrupt as long as the tick is not a machine (HZ=10000: a 100 us tick).
    let text = profile_with("timer_irq_ns", "150000").replace("hz = 100 ", "hz = 10000 ");
    let e = Machine::from_toml(&text, "p.toml").unwrap_err().to_string();
    assert!(e.contains("much shorter than the tick"), "{e}");
}

#[test]
fn a_profile_at_the_edges_of_its_ranges_runs_without_overflow() {
    let mut text = profile_with("mhz", "10000");
    for (f, v) in [
        ("syscall_ns", "1000000"),
        ("context_switch_ns", "1000000"),
        ("ipi_send_ns", "1000000"),
        ("ipi_latency_ns", "10000000"),
        ("idle_exit_ns", "10000000"),
        ("mem_latency_ns", "10000"),
        ("cache_latency_ns", "1000"),
        ("atomic_ns", "10000"),
        ("mem_read_mb_s", "1"),
        ("fork_ns", "1000000000"),
        ("exec_ns", "1000000000"),
    ] {
        text = text
            .lines()
            .map(|l| {
                if l.trim_start().starts_with(&format!("{f} ")) {
                    format!("{f} = {v}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
    }
    let m = Machine::from_toml(&text, "edge.toml").unwrap();
    for &p in PolicyKind::ALL {
        for w in [
            "fork:mode=exec",
            "chat:rooms=1,messages=5",
            "ctx:procs=4,size=64",
        ] {
            let w = Workload::parse(w).unwrap();
            let r = p
                .simulate(
                    &m,
                    &w,
                    SimConfig {
                        duration_ns: 3_000_000_000,
                        audit_every: 101,
                        ..Default::default()
                    },
                )
                .unwrap();
            assert!(r.simulated_s > 0.0);
        }
    }
}

#[test]
fn a_loop_of_zero_kernel_work_is_caught_not_spun_for_minutes() {
    // `kwork 0ms` used to cost 1 ns per pass: at the default 10 s a loop of it ran 10^10
    // events. A pass that takes no time is caught by the no-progress check.
    let text = "[[group]]\nname = \"z\"\nprogram = [\"loop forever\", \"kwork 0ms\", \"end\"]\n";
    let w = schedkit::workload::file::parse_str(text, "z.toml", "z").unwrap();
    let m = schedkit::machine::Machine::load("up-2002").unwrap();
    let cfg = schedkit::sim::SimConfig {
        duration_ns: 10_000_000_000,
        ..Default::default()
    };
    let e = schedkit::registry::PolicyKind::O1
        .simulate(&m, &w, cfg)
        .unwrap_err()
        .to_string();
    assert!(e.contains("loops without spending any time"), "{e}");
}

#[test]
fn a_duration_without_its_unit_and_a_timer_array_get_clear_errors() {
    // A bare number used to be seconds without a word: `timer tt 10 absolute` a 10 s period.
    for stmt in [
        "compute 5",
        "sleep 10",
        "kwork uniform(1, 2ms)",
        "io exp(3)",
    ] {
        let text = format!("[[group]]\nname = \"a\"\nprogram = [\"{stmt}\"]\n");
        let e = file_err(&text);
        assert!(e.contains("has no unit"), "{stmt}: {e}");
    }
    // A timer array: the hint for `tt` names the members a timer statement can take, and
    // `tt.{i}` is told the same, where it used to be sent from one error to the other.
    for t in ["tt", "tt.{i}"] {
        let text = format!(
            "[[channel]]\nname = \"tt\"\nkind = \"timer\"\ncount = 3\n[[group]]\nname = \"a\"\nprogram = [\"timer {t} 10ms\"]\n"
        );
        let e = file_err(&text);
        assert!(e.contains("tt.0 to tt.2"), "{t}: {e}");
    }
}

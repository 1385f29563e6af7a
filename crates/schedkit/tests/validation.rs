//! The committed validation suite (`traces/validation`, recorded on the project machine under
//! Linux 6.18) replayed under the recording kernel's class, as `schedkit validate` does it:
//! every workload must replay, and every figure that meets its target today (issue 28, item 4)
//! must keep meeting it. The figures that miss are listed in `docs/validation.md` with the
//! mechanism behind each miss; a change that brings one within its target should add it here.

use schedkit::validate::{self, Suite};
use std::path::PathBuf;

fn suite() -> Suite {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces/validation");
    Suite::load(&dir).expect("the committed suite loads")
}

/// (workload, figure) pairs within their targets under eevdf:era=6.18 on `host`.
const HOLDS: &[(&str, &str)] = &[
    ("pipe", "context switches"),
    ("pipe", "wakeups"),
    ("pipe", "busy CPU time (ms)"),
    ("pipe", "wakeup latency p50 (us)"),
    ("messaging-proc", "busy CPU time (ms)"),
    ("messaging-thread", "migrations"),
    ("messaging-thread", "busy CPU time (ms)"),
    ("messaging-thread", "model: Total time [sec]"),
    ("hackbench-pipe-g2", "busy CPU time (ms)"),
    ("hackbench-pipe-g2", "wakeup latency p50 (us)"),
    ("hackbench-sock-g2", "busy CPU time (ms)"),
    ("hackbench-sock-g2", "model: Time"),
    ("hackbench-sock-g8", "busy CPU time (ms)"),
    ("hackbench-sock-g8", "model: Time"),
    ("hackbench-thread-sock-g2", "migrations"),
    ("hackbench-thread-sock-g2", "busy CPU time (ms)"),
    ("hackbench-thread-sock-g2", "model: Time"),
    ("schbench", "context switches"),
    ("schbench", "wakeups"),
    ("schbench", "busy CPU time (ms)"),
    ("schbench", "wakeup latency p50 (us)"),
    ("make-j2", "context switches"),
    ("make-j2", "wakeups"),
    ("make-j2", "migrations"),
    ("make-j2", "busy CPU time (ms)"),
    ("make-j2", "wakeup latency p50 (us)"),
    ("make-j4", "context switches"),
    ("make-j4", "wakeups"),
    ("make-j4", "migrations"),
    ("make-j4", "busy CPU time (ms)"),
    ("make-j4", "wakeup latency p50 (us)"),
    ("nice-hogs", "context switches"),
    ("nice-hogs", "wakeups"),
    ("nice-hogs", "migrations"),
    ("nice-hogs", "busy CPU time (ms)"),
    ("nice-hogs", "wakeup latency p50 (us)"),
    ("cyclictest-hogs", "context switches"),
    ("cyclictest-hogs", "wakeups"),
    ("cyclictest-hogs", "busy CPU time (ms)"),
    ("cyclictest-hogs", "wakeup latency p50 (us)"),
    ("threadpool", "busy CPU time (ms)"),
];

#[test]
fn the_suite_replays_and_its_figures_hold_their_targets() {
    let s = suite();
    assert!(s.workloads.len() >= 10, "at least ten recorded workloads");
    assert_eq!(s.class, "eevdf:era=6.18");
    let results =
        validate::run(&s, &validate::Options::default(), 2, &|_| {}).expect("the suite runs");
    let mut missed = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (w, r) in s.workloads.iter().zip(&results) {
        let r = r
            .as_ref()
            .unwrap_or_else(|e| panic!("{} did not replay: {e}", w.name));
        assert!(r.completed, "{}: the replay did not finish", w.name);
        // The recorded side is the trace itself: its switch count is the trace's.
        assert!(r.recorded.context_switches > 0, "{}", w.name);
        // 6.18's fork placement (`sched_balance_find_dst_cpu`) moves a child off its
        // parent's busy CPU whenever another is idle; the replay's trace shows it (one in a
        // hundred allowed, one below a hundred: an idle CPU and a wakeup bound for it at the
        // same nanosecond).
        let rep = &r.fork_starts[1];
        assert!(
            rep.beside_idle_cpu_on_parent_cpu * 100 <= rep.beside_idle_cpu.max(100),
            "{}: the replay kept {} of {} forks beside an idle CPU on the parent's",
            w.name,
            rep.beside_idle_cpu_on_parent_cpu,
            rep.beside_idle_cpu
        );
        for row in r.rows.iter().chain(r.model.as_ref()) {
            let key = (w.name.as_str(), row.figure.as_str());
            if HOLDS.contains(&key) {
                seen.insert(key);
                if row.within != Some(true) {
                    missed.push(format!(
                        "{} {}: recorded {} replayed {} ({:?})",
                        w.name, row.figure, row.recorded, row.replayed, row.error
                    ));
                }
            }
        }
    }
    assert!(
        missed.is_empty(),
        "figures left their targets:\n{}",
        missed.join("\n")
    );
    // Every listed figure was there to be judged (a model that failed to run would drop its
    // row silently otherwise).
    for key in HOLDS {
        assert!(seen.contains(key), "{key:?} was not among the figures");
    }
    // The suite's repeats (4 more recordings of each command): each figure's range holds the
    // recorded value, and as many figures as today are within their targets of at least one
    // of the kernel's recordings.
    let (mut some_run, mut judged) = (0, 0);
    for (w, r) in s.workloads.iter().zip(&results) {
        let r = r.as_ref().unwrap();
        assert_eq!(r.repeats, 4, "{}", w.name);
        for row in r.rows.iter().chain(r.model.as_ref()) {
            let (lo, hi) = row.kernel_range.expect("a range from the repeats");
            assert!(
                lo <= row.recorded && row.recorded <= hi,
                "{} {}",
                w.name,
                row.figure
            );
        }
        let (a, b) = r.score_range();
        some_run += a;
        judged += b;
        // What the message-passing misses are made of: each recorded wakeup whose token the
        // replay's waker posted before the sleeper waited is a wakeup the replay does not
        // repeat; so is each recorded interrupt's wakeup whose interrupt, replayed on its
        // recorded CPU, came before the sleeper had left its own. Where the replay misses its
        // wakeups target from below (more than 15 % fewer than the recording), the two account
        // for at least 90 % of the difference (they may exceed it by the wakeups the replay
        // has that the recording does not, which this check leaves unexplained).
        let lost = r.recorded.wakeups as f64 - r.replayed.wakeups as f64;
        if lost > 0.15 * r.recorded.wakeups as f64 {
            assert!(
                (r.tokens_posted_first + r.timers_before_sleep) as f64 >= 0.9 * lost,
                "{}: recorded {} wakeups, replayed {}, only {} tokens posted first and {} timers before the sleep",
                w.name,
                r.recorded.wakeups,
                r.replayed.wakeups,
                r.tokens_posted_first,
                r.timers_before_sleep
            );
        }
    }
    assert_eq!(judged, 77);
    assert!(
        some_run >= SOME_RUN,
        "{some_run} of {judged} within their targets of some recording, fewer than {SOME_RUN}"
    );
}

/// Figures within their targets of at least one of the kernel's five recordings of the
/// command, under eevdf:era=6.18 on `host` (docs/validation.md).
const SOME_RUN: usize = 53;

#[test]
fn validation_is_deterministic() {
    let s = suite();
    let opts = validate::Options {
        only: vec!["hackbench-pipe-g2".into()],
        ..Default::default()
    };
    let a = validate::run(&s, &opts, 1, &|_| {}).unwrap();
    let b = validate::run(&s, &opts, 1, &|_| {}).unwrap();
    let (a, b) = (a[0].as_ref().unwrap(), b[0].as_ref().unwrap());
    assert_eq!(a.rows, b.rows);
}

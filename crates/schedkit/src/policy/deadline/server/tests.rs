//! The fair server against hand-computed cases, driven through the class stack (deadline,
//! RT, EEVDF) on one runqueue at HZ=1000 from boot (time 0), as `schedule()` and the tick
//! drive it: a tick every millisecond, a pick whenever the tick asks for one.

use crate::class::{EnqueueKind, SchedClass};
use crate::ds::dl_rq::DlServerParams;
use crate::policy::eevdf::{Eevdf, FairServerOpts};
use crate::policy::testkit::{ClassFixture, MS};
use crate::task::{DlParams, SchedPolicy, TaskId, TaskState};

type Fx = ClassFixture<Eevdf>;

/// The fixture at boot, with a SCHED_FIFO hog (priority 50) and a nice-0 hog queued at 0 and
/// the first pick made. Returns (fixture, rt, normal).
fn rt_and_normal_hogs(class: Eevdf) -> (Fx, TaskId, TaskId) {
    let mut f = ClassFixture::with(class);
    f.now = 0;
    let rt = f.tasks.spawn();
    f.tasks[rt].policy = SchedPolicy::Fifo;
    f.tasks[rt].rt_priority = 50;
    {
        let (mut c, rq, s) = f.ctx();
        s.enqueue(&mut c, rq, 0, rt, EnqueueKind::New);
        c.tasks[rt].state = TaskState::Queued;
    }
    let normal = f.spawn(0);
    f.pick();
    (f, rt, normal)
}

/// Runs `ms` one-millisecond ticks, picking again whenever a tick asks; returns the time each
/// of `rt` and `normal` ran.
fn run(f: &mut Fx, ms: u64, rt: TaskId, normal: TaskId) -> (u64, u64) {
    let (mut r, mut n) = (0, 0);
    for _ in 0..ms {
        let curr = f.rq.curr().expect("a hog always runs");
        if curr == rt {
            r += MS;
        } else if curr == normal {
            n += MS;
        }
        if f.run_for(MS) {
            f.pick();
        }
    }
    (r, n)
}

fn v6_18_with(runtime_ms: u64, defer: bool) -> Eevdf {
    Eevdf::v6_18_with(
        1,
        FairServerOpts {
            runtime_ns: runtime_ms * MS,
            period_ns: 1000 * MS,
            defer,
        },
    )
}

/// 6.18, defaults (50 ms every 1 s, deferred). The first normal enqueue at 0 starts the
/// server: its boot period (deadline 1000 ms, runtime 50 ms) fits its bandwidth, so it keeps
/// it and waits armed for the zero-laxity instant 1000 − 50 = 950 ms. The normal task never
/// runs before that (the RT hog holds the CPU), so at 950 ms the timer finds the runtime
/// whole: starvation. Keeping deadline 1000 would overflow (50 ms left in 50 ms), so
/// `replenish_dl_entity` starts a new period: deadline 1950, runtime 50. The server beats the
/// RT hog and serves the normal task 950–1000 ms, is throttled at 0 left, and its timer
/// (the next period, at its deadline 1950) replenishes it as a plain CBS from then on:
/// deadline 2950, serving 1950–2000. In 2500 ms: 2 × 50 ms = 100 ms for the normal task,
/// 2400 ms for the RT hog.
#[test]
fn a_deferred_server_gives_a_starved_normal_task_50ms_at_the_end_of_each_second() {
    let (mut f, rt, normal) = rt_and_normal_hogs(Eevdf::v6_18(1));
    assert_eq!(f.rq.curr(), Some(rt), "the RT hog runs first");
    let srv = &f.rq.dl.server;
    assert!(srv.active && srv.throttled && srv.defer_armed && !srv.queued);
    assert_eq!(
        srv.timer,
        Some(950 * MS),
        "armed for the zero-laxity instant"
    );
    let (r, n) = run(&mut f, 949, rt, normal);
    assert_eq!(
        (r, n),
        (949 * MS, 0),
        "nothing for the normal task before 950 ms"
    );
    let (r, n) = run(&mut f, 2500 - 949, rt, normal);
    assert_eq!(n, 100 * MS, "950–1000 and 1950–2000 ms");
    assert_eq!(r + 949 * MS, 2400 * MS);
    let srv = &f.rq.dl.server;
    assert_eq!(srv.served_ns, 100 * MS);
    assert_eq!(srv.activations, 2);
    assert_eq!(
        srv.deadline,
        2950 * MS,
        "replenished at 1950 for the period ending 2950"
    );
    assert_eq!(
        srv.timer,
        Some(2950 * MS),
        "throttled at 2000 until its next period"
    );
}

/// The same without deferral (`dl_defer` clear, as a plain deadline server): the start at 0
/// keeps the boot period (deadline 1000, 50 ms; no overflow at 0) and queues the server at
/// once, so it serves 0–50 ms, is throttled until its next period at 1000 ms, serves
/// 1000–1050, then 2000–2050: 150 ms in 2500 ms, each at the start of its second.
#[test]
fn an_undeferred_server_runs_the_normal_task_at_the_start_of_each_period() {
    let (mut f, rt, normal) = rt_and_normal_hogs(v6_18_with(50, false));
    assert_eq!(
        f.rq.curr(),
        Some(normal),
        "the server beats the RT hog at once"
    );
    assert!(f.rq.dl.server.serving);
    let (r, n) = run(&mut f, 2500, rt, normal);
    assert_eq!(n, 150 * MS);
    assert_eq!(r, 2350 * MS);
    assert_eq!(f.rq.dl.server.activations, 3);
}

/// The server's runtime is what the normal task gets: 100 ms every 1 s, deferred, serves
/// 900–1000 and 1900–2000 ms (zero-laxity 1000 − 100), 200 ms in 2500.
#[test]
fn the_normal_task_gets_the_runtime_the_server_was_given() {
    let (mut f, rt, normal) = rt_and_normal_hogs(v6_18_with(100, true));
    let (r, n) = run(&mut f, 2500, rt, normal);
    assert_eq!((r, n), (2300 * MS, 200 * MS));
}

/// 6.6 has no fair server (it had RT throttling at 950 ms / 1 s, which is not modelled), and
/// neither has 6.18 with its runtime set to 0: the RT hog takes everything.
#[test]
fn without_a_server_the_rt_hog_starves_the_normal_task() {
    for class in [Eevdf::v6_6(1), v6_18_with(0, true)] {
        let (mut f, rt, normal) = rt_and_normal_hogs(class);
        assert!(f.s.fair_server.is_none());
        let (r, n) = run(&mut f, 2500, rt, normal);
        assert_eq!((r, n), (2500 * MS, 0));
    }
}

/// With nothing to starve it, the normal task's own run drains the deferred server in
/// background (50 ms of running ends each period early: a new period, the wait starts over),
/// so the server is never queued and never runs.
#[test]
fn a_normal_task_that_is_not_starved_keeps_the_server_deferred() {
    let mut f = ClassFixture::with(Eevdf::v6_18(1));
    f.now = 0;
    let normal = f.spawn(0);
    f.pick();
    for _ in 0..5000 {
        if f.run_for(MS) {
            f.pick();
        }
        assert_eq!(f.rq.curr(), Some(normal));
    }
    let srv = &f.rq.dl.server;
    assert_eq!(srv.activations, 0);
    assert!(srv.active && srv.defer_armed && !srv.queued);
    // The last background period began at the 100th 50 ms charge, 5000 ms.
    assert_eq!(srv.deadline, 6000 * MS);
    assert_eq!(srv.timer, Some(5950 * MS));
}

/// A server whose pick finds no normal task stops (`dl_server_stop` from `__pick_task_dl`):
/// the normal task sleeps while served, the RT hog runs, and the server is inactive until
/// the next normal enqueue starts it again.
#[test]
fn a_server_that_finds_nothing_to_serve_stops() {
    let (mut f, rt, normal) = rt_and_normal_hogs(Eevdf::v6_18(1));
    run(&mut f, 960, rt, normal);
    assert_eq!(f.rq.curr(), Some(normal), "served since 950 ms");
    f.sleep_curr();
    assert_eq!(f.pick(), Some(rt));
    let srv = &f.rq.dl.server;
    assert!(!srv.active && !srv.queued && srv.timer.is_none());
    // Woken at 961 ms: 40 ms left to deadline 1950 is within its bandwidth, and it is in its
    // starvation case (dl_defer_running), so it is queued at once and beats the RT hog.
    f.now += MS;
    assert!(
        f.wake(normal) || {
            let (mut c, rq, s) = f.ctx();
            s.check_preempt(&mut c, rq, 0, normal, false)
        }
    );
    assert_eq!(f.pick(), Some(normal));
    assert!(f.rq.dl.server.serving);
}

/// Admission control: each CPU's server holds 50/1000 of it in the root domain
/// (`dl_server_apply_params` at boot), so a deadline task may reserve 0.90 of a lone CPU
/// under 6.18 but not 0.91 (0.91 + 0.05 > 0.95), which 6.6 admits.
#[test]
fn the_server_reserves_its_bandwidth_in_the_root_domain() {
    fn admit(class: Eevdf, runtime_ms: u64) -> Result<(), String> {
        let mut f = ClassFixture::with(class);
        let t = f.tasks.spawn();
        f.tasks[t].policy = SchedPolicy::Deadline;
        f.tasks[t].dl_mut().params = DlParams {
            runtime_ns: runtime_ms * MS,
            deadline_ns: 1000 * MS,
            period_ns: 1000 * MS,
            reclaim: false,
        };
        f.s.dl.admit(&mut f.tasks[t], "t")
    }
    assert!(admit(Eevdf::v6_18(1), 900).is_ok());
    let e = admit(Eevdf::v6_18(1), 910).unwrap_err();
    assert!(e.contains("refused by admission control"), "{e}");
    assert!(e.contains("fair servers hold 0.0500"), "{e}");
    assert!(admit(Eevdf::v6_6(1), 910).is_ok());
    assert_eq!(
        Eevdf::v6_18(1).fair_server(),
        Some(DlServerParams::FAIR_DEFAULT)
    );
}

#[test]
fn fair_server_options_are_validated_as_debugfs_validates_them() {
    let ok = FairServerOpts::parse("fair_server_runtime=20000000").unwrap();
    assert_eq!((ok.runtime_ns, ok.period_ns), (20 * MS, 1000 * MS));
    assert_eq!(ok.suffix(), "fair_server_runtime=20000000");
    assert_eq!(
        FairServerOpts::parse("fair_server_runtime=0")
            .unwrap()
            .params(),
        None
    );
    for (spec, says) in [
        ("fair_server_runtime=2000000000", "over its period"),
        (
            "fair_server_runtime=10000,fair_server_period=50000",
            "outside 100000..=",
        ),
        ("fair_server_period=5000000000", "outside 100000..="),
        ("fair_server_runtime=960000000", "-EBUSY"),
        ("fair_server_runtime=5ms", "whole number of nanoseconds"),
        ("fair_server=1", "no option 'fair_server'"),
        ("fair_server_runtime", "expected key=value"),
    ] {
        let e = FairServerOpts::parse(spec).unwrap_err();
        assert!(e.contains(says), "{spec}: {e}");
        assert!(
            e.starts_with("eevdf:era=6.18"),
            "{spec}: names the place: {e}"
        );
    }
    let k =
        crate::registry::PolicyKind::parse("eevdf:era=6.18,fair_server_runtime=20000000").unwrap();
    assert_eq!(k.label(), "eevdf:era=6.18,fair_server_runtime=20000000");
    assert_eq!(crate::registry::PolicyKind::parse(&k.label()).unwrap(), k);
    assert!(crate::registry::PolicyKind::parse("6.18,fair_server_period=1").is_err());
}

/// A timer that comes due while the CPU is idle is replayed as the kernel runs it: the
/// server queued at its instant, the idle time charged by `put_prev_task_idle`, and the
/// server stopped by a pick that finds no normal task. The normal task runs 10 ms from 0
/// (charged to the deferred server: 40 ms left) and sleeps; the timer stays armed for 950 ms
/// (charging does not re-arm it); the CPU idles until 2000 ms. Replayed: at 950 the
/// zero-laxity instant is 1000 − 40 = 960, more than `dl_server_min_res` away, so the timer
/// forwards itself there; at 960: a new period (40 ms left in
/// 40 ms overflows; deadline 1960, 50 ms), the idle time 10–960 ms drives the runtime below
/// 0 (so 0, and no starvation case), stopped. The wakeup at 2000 then starts it afresh:
/// deadline 1960 has passed, so a new period, deferred: deadline 3000, armed for 2950. The
/// woken task is not served.
#[test]
fn a_timer_due_while_idle_leaves_the_server_stopped_as_the_kernel_would() {
    let mut f = ClassFixture::with(Eevdf::v6_18(1));
    f.now = 0;
    let normal = f.spawn(0);
    f.pick();
    f.now = 10 * MS;
    f.sleep_curr();
    assert_eq!(f.pick(), None);
    assert_eq!(f.rq.dl.server.timer, Some(950 * MS));
    assert_eq!(f.rq.dl.server.runtime, 40 * MS as i64);
    f.now = 2000 * MS;
    f.wake(normal);
    assert_eq!(f.pick(), Some(normal));
    let srv = &f.rq.dl.server;
    assert!(!srv.serving && !srv.queued && srv.active && srv.defer_armed);
    assert_eq!((srv.deadline, srv.runtime), (3000 * MS, 50 * MS as i64));
    assert_eq!(srv.timer, Some(2950 * MS));
    assert_eq!(
        srv.activations, 1,
        "the replayed timer's activation at 960 ms"
    );
}

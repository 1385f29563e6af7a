//! Behaviour of the runtime host. Every test runs under a watchdog, so a lost wakeup fails
//! the test instead of hanging the suite.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Says in the test log that `test` did not run its check on this machine, and why: written
/// to the process's stderr directly, past the harness's capture, so a CI log shows it.
pub(super) fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// Runs `f` on its own thread and fails if it takes longer than `secs`.
pub(super) fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("test did not finish within {secs} s (lost wakeup or deadlock?)"),
    }
}

/// True in the child processes that re-run this suite with a forced save area or without
/// preemption. Tests that measure CPU shares skip there: the child runs beside the parent's
/// own tests, whose load takes cores away from its workers and skews loop counts; those
/// policy figures are checked by the parent run, and the children exist for the preemption
/// paths.
pub(super) fn in_forced_child() -> bool {
    std::env::var(SAVE_AREA_ENV).is_ok() || std::env::var(PREEMPT_ENV).is_ok()
}

fn rt(policy: Policy, cpus: usize) -> Runtime {
    Runtime::builder()
        .policy(policy)
        .cpus(cpus)
        .build()
        .expect("runtime builds")
}

/// [`rt`] with its tick at `hz`.
fn rt_hz(policy: Policy, cpus: usize, hz: u32) -> Runtime {
    Runtime::builder()
        .policy(policy)
        .cpus(cpus)
        .hz(hz)
        .build()
        .expect("runtime builds")
}

#[test]
fn spawn_join_returns_values_and_reports_panics() {
    within(20, || {
        for &p in Policy::ALL {
            let rt = rt(p, 2);
            let h = rt.spawn(TaskSpec::new().nice(-5), || (1..=100u64).sum::<u64>());
            assert_eq!(h.join(), Ok(5050));
            let bad = rt.spawn(TaskSpec::new(), || -> u32 { panic!("boom {}", 7) });
            assert_eq!(bad.join(), Err(JoinError::Panicked("boom 7".into())));
            // The runtime survives the panic.
            assert_eq!(rt.spawn(TaskSpec::new(), || 1).join(), Ok(1));
        }
    });
}

#[test]
fn bad_specs_are_rejected_with_the_reason() {
    within(20, || {
        let rt = rt(Policy::O1, 1);
        let e = rt.spawn(TaskSpec::new().nice(25).name("w"), || ()).join();
        assert_eq!(
            e,
            Err(JoinError::Spawn("w: nice 25 is outside -20..=19".into()))
        );
        let e = rt.spawn(TaskSpec::new().rt_fifo(0), || ()).join();
        assert!(matches!(e, Err(JoinError::Spawn(m)) if m.contains("1..=99")));
        let e = rt.spawn(TaskSpec::new().affinity([5]), || ()).join();
        assert!(matches!(e, Err(JoinError::Spawn(m)) if m.contains("affinity")));
        // SCHED_IDLE only where the design has it: refused under O(1), both at spawn and
        // by set_scheduler; run under the fair classes.
        let e = rt.spawn(TaskSpec::new().idle().name("i"), || ()).join();
        assert!(
            matches!(&e, Err(JoinError::Spawn(m)) if m.starts_with("i: ") && m.contains("SCHED_IDLE")),
            "{e:?}"
        );
        let e = rt
            .spawn(TaskSpec::new(), || {
                crate::runtime::set_scheduler(crate::task::SchedPolicy::Idle, 0)
            })
            .join();
        assert!(
            matches!(&e, Ok(Err(m)) if m.contains("SCHED_IDLE")),
            "{e:?}"
        );
        for p in [Policy::Cfs, Policy::Eevdf] {
            let fair = Runtime::builder().policy(p).cpus(1).build().unwrap();
            let info = fair
                .spawn(TaskSpec::new().idle(), crate::runtime::current_info)
                .join();
            assert!(
                matches!(info, Ok(Some((_, crate::task::SchedPolicy::Idle, 0, _)))),
                "{p:?}: {info:?}"
            );
        }
        assert!(Runtime::builder().cpus(0).build().is_err());
        assert!(Runtime::builder().hz(5).build().is_err());
        assert!(Runtime::builder().stack_size(100).build().is_err());
    });
}

/// Thousands of tasks that yield, block on channels and spawn children: every one runs to
/// completion exactly once, on both designs.
#[test]
fn thousands_of_tasks_run_exactly_once() {
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt(p, 2);
            const N: usize = 3000;
            let seen: Arc<Vec<AtomicUsize>> =
                Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
            let (tx, rx) = channel::<usize>(64);
            let mut hs = Vec::new();
            for i in 0..N {
                let (seen, tx) = (seen.clone(), tx.clone());
                hs.push(
                    rt.spawn(TaskSpec::new().nice((i % 40) as i32 - 20), move || {
                        yield_now();
                        seen[i].fetch_add(1, SeqCst);
                        if i % 10 == 0 {
                            let c = spawn(TaskSpec::new(), move || i * 2);
                            assert_eq!(c.join(), Ok(i * 2));
                        }
                        tx.send(i).unwrap();
                    }),
                );
            }
            drop(tx);
            // The main thread (not a task) receives: tasks and threads share the channel.
            let mut got = vec![false; N];
            while let Ok(i) = rx.recv() {
                assert!(!got[i], "{i} reported twice");
                got[i] = true;
            }
            for h in hs {
                h.join().unwrap();
            }
            assert!(got.iter().all(|g| *g));
            assert!(seen.iter().all(|s| s.load(SeqCst) == 1));
            let st = rt.stats();
            assert_eq!(st.spawned, (N + N.div_ceil(10)) as u64);
            // A joined task may still be switching out for the last time; all are reaped
            // promptly.
            assert_eq!(rt.shutdown_timeout(Duration::from_secs(10)), Ok(()));
        }
    });
}

#[test]
fn ping_pong_between_tasks_loses_no_wakeup() {
    within(30, || {
        for &p in Policy::ALL {
            let rt = rt(p, 2);
            let (atx, arx) = channel::<u64>(1);
            let (btx, brx) = channel::<u64>(1);
            let a = rt.spawn(TaskSpec::new(), move || {
                for i in 0..20_000 {
                    atx.send(i).unwrap();
                    assert_eq!(brx.recv().unwrap(), i + 1);
                }
            });
            let b = rt.spawn(TaskSpec::new(), move || {
                while let Ok(v) = arx.recv() {
                    if btx.send(v + 1).is_err() {
                        break;
                    }
                }
            });
            a.join().unwrap();
            b.join().unwrap();
        }
    });
}

#[test]
fn sleep_parks_for_at_least_the_duration() {
    within(20, || {
        let rt = rt(Policy::O1, 1);
        let h = rt.spawn(TaskSpec::new(), || {
            let t = Instant::now();
            sleep(Duration::from_millis(30));
            t.elapsed()
        });
        // Meanwhile the CPU is free for others.
        let other = rt.spawn(TaskSpec::new(), || 5);
        assert_eq!(other.join(), Ok(5));
        let slept = h.join().unwrap();
        assert!(slept >= Duration::from_millis(30), "{slept:?}");
        assert!(slept < Duration::from_secs(5), "{slept:?}");
    });
}

/// A hog that never yields or calls the runtime still loses the CPU: the tick's signal
/// preempts it when its slice ends, so a second task on the same single CPU gets to run.
#[test]
fn a_non_yielding_hog_is_preempted() {
    within(30, || {
        for &p in Policy::ALL {
            let rt = rt(p, 1);
            if !rt.preemptive() {
                skipped(
                    "a_non_yielding_hog_is_preempted",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                return;
            }
            let go = Arc::new(AtomicBool::new(false));
            let started = Arc::new(AtomicBool::new(false));
            let (g2, s2) = (go.clone(), started.clone());
            let hog = rt.spawn(TaskSpec::new(), move || {
                s2.store(true, Relaxed);
                let mut n = 0u64;
                while !g2.load(Relaxed) {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
                n
            });
            // The other task is created only once the hog holds the CPU (a design may
            // otherwise run the newer task first: CFS 2.6.24 does, on an idle runqueue).
            while !started.load(Relaxed) {
                std::thread::yield_now();
            }
            let g3 = go.clone();
            let other = rt.spawn(TaskSpec::new(), move || g3.store(true, Relaxed));
            other.join().unwrap();
            assert!(hog.join().unwrap() > 0);
            assert!(rt.stats().preemptions >= 1, "{:?}", rt.stats());
        }
    });
}

/// An RT task woken while a normal hog holds the only CPU runs at once (wakeup preemption by
/// signal), long before the hog's slice would end.
#[test]
fn rt_runs_before_normal() {
    within(30, || {
        for &p in Policy::ALL {
            let rt = rt(p, 1);
            if !rt.preemptive() {
                skipped(
                    "rt_runs_before_normal",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                return;
            }
            let stop = Arc::new(AtomicBool::new(false));
            let s2 = stop.clone();
            let hog_started = Arc::new(AtomicBool::new(false));
            let hs = hog_started.clone();
            let hog = rt.spawn(TaskSpec::new(), move || {
                hs.store(true, SeqCst);
                while !s2.load(Relaxed) {
                    std::hint::spin_loop();
                }
            });
            while !hog_started.load(SeqCst) {
                std::thread::yield_now();
            }
            let t0 = Instant::now();
            let s3 = stop.clone();
            let rt_task = rt.spawn(TaskSpec::new().rt_fifo(50), move || {
                let lat = t0.elapsed();
                s3.store(true, Relaxed);
                lat
            });
            let lat = rt_task.join().unwrap();
            hog.join().unwrap();
            // The hog's slice is 60 ms (2.4 at HZ=100) or 100 ms (O(1)); the RT task must not
            // wait for it.
            assert!(lat < Duration::from_millis(40), "{p:?}: RT waited {lat:?}");
        }
    });
}

/// A wakeup that must preempt a worker running *runtime* code sends no signal: the worker
/// acts on the request when it returns to task code (`worker::leave_runtime`), before a single
/// instruction of task code runs, not at its next tick. The same wakeup into *task* code still
/// needs, and sends, the signal. HZ=10 puts the tick 100 ms away.
#[test]
fn a_wakeup_into_runtime_code_is_acted_on_at_its_exit_without_a_signal() {
    /// Ends the hog however the test ends, so a failed assertion fails instead of hanging.
    struct StopOnDrop(Arc<AtomicBool>);
    impl Drop for StopOnDrop {
        fn drop(&mut self) {
            self.0.store(true, SeqCst);
        }
    }
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt_hz(p, 2, 10);
            if !rt.preemptive() {
                skipped(
                    "a_wakeup_into_runtime_code_is_acted_on_at_its_exit_without_a_signal",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                return;
            }
            let inside = Arc::new(AtomicBool::new(false));
            let release = Arc::new(AtomicBool::new(false));
            let stop = Arc::new(AtomicBool::new(false));
            let _stop_hog = StopOnDrop(stop.clone());
            // Loops of the hog's task code.
            let spins = Arc::new(AtomicUsize::new(0));
            // The RT task, asleep on CPU 1 until the main thread sends: when it runs, the
            // hog's task-code loops so far.
            let (tx, rx) = channel::<u8>(1);
            let ran = Arc::new(std::sync::Mutex::new(Vec::<(Instant, usize)>::new()));
            let (ran2, stop2, n1) = (ran.clone(), stop.clone(), spins.clone());
            let rt_task = rt.spawn(TaskSpec::new().rt_fifo(50).affinity([1]), move || {
                while let Ok(v) = rx.recv() {
                    let loops = n1.load(SeqCst);
                    ran2.lock().unwrap().push((Instant::now(), loops));
                    if v == 1 {
                        stop2.store(true, SeqCst);
                    }
                }
            });
            // A normal task on CPU 1: runtime code (preemption disabled) until released, then
            // task code until stopped.
            let (i2, r2, s2, n2) = (inside.clone(), release.clone(), stop.clone(), spins.clone());
            let hog = rt.spawn(TaskSpec::new().affinity([1]), move || {
                {
                    let _runtime_code = NoPreempt::new();
                    i2.store(true, SeqCst);
                    while !r2.load(SeqCst) {
                        std::hint::spin_loop();
                    }
                }
                while !s2.load(SeqCst) {
                    n2.fetch_add(1, SeqCst);
                    std::hint::spin_loop();
                }
            });
            while !inside.load(SeqCst) {
                std::thread::yield_now();
            }
            let before = rt.stats().resched_signals;
            tx.send(0).unwrap();
            std::thread::sleep(Duration::from_millis(20));
            assert!(
                ran.lock().unwrap().is_empty(),
                "{p:?}: ran inside runtime code"
            );
            assert_eq!(
                rt.stats().resched_signals,
                before,
                "{p:?}: signalled a worker in runtime code"
            );
            release.store(true, SeqCst);
            while ran.lock().unwrap().is_empty() {
                std::thread::yield_now();
            }
            // Acted on at the exit: the hog ran no task code first. (Left to the tick, it
            // would have looped for up to 100 ms; a wall-clock bound instead failed when the
            // OS descheduled the worker, in the child runs beside the parent's tests.)
            let loops = ran.lock().unwrap()[0].1;
            assert_eq!(
                loops, 0,
                "{p:?}: the hog ran {loops} loops of task code first"
            );
            // Once the RT task has blocked again and the hog spins in task code, the same
            // wakeup must signal it. (Sent while the RT task is still on its way back into
            // `recv`, it would rightly find runtime code and send none.)
            let s0 = spins.load(SeqCst);
            while spins.load(SeqCst) == s0 {
                std::thread::yield_now();
            }
            let before = rt.stats().resched_signals;
            let t0 = Instant::now();
            tx.send(1).unwrap();
            hog.join().unwrap();
            let lat = ran.lock().unwrap()[1].0.saturating_duration_since(t0);
            assert!(
                lat < Duration::from_millis(50),
                "{p:?}: waited {lat:?} for the tick"
            );
            assert!(
                rt.stats().resched_signals > before,
                "{p:?}: task code preempted without a signal?"
            );
            drop(tx);
            rt_task.join().unwrap();
        }
    });
}

/// A task of one runtime wakes a task of another (a channel between them): the wakeup is a
/// foreign one for the woken task's runtime, whatever CPU number the waker runs on in its
/// own. (The waker's CPU index used to be passed along: CPU 2 of a 3-CPU runtime named a CPU
/// the 2-CPU runtime does not have.)
#[test]
fn a_task_of_another_runtime_wakes_as_a_foreign_thread() {
    within(30, || {
        for &p in Policy::ALL {
            let a = rt(p, 3);
            let b = rt(p, 2);
            let (tx, rx) = channel::<u64>(1);
            let (back_tx, back_rx) = channel::<u64>(1);
            let echo = b.spawn(TaskSpec::new(), move || {
                let mut n = 0;
                while let Ok(v) = rx.recv() {
                    n += 1;
                    if back_tx.send(v).is_err() {
                        break;
                    }
                }
                n
            });
            let sender = a.spawn(TaskSpec::new().affinity([2]), move || {
                for i in 0..2000u64 {
                    tx.send(i).unwrap();
                    assert_eq!(back_rx.recv().unwrap(), i);
                }
            });
            sender.join().unwrap();
            assert_eq!(echo.join().unwrap(), 2000, "{p:?}");
        }
    });
}

/// O(1): tasks made runnable together first run in priority order.
#[test]
fn o1_runs_higher_priority_first() {
    within(20, || {
        let rt = rt(Policy::O1, 1);
        let order = Arc::new(Mutex::new(Vec::new()));
        let o = order.clone();
        // A FIFO starter holds the CPU while it spawns, so the children queue up.
        rt.spawn(TaskSpec::new().rt_fifo(10), move || {
            let mut hs = Vec::new();
            for nice in [10, -10, 0, 19, -20] {
                let o = o.clone();
                hs.push(spawn(TaskSpec::new().nice(nice), move || {
                    o.lock().push(nice)
                }));
            }
            hs
        })
        .join()
        .unwrap()
        .into_iter()
        .for_each(|h| h.join().unwrap());
        assert_eq!(*order.lock(), vec![-20, -10, 0, 10, 19]);
    });
}

/// Two CPU hogs on one CPU share it by their timeslices: nice 0 gets 100 ms per epoch under
/// O(1) (`task_timeslice`) and 6 ticks under 2.4 (`NICE_TO_TICKS` at HZ=100), nice 10 gets
/// 50 ms and 3 ticks; both designs predict 2:1; the fair classes divide by weight,
/// 1024:110. What is compared follows what each design divides: the work each hog got done
/// for the tick-counting designs, and the runtime's own account of each task's CPU time (wall
/// time holding the worker, the clock CFS and EEVDF charge) for the fair classes, so that
/// other processes taking the worker's core away on a loaded machine do not bias the
/// comparison against the mechanism. Measured within ±25 %.
#[test]
fn nice_levels_weight_cpu_share() {
    if in_forced_child() {
        skipped(
            "nice_levels_weight_cpu_share",
            "CPU-share measurement: checked by the parent run",
        );
        return;
    }
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt(p, 1);
            if !rt.preemptive() {
                skipped(
                    "nice_levels_weight_cpu_share",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                return;
            }
            let stop = Arc::new(AtomicBool::new(false));
            let mut hs = Vec::new();
            for nice in [0, 10] {
                let stop = stop.clone();
                hs.push(rt.spawn(TaskSpec::new().nice(nice), move || {
                    let mut work = 0u64;
                    while !stop.load(Relaxed) {
                        work += 1;
                        std::hint::spin_loop();
                    }
                    let cpu = crate::runtime::current_info().expect("inside a task").3;
                    (work as f64, cpu as f64)
                }));
            }
            std::thread::sleep(Duration::from_millis(1500));
            stop.store(true, Relaxed);
            let got: Vec<(f64, f64)> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            // What each design promises: 2.4's NICE_TO_TICKS 6:3 and O(1)'s slices 100:50 ms
            // give 2:1; CFS and EEVDF divide by weight, 1024:110; BFS by deadline offsets.
            let (expected, by_account) = match p.name() {
                "goodness" | "o1" => (2.0, false),
                // The 2.5.2-era slices at HZ=100: 1 + 29 * (139 - 120) / 39 = 15 jiffies for
                // nice 0, 1 + 29 * 9 / 39 = 7 for nice 10. The load-history penalty moves
                // both priorities, not the slices, and each runs its slice once per epoch.
                "o1:era=2002" => (15.0 / 7.0, false),
                "cfs:era=2.6.23" | "cfs" | "cfs:era=2.6.32" | "eevdf" | "eevdf:era=6.18" => {
                    (1024.0 / 110.0, true)
                }
                // BFS: each expiry moves a deadline by its nice level's offset, so nice 0
                // runs (D(10) - D(0)) / rr_interval slices per slice of nice 10: ~10.4.
                "bfs" => {
                    let b = crate::policy::bfs::Bfs::new(1, Default::default());
                    let gap = b.prio_deadline_diff(30) - b.prio_deadline_diff(20);
                    (gap as f64 / (b.timeslice() << 10) as f64, true)
                }
                other => panic!("state the nice 0 : nice 10 share {other} promises"),
            };
            let pick = |g: &(f64, f64)| if by_account { g.1 } else { g.0 };
            let ratio = pick(&got[0]) / pick(&got[1]).max(1.0);
            assert!(
                (expected * 0.75..expected * 1.25).contains(&ratio),
                "{p:?}: nice 0 / nice 10 ratio {ratio:.2} (expected {expected:.2}); (work, ns) {got:?}"
            );
        }
    });
}

/// The fair classes divide one CPU among three hogs by weight at every nice step, on real
/// threads: nice 0, 3 and 6 weigh 1024, 526 and 272 (`prio_to_weight`), shares 56.2 %,
/// 28.9 % and 14.9 %. The CPU time measured is the runtime's own account of each task (wall
/// time holding the worker, the clock the policy divides), so that other processes taking
/// the worker's core away cannot bias it; each share within ±20 % of its own value
/// (preemption comes at the runtime's tick, so a share moves by slices).
#[test]
fn fair_classes_share_by_weight_at_several_nice_levels() {
    if in_forced_child() {
        skipped(
            "fair_classes_share_by_weight_at_several_nice_levels",
            "CPU-share measurement: checked by the parent run",
        );
        return;
    }
    within(60, || {
        for &p in Policy::ALL {
            if !matches!(
                p.name(),
                "cfs:era=2.6.23" | "cfs" | "cfs:era=2.6.32" | "eevdf" | "eevdf:era=6.18"
            ) {
                continue;
            }
            let rt = rt(p, 1);
            if !rt.preemptive() {
                skipped(
                    "fair_classes_share_by_weight_at_several_nice_levels",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                return;
            }
            let nices = [0, 3, 6];
            let stop = Arc::new(AtomicBool::new(false));
            let mut hs = Vec::new();
            for nice in nices {
                let stop = stop.clone();
                hs.push(rt.spawn(TaskSpec::new().nice(nice), move || {
                    while !stop.load(Relaxed) {
                        std::hint::spin_loop();
                    }
                    // CPU time up to the last switch: the run so far, less this last stretch.
                    crate::runtime::current_info().expect("inside a task").3 as f64
                }));
            }
            std::thread::sleep(Duration::from_millis(1500));
            stop.store(true, Relaxed);
            let got: Vec<f64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            let total: f64 = got.iter().sum();
            let weights = [1024.0, 526.0, 272.0];
            let wsum: f64 = weights.iter().sum();
            eprintln!(
                "{}: shares {:.3?}",
                p.name(),
                got.iter().map(|g| g / total).collect::<Vec<_>>()
            );
            for i in 0..3 {
                let (share, want) = (got[i] / total, weights[i] / wsum);
                assert!(
                    (share - want).abs() <= 0.2 * want,
                    "{p:?}: nice {} got {:.3} of the CPU (weights give {want:.3}); ns: {got:?}",
                    nices[i],
                    share
                );
            }
        }
    });
}

#[test]
fn mutex_serialises_many_tasks_across_cpus() {
    within(30, || {
        let rt = rt(Policy::O1, 2);
        let m = Arc::new(Mutex::new(0u64));
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let m = m.clone();
                rt.spawn(TaskSpec::new(), move || {
                    for _ in 0..5000 {
                        let mut g = m.lock();
                        *g += 1;
                        if (*g).is_multiple_of(97) {
                            yield_now(); // sleep-holding: others must park, not spin
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), 40_000);
        assert_eq!(m.counters().acquisitions, 40_001);
    });
}

/// Who owns a semaphore right after `up()` with a sleeper queued: in hand-off mode the
/// sleeper (so the releasing task cannot take it back), in opportunistic mode nobody (so the
/// still-running releaser can).
#[test]
fn semaphore_modes_decide_who_owns_it_after_up() {
    within(20, || {
        for (mode, releaser_retakes) in
            [(LockMode::Handoff, false), (LockMode::Opportunistic, true)]
        {
            let rt = rt(Policy::O1, 1);
            let sem = Arc::new(Semaphore::new(1, mode));
            let s = sem.clone();
            // An RT releaser, so waking the normal sleeper does not preempt it.
            let r = rt.spawn(TaskSpec::new().rt_fifo(20), move || {
                s.down();
                let s2 = s.clone();
                let sleeper = spawn(TaskSpec::new(), move || {
                    s2.down();
                    s2.up();
                });
                sleep(Duration::from_millis(20)); // the sleeper queues on the semaphore
                s.up();
                let retook = s.try_down();
                if retook {
                    s.up();
                }
                (retook, sleeper)
            });
            let (retook, sleeper) = r.join().unwrap();
            sleeper.join().unwrap();
            assert_eq!(retook, releaser_retakes, "{mode:?}");
            let c = sem.counters();
            assert_eq!(c.handoffs > 0, mode == LockMode::Handoff, "{mode:?} {c:?}");
        }
    });
}

#[test]
fn condvar_wakes_waiters() {
    within(20, || {
        let rt = rt(Policy::O1, 2);
        let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
        let hs: Vec<_> = (0..10u32)
            .map(|_| {
                let p = pair.clone();
                rt.spawn(TaskSpec::new(), move || {
                    let mut g = p.0.lock();
                    while *g == 0 {
                        g = p.1.wait(g);
                    }
                    *g += 1;
                })
            })
            .collect();
        sleep(Duration::from_millis(20));
        *pair.0.lock() = 1;
        pair.1.notify_all();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*pair.0.lock(), 11);
    });
}

#[test]
fn tasks_change_their_own_nice_policy_and_affinity() {
    within(20, || {
        let rt = rt(Policy::O1, 2);
        let h = rt.spawn(TaskSpec::new(), || {
            set_nice(7).unwrap();
            let nice = current_info().unwrap().0;
            let err = set_nice(-21).unwrap_err();
            set_scheduler(crate::task::SchedPolicy::Rr, 30).unwrap();
            let (_, pol, prio, _) = current_info().unwrap();
            set_affinity([1]).unwrap();
            yield_now();
            let cpu = current().unwrap().1;
            assert!(set_affinity([9]).is_err());
            (nice, err, pol, prio, cpu)
        });
        let (nice, err, pol, prio, cpu) = h.join().unwrap();
        assert_eq!(nice, 7);
        assert!(err.contains("-21"), "{err}");
        assert_eq!((pol, prio), (crate::task::SchedPolicy::Rr, 30));
        assert_eq!(cpu, 1);
        assert!(set_nice(0).is_err(), "outside a task");
    });
}

#[test]
fn shutdown_timeout_reports_stuck_tasks() {
    within(20, || {
        let rt = rt(Policy::O1, 1);
        let (tx, rx) = channel::<()>(1);
        let _h = rt.spawn(TaskSpec::new(), move || {
            let _ = rx.recv(); // never sent while the runtime lives
        });
        assert_eq!(rt.shutdown_timeout(Duration::from_millis(50)), Err(1));
        drop(tx);
    });
}

// ----- preemption on every x86-64 CPU (issue 15.1) -----

/// Holds a distinct pattern in all 32 AVX-512 registers (the ZMM_Hi256 and Hi16_ZMM state
/// components as well as SSE and AVX) while spinning until `stop`, then writes them out. A
/// preemption that lost any part of the extended state shows up as a changed register.
///
/// # Safety
/// The CPU must support AVX-512F; `pattern` and `out` hold 32×64 bytes.
#[target_feature(enable = "avx512f")]
unsafe fn hold_zmm_until(
    pattern: &[u8; 2048],
    out: &mut [u8; 2048],
    stop: &AtomicBool,
    spins: &AtomicUsize,
) {
    std::arch::asm!(
        "vmovdqu64 zmm0, [rdi + 0]",
        "vmovdqu64 zmm1, [rdi + 64]",
        "vmovdqu64 zmm2, [rdi + 128]",
        "vmovdqu64 zmm3, [rdi + 192]",
        "vmovdqu64 zmm4, [rdi + 256]",
        "vmovdqu64 zmm5, [rdi + 320]",
        "vmovdqu64 zmm6, [rdi + 384]",
        "vmovdqu64 zmm7, [rdi + 448]",
        "vmovdqu64 zmm8, [rdi + 512]",
        "vmovdqu64 zmm9, [rdi + 576]",
        "vmovdqu64 zmm10, [rdi + 640]",
        "vmovdqu64 zmm11, [rdi + 704]",
        "vmovdqu64 zmm12, [rdi + 768]",
        "vmovdqu64 zmm13, [rdi + 832]",
        "vmovdqu64 zmm14, [rdi + 896]",
        "vmovdqu64 zmm15, [rdi + 960]",
        "vmovdqu64 zmm16, [rdi + 1024]",
        "vmovdqu64 zmm17, [rdi + 1088]",
        "vmovdqu64 zmm18, [rdi + 1152]",
        "vmovdqu64 zmm19, [rdi + 1216]",
        "vmovdqu64 zmm20, [rdi + 1280]",
        "vmovdqu64 zmm21, [rdi + 1344]",
        "vmovdqu64 zmm22, [rdi + 1408]",
        "vmovdqu64 zmm23, [rdi + 1472]",
        "vmovdqu64 zmm24, [rdi + 1536]",
        "vmovdqu64 zmm25, [rdi + 1600]",
        "vmovdqu64 zmm26, [rdi + 1664]",
        "vmovdqu64 zmm27, [rdi + 1728]",
        "vmovdqu64 zmm28, [rdi + 1792]",
        "vmovdqu64 zmm29, [rdi + 1856]",
        "vmovdqu64 zmm30, [rdi + 1920]",
        "vmovdqu64 zmm31, [rdi + 1984]",
        "2:",
        "lock inc qword ptr [rcx]",
        "cmp byte ptr [rdx], 0",
        "je 2b",
        "vmovdqu64 [rsi + 0], zmm0",
        "vmovdqu64 [rsi + 64], zmm1",
        "vmovdqu64 [rsi + 128], zmm2",
        "vmovdqu64 [rsi + 192], zmm3",
        "vmovdqu64 [rsi + 256], zmm4",
        "vmovdqu64 [rsi + 320], zmm5",
        "vmovdqu64 [rsi + 384], zmm6",
        "vmovdqu64 [rsi + 448], zmm7",
        "vmovdqu64 [rsi + 512], zmm8",
        "vmovdqu64 [rsi + 576], zmm9",
        "vmovdqu64 [rsi + 640], zmm10",
        "vmovdqu64 [rsi + 704], zmm11",
        "vmovdqu64 [rsi + 768], zmm12",
        "vmovdqu64 [rsi + 832], zmm13",
        "vmovdqu64 [rsi + 896], zmm14",
        "vmovdqu64 [rsi + 960], zmm15",
        "vmovdqu64 [rsi + 1024], zmm16",
        "vmovdqu64 [rsi + 1088], zmm17",
        "vmovdqu64 [rsi + 1152], zmm18",
        "vmovdqu64 [rsi + 1216], zmm19",
        "vmovdqu64 [rsi + 1280], zmm20",
        "vmovdqu64 [rsi + 1344], zmm21",
        "vmovdqu64 [rsi + 1408], zmm22",
        "vmovdqu64 [rsi + 1472], zmm23",
        "vmovdqu64 [rsi + 1536], zmm24",
        "vmovdqu64 [rsi + 1600], zmm25",
        "vmovdqu64 [rsi + 1664], zmm26",
        "vmovdqu64 [rsi + 1728], zmm27",
        "vmovdqu64 [rsi + 1792], zmm28",
        "vmovdqu64 [rsi + 1856], zmm29",
        "vmovdqu64 [rsi + 1920], zmm30",
        "vmovdqu64 [rsi + 1984], zmm31",
        in("rdi") pattern.as_ptr(),
        in("rsi") out.as_mut_ptr(),
        in("rdx") stop.as_ptr(),
        in("rcx") spins.as_ptr(),
        out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _, out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _, out("zmm12") _, out("zmm13") _, out("zmm14") _, out("zmm15") _, out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _, out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _, out("zmm24") _, out("zmm25") _, out("zmm26") _, out("zmm27") _, out("zmm28") _, out("zmm29") _, out("zmm30") _, out("zmm31") _,
    );
}

/// Two tasks on one CPU, each holding its own values in every AVX-512 register inside a loop
/// that never calls the runtime, are preempted into each other many times: each finds its
/// registers intact. This is what the trampoline's save area must hold on AVX-512 machines.
#[test]
fn preemption_preserves_avx512_state() {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        skipped(
            "preemption_preserves_avx512_state",
            "no AVX-512 on this CPU: the 512-bit state cannot be exercised here",
        );
        return;
    }
    within(60, || {
        let rt = rt_hz(Policy::Goodness, 1, 1000);
        if !rt.preemptive() {
            skipped(
                "preemption_preserves_avx512_state",
                &format!("preemption {}", rt.preemption_summary()),
            );
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let spins: Arc<Vec<AtomicUsize>> = Arc::new((0..2).map(|_| AtomicUsize::new(0)).collect());
        let tasks: Vec<_> = (0..2u8)
            .map(|k| {
                let (stop, spins) = (stop.clone(), spins.clone());
                rt.spawn(TaskSpec::new(), move || {
                    let mut pattern = [0u8; 2048];
                    for (i, b) in pattern.iter_mut().enumerate() {
                        *b = (i as u8).wrapping_mul(31).wrapping_add(k.wrapping_mul(101)) ^ k;
                    }
                    let mut out = [0u8; 2048];
                    // SAFETY: AVX-512F was detected above; both buffers are 2048 bytes.
                    unsafe { hold_zmm_until(&pattern, &mut out, &stop, &spins[k as usize]) };
                    pattern == out
                })
            })
            .collect();
        // Both tasks must have run, and taken turns several times, before they stop.
        let t0 = Instant::now();
        while (spins[0].load(Relaxed) == 0
            || spins[1].load(Relaxed) == 0
            || rt.stats().preemptions < 6)
            && t0.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let preemptions = rt.stats().preemptions;
        stop.store(true, SeqCst);
        for (k, t) in tasks.into_iter().enumerate() {
            assert_eq!(
                t.join(),
                Ok(true),
                "task {k}'s AVX-512 registers changed across a preemption"
            );
        }
        assert!(preemptions >= 6, "only {preemptions} preemptions in 20 s");
    });
}

#[test]
fn the_save_area_is_sized_from_cpuid() {
    let a = arch::SaveArea::detect();
    // Hand-computed reservations: the state plus 64 bytes of alignment, in whole pages.
    assert_eq!(
        arch::SaveArea {
            needed: 2696,
            reserve: 4096,
            xsave_mask: Some(0xe7)
        }
        .reserve,
        4096
    );
    assert!(
        a.reserve.is_multiple_of(4096) && a.reserve >= a.needed + 64,
        "{a:?}"
    );
    match a.xsave_mask {
        Some(mask) => {
            assert_eq!(mask & 3, 3, "x87 and SSE are always saved: {mask:#x}");
            assert!(a.needed >= 576, "{a:?}");
            // Never more than CPUID.(0xD,0).EBX, the size for everything the OS enabled.
            let all = std::arch::x86_64::__cpuid_count(0xD, 0).ebx as usize;
            assert!(a.needed <= all, "{a:?} vs {all}");
            if std::arch::is_x86_feature_detected!("avx512f") {
                assert_eq!(mask & 0xe0, 0xe0, "AVX-512 state saved: {mask:#x}");
                // Legacy + header, AVX's upper halves, opmasks, ZMM upper halves, ZMM16-31.
                assert!(a.needed >= 576 + 256 + 64 + 512 + 1024, "{a:?}");
            }
        }
        None => assert_eq!(a.needed, 512),
    }
}

/// Re-runs one test of this binary in a child process with `env` set (the save area and the
/// preemption switch are decided once per process).
fn in_child(test: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the test binary re-runs itself")
}

/// Runs this binary's whole runtime suite again in a child process with `env` set, and
/// returns its output after checking that it passed.
fn runtime_suite_in_child(env: &[(&str, &str)]) -> String {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["runtime::", "--nocapture", "--test-threads=2"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the test binary re-runs itself");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && text.contains("test result: ok"),
        "{env:?}:\n{text}"
    );
    text
}

/// The whole runtime suite with a save area larger than 4 KiB (AMX needs ~11 KiB), reserved
/// page by page by the trampoline's probe loop: hogs are still preempted, AVX-512 state still
/// survives, and stacks too small for the area are refused.
#[test]
fn the_runtime_suite_passes_with_a_large_save_area() {
    if std::env::var(SAVE_AREA_ENV).is_ok() || std::env::var(PREEMPT_ENV).is_ok() {
        return; // already a child
    }
    let text = runtime_suite_in_child(&[(SAVE_AREA_ENV, "12288")]);
    assert!(text.contains("12288 B reserved"), "{text}");
}

/// The whole runtime suite with preemption turned off: everything that does not need a
/// preemption still works, and nothing sends a signal.
#[test]
fn the_runtime_suite_passes_without_preemption() {
    if std::env::var(SAVE_AREA_ENV).is_ok() || std::env::var(PREEMPT_ENV).is_ok() {
        return;
    }
    let text = runtime_suite_in_child(&[(PREEMPT_ENV, "off")]);
    assert!(
        text.contains("preemption off (turned off by SCHEDKIT_RUNTIME_PREEMPT)"),
        "{text}"
    );
}

/// Prints (and checks) what `Runtime::preemption` says; the child runs of the other tests
/// read it.
#[test]
fn preemption_reports_its_area() {
    let rt = rt(Policy::O1, 1);
    let line = rt.preemption_summary();
    eprintln!("preemption {line}");
    match rt.preemption() {
        Ok(a) => {
            assert!(rt.preemptive() && line.starts_with("on ("));
            if let Ok(v) = std::env::var(SAVE_AREA_ENV) {
                let forced: usize = v.parse().unwrap();
                assert_eq!(a.reserve, forced.max(a.needed + 64).div_ceil(4096) * 4096);
            }
        }
        Err(why) => {
            assert!(!rt.preemptive() && line.starts_with("off (") && line.contains(why));
            assert!(
                std::env::var(PREEMPT_ENV).is_ok() || std::env::var(SAVE_AREA_ENV).is_ok(),
                "{why}"
            );
        }
    }
}

/// With preemption off (asked, or impossible), no reschedule signal is ever sent — the signal's
/// default action would kill the process, which is how 16-core AVX-512/AMX servers failed —
/// and a task woken for a busy CPU still gets it when the running task next calls the runtime.
#[test]
fn without_preemption_no_signal_is_sent() {
    within(30, || {
        for off in [
            Runtime::builder()
                .policy(Policy::O1)
                .cpus(2)
                .preemption(false),
            Runtime::builder()
                .policy(Policy::Cfs)
                .cpus(2)
                .preemption(false),
        ] {
            let rt = off.build().unwrap();
            assert!(!rt.preemptive());
            assert!(rt.preemption_summary().starts_with("off ("));
            // Many wakeups towards busy workers: each would have been a signal.
            let hs: Vec<_> = (0..8)
                .map(|i| {
                    rt.spawn(
                        TaskSpec::new().nice(if i % 2 == 0 { -10 } else { 5 }),
                        move || {
                            let mut acc = 0u64;
                            for k in 0..2000u64 {
                                acc = acc.wrapping_add(k);
                                yield_now();
                            }
                            acc
                        },
                    )
                })
                .collect();
            for h in hs {
                assert_eq!(h.join(), Ok((0..2000u64).sum()));
            }
            assert_eq!(rt.stats().resched_signals, 0, "{:?}", rt.stats());
        }
    });
}

/// A forced area smaller than the CPU's state is refused with the reason, and the runtime runs
/// without preemption instead of corrupting registers; the whole suite passes that way too.
#[test]
fn a_too_small_save_area_turns_preemption_off_with_the_reason() {
    if std::env::var(SAVE_AREA_ENV).is_ok() || std::env::var(PREEMPT_ENV).is_ok() {
        return;
    }
    let out = in_child(
        "runtime::tests::preemption_reports_its_area",
        &[(SAVE_AREA_ENV, "100")],
    );
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("preemption off (SCHEDKIT_RUNTIME_SAVE_AREA=100 is smaller than"),
        "{text}"
    );
}

#[test]
fn stacks_too_small_for_the_save_area_are_refused() {
    let Ok(area) = arch::SaveArea::get() else {
        return;
    };
    if area.stack_cost() - 4096 < 16 * 1024 {
        // A one-page area fits the smallest stack the builder allows; the child run of
        // `a_large_save_area_still_preempts` (12 KiB area) exercises the refusal.
        eprintln!(
            "area {} B fits every allowed stack; nothing to refuse",
            area.reserve
        );
        return;
    }
    let e = Runtime::builder()
        .cpus(1)
        .stack_size(area.stack_cost() - 4096)
        .build();
    assert!(
        matches!(e, Err(BuildError::StackForPreemption { .. })),
        "{:?}",
        e.err()
    );
    let msg = e.err().unwrap().to_string();
    assert!(msg.contains("too small for preemption"), "{msg}");
    // Without preemption the same stack is fine.
    assert!(Runtime::builder()
        .cpus(1)
        .stack_size(area.stack_cost() - 4096)
        .preemption(false)
        .build()
        .is_ok());
}

fn cpu_has_amx() -> bool {
    // CPUID.(7,0):EDX[24] = AMX-TILE.
    std::arch::x86_64::__cpuid_count(7, 0).edx & (1 << 24) != 0
}

/// On an AMX machine (Sapphire Rapids and later), a process that asked for the tile state
/// (`ARCH_REQ_XCOMP_PERM`) gets an area of ~11 KiB, sized from CPUID, and is still preempted.
/// Here, without AMX, the test says so: the forced 12 KiB run above covers the mechanism.
#[test]
fn amx_permission_grows_the_save_area() {
    if std::env::var("SCHEDKIT_TEST_AMX_CHILD").is_ok() {
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: a plain request for a state component permission.
        let r = unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            )
        };
        assert_eq!(
            r,
            0,
            "ARCH_REQ_XCOMP_PERM: {}",
            std::io::Error::last_os_error()
        );
        let area = arch::SaveArea::get().unwrap();
        eprintln!("AMX area {area:?}");
        assert!(
            area.xsave_mask.unwrap() & (1 << 18) != 0 && area.needed > 8192,
            "{area:?}"
        );
        a_non_yielding_hog_is_preempted();
        return;
    }
    if std::env::var(SAVE_AREA_ENV).is_ok() || std::env::var(PREEMPT_ENV).is_ok() {
        return;
    }
    if !cpu_has_amx() {
        skipped(
            "amx_permission_grows_the_save_area",
            "no AMX on this CPU: the tile permission path cannot be exercised here",
        );
        return;
    }
    let out = in_child(
        "runtime::tests::amx_permission_grows_the_save_area",
        &[("SCHEDKIT_TEST_AMX_CHILD", "1")],
    );
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

/// Neither preemption signal can interrupt either handler: a nested handler would see the
/// outer handler's context as interrupted task code and redirect the handler itself.
#[test]
fn the_handlers_block_both_signals() {
    if worker::install_handler().is_err() {
        skipped(
            "the_handlers_block_both_signals",
            "the signal handler cannot be installed",
        );
        return;
    }
    for sig in [worker::tick_signal(), worker::resched_signal()] {
        // SAFETY: querying the current disposition into a zeroed struct.
        let old = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            assert_eq!(libc::sigaction(sig, std::ptr::null(), &mut old), 0);
            old
        };
        for blocked in [worker::tick_signal(), worker::resched_signal()] {
            // SAFETY: reading a sigset.
            assert_eq!(
                unsafe { libc::sigismember(&old.sa_mask, blocked) },
                1,
                "{sig} lets {blocked} in"
            );
        }
    }
}

/// High-resolution wakeups: with HZ = 100 (10 ms jiffies) and a hog on the only worker, a
/// task sleeping 2 ms wakes about 2 ms later (its worker's one-shot timer), not at the next
/// jiffy (~15-35 µs late here when the machine is otherwise idle; tick-driven timers gave
/// ~5-8 ms): the sleeps end by the worker's own timer, not by a tick.
#[test]
fn sleepers_wake_at_their_deadline_not_the_next_tick() {
    within(60, || {
        for p in [Policy::O1, Policy::Eevdf] {
            let rt = rt_hz(p, 1, 100);
            if !rt.preemptive() {
                skipped(
                    "sleepers_wake_at_their_deadline_not_the_next_tick",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                return;
            }
            let stop = Arc::new(AtomicBool::new(false));
            let s2 = stop.clone();
            let hog = rt.spawn(TaskSpec::new(), move || {
                while !s2.load(Relaxed) {
                    std::hint::spin_loop();
                }
            });
            let sleeper = rt.spawn(TaskSpec::new(), || {
                let mut late: Vec<Duration> = (0..21)
                    .map(|_| {
                        let t = Instant::now();
                        sleep(Duration::from_millis(2));
                        t.elapsed().saturating_sub(Duration::from_millis(2))
                    })
                    .collect();
                late.sort();
                late[late.len() / 2]
            });
            let median = sleeper.join().unwrap();
            stop.store(true, SeqCst);
            hog.join().unwrap();
            // What woke the sleeper is the mechanism under test; the lateness itself also
            // depends on the host OS running the worker thread, which a loaded test machine
            // delays by milliseconds, so it is reported, not asserted.
            let by_timer = rt.stats().timer_wakeups;
            eprintln!(
                "{p:?}: median lateness {median:?}, {by_timer}/21 woken by the worker's timer"
            );
            assert!(
                by_timer >= 17,
                "{p:?}: only {by_timer} of 21 sleeps ended by the timer"
            );
        }
    });
}

// ----- async tasks (issue 15.5) -----

/// A one-shot signal for tests: set by anyone, awaited by one future.
#[derive(Default)]
struct Signal {
    state: std::sync::Mutex<(bool, Option<std::task::Waker>)>,
}
impl Signal {
    fn set(&self) {
        let w = {
            let mut g = self.state.lock().unwrap();
            g.0 = true;
            g.1.take()
        };
        if let Some(w) = w {
            w.wake();
        }
    }
    fn wait(self: &Arc<Self>) -> impl std::future::Future<Output = ()> {
        let me = self.clone();
        std::future::poll_fn(move |cx| {
            let mut g = me.state.lock().unwrap();
            if g.0 {
                std::task::Poll::Ready(())
            } else {
                g.1 = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
        })
    }
}

/// A future runs to completion as a task, returns its value, and is woken from an OS thread
/// (the waker goes through the policy's wakeup path from outside any worker).
#[test]
fn a_future_runs_as_a_task_and_is_woken_from_a_thread() {
    within(20, || {
        for &p in Policy::ALL {
            let rt = rt(p, 2);
            let sig = Arc::new(Signal::default());
            let s2 = sig.clone();
            let h = rt.spawn_future(TaskSpec::new().nice(-5), async move {
                s2.wait().await;
                yield_now_async().await;
                crate::runtime::current_info().expect("inside a task").0
            });
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                sig.set();
            });
            assert_eq!(
                h.join(),
                Ok(-5),
                "{p:?}: the future ran with its task's nice"
            );
            t.join().unwrap();
        }
    });
}

/// Two futures on `rt` hand a token back and forth `rounds` times each, every wake racing the
/// other's park. Returns how many handoffs each made and the token's final count.
fn futures_ping_pong(rt: &Runtime, rounds: u64) -> (Vec<Result<u64, JoinError>>, u64) {
    let turn = Arc::new(std::sync::Mutex::new((
        0u64,
        [None::<std::task::Waker>, None],
    )));
    let hs: Vec<_> = (0..2u64)
        .map(|me| {
            let turn = turn.clone();
            rt.spawn_future(TaskSpec::new(), async move {
                let mut mine = 0u64;
                while mine < rounds {
                    std::future::poll_fn(|cx| {
                        let mut g = turn.lock().unwrap();
                        if g.0 % 2 == me {
                            g.0 += 1;
                            let other = g.1[1 - me as usize].take();
                            drop(g);
                            if let Some(w) = other {
                                w.wake();
                            }
                            std::task::Poll::Ready(())
                        } else {
                            g.1[me as usize] = Some(cx.waker().clone());
                            std::task::Poll::Pending
                        }
                    })
                    .await;
                    mine += 1;
                }
                mine
            })
        })
        .collect();
    let each = hs.into_iter().map(|h| h.join()).collect();
    let total = turn.lock().unwrap().0;
    (each, total)
}

/// Two futures hand a token back and forth 2 000 times, each wake racing the other's park:
/// no wakeup is lost (the test would hang) and none is doubled (a token count would drift).
#[test]
fn futures_ping_pong_without_losing_a_wakeup() {
    within(30, || {
        for &p in Policy::ALL {
            let (each, total) = futures_ping_pong(&rt(p, 2), 1000);
            assert_eq!(each, vec![Ok(1000), Ok(1000)], "{p:?}");
            assert_eq!(total, 2000, "{p:?}");
        }
    });
}

/// A `Waker` called from a task takes runqueue locks; the tick's preemption signal must not
/// land inside them (it would take the same lock again on the same worker and hang). Found as
/// a rare hang of the ping-pong test above on a loaded machine; here the tick is at its
/// fastest and the handoffs many, so that without the guard a signal lands inside a wake
/// within a few thousand handoffs.
#[test]
fn a_waker_called_from_a_task_is_not_preempted_inside_the_wakeup() {
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt_hz(p, 2, 10_000);
            if !rt.preemptive() {
                skipped(
                    "a_waker_called_from_a_task_is_not_preempted_inside_the_wakeup",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                continue;
            }
            let (each, total) = futures_ping_pong(&rt, 20_000);
            assert_eq!(each, vec![Ok(20_000), Ok(20_000)], "{p:?}");
            assert_eq!(total, 40_000, "{p:?}");
        }
    });
}

/// Async code gets its nice level's weighted share: on one CPU, a nice -10 future against two
/// nice 0 futures, all CPU-bound with a `yield_now().await` every few thousand iterations,
/// under the fair classes. prio_to_weight gives 9548 : 1024 : 1024, so the nice -10 task
/// should get 9548/1024 = 9.3 times each nice 0 task's CPU time (the runtime's own account,
/// as in `fair_classes_share_by_weight_at_several_nice_levels`), within ±25 %.
#[test]
fn an_async_task_gets_its_nice_levels_weighted_share() {
    if in_forced_child() {
        skipped(
            "an_async_task_gets_its_nice_levels_weighted_share",
            "CPU-share measurement: checked by the parent run",
        );
        return;
    }
    within(60, || {
        for p in [Policy::Cfs, Policy::Eevdf] {
            let rt = rt(p, 1);
            if !rt.preemptive() {
                skipped(
                    "an_async_task_gets_its_nice_levels_weighted_share",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                return;
            }
            let stop = Arc::new(AtomicBool::new(false));
            let hs: Vec<_> = [-10, 0, 0]
                .into_iter()
                .map(|nice| {
                    let stop = stop.clone();
                    rt.spawn_future(TaskSpec::new().nice(nice), async move {
                        let mut n = 0u64;
                        while !stop.load(Relaxed) {
                            n = std::hint::black_box(n + 1);
                            if n.is_multiple_of(4096) {
                                yield_now_async().await;
                            }
                        }
                        crate::runtime::current_info().expect("inside a task").3 as f64
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(1500));
            stop.store(true, Relaxed);
            let cpu: Vec<f64> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            let expected = 9548.0 / 1024.0;
            eprintln!("{p:?}: CPU ns of nice -10, 0, 0: {cpu:?}");
            for other in &cpu[1..] {
                let ratio = cpu[0] / other.max(1.0);
                assert!(
                    (expected * 0.75..expected * 1.25).contains(&ratio),
                    "{p:?}: nice -10 / nice 0 CPU ratio {ratio:.2}, expected {expected:.2}; {cpu:?}"
                );
            }
        }
    });
}

//! Tasks on real workers: spawning and joining, bad specs, thousands of tasks, wakeups between
//! tasks and from another runtime, sleeping (and waking at the deadline, not the next tick),
//! attribute changes and shutdown.

use super::*;

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

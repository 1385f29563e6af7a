//! Async tasks (issue 15.5): futures run as tasks, woken from threads and tasks without a lost
//! or doubled wakeup, and scheduled by their nice level.

use super::*;

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
    let _alone = measuring_alone();
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

//! The runtime's sync primitives across workers: `Mutex`, the semaphore's two modes, `Condvar`.

use super::*;

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

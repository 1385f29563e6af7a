//! rt-migrate-test on real threads: the `rtmigrate` workload's check (rt-tests'
//! rt-migrate-test v2.4, `check_times`) run on the schedkit runtime under passive and push/pull
//! RT balancing, so the runtime's figures stand beside the simulator's (`docs/rt.md`).
//!
//! N = workers + 1 SCHED_FIFO tasks at priorities 2..2+N-1 and a parent at 2+N. Each
//! iteration the parent sleeps 100 ms, stamps the time and releases the tasks (it outranks them
//! all, so it sends every release before any of them runs); the highest task first binds
//! itself to the next worker in turn; each busy-loops until stamp + 20 ms, recording its start
//! and end offsets and the CPU time the runtime accounted to it. The tool's rule then says
//! whether a higher-priority task waited while a lower one ran.

use schedkit::metrics::{rtmigrate_report, RtMigrateReport};
use schedkit::runtime::{self as skrt, Policy, RtBalance, Runtime, TaskSpec};
use std::time::{Duration, Instant};

pub const RUN: Duration = Duration::from_millis(20);
pub const SLEEP: Duration = Duration::from_millis(100);
pub const MAXERR: Duration = Duration::from_millis(1);
const BASE_PRIO: u8 = 2;

/// Runs `loops` iterations on `cpus` workers; None if the runtime cannot preempt here (the
/// test measures exactly that).
pub fn run(
    p: Policy,
    mode: RtBalance,
    cpus: usize,
    loops: u32,
) -> anyhow::Result<Option<RtMigrateReport>> {
    let rt = Runtime::builder()
        .policy(p)
        .cpus(cpus)
        .rt_balance(mode)
        .build()?;
    if !rt.preemptive() {
        return Ok(None);
    }
    let n = cpus + 1;
    let (rec_tx, rec_rx) = skrt::channel::<(u32, u32, u64, u64, u64)>(n * 2);
    let mut release = Vec::new();
    for i in 0..n {
        let (tx, rx) = skrt::channel::<(u32, Instant)>(1);
        release.push(tx);
        let rec_tx = rec_tx.clone();
        rt.spawn(TaskSpec::new().rt_fifo(BASE_PRIO + i as u8), move || {
            while let Ok((iter, stamp)) = rx.recv() {
                if i == n - 1 {
                    // The highest task moves to the next CPU each iteration (the tool's
                    // "migrate" step), pulling the lower ones' placement along.
                    let _ = skrt::set_affinity([iter as usize % cpus]);
                }
                let start = stamp.elapsed();
                let cpu0 = skrt::current_info().map_or(0, |x| x.3);
                // Spin between clock reads: a preemption signal that lands in the vDSO's
                // clock_gettime is not a safe point and waits for the next tick, so the loop
                // spends most of its time in this program's own code.
                while stamp.elapsed() < RUN {
                    for _ in 0..512 {
                        std::hint::spin_loop();
                    }
                }
                let end = stamp.elapsed();
                let cpu = skrt::current_info().map_or(0, |x| x.3) - cpu0;
                if rec_tx
                    .send((
                        iter,
                        i as u32,
                        start.as_nanos() as u64,
                        end.as_nanos() as u64,
                        cpu,
                    ))
                    .is_err()
                {
                    break;
                }
            }
        });
    }
    drop(rec_tx);
    let parent = rt.spawn(TaskSpec::new().rt_fifo(BASE_PRIO + n as u8), move || {
        let mut recs = Vec::new();
        for iter in 1..=loops {
            skrt::sleep(SLEEP);
            let stamp = Instant::now();
            for tx in &release {
                let _ = tx.send((iter, stamp));
            }
            for _ in 0..n {
                if let Ok(r) = rec_rx.recv() {
                    recs.push(r);
                }
            }
        }
        drop(release);
        recs
    });
    let recs = parent
        .join()
        .map_err(|e| anyhow::anyhow!("rt-migrate parent: {e:?}"))?;
    Ok(Some(rtmigrate_report(
        n as u32,
        BASE_PRIO,
        MAXERR.as_nanos() as u64,
        &recs,
    )))
}

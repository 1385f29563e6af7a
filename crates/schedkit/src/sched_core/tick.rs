//! `scheduler_tick`: the running task's class sees the tick, then the periodic balancer runs
//! when its interval has come round (2.6's `rebalance_tick`).

use super::*;

/// `n` timer ticks on `cpu`, the last of which made the CPU's jiffy count `jiffies`. `curr` is
/// the task to charge them to (`None`: none runs, or the current one is on its way out);
/// `idle` says whether the CPU is idle, for the balancer's interval. A host that takes every
/// tick passes `n = 1`; one whose workers notice ticks late (the runtime) passes how many
/// there were.
pub fn scheduler_tick<H: Host>(
    h: &mut H,
    cpu: CpuId,
    curr: Option<TaskId>,
    idle: bool,
    n: u32,
    jiffies: u64,
) -> Result<(), CoreError> {
    // dl_task_timer: the replenishment timers due on this CPU (lock-free test first).
    super::deadline::dl_timers(h, cpu)?;
    // `sched_idle_cpu`: a CPU that runs SCHED_IDLE tasks only is not busy for the balancer's
    // interval (`sched_balance_domains`), though it balances as a CPU that is not idle.
    let mut sched_idle = false;
    if let Some(curr) = curr {
        let resched = with_rq(h, cpu, |s, ctx, rq, _| {
            let mut r = false;
            for _ in 0..n {
                r |= s.task_tick(ctx, rq, cpu, curr);
            }
            sched_idle = s.sched_idle_cpu(rq, cpu);
            r
        });
        if resched {
            h.set_need_resched(cpu);
        }
    } else if <H::Class as SchedClass>::TICKS_WHEN_IDLE {
        with_rq(h, cpu, |s, ctx, rq, _| {
            for _ in 0..n {
                s.class.idle_tick(ctx, rq, cpu);
            }
        });
    }
    let every = h
        .sched()
        .class
        .balance_interval_ticks(idle || sched_idle, h.hz());
    if let Some(every) = every.filter(|&e| e > 0) {
        let before = jiffies.saturating_sub(n as u64);
        if h.ncpus() > 1 && jiffies / every != before / every {
            let kind = if idle {
                CpuIdle::Idle
            } else {
                CpuIdle::NotIdle
            };
            let out = super::balance::load_balance(h, cpu, kind)?;
            if out.moved > 0 && (idle || out.resched) {
                h.set_need_resched(cpu);
            }
        }
    }
    if curr.is_some()
        && h.sched().layout() == LockLayout::PerCpu
        && h.published_nr_running(cpu) >= 2
    {
        h.kick_idle_balancer(cpu, true);
    }
    Ok(())
}

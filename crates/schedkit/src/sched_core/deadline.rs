//! The deadline class's paths across runqueues (`kernel/sched/deadline.c`): the push loop
//! (`push_dl_tasks` → `push_dl_task`, with `find_lock_later_rq`'s `DL_MAX_TRIES`), the pull
//! (`pull_dl_task`, from each overloaded runqueue under both locks) and the replenishment
//! timers (`dl_task_timer`), which fire here at the tick of the task's CPU (see
//! `policy::deadline` for that simplification). Every entry is skipped by a lock-free test
//! while no deadline task exists, so runs without one take no section more.

use super::*;
use crate::policy::deadline::{DlPush, DL_MAX_TRIES};

/// `push_dl_tasks` of `cpu`'s runqueue, run from `from`: push while something moves.
/// `woken`: the task a wakeup just queued there (`task_woken_dl`'s conditions).
pub fn push_dl_tasks<H: Host>(
    h: &mut H,
    cpu: CpuId,
    mut woken: Option<TaskId>,
    from: CpuId,
) -> Result<usize, CoreError> {
    if h.sched().layout() != LockLayout::PerCpu || h.ncpus() == 1 {
        return Ok(0);
    }
    let ncpus = h.ncpus();
    let mut failures = 0;
    let mut pushed = 0usize;
    let mut initial = None;
    loop {
        let (d, queued) = with_rq(h, cpu, |s, ctx, rq, _| {
            (
                s.dl.pick_push_target(ctx, rq, cpu, woken),
                rq.dl.nr_running(),
            )
        });
        woken = None;
        // Each push takes a task off this runqueue; the bound guards against a circle.
        if pushed > *initial.get_or_insert(queued) {
            break;
        }
        match d {
            DlPush::None => break,
            DlPush::ReschedSelf => {
                if cpu == from {
                    h.set_need_resched(cpu);
                } else {
                    h.resched(cpu, Some(from));
                }
                break;
            }
            DlPush::Move { task, to } => {
                check_cpu("find_later_rq", h.sched().name(), to, ncpus, None)?;
                if to == cpu {
                    break;
                }
                let moved = with_two_rqs(h, from, cpu, to, |s, ctx, src, dst| {
                    s.dl.push_dl_task_to(ctx, src, cpu, dst, to, task)
                });
                if moved {
                    pushed += 1;
                    h.count(CoreEvent::DlPush);
                    h.resched(to, Some(from));
                    failures = 0;
                } else {
                    failures += 1;
                    if failures >= DL_MAX_TRIES {
                        break;
                    }
                }
            }
        }
    }
    Ok(pushed)
}

/// `pull_dl_task` to `cpu` from each overloaded runqueue of `sources`, each under both locks.
/// Returns how many tasks moved.
pub fn pull_dl_tasks<H: Host>(
    h: &mut H,
    cpu: CpuId,
    sources: Vec<CpuId>,
) -> Result<usize, CoreError> {
    let ncpus = h.ncpus();
    let mut moved = 0;
    for src in sources {
        check_cpu("dlo_mask", h.sched().name(), src, ncpus, None)?;
        if src == cpu {
            continue;
        }
        if with_two_rqs(h, cpu, cpu, src, |s, ctx, this, src_rq| {
            s.dl.pull_dl_task_from(ctx, this, cpu, src_rq)
        }) {
            moved += 1;
            h.count(CoreEvent::DlPull);
        }
    }
    Ok(moved)
}

/// The overloaded runqueues `cpu` would pull deadline tasks from (`dlo_mask`, others than
/// its own), read without locks.
pub(crate) fn pull_sources<C: SchedClass>(s: &Sched<C>, cpu: CpuId) -> Vec<CpuId> {
    s.dl.rd.overloaded_cpus().filter(|&c| c != cpu).collect()
}

/// The replenishment timers of `cpu`'s throttled tasks that are due (`dl_task_timer`), from
/// `cpu`'s tick: each refilled and queued again; `cpu` reschedules if one beats what it runs,
/// and pushes what it cannot run.
pub fn dl_timers<H: Host>(h: &mut H, cpu: CpuId) -> Result<(), CoreError> {
    if h.sched().dl.rd.throttled_on(cpu) == 0 {
        return Ok(());
    }
    let resched = with_rq(h, cpu, |s, ctx, rq, _| {
        let r = s.dl.replenish_due(ctx, rq);
        s.publish(rq);
        r
    });
    if resched {
        h.set_need_resched(cpu);
    }
    if h.sched().dl.rd.is_overloaded(cpu) {
        push_dl_tasks(h, cpu, None, cpu)?;
    }
    Ok(())
}

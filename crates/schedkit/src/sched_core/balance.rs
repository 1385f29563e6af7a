//! Balancing: the class's periodic / idle / new-idle balancer (`find_busiest` under this
//! runqueue's lock, `move_tasks` under both) and the RT class's push loop.

use super::*;
use crate::policy::rt::{PushTarget, RT_MAX_TRIES};

/// One balancing pass for `cpu` (`idle`: busy, idle, or about to go idle). Per-CPU layouts
/// only; a global runqueue has nothing to balance.
pub fn load_balance<H: Host>(
    h: &mut H,
    cpu: CpuId,
    idle: CpuIdle,
) -> Result<PullOutcome, CoreError> {
    if h.sched().layout() != LockLayout::PerCpu || h.ncpus() == 1 {
        return Ok(PullOutcome::default());
    }
    let ncpus = h.ncpus();
    let d = h.sched().layout().domain_of(cpu);
    let (busiest, open) = h.lock_rq_viewing(cpu, |s, ctx, rq, view| {
        lockdep::held(d, || {
            let b = s.class.find_busiest(ctx, rq, cpu, view, idle);
            (
                b,
                idle == CpuIdle::NewlyIdle && s.class.newidle_pass_open(rq),
            )
        })
    });
    let mut out = PullOutcome::default();
    if let Some(b) = busiest {
        check_cpu("find_busiest", h.sched().name(), b.cpu, ncpus, None)?;
        if b.cpu != cpu {
            out = with_two_rqs(h, cpu, cpu, b.cpu, |s, ctx, this, src| {
                let out = s
                    .class
                    .move_tasks(ctx, this, cpu, src, b.cpu, idle, b.imbalance, &s.rt);
                s.publish(this);
                s.publish(src);
                out
            });
        }
    }
    if open {
        let pulled = out.moved > 0;
        with_rq(h, cpu, |s, ctx, rq, _| {
            s.class.newidle_done(ctx, rq, cpu, pulled)
        });
    }
    Ok(out)
}

/// `push_rt_tasks` of `cpu`'s runqueue, run from `from` (the CPU doing the work): push while
/// the RT class finds something to push, retrying a failed re-check up to `RT_MAX_TRIES`
/// times (`find_lock_lowest_rq`).
pub fn push_rt_tasks<H: Host>(
    h: &mut H,
    cpu: CpuId,
    woken: Option<TaskId>,
    from: CpuId,
) -> Result<(), CoreError> {
    push(h, cpu, woken, Some(from), usize::MAX).map(|_| ())
}

/// `push_rt_task` of `cpu`'s runqueue: one push at most (`switched_to_rt`), run from `from`
/// (`None`: an agent outside the CPUs, as `sched_setscheduler` from a shell). Returns whether
/// a task moved.
pub fn push_rt_task<H: Host>(
    h: &mut H,
    cpu: CpuId,
    from: Option<CpuId>,
) -> Result<bool, CoreError> {
    Ok(push(h, cpu, None, from, 1)? > 0)
}

/// The push loop, ending after `most` pushes; returns how many tasks it moved.
fn push<H: Host>(
    h: &mut H,
    cpu: CpuId,
    mut woken: Option<TaskId>,
    from: Option<CpuId>,
    most: usize,
) -> Result<usize, CoreError> {
    if h.sched().layout() != LockLayout::PerCpu || h.ncpus() == 1 {
        return Ok(0);
    }
    let ncpus = h.ncpus();
    let mut failures = 0;
    // Each push takes one task off this runqueue, so the loop ends; the bound (the RT tasks
    // queued when it began) guards against a class that keeps moving tasks in a circle.
    let mut pushed = 0usize;
    let mut initial = None;
    loop {
        let (d, queued) = with_rq(h, cpu, |s, ctx, rq, _| {
            (
                s.rt.pick_push_target(ctx, rq, cpu, woken),
                rq.rt.rt_nr_running,
            )
        });
        woken = None;
        if pushed > *initial.get_or_insert(queued) {
            break;
        }
        match d {
            PushTarget::None => break,
            PushTarget::ReschedSelf => {
                if Some(cpu) == from {
                    h.set_need_resched(cpu);
                } else {
                    h.resched(cpu, from);
                }
                break;
            }
            PushTarget::Move { task, to } => {
                check_cpu("pick_push_target", h.sched().name(), to, ncpus, None)?;
                if to == cpu {
                    break;
                }
                let moved = with_two_rqs(h, from.unwrap_or(cpu), cpu, to, |s, ctx, src, dst| {
                    s.rt.push_rt_task_to(ctx, src, cpu, dst, to, task)
                });
                if moved {
                    pushed += 1;
                    h.count(CoreEvent::RtPush);
                    h.resched(to, from);
                    failures = 0;
                    if pushed >= most {
                        break;
                    }
                } else {
                    failures += 1;
                    if failures >= RT_MAX_TRIES {
                        break;
                    }
                }
            }
        }
    }
    Ok(pushed)
}

/// `pull_rt_task` to `cpu`'s runqueue from each overloaded runqueue of `sources` (read under
/// `cpu`'s lock), each under both locks: what moved, and whether something better than what
/// `cpu` runs arrived.
pub fn pull_rt_tasks<H: Host>(
    h: &mut H,
    cpu: CpuId,
    sources: Vec<CpuId>,
) -> Result<PullOutcome, CoreError> {
    let ncpus = h.ncpus();
    let mut out = PullOutcome::default();
    for src in sources {
        check_cpu("overloaded_to_pull", h.sched().name(), src, ncpus, None)?;
        if src == cpu {
            continue;
        }
        let o = with_two_rqs(h, cpu, cpu, src, |s, ctx, this, src_rq| {
            s.rt.pull_rt_task_from(ctx, this, cpu, src_rq)
        });
        if o.moved > 0 {
            h.count(CoreEvent::RtPull(o.moved));
        }
        out.moved += o.moved;
        out.resched |= o.resched;
    }
    Ok(out)
}

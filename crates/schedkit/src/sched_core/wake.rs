//! Wakeups: `select_task_rq`, `try_to_wake_up` (with `ttwu_runnable` for a wakee still on its
//! runqueue: still current, as the host says, or kept queued as delayed by its class),
//! `wake_up_new_task` and the `activate` step they share (2.6's `activate_task` +
//! `check_preempt_curr` + `resched_task`, then 2.6.25's `task_wake_up_rt` push).

use super::*;

/// `select_task_rq`: the stacked RT class places RT tasks when it balances with push/pull,
/// the policy's class everything else. The answer is checked against the machine and the
/// task's affinity.
#[inline]
pub fn select_task_rq<H: Host>(
    h: &mut H,
    t: TaskId,
    waker_cpu: CpuId,
    kind: WakeKind,
) -> Result<CpuId, CoreError> {
    let ncpus = h.ncpus();
    let cpu = h.select_view(|s, tasks, view, ops| {
        let rt = if s.in_dl(&tasks[t]) {
            // select_task_rq_dl (also for a new task: sched_fork refuses a deadline parent,
            // so a new deadline task is one the host created).
            Some(s.dl.select_cpu(tasks, view, ops, t))
        } else if s.rt_stacked() && tasks[t].is_rt() && kind != WakeKind::Fork {
            s.rt.select_cpu(tasks, view, ops, t, waker_cpu)
        } else {
            None
        };
        rt.unwrap_or_else(|| s.class.select_cpu(tasks, view, ops, t, waker_cpu, kind))
    });
    let allowed = h.task_allowed(t);
    let name = h.sched().name();
    check_cpu("select_cpu", name, cpu, ncpus, Some(&allowed))
}

/// `try_to_wake_up` of `t` from `waker_cpu` (`None`: not from a CPU of this host, e.g. a
/// foreign thread). Returns what the host found of `t` ([`Host::claim_wakee`]): only a task
/// that was [`Wakee::Asleep`] is placed and queued here.
#[inline]
pub fn try_to_wake_up<H: Host>(
    h: &mut H,
    t: TaskId,
    waker_cpu: Option<CpuId>,
    sync: bool,
    irq: bool,
    uninterruptible: bool,
) -> Result<Wakee, CoreError> {
    // ttwu_runnable, first case: a task still current on its CPU never left its runqueue; the
    // host has set it running again and there is nothing to place, kick or push.
    match h.claim_wakee(t, waker_cpu) {
        Wakee::Asleep => {}
        other => return Ok(other),
    }
    // Second case: its class kept it queued as delayed.
    if wake_delayed(h, t, waker_cpu, sync, irq, uninterruptible)? {
        return Ok(Wakee::Asleep);
    }
    let from = waker_cpu.unwrap_or_else(|| h.task_cpu(t));
    let target = select_task_rq(h, t, from, WakeKind::Wakeup { sync })?;
    // WF_SYNC means something only where the waker runs: it is about to sleep there.
    let sync_here = sync && Some(target) == waker_cpu;
    activate(
        h,
        t,
        target,
        waker_cpu,
        EnqueueKind::Wakeup {
            uninterruptible,
            sync: sync_here,
            irq,
        },
        sync_here,
    )?;
    Ok(Wakee::Asleep)
}

/// `ttwu_runnable` for a class that may keep sleeping tasks queued (DELAY_DEQUEUE): under
/// the lock of `t`'s runqueue, a task its class still holds is made runnable where it is (no
/// CPU selection), then checked for preemption as any woken task. Returns whether it was.
pub fn wake_delayed<H: Host>(
    h: &mut H,
    t: TaskId,
    waker_cpu: Option<CpuId>,
    sync: bool,
    irq: bool,
    uninterruptible: bool,
) -> Result<bool, CoreError> {
    if !h.sched().class.delays_dequeue() || !h.may_be_queued(t) {
        return Ok(false);
    }
    let woke = task_rq_lock(h, t, |s, ctx, rq| {
        let cpu = ctx.tasks[t].cpu;
        if s.in_stacked(&ctx.tasks[t]) || !s.class.requeue_delayed(ctx, rq, cpu, t) {
            return None;
        }
        ctx.tasks[t].state = crate::task::TaskState::Queued;
        let sync_here = sync && Some(cpu) == waker_cpu;
        let curr = rq.curr_on(cpu);
        let preempt = curr.is_some_and(|c| c != t) && s.check_preempt(ctx, rq, cpu, t, sync_here);
        Some((cpu, curr.is_none(), preempt, sync_here))
    });
    let Some((cpu, idle, preempt, sync_here)) = woke else {
        return Ok(false);
    };
    h.task_queued(
        t,
        EnqueueKind::Wakeup {
            uninterruptible,
            sync: sync_here,
            irq,
        },
    );
    if idle || preempt {
        h.resched(cpu, waker_cpu);
    }
    Ok(true)
}

/// `wake_up_new_task` after `sched_fork`: place the child and queue it.
pub fn wake_up_new_task<H: Host>(
    h: &mut H,
    child: TaskId,
    parent_cpu: CpuId,
    waker_cpu: Option<CpuId>,
) -> Result<(), CoreError> {
    let target = select_task_rq(h, child, parent_cpu, WakeKind::Fork)?;
    activate(h, child, target, waker_cpu, EnqueueKind::New, false)
}

/// Queues `t` (owned by the caller) on `target`'s runqueue, then kicks or preempts as the
/// classes decide, and pushes what the arrival made pushable.
#[inline]
pub fn activate<H: Host>(
    h: &mut H,
    t: TaskId,
    target: CpuId,
    waker_cpu: Option<CpuId>,
    kind: EnqueueKind,
    sync: bool,
) -> Result<(), CoreError> {
    let layout = h.sched().layout();
    let (idle, preempt, nr) = with_rq(h, target, |s, ctx, rq, _| {
        if layout == LockLayout::PerCpu {
            // set_task_cpu: the task belongs to the runqueue it is queued on.
            ctx.tasks[t].cpu = target;
        }
        s.enqueue(ctx, rq, target, t, kind);
        ctx.tasks[t].state = crate::task::TaskState::Queued;
        let idle = rq.curr_on(target).is_none();
        let preempt = !idle && s.check_preempt(ctx, rq, target, t, sync);
        (idle, preempt, s.nr_running(rq, target))
    });
    h.task_queued(t, kind);
    if idle || preempt {
        h.resched(target, waker_cpu);
    } else if layout == LockLayout::PerCpu && nr >= 2 {
        h.kick_idle_balancer(target, false);
    }
    // task_woken_dl: a deadline task queued behind an earlier one is pushed.
    if h.sched().dl.rd.is_overloaded(target) {
        super::deadline::push_dl_tasks(h, target, Some(t), waker_cpu.unwrap_or(target))?;
    }
    // task_woken_rt: a task queued behind a better one on an overloaded runqueue is pushed.
    if h.sched().rt.has_pushable_tasks(target) {
        super::balance::push_rt_tasks(h, target, Some(t), waker_cpu.unwrap_or(target))?;
    }
    Ok(())
}

//! Fork, exit, yield and attribute changes: the paths that reach a task's class outside a
//! wakeup or a `schedule()`.

use super::*;

/// A task the host creates before the run starts, placed on `cpu` as if already balanced:
/// `sched_fork` with no parent and a first enqueue, with no lock taken (nothing runs yet).
pub fn place_initial<C: SchedClass>(
    s: &Sched<C>,
    ctx: &mut Ctx<'_, C::TaskData>,
    rq: &mut Rq<C::Rq>,
    cpu: CpuId,
    t: TaskId,
) {
    lockdep::held(s.layout().domain_of(cpu), || {
        ctx.tasks[t].cpu = cpu;
        s.class.task_fork(ctx, rq, cpu, None, t);
        s.enqueue(ctx, rq, cpu, t, EnqueueKind::New);
        ctx.tasks[t].state = crate::task::TaskState::Queued;
    })
}

/// `sched_fork` + `wake_up_new_task`: `child` (owned by the caller) was created by `parent`
/// running on `cpu` (or, with no parent, by the host, charged to `cpu`'s runqueue); `waker` is
/// the CPU doing it, if it is one.
pub fn fork<H: Host>(
    h: &mut H,
    cpu: CpuId,
    parent: Option<TaskId>,
    child: TaskId,
    waker: Option<CpuId>,
) -> Result<(), CoreError> {
    let (parent_resched, dl_parent) = with_rq(h, cpu, |s, ctx, rq, _| {
        if let Some(p) = parent.filter(|&p| s.in_dl(&ctx.tasks[p])) {
            return (false, Some(p));
        }
        ctx.tasks[child].cpu = cpu;
        (s.class.task_fork(ctx, rq, cpu, parent, child), None)
    });
    if let Some(p) = dl_parent {
        return Err(CoreError::new(format!(
            "{p} is SCHED_DEADLINE and forked: sched_fork refuses it (-EAGAIN) unless the \
             task set SCHED_FLAG_RESET_ON_FORK, which is not modelled"
        )));
    }
    if parent_resched && parent.is_some() {
        h.set_need_resched(cpu);
    }
    super::wake::wake_up_new_task(h, child, cpu, waker)
}

/// The exited `x` switched out of `cpu` for good: its class is told (`sched_exit`, under
/// the lock of its parent's runqueue, where O(1) gives back the unused slice), then the host
/// releases it.
pub fn task_dead<H: Host>(h: &mut H, cpu: CpuId, x: TaskId) -> Result<(), CoreError> {
    let parent = h.live_parent(x);
    match parent {
        Some(p) => task_rq_lock(h, p, |s, ctx, rq| {
            s.dl.release(&mut ctx.tasks[x]);
            s.class.task_exit(ctx, rq, x, parent)
        }),
        None => with_rq(h, cpu, |s, ctx, rq, _| {
            s.dl.release(&mut ctx.tasks[x]);
            s.class.task_exit(ctx, rq, x, None)
        }),
    }
    h.release_task(cpu, x, parent)
}

/// `sys_sched_yield` by `t`, running on `cpu`.
pub fn sched_yield<H: Host>(h: &mut H, cpu: CpuId, t: TaskId) -> Result<(), CoreError> {
    let resched = with_rq(h, cpu, |s, ctx, rq, _| s.yield_task(ctx, rq, cpu, t));
    if resched {
        h.set_need_resched(cpu);
    }
    Ok(())
}

/// `set_user_nice` / `sched_setscheduler` / `set_cpus_allowed` on `t`, running on `cpu`:
/// dequeue (SAVE), change, enqueue (RESTORE) — into whichever class the task belongs to now —
/// and reschedule; then what the RT class asks of the change (`rt_class_changed`: a task
/// that lowered its RT priority or left the class pulls). A task whose new affinity excludes
/// `cpu` leaves at that `schedule()`.
pub fn change_attr<H: Host, R>(
    h: &mut H,
    cpu: CpuId,
    t: TaskId,
    f: impl FnOnce(&mut crate::task::Task<TaskData<H>>) -> R,
) -> Result<R, CoreError> {
    let (r, rt) = with_rq(h, cpu, |s, ctx, rq, _| {
        let was_rt = s.in_stacked(&ctx.tasks[t]);
        let was = rt_prio_of(s, &ctx.tasks[t]);
        let running = rq.curr_on(cpu) == Some(t);
        s.dequeue(ctx, rq, cpu, t, DequeueKind::Save);
        let r = f(&mut ctx.tasks[t]);
        if !s.in_dl(&ctx.tasks[t]) {
            // switched_from_dl: its bandwidth leaves the root domain.
            s.dl.release(&mut ctx.tasks[t]);
        }
        if !was_rt && s.in_stacked(&ctx.tasks[t]) && running {
            // It leaves the per-CPU class while running on it: that class lets go of it now
            // (`put_prev_task` under the old class, as `__sched_setscheduler` does), or it
            // would keep pointing at it as its current task.
            s.class.put_prev(ctx, rq, cpu, t);
        }
        s.enqueue(ctx, rq, cpu, t, EnqueueKind::Restore);
        let now = rt_prio_of(s, &ctx.tasks[t]);
        let rt = s.rt.class_changed(ctx, rq, cpu, was, now, running);
        (r, rt)
    });
    h.set_need_resched(cpu);
    rt_class_changed(h, cpu, t, rt, Some(cpu))?;
    Ok(r)
}

/// The task's RT `prio` if it belongs to the stacked RT class, for [`RtClass::class_changed`].
fn rt_prio_of<C: SchedClass, D>(s: &Sched<C>, p: &crate::task::Task<D>) -> Option<usize> {
    s.in_rt(p).then(|| crate::policy::rt::rt_prio(p))
}

/// The end of `__sched_setscheduler`, after the lock section that changed `t` on `cpu`
/// (`check_class_changed`, v2.6.25:kernel/sched.c:1416): the push or pull the RT class asked
/// for ([`RtClass::class_changed`]), run from `from` (`None`: an agent outside the CPUs).
/// Returns whether `t` was pushed off `cpu` (`switched_to_rt` then leaves `cpu` alone). A pull
/// that brings something better than what `cpu` runs reschedules it: 2.6.25's
/// `switched_from_rt` ignores what `pull_rt_task` returns, leaving the pulled task queued
/// behind a normal one until `cpu` next schedules; here it runs at once, as RT tasks must.
fn rt_class_changed<H: Host>(
    h: &mut H,
    cpu: CpuId,
    t: TaskId,
    change: crate::policy::rt::ClassChanged,
    from: Option<CpuId>,
) -> Result<bool, CoreError> {
    use crate::policy::rt::ClassChanged;
    match change {
        ClassChanged::Nothing => Ok(false),
        ClassChanged::Push => {
            let moved = super::balance::push_rt_task(h, cpu, from)?;
            Ok(moved && h.task_cpu(t) != cpu)
        }
        ClassChanged::Pull(sources) => {
            if super::balance::pull_rt_tasks(h, cpu, sources)?.resched {
                if from == Some(cpu) {
                    h.set_need_resched(cpu);
                } else {
                    h.resched(cpu, from);
                }
            }
            Ok(false)
        }
    }
}

/// `set_user_nice` / `sched_setscheduler` on `t` from outside (the user at a shell running
/// `renice` or `chrt -p`, not `t` itself), under `t`'s runqueue lock. A queued or running task
/// is dequeued (SAVE), changed and enqueued (RESTORE) into whichever class it belongs to now;
/// then what the RT class asks of the change (`rt_class_changed`: a task that became RT on
/// an overloaded runqueue is pushed, a task that left the class or a running one that lowered
/// its RT priority pulls); then its CPU reschedules if it runs there, or if the class's
/// preemption check says the queued task now beats the running one (`prio_changed`: a
/// simplification of each class's own rule, which the kernel applies per class), unless it
/// was pushed away. A sleeping task is changed where it sleeps
/// and the class told ([`SchedClass::attr_changed_asleep`]), as `set_load_weight` updates a
/// task on no runqueue. Returns false for a task that has exited or not started.
///
/// `nice_only`: the change is of the nice level alone; a class whose kernel only stored it
/// ([`SchedClass::requeues_on_nice`] false: 2.4's `sys_setpriority`) gets it stored, nothing
/// more.
pub fn set_task_attr<H: Host>(
    h: &mut H,
    t: TaskId,
    nice_only: bool,
    f: impl FnOnce(&mut crate::task::Task<TaskData<H>>),
) -> Result<bool, CoreError> {
    use crate::policy::rt::ClassChanged;
    use crate::task::TaskState;
    let mut f = Some(f);
    let outcome = task_rq_lock(h, t, |s, ctx, rq| {
        let cpu = ctx.tasks[t].cpu;
        let change = f.take().expect("runs once");
        if nice_only && !s.class.requeues_on_nice() {
            return match ctx.tasks[t].state {
                TaskState::New | TaskState::Dead => None,
                _ => {
                    change(&mut ctx.tasks[t]);
                    Some((cpu, false, ClassChanged::Nothing))
                }
            };
        }
        match ctx.tasks[t].state {
            TaskState::Queued | TaskState::Running(_) => {
                let was_rt = s.in_stacked(&ctx.tasks[t]);
                let was = rt_prio_of(s, &ctx.tasks[t]);
                let running = rq.curr_on(cpu) == Some(t);
                s.dequeue(ctx, rq, cpu, t, DequeueKind::Save);
                change(&mut ctx.tasks[t]);
                if !s.in_dl(&ctx.tasks[t]) {
                    s.dl.release(&mut ctx.tasks[t]);
                }
                if !was_rt && s.in_stacked(&ctx.tasks[t]) && running {
                    // It leaves the per-CPU class while running on it (as in change_attr).
                    s.class.put_prev(ctx, rq, cpu, t);
                }
                s.enqueue(ctx, rq, cpu, t, EnqueueKind::Restore);
                let resched = running
                    || (rq.curr_on(cpu).is_some() && s.check_preempt(ctx, rq, cpu, t, false));
                let now = rt_prio_of(s, &ctx.tasks[t]);
                let rt = s.rt.class_changed(ctx, rq, cpu, was, now, running);
                Some((cpu, resched, rt))
            }
            TaskState::Sleeping { .. } => {
                change(&mut ctx.tasks[t]);
                if !s.in_dl(&ctx.tasks[t]) {
                    s.dl.release(&mut ctx.tasks[t]);
                }
                s.class.attr_changed_asleep(ctx, rq, cpu, t);
                Some((cpu, false, ClassChanged::Nothing))
            }
            TaskState::New | TaskState::Dead => None,
        }
    });
    let Some((cpu, resched, rt)) = outcome else {
        return Ok(false);
    };
    let pushed_away = rt_class_changed(h, cpu, t, rt, None)?;
    if resched && !pushed_away {
        h.resched(cpu, None);
    }
    Ok(true)
}

//! `goodness`'s wakeup decisions, as 2.4.16's `kernel/sched.c` makes them: `reschedule_idle()`
//! (the woken task's last CPU if idle, else the CPU idle longest, else the CPU whose task it
//! beats by the most) and `preemption_goodness()` against the task running where it was
//! queued, with the `task_struct` bytes each reads and writes. The run list and `goodness()`
//! itself are `mod.rs`'s; must never depend on another design, the stacked RT class, a host
//! or the core.

use super::task_struct::task;
use super::{can_schedule, goodness, GoodnessRq, GoodnessTask, T};
use crate::class::{CpuView, Ctx, Rq, WakeKind};
use crate::ds::work::{Line, Work};
use crate::task::{CpuId, TaskId, TaskView};

/// `preemption_goodness(prev, p, cpu)`, both measured with prev's mm.
fn preemption_goodness(prev: &T, p: &T, cpu: CpuId) -> i32 {
    goodness(p, cpu, Some(prev.mm)) - goodness(prev, cpu, Some(prev.mm))
}

/// `try_to_wake_up`'s preemption check on `cpu`, where `woken` was queued: whether it beats
/// the task running there (`reschedule_idle()` when the woken task may run only there).
pub(super) fn preempts_curr(
    ctx: &mut Ctx<GoodnessTask>,
    rq: &mut Rq<GoodnessRq>,
    cpu: CpuId,
    woken: TaskId,
    sync: bool,
) -> bool {
    let Some(curr) = rq.curr_on(cpu) else {
        return false;
    };
    // A sync wakeup that may run here skips reschedule_idle altogether.
    if sync && ctx.tasks[woken].cpus_allowed.contains(cpu) {
        return false;
    }
    ctx.ops.scanned += 2;
    // preemption_goodness(tsk, p, cpu): both tasks' goodness fields and tsk->active_mm;
    // a win sets tsk->need_resched.
    ctx.read_line(Line::TaskBytes(woken, task::GOODNESS_FIELDS));
    ctx.read_line(Line::TaskBytes(curr, task::GOODNESS_FIELDS));
    ctx.read_line(Line::TaskBytes(curr, task::ACTIVE_MM));
    let preempt = preemption_goodness(&ctx.tasks[curr], &ctx.tasks[woken], cpu) > 0;
    if preempt {
        ctx.write_line(Line::TaskBytes(curr, task::NEED_RESCHED));
    }
    preempt
}

/// `reschedule_idle(p)`: the CPU to queue the woken or new task `t` for.
pub(super) fn reschedule_idle(
    tasks: &TaskView<'_, GoodnessTask>,
    view: &CpuView,
    ops: &mut Work<'_>,
    t: TaskId,
    waker_cpu: CpuId,
    kind: WakeKind,
) -> CpuId {
    let p = &tasks[t];
    if kind == (WakeKind::Wakeup { sync: true }) && p.cpus_allowed.contains(waker_cpu) {
        return waker_cpu;
    }
    // reschedule_idle(): p->processor and can_schedule()'s masks...
    ops.read_line(Line::TaskBytes(t, task::GOODNESS_FIELDS));
    // ...the last CPU if it is idle: send_now_idle reads and sets its idle task's
    // need_resched (the IPI decision is the host's).
    let best_cpu = p.cpu;
    if best_cpu < view.ncpus() && can_schedule(p, best_cpu) {
        ops.read_line(Line::Cpu(best_cpu));
        if view.is_idle(best_cpu) {
            ops.write_line(Line::IdleBytes(best_cpu, task::NEED_RESCHED));
            return best_cpu;
        }
    }
    // ...else the idle CPU idle for longest (coldest cache), else the CPU whose task the
    // woken one beats by most.
    let mut oldest_idle = u64::MAX;
    let mut target = None;
    let mut max_prio = 0;
    for cpu in 0..view.ncpus() {
        ops.scanned += 1;
        if !can_schedule(p, cpu) {
            continue;
        }
        // aligned_data[cpu]: its curr and last_schedule.
        ops.read_line(Line::Cpu(cpu));
        let published = view.cpu(cpu);
        match published.curr {
            None => {
                if published.last_schedule_ns < oldest_idle {
                    oldest_idle = published.last_schedule_ns;
                    target = Some(cpu);
                }
            }
            Some(c) if oldest_idle == u64::MAX => {
                // preemption_goodness(tsk, p, cpu): tsk's goodness fields and active_mm.
                ops.read_line(Line::TaskBytes(c, task::GOODNESS_FIELDS));
                ops.read_line(Line::TaskBytes(c, task::ACTIVE_MM));
                let prio = preemption_goodness(&tasks[c], p, cpu);
                if prio > max_prio {
                    max_prio = prio;
                    target = Some(cpu);
                }
            }
            Some(_) => {}
        }
    }
    if let Some(cpu) = target {
        // An idle target: best_cpu = tsk->processor, then send_now_idle. A busy one:
        // tsk->need_resched = 1, and tsk->processor for the IPI.
        match view.cpu(cpu).curr {
            None => {
                ops.read_line(Line::IdleBytes(cpu, task::GOODNESS_FIELDS));
                ops.write_line(Line::IdleBytes(cpu, task::NEED_RESCHED));
            }
            Some(c) => ops.write_line(Line::TaskBytes(c, task::NEED_RESCHED)),
        }
    }
    target.unwrap_or_else(|| {
        if p.cpus_allowed.contains(best_cpu) && best_cpu < view.ncpus() {
            best_cpu
        } else {
            p.cpus_allowed.iter(view.ncpus()).next().unwrap_or(0)
        }
    })
}

//! `schedule()`: what happens to prev, the RT pull, the pick across the class stack and its
//! validation, the switch, and what follows it (reaping a dead prev, the RT push, re-placing
//! a prev that may no longer run here).

use super::*;
use crate::task::TaskState;

/// Why prev is leaving the CPU (what the host knows when it calls `schedule()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leave {
    /// Still runnable: preempted, or its slice ran out.
    Runnable,
    /// `sched_yield()` (the class's yield runs here, under this `schedule()`'s lock).
    Yield,
    /// Blocked; the host already knows it is asleep.
    Sleep { uninterruptible: bool },
    /// Asked to block; the host's handshake decides under the lock whether a wakeup got there
    /// first ([`Host::commit_block`], [`Host::finish_block`]).
    MaybeSleep,
    /// Exited: it switches out for the last time and is reaped after the switch.
    Exit,
}

/// What `schedule()` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// The task `cpu` runs now (`None`: idle); may be prev.
    pub next: Option<TaskId>,
}

#[derive(Default, Clone, Copy)]
struct PrevFate {
    left: bool,
    exited: bool,
    /// prev asked to block and was dequeued: the handshake's last step
    /// ([`Host::finish_block`]) is still to come, at the pick.
    finish_block: bool,
    evicted: bool,
}

/// What the first hold of this CPU's runqueue lock ends with: the next task picked, or (RT
/// push/pull) the overloaded runqueues to pull from first, after which the lock is taken again
/// to pick (2.6.25's `pre_schedule` → `pull_rt_task`, which drops this lock to take two).
enum FirstLock<P> {
    Picked(P),
    PullFrom(Vec<CpuId>),
    /// prev left and the runqueue ran dry: a new-idle balance before the pick.
    NewIdle,
    /// A deadline prev left the deadline tree: `balance_dl` → `pull_dl_task` first.
    PullDlFrom(Vec<CpuId>),
}

/// `schedule()` on `cpu`, whose current task `prev` (if any) stops running for `leave`.
pub fn schedule<H: Host>(
    h: &mut H,
    cpu: CpuId,
    prev: Option<TaskId>,
    leave: Leave,
) -> Result<Switch, CoreError> {
    let layout = h.sched().layout();
    // A new-idle balance when this runqueue runs dry: after prev is deactivated, so that the
    // balancer sees this CPU empty (2.6.0's `if (!rq->nr_running) idle_balance(...)` after
    // `deactivate_task(prev)`; today's `sched_balance_newidle`, from the pick once prev left,
    // with this runqueue's lock dropped while it balances).
    let newidle_applies = layout == LockLayout::PerCpu && h.ncpus() > 1;

    // Under the runqueue lock: prev leaves if it blocks, exits or may no longer run here;
    // pre_schedule may ask to pull RT tasks first, else put_prev and pick at once.
    let (fate, first) = with_rq(h, cpu, |s, ctx, rq, inside| {
        let mut fate = PrevFate::default();
        if let Some(p) = prev {
            let now = ctx.now;
            let task = &mut ctx.tasks[p];
            task.last_ran_ns = task.last_ran_ns.max(now);
            H::prev_stopped(inside, cpu, task, now);
            match leave {
                Leave::Runnable => {}
                Leave::Yield => {
                    s.yield_task(ctx, rq, cpu, p);
                }
                Leave::Sleep { uninterruptible } => {
                    dequeue_sleep::<H>(s, ctx, rq, inside, cpu, p);
                    ctx.tasks[p].state = TaskState::Sleeping { uninterruptible };
                    fate.left = true;
                }
                Leave::MaybeSleep => {
                    if H::commit_block(inside, p) {
                        dequeue_sleep::<H>(s, ctx, rq, inside, cpu, p);
                        ctx.tasks[p].state = TaskState::Sleeping {
                            uninterruptible: false,
                        };
                        fate.left = true;
                        // Not asleep yet for a waker: until this CPU has put prev back and
                        // picked (`pick`, perhaps after the lock was dropped for a pull or a
                        // new-idle balance), a waker that finds it must leave it to this CPU,
                        // as the kernel's waits for `p->on_cpu` (and 2.6's found
                        // `task_running` and queued it on this same runqueue). Were it a
                        // waker's now, the waker could queue it elsewhere and run it there
                        // before this CPU's `put_prev_task` re-inserts it here.
                        fate.finish_block = true;
                    }
                }
                Leave::Exit => {
                    s.dequeue(ctx, rq, cpu, p, DequeueKind::Exit);
                    ctx.tasks[p].state = TaskState::Sleeping {
                        uninterruptible: true,
                    };
                    fate.left = true;
                    fate.exited = true;
                }
            }
            if !fate.left
                && (!ctx.tasks[p].cpus_allowed.contains(cpu)
                    || (leave == Leave::Runnable && s.push_running(ctx, rq, cpu, p)))
            {
                // Its affinity no longer includes this CPU, or its class's balancer asked the
                // stopper to move it (active balance): it leaves before this CPU picks (2.6's
                // migration thread) and is re-placed after the switch.
                s.dequeue(ctx, rq, cpu, p, DequeueKind::Migrate);
                ctx.tasks[p].state = TaskState::Sleeping {
                    uninterruptible: false,
                };
                fate.evicted = true;
            }
        }
        // balance_dl: a deadline prev no longer on the tree (blocked, exited, throttled)
        // pulls (need_pull_dl_task); the balance of prev's class only, as prev_balance stops
        // at the first class that has something runnable.
        if let Some(p) = prev.filter(|&p| s.in_dl(&ctx.tasks[p])) {
            let off = !ctx.tasks[p].dl().on_rq || ctx.tasks[p].dl().throttled;
            if off && ctx.ncpus > 1 {
                let sources = super::deadline::pull_sources(s, cpu);
                if !sources.is_empty() {
                    return (fate, FirstLock::PullDlFrom(sources));
                }
            }
        }
        let sources = if s.push_pull() {
            s.rt.overloaded_to_pull(ctx, rq, cpu, prev)
        } else {
            Vec::new()
        };
        if !sources.is_empty() {
            (fate, FirstLock::PullFrom(sources))
        } else if newidle_applies && s.nr_running(rq, cpu) == 0 {
            // The pick that finds nothing comes first: it dequeues what the class kept
            // queued asleep (6.12+'s delayed tasks), so the balancer sees this CPU empty.
            s.drain_before_newidle(ctx, rq, cpu);
            (fate, FirstLock::NewIdle)
        } else {
            (
                fate,
                FirstLock::Picked(pick::<H>(s, ctx, rq, inside, cpu, prev, fate)),
            )
        }
    });
    let (next, requeue) = match first {
        FirstLock::Picked(picked) => picked?,
        FirstLock::PullDlFrom(sources) => {
            super::deadline::pull_dl_tasks(h, cpu, sources)?;
            if newidle_applies && h.published_nr_running(cpu) == 0 {
                super::balance::load_balance(h, cpu, CpuIdle::NewlyIdle)?;
            }
            with_rq(h, cpu, |s, ctx, rq, inside| {
                pick::<H>(s, ctx, rq, inside, cpu, prev, fate)
            })?
        }
        FirstLock::PullFrom(sources) => {
            super::balance::pull_rt_tasks(h, cpu, sources)?;
            if newidle_applies && h.published_nr_running(cpu) == 0 {
                super::balance::load_balance(h, cpu, CpuIdle::NewlyIdle)?;
            }
            with_rq(h, cpu, |s, ctx, rq, inside| {
                pick::<H>(s, ctx, rq, inside, cpu, prev, fate)
            })?
        }
        FirstLock::NewIdle => {
            super::balance::load_balance(h, cpu, CpuIdle::NewlyIdle)?;
            with_rq(h, cpu, |s, ctx, rq, inside| {
                pick::<H>(s, ctx, rq, inside, cpu, prev, fate)
            })?
        }
    };
    h.switched(cpu, prev, next)?;

    if fate.exited {
        super::attr::task_dead(h, cpu, prev.expect("exited implies prev"))?;
    }
    // The push balance callback of set_next_task_dl: an overloaded runqueue pushes.
    if h.sched().dl.rd.is_overloaded(cpu) {
        super::deadline::push_dl_tasks(h, cpu, None, cpu)?;
    }
    // post_schedule_rt: an overloaded runqueue pushes what it cannot run.
    if h.sched().rt.has_pushable_tasks(cpu) {
        super::balance::push_rt_tasks(h, cpu, None, cpu)?;
    }
    if requeue {
        // A wakeup arrived while prev was being dequeued: it is queued again, as woken (where
        // it is, if its class kept it queued as delayed).
        let p = prev.expect("requeue implies prev");
        if !super::wake::wake_delayed(h, p, Some(cpu), false, false, false)? {
            let target = super::wake::select_task_rq(h, p, cpu, WakeKind::Wakeup { sync: false })?;
            super::wake::activate(
                h,
                p,
                target,
                Some(cpu),
                EnqueueKind::Wakeup {
                    uninterruptible: false,
                    sync: false,
                    irq: false,
                },
                false,
            )?;
        }
    }
    if fate.evicted {
        let p = prev.expect("evicted implies prev");
        let target = super::wake::select_task_rq(h, p, cpu, WakeKind::Wakeup { sync: false })?;
        super::wake::activate(h, p, target, Some(cpu), EnqueueKind::Migrate, false)?;
    }
    if next.is_some() && layout == LockLayout::PerCpu && h.published_nr_running(cpu) >= 2 {
        h.kick_idle_balancer(cpu, false);
    }
    Ok(Switch { next })
}

/// `deactivate_task(prev, DEQUEUE_SLEEP)`; a class that may keep it queued while it sleeps
/// (DELAY_DEQUEUE) says whether it did, and the host learns it ([`Host::blocked_queued`],
/// the kernel's `p->on_rq` left set for a delayed task) before the handshake hands prev to
/// wakers, so that a wakeup reads it without this lock.
#[inline(always)]
fn dequeue_sleep<H: Host>(
    s: &Sched<H::Class>,
    ctx: &mut Ctx<'_, TaskData<H>>,
    rq: &mut Rq<ClassRq<H>>,
    inside: &H::Inside,
    cpu: CpuId,
    p: TaskId,
) {
    if s.class.delays_dequeue() {
        let before = s.nr_delayed(rq, cpu);
        s.dequeue(ctx, rq, cpu, p, DequeueKind::Sleep);
        H::blocked_queued(inside, p, s.nr_delayed(rq, cpu) > before);
    } else {
        s.dequeue(ctx, rq, cpu, p, DequeueKind::Sleep);
    }
}

/// `put_prev_task` + `pick_next_task`, then the pick's validation and the state changes of
/// the switch, under the runqueue lock. Returns the task picked and whether a prev that
/// blocked must be queued again (a wakeup arrived while it was leaving: the handshake ends
/// here, once prev is off this CPU for good).
#[inline(always)]
fn pick<H: Host>(
    s: &Sched<H::Class>,
    ctx: &mut Ctx<'_, TaskData<H>>,
    rq: &mut Rq<ClassRq<H>>,
    inside: &H::Inside,
    cpu: CpuId,
    prev: Option<TaskId>,
    fate: PrevFate,
) -> Result<(Option<TaskId>, bool), CoreError> {
    if let Some(p) = prev {
        s.put_prev(ctx, rq, cpu, p);
    }
    let next = s.pick_next(ctx, rq, cpu);
    if let Some(n) = next {
        if n.index() >= ctx.tasks.len() {
            return Err(CoreError::new(format!(
                "{} picked {n} for CPU {cpu}, which is not a task",
                s.name()
            )));
        }
        match ctx.tasks[n].state {
            // On per-CPU runqueues a queued task is on its task_cpu's queue (the kernel's
            // set_task_cpu precedes every enqueue on another runqueue); a pick of one whose
            // task_cpu is another CPU took it from a queue it is not on.
            TaskState::Queued if s.layout() == LockLayout::PerCpu && ctx.tasks[n].cpu != cpu => {
                return Err(CoreError::new(format!(
                    "{} picked {n} for CPU {cpu}, but it is queued on CPU {}",
                    s.name(),
                    ctx.tasks[n].cpu
                )))
            }
            TaskState::Queued => {}
            TaskState::Running(c) if c == cpu && prev == Some(n) => {}
            st => {
                return Err(CoreError::new(format!(
                    "{} picked {n} for CPU {cpu}, but it is {st:?}",
                    s.name()
                )))
            }
        }
        if !ctx.tasks[n].cpus_allowed.contains(cpu) {
            return Err(CoreError::new(format!(
                "{} picked {n} for CPU {cpu} outside its affinity",
                s.name()
            )));
        }
    }
    if let Some(p) = prev {
        if !fate.left && !fate.evicted && next != Some(p) {
            ctx.tasks[p].state = TaskState::Queued;
        }
    }
    if let Some(n) = next {
        let t = &mut ctx.tasks[n];
        t.state = TaskState::Running(cpu);
        // task_cpu(p); for a global runqueue, 2.4's `processor` (the CPU it last ran on).
        t.cpu = cpu;
    }
    rq.set_curr(cpu, next);
    H::publish_curr(inside, cpu, next, next != prev, ctx.now);
    // prev is off this CPU's class state now: a wakeup may own it from here on.
    let requeue = fate.finish_block && !H::finish_block(inside, prev.expect("finish implies prev"));
    Ok((next, requeue))
}

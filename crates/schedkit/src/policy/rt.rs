//! The real-time class shared by the per-CPU policies: SCHED_FIFO/SCHED_RR at priorities
//! 1..99, always ahead of normal tasks, with the two ways of balancing RT tasks across CPUs
//! (designs.md §3, `v2.6.25:kernel/sched_rt.c`, cpupri from 2.6.27):
//!
//! - [`RtBalance::Passive`]: before 2.6.25, RT tasks moved only when the periodic load balancer
//!   (or the migration thread, for affinity changes) happened to move them.
//! - [`RtBalance::PushPull`]: Rostedt and Haskins' active balancing. A runqueue with more than
//!   one RT task, one of them able to migrate, is *overloaded* and flagged in the root domain's
//!   `rto_mask`. After a context switch and when an RT task wakes behind a higher one, the
//!   runqueue *pushes* its highest non-running migratable RT task to the CPU running the
//!   lowest-priority work (found through cpupri), if that task would preempt there; a runqueue
//!   about to lower its priority *pulls* from overloaded runqueues the best RT task that may
//!   run on it. A waking RT task whose CPU already runs an RT task is placed on the
//!   lowest-priority CPU instead, even if it would preempt there (the v3 rule: do not push a
//!   running, cache-hot RT task off its CPU for a freshly woken, cold one). An attribute change
//!   pushes or pulls as `sched_setscheduler`'s `check_class_changed` does
//!   ([`RtClass::class_changed`]).
//!
//! What the v3 cover letter says push does not cover, and neither does this: push looks only
//! at the highest non-running migratable RT task; if *its* affinity lets it preempt nowhere,
//! pushing stops, even when a lower RT task with a wider affinity could run on a CPU that runs
//! something less important. That CPU may pull the task, but only when it lowers its own
//! priority (tested in `tests/rt.rs`).
//!
//! Priorities here are the kernel's `prio`: 0 is the best, `99 - rt_priority` for RT tasks.

use crate::class::{
    CpuView, Ctx, DequeueKind, EnqueueKind, MayMove, PassiveRt, PullOutcome, Rq, RtBalance,
};
use crate::ds::prio_array::{MAX_PRIO, MAX_RT_PRIO};
use crate::ds::rt_rq::{cpupri_level, RootDomain, CPUPRI_IDLE, CPUPRI_NORMAL};
use crate::ds::work::OpCounter;
use crate::task::{CpuId, SchedPolicy, Task, TaskId, TaskView};

/// `RT_MAX_TRIES` of `find_lock_lowest_rq`.
pub const RT_MAX_TRIES: usize = 3;

/// `rt_prio`: the kernel `prio` of an RT task (0 best, 99 - `rt_priority`).
#[inline]
pub fn rt_prio<D>(p: &Task<D>) -> usize {
    MAX_RT_PRIO - 1 - p.rt_priority as usize
}

/// The `prio` the RT class compares a CPU's current task with: its RT priority, or
/// `MAX_RT_PRIO` for anything of a lower class (every RT task beats it).
#[inline]
fn curr_prio<D>(tasks: &TaskView<'_, D>, curr: Option<TaskId>) -> usize {
    match curr {
        None => MAX_PRIO,
        Some(c) if tasks[c].is_rt() => rt_prio(&tasks[c]),
        Some(_) => MAX_RT_PRIO,
    }
}

/// `nr_cpus_allowed > 1` on this machine.
#[inline]
fn migratory<D>(p: &Task<D>, ncpus: usize) -> bool {
    p.cpus_allowed.iter(ncpus).nth(1).is_some()
}

/// What a runqueue should do after a context switch or a wakeup in push mode (the first steps
/// of 2.6.25's `push_rt_task`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushTarget {
    /// Nothing to push.
    None,
    /// The best queued task beats the running one: reschedule this CPU instead of pushing.
    ReschedSelf,
    /// Move `task` to `to`; the core locks both runqueues and calls [`RtClass::push_rt_task_to`],
    /// which re-checks everything (`find_lock_lowest_rq`).
    Move { task: TaskId, to: CpuId },
}

/// What an attribute change asks of push/pull balancing ([`RtClass::class_changed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClassChanged {
    Nothing,
    /// Push from the task's runqueue (`switched_to_rt`).
    Push,
    /// Pull to the task's runqueue from these overloaded runqueues (`switched_from_rt`,
    /// `prio_changed_rt`).
    Pull(Vec<CpuId>),
}

/// The RT class (`rt_sched_class`), stacked by the core in front of a policy's class. It
/// queues SCHED_FIFO/RR tasks in each runqueue's [`RtRq`](crate::ds::rt_rq::RtRq) and does
/// the push/pull balancing; the state every CPU reads without locks is its [`RootDomain`].
#[derive(Debug)]
pub struct RtClass {
    pub balance: RtBalance,
    pub rd: RootDomain,
}

impl RtClass {
    pub fn new(balance: RtBalance, ncpus: usize) -> RtClass {
        RtClass {
            balance,
            rd: RootDomain::new(ncpus),
        }
    }

    /// Publishes the runqueue's overload state and cpupri level to the root domain; the core
    /// calls it after anything that changes what a runqueue holds.
    #[inline]
    pub fn publish<C>(&self, rq: &mut Rq<C>) {
        let cpu = rq.cpu;
        rq.rt.update_overload(&self.rd, cpu);
        let level = if rq.rt.rt_nr_running > 0 {
            cpupri_level(rq.rt.highest_prio)
        } else if rq.nr_running > 0 {
            CPUPRI_NORMAL
        } else {
            CPUPRI_IDLE
        };
        self.rd.set_cpupri(cpu, level);
    }

    /// `enqueue_task_rt`. `rr_slice` is the SCHED_RR slice in ticks, should the task need one.
    #[inline]
    pub fn enqueue<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        rq: &mut Rq<C>,
        t: TaskId,
        kind: EnqueueKind,
        rr_slice: i64,
    ) {
        let now = ctx.now;
        let p = &mut ctx.tasks[t];
        // The 2.6 `p->timestamp` the cache-hot test of a passive balancer reads: set when a
        // task is created and at an ordinary wakeup (a sync one is `__activate_task`).
        if matches!(
            kind,
            EnqueueKind::New | EnqueueKind::Wakeup { sync: false, .. }
        ) {
            p.timestamp_ns = now;
        }
        if p.rt.time_slice <= 0 {
            p.rt.time_slice = rr_slice.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        }
        let prio = rt_prio(p);
        let mig = migratory(p, ctx.ncpus);
        rq.rt.enqueue(&mut ctx.tasks, t, prio, mig, ctx.ops);
        ctx.tasks[t].rt.on_rq = true;
        rq.nr_running += 1;
        self.publish(rq);
    }

    /// `dequeue_task_rt`.
    #[inline]
    pub fn dequeue<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>, t: TaskId, _kind: DequeueKind) {
        if !ctx.tasks[t].rt.on_rq {
            return;
        }
        let prio = rt_prio(&ctx.tasks[t]);
        let mig = migratory(&ctx.tasks[t], ctx.ncpus);
        rq.rt.dequeue(&mut ctx.tasks, t, prio, mig, ctx.ops);
        ctx.tasks[t].rt.on_rq = false;
        rq.nr_running -= 1;
        self.publish(rq);
    }

    /// `put_prev_task_rt`: the run ends now (`p->timestamp`, `last_ran`).
    #[inline]
    pub fn put_prev<D>(&self, ctx: &mut Ctx<D>, prev: TaskId) {
        let now = ctx.now;
        let p = &mut ctx.tasks[prev];
        p.timestamp_ns = now;
        p.last_ran_ns = now;
    }

    /// `pick_next_task_rt`: the first task of the best non-empty level.
    #[inline]
    pub fn pick<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>, cpu: CpuId) -> Option<TaskId> {
        if rq.rt.rt_nr_running == 0 {
            return None;
        }
        let next = rq.rt.pick(ctx.ops)?;
        if rq.curr_on(cpu) != Some(next) {
            ctx.tasks[next].timestamp_ns = ctx.now;
        }
        Some(next)
    }

    /// `task_tick_rt`: FIFO runs until it blocks or yields; RR goes to the tail of its level
    /// every `rr_slice` ticks.
    pub fn task_tick<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        rq: &mut Rq<C>,
        curr: TaskId,
        rr_slice: i64,
    ) -> bool {
        let p = &mut ctx.tasks[curr];
        if p.policy != SchedPolicy::Rr || !p.rt.on_rq {
            return false;
        }
        p.rt.time_slice -= 1;
        if p.rt.time_slice > 0 {
            return false;
        }
        p.rt.time_slice = rr_slice.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        let prio = rt_prio(p);
        rq.rt.requeue(&mut ctx.tasks, curr, prio, ctx.ops);
        true
    }

    /// `yield_task_rt`: to the tail of its level.
    pub fn yield_task<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>, curr: TaskId) -> bool {
        if ctx.tasks[curr].rt.on_rq {
            let prio = rt_prio(&ctx.tasks[curr]);
            rq.rt.requeue(&mut ctx.tasks, curr, prio, ctx.ops);
        }
        true
    }

    /// `check_preempt_curr_rt`: a woken RT task preempts a lower RT priority.
    pub fn check_preempt<D>(&self, ctx: &Ctx<D>, curr: TaskId, woken: TaskId) -> bool {
        rt_prio(&ctx.tasks[woken]) < rt_prio(&ctx.tasks[curr])
    }

    /// `select_task_rq_rt` with push/pull (the v3 rule): if an RT task already runs on the
    /// woken task's CPU, place it on the lowest-priority CPU instead of preempting there.
    /// `None` when this class has no opinion (passive balancing: the policy's own placement).
    pub fn select_cpu<D>(
        &self,
        tasks: &TaskView<'_, D>,
        view: &CpuView,
        ops: &mut OpCounter,
        t: TaskId,
        waker_cpu: CpuId,
    ) -> Option<CpuId> {
        if self.balance != RtBalance::PushPull {
            return None;
        }
        let p = &tasks[t];
        let n = view.ncpus();
        let cpu = if p.cpus_allowed.contains(p.cpu) {
            p.cpu
        } else {
            p.cpus_allowed.iter(n).next().unwrap_or(0)
        };
        let rt_running = view.cpu(cpu).curr.is_some_and(|c| tasks[c].is_rt());
        if rt_running && migratory(p, n) {
            let (to, reads) = self
                .rd
                .find_lowest_rq(rt_prio(p), &p.cpus_allowed, cpu, waker_cpu);
            ops.remote_touches += reads;
            return Some(to.unwrap_or(cpu));
        }
        Some(cpu)
    }

    /// A lock-free test (the kernel reads `rq->rt.overloaded`): may `cpu`'s runqueue have
    /// something to push?
    #[inline]
    pub fn has_pushable_tasks(&self, cpu: CpuId) -> bool {
        self.balance == RtBalance::PushPull && self.rd.is_overloaded(cpu)
    }

    /// `pre_schedule_rt`'s test and `pull_rt_task`'s walk of the overload mask: an RT `prev`
    /// whose runqueue now offers only worse work pulls from every overloaded runqueue.
    /// Returns those CPUs (empty: no pull).
    #[inline]
    pub fn overloaded_to_pull<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        rq: &mut Rq<C>,
        cpu: CpuId,
        prev: Option<TaskId>,
    ) -> Vec<CpuId> {
        if self.balance != RtBalance::PushPull {
            return Vec::new();
        }
        let Some(p) = prev.filter(|&p| ctx.tasks[p].is_rt()) else {
            return Vec::new();
        };
        if rq.rt.highest_prio <= rt_prio(&ctx.tasks[p]) {
            return Vec::new();
        }
        self.pull_sources(ctx, cpu)
    }

    /// `pull_rt_task`'s walk of the overload mask: the overloaded runqueues other than `cpu`'s
    /// (none when the root domain has none, `rt_overloaded`).
    fn pull_sources<D>(&self, ctx: &mut Ctx<D>, cpu: CpuId) -> Vec<CpuId> {
        if self.rd.rto_count() == 0 {
            return Vec::new();
        }
        ctx.ops.remote_touches += 1;
        self.rd.overloaded_cpus().filter(|&c| c != cpu).collect()
    }

    /// What an attribute change of a queued or running task on `cpu` asks of push/pull
    /// balancing, under `cpu`'s runqueue lock once the task is queued again (2.6.25's
    /// `__sched_setscheduler` ends with `check_class_changed`, v2.6.25:kernel/sched.c:1416
    /// and :4642-4646, which calls the RT class's hooks of v2.6.25:kernel/sched_rt.c). `was`
    /// and `now`: the task's RT `prio` before and after, `None` outside the RT class.
    ///
    /// - `switched_to_rt` (:1069): a task that became RT without running may have overloaded
    ///   its runqueue: push (`push_rt_task`, once).
    /// - `switched_from_rt` (:1049): the last RT task of the runqueue left the class: pull.
    /// - `prio_changed_rt` (:1097): a running RT task lowered its priority: pull.
    ///
    /// Their reschedules of this CPU are the core's (it reschedules a running task's CPU after
    /// any change, and a queued task's where the change lets it preempt).
    pub fn class_changed<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        rq: &Rq<C>,
        cpu: CpuId,
        was: Option<usize>,
        now: Option<usize>,
        running: bool,
    ) -> ClassChanged {
        if self.balance != RtBalance::PushPull {
            return ClassChanged::Nothing;
        }
        let pull = match (was, now) {
            (None, Some(_)) => {
                return if !running && rq.rt.overloaded {
                    ClassChanged::Push
                } else {
                    ClassChanged::Nothing
                };
            }
            (Some(_), None) => rq.rt.rt_nr_running == 0,
            (Some(old), Some(new)) => running && old < new,
            (None, None) => false,
        };
        match pull {
            true => ClassChanged::Pull(self.pull_sources(ctx, cpu)),
            false => ClassChanged::Nothing,
        }
    }

    /// `pull_rt_task`, for one overloaded source, with both runqueues locked. `resched`: the
    /// task pulled beats what `this` runs (`schedule()` picks next anyway; an attribute
    /// change's pull reschedules on it).
    pub fn pull_rt_task_from<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        this: &mut Rq<C>,
        this_cpu: CpuId,
        src: &mut Rq<C>,
    ) -> PullOutcome {
        if src.rt.rt_nr_running <= 1 {
            return PullOutcome::default();
        }
        let next = this.rt.pick(ctx.ops).map(|t| rt_prio(&ctx.tasks[t]));
        let (p, seen) = src.rt.next_highest(
            &ctx.tasks,
            src.curr(),
            Some(this_cpu),
            ctx.ncpus,
            |t| ctx.tasks[t].cpus_allowed,
            ctx.ops,
        );
        ctx.ops.remote_touches += seen;
        let Some(p) = p else {
            return PullOutcome::default();
        };
        let pprio = rt_prio(&ctx.tasks[p]);
        if next.is_some_and(|n| pprio >= n) {
            return PullOutcome::default();
        }
        // p may just have woken there and be about to preempt: leave it.
        let src_curr = curr_prio(&ctx.tasks, src.curr());
        if pprio < src_curr || next.is_some_and(|n| n < src_curr) {
            return PullOutcome::default();
        }
        let resched = self.move_task(ctx, src, this, this_cpu, p);
        PullOutcome { moved: 1, resched }
    }

    /// `push_rt_task`'s first half (`pick_next_pushable_task` + `find_lowest_rq`), after a
    /// context switch on `cpu` (`woken` = None) or a wakeup queued there (`woken` = the task):
    /// which task to push where, or that this CPU should reschedule instead.
    pub fn pick_push_target<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        rq: &mut Rq<C>,
        cpu: CpuId,
        woken: Option<TaskId>,
    ) -> PushTarget {
        if self.balance != RtBalance::PushPull || !rq.rt.overloaded {
            return PushTarget::None;
        }
        // task_wake_up_rt: push only if the woken task is queued behind a better one.
        if let Some(w) = woken {
            if rq.curr() == Some(w)
                || !ctx.tasks[w].is_rt()
                || rt_prio(&ctx.tasks[w]) < rq.rt.highest_prio
            {
                return PushTarget::None;
            }
        }
        let (next, seen) = rq.rt.next_highest(
            &ctx.tasks,
            rq.curr(),
            None,
            ctx.ncpus,
            |t| ctx.tasks[t].cpus_allowed,
            ctx.ops,
        );
        ctx.ops.remote_touches += seen;
        let Some(next) = next else {
            return PushTarget::None;
        };
        let nprio = rt_prio(&ctx.tasks[next]);
        if nprio < curr_prio(&ctx.tasks, rq.curr()) {
            return PushTarget::ReschedSelf;
        }
        let (to, reads) = self
            .rd
            .find_lowest_rq(nprio, &ctx.tasks[next].cpus_allowed, cpu, cpu);
        ctx.ops.remote_touches += reads;
        match to {
            Some(to) if to != cpu => PushTarget::Move { task: next, to },
            _ => PushTarget::None,
        }
    }

    /// `push_rt_task`'s second half (`find_lock_lowest_rq`'s re-checks, then the move), with
    /// both runqueues locked: move `t` from `src` to `dst` if it is still queued and not
    /// running on `src`, allowed on `dst`, and still better than everything on `dst`.
    pub fn push_rt_task_to<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        src: &mut Rq<C>,
        src_cpu: CpuId,
        dst: &mut Rq<C>,
        dst_cpu: CpuId,
        t: TaskId,
    ) -> bool {
        let p = &ctx.tasks[t];
        let prio = rt_prio(p);
        let still_here = p.cpu == src_cpu && p.rt.on_rq && src.curr() != Some(t);
        if !still_here
            || !p.cpus_allowed.contains(dst_cpu)
            || dst.rt.highest_prio <= prio
            || curr_prio(&ctx.tasks, dst.curr()) <= prio
        {
            return false;
        }
        self.move_task(ctx, src, dst, dst_cpu, t);
        true
    }

    /// Moves the queued RT task `t` from `src` to `dst` (both locked) and publishes both.
    /// Returns whether it beats what `dst` runs.
    pub fn move_task<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        src: &mut Rq<C>,
        dst: &mut Rq<C>,
        dst_cpu: CpuId,
        t: TaskId,
    ) -> bool {
        let resched = migrate_queued(ctx, src, dst, dst_cpu, t);
        self.publish(src);
        self.publish(dst);
        resched
    }

    /// Every RT task `rq` holds, for the audit.
    pub fn for_each_queued<C, D>(
        &self,
        rq: &Rq<C>,
        tasks: &TaskView<'_, D>,
        f: &mut dyn FnMut(TaskId),
    ) {
        // The audit's walk is not kernel work: its searches go to a scratch counter.
        let scratch = &mut OpCounter::default();
        let arr = &rq.rt.active;
        let mut idx = arr.find_first_bit(scratch);
        while idx < MAX_RT_PRIO {
            for t in arr.queue(idx).iter(tasks) {
                f(t);
            }
            idx = arr.find_next_bit(idx + 1, scratch);
        }
    }
}

/// Passive RT balancing: a class's periodic balancer moves queued RT tasks as it moves its
/// own (2.6 before 2.6.25, when they sat in its arrays), through this walk of the source's RT
/// queue, the calling balancer deciding which task may go.
impl<C, D> PassiveRt<C, D> for RtClass {
    fn pull_queued(
        &self,
        ctx: &mut Ctx<D>,
        this: &mut Rq<C>,
        this_cpu: CpuId,
        src: &mut Rq<C>,
        budget: &mut usize,
        may_move: &mut MayMove<'_, C, D>,
    ) -> PullOutcome {
        let mut out = PullOutcome::default();
        if self.balance != RtBalance::Passive || *budget == 0 {
            return out;
        }
        // Best level first (one bitmap search per level), each list from its tail; the
        // previous task is read before this one may leave.
        let mut idx = src.rt.active.find_first_bit(ctx.ops);
        while idx < MAX_RT_PRIO {
            let mut cur = src.rt.active.queue(idx).back();
            while let Some(t) = cur {
                cur = src.rt.active.queue(idx).prev(&ctx.tasks, t);
                if !may_move(ctx, src, t) {
                    continue;
                }
                out.resched |= migrate_queued(ctx, src, this, this_cpu, t);
                out.moved += 1;
                *budget -= 1;
                if *budget == 0 {
                    return out;
                }
            }
            idx = src.rt.active.find_next_bit(idx + 1, ctx.ops);
        }
        out
    }
}

/// Moves the queued RT task `t` between two locked runqueues without publishing (the passive
/// balancer's moves are published by the core once the pass is done). Returns whether `t`
/// beats what `dst` runs, i.e. whether `dst` should reschedule.
fn migrate_queued<C, D>(
    ctx: &mut Ctx<D>,
    src: &mut Rq<C>,
    dst: &mut Rq<C>,
    dst_cpu: CpuId,
    t: TaskId,
) -> bool {
    let prio = rt_prio(&ctx.tasks[t]);
    let mig = migratory(&ctx.tasks[t], ctx.ncpus);
    src.rt.dequeue(&mut ctx.tasks, t, prio, mig, ctx.ops);
    src.nr_running -= 1;
    ctx.tasks[t].cpu = dst_cpu;
    dst.nr_running += 1;
    dst.rt.enqueue(&mut ctx.tasks, t, prio, mig, ctx.ops);
    ctx.ops.remote_touches += 1;
    dst.curr().is_some() && prio < curr_prio(&ctx.tasks, dst.curr())
}

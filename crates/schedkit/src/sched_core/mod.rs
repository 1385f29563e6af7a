//! The scheduler core: what the kernel keeps in `kernel/sched/core.c`, written once for both
//! hosts.
//!
//! A host (the simulator, the runtime) owns CPUs, tasks, time and locks; a class owns its
//! queues. Between them, the core orchestrates every scheduling path the same way for both:
//!
//! - [`wake`]: `select_task_rq` (checked), `try_to_wake_up` (a wakee still current on its CPU
//!   is only set running, as `ttwu_runnable` does), `wake_up_new_task`, `activate` (enqueue →
//!   preemption check → resched → push of what the wakeup made pushable);
//! - [`schedule`]: prev leaves (sleep, exit, eviction after an affinity change), the RT pull,
//!   `put_prev` / pick across the class stack, the pick's validation, the switch, the reaping
//!   of a dead prev, the post-switch push and the re-placement of an evicted prev;
//! - [`balance`]: periodic, idle and new-idle balancing (`find_busiest` → `move_tasks`) and the
//!   RT push loop;
//! - [`tick`]: `scheduler_tick` (the class's tick, then the balancer when it is due);
//! - [`attr`]: fork, exit (`task_dead` under [`task_rq_lock`]), yield and attribute changes.
//!
//! The core is generic over the class ([`SchedClass`]) and over a small [`Host`] trait: lock
//! one or two runqueues, read the published state of other CPUs, reschedule a CPU, and a few
//! callbacks (the runtime's park/wake handshake, the switch's accounting, reaping). Time and
//! costs are the host's: the simulator's lock sections advance its own clock, the runtime's
//! read the TSC. The core never sees a price.
//!
//! [`Sched`] is the class stack the core walks: the RT class (`policy::rt`) in front of the
//! policy's class, as `rt_sched_class` precedes `fair_sched_class`, unless the class keeps RT
//! tasks itself ([`SchedClass::OWNS_RT`]).
//!
//! Every policy output is checked here, once, and a violation is a [`CoreError`]: a CPU outside
//! the machine or the task's affinity, a pick of a task that is not runnable here.

pub mod attr;
pub mod balance;
pub mod deadline;
pub mod schedule;
pub mod tick;
pub mod wake;

use crate::class::*;
use crate::ds::dl_rq::DlServerParams;
use crate::ds::work::Work;
use crate::policy::deadline::{server, DlClass};
use crate::policy::rt::RtClass;
use crate::task::{CpuId, CpuMask, Task, TaskId, TaskView};

pub use schedule::{Leave, Switch};

/// A policy output the core refused, or an impossible request. Boxed, so that the `Result`s
/// of the hot paths stay a word wide.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CoreError(pub Box<String>);

impl CoreError {
    pub fn new(what: impl Into<String>) -> CoreError {
        CoreError(Box::new(what.into()))
    }
    pub fn what(&self) -> &str {
        &self.0
    }
}

/// Events the core reports to the host's statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreEvent {
    /// An RT task was pushed to another runqueue.
    RtPush,
    /// RT tasks were pulled from another runqueue.
    RtPull(usize),
    /// A deadline task was pushed to another runqueue.
    DlPush,
    /// A deadline task was pulled from another runqueue.
    DlPull,
}

/// What a host found of a task it was asked to wake ([`Host::claim_wakee`]), the first step of
/// [`wake::try_to_wake_up`]: the kernel's `ttwu_state_match`, then its `p->on_rq` test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wakee {
    /// Asleep, switched out and on no runqueue: the waker owns it, and the core places it.
    Asleep,
    /// It asked to block but has not switched out yet, so it never left its runqueue: the host
    /// has set it running again where it is, and the wakeup is complete (the kernel's
    /// `ttwu_runnable`; 2.6's "`p->array` still set: only mark it running").
    StillCurrent,
    /// Its CPU is taking it off its runqueue now and queues it again itself (the runtime's
    /// deferred wakeup, [`Host::finish_block`] false): nothing more to do here.
    Leaving,
    /// Not asleep (already woken, or gone): nothing to do.
    NotAsleep,
}

/// The task data of a host's class.
pub type TaskData<H> = <<H as Host>::Class as SchedClass>::TaskData;
/// The class part of a host's runqueues.
pub type ClassRq<H> = <<H as Host>::Class as SchedClass>::Rq;

/// What the core needs of a host (the kernel's arch and platform layer, plus the runqueues).
///
/// Sections: `lock_rq` and friends run `f` with the runqueue lock(s) of the named CPU(s)
/// held, give it the host's clock through `Ctx::now`, and publish the runqueue's
/// `nr_running` for lock-free readers when the section ends. The simulator also prices the
/// work the section reported and moves its clock past it.
pub trait Host {
    type Class: SchedClass;
    /// What a section may consult of the host under the lock (the runtime's park/wake
    /// handshake states), passed to the associated functions below.
    type Inside: ?Sized;

    fn sched(&self) -> &Sched<Self::Class>;
    fn ncpus(&self) -> usize;
    /// Timer interrupts per second.
    fn hz(&self) -> u32;

    fn lock_rq<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(
            &Sched<Self::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &Self::Inside,
        ) -> R,
    ) -> R;
    /// A section that also reads the other CPUs (the balancer's `find_busiest`).
    fn lock_rq_viewing<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(
            &Sched<Self::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &CpuView,
        ) -> R,
    ) -> R;
    /// `double_rq_lock` of two CPUs in different lock domains, run by `caller`; `f` gets the
    /// runqueue of `a` first.
    fn lock_two_rqs<R>(
        &mut self,
        caller: CpuId,
        a: CpuId,
        b: CpuId,
        f: impl FnOnce(
            &Sched<Self::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &mut Rq<ClassRq<Self>>,
        ) -> R,
    ) -> R;
    /// Lock-free reads of the machine and of task `t` (owned by the caller: it is on no
    /// runqueue), for `select_task_rq`.
    fn select_view<R>(
        &mut self,
        f: impl FnOnce(&Sched<Self::Class>, &TaskView<'_, TaskData<Self>>, &CpuView, &mut Work<'_>) -> R,
    ) -> R;
    /// The affinity of a task the caller owns.
    fn task_allowed(&self, t: TaskId) -> CpuMask;
    /// `task_cpu(p)`, read without a lock (re-checked under it by [`task_rq_lock`]).
    fn task_cpu(&self, t: TaskId) -> CpuId;
    /// The runnable count `cpu`'s runqueue last published.
    fn published_nr_running(&self, cpu: CpuId) -> usize;
    /// `try_to_wake_up`'s first question, answered the host's own way (the simulator reads
    /// its CPUs' `curr`; the runtime runs its park/wake handshake): is `t`, woken from
    /// `waker_cpu`, asleep for the core to place, or still current on its CPU? A host that
    /// answers [`Wakee::StillCurrent`] has set `t` running again (with whatever that costs
    /// it); one that answers [`Wakee::Asleep`] hands `t` to the caller.
    fn claim_wakee(&mut self, t: TaskId, waker_cpu: Option<CpuId>) -> Wakee;

    /// `resched_curr`: mark `cpu` for rescheduling and make it notice (an IPI, a signal, an
    /// unpark); `from` is the CPU asking, if it is one.
    fn resched(&mut self, cpu: CpuId, from: Option<CpuId>);
    /// Set `need_resched` of `cpu`, which is the CPU running this path.
    fn set_need_resched(&mut self, cpu: CpuId);
    /// `busy`'s runqueue holds a runnable task besides the running one: a host whose idle
    /// CPUs take no ticks wakes one to balance (NO_HZ's idle-balancer kick). `at_tick`: said
    /// by `busy`'s tick, where NO_HZ kernels kick (`nohz_balancer_kick` from
    /// `trigger_load_balance`); otherwise by the enqueue or pick that made it so, which only
    /// matters to a host whose busy CPU takes no tick either.
    fn kick_idle_balancer(&mut self, _busy: CpuId, _at_tick: bool) {}
    /// `t` was queued by a wakeup, fork or migration (`kind`).
    fn task_queued(&mut self, _t: TaskId, _kind: EnqueueKind) {}
    /// The pick on `cpu` completed (`next` may equal `prev`): the host's switch accounting.
    fn switched(
        &mut self,
        cpu: CpuId,
        prev: Option<TaskId>,
        next: Option<TaskId>,
    ) -> Result<(), CoreError>;
    /// The parent of the dead task `x`, if it is alive to be told.
    fn live_parent(&self, x: TaskId) -> Option<TaskId>;
    /// The dead task `x` has switched out for good and the class has been told: the host
    /// releases it (and tells its parent).
    fn release_task(
        &mut self,
        cpu: CpuId,
        x: TaskId,
        parent: Option<TaskId>,
    ) -> Result<(), CoreError>;
    fn count(&mut self, _ev: CoreEvent) {}

    /// Under the lock, for prev asking to block ([`Leave::MaybeSleep`]): true if it must now
    /// be dequeued (no wakeup got there first).
    fn commit_block(_inside: &Self::Inside, _t: TaskId) -> bool {
        true
    }
    /// Under the lock, after dequeuing such a prev: true if it is asleep; false if a wakeup
    /// arrived meanwhile and the core must queue it again.
    fn finish_block(_inside: &Self::Inside, _t: TaskId) -> bool {
        true
    }
    /// Under the lock, for prev just dequeued to sleep by a class that may keep sleeping tasks
    /// queued (DELAY_DEQUEUE): whether it did (`kept`). A host that cannot read its tasks'
    /// class state without the lock (the runtime) remembers it where a waker can read it
    /// (before the handshake hands the task to wakers) and answers
    /// [`may_be_queued`](Self::may_be_queued) from it; one that can (the simulator, one
    /// thread) reads the class's own state instead ([`Sched::queued_asleep`]).
    fn blocked_queued(_inside: &Self::Inside, _t: TaskId, _kept: bool) {}
    /// `try_to_wake_up`'s lock-free `READ_ONCE(p->on_rq)` before `ttwu_runnable` (fair.c's
    /// DELAY_DEQUEUE, 6.12+; `kernel/sched/core.c`): whether `t`, just claimed asleep
    /// ([`Wakee::Asleep`]), may still be queued by its class. `false` lets the wakeup skip
    /// the lock of its runqueue, where the class would find nothing to requeue, as the kernel
    /// skips `ttwu_runnable` for a task dequeued to sleep (`p->on_rq == 0`). `true` is always
    /// safe (the class finds nothing and the wakeup goes on) but takes, and the simulator
    /// prices, a lock section the kernel does not: the simulator answers
    /// [`Sched::queued_asleep`], which follows `p->on_rq` through the delayed task's final
    /// dequeue at a pick; the runtime answers what [`blocked_queued`](Self::blocked_queued)
    /// last told it (still `true` after such a dequeue: a lock taken for nothing). The default
    /// always looks under the lock.
    fn may_be_queued(&self, _t: TaskId) -> bool {
        true
    }
    /// Under the lock, prev stops running on `cpu` at `now` (the host's run-time accounting).
    fn prev_stopped(
        _inside: &Self::Inside,
        _cpu: CpuId,
        _task: &mut Task<TaskData<Self>>,
        _now: u64,
    ) {
    }
    /// Under the lock, `cpu` now runs `next` (`switched`: it changed) — for hosts that
    /// publish the current task lock-free.
    fn publish_curr(
        _inside: &Self::Inside,
        _cpu: CpuId,
        _next: Option<TaskId>,
        _switched: bool,
        _now: u64,
    ) {
    }
}

/// The class stack a host runs: the deadline class, then the RT class, in front of the
/// policy's class (unless the class owns its RT tasks), as `dl_sched_class` precedes
/// `rt_sched_class`. The core routes each task's hooks to its class and walks the classes in
/// order for pick.
pub struct Sched<C: SchedClass> {
    pub class: C,
    pub rt: RtClass,
    /// The deadline class (`SCHED_DEADLINE`, `policy::deadline`); it costs nothing until a
    /// deadline task is admitted.
    pub dl: DlClass,
    /// Each CPU's fair server (`policy::deadline::server`), where the class's era has one
    /// ([`SchedClass::fair_server`]); its state lives in each runqueue's `dl.server`.
    pub fair_server: Option<DlServerParams>,
}

impl<C: SchedClass> Sched<C> {
    pub fn new(class: C, rt_balance: RtBalance, ncpus: usize) -> Sched<C> {
        let rt_balance = if C::OWNS_RT {
            RtBalance::Passive
        } else {
            rt_balance
        };
        let dl = DlClass::new(ncpus);
        // sched_init_dl_servers → dl_server_apply_params(init): each CPU's server reserves
        // its bandwidth in the root domain. Only for the stacked classes over per-CPU
        // runqueues (the server is a per-runqueue entity of the deadline class).
        let fair_server = class
            .fair_server()
            .filter(|p| !C::OWNS_RT && p.runtime_ns > 0)
            .filter(|_| class.lock_layout() == LockLayout::PerCpu)
            .filter(|p| dl.reserve_servers(p.bw()));
        Sched {
            class,
            rt: RtClass::new(rt_balance, ncpus),
            dl,
            fair_server,
        }
    }

    #[inline]
    pub fn name(&self) -> &'static str {
        self.class.name()
    }

    /// The class's name with its options (`bfs:sticky=off`).
    pub fn label(&self) -> String {
        self.class.label()
    }

    /// Where the class's kernel keeps the task fields the host's paths touch, if it says.
    #[inline]
    pub fn task_struct_layout(&self) -> Option<&'static TaskStructLayout> {
        self.class.task_struct_layout()
    }

    /// Tells the class that `cpu`'s governor throttled it (or stopped): `cpu_scaling`.
    #[inline]
    pub fn cpu_scaling(&self, cpu: CpuId, scaling: bool) {
        self.class.cpu_scaling(cpu, scaling);
    }

    /// Whether this stack can schedule tasks of `policy` (the RT class takes FIFO/RR; only
    /// classes with [`SchedClass::HAS_SCHED_IDLE`] take `SCHED_IDLE`). The error says why.
    pub fn check_policy(&self, policy: crate::task::SchedPolicy) -> Result<(), String> {
        if policy == crate::task::SchedPolicy::Deadline
            && (C::OWNS_RT || self.layout() != LockLayout::PerCpu)
        {
            return Err(format!(
                "policy deadline (SCHED_DEADLINE, Linux 3.14) needs the stacked classes over \
                 per-CPU runqueues, which the design '{}' does not have; use eevdf or cfs",
                self.name()
            ));
        }
        if policy == crate::task::SchedPolicy::Iso && !C::HAS_SCHED_ISO {
            return Err(format!(
                "policy iso (SCHED_ISO, Con Kolivas' BFS) is not part of the design '{}' models; bfs has it",
                self.name()
            ));
        }
        if policy == crate::task::SchedPolicy::Idle && !C::HAS_SCHED_IDLE {
            return Err(format!(
                "policy idle (SCHED_IDLE, Linux 2.6.23) is not part of the design '{}' models; the fair classes (cfs, eevdf) have it",
                self.name()
            ));
        }
        Ok(())
    }

    #[inline]
    pub fn layout(&self) -> LockLayout {
        self.class.lock_layout()
    }

    /// Whether the stacked RT class is in use (and balances with push/pull).
    #[inline]
    pub fn rt_stacked(&self) -> bool {
        !C::OWNS_RT
    }

    #[inline]
    pub fn push_pull(&self) -> bool {
        !C::OWNS_RT && self.rt.balance == RtBalance::PushPull
    }

    /// Builds the runqueue of lock domain `domain` on a machine of `ncpus` CPUs.
    pub fn new_rq(&self, domain: usize, topology: &crate::machine::Topology) -> Rq<C::Rq> {
        let ncpus = topology.ncpus;
        let covered = match self.layout() {
            LockLayout::Global => ncpus,
            LockLayout::PerCpu => 1,
        };
        let mut rq = Rq::new(domain, covered, self.class.new_rq(domain, topology));
        // sched_init_dl_servers, at boot (time 0).
        server::init(&mut rq.dl.server, self.fair_server, 0);
        rq
    }

    // ----- the fair server (`policy::deadline::server`), for the class's normal tasks -----

    /// `update_curr` → `dl_server_update`: the running normal task's time since it was last
    /// charged goes to this runqueue's server. Returns whether the server was throttled off
    /// the runqueue (the CPU reschedules).
    #[inline]
    fn server_charge(&self, now: u64, rq: &mut Rq<C::Rq>) -> bool {
        let srv = &mut rq.dl.server;
        if srv.params.is_none() {
            return false;
        }
        let delta = now.saturating_sub(srv.exec_start);
        srv.exec_start = now;
        let throttled = server::update(srv, now, delta);
        if throttled {
            self.dl.publish(rq);
        }
        throttled
    }

    /// Whether a queued server beats what `cpu` runs (`!dl_task(curr) || dl_entity_preempt`),
    /// not counting a task it already serves.
    #[inline]
    fn server_beats_curr(&self, ctx: &Ctx<C::TaskData>, rq: &Rq<C::Rq>, cpu: CpuId) -> bool {
        let srv = &rq.dl.server;
        if !srv.queued {
            return false;
        }
        match rq.curr_on(cpu) {
            None => true,
            Some(c) if self.in_dl(&ctx.tasks[c]) => {
                let d = ctx.tasks[c].dl();
                d.throttled || (srv.deadline.wrapping_sub(d.deadline) as i64) < 0
            }
            Some(_) => !srv.serving,
        }
    }

    /// The server's timer, if due at `now` (`dl_server_timer`): whether it queued the server
    /// ahead of what `cpu` runs.
    #[inline]
    fn server_timer(&self, ctx: &Ctx<C::TaskData>, rq: &mut Rq<C::Rq>, cpu: CpuId) -> bool {
        if rq.dl.server.timer.is_none() || !server::timer_due(&mut rq.dl.server, ctx.now) {
            return false;
        }
        self.dl.publish(rq);
        self.server_beats_curr(ctx, rq, cpu)
    }

    /// Whether the task running on `rq` was picked through its fair server (it runs as the
    /// deadline class's: RT tasks do not pass it).
    #[inline]
    pub fn served(&self, rq: &Rq<C::Rq>, t: TaskId) -> bool {
        rq.dl.server.serving && rq.curr() == Some(t)
    }

    /// Does `t` belong to the stacked RT class (by its policy now)?
    #[inline]
    pub(crate) fn in_rt<D>(&self, t: &Task<D>) -> bool {
        !C::OWNS_RT && t.is_rt()
    }

    /// Does `t` belong to the deadline class (by its policy now)?
    #[inline]
    pub(crate) fn in_dl<D>(&self, t: &Task<D>) -> bool {
        !C::OWNS_RT && t.is_dl()
    }

    /// Does `t` belong to one of the classes stacked in front of the policy's?
    #[inline]
    pub(crate) fn in_stacked<D>(&self, t: &Task<D>) -> bool {
        self.in_rt(t) || self.in_dl(t)
    }

    /// The rank of `t`'s class in the stack: deadline 2, RT 1, the policy's class 0.
    #[inline]
    fn class_rank<D>(&self, t: &Task<D>) -> u8 {
        if self.in_dl(t) {
            2
        } else if self.in_rt(t) {
            1
        } else {
            0
        }
    }

    /// After a class changed what `rq` holds: the RT class's lock-free state follows.
    #[inline]
    pub(crate) fn publish(&self, rq: &mut Rq<C::Rq>) {
        if !C::OWNS_RT {
            self.rt.publish(rq);
        }
    }

    #[inline]
    fn rr_slice(&self, ctx: &Ctx<C::TaskData>, t: TaskId) -> i64 {
        self.class.rr_timeslice_ticks(&ctx.tasks[t], ctx.hz)
    }

    // ----- the class hooks, routed (`enqueue_task`, `dequeue_task`, ... of core.c) -----

    #[inline]
    pub fn enqueue(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    ) {
        lockdep::assert_task_rq(self.layout(), rq, &ctx.tasks, t);
        if self.in_dl(&ctx.tasks[t]) {
            self.dl.enqueue(ctx, rq, t, kind);
            self.publish(rq);
        } else if self.in_rt(&ctx.tasks[t]) {
            let slice = self.rr_slice(ctx, t);
            self.rt.enqueue(ctx, rq, t, kind, slice);
        } else {
            let was_empty = rq.nr_running == 0;
            self.class.enqueue(ctx, rq, cpu, t, kind);
            self.publish(rq);
            if rq.dl.server.params.is_some() {
                // enqueue_task_fair: an empty runqueue's idle time counts for a deferring
                // server (dl_server_update_idle_time), then dl_server_start.
                let now = ctx.now;
                let srv = &mut rq.dl.server;
                if was_empty {
                    server::idle_timers(srv, now);
                    if let Some(since) = srv.idle_since.replace(now) {
                        server::update_idle(srv, now, since);
                    }
                }
                if server::start(srv, now) {
                    self.dl.publish(rq);
                }
            }
        }
    }

    #[inline]
    pub fn dequeue(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
        t: TaskId,
        kind: DequeueKind,
    ) {
        lockdep::assert_task_rq(self.layout(), rq, &ctx.tasks, t);
        // By where the task is queued: its policy may just have changed (dequeue SAVE).
        if !C::OWNS_RT && ctx.tasks[t].dl().on_rq {
            self.dl.dequeue(ctx, rq, t, kind);
            self.publish(rq);
        } else if !C::OWNS_RT && ctx.tasks[t].rt.on_rq {
            self.rt.dequeue(ctx, rq, t, kind);
        } else {
            self.class.dequeue(ctx, rq, cpu, t, kind);
            self.publish(rq);
        }
    }

    #[inline]
    pub fn put_prev(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
        prev: TaskId,
    ) {
        if self.in_dl(&ctx.tasks[prev]) {
            if self.dl.put_prev(ctx, rq, prev) {
                self.publish(rq);
            }
        } else if self.in_rt(&ctx.tasks[prev]) {
            self.rt.put_prev(ctx, prev);
        } else {
            self.server_charge(ctx.now, rq);
            self.class.put_prev(ctx, rq, cpu, prev);
        }
    }

    /// `pick_next_task`: the classes in order, the first that has a task wins.
    #[inline]
    pub fn pick_next(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
    ) -> Option<TaskId> {
        if rq.dl.server.params.is_some() {
            return self.pick_next_served(ctx, rq, cpu);
        }
        self.pick_stacked(ctx, rq, cpu)
    }

    /// The stacked classes' picks in order (deadline, RT, then the policy's class), with no
    /// fair server in front of them.
    #[inline]
    fn pick_stacked(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
    ) -> Option<TaskId> {
        if !C::OWNS_RT {
            if rq.dl.nr_running() > 0 {
                if let Some(t) = self.dl.pick(ctx, rq) {
                    return Some(t);
                }
            }
            if let Some(t) = self.rt.pick(ctx, rq, cpu) {
                return Some(t);
            }
        }
        self.class.pick_next(ctx, rq, cpu)
    }

    /// `pick_next_task` with a fair server: the deadline class's pick (`__pick_task_dl`) is
    /// the earlier of the leftmost task and the queued server; the server's pick is the fair
    /// class's (`fair_server_pick_task`), and if that finds nothing the server stops
    /// (`dl_server_stop`) and the pick goes on. A timer due since the last tick fires first;
    /// idle time ends here (`put_prev_task_idle` → `dl_server_update_idle_time`).
    fn pick_next_served(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
    ) -> Option<TaskId> {
        let now = ctx.now;
        server::idle_timers(&mut rq.dl.server, now);
        if rq.dl.server.timer.is_some() && server::timer_due(&mut rq.dl.server, now) {
            self.dl.publish(rq);
        }
        rq.dl.server.serving = false;
        let srv_first = {
            let srv = &rq.dl.server;
            srv.queued
                && rq
                    .dl
                    .leftmost()
                    .is_none_or(|(d, _)| (srv.deadline.wrapping_sub(d) as i64) < 0)
        };
        let next = if srv_first {
            ctx.ops.tree_steps += 1;
            match self.class.pick_next(ctx, rq, cpu) {
                Some(t) => {
                    rq.dl.server.serving = true;
                    Some(t)
                }
                None => {
                    server::stop(&mut rq.dl.server);
                    self.dl.publish(rq);
                    None
                }
            }
        } else {
            None
        };
        // The server is set up only for a class that stacks on the RT class (`!C::OWNS_RT`).
        let next = next.or_else(|| self.pick_stacked(ctx, rq, cpu));
        let srv = &mut rq.dl.server;
        match next {
            None => {
                srv.idle_since.get_or_insert(now);
            }
            Some(t) => {
                if let Some(since) = srv.idle_since.take() {
                    server::update_idle(srv, now, since);
                }
                if !self.in_stacked(&ctx.tasks[t]) {
                    // set_next_entity: the normal task's run is timed from now.
                    srv.exec_start = now;
                }
            }
        }
        next
    }

    /// The class's guess of its next pick on `rq` (`SchedClass::next_in_line`); the RT class
    /// is not asked, as its runnable tasks are few.
    #[inline]
    pub fn next_in_line(&self, rq: &Rq<C::Rq>) -> Option<TaskId> {
        self.class.next_in_line(rq)
    }

    #[inline]
    pub fn task_tick(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        let mut server = false;
        if rq.dl.server.params.is_some() {
            // The normal task's run is charged (update_curr), then the server's timer fires
            // if due (at the tick: see policy::deadline::server), and a queued server that
            // some path queued without a reschedule (a migration's enqueue) is noticed.
            if !self.in_stacked(&ctx.tasks[curr]) {
                server |= self.server_charge(ctx.now, rq);
            }
            server |= self.server_timer(ctx, rq, cpu);
            server |= self.server_beats_curr(ctx, rq, cpu);
        }
        let r = if self.in_dl(&ctx.tasks[curr]) {
            let r = self.dl.task_tick(ctx, rq, curr);
            self.publish(rq);
            r
        } else if self.in_rt(&ctx.tasks[curr]) {
            let slice = self.rr_slice(ctx, curr);
            self.rt.task_tick(ctx, rq, curr, slice)
        } else {
            self.class.task_tick(ctx, rq, cpu, curr)
        };
        r || server
    }

    /// `SchedClass::push_running` for a fair task (never for an RT task).
    #[inline]
    pub fn push_running(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        !self.in_rt(&ctx.tasks[curr]) && self.class.push_running(ctx, rq, cpu, curr)
    }

    #[inline]
    pub fn yield_task(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        if self.in_dl(&ctx.tasks[curr]) {
            // yield_task_dl's skip to the next period is not modelled: it only reschedules.
            true
        } else if self.in_rt(&ctx.tasks[curr]) {
            self.rt.yield_task(ctx, rq, curr)
        } else {
            self.class.yield_task(ctx, rq, cpu, curr)
        }
    }

    /// `check_preempt_curr`: a task of a higher class always preempts a lower one; within a
    /// class, the class decides.
    #[inline]
    pub fn check_preempt(
        &self,
        ctx: &mut Ctx<C::TaskData>,
        rq: &mut Rq<C::Rq>,
        cpu: CpuId,
        woken: TaskId,
        sync: bool,
    ) -> bool {
        let Some(curr) = rq.curr_on(cpu) else {
            return false;
        };
        let (w, c) = (
            self.class_rank(&ctx.tasks[woken]),
            self.class_rank(&ctx.tasks[curr]),
        );
        // A normal task whose enqueue queued the fair server (dl_server_start's
        // resched_curr); a task served by it is the deadline class's to a waking RT task,
        // which only reschedules for the pick to find the server again (as wakeup_preempt
        // sees the served task's fair class).
        if w == 0 && c > 0 && self.server_beats_curr(ctx, rq, cpu) {
            return true;
        }
        match (w, c) {
            (w, c) if w > c => true,
            (w, c) if w < c => false,
            (2, _) => self.dl.check_preempt(ctx, curr, woken),
            (1, _) => self.rt.check_preempt(ctx, curr, woken),
            _ => self.class.check_preempt_wakeup(ctx, rq, cpu, woken, sync),
        }
    }

    /// The rule the class stack picks `task` by (`schedkit diff`): the RT class's for a task
    /// it holds, else the policy's class's [`SchedClass::pick_rule`].
    pub fn pick_rule<D>(&self, task: &Task<D>) -> &'static str {
        if self.in_dl(task) {
            "the deadline class: the earliest absolute deadline queued (deadline.c \
             pick_next_dl_entity, the leftmost of the dl_rq); it goes before every other class"
        } else if self.in_rt(task) {
            "the RT class: the highest RT priority queued, first in first out within it (2.6.25 \
             sched_rt.c pick_next_rt_entity); it goes before every other class"
        } else {
            self.class.pick_rule()
        }
    }

    /// What the class holding `task` says of it ([`SchedClass::describe_task`]; for an RT
    /// task under the stacked RT class, its kernel `prio`).
    pub fn describe_task(&self, rq: &Rq<C::Rq>, task: &Task<C::TaskData>) -> String {
        if self.in_dl(task) {
            format!(
                "deadline {} ns, runtime left {} ns{}",
                task.dl().deadline,
                task.dl().runtime,
                if task.dl().throttled {
                    ", throttled"
                } else {
                    ""
                }
            )
        } else if self.in_rt(task) {
            format!("rt prio {}", 99 - task.rt_priority as i32)
        } else {
            self.class.describe_task(rq, task)
        }
    }

    pub fn for_each_queued(
        &self,
        rq: &Rq<C::Rq>,
        tasks: &TaskView<'_, C::TaskData>,
        f: &mut dyn FnMut(TaskId),
    ) {
        if !C::OWNS_RT {
            for (_, t) in rq.dl.iter() {
                f(t);
            }
            for &(_, t) in &rq.dl.throttled {
                f(t);
            }
            self.rt.for_each_queued(rq, tasks, f);
        }
        self.class.for_each_queued(rq, tasks, f);
    }

    /// [`SchedClass::drain_before_newidle`]: the class's sleepers still queued on a CPU
    /// that runs dry leave before its new-idle balance.
    #[inline]
    pub fn drain_before_newidle(&self, ctx: &mut Ctx<C::TaskData>, rq: &mut Rq<C::Rq>, cpu: CpuId) {
        self.class.drain_before_newidle(ctx, rq, cpu);
    }

    #[inline]
    pub fn nr_running(&self, rq: &Rq<C::Rq>, cpu: CpuId) -> usize {
        self.class.nr_running(rq, cpu)
    }

    #[inline]
    pub fn sched_idle_cpu(&self, rq: &Rq<C::Rq>, cpu: CpuId) -> bool {
        self.class.sched_idle_cpu(rq, cpu)
    }

    #[inline]
    pub fn nr_delayed(&self, rq: &Rq<C::Rq>, cpu: CpuId) -> usize {
        self.class.nr_delayed(rq, cpu)
    }

    /// `p->on_rq` of the sleeping `t`: whether its class still holds it queued (delayed). A
    /// task of a stacked class never is (a delayed task's class change finishes its dequeue).
    #[inline]
    pub fn queued_asleep(&self, t: &Task<C::TaskData>) -> bool {
        !self.in_stacked(t) && self.class.queued_asleep(t)
    }

    /// The weighted load a balancer compares: the class's, plus an RT task's weight for
    /// each queued RT task (2.6.23's `2 * 88761`).
    #[inline]
    pub fn load(&self, rq: &Rq<C::Rq>, cpu: CpuId) -> u64 {
        // Deadline tasks count as RT ones do (throttled ones included: they stay in
        // nr_running here).
        let stacked =
            rq.rt.rt_nr_running as u64 + (rq.dl.nr_running() + rq.dl.throttled.len()) as u64;
        let rt = if C::OWNS_RT { 0 } else { stacked * 2 * 88761 };
        let own = if C::OWNS_RT {
            self.class.load(rq, cpu)
        } else {
            // The class's own tasks only: nr_running counts the RT ones too.
            self.class.load(rq, cpu).saturating_sub(stacked * 1024)
        };
        own + rt
    }
}

/// Checks of the locking rule, in the manner of the kernel's `lockdep_assert_held`, in
/// debug builds and in optimised builds with the `checks` feature: a hook may touch a task only under the lock of the runqueue the
/// task belongs to, and the core marks which lock domains the running thread holds.
pub mod lockdep {
    use super::*;

    #[cfg(any(debug_assertions, feature = "checks"))]
    thread_local! {
        static HELD: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Records that this thread now holds lock domain `d` (the core calls it on entering a
    /// section; hosts need not).
    #[inline]
    pub fn acquire(_d: usize) {
        #[cfg(any(debug_assertions, feature = "checks"))]
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            assert!(
                !h.contains(&_d),
                "lock domain {_d} taken twice (self-deadlock)"
            );
            h.push(_d);
        });
    }

    #[inline]
    pub fn release(_d: usize) {
        #[cfg(any(debug_assertions, feature = "checks"))]
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            let i = h
                .iter()
                .rposition(|&x| x == _d)
                .expect("release of a lock not held");
            h.remove(i);
        });
    }

    /// Forgets every domain this thread was marked as holding (a test fixture that stands in
    /// for the core and is replaced by the next one; the conformance checker after a class
    /// panicked inside a section).
    pub fn forget_held() {
        #[cfg(any(debug_assertions, feature = "checks"))]
        HELD.with(|h| h.borrow_mut().clear());
    }

    /// `lockdep_assert_held(&rq->lock)`.
    #[inline]
    pub fn assert_held(_d: usize) {
        #[cfg(any(debug_assertions, feature = "checks"))]
        HELD.with(|h| assert!(h.borrow().contains(&_d), "lock domain {_d} not held"));
    }

    /// The task a hook is about to touch belongs to `rq` (per-CPU layouts: `task_cpu(p)` is
    /// the runqueue's CPU), and the runqueue's lock is held.
    #[inline]
    pub fn assert_task_rq<C, D>(
        layout: LockLayout,
        rq: &Rq<C>,
        tasks: &TaskView<'_, D>,
        t: TaskId,
    ) {
        if cfg!(any(debug_assertions, feature = "checks")) {
            let t = &tasks[t];
            assert_held(layout.domain_of(rq.cpu));
            if layout == LockLayout::PerCpu {
                assert_eq!(
                    t.cpu, rq.cpu,
                    "{} touched under the lock of CPU {} but belongs to CPU {}",
                    t.id, rq.cpu, t.cpu
                );
            }
        }
    }

    /// Runs `f` marked as holding domain `d`.
    #[inline]
    pub fn held<R>(d: usize, f: impl FnOnce() -> R) -> R {
        acquire(d);
        let r = f();
        release(d);
        r
    }

    /// Runs `f` marked as holding domains `a` and `b`.
    #[inline]
    pub fn held2<R>(a: usize, b: usize, f: impl FnOnce() -> R) -> R {
        acquire(a);
        acquire(b);
        let r = f();
        release(b);
        release(a);
        r
    }
}

// ----- sections as the core takes them (lockdep-marked) -----

#[inline]
pub(crate) fn with_rq<H: Host, R>(
    h: &mut H,
    cpu: CpuId,
    f: impl FnOnce(&Sched<H::Class>, &mut Ctx<'_, TaskData<H>>, &mut Rq<ClassRq<H>>, &H::Inside) -> R,
) -> R {
    let d = h.sched().layout().domain_of(cpu);
    h.lock_rq(cpu, |s, ctx, rq, inside| {
        lockdep::held(d, || f(s, ctx, rq, inside))
    })
}

/// `task_rq_lock`: lock the runqueue `t` belongs to, re-checking under the lock that it did
/// not move meanwhile (it may, concurrently, in a real-threaded host), and run `f` there.
pub fn task_rq_lock<H: Host, R>(
    h: &mut H,
    t: TaskId,
    f: impl FnOnce(&Sched<H::Class>, &mut Ctx<'_, TaskData<H>>, &mut Rq<ClassRq<H>>) -> R,
) -> R {
    let layout = h.sched().layout();
    let mut f = Some(f);
    loop {
        let c = h.task_cpu(t);
        let r = with_rq(h, c, |s, ctx, rq, _| {
            (layout == LockLayout::Global || ctx.tasks[t].cpu == c)
                .then(|| (f.take().expect("runs once"))(s, ctx, rq))
        });
        if let Some(r) = r {
            return r;
        }
    }
}

#[inline]
pub(crate) fn with_two_rqs<H: Host, R>(
    h: &mut H,
    caller: CpuId,
    a: CpuId,
    b: CpuId,
    f: impl FnOnce(
        &Sched<H::Class>,
        &mut Ctx<'_, TaskData<H>>,
        &mut Rq<ClassRq<H>>,
        &mut Rq<ClassRq<H>>,
    ) -> R,
) -> R {
    let l = h.sched().layout();
    let (da, db) = (l.domain_of(a), l.domain_of(b));
    h.lock_two_rqs(caller, a, b, |s, ctx, ra, rb| {
        lockdep::held2(da, db, || f(s, ctx, ra, rb))
    })
}

/// A CPU a policy named, checked: on the machine and allowed for the task.
#[inline]
pub(crate) fn check_cpu(
    what: &str,
    name: &str,
    cpu: CpuId,
    ncpus: usize,
    allowed: Option<&CpuMask>,
) -> Result<CpuId, CoreError> {
    if cpu >= ncpus {
        return Err(CoreError::new(format!(
            "{name}: {what} returned CPU {cpu} on a machine of {ncpus} CPUs"
        )));
    }
    if let Some(m) = allowed {
        if !m.contains(cpu) {
            return Err(CoreError::new(format!(
                "{name}: {what} returned CPU {cpu}, outside the task's affinity {m:?}"
            )));
        }
    }
    Ok(cpu)
}

pub(crate) mod scripted;
#[cfg(test)]
pub(crate) mod tests;

//! `cfs`: the Completely Fair Scheduler of Linux 2.6.24, the first with `vruntime`
//! (designs.md §5.3; `v2.6.24:kernel/sched_fair.c`, e9acbff6484 "introduce se->vruntime"),
//! and `cfs:era=2.6.32`, the same class two years on (see "The 2.6.32 era" below).
//!
//! Per CPU, a `cfs_rq`: the runnable tasks in a red-black tree by `vruntime` (the running
//! one is taken out while it runs, as `set_next_entity` does), `min_vruntime`, and the summed
//! load weight. Mechanisms, each as 2.6.24 wrote it:
//! - `update_curr`: the running task's `vruntime += calc_delta_fair(delta_exec)` (its wall
//!   time scaled by NICE_0_LOAD / its weight, in `calc_delta_mine`'s fixed point), then
//!   `update_min_vruntime` (it only moves forward);
//! - `pick_next`: the leftmost task;
//! - tick preemption (`check_preempt_tick`): once the task has run its `sched_slice`
//!   (`period * w / W`, with `period = latency` or `latency * nr / nr_latency`) since it was
//!   picked;
//! - `place_entity`: a new task starts at `min_vruntime` plus one `vslice` (START_DEBIT), a
//!   waking sleeper at `max(its vruntime, min_vruntime - latency)` (NEW_FAIR_SLEEPERS);
//! - wakeup preemption: when `woken.vruntime + calc_delta_fair(wakeup_gran, curr) <
//!   curr.vruntime`; SCHED_BATCH wakees never preempt;
//! - fork: child_runs_first (on, 2.6.24's default) swaps the parent's and the child's
//!   vruntime when the parent's is smaller, and the parent is rescheduled;
//! - yield: `update_curr` and reschedule (`sysctl_sched_compat_yield` off);
//! - tunables: latency 20 ms, min_granularity 4 ms, nr_latency 5, wakeup_granularity
//!   10 ms, each times `1 + ilog2(ncpus)` (`sched_init_granularity`).
//!
//! Simplified, and said so:
//! - balancing: over the scheduling domains built from the topology (`sched_domains`:
//!   SMT, MC, CPU, NUMA levels with the era's intervals and `imbalance_pct`), comparing the
//!   runqueues' weighted load as it is at that moment (2.6.2x's decaying `cpu_load[]`
//!   averages and their source/target index choice are not modelled); pulls skip cache-hot
//!   tasks (run within `sysctl_sched_migration_cost`, 0.5 ms) unless idle;
//! - wakeup placement: `wake_affine` between the waker's and the previous CPU, then an idle
//!   SMT sibling (`wake_idle`), as `sched_domains::select_cpu` reduces them;
//! - a task moved to another runqueue keeps its vruntime relative to the `min_vruntime` it
//!   left (2.6.24's `set_task_cpu` renormalised against the old runqueue's current one);
//! - no group scheduling. SCHED_IDLE is what 2.6.24 made it: a weight of 2
//!   (`WEIGHT_IDLEPRIO`), no other special case.
//!
//! The 2.6.32 era (`Cfs::v2_6_32`, designs.md §5.3), what changed from 2.6.24:
//! - tunables latency 5 ms, min_granularity 1 ms, nr_latency 5, wakeup_granularity 1 ms,
//!   each times `1 + ilog2(min(ncpus, 8))`;
//! - GENTLE_FAIR_SLEEPERS (51e0304ce6e, Sep 2009): a sleeper is placed at most half a
//!   latency left of min_vruntime; NORMALIZED_SLEEPER is off; a new task is placed no
//!   earlier than its parent (`place_entity` keeps `max(se.vruntime, v)` for both cases,
//!   and `task_fork_fair` starts the child at the parent's vruntime);
//! - child_runs_first defaults to 0: fork does not swap or reschedule; the child's wakeup
//!   is judged like any other;
//! - wakeup preemption by `wakeup_preempt_entity(curr, se)`: preempt when `curr.vruntime -
//!   se.vruntime > wakeup_gran(se)`, the granularity converted to virtual time at the
//!   *wakee's* weight (so light wakees preempt less easily);
//! - SCHED_BATCH and SCHED_IDLE wakees never preempt; a SCHED_IDLE curr is always
//!   preempted by a SCHED_NORMAL wakee; SCHED_IDLE weighs 3 (`WEIGHT_IDLEPRIO`);
//! - buddies: LAST_BUDDY on (a task preempted by a wakeup is remembered as `last`, and
//!   the next pick returns the CPU to it if it is within `wakeup_gran` of the leftmost),
//!   NEXT_BUDDY off (its default); a buddy is forgotten when picked, dequeued, or when its
//!   slice runs out at the tick;
//! - not modelled: the later "missed wakeup preemption by a narrow margin" tick check
//!   (2.6.33) and WAKEUP_OVERLAP / avg_overlap (off by default).
//!
//! Must never depend on another design, the stacked RT class, a host, the core or the
//! registry (ARCHITECTURE.md); its multi-CPU part goes through `sched_domains` (the domains,
//! wakeup CPU selection and `PullBudget::drain`, the balancing loop).

use super::sched_domains::{self, IdleSiblings, PullBudget, SchedDomains};
use super::weight::{
    calc_delta_fair, calc_delta_mine, LoadWeight, IDLEPRIO_2_6_24, IDLEPRIO_LATER, NICE_0_LOAD,
};
use crate::class::*;
use crate::ds::rbtree::{before, RbEntry, RbNode, RbTree};
use crate::ds::work::Work;
use crate::machine::Topology;
use crate::task::{CpuId, SchedPolicy, Task, TaskId, TaskView};

/// Per-task state of CFS (`struct sched_entity`).
#[derive(Clone, Debug, Default)]
// `repr(C)`: the tree node and the keys the tree walk compares share the task's first line of
// policy data (see `Task`), so a walk costs one line per level.
#[repr(C)]
pub struct CfsTask {
    node: RbNode,
    pub vruntime: u64,
    /// When it last started being accounted (`exec_start`).
    pub exec_start: u64,
    /// Its run time as CFS accounts it (`sum_exec_runtime`).
    pub sum_exec: u64,
    /// `sum_exec` when it was last picked (`prev_sum_exec_runtime`).
    pub prev_sum_exec: u64,
    pub load: LoadWeight,
    pub on_rq: bool,
    /// The `min_vruntime` of the runqueue it last left, to carry its vruntime over to another.
    left_min_vruntime: u64,
    left_cpu: Option<CpuId>,
    /// Just forked: `task_new_fair` reschedules its parent.
    forked: bool,
}

/// The timeline: tasks by vruntime.
#[derive(Debug)]
pub struct ByVruntime;
impl RbEntry<CfsTask> for ByVruntime {
    type Aug = ();
    fn node(t: &Task<CfsTask>) -> &RbNode {
        &t.data.node
    }
    fn node_mut(t: &mut Task<CfsTask>) -> &mut RbNode {
        &mut t.data.node
    }
    fn key(t: &Task<CfsTask>) -> u64 {
        t.data.vruntime
    }
}

/// The CFS part of a runqueue (`struct cfs_rq`).
#[derive(Debug, Default)]
pub struct CfsRq {
    pub timeline: RbTree<ByVruntime>,
    pub min_vruntime: u64,
    pub load: LoadWeight,
    /// CFS tasks on this runqueue, the running one included.
    pub nr_running: usize,
    /// The entity running now (`cfs_rq->curr`), not in the timeline.
    pub curr: Option<TaskId>,
    /// 2.6.32's LAST_BUDDY: the task a wakeup preempted here (`cfs_rq->last`).
    pub last: Option<TaskId>,
    /// This CPU's scheduling domains and their balancing state.
    pub domains: SchedDomains,
}

/// Which kernel's CFS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CfsEra {
    V2_6_24,
    V2_6_32,
}

/// The CFS class with its era's tunables (ns).
#[derive(Clone, Debug)]
pub struct Cfs {
    pub latency: u64,
    pub min_granularity: u64,
    pub wakeup_granularity: u64,
    pub nr_latency: u64,
    pub child_runs_first: bool,
    /// `sysctl_sched_migration_cost`: a task that ran this recently is cache-hot.
    pub migration_cost: u64,
    pub era: CfsEra,
    /// SCHED_IDLE's weight in this era.
    pub idleprio: LoadWeight,
}

type T = Task<CfsTask>;

impl Cfs {
    /// 2.6.24's defaults for `ncpus` CPUs (`sched_init_granularity`: times 1 + ilog2(ncpus)).
    pub fn v2_6_24(ncpus: usize) -> Cfs {
        let factor = 1 + (usize::BITS - 1 - ncpus.max(1).leading_zeros()) as u64;
        Cfs {
            latency: 20_000_000 * factor,
            min_granularity: 4_000_000 * factor,
            wakeup_granularity: 10_000_000 * factor,
            nr_latency: 5,
            child_runs_first: true,
            migration_cost: 500_000,
            era: CfsEra::V2_6_24,
            idleprio: IDLEPRIO_2_6_24,
        }
    }

    /// 2.6.32's defaults (designs.md §5.3: times `1 + ilog2(min(ncpus, 8))`).
    pub fn v2_6_32(ncpus: usize) -> Cfs {
        let n = ncpus.clamp(1, 8);
        let factor = 1 + (usize::BITS - 1 - n.leading_zeros()) as u64;
        Cfs {
            latency: 5_000_000 * factor,
            min_granularity: 1_000_000 * factor,
            wakeup_granularity: 1_000_000 * factor,
            nr_latency: 5,
            child_runs_first: false,
            migration_cost: 500_000,
            era: CfsEra::V2_6_32,
            idleprio: IDLEPRIO_LATER,
        }
    }

    /// 2.6.32's `wakeup_preempt_entity(curr, se)`: -1 if `se` is not left of `curr`, 1 if
    /// it leads by more than `wakeup_gran(se)` (the wakeup granularity in `se`'s virtual
    /// time), 0 in between.
    pub fn wakeup_preempt_entity(&self, curr: &CfsTask, se: &CfsTask) -> i32 {
        let vdiff = curr.vruntime.wrapping_sub(se.vruntime) as i64;
        if vdiff <= 0 {
            return -1;
        }
        let mut load = se.load;
        let gran = calc_delta_fair(self.wakeup_granularity, &mut load);
        if vdiff > gran as i64 {
            1
        } else {
            0
        }
    }

    /// `clear_buddies(cfs_rq, se)`.
    fn clear_buddies(rq: &mut CfsRq, t: TaskId) {
        if rq.last == Some(t) {
            rq.last = None;
        }
    }

    /// `__sched_period(nr_running)`.
    pub fn period(&self, nr_running: u64) -> u64 {
        if nr_running > self.nr_latency {
            self.latency * nr_running / self.nr_latency
        } else {
            self.latency
        }
    }

    /// `sched_slice(cfs_rq, se)`: the wall time `se` may run in one period.
    pub fn sched_slice(&self, rq: &mut CfsRq, weight: u64) -> u64 {
        let period = self.period(rq.nr_running as u64);
        calc_delta_mine(period, weight, &mut rq.load)
    }

    /// `sched_vslice_add(cfs_rq, se)`: the virtual slice of a task about to join `rq`.
    pub fn vslice_add(&self, rq: &CfsRq, weight: u64) -> u64 {
        let nr = rq.nr_running as u64 + 1;
        let mut lw = LoadWeight::new(rq.load.weight + weight);
        calc_delta_mine(self.period(nr), NICE_0_LOAD, &mut lw)
    }

    /// `update_curr`: charge the running task for the time since `exec_start`.
    fn update_curr(&self, ctx: &mut Ctx<CfsTask>, rq: &mut CfsRq) {
        let Some(c) = rq.curr else { return };
        let now = ctx.now;
        let se = &mut ctx.tasks[c].data;
        let delta = now.saturating_sub(se.exec_start);
        if delta > 0 {
            se.sum_exec += delta;
            se.vruntime = se
                .vruntime
                .wrapping_add(calc_delta_fair(delta, &mut se.load));
            se.exec_start = now;
        }
        Self::update_min_vruntime(ctx, rq);
    }

    /// `update_min_vruntime`: the smaller of curr's and the leftmost's, never backwards.
    fn update_min_vruntime(ctx: &Ctx<CfsTask>, rq: &mut CfsRq) {
        let mut v = rq.min_vruntime;
        if let Some(c) = rq.curr {
            v = ctx.tasks[c].data.vruntime;
        }
        if let Some(l) = rq.timeline.first() {
            let lv = ctx.tasks[l].data.vruntime;
            v = if rq.curr.is_none() || before(lv, v) {
                lv
            } else {
                v
            };
        }
        if before(rq.min_vruntime, v) {
            rq.min_vruntime = v;
        }
    }

    /// `place_entity`.
    fn place_entity(&self, rq: &CfsRq, se: &mut CfsTask, initial: bool) {
        let mut v = rq.min_vruntime;
        if self.era == CfsEra::V2_6_32 {
            if initial {
                // START_DEBIT.
                v = v.wrapping_add(self.vslice_add(rq, se.load.weight));
            } else {
                // FAIR_SLEEPERS with GENTLE_FAIR_SLEEPERS: half a latency of credit.
                v = v.wrapping_sub(self.latency / 2);
            }
            // "ensure we never gain time by being placed backwards".
            if before(se.vruntime, v) {
                se.vruntime = v;
            }
            return;
        }
        if initial {
            // START_DEBIT: a new task waits one virtual slice before it gets the CPU.
            v = v.wrapping_add(self.vslice_add(rq, se.load.weight));
            se.vruntime = v;
        } else {
            // NEW_FAIR_SLEEPERS: a sleeper may lead by up to one latency, never more, and
            // sleeping never moves it back.
            v = v.wrapping_sub(self.latency);
            if before(se.vruntime, v) {
                se.vruntime = v;
            }
        }
    }

    /// Moves a queued task's vruntime from one runqueue's frame to another's.
    fn renormalize(se: &mut CfsTask, from_min: u64, to_min: u64) {
        se.vruntime = se.vruntime.wrapping_sub(from_min).wrapping_add(to_min);
    }

    fn enqueue_entity(ctx: &mut Ctx<CfsTask>, rq: &mut Rq<CfsRq>, t: TaskId) {
        let w = ctx.tasks[t].data.load.weight;
        if rq.class.curr != Some(t) {
            rq.class.timeline.insert(&mut ctx.tasks, t, ctx.ops);
        }
        ctx.tasks[t].data.on_rq = true;
        rq.class.load.add(w);
        rq.class.nr_running += 1;
        rq.nr_running += 1;
    }

    fn dequeue_entity(ctx: &mut Ctx<CfsTask>, rq: &mut Rq<CfsRq>, t: TaskId) {
        let w = ctx.tasks[t].data.load.weight;
        if rq.class.curr != Some(t) {
            rq.class.timeline.remove(&mut ctx.tasks, t, ctx.ops);
        }
        let cpu = rq.cpu;
        let se = &mut ctx.tasks[t].data;
        se.on_rq = false;
        se.left_min_vruntime = rq.class.min_vruntime;
        se.left_cpu = Some(cpu);
        rq.class.load.sub(w);
        rq.class.nr_running -= 1;
        rq.nr_running -= 1;
    }

    /// `task_hot`: it ran on its runqueue within the migration cost.
    fn task_hot(&self, p: &T, now: u64) -> bool {
        now.saturating_sub(p.data.exec_start) < self.migration_cost
    }
}

impl SchedClass for Cfs {
    type Rq = CfsRq;
    type TaskData = CfsTask;

    /// `yield_task_fair` without `sched_compat_yield` accounts the yielder and lets
    /// schedule() pick the leftmost task, which may be the yielder itself.
    const YIELD_GIVES_WAY: bool = false;

    /// SCHED_IDLE arrived with CFS in 2.6.23; in 2.6.24 it is only a weight (2): such a
    /// wakee is judged by the same granularity test, which its fast-moving vruntime seldom
    /// passes.
    const HAS_SCHED_IDLE: bool = true;

    fn name(&self) -> &'static str {
        match self.era {
            CfsEra::V2_6_24 => "cfs",
            CfsEra::V2_6_32 => "cfs:era=2.6.32",
        }
    }

    fn pick_rule(&self) -> &'static str {
        match self.era {
            CfsEra::V2_6_24 => {
                "CFS 2.6.24: the leftmost task of this CPU's timeline (the \
                 smallest vruntime)"
            }
            CfsEra::V2_6_32 => {
                "CFS 2.6.32: the leftmost task of this CPU's timeline (the \
                 smallest vruntime), unless the next or last buddy is within the wakeup \
                 granularity of it (pick_next_entity)"
            }
        }
    }

    fn describe_task(&self, _rq: &Rq<CfsRq>, task: &Task<CfsTask>) -> String {
        format!("vruntime {}", task.data.vruntime)
    }

    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }

    fn new_rq(&self, domain: usize, topology: &Topology) -> CfsRq {
        // Per-CPU layout: the lock domain is the CPU.
        CfsRq {
            domains: SchedDomains::build(domain, topology),
            ..CfsRq::default()
        }
    }

    fn task_fork(
        &self,
        ctx: &mut Ctx<CfsTask>,
        _rq: &mut Rq<CfsRq>,
        _cpu: CpuId,
        _parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        // sched_fork / __sched_fork: a fresh entity at the task's weight; placement happens
        // when it is first queued (task_new_fair).
        let c = &mut ctx.tasks[child];
        let (nice, policy) = (c.nice, c.policy);
        c.data = CfsTask {
            load: LoadWeight::of_task(nice, policy, self.idleprio),
            ..CfsTask::default()
        };
        false
    }

    fn task_exit(
        &self,
        _ctx: &mut Ctx<CfsTask>,
        _rq: &mut Rq<CfsRq>,
        _child: TaskId,
        _parent: Option<TaskId>,
    ) {
    }

    fn attr_changed_asleep(
        &self,
        ctx: &mut Ctx<CfsTask>,
        _rq: &mut Rq<CfsRq>,
        _cpu: CpuId,
        t: TaskId,
    ) {
        // set_load_weight on a task on no runqueue: the new weight, the vruntime it slept with.
        let (nice, policy) = (ctx.tasks[t].nice, ctx.tasks[t].policy);
        ctx.tasks[t].data.load = LoadWeight::of_task(nice, policy, self.idleprio);
    }

    fn enqueue(
        &self,
        ctx: &mut Ctx<CfsTask>,
        rq: &mut Rq<CfsRq>,
        cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    ) {
        self.update_curr(ctx, &mut rq.class);
        // A task coming from another runqueue carries its vruntime over relative to
        // min_vruntime (set_task_cpu).
        let to_min = rq.class.min_vruntime;
        {
            let se = &mut ctx.tasks[t].data;
            if se.left_cpu.is_some_and(|c| c != cpu) {
                Cfs::renormalize(se, se.left_min_vruntime, to_min);
            }
            se.left_cpu = None;
        }
        match kind {
            EnqueueKind::New => {
                // task_new_fair.
                let parent = ctx.tasks[t].parent;
                let mut se = std::mem::take(&mut ctx.tasks[t].data);
                if self.era == CfsEra::V2_6_32 {
                    // task_fork_fair: the child starts from its parent's vruntime.
                    if let Some(p) = parent.filter(|&p| rq.class.curr == Some(p)) {
                        se.vruntime = ctx.tasks[p].data.vruntime;
                    }
                }
                self.place_entity(&rq.class, &mut se, true);
                ctx.tasks[t].data = se;
                if let Some(p) = parent.filter(|&p| self.child_runs_first && rq.curr() == Some(p)) {
                    let (pv, cv) = (ctx.tasks[p].data.vruntime, ctx.tasks[t].data.vruntime);
                    if before(pv, cv) {
                        ctx.tasks[p].data.vruntime = cv;
                        ctx.tasks[t].data.vruntime = pv;
                    }
                }
                // 2.6.24's task_new_fair reschedules the parent; 2.6.32 only when
                // child_runs_first (off), so its child is judged as any wakee.
                ctx.tasks[t].data.forked = self.era == CfsEra::V2_6_24;
            }
            EnqueueKind::Wakeup { .. } => {
                let mut se = std::mem::take(&mut ctx.tasks[t].data);
                self.place_entity(&rq.class, &mut se, false);
                ctx.tasks[t].data = se;
            }
            EnqueueKind::Restore => {
                // set_user_nice / sched_setscheduler: a new weight, the same vruntime.
                let (nice, policy) = (ctx.tasks[t].nice, ctx.tasks[t].policy);
                ctx.tasks[t].data.load = LoadWeight::of_task(nice, policy, self.idleprio);
            }
            EnqueueKind::Migrate => {}
        }
        Cfs::enqueue_entity(ctx, rq, t);
    }

    fn dequeue(
        &self,
        ctx: &mut Ctx<CfsTask>,
        rq: &mut Rq<CfsRq>,
        _cpu: CpuId,
        t: TaskId,
        _kind: DequeueKind,
    ) {
        if !ctx.tasks[t].data.on_rq {
            return;
        }
        self.update_curr(ctx, &mut rq.class);
        ctx.tasks[t].data.forked = false;
        Cfs::clear_buddies(&mut rq.class, t);
        Cfs::dequeue_entity(ctx, rq, t);
    }

    fn put_prev(&self, ctx: &mut Ctx<CfsTask>, rq: &mut Rq<CfsRq>, _cpu: CpuId, prev: TaskId) {
        // put_prev_entity: a runnable prev goes back into the timeline.
        if rq.class.curr != Some(prev) {
            return;
        }
        if ctx.tasks[prev].data.on_rq {
            self.update_curr(ctx, &mut rq.class);
            rq.class.curr = None;
            rq.class.timeline.insert(&mut ctx.tasks, prev, ctx.ops);
        } else {
            rq.class.curr = None;
        }
    }

    /// The leftmost task: the pick unless a buddy intervenes.
    fn next_in_line(&self, rq: &Rq<CfsRq>) -> Option<TaskId> {
        rq.class.timeline.first()
    }

    fn pick_next(&self, ctx: &mut Ctx<CfsTask>, rq: &mut Rq<CfsRq>, _cpu: CpuId) -> Option<TaskId> {
        let mut next = rq.class.timeline.first()?;
        // 2.6.32: "prefer last buddy, try to return the CPU to a preempted task".
        if let Some(last) = rq.class.last {
            if self.wakeup_preempt_entity(&ctx.tasks[last].data, &ctx.tasks[next].data) < 1 {
                next = last;
            }
            Cfs::clear_buddies(&mut rq.class, next);
        }
        // set_next_entity: out of the timeline while it runs; its slice starts now.
        rq.class.timeline.remove(&mut ctx.tasks, next, ctx.ops);
        rq.class.curr = Some(next);
        let now = ctx.now;
        let se = &mut ctx.tasks[next].data;
        se.exec_start = now;
        se.prev_sum_exec = se.sum_exec;
        se.forked = false;
        Some(next)
    }

    fn task_tick(
        &self,
        ctx: &mut Ctx<CfsTask>,
        rq: &mut Rq<CfsRq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        self.update_curr(ctx, &mut rq.class);
        if rq.class.nr_running <= 1 || rq.class.curr != Some(curr) {
            return false;
        }
        // check_preempt_tick: past its slice of the period.
        let w = ctx.tasks[curr].data.load.weight;
        let ideal = self.sched_slice(&mut rq.class, w);
        let se = &ctx.tasks[curr].data;
        let expired = se.sum_exec - se.prev_sum_exec > ideal;
        if expired {
            // 2.6.32: "ensure it doesn't get re-elected due to buddy favours".
            Cfs::clear_buddies(&mut rq.class, curr);
        }
        expired
    }

    fn yield_task(
        &self,
        ctx: &mut Ctx<CfsTask>,
        rq: &mut Rq<CfsRq>,
        _cpu: CpuId,
        _curr: TaskId,
    ) -> bool {
        // yield_task_fair without compat_yield: account, then schedule() picks the
        // leftmost, which may be the yielder itself.
        self.update_curr(ctx, &mut rq.class);
        true
    }

    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<CfsTask>,
        rq: &mut Rq<CfsRq>,
        cpu: CpuId,
        woken: TaskId,
        _sync: bool,
    ) -> bool {
        if std::mem::take(&mut ctx.tasks[woken].data.forked) {
            // task_new_fair: resched_task(rq->curr).
            return true;
        }
        let Some(curr) = rq.curr_on(cpu) else {
            return false;
        };
        if self.era == CfsEra::V2_6_32 {
            // "Batch and idle tasks do not preempt (their preemption is driven by the
            // tick)"; "Idle tasks are by definition preempted by everybody".
            if ctx.tasks[woken].policy != SchedPolicy::Normal {
                return false;
            }
            if ctx.tasks[curr].policy == SchedPolicy::Idle {
                return true;
            }
            self.update_curr(ctx, &mut rq.class);
            let preempt =
                self.wakeup_preempt_entity(&ctx.tasks[curr].data, &ctx.tasks[woken].data) == 1;
            if preempt && ctx.tasks[curr].data.on_rq && rq.class.curr == Some(curr) {
                rq.class.last = Some(curr); // LAST_BUDDY
            }
            return preempt;
        }
        // Batch tasks do not preempt (their preemption is driven by the tick).
        if ctx.tasks[woken].policy == SchedPolicy::Batch {
            return false;
        }
        let mut gran = self.wakeup_granularity;
        if ctx.tasks[curr].data.load.weight != NICE_0_LOAD {
            gran = calc_delta_fair(gran, &mut ctx.tasks[curr].data.load);
        }
        before(
            ctx.tasks[woken].data.vruntime.wrapping_add(gran),
            ctx.tasks[curr].data.vruntime,
        )
    }

    fn select_cpu(
        &self,
        tasks: &TaskView<'_, CfsTask>,
        view: &CpuView,
        _ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let w = tasks[t].data.load.weight;
        sched_domains::select_cpu(tasks, view, t, waker_cpu, kind, w, IdleSiblings::Smt)
    }

    fn load(&self, rq: &Rq<CfsRq>, _cpu: CpuId) -> u64 {
        rq.class.load.weight
    }

    fn for_each_queued(
        &self,
        rq: &Rq<CfsRq>,
        tasks: &TaskView<'_, CfsTask>,
        f: &mut dyn FnMut(TaskId),
    ) {
        if let Some(c) = rq.class.curr {
            if tasks[c].data.on_rq {
                f(c);
            }
        }
        let mut x = rq.class.timeline.first();
        while let Some(t) = x {
            f(t);
            x = rq.class.timeline.next(tasks, t);
        }
    }

    fn balance_interval_ticks(&self, idle: bool, hz: u32) -> Option<u64> {
        sched_domains::balance_interval_ticks(idle, hz)
    }

    fn find_busiest(
        &self,
        ctx: &mut Ctx<CfsTask>,
        this: &mut Rq<CfsRq>,
        this_cpu: CpuId,
        view: &CpuView,
        kind: CpuIdle,
    ) -> Option<Busiest> {
        this.class
            .domains
            .find_busiest(ctx.ops, ctx.now, this_cpu, view, kind)
    }

    fn move_tasks(
        &self,
        ctx: &mut Ctx<CfsTask>,
        this: &mut Rq<CfsRq>,
        this_cpu: CpuId,
        src: &mut Rq<CfsRq>,
        _src_cpu: CpuId,
        kind: CpuIdle,
        imbalance: usize,
        _rt: &dyn PassiveRt<CfsRq, CfsTask>,
    ) -> PullOutcome {
        let now = ctx.now;
        let gran = self.wakeup_granularity;
        PullBudget::new(imbalance).drain(
            ctx,
            src,
            this_cpu,
            kind.is_idle(),
            |q| &q.timeline,
            |_, _, p| Some((p.data.load.weight, self.task_hot(p, now))),
            |ctx, src, t| {
                // pull_task: off the busiest runqueue, onto this one, vruntime carried over.
                self.update_curr(ctx, &mut src.class);
                Cfs::clear_buddies(&mut src.class, t);
                Cfs::dequeue_entity(ctx, src, t);
                ctx.tasks[t].cpu = this_cpu;
                let (from, to) = (src.class.min_vruntime, this.class.min_vruntime);
                Cfs::renormalize(&mut ctx.tasks[t].data, from, to);
                ctx.tasks[t].data.left_cpu = None;
                self.update_curr(ctx, &mut this.class);
                Cfs::enqueue_entity(ctx, this, t);
                this.curr().is_some_and(|c| {
                    before(
                        ctx.tasks[t].data.vruntime.wrapping_add(gran),
                        ctx.tasks[c].data.vruntime,
                    )
                })
            },
        )
    }
}

#[cfg(test)]
mod tests;

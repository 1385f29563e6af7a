//! `eevdf`: Earliest Eligible Virtual Deadline First, the fair class of Linux 6.6+
//! (designs.md §5.4; EEVDF-C, EEVDF-SRC: `kernel/sched/fair.c` of 6.6).
//!
//! Each task has a `vruntime` and a virtual deadline (`vruntime + slice/weight`). A task is
//! *eligible* when its lag is not negative, i.e. its vruntime is not past the load-weighted
//! average `V` of the runqueue's vruntimes; the scheduler runs the eligible task with the
//! earliest deadline. As 6.6 does it:
//! - the runqueue keeps `avg_vruntime = Σ (v_i - min_vruntime) * w_i` and `avg_load = Σ w_i`
//!   over the queued tasks (the running one added when `V` is computed), so eligibility needs
//!   no division: `avg >= (v - min_vruntime) * load`;
//! - the tree is sorted by deadline and augmented with each subtree's smallest vruntime;
//!   `pick_eevdf` walks it in O(log n): the left subtree if it holds an eligible task, else
//!   the node if eligible, else the right subtree; the running task wins if its deadline is
//!   earlier; RUN_TO_PARITY keeps it until it has used the slice it was picked with. (This
//!   is the tree of designs.md §5.4, from "sched/eevdf: Sort the rbtree by virtual deadline",
//!   merged after 6.6; 6.6 as released sorted by vruntime and kept each subtree's earliest
//!   deadline. Both walks return the same task: the eligible one with the earliest deadline.)
//! - `update_curr` charges `calc_delta_fair` (the modern `__calc_delta`), and when the
//!   running task reaches its deadline, `update_deadline` gives it a new slice
//!   (`base_slice`, 0.75 ms × (1 + ilog2(ncpus)) in 6.6) and reschedules if others wait;
//! - a dequeued task keeps its lag (`vlag = V - v`, clamped to two slices); `place_entity`
//!   puts it back at `V - vlag * (W + w) / W` (PLACE_LAG, compensating for its own effect on
//!   `V`), a new task at `V` with half a slice to its deadline (PLACE_DEADLINE_INITIAL);
//! - wakeup preemption: the woken task preempts when the pick would choose it; batch wakees
//!   never do;
//! - yield: the deadline moves one slice later.
//!
//! Balancing: the scheduling domains of `sched_domains`, comparing each runqueue's PELT
//! load average (`pelt`: 32 ms half-life) as the modern balancer does; wakeups go through
//! `wake_affine` and `select_idle_sibling` over the last-level cache.
//!
//! Simplified, and said so: PELT is kept per runqueue, not per entity (a moved task's history
//! stays behind and decays; an idle CPU's average decays only when its runqueue next changes);
//! the balancer compares loads, not the utilisation and `group_type` classification of
//! today's `update_sd_lb_stats`; no `sched_idle_cpu` preference for CPUs running only
//! SCHED_IDLE tasks, no per-task slice (`sched_setattr`), no DELAY_DEQUEUE (6.12).
//! SCHED_IDLE tasks weigh 3 and follow `check_preempt_wakeup_fair`'s two rules.

use super::pelt::Pelt;
use super::rbtree::{before, RbEntry, RbNode, RbTree};
use super::sched_domains::{self, IdleSiblings, PullBudget, SchedDomains};
use super::weight::{calc_delta, LoadWeight, IDLEPRIO_LATER, NICE_0_LOAD};
use crate::class::*;
use crate::machine::Topology;
use crate::task::{CpuId, SchedPolicy, Task, TaskId, TaskView};

/// Per-task state (`struct sched_entity` of 6.6).
#[derive(Clone, Debug, Default)]
// `repr(C)`: the tree node and the keys the tree walk compares share the task's first line of
// policy data (see `Task`), so a walk costs one line per level.
#[repr(C)]
pub struct EevdfTask {
    node: RbNode,
    pub vruntime: u64,
    pub deadline: u64,
    /// `V - vruntime` saved at dequeue (clamped), restored by `place_entity`.
    pub vlag: i64,
    pub slice: u64,
    pub exec_start: u64,
    pub sum_exec: u64,
    pub prev_sum_exec: u64,
    pub load: LoadWeight,
    pub on_rq: bool,
    /// The deadline it was picked with (RUN_TO_PARITY: keep it until this changes).
    picked_deadline: Option<u64>,
}

/// The tree: by deadline, each subtree's smallest vruntime kept.
#[derive(Debug)]
pub struct ByDeadline;
impl RbEntry<EevdfTask> for ByDeadline {
    fn node(t: &Task<EevdfTask>) -> &RbNode {
        &t.data.node
    }
    fn node_mut(t: &mut Task<EevdfTask>) -> &mut RbNode {
        &mut t.data.node
    }
    fn key(t: &Task<EevdfTask>) -> u64 {
        t.data.deadline
    }
    fn aug(t: &Task<EevdfTask>) -> u64 {
        t.data.vruntime
    }
}

/// The fair part of a runqueue under EEVDF.
#[derive(Debug, Default)]
pub struct EevdfRq {
    pub tree: RbTree<ByDeadline>,
    pub min_vruntime: u64,
    /// `Σ (v_i - min_vruntime) * w_i` over the queued tasks (not the running one).
    pub avg_vruntime: i128,
    /// `Σ w_i` over the queued tasks.
    pub avg_load: u64,
    pub load: LoadWeight,
    pub nr_running: usize,
    pub curr: Option<TaskId>,
    /// PELT average of the runqueue's runnable weight: the load it publishes for balancing.
    pub pelt: Pelt,
    /// This CPU's scheduling domains and their balancing state.
    pub domains: SchedDomains,
}

/// The EEVDF class.
#[derive(Clone, Debug)]
pub struct Eevdf {
    /// `sysctl_sched_base_slice`.
    pub base_slice: u64,
    pub run_to_parity: bool,
    pub migration_cost: u64,
}

type T = Task<EevdfTask>;

impl Eevdf {
    /// 6.6's defaults for `ncpus` CPUs (`sched_update_scaling`'s log factor).
    pub fn v6_6(ncpus: usize) -> Eevdf {
        let factor = 1 + (usize::BITS - 1 - ncpus.max(1).leading_zeros()) as u64;
        Eevdf {
            base_slice: 750_000 * factor,
            run_to_parity: true,
            migration_cost: 500_000,
        }
    }

    fn key(rq: &EevdfRq, v: u64) -> i128 {
        v.wrapping_sub(rq.min_vruntime) as i64 as i128
    }

    /// `calc_delta_fair`.
    fn delta_fair(delta: u64, se: &mut EevdfTask) -> u64 {
        if se.load.weight != NICE_0_LOAD {
            calc_delta(delta, NICE_0_LOAD, &mut se.load)
        } else {
            delta
        }
    }

    /// `avg_vruntime()`: V, with the running task counted, rounded towards negative.
    pub fn avg_vruntime(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> u64 {
        let (avg, load) = Self::sums(tasks, rq);
        let mut avg = avg;
        if load > 0 {
            if avg < 0 {
                avg -= load as i128 - 1;
            }
            avg /= load as i128;
        }
        rq.min_vruntime.wrapping_add(avg as i64 as u64)
    }

    fn sums(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> (i128, u64) {
        let (mut avg, mut load) = (rq.avg_vruntime, rq.avg_load);
        if let Some(c) = rq.curr {
            let se = &tasks[c].data;
            if se.on_rq {
                avg += Self::key(rq, se.vruntime) * se.load.weight as i128;
                load += se.load.weight;
            }
        }
        (avg, load)
    }

    /// `vruntime_eligible`: lag >= 0, i.e. `v <= V`, without dividing.
    pub fn vruntime_eligible(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq, v: u64) -> bool {
        let (avg, load) = Self::sums(tasks, rq);
        avg >= Self::key(rq, v) * load as i128
    }

    /// `avg_vruntime_add`: `se` joins the queued sums.
    fn avg_add(rq: &mut EevdfRq, se: &EevdfTask) {
        rq.avg_vruntime += Self::key(rq, se.vruntime) * se.load.weight as i128;
        rq.avg_load += se.load.weight;
    }

    /// `avg_vruntime_sub`: `se` leaves the queued sums.
    fn avg_sub(rq: &mut EevdfRq, se: &EevdfTask) {
        rq.avg_vruntime -= Self::key(rq, se.vruntime) * se.load.weight as i128;
        rq.avg_load -= se.load.weight;
    }

    /// `update_min_vruntime`, with `avg_vruntime_update` as the base moves.
    fn update_min_vruntime(tasks: &TaskView<'_, EevdfTask>, rq: &mut EevdfRq) {
        let mut v = rq.min_vruntime;
        let curr = rq.curr.filter(|&c| tasks[c].data.on_rq);
        if let Some(c) = curr {
            v = tasks[c].data.vruntime;
        }
        if !rq.tree.is_empty() {
            let m = rq.tree.min_aug(tasks);
            v = if curr.is_none() || before(m, v) { m } else { v };
        }
        if before(rq.min_vruntime, v) {
            let delta = v.wrapping_sub(rq.min_vruntime) as i64 as i128;
            rq.avg_vruntime -= rq.avg_load as i128 * delta;
            rq.min_vruntime = v;
        }
    }

    /// `update_curr` (+ `update_deadline`): returns whether the slice ran out with others
    /// waiting (reschedule).
    fn update_curr(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq) -> bool {
        let Some(c) = rq.curr else { return false };
        let now = ctx.now;
        let mut resched = false;
        {
            let se = &mut ctx.tasks[c].data;
            let delta = now.saturating_sub(se.exec_start);
            if delta > 0 {
                se.sum_exec += delta;
                se.vruntime = se.vruntime.wrapping_add(Self::delta_fair(delta, se));
                se.exec_start = now;
            }
            // update_deadline: past its deadline, a new slice.
            if !before(se.vruntime, se.deadline) {
                se.slice = self.base_slice;
                let vs = Self::delta_fair(se.slice, se);
                se.deadline = se.vruntime.wrapping_add(vs);
                resched = rq.nr_running > 1;
            }
        }
        Self::update_min_vruntime(&ctx.tasks, rq);
        resched
    }

    /// `pick_eevdf`.
    pub fn pick_eevdf(&self, tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> Option<TaskId> {
        let curr = rq.curr.filter(|&c| tasks[c].data.on_rq);
        if rq.nr_running == 1 {
            return curr.or(rq.tree.first());
        }
        let curr = curr.filter(|&c| Self::vruntime_eligible(tasks, rq, tasks[c].data.vruntime));
        if let Some(c) = curr {
            if self.run_to_parity && tasks[c].data.picked_deadline == Some(tasks[c].data.deadline) {
                return Some(c);
            }
        }
        // The leftmost (earliest deadline) if eligible; else the heap walk.
        let mut best = rq
            .tree
            .first()
            .filter(|&f| Self::vruntime_eligible(tasks, rq, tasks[f].data.vruntime));
        if best.is_none() {
            let mut node = rq.tree.root();
            while let Some(n) = node {
                if let Some(l) = rq.tree.left(tasks, n) {
                    if Self::vruntime_eligible(tasks, rq, rq.tree.subtree_min(tasks, l)) {
                        node = Some(l);
                        continue;
                    }
                }
                if Self::vruntime_eligible(tasks, rq, tasks[n].data.vruntime) {
                    best = Some(n);
                    break;
                }
                node = rq.tree.right(tasks, n);
            }
        }
        match (best, curr) {
            // V lies within the queued vruntimes, so one is always eligible; should rounding
            // ever say otherwise, 6.6 falls back to the leftmost rather than lose the queue.
            (None, None) => rq.tree.first(),
            (None, c) => c,
            (Some(b), Some(c)) if before(tasks[c].data.deadline, tasks[b].data.deadline) => Some(c),
            (b, _) => b,
        }
    }

    /// `place_entity` (PLACE_LAG, PLACE_DEADLINE_INITIAL).
    fn place_entity(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        rq: &EevdfRq,
        se: &mut EevdfTask,
        initial: bool,
    ) {
        if se.slice == 0 {
            se.slice = self.base_slice;
        }
        let mut vslice = Self::delta_fair(se.slice, se);
        let v = Self::avg_vruntime(tasks, rq);
        let mut lag: i128 = 0;
        if rq.nr_running > 0 {
            let (_, mut load) = Self::sums(tasks, rq);
            lag = se.vlag as i128 * (load + se.load.weight) as i128;
            if load == 0 {
                load = 1;
            }
            lag /= load as i128;
        }
        se.vruntime = v.wrapping_sub(lag as i64 as u64);
        if initial {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    /// `update_entity_lag`: `vlag = V - v`, within `max(2 * slice, tick)` of virtual time.
    fn update_entity_lag(ctx: &mut Ctx<EevdfTask>, rq: &EevdfRq, t: TaskId) {
        let tick_ns = 1_000_000_000 / ctx.hz.max(1) as u64;
        let v = Self::avg_vruntime(&ctx.tasks, rq);
        let se = &mut ctx.tasks[t].data;
        let lag = v.wrapping_sub(se.vruntime) as i64;
        let limit = Self::delta_fair((2 * se.slice).max(tick_ns), se) as i64;
        se.vlag = lag.clamp(-limit, limit);
    }

    fn enqueue_entity(ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, t: TaskId) {
        let w = ctx.tasks[t].data.load.weight;
        // The runqueue's PELT signal up to now, at the weight it had until now.
        let weight_so_far = rq.class.load.weight;
        rq.class.pelt.update(ctx.now, weight_so_far);
        if rq.class.curr != Some(t) {
            Self::avg_add(&mut rq.class, &ctx.tasks[t].data);
            rq.class.tree.insert(&mut ctx.tasks, t, ctx.ops);
        }
        ctx.tasks[t].data.on_rq = true;
        rq.class.load.add(w);
        rq.class.nr_running += 1;
        rq.nr_running += 1;
    }

    fn dequeue_entity(ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, t: TaskId) {
        let w = ctx.tasks[t].data.load.weight;
        let weight_so_far = rq.class.load.weight;
        rq.class.pelt.update(ctx.now, weight_so_far);
        if rq.class.curr != Some(t) {
            rq.class.tree.remove(&mut ctx.tasks, t, ctx.ops);
            Self::avg_sub(&mut rq.class, &ctx.tasks[t].data);
        }
        ctx.tasks[t].data.on_rq = false;
        rq.class.load.sub(w);
        rq.class.nr_running -= 1;
        rq.nr_running -= 1;
    }

    fn task_hot(&self, p: &T, now: u64) -> bool {
        now.saturating_sub(p.data.exec_start) < self.migration_cost
    }
}

impl SchedClass for Eevdf {
    type Rq = EevdfRq;
    type TaskData = EevdfTask;

    /// `yield_task_fair` pushes the deadline one slice later: another task with an earlier
    /// deadline may then win, but an only eligible task keeps the CPU.
    const YIELD_GIVES_WAY: bool = false;

    /// SCHED_IDLE: weight 3, and in `check_preempt_wakeup_fair` a non-idle wakee always
    /// preempts an idle runner while an idle (or batch) wakee never preempts.
    const HAS_SCHED_IDLE: bool = true;

    fn name(&self) -> &'static str {
        "eevdf"
    }

    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }

    fn new_rq(&self, domain: usize, topology: &Topology) -> EevdfRq {
        // Per-CPU layout: the lock domain is the CPU.
        EevdfRq {
            domains: SchedDomains::build(domain, topology),
            ..EevdfRq::default()
        }
    }

    fn task_fork(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        _rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        _parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        let c = &mut ctx.tasks[child];
        let (nice, policy) = (c.nice, c.policy);
        c.data = EevdfTask {
            load: LoadWeight::of_task(nice, policy, IDLEPRIO_LATER),
            slice: self.base_slice,
            ..EevdfTask::default()
        };
        false
    }

    fn task_exit(
        &self,
        _ctx: &mut Ctx<EevdfTask>,
        _rq: &mut Rq<EevdfRq>,
        _child: TaskId,
        _parent: Option<TaskId>,
    ) {
    }

    fn enqueue(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    ) {
        if kind == EnqueueKind::Restore {
            // A nice change (dequeue SAVE, set_load_weight, enqueue RESTORE): as
            // `reweight_entity` does for a dequeued entity, keep its lag `w * vlag` by
            // scaling `vlag` by old/new weight (div_s64 truncates towards zero).
            let (nice, policy) = (ctx.tasks[t].nice, ctx.tasks[t].policy);
            let se = &mut ctx.tasks[t].data;
            let (old, new) = (
                se.load.weight,
                LoadWeight::of_task(nice, policy, IDLEPRIO_LATER),
            );
            if old != new.weight {
                se.vlag = (se.vlag as i128 * old as i128 / new.weight as i128) as i64;
            }
            se.load = new;
        }
        let is_curr = rq.class.curr == Some(t);
        let mut se = std::mem::take(&mut ctx.tasks[t].data);
        let initial = kind == EnqueueKind::New;
        if is_curr {
            self.place_entity(&ctx.tasks, &rq.class, &mut se, initial);
        }
        ctx.tasks[t].data = se;
        self.update_curr(ctx, &mut rq.class);
        if !is_curr {
            let mut se = std::mem::take(&mut ctx.tasks[t].data);
            self.place_entity(&ctx.tasks, &rq.class, &mut se, initial);
            ctx.tasks[t].data = se;
        }
        Eevdf::enqueue_entity(ctx, rq, t);
    }

    fn dequeue(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        t: TaskId,
        _kind: DequeueKind,
    ) {
        if !ctx.tasks[t].data.on_rq {
            return;
        }
        self.update_curr(ctx, &mut rq.class);
        Self::update_entity_lag(ctx, &rq.class, t);
        Eevdf::dequeue_entity(ctx, rq, t);
        Self::update_min_vruntime(&ctx.tasks, &mut rq.class);
    }

    fn put_prev(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, _cpu: CpuId, prev: TaskId) {
        if rq.class.curr != Some(prev) {
            return;
        }
        if ctx.tasks[prev].data.on_rq {
            self.update_curr(ctx, &mut rq.class);
            rq.class.curr = None;
            Self::avg_add(&mut rq.class, &ctx.tasks[prev].data);
            rq.class.tree.insert(&mut ctx.tasks, prev, ctx.ops);
        } else {
            rq.class.curr = None;
        }
    }

    /// The earliest deadline: the pick whenever that task is eligible.
    fn next_in_line(&self, rq: &Rq<EevdfRq>) -> Option<TaskId> {
        rq.class.tree.first()
    }

    fn pick_next(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
    ) -> Option<TaskId> {
        let next = self.pick_eevdf(&ctx.tasks, &rq.class)?;
        // set_next_entity: out of the tree while it runs.
        if rq.class.curr != Some(next) {
            rq.class.tree.remove(&mut ctx.tasks, next, ctx.ops);
            Self::avg_sub(&mut rq.class, &ctx.tasks[next].data);
            rq.class.curr = Some(next);
        }
        let now = ctx.now;
        let se = &mut ctx.tasks[next].data;
        se.exec_start = now;
        se.prev_sum_exec = se.sum_exec;
        se.picked_deadline = Some(se.deadline);
        Some(next)
    }

    fn task_tick(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        _curr: TaskId,
    ) -> bool {
        let weight_so_far = rq.class.load.weight;
        rq.class.pelt.update(ctx.now, weight_so_far);
        self.update_curr(ctx, &mut rq.class)
    }

    fn yield_task(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        if rq.class.nr_running <= 1 {
            return true;
        }
        self.update_curr(ctx, &mut rq.class);
        let se = &mut ctx.tasks[curr].data;
        let vs = Self::delta_fair(se.slice, se);
        se.deadline = se.deadline.wrapping_add(vs);
        true
    }

    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        cpu: CpuId,
        woken: TaskId,
        _sync: bool,
    ) -> bool {
        let Some(curr) = rq.curr_on(cpu) else {
            return false;
        };
        // "Idle tasks are by definition preempted by non-idle tasks"; "Batch and idle tasks
        // do not preempt non-idle tasks" (check_preempt_wakeup_fair).
        let woken_policy = ctx.tasks[woken].policy;
        if ctx.tasks[curr].policy == SchedPolicy::Idle && woken_policy != SchedPolicy::Idle {
            return true;
        }
        if woken_policy != SchedPolicy::Normal {
            return false;
        }
        self.update_curr(ctx, &mut rq.class);
        // RUN_TO_PARITY holds here too: "sched/eevdf: Curb wakeup-preemption" (Aug 2023,
        // in 6.6) added it precisely so that a woken task placed left of the running one
        // waits until that one has used the slice it was picked with.
        self.pick_eevdf(&ctx.tasks, &rq.class) == Some(woken)
    }

    fn select_cpu(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        view: &CpuView,
        _ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let w = tasks[t].data.load.weight;
        sched_domains::select_cpu(tasks, view, t, waker_cpu, kind, w, IdleSiblings::Llc)
    }

    /// The PELT average of the runqueue's runnable weight (what the modern balancer
    /// compares), not its instantaneous weight.
    fn load(&self, rq: &Rq<EevdfRq>, _cpu: CpuId) -> u64 {
        rq.class.pelt.load_avg
    }

    fn for_each_queued(
        &self,
        rq: &Rq<EevdfRq>,
        tasks: &TaskView<'_, EevdfTask>,
        f: &mut dyn FnMut(TaskId),
    ) {
        if let Some(c) = rq.class.curr {
            if tasks[c].data.on_rq {
                f(c);
            }
        }
        let mut x = rq.class.tree.first();
        while let Some(t) = x {
            f(t);
            x = rq.class.tree.next(tasks, t);
        }
    }

    fn balance_interval_ticks(&self, idle: bool, hz: u32) -> Option<u64> {
        sched_domains::balance_interval_ticks(idle, hz)
    }

    fn find_busiest(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        this: &mut Rq<EevdfRq>,
        this_cpu: CpuId,
        view: &CpuView,
        idle: bool,
    ) -> Option<Busiest> {
        this.class
            .domains
            .find_busiest(ctx.ops, ctx.now, this_cpu, view, idle)
    }

    fn move_tasks(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        this: &mut Rq<EevdfRq>,
        this_cpu: CpuId,
        src: &mut Rq<EevdfRq>,
        _src_cpu: CpuId,
        idle: bool,
        imbalance: usize,
    ) -> PullOutcome {
        let mut budget = PullBudget::new(imbalance);
        let now = ctx.now;
        let mut x = src.class.tree.first();
        while let Some(t) = x {
            x = src.class.tree.next(&ctx.tasks, t);
            ctx.ops.remote_touches += 1;
            let p = &ctx.tasks[t];
            let w = p.data.load.weight;
            if !budget.admits(p, w, this_cpu, idle, self.task_hot(p, now)) {
                continue;
            }
            // Detach with its lag, attach placed by it: lag-preserving migration.
            self.update_curr(ctx, &mut src.class);
            Self::update_entity_lag(ctx, &src.class, t);
            Eevdf::dequeue_entity(ctx, src, t);
            ctx.tasks[t].cpu = this_cpu;
            self.update_curr(ctx, &mut this.class);
            let mut se = std::mem::take(&mut ctx.tasks[t].data);
            self.place_entity(&ctx.tasks, &this.class, &mut se, false);
            ctx.tasks[t].data = se;
            Eevdf::enqueue_entity(ctx, this, t);
            if budget.took(w) {
                break;
            }
        }
        budget.out.resched = budget.out.moved > 0 && this.curr().is_some();
        budget.out
    }
}

#[cfg(test)]
mod tests;

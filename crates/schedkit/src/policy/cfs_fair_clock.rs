//! `cfs:era=2.6.23`: CFS as released in Linux 2.6.23 (October 2007), the model of the CFS
//! v19/v20 patches: a per-runqueue `fair_clock` and a per-task `wait_runtime`, before
//! 2.6.24 replaced both by `vruntime` (designs.md §5.2; `v2.6.23:kernel/sched_fair.c`).
//!
//! Per CPU, a `cfs_rq`: every runnable task, *the running one included*, in a red-black tree
//! by `fair_key`, with a cached leftmost node; the runqueue's `fair_clock`, its summed load
//! weight and its `sleeper_bonus`. Mechanisms, as 2.6.23 wrote them:
//! - `__update_curr`: `fair_clock += delta_exec * 1024 / rq_load`; the running task is
//!   entitled to `delta_mine = delta_exec * w / rq_load` of the time it ran, so
//!   `wait_runtime += delta_mine - delta_exec` (negative while it runs alone among others),
//!   clamped to ±`runtime_limit` (`limit_wait_runtime`). While the runqueue owes sleepers
//!   more than `min_granularity` of bonus, runners pay it back out of `delta_mine`.
//! - Waiting: a task accrues `fair_clock - wait_start_fair` (weighted by `w/1024`, at most
//!   `2 * runtime_limit`) of wait_runtime for the time it waited on the runqueue
//!   (`update_stats_wait_end`, at pick and at dequeue).
//! - The key (`update_stats_enqueue`): `fair_key = fair_clock - wait_runtime`, with
//!   wait_runtime scaled by `1024/w` (the task's `inv_weight`) for a task that is not nice 0.
//!   Set when a task is queued and, for the running task, at every tick (`entity_tick`
//!   dequeues and re-enqueues it); otherwise it stays as it was.
//! - Sleepers (`enqueue_sleeper`): a waking task is credited `min(2 * limit, fair_clock -
//!   sleep_start_fair)` (weighted), within the ±limit clamp; the credit actually given is
//!   added to the runqueue's `sleeper_bonus`. SCHED_BATCH gets no credit, and nobody does
//!   while `sleeper_bonus` exceeds `runtime_limit` ("too much bonus 'in flight' already").
//! - Preemption (`__check_preempt_curr_fair`): `curr.fair_key - se.fair_key >
//!   niced_granularity(curr, gran)`, where gran becomes 0 once curr has run more than
//!   `max(latency / nr, min_granularity)` since it was picked. At the tick, against the
//!   leftmost with `gran = max(latency/nr - latency/nr/nr, min_granularity)`; at wakeup,
//!   against the wakee with `wakeup_granularity` (`batch_wakeup_granularity` for a
//!   SCHED_BATCH wakee).
//! - Fork (`task_new_fair`): the child's key is `parent.fair_key - niced_granularity(parent,
//!   gran) - 1`, so it runs first; START_DEBIT gives it `wait_runtime = -gran/2`.
//! - Yield (`yield_task_fair`, compat_yield off): dequeue and re-enqueue, i.e. a new key.
//! - A change of nice level resets wait_runtime to 0 (`set_load_weight`).
//! - Tunables (`sched_init_granularity`): latency 20 ms and min_granularity 2 ms, each times
//!   `1 + ilog2(ncpus)` (at most 100 ms); `runtime_limit = latency`; `wakeup_granularity =
//!   min_granularity / 2`; batch_wakeup_granularity 25 ms.
//!
//! Simplified, and said so:
//! - the SLEEPER_AVG / SLEEPER_LOAD_AVG refinements of the CFS v19/v20 patches (scaling the
//!   credit by `load / (load + w)`) are not modelled: designs.md §5.2 gives the credit as
//!   `min(2 * limit, fair_clock - sleep_start_fair)`, which is what is applied;
//! - `niced_granularity` for weights above NICE_0_LOAD is `gran * inv_weight >>
//!   (WMULT_SHIFT - NICE_0_SHIFT)`, i.e. `gran * 1024 / w` ("linearly finer");
//! - balancing and wakeup placement are the scheduling domains of `sched_domains` with the
//!   runqueue's weighted load (as for `cfs`; no `cpu_load[]` smoothing); the running task
//!   is never pulled;
//! - a task moving to another runqueue has its `wait_start_fair` / `sleep_start_fair`
//!   shifted by the difference of the two fair clocks, as `set_task_cpu` did; for a sleeper
//!   woken on another CPU the old runqueue's fair clock at the wakeup is not visible to the
//!   new one, so it is estimated from the fair clock and the load that runqueue had when the
//!   task left (the clock advanced at `1024 / load` per ns while that load stayed);
//! - SCHED_IDLE is a weight of 2 (`WEIGHT_IDLEPRIO`) and nothing else, as in 2.6.23.
//!
//! Must never depend on another design, the stacked RT class, a host, the core or the
//! registry (ARCHITECTURE.md); its multi-CPU part goes through `sched_domains` (the domains,
//! wakeup CPU selection and `PullBudget::drain`, the balancing loop).

use super::sched_domains::{self, IdleSiblings, PullBudget, SchedDomains};
use super::weight::{calc_delta_mine, LoadWeight, IDLEPRIO_2_6_24, NICE_0_LOAD};
use crate::class::*;
use crate::ds::rbtree::{RbEntry, RbNode, RbTree};
use crate::ds::work::Work;
use crate::machine::Topology;
use crate::task::{CpuId, SchedPolicy, Task, TaskId, TaskView};

const NICE_0_SHIFT: u32 = 10;
const WMULT_SHIFT: u32 = 32;

/// Per-task state (`struct sched_entity` of 2.6.23).
#[derive(Clone, Debug, Default)]
pub struct FairClockTask {
    node: RbNode,
    /// Its position in the tree (an s64 in the kernel; compared as a signed difference).
    pub fair_key: u64,
    /// How much CPU time it is owed (positive) or has had beyond its share (negative), ns.
    pub wait_runtime: i64,
    /// The runqueue's fair clock when it started waiting.
    pub wait_start_fair: u64,
    /// The runqueue's fair clock when it went to sleep.
    pub sleep_start_fair: u64,
    pub exec_start: u64,
    pub sum_exec: u64,
    pub prev_sum_exec: u64,
    pub load: LoadWeight,
    pub on_rq: bool,
    /// Where it slept, that runqueue's load without it, and when (for a wakeup elsewhere).
    left_cpu: Option<CpuId>,
    left_load: u64,
    left_at: u64,
}

/// The timeline: tasks by fair_key.
#[derive(Debug)]
pub struct ByFairKey;
impl RbEntry<FairClockTask> for ByFairKey {
    type Aug = ();
    fn node(t: &Task<FairClockTask>) -> &RbNode {
        &t.data.node
    }
    fn node_mut(t: &mut Task<FairClockTask>) -> &mut RbNode {
        &mut t.data.node
    }
    fn key(t: &Task<FairClockTask>) -> u64 {
        t.data.fair_key
    }
}

/// The CFS part of a runqueue (`struct cfs_rq` of 2.6.23).
#[derive(Debug, Default)]
pub struct FairClockRq {
    /// Every runnable CFS task, the running one included.
    pub timeline: RbTree<ByFairKey>,
    pub fair_clock: u64,
    pub load: LoadWeight,
    pub nr_running: usize,
    /// Sleeper credit handed out and not yet paid back by runners.
    pub sleeper_bonus: u64,
    /// The entity running now (`cfs_rq_curr`).
    pub curr: Option<TaskId>,
    /// This CPU's scheduling domains and their balancing state.
    pub domains: SchedDomains,
}

/// The 2.6.23 class with its tunables (ns).
#[derive(Clone, Debug)]
pub struct CfsFairClock {
    pub latency: u64,
    pub min_granularity: u64,
    pub wakeup_granularity: u64,
    pub batch_wakeup_granularity: u64,
    pub runtime_limit: u64,
    /// `sysctl_sched_migration_cost`, for the shared balancer's cache-hot test.
    pub migration_cost: u64,
}

type T = Task<FairClockTask>;

/// `calc_weighted(delta, se)`: `delta * w >> NICE_0_SHIFT`.
fn calc_weighted(delta: u64, w: u64) -> u64 {
    (delta * w) >> NICE_0_SHIFT
}

impl CfsFairClock {
    /// 2.6.23's defaults for `ncpus` CPUs (`sched_init_granularity`).
    pub fn v2_6_23(ncpus: usize) -> CfsFairClock {
        let factor = 1 + (usize::BITS - 1 - ncpus.max(1).leading_zeros()) as u64;
        const LIMIT: u64 = 100_000_000;
        let min_granularity = (2_000_000 * factor).min(LIMIT);
        let latency = (20_000_000 * factor).min(LIMIT);
        CfsFairClock {
            latency,
            min_granularity,
            wakeup_granularity: min_granularity / 2,
            batch_wakeup_granularity: 25_000_000,
            runtime_limit: latency,
            migration_cost: 500_000,
        }
    }

    /// `sched_granularity(cfs_rq)`: `lat/nr - lat/nr/nr`, not below min_granularity.
    pub fn sched_granularity(&self, nr: u64) -> u64 {
        if nr > 1 {
            let g = self.latency / nr - self.latency / nr / nr;
            g.max(self.min_granularity)
        } else {
            self.latency
        }
    }

    /// `niced_granularity(curr, gran)`: the granularity in fair-clock units of `curr`.
    pub fn niced_granularity(load: &LoadWeight, gran: u64) -> u64 {
        if load.weight == NICE_0_LOAD {
            gran
        } else if load.weight < NICE_0_LOAD {
            // Positive nice levels: linearly coarser keys, the same wall-time granularity.
            (load.weight * gran) >> NICE_0_SHIFT
        } else {
            // Negative nice levels get linearly finer granularity.
            (load.inv_weight * gran) >> (WMULT_SHIFT - NICE_0_SHIFT)
        }
    }

    /// `update_stats_enqueue`'s key: `fair_clock - wait_runtime`, the latter scaled by
    /// `1024/w` for a task that is not nice 0.
    pub fn key_of(fair_clock: u64, se: &FairClockTask) -> u64 {
        if se.load.weight == NICE_0_LOAD {
            return fair_clock.wrapping_sub(se.wait_runtime as u64);
        }
        let scaled = |x: u64| (x * se.load.inv_weight) >> (WMULT_SHIFT - NICE_0_SHIFT);
        if se.wait_runtime < 0 {
            fair_clock.wrapping_add(scaled(se.wait_runtime.unsigned_abs()))
        } else {
            fair_clock.wrapping_sub(scaled(se.wait_runtime as u64))
        }
    }

    /// `__add_wait_runtime` with `limit_wait_runtime`.
    fn add_wait_runtime(&self, se: &mut FairClockTask, delta: i64) {
        let limit = self.runtime_limit as i64;
        se.wait_runtime = (se.wait_runtime + delta).clamp(-limit, limit);
    }

    /// `update_curr` / `__update_curr`: charge the running task, advance the fair clock.
    fn update_curr(&self, ctx: &mut Ctx<FairClockTask>, rq: &mut FairClockRq) {
        let Some(c) = rq.curr else { return };
        let now = ctx.now;
        let se = &mut ctx.tasks[c].data;
        let delta_exec = now.saturating_sub(se.exec_start);
        se.exec_start = now;
        if delta_exec == 0 {
            return;
        }
        se.sum_exec += delta_exec;
        if rq.load.weight == 0 {
            return;
        }
        let delta_fair = calc_delta_mine(delta_exec, NICE_0_LOAD, &mut rq.load);
        let mut delta_mine = calc_delta_mine(delta_exec, se.load.weight, &mut rq.load);
        if rq.sleeper_bonus > self.min_granularity {
            // Runners pay back the credit handed to sleepers, never beyond the limit.
            let headroom = (self.runtime_limit as i64 - se.wait_runtime).max(0) as u64;
            let d = delta_mine.min(rq.sleeper_bonus).min(headroom);
            rq.sleeper_bonus -= d;
            delta_mine -= d;
        }
        rq.fair_clock = rq.fair_clock.wrapping_add(delta_fair);
        self.add_wait_runtime(se, delta_mine as i64 - delta_exec as i64);
    }

    /// `update_stats_wait_end`: credit the time waited on the runqueue.
    fn wait_end(&self, rq: &FairClockRq, se: &mut FairClockTask) {
        let mut delta_fair = rq
            .fair_clock
            .wrapping_sub(se.wait_start_fair)
            .min(2 * self.runtime_limit);
        if (delta_fair as i64) < 0 {
            delta_fair = 0;
        }
        if se.load.weight != NICE_0_LOAD {
            delta_fair = calc_weighted(delta_fair, se.load.weight);
        }
        self.add_wait_runtime(se, delta_fair as i64);
        se.wait_start_fair = 0;
    }

    /// `enqueue_sleeper`: credit a waking sleeper, track it in `sleeper_bonus`.
    fn enqueue_sleeper(&self, rq: &mut FairClockRq, se: &mut FairClockTask, policy: SchedPolicy) {
        if policy == SchedPolicy::Batch {
            return;
        }
        if rq.sleeper_bonus > self.runtime_limit {
            // "Do not boost sleepers if there's too much bonus 'in flight' already"
            // (`__enqueue_sleeper`, 2.6.23; commit b2133c8b1e27): no credit at all.
            se.sleep_start_fair = 0;
            return;
        }
        let slept = rq.fair_clock.wrapping_sub(se.sleep_start_fair);
        let mut delta_fair = if (slept as i64) < 0 { 0 } else { slept }.min(2 * self.runtime_limit);
        if se.load.weight != NICE_0_LOAD {
            delta_fair = calc_weighted(delta_fair, se.load.weight);
        }
        let prev = se.wait_runtime;
        self.add_wait_runtime(se, delta_fair as i64);
        rq.sleeper_bonus += (se.wait_runtime - prev).max(0) as u64;
        se.sleep_start_fair = 0;
    }

    /// `__enqueue_entity`.
    fn insert(ctx: &mut Ctx<FairClockTask>, rq: &mut Rq<FairClockRq>, t: TaskId) {
        let w = ctx.tasks[t].data.load.weight;
        rq.class.timeline.insert(&mut ctx.tasks, t, ctx.ops);
        ctx.tasks[t].data.on_rq = true;
        rq.class.load.add(w);
        rq.class.nr_running += 1;
        rq.nr_running += 1;
    }

    /// `__dequeue_entity`.
    fn remove(ctx: &mut Ctx<FairClockTask>, rq: &mut Rq<FairClockRq>, t: TaskId) {
        let w = ctx.tasks[t].data.load.weight;
        rq.class.timeline.remove(&mut ctx.tasks, t, ctx.ops);
        ctx.tasks[t].data.on_rq = false;
        rq.class.load.sub(w);
        rq.class.nr_running -= 1;
        rq.nr_running -= 1;
    }

    /// `enqueue_entity` after `update_curr`: the sleeper credit (on wakeup), the new key,
    /// the wait start (for a task that is not running), into the tree.
    fn enqueue_entity(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        t: TaskId,
        wakeup: bool,
    ) {
        let policy = ctx.tasks[t].policy;
        let fair_clock = rq.class.fair_clock;
        let is_curr = rq.class.curr == Some(t);
        let mut se = std::mem::take(&mut ctx.tasks[t].data);
        if wakeup {
            self.enqueue_sleeper(&mut rq.class, &mut se, policy);
        }
        if !is_curr {
            se.wait_start_fair = fair_clock;
        }
        se.fair_key = Self::key_of(fair_clock, &se);
        ctx.tasks[t].data = se;
        Self::insert(ctx, rq, t);
    }

    /// `dequeue_entity` after `update_curr`.
    fn dequeue_entity(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        t: TaskId,
        sleep: bool,
    ) {
        if rq.class.curr != Some(t) {
            let mut se = std::mem::take(&mut ctx.tasks[t].data);
            self.wait_end(&rq.class, &mut se);
            ctx.tasks[t].data = se;
        }
        if sleep {
            let (cpu, fc, now) = (rq.cpu, rq.class.fair_clock, ctx.now);
            let load_without = rq.class.load.weight - ctx.tasks[t].data.load.weight;
            let se = &mut ctx.tasks[t].data;
            se.sleep_start_fair = fc;
            se.left_cpu = Some(cpu);
            se.left_load = load_without;
            se.left_at = now;
        }
        Self::remove(ctx, rq, t);
    }

    /// `__check_preempt_curr_fair`: does `se` lead `curr` by more than the granularity?
    fn should_preempt(
        &self,
        rq: &FairClockRq,
        curr: &FairClockTask,
        se: &FairClockTask,
        gran: u64,
    ) -> bool {
        let delta = curr.fair_key.wrapping_sub(se.fair_key) as i64;
        // ideal_runtime is wall time: once curr has had it, any lead preempts.
        let nr = rq.nr_running.max(1) as u64;
        let ideal_runtime = (self.latency / nr).max(self.min_granularity);
        let gran = if curr.sum_exec - curr.prev_sum_exec > ideal_runtime {
            0
        } else {
            gran
        };
        delta > Self::niced_granularity(&curr.load, gran) as i64
    }

    fn task_hot(&self, p: &T, now: u64) -> bool {
        now.saturating_sub(p.data.exec_start) < self.migration_cost
    }
}

impl SchedClass for CfsFairClock {
    type Rq = FairClockRq;
    type TaskData = FairClockTask;

    /// yield_task_fair re-keys the yielder; schedule() then picks the leftmost, which may
    /// be the yielder itself.
    const YIELD_GIVES_WAY: bool = false;

    /// SCHED_IDLE arrived with 2.6.23, as a weight of 2.
    const HAS_SCHED_IDLE: bool = true;

    fn name(&self) -> &'static str {
        "cfs:era=2.6.23"
    }

    fn pick_rule(&self) -> &'static str {
        "CFS 2.6.23: the leftmost task of this CPU's tree by fair_key (fair_clock minus \
         wait_runtime; the running task stays in the tree)"
    }

    fn describe_task(&self, _rq: &Rq<FairClockRq>, task: &Task<FairClockTask>) -> String {
        format!(
            "fair_key {}, wait_runtime {}",
            task.data.fair_key, task.data.wait_runtime
        )
    }

    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }

    fn new_rq(&self, domain: usize, topology: &Topology) -> FairClockRq {
        // Per-CPU layout: the lock domain is the CPU.
        FairClockRq {
            domains: SchedDomains::build(domain, topology),
            ..FairClockRq::default()
        }
    }

    fn task_fork(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        _rq: &mut Rq<FairClockRq>,
        _cpu: CpuId,
        _parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        // sched_fork: wait_runtime and the fair stamps start at 0.
        let c = &mut ctx.tasks[child];
        let (nice, policy) = (c.nice, c.policy);
        c.data = FairClockTask {
            load: LoadWeight::of_task(nice, policy, IDLEPRIO_2_6_24),
            ..FairClockTask::default()
        };
        false
    }

    fn task_exit(
        &self,
        _ctx: &mut Ctx<FairClockTask>,
        _rq: &mut Rq<FairClockRq>,
        _child: TaskId,
        _parent: Option<TaskId>,
    ) {
    }

    fn attr_changed_asleep(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        _rq: &mut Rq<FairClockRq>,
        _cpu: CpuId,
        t: TaskId,
    ) {
        // set_load_weight on a task on no runqueue: the new weight, and wait_runtime starts
        // over (2.6.23's set_load_weight zeroes it whether or not the task is queued).
        let (nice, policy) = (ctx.tasks[t].nice, ctx.tasks[t].policy);
        let se = &mut ctx.tasks[t].data;
        se.load = LoadWeight::of_task(nice, policy, IDLEPRIO_2_6_24);
        se.wait_runtime = 0;
    }

    fn enqueue(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    ) {
        self.update_curr(ctx, &mut rq.class);
        // set_task_cpu: fair stamps move by the difference of the two fair clocks.
        let fc = rq.class.fair_clock;
        {
            let se = &mut ctx.tasks[t].data;
            if let Some(old) = se.left_cpu.take() {
                if old != cpu && se.sleep_start_fair != 0 {
                    let elapsed = ctx.now.saturating_sub(se.left_at);
                    let advanced = (elapsed * NICE_0_LOAD)
                        .checked_div(se.left_load)
                        .unwrap_or(0);
                    se.sleep_start_fair = fc.wrapping_sub(advanced.min(2 * self.runtime_limit));
                }
            }
        }
        match kind {
            EnqueueKind::New => {
                let parent = ctx.tasks[t]
                    .parent
                    .filter(|&p| rq.curr() == Some(p) && rq.class.curr == Some(p));
                match parent {
                    Some(p) => {
                        // task_new_fair: ahead of the parent by its granularity, START_DEBIT.
                        let gran = self.sched_granularity(rq.class.nr_running as u64);
                        let fair_clock = rq.class.fair_clock;
                        let (pkey, pload) = (ctx.tasks[p].data.fair_key, ctx.tasks[p].data.load);
                        let se = &mut ctx.tasks[t].data;
                        se.wait_start_fair = fair_clock;
                        se.fair_key = pkey
                            .wrapping_sub(Self::niced_granularity(&pload, gran))
                            .wrapping_sub(1);
                        se.wait_runtime = -((gran / 2) as i64);
                        Self::insert(ctx, rq, t);
                    }
                    // activate_task(rq, p, 0) when the parent is not the fair task running
                    // here.
                    None => self.enqueue_entity(ctx, rq, t, false),
                }
            }
            EnqueueKind::Wakeup { .. } => self.enqueue_entity(ctx, rq, t, true),
            EnqueueKind::Restore => {
                // set_load_weight: the new weight, and wait_runtime starts over.
                let (nice, policy) = (ctx.tasks[t].nice, ctx.tasks[t].policy);
                let se = &mut ctx.tasks[t].data;
                se.load = LoadWeight::of_task(nice, policy, IDLEPRIO_2_6_24);
                se.wait_runtime = 0;
                self.enqueue_entity(ctx, rq, t, false);
            }
            EnqueueKind::Migrate => self.enqueue_entity(ctx, rq, t, false),
        }
    }

    fn dequeue(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        _cpu: CpuId,
        t: TaskId,
        kind: DequeueKind,
    ) {
        if !ctx.tasks[t].data.on_rq {
            return;
        }
        self.update_curr(ctx, &mut rq.class);
        self.dequeue_entity(ctx, rq, t, kind == DequeueKind::Sleep);
    }

    fn put_prev(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        _cpu: CpuId,
        prev: TaskId,
    ) {
        // put_prev_entity: a prev still queued is accounted and starts waiting.
        if rq.class.curr != Some(prev) {
            return;
        }
        if ctx.tasks[prev].data.on_rq {
            self.update_curr(ctx, &mut rq.class);
            ctx.tasks[prev].data.wait_start_fair = rq.class.fair_clock;
        }
        rq.class.curr = None;
    }

    fn pick_next(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        _cpu: CpuId,
    ) -> Option<TaskId> {
        let next = rq.class.timeline.first()?;
        // set_next_entity: the wait ends (credited), a run period starts; it stays in the tree.
        let now = ctx.now;
        let mut se = std::mem::take(&mut ctx.tasks[next].data);
        self.wait_end(&rq.class, &mut se);
        se.exec_start = now;
        se.prev_sum_exec = se.sum_exec;
        ctx.tasks[next].data = se;
        rq.class.curr = Some(next);
        Some(next)
    }

    fn task_tick(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        if rq.class.curr != Some(curr) || !ctx.tasks[curr].data.on_rq {
            return false;
        }
        // entity_tick: dequeue and re-enqueue curr to move it to its new key.
        self.update_curr(ctx, &mut rq.class);
        Self::remove(ctx, rq, curr);
        self.enqueue_entity(ctx, rq, curr, false);
        let Some(next) = rq.class.timeline.first() else {
            return false;
        };
        if next == curr {
            return false;
        }
        let gran = self.sched_granularity(rq.class.nr_running as u64);
        self.should_preempt(
            &rq.class,
            &ctx.tasks[curr].data,
            &ctx.tasks[next].data,
            gran,
        )
    }

    fn yield_task(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        // yield_task_fair: dequeue and enqueue to update its position in the tree.
        if rq.class.curr == Some(curr) && ctx.tasks[curr].data.on_rq {
            self.update_curr(ctx, &mut rq.class);
            Self::remove(ctx, rq, curr);
            self.enqueue_entity(ctx, rq, curr, false);
        }
        true
    }

    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<FairClockTask>,
        rq: &mut Rq<FairClockRq>,
        cpu: CpuId,
        woken: TaskId,
        _sync: bool,
    ) -> bool {
        let Some(curr) = rq.curr_on(cpu) else {
            return false;
        };
        if rq.class.curr != Some(curr) {
            return false;
        }
        // check_preempt_curr_fair: batch wakees use the (coarse) batch granularity.
        let gran = if ctx.tasks[woken].policy == SchedPolicy::Batch {
            self.batch_wakeup_granularity
        } else {
            self.wakeup_granularity
        };
        self.should_preempt(
            &rq.class,
            &ctx.tasks[curr].data,
            &ctx.tasks[woken].data,
            gran,
        )
    }

    fn select_cpu(
        &self,
        tasks: &TaskView<'_, FairClockTask>,
        view: &CpuView,
        _ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let w = tasks[t].data.load.weight;
        sched_domains::select_cpu(tasks, view, t, waker_cpu, kind, w, IdleSiblings::Smt)
    }

    fn load(&self, rq: &Rq<FairClockRq>, _cpu: CpuId) -> u64 {
        rq.class.load.weight
    }

    fn for_each_queued(
        &self,
        rq: &Rq<FairClockRq>,
        tasks: &TaskView<'_, FairClockTask>,
        f: &mut dyn FnMut(TaskId),
    ) {
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
        ctx: &mut Ctx<FairClockTask>,
        this: &mut Rq<FairClockRq>,
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
        ctx: &mut Ctx<FairClockTask>,
        this: &mut Rq<FairClockRq>,
        this_cpu: CpuId,
        src: &mut Rq<FairClockRq>,
        _src_cpu: CpuId,
        kind: CpuIdle,
        imbalance: usize,
        _rt: &dyn PassiveRt<FairClockRq, FairClockTask>,
    ) -> PullOutcome {
        let now = ctx.now;
        PullBudget::new(imbalance).drain(
            ctx,
            src,
            this_cpu,
            kind.is_idle(),
            |q| &q.timeline,
            |q, t, p| {
                // task_running: never pulled.
                (q.curr != Some(t)).then(|| (p.data.load.weight, self.task_hot(p, now)))
            },
            |ctx, src, t| {
                // pull_task: dequeue (the wait so far credited on the source), set_task_cpu,
                // enqueue here (a new key against this fair clock).
                self.update_curr(ctx, &mut src.class);
                self.dequeue_entity(ctx, src, t, false);
                ctx.tasks[t].cpu = this_cpu;
                ctx.tasks[t].data.left_cpu = None;
                self.update_curr(ctx, &mut this.class);
                self.enqueue_entity(ctx, this, t, false);
                this.curr()
                    .filter(|&c| this.class.curr == Some(c))
                    .is_some_and(|c| {
                        self.should_preempt(
                            &this.class,
                            &ctx.tasks[c].data,
                            &ctx.tasks[t].data,
                            self.wakeup_granularity,
                        )
                    })
            },
        )
    }
}

#[cfg(test)]
mod tests;

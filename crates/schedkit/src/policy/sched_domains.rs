//! Scheduling domains (Nick Piggin, 2.6.7; `kernel/sched.c` of 2.6.2x): each CPU sees the
//! machine as a hierarchy of ever larger spans of CPUs, built from the topology: SMT siblings
//! of one core, the cores sharing a cache (MC), the CPUs of one node (CPU), the whole machine
//! (NUMA). Each level balances between its groups (the spans of the level below) at its own
//! interval, with its own tolerance for imbalance. The fair classes (`cfs` of every era,
//! `eevdf`) balance through this; they differ in the load they publish (the runqueue's weight
//! for the 2.6.2x eras, its PELT average for EEVDF) and in how far a wakeup looks for an idle
//! CPU.
//!
//! Constants, from the 2.6.2x `include/linux/topology.h` initialisers (designs.md §2.8 gives
//! SD_CPU_INIT's): SMT `SD_SIBLING_INIT` (intervals 1..2 ms, busy factor 64, imbalance_pct
//! 110); MC `SD_MC_INIT` (1..4 ms, 64, 125); CPU `SD_CPU_INIT` (1..4 ms, 64, 125). A NUMA level
//! takes SD_CPU_INIT's values here (the arch-specific SD_NODE_INIT is not modelled).
//!
//! `load_balance` per level, as 2.6.2x's `rebalance_domains` ran it, simplified (said so):
//! - due every `balance_interval × busy_factor` ms on a busy CPU (the core asks no more
//!   often than the smallest such interval, `balance_interval_ticks`); an idle CPU balances
//!   every `min_interval` (1 ms, at least one tick) and at the new-idle balance of `schedule()`;
//! - `find_busiest_group`: the group with the highest average load per CPU, other than this
//!   CPU's, holding a runqueue with two or more tasks; nothing to do unless `100 × busiest >
//!   imbalance_pct × local` and the busiest is above the domain's average;
//! - `imbalance = min(busiest − average, average − local)` (per CPU; the kernel scales by
//!   `cpu_power`, equal here), at least one nice-0 task's weight when this CPU is idle
//!   (`fix_small_imbalance`, reduced);
//! - `find_busiest_queue`: the busiest group's most loaded runqueue with two or more tasks;
//! - a CPU with nothing to run counts as unloaded, whatever its (PELT) average still says;
//! - the interval doubles (up to `max_interval`) while the level is balanced and returns to
//!   `min_interval` when an imbalance is found. Not modelled: `cpu_load[]` index selection
//!   (source/target load smoothing), active balancing, `nr_balance_failed`.

use crate::class::{Busiest, CpuView, Ctx, PullOutcome, Rq, WakeKind};
use crate::ds::rbtree::{RbEntry, RbTree};
use crate::ds::work::OpCounter;
use crate::machine::Topology;
use crate::task::{CpuId, Task, TaskId, TaskView};

/// `min_interval` of every SD_*_INIT level, ms.
const MIN_INTERVAL_MS: u64 = 1;
/// `busy_factor` of every SD_*_INIT level.
const BUSY_FACTOR: u64 = 64;

/// How often the core should run this CPU's balancer (`SchedClass::balance_interval_ticks`):
/// the earliest any level can be due, `min_interval` ms when idle and `min_interval ×
/// busy_factor` ms when busy (2.6.2x's `rq->next_balance`), so that a busy CPU does not take
/// its runqueue lock at every tick to find nothing due. Each level then keeps its own
/// (doubling) interval in `find_busiest`.
pub fn balance_interval_ticks(idle: bool, hz: u32) -> Option<u64> {
    let ms = if idle {
        MIN_INTERVAL_MS
    } else {
        MIN_INTERVAL_MS * BUSY_FACTOR
    };
    Some((ms * hz as u64 / 1000).max(1))
}

/// One level of a CPU's domain hierarchy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainLevel {
    pub name: &'static str,
    /// The CPUs it spans (sorted).
    pub span: Vec<CpuId>,
    /// Its groups: the spans of the level below (single CPUs at the bottom).
    pub groups: Vec<Vec<CpuId>>,
    pub imbalance_pct: u64,
    pub busy_factor: u64,
    pub min_interval_ms: u64,
    pub max_interval_ms: u64,
}

/// A CPU's domains, lowest first, and their balancing state.
#[derive(Clone, Debug, Default)]
pub struct SchedDomains {
    pub levels: Vec<DomainLevel>,
    /// Per level: when it last balanced (ns) and its current interval (ms).
    last_balance: Vec<u64>,
    interval_ms: Vec<u64>,
}

/// Where a wakeup looks for an idle CPU near its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleSiblings {
    /// 2.6.2x `wake_idle`: the SMT siblings of the target (SD_WAKE_IDLE domains).
    Smt,
    /// `select_idle_sibling` of today: every CPU sharing the target's last-level cache.
    Llc,
}

/// The CPUs sharing `cpu`'s value of `key`, sorted.
fn peers(topology: &Topology, cpu: CpuId, key: &[usize]) -> Vec<CpuId> {
    (0..topology.ncpus)
        .filter(|&c| key[c] == key[cpu])
        .collect()
}

impl SchedDomains {
    /// `build_sched_domains` for `cpu`: a level for each topology tier that spans more CPUs
    /// than the one below it.
    pub fn build(cpu: CpuId, topology: &Topology) -> SchedDomains {
        let n = topology.ncpus;
        if cpu >= n || n < 2 {
            return SchedDomains::default();
        }
        let all: Vec<usize> = vec![0; n];
        let lo = MIN_INTERVAL_MS;
        let tiers: [(&'static str, &[usize], u64, u64, u64); 4] = [
            ("SMT", &topology.core, 110, lo, 2),
            ("MC", &topology.cache, 125, lo, 4),
            ("CPU", &topology.node, 125, lo, 4),
            ("NUMA", &all, 125, lo, 4),
        ];
        // The partition of the machine at the tier below, as group lists.
        let mut below: Vec<Vec<CpuId>> = (0..n).map(|c| vec![c]).collect();
        let mut levels = Vec::new();
        for (name, key, pct, lo, hi) in tiers {
            let span = peers(topology, cpu, key);
            let prev_len = levels.last().map_or(1, |l: &DomainLevel| l.span.len());
            // This tier's partition: every CPU's peers (for the next level's groups).
            let mut partition: Vec<Vec<CpuId>> = Vec::new();
            for c in 0..n {
                let p = peers(topology, c, key);
                if !partition.contains(&p) {
                    partition.push(p);
                }
            }
            if span.len() > prev_len {
                let groups: Vec<Vec<CpuId>> = below
                    .iter()
                    .filter(|g| g.iter().all(|c| span.contains(c)))
                    .cloned()
                    .collect();
                levels.push(DomainLevel {
                    name,
                    span,
                    groups,
                    imbalance_pct: pct,
                    busy_factor: BUSY_FACTOR,
                    min_interval_ms: lo,
                    max_interval_ms: hi,
                });
            }
            // A tier that does not widen the span keeps the finer partition below.
            if partition.len() < below.len() {
                below = partition;
            }
        }
        let k = levels.len();
        SchedDomains {
            interval_ms: levels.iter().map(|l| l.min_interval_ms).collect(),
            last_balance: vec![0; k],
            levels,
        }
    }

    /// `rebalance_domains` / `idle_balance` for `this_cpu`, lowest level first: the first
    /// level that is due and finds an imbalance names the runqueue to pull from.
    pub fn find_busiest(
        &mut self,
        ops: &mut OpCounter,
        now: u64,
        this_cpu: CpuId,
        view: &CpuView,
        idle: bool,
    ) -> Option<Busiest> {
        for i in 0..self.levels.len() {
            let sd = &self.levels[i];
            if !idle {
                let every = self.interval_ms[i] * sd.busy_factor * 1_000_000;
                if now < self.last_balance[i].saturating_add(every) {
                    continue;
                }
            }
            self.last_balance[i] = now;
            match find_busiest_group(ops, sd, this_cpu, view, idle) {
                Some(b) => {
                    self.interval_ms[i] = sd.min_interval_ms;
                    return Some(b);
                }
                None => {
                    self.interval_ms[i] = (self.interval_ms[i] * 2).min(sd.max_interval_ms);
                }
            }
        }
        None
    }
}

/// `find_busiest_group` + `find_busiest_queue` within one level.
fn find_busiest_group(
    ops: &mut OpCounter,
    sd: &DomainLevel,
    this_cpu: CpuId,
    view: &CpuView,
    idle: bool,
) -> Option<Busiest> {
    // A CPU with nothing to run has spare capacity whatever its load average still says
    // (PELT decays over tens of ms): it counts as unloaded and pulls from an overloaded group
    // (today's `group_has_spare` / `migrate_task` case; for the 2.6.2x eras an idle CPU's
    // weighted load is 0 anyway).
    let spare = idle && view.cpu(this_cpu).nr_running == 0;
    let mut total = 0u64;
    let mut local_avg = 0u64;
    let mut busiest: Option<(usize, u64)> = None;
    for (gi, g) in sd.groups.iter().enumerate() {
        let mut sum = 0u64;
        let mut overloaded = false;
        for &c in g {
            ops.remote_touches += 1;
            if !(spare && c == this_cpu) {
                sum += view.cpu(c).load;
            }
            overloaded |= view.cpu(c).nr_running >= 2;
        }
        total += sum;
        let avg = sum / g.len() as u64;
        if g.contains(&this_cpu) {
            local_avg = avg;
        } else if overloaded && busiest.is_none_or(|(_, b)| avg > b) {
            busiest = Some((gi, avg));
        }
    }
    let (gi, max_avg) = busiest?;
    let avg = total / sd.span.len() as u64;
    if max_avg * 100 <= local_avg * sd.imbalance_pct || max_avg <= avg {
        return None;
    }
    let mut imbalance = (max_avg - avg).min(avg.saturating_sub(local_avg));
    if idle {
        imbalance = imbalance.max(super::weight::NICE_0_LOAD);
    }
    if imbalance == 0 {
        return None;
    }
    let cpu = sd.groups[gi]
        .iter()
        .copied()
        .filter(|&c| view.cpu(c).nr_running >= 2)
        .max_by_key(|&c| (view.cpu(c).load, std::cmp::Reverse(c)))?;
    Some(Busiest {
        cpu,
        imbalance: imbalance as usize,
    })
}

/// The imbalance tolerance of the lowest level spanning both CPUs.
fn pct_between(topology: &Topology, a: CpuId, b: CpuId) -> u64 {
    if topology.core[a] == topology.core[b] {
        110
    } else {
        125
    }
}

/// `select_task_rq_fair` of the 2.6.2x eras and today, reduced to its decisions:
/// - fork (SD_BALANCE_FORK, `sched_balance_self` → `find_idlest_group`/`find_idlest_cpu`):
///   from the widest topology level down (node, package, last-level cache, L2, core), the
///   group of allowed CPUs with the lowest average load, the parent's group on a tie; then
///   the least loaded allowed CPU of the chosen group, the parent's on a tie. Today's kernel
///   (`siblings == Llc`, EEVDF) first compares how many idle CPUs each group has
///   (`update_sg_wakeup_stats`: a `group_has_spare` group with more idle CPUs wins) and takes
///   an idle CPU of the chosen group before a loaded one (`find_idlest_group_cpu`), so a lagging
///   PELT average does not decide. Simplified: the kernel keeps the parent's group unless
///   another is lighter by half the level's `imbalance_pct`; here any lighter group wins (on a
///   flat machine the choice is the least loaded CPU either way);
/// - wakeup: `wake_affine` between the waker's CPU and the task's previous one, then an idle
///   CPU near that target. The task goes to the waker's CPU when doing so leaves it no more
///   than `imbalance_pct` percent as loaded as the previous CPU (on a sync wakeup one nice-0
///   task is discounted from the waker's CPU: the waker is about to sleep); else it stays
///   with its previous CPU. If
///   the target is busy, an idle allowed CPU among its `siblings` is taken instead: for the
///   2.6.2x `wake_idle` the first idle SMT sibling; for today's `select_idle_sibling` first a
///   whole idle core of the target's LLC (`select_idle_core`), then any idle CPU of it
///   (`select_idle_cpu`).
///   Simplified: 2.6.24's `wake_affine` also weighed the pair's overlap and the task's cache
///   hotness; not modelled.
#[allow(clippy::too_many_arguments)]
pub fn select_cpu<D>(
    tasks: &TaskView<'_, D>,
    view: &CpuView,
    t: TaskId,
    waker_cpu: CpuId,
    kind: WakeKind,
    task_weight: u64,
    siblings: IdleSiblings,
) -> CpuId {
    let p = &tasks[t];
    let n = view.ncpus();
    let allowed = |c: CpuId| c < n && p.cpus_allowed.contains(c);
    let first = p.cpus_allowed.iter(n).next().unwrap_or(0);
    match kind {
        WakeKind::Fork => {
            let start = if allowed(waker_cpu) { waker_cpu } else { first };
            let topo = view.topology;
            let by_idle = siblings == IdleSiblings::Llc;
            let idle = |c: CpuId| view.idle_cpu(c);
            let mut cand: Vec<CpuId> = p.cpus_allowed.iter(n).collect();
            // find_idlest_group at each level that splits the candidates.
            for key in [&topo.node, &topo.package, &topo.cache, &topo.l2, &topo.core] {
                // (key, summed load, CPUs, idle CPUs)
                let mut groups: Vec<(usize, u64, u64, u64)> = Vec::new();
                for &c in &cand {
                    let i = u64::from(idle(c));
                    match groups.iter_mut().find(|g| g.0 == key[c]) {
                        Some(g) => {
                            g.1 += view.cpu(c).load;
                            g.2 += 1;
                            g.3 += i;
                        }
                        None => groups.push((key[c], view.cpu(c).load, 1, i)),
                    }
                }
                if groups.len() < 2 {
                    continue;
                }
                let local = groups.iter().position(|g| g.0 == key[start]);
                let mut best = local.unwrap_or(0);
                for (i, g) in groups.iter().enumerate() {
                    let b = &groups[best];
                    // Average loads compared without dividing: a/x < b/y  <=>  a*y < b*x.
                    let lighter = (g.1 as u128) * (b.2 as u128) < (b.1 as u128) * (g.2 as u128);
                    let better = if by_idle && g.3 != b.3 {
                        g.3 > b.3
                    } else {
                        lighter
                    };
                    if better {
                        best = i;
                    }
                }
                let chosen = groups[best].0;
                cand.retain(|&c| key[c] == chosen);
            }
            if by_idle {
                if let Some(&c) = cand.iter().find(|&&c| idle(c)) {
                    return c;
                }
            }
            let mut best = if cand.contains(&start) {
                start
            } else {
                cand[0]
            };
            for &c in &cand {
                if view.cpu(c).load < view.cpu(best).load {
                    best = c;
                }
            }
            best
        }
        WakeKind::Wakeup { sync } => {
            let prev = if allowed(p.cpu) { p.cpu } else { first };
            let mut target = prev;
            if waker_cpu != prev && allowed(waker_cpu) {
                let mut this_load = view.cpu(waker_cpu).load;
                if sync {
                    // The waker is about to sleep: discount one nice-0 task (2.6.11's
                    // `this_load -= SCHED_LOAD_SCALE`, designs.md §2.7).
                    this_load = this_load.saturating_sub(super::weight::NICE_0_LOAD);
                }
                let prev_load = view.cpu(prev).load;
                let pct = pct_between(view.topology, waker_cpu, prev);
                if (this_load + task_weight) * 100 <= prev_load * pct {
                    target = waker_cpu;
                }
            }
            if view.idle_cpu(target) {
                return target;
            }
            let topo = view.topology;
            let idle = |c: CpuId| view.idle_cpu(c);
            let near = |c: CpuId| match siblings {
                IdleSiblings::Smt => topo.core[c] == topo.core[target],
                IdleSiblings::Llc => topo.cache[c] == topo.cache[target],
            };
            if siblings == IdleSiblings::Llc {
                // select_idle_core: a core whose every thread is idle.
                let whole_core_idle =
                    |c: CpuId| (0..n).filter(|&s| topo.core[s] == topo.core[c]).all(idle);
                if let Some(c) = p
                    .cpus_allowed
                    .iter(n)
                    .find(|&c| near(c) && idle(c) && whole_core_idle(c))
                {
                    return c;
                }
            }
            p.cpus_allowed
                .iter(n)
                .find(|&c| near(c) && idle(c))
                .unwrap_or(target)
        }
    }
}

/// `select_task_rq_fair` of Linux 6.18 for a wakeup (fair.c of v6.18, 8569-8636), on the
/// fast path a wakeup takes when no domain has SD_BALANCE_WAKE (none has by `sd_init`):
/// - `wake_affine` between the waker's CPU and the task's previous one, in the lowest domain
///   spanning both: WA_IDLE (`wake_affine_idle`: an idle waker CPU sharing the cache with the
///   previous one takes the task unless the previous one is idle too; a sync waker alone on
///   its CPU takes it; an idle previous CPU keeps it), then WA_WEIGHT with WA_BIAS
///   (`wake_affine_weight`: the waker's CPU if its load plus the task's, less the waker's own
///   on a sync wakeup, times 100 is below the previous CPU's load less the task's times
///   `100 + (imbalance_pct − 100) / 2`);
/// - `select_idle_sibling(p, prev, target)`: the target if idle, else the previous CPU if it
///   shares the cache and is idle, else an idle core of the target's LLC where SMT is on
///   (`select_idle_core`), else any idle CPU of it (`select_idle_cpu`), else the target.
///
/// With `wake_wide` (the class's flip counts say so) no affine wakeup is tried.
///
/// Simplified, and said so: the loads are the runqueues' PELT averages and the tasks' weights
/// (the kernel compares per-entity PELT loads, `task_h_load`); not modelled: `recent_used_cpu`,
/// `sched_idle_cpu` (a CPU running only SCHED_IDLE tasks counts as idle), `select_idle_smt`
/// on the previous CPU's siblings, and SIS_UTIL's limit on how many CPUs `select_idle_cpu`
/// scans (which skips the scan altogether when the LLC is busy: fair.c 7700). Fork placement
/// is [`select_cpu`]'s `find_idlest_group` walk.
#[allow(clippy::too_many_arguments)]
pub fn select_cpu_v6_18<D>(
    tasks: &TaskView<'_, D>,
    view: &CpuView,
    t: TaskId,
    waker_cpu: CpuId,
    kind: WakeKind,
    task_load: u64,
    waker_load: u64,
    wake_wide: bool,
) -> CpuId {
    let WakeKind::Wakeup { sync } = kind else {
        return select_cpu(
            tasks,
            view,
            t,
            waker_cpu,
            kind,
            task_load,
            IdleSiblings::Llc,
        );
    };
    let p = &tasks[t];
    let n = view.ncpus();
    let allowed = |c: CpuId| c < n && p.cpus_allowed.contains(c);
    let first = p.cpus_allowed.iter(n).next().unwrap_or(0);
    let prev = if allowed(p.cpu) { p.cpu } else { first };
    let topo = view.topology;
    let idle = |c: CpuId| view.idle_cpu(c);
    let share_cache = |a: CpuId, b: CpuId| topo.cache[a] == topo.cache[b];
    let mut target = prev;
    if !wake_wide && waker_cpu != prev && allowed(waker_cpu) {
        // wake_affine_idle
        let mut affine = None;
        if idle(waker_cpu) && share_cache(waker_cpu, prev) {
            affine = Some(if idle(prev) { prev } else { waker_cpu });
        } else if sync && view.cpu(waker_cpu).nr_running == 1 {
            affine = Some(waker_cpu);
        } else if idle(prev) {
            affine = Some(prev);
        }
        // wake_affine_weight, WA_BIAS
        let affine = affine.unwrap_or_else(|| {
            let pct = pct_between_v6_18(topo, waker_cpu, prev);
            let mut this_load = view.cpu(waker_cpu).load as i128;
            if sync {
                // The waker (`current`) is about to sleep: its own load comes off.
                let current = waker_load as i128;
                if current > this_load {
                    return waker_cpu;
                }
                this_load -= current;
            }
            let task = task_load as i128;
            let this_eff = (this_load + task) * 100;
            let mut prev_eff =
                (view.cpu(prev).load as i128 - task) * (100 + (pct as i128 - 100) / 2);
            if sync {
                prev_eff += 1;
            }
            if this_eff < prev_eff {
                waker_cpu
            } else {
                prev
            }
        });
        if affine == waker_cpu {
            target = waker_cpu;
        }
    }
    // select_idle_sibling
    if idle(target) {
        return target;
    }
    if prev != target && share_cache(prev, target) && idle(prev) {
        return prev;
    }
    let near = |c: CpuId| share_cache(c, target);
    let smt = (0..n).any(|c| topo.core.iter().filter(|&&k| k == topo.core[c]).count() > 1);
    if smt {
        let whole_core_idle = |c: CpuId| (0..n).filter(|&s| topo.core[s] == topo.core[c]).all(idle);
        if let Some(c) = p
            .cpus_allowed
            .iter(n)
            .find(|&c| near(c) && idle(c) && whole_core_idle(c))
        {
            return c;
        }
    }
    // select_idle_cpu: for_each_cpu_wrap from target + 1 over the LLC.
    (1..=n)
        .map(|k| (target + k) % n)
        .find(|&c| allowed(c) && near(c) && idle(c))
        .unwrap_or(target)
}

/// `imbalance_pct` of the lowest 6.18 domain spanning both CPUs (`sd_init`, topology.c
/// 1646-1692: 117 for every level, 110 between SMT siblings).
fn pct_between_v6_18(topology: &Topology, a: CpuId, b: CpuId) -> u64 {
    if topology.core[a] == topology.core[b] {
        110
    } else {
        117
    }
}

/// `balance_tasks`' bookkeeping, shared by the fair classes' `move_tasks`: how much weight
/// is left to move, and what was moved.
pub struct PullBudget {
    imbalance: u64,
    moved_load: u64,
    pub out: PullOutcome,
}

impl PullBudget {
    pub fn new(imbalance: usize) -> PullBudget {
        PullBudget {
            imbalance: imbalance as u64,
            moved_load: 0,
            out: PullOutcome::default(),
        }
    }

    /// `can_migrate_task` + the weight test: `p` (of load weight `weight`) may be pulled to
    /// `this_cpu` if allowed there, not cache-hot (unless this CPU is idle: then a hot task
    /// is better than nothing), and not heavier than twice what is left to move.
    pub fn admits<D>(
        &self,
        p: &Task<D>,
        weight: u64,
        this_cpu: CpuId,
        idle: bool,
        hot: bool,
    ) -> bool {
        let left = self.imbalance.saturating_sub(self.moved_load);
        p.cpus_allowed.contains(this_cpu) && (idle || !hot) && weight / 2 <= left
    }

    /// A task of `weight` was moved; whether the imbalance is now covered.
    pub fn took(&mut self, weight: u64) -> bool {
        self.out.moved += 1;
        self.moved_load += weight;
        self.moved_load >= self.imbalance
    }

    /// `balance_tasks`' loop, the skeleton of every fair class's `move_tasks`: walks `src`'s
    /// tree (`queue`) in order, reading each task's successor before the task can be moved
    /// off it, and counts a remote touch per task looked at. `candidate` says whether the
    /// class could move a task at all (`None` skips it: the running task, a delayed one) and
    /// if so its load weight and whether it is cache-hot; what [`PullBudget::admits`] lets
    /// through, `detach_attach` moves to this CPU (the class's `pull_task`), returning
    /// whether this CPU's runner should yield to it. Stops once the imbalance is covered.
    #[allow(clippy::too_many_arguments)]
    pub fn drain<R, D, E: RbEntry<D>>(
        mut self,
        ctx: &mut Ctx<'_, D>,
        src: &mut Rq<R>,
        this_cpu: CpuId,
        idle: bool,
        queue: impl Fn(&R) -> &RbTree<E>,
        candidate: impl Fn(&R, TaskId, &Task<D>) -> Option<(u64, bool)>,
        mut detach_attach: impl FnMut(&mut Ctx<'_, D>, &mut Rq<R>, TaskId) -> bool,
    ) -> PullOutcome {
        let mut x = queue(&src.class).first();
        while let Some(t) = x {
            x = queue(&src.class).next(&ctx.tasks, t);
            ctx.ops.remote_touches += 1;
            let Some((weight, hot)) = candidate(&src.class, t, &ctx.tasks[t]) else {
                continue;
            };
            if !self.admits(&ctx.tasks[t], weight, this_cpu, idle, hot) {
                continue;
            }
            self.out.resched |= detach_attach(ctx, src, t);
            if self.took(weight) {
                break;
            }
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::Cpus;
    use crate::machine::TopologySpec;

    fn topo(cpus: usize, smt: usize, per_cache: usize, per_node: Option<usize>) -> Topology {
        Topology::from_spec(&TopologySpec {
            cpus,
            threads_per_core: smt,
            cpus_per_cache: per_cache,
            cpus_per_node: per_node,
            cpus_per_l2: None,
            cpus_per_package: None,
        })
    }

    #[test]
    fn levels_follow_the_topology() {
        // 2 nodes x 2 caches x 2 cores x 2 threads = 16 CPUs.
        let t = topo(16, 2, 4, Some(8));
        let d = SchedDomains::build(5, &t);
        let names: Vec<_> = d.levels.iter().map(|l| l.name).collect();
        assert_eq!(names, ["SMT", "MC", "CPU", "NUMA"]);
        assert_eq!(d.levels[0].span, vec![4, 5]);
        assert_eq!(d.levels[0].groups, vec![vec![4], vec![5]]);
        assert_eq!(d.levels[1].span, vec![4, 5, 6, 7]);
        assert_eq!(d.levels[1].groups, vec![vec![4, 5], vec![6, 7]]);
        assert_eq!(d.levels[2].groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(d.levels[3].groups.len(), 2);
        assert_eq!(d.levels[0].imbalance_pct, 110);
        // A flat 2-way SMP (separate caches, one node): one level, "CPU".
        let d = SchedDomains::build(1, &topo(2, 1, 1, None));
        assert_eq!(d.levels.len(), 1);
        assert_eq!(d.levels[0].name, "CPU");
        assert_eq!(d.levels[0].groups, vec![vec![0], vec![1]]);
        // Two CPUs sharing a cache: "MC".
        assert_eq!(
            SchedDomains::build(0, &topo(2, 1, 2, None)).levels[0].name,
            "MC"
        );
        // One CPU: nothing to balance.
        assert!(SchedDomains::build(0, &topo(1, 1, 1, None))
            .levels
            .is_empty());
    }

    fn view_of<'a>(status: &'a [crate::class::CpuStatus], t: &'a Topology) -> CpuView<'a> {
        CpuView {
            cpus: Cpus::Snapshot(status),
            topology: t,
            now: 0,
            hz: 1000,
        }
    }

    fn cpu(nr: usize, load: u64) -> crate::class::CpuStatus {
        crate::class::CpuStatus {
            curr: None,
            nr_running: nr,
            load,
            last_schedule_ns: 0,
        }
    }

    #[test]
    fn busiest_group_needs_the_imbalance_pct_and_intervals_back_off() {
        let t = topo(4, 1, 2, None); // two caches of two CPUs
        let mut d = SchedDomains::build(0, &t);
        assert_eq!(d.levels.len(), 2); // MC {0,1}, CPU {0..3}
        let mut ops = OpCounter::default();
        // CPU 0 has 1 task (1024); CPU 2 has 3 (3072): MC {0,1} is balanced enough (CPU 1
        // idle, no overloaded group); at the CPU level group {2,3} averages 1536 against 512.
        let st = [cpu(1, 1024), cpu(0, 0), cpu(3, 3072), cpu(0, 0)];
        let v = view_of(&st, &t);
        let s = 1_000_000_000;
        let b = d
            .find_busiest(&mut ops, s, 0, &v, false)
            .expect("imbalanced");
        assert_eq!(b.cpu, 2);
        // avg 1024; min(1536 - 1024, 1024 - 512) = 512.
        assert_eq!(b.imbalance, 512);
        // MC was balanced (its interval doubled); CPU found work (back to its minimum).
        assert_eq!(d.interval_ms, vec![2, 1]);
        // Not due again on a busy CPU until interval x busy_factor (64 ms, 128 ms) later.
        assert!(d
            .find_busiest(&mut ops, s + 10_000_000, 0, &v, false)
            .is_none());
        assert_eq!(d.interval_ms, vec![2, 1]);
        // Within imbalance_pct (125 %): nothing to do; each interval doubles up to its max.
        let st = [cpu(2, 2048), cpu(2, 2048), cpu(2, 2048), cpu(2, 2400)];
        let v = view_of(&st, &t);
        assert!(d.find_busiest(&mut ops, 2 * s, 0, &v, false).is_none());
        assert_eq!(d.interval_ms, vec![4, 2]);
        assert!(d.find_busiest(&mut ops, 3 * s, 0, &v, false).is_none());
        assert_eq!(d.interval_ms, vec![4, 4]);
        // An idle CPU balances at once and pulls at least one nice-0 task's worth.
        let st = [cpu(0, 0), cpu(0, 0), cpu(2, 2048), cpu(0, 0)];
        let v = view_of(&st, &t);
        let b = d.find_busiest(&mut ops, 3 * s + 1, 0, &v, true).unwrap();
        assert_eq!((b.cpu, b.imbalance), (2, 1024));
    }

    #[test]
    fn an_idle_cpu_pulls_despite_a_stale_average() {
        let t = topo(2, 1, 1, None);
        let mut d = SchedDomains::build(0, &t);
        let mut ops = OpCounter::default();
        // CPU 0 went idle with a PELT average still at 2000; CPU 1 runs two tasks at 1500.
        let st = [cpu(0, 2000), cpu(2, 1500)];
        let v = view_of(&st, &t);
        let b = d
            .find_busiest(&mut ops, 0, 0, &v, true)
            .expect("spare capacity pulls");
        assert_eq!(b.cpu, 1);
        // Busy with that same average it would not (1500 < 125 % of 2000).
        let st = [cpu(1, 2000), cpu(2, 1500)];
        let v = view_of(&st, &t);
        assert!(d
            .find_busiest(&mut ops, 1_000_000_000, 0, &v, false)
            .is_none());
    }

    #[test]
    fn wake_affine_and_idle_siblings() {
        use crate::task::{CpuMask, Tasks};
        // 4 CPUs: two cores of two SMT threads, one cache.
        let t = topo(4, 2, 4, None);
        let mut tasks: Tasks<()> = Tasks::new();
        let p = tasks.spawn();
        tasks[p].cpu = 3;
        tasks[p].cpus_allowed = CpuMask::all();
        let wake = WakeKind::Wakeup { sync: false };
        let mut sel = |st: &[crate::class::CpuStatus], sib| {
            let v = view_of(st, &t);
            select_cpu(&tasks.view(), &v, p, 0, wake, 1024, sib)
        };
        // Waker's CPU 0 at 1024, previous CPU 3 at 2048: (1024 + 1024) * 100 <= 2048 * 125,
        // so the task goes to the waker's CPU, which is busy; SMT search: CPU 1 (its sibling)
        // is idle.
        let mut st = [cpu(1, 1024), cpu(0, 0), cpu(1, 1024), cpu(2, 2048)];
        st[0].curr = Some(TaskId(9));
        st[2].curr = Some(TaskId(8));
        st[3].curr = Some(TaskId(7));
        assert_eq!(sel(&st, IdleSiblings::Smt), 1);
        // Previous CPU lighter (1024): stays there (3); it is busy and its SMT sibling 2 is
        // busy: no idle sibling, so 3. Over the whole cache, CPU 1 is idle.
        st[3].load = 1024;
        assert_eq!(sel(&st, IdleSiblings::Smt), 3);
        assert_eq!(sel(&st, IdleSiblings::Llc), 1);
        // Today's select_idle_sibling prefers a whole idle core: with CPUs 1 and 2 idle but
        // CPU 2's sibling 3 busy and CPU 1's sibling 0 busy, there is none, so CPU 1; with
        // CPU 3 idle too, core {2, 3} is idle and CPU 2 is taken over CPU 1.
        st[2] = cpu(0, 0);
        assert_eq!(sel(&st, IdleSiblings::Llc), 1);
        tasks[p].cpu = 0;
        let mut st2 = [cpu(1, 1024), cpu(0, 0), cpu(0, 0), cpu(0, 0)];
        st2[0].curr = Some(TaskId(9));
        let v = view_of(&st2, &t);
        assert_eq!(
            select_cpu(&tasks.view(), &v, p, 0, wake, 1024, IdleSiblings::Llc),
            2
        );
        assert_eq!(
            select_cpu(&tasks.view(), &v, p, 0, wake, 1024, IdleSiblings::Smt),
            1
        );
    }

    #[test]
    fn fork_goes_to_the_idlest_group_level_by_level() {
        use crate::task::{CpuMask, Tasks};
        // Two cores of two threads: the parent runs on CPU 0 (load 1024), the rest idle. A flat
        // least-loaded scan would take CPU 1, the parent's own sibling; find_idlest_group
        // takes the idle core {2, 3} first.
        let t = topo(4, 2, 4, None);
        let mut tasks: Tasks<()> = Tasks::new();
        let p = tasks.spawn();
        tasks[p].cpus_allowed = CpuMask::all();
        let st = [cpu(1, 1024), cpu(0, 0), cpu(0, 0), cpu(0, 0)];
        let v = view_of(&st, &t);
        assert_eq!(
            select_cpu(
                &tasks.view(),
                &v,
                p,
                0,
                WakeKind::Fork,
                1024,
                IdleSiblings::Smt
            ),
            2
        );
        // On a flat machine it is the least loaded CPU, the parent's on a tie.
        let flat = topo(4, 1, 1, None);
        let st = [cpu(1, 1024), cpu(0, 0), cpu(1, 1024), cpu(0, 0)];
        let v = view_of(&st, &flat);
        assert_eq!(
            select_cpu(
                &tasks.view(),
                &v,
                p,
                0,
                WakeKind::Fork,
                1024,
                IdleSiblings::Smt
            ),
            1
        );
        let st = [cpu(0, 0), cpu(0, 0), cpu(1, 1024), cpu(0, 0)];
        let v = view_of(&st, &flat);
        assert_eq!(
            select_cpu(
                &tasks.view(),
                &v,
                p,
                0,
                WakeKind::Fork,
                1024,
                IdleSiblings::Smt
            ),
            0
        );
        // Today's kernel counts idle CPUs first: core {0, 1} runs the parent and a task whose
        // PELT average has decayed to 300; core {2, 3} is idle but CPU 3's average still
        // shows 2000 from a task that just left. By load {0, 1} (1324/2) beats {2, 3}
        // (2000/2); by idle CPUs {2, 3} (two) beats {0, 1} (none), and its idle CPU 2 is taken.
        let mut st = [cpu(1, 1024), cpu(1, 300), cpu(0, 0), cpu(0, 2000)];
        st[0].curr = Some(TaskId(9));
        st[1].curr = Some(TaskId(8));
        let v = view_of(&st, &t);
        let mut fork = |sib| select_cpu(&tasks.view(), &v, p, 0, WakeKind::Fork, 1024, sib);
        assert_eq!(
            fork(IdleSiblings::Smt),
            1,
            "2.6.2x: the lighter group, its lighter CPU"
        );
        assert_eq!(fork(IdleSiblings::Llc), 2);
    }

    // ----- select_cpu_v6_18 (fair.c of v6.18: wake_affine_idle L7333, wake_affine_weight
    // L7364, select_idle_sibling L7823) -----

    const NICE_0: u64 = crate::policy::weight::NICE_0_LOAD;

    /// A busy CPU: `nr` runnable, a task running, PELT load `load`.
    fn busy(nr: usize, load: u64) -> crate::class::CpuStatus {
        crate::class::CpuStatus {
            curr: Some(TaskId(99)),
            ..cpu(nr, load)
        }
    }

    /// The CPU a wakeup of a task last on `prev`, of load `task_load`, from `waker`, picks.
    fn wake_618(
        t: &Topology,
        st: &[crate::class::CpuStatus],
        prev: CpuId,
        waker: CpuId,
        sync: bool,
        task_load: u64,
        wide: bool,
    ) -> CpuId {
        use crate::task::Tasks;
        let mut tasks: Tasks<()> = Tasks::new();
        let p = tasks.spawn();
        tasks[p].cpu = prev;
        let v = view_of(st, t);
        let kind = WakeKind::Wakeup { sync };
        select_cpu_v6_18(&tasks.view(), &v, p, waker, kind, task_load, NICE_0, wide)
    }

    #[test]
    fn v6_18_imbalance_pct_by_the_lowest_shared_level() {
        // sd_init: 117 for every level, 110 between SMT siblings. 8 CPUs: cores of 2 threads,
        // LLCs of 4.
        let t = topo(8, 2, 4, None);
        assert_eq!(pct_between_v6_18(&t, 0, 1), 110);
        assert_eq!(pct_between_v6_18(&t, 0, 2), 117);
        assert_eq!(pct_between_v6_18(&t, 0, 4), 117);
        assert_eq!(pct_between_v6_18(&t, 7, 3), 117);
    }

    #[test]
    fn v6_18_wakeups_on_two_cpus_sharing_a_cache() {
        let t = topo(2, 1, 2, None);
        // p last ran on CPU 1; the wakeup runs on CPU 0.
        let wake = |st: &[_], sync, wide| wake_618(&t, st, 1, 0, sync, 1024, wide);
        // wake_affine_idle 1: the waker's CPU is idle (an interrupt woke p) and shares the
        // cache: it takes p unless p's own CPU is idle too. select_idle_sibling: the target
        // is idle, taken.
        assert_eq!(wake(&[cpu(0, 0), busy(1, 1024)], false, false), 0);
        assert_eq!(wake(&[cpu(0, 0), cpu(0, 0)], false, false), 1);
        // wake_affine_idle 3: the waker's CPU busy, p's previous CPU idle: it stays there.
        assert_eq!(wake(&[busy(1, 1024), cpu(0, 0)], false, false), 1);
        // Both busy: waker alone on CPU 0 (load 1024), CPU 1 runs 2 (2048).
        let st = [busy(1, 1024), busy(2, 2048)];
        // wake_affine_idle 2: a sync waker alone on its CPU takes p (it is about to sleep).
        assert_eq!(wake(&st, true, false), 0);
        // Not sync: wake_affine_weight, 117 % halved to 108 %: this = (1024 + 1024) * 100 =
        // 204 800 against prev = (2048 - 1024) * 108 = 110 592: not lighter, p stays on 1.
        assert_eq!(wake(&st, false, false), 1);
        // wake_wide: no affine wakeup at all, even sync: p's previous CPU, busy, no idle one.
        assert_eq!(wake(&st, true, true), 1);
    }

    #[test]
    fn v6_18_wake_affine_weight_biases_by_half_the_imbalance_pct() {
        // 4 CPUs, two LLCs {0, 1} and {2, 3}, all busy (two tasks each, so neither the idle
        // nor the sync-alone test decides). p (load 100) last ran on CPU 1 or 2.
        let t = topo(4, 1, 2, None);
        let st = |l0: u64, l1: u64, l2: u64| [busy(2, l0), busy(2, l1), busy(2, l2), busy(2, 0)];
        let wake = |st: &[_], prev, sync| wake_618(&t, st, prev, 0, sync, 100, false);
        // Within an LLC (117 -> 108 %), prev CPU 1 at 1100: prev_eff = (1100 - 100) * 108 =
        // 108 000. this_eff = (l0 + 100) * 100 must be strictly less: l0 = 979 -> 107 900
        // (the waker's CPU 0), l0 = 980 -> 108 000 (p stays on 1). Unbiased (100 %) 979
        // would lose; at the full 117 % 980 would win.
        assert_eq!(wake(&st(979, 1100, 0), 1, false), 0);
        assert_eq!(wake(&st(980, 1100, 0), 1, false), 1);
        // Across LLCs the same 108 % (sd_init gives the package level 117 too): prev CPU 2 at
        // 1100, l0 = 979 wins, 980 does not.
        assert_eq!(wake(&st(979, 0, 1100), 2, false), 0);
        assert_eq!(wake(&st(980, 0, 1100), 2, false), 2);
        // Sync: the waker's own nice-0 load leaves CPU 0 and prev_eff gains 1 (a tie goes
        // to the waker): l0 = 2004 -> (2004 - 1024 + 100) * 100 = 108 000 < 108 001.
        assert_eq!(wake(&st(2004, 1100, 0), 1, true), 0);
        assert_eq!(wake(&st(2004, 1100, 0), 1, false), 1);
        // Sync with less on the waker's CPU than the waker itself: the waker's CPU at once.
        assert_eq!(wake(&st(1000, 0, 0), 1, true), 0);
    }

    #[test]
    fn v6_18_select_idle_sibling_searches_the_targets_llc() {
        let t = topo(4, 1, 2, None);
        let wake = |st: &[_]| wake_618(&t, st, 2, 0, false, 100, false);
        // The waker's CPU 0 wins wake_affine_weight (as above, 979 against 1100); it is busy.
        // An idle CPU of its LLC (1) is taken; an idle CPU of the other LLC (3) is not looked at.
        assert_eq!(
            wake(&[busy(2, 979), cpu(0, 0), busy(2, 1100), busy(2, 0)]),
            1
        );
        assert_eq!(
            wake(&[busy(2, 979), busy(2, 0), busy(2, 1100), cpu(0, 0)]),
            0
        );
        // p's previous CPU wins (980): then the idle CPU 3 of its LLC is taken.
        assert_eq!(
            wake(&[busy(2, 980), busy(2, 0), busy(2, 1100), cpu(0, 0)]),
            3
        );
        // wake_affine_idle 3 across LLCs: p's previous CPU 2 idle keeps it, whatever the loads.
        assert_eq!(wake(&[busy(2, 0), busy(2, 0), cpu(0, 5000), busy(2, 0)]), 2);
        // But a sync waker alone on its CPU is asked first (wake_affine_idle 2 before 3): the
        // target is CPU 0, busy; p's idle previous CPU is in another LLC, so not taken.
        let st = [busy(1, 1024), busy(2, 0), cpu(0, 0), busy(2, 0)];
        assert_eq!(wake_618(&t, &st, 2, 0, true, 100, false), 0);
        // Sharing the cache (4 CPUs, one LLC), the idle previous CPU 3 is select_idle_sibling's
        // second choice, before the scan of the LLC that would find CPU 1 first.
        let one_llc = topo(4, 1, 4, None);
        let st = [busy(1, 1024), cpu(0, 0), busy(2, 0), cpu(0, 0)];
        assert_eq!(wake_618(&one_llc, &st, 3, 0, true, 100, false), 3);
    }
}

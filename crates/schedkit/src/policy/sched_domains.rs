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
//! 110); MC `SD_MC_INIT` (1..4 ms, 64, 125); CPU `SD_CPU_INIT` (1..4 ms, 64, 125), spanning a
//! node (2.6.24's `phys_domains`). On a machine of several NUMA nodes a NUMA level above it
//! spans the machine (2.6.24's `node_domains`, `sched_domain_node_span`: the node and its
//! nearest, up to `SD_NODES_PER_DOMAIN` = 16 nodes; `allnodes_domains` only where there are
//! more) with x86's `SD_NODE_INIT` of `include/asm-x86/topology.h` (2.6.24, the x86-64
//! branch): intervals 8..32 ms, busy factor 32, imbalance_pct 125, `cache_nice_tries` 2, and
//! no `SD_BALANCE_NEWIDLE` (a CPU going idle does not pull across nodes; `idle_balance` walks
//! only the domains with that flag); its interval applies to an idle CPU's periodic balance
//! too (`rebalance_domains`: `balance_interval`, times `busy_factor` when busy). Not modelled:
//! `SD_SERIALIZE` (one CPU at a time balances the NUMA levels), `SD_WAKE_BALANCE`/`wake_idx`.
//! `eevdf:era=6.6` balances through these domains too, with these 2.6.2x constants (a
//! simplification of that era's, said in `eevdf/smp.rs`).
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
//!
//! Also the fair classes' shared multi-CPU glue: `select_cpu` (`wake_affine`,
//! `select_idle_sibling`, fork balancing), `balance_interval_ticks`, and `PullBudget`, whose
//! `drain` is `balance_tasks`' loop, so that each class writes only what may move and how it
//! detaches and attaches. Shared machinery: must never depend on a design (the fair classes
//! use it, not the other way), the stacked RT class, a host, the core or the registry.

use crate::class::{Busiest, CpuIdle, CpuView, Ctx, PullOutcome, Rq, WakeKind};
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
    /// `SD_BALANCE_NEWIDLE`: a CPU about to go idle balances at this level.
    pub newidle: bool,
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

/// The CPUs by their value of `key`: each class sorted, the classes in the order of their
/// first CPU, and the class of each CPU. One pass over the CPUs (it was a pass per CPU, whose
/// cost at 256 CPUs, times each CPU's build, was most of a short run's time).
fn partition(key: &[usize]) -> (Vec<Vec<CpuId>>, Vec<usize>) {
    let mut parts: Vec<Vec<CpuId>> = Vec::new();
    let mut index: std::collections::HashMap<usize, usize> = Default::default();
    let mut of_cpu = Vec::with_capacity(key.len());
    for (c, &k) in key.iter().enumerate() {
        let i = *index.entry(k).or_insert_with(|| {
            parts.push(Vec::new());
            parts.len() - 1
        });
        parts[i].push(c);
        of_cpu.push(i);
    }
    (parts, of_cpu)
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
        // (name, key, imbalance_pct, min and max interval ms, busy_factor, newidle)
        type Tier<'t> = (&'static str, &'t [usize], u64, u64, u64, u64, bool);
        let tiers: [Tier; 4] = [
            ("SMT", &topology.core, 110, lo, 2, BUSY_FACTOR, true),
            ("MC", &topology.cache, 125, lo, 4, BUSY_FACTOR, true),
            ("CPU", &topology.node, 125, lo, 4, BUSY_FACTOR, true),
            // SD_NODE_INIT (x86-64, 2.6.24).
            ("NUMA", &all, 125, 8, 32, 32, false),
        ];
        // The partition of the machine at the tier below, as group lists.
        let mut below: Vec<Vec<CpuId>> = (0..n).map(|c| vec![c]).collect();
        let mut levels = Vec::new();
        for (name, key, pct, lo, hi, busy_factor, newidle) in tiers {
            // This tier's partition: every CPU's peers (for the next level's groups).
            let (partition, of_cpu) = partition(&key[..n]);
            let span = partition[of_cpu[cpu]].clone();
            let prev_len = levels.last().map_or(1, |l: &DomainLevel| l.span.len());
            if span.len() > prev_len {
                let groups: Vec<Vec<CpuId>> = below
                    .iter()
                    .filter(|g| g.iter().all(|&c| key[c] == key[cpu]))
                    .cloned()
                    .collect();
                levels.push(DomainLevel {
                    name,
                    span,
                    groups,
                    imbalance_pct: pct,
                    busy_factor,
                    min_interval_ms: lo,
                    max_interval_ms: hi,
                    newidle,
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
    /// level that is due and finds an imbalance names the runqueue to pull from. A new-idle
    /// pass skips the levels without `SD_BALANCE_NEWIDLE`.
    pub fn find_busiest(
        &mut self,
        ops: &mut OpCounter,
        now: u64,
        this_cpu: CpuId,
        view: &CpuView,
        kind: CpuIdle,
    ) -> Option<Busiest> {
        let idle = kind.is_idle();
        for i in 0..self.levels.len() {
            let sd = &self.levels[i];
            if kind == CpuIdle::NewlyIdle && !sd.newidle {
                continue;
            }
            if !idle {
                let every = self.interval_ms[i] * sd.busy_factor * 1_000_000;
                if now < self.last_balance[i].saturating_add(every) {
                    continue;
                }
            } else if kind == CpuIdle::Idle && sd.min_interval_ms > MIN_INTERVAL_MS {
                // A level slower than the 1 ms an idle CPU is called at (SD_NODE_INIT's
                // 8 ms) waits for its own interval; the lower levels' is the call itself.
                let every = self.interval_ms[i] * 1_000_000;
                if now < self.last_balance[i].saturating_add(every) {
                    continue;
                }
            }
            self.last_balance[i] = now;
            // No CPU with two tasks: no group can be the busiest. The scan's reads are
            // counted as if made (the work is the kernel's), the host skips making them.
            let found = if view.overloaded == Some(0) {
                ops.remote_touches += sd.groups.iter().map(|g| g.len() as u64).sum::<u64>();
                None
            } else {
                find_busiest_group(ops, sd, this_cpu, view, idle)
            };
            match found {
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
/// The loads are the runqueues' PELT averages and the caller's `task_h_load` of the wakee and
/// the waker (6.18's class passes each task's own PELT signal).
///
/// SIS_UTIL (`select_idle_cpu`, fair.c of v6.18; `sis`: the LLCs' `nr_idle_scan`, `None`
/// where the feature is off): the search of the target's LLC may look at `nr_idle_scan`
/// CPUs, from `target + 1` on, and none at all, not even a whole idle core, when
/// `nr_idle_scan` is 0 ("overloaded LLC is unlikely to have idle cpu/core"); the target is
/// then kept. An idle core's search, when SMT is on, is not counted against the limit (the
/// kernel decrements `nr` only on the path without an idle core).
///
/// `sched_idle_cpu` (a CPU running only SCHED_IDLE tasks, [`CpuView::sched_idle_cpu`]) counts
/// as idle in `select_idle_sibling`'s tests, not in `wake_affine_idle`'s or for a whole idle
/// core, as in fair.c.
///
/// Not modelled: `recent_used_cpu`, `select_idle_smt` on the previous CPU's siblings,
/// `select_idle_core`'s fallback to a SCHED_IDLE CPU. A fork takes the slow path,
/// `sched_balance_find_dst_cpu` (`fair_lb::DstDomains`, which the class calls first); given a
/// fork, this function falls back to [`select_cpu`]'s walk.
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
    fit: Option<(u64, super::asym::Uclamp, bool)>,
    sis: Option<&super::fair_lb::LlcShared>,
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
    let available_idle = |c: CpuId| view.idle_cpu(c);
    let share_cache = |a: CpuId, b: CpuId| topo.cache[a] == topo.cache[b];
    let mut target = prev;
    if !wake_wide && waker_cpu != prev && allowed(waker_cpu) {
        // wake_affine_idle (`available_idle_cpu` only)
        let mut affine = None;
        if available_idle(waker_cpu) && share_cache(waker_cpu, prev) {
            affine = Some(if available_idle(prev) {
                prev
            } else {
                waker_cpu
            });
        } else if sync && view.cpu(waker_cpu).nr_running == 1 {
            affine = Some(waker_cpu);
        } else if available_idle(prev) {
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
    // select_idle_sibling; on an asymmetric machine (`fit`: the task's utilisation and
    // clamps) an idle target or prev only where the task fits (`asym_fits_cpu`), then
    // `select_idle_capacity` over every CPU (`sd_asym_cpucapacity` spans the machine). From
    // here a CPU running SCHED_IDLE tasks only counts as idle (`available_idle_cpu(c) ||
    // sched_idle_cpu(c)` at each test of select_idle_sibling, select_idle_capacity and
    // select_idle_cpu); wake_affine_idle above asks `available_idle_cpu` alone.
    let idle = |c: CpuId| available_idle(c) || view.sched_idle_cpu(c);
    let fits =
        |c: CpuId| fit.is_none_or(|(u, cl, used)| super::asym::asym_fits_cpu(topo, u, cl, used, c));
    if idle(target) && fits(target) {
        return target;
    }
    if prev != target && share_cache(prev, target) && idle(prev) && fits(prev) {
        return prev;
    }
    if let Some((u, cl, used)) = fit.filter(|_| topo.asym_capacity) {
        let span: Vec<CpuId> = (0..n).collect();
        return super::asym::select_idle_capacity(
            topo, &span, target, u, cl, used, &idle, &allowed,
        )
        .unwrap_or(target);
    }
    let near = |c: CpuId| share_cache(c, target);
    // select_idle_cpu, SIS_UTIL: "because !--nr is the condition to stop scan".
    let mut nr = match sis {
        Some(s) => {
            let nr = s.nr_idle_scan(target) + 1;
            if nr == 1 {
                return target;
            }
            nr
        }
        None => u32::MAX,
    };
    let smt = (0..n).any(|c| topo.core.iter().filter(|&&k| k == topo.core[c]).count() > 1);
    if smt {
        // select_idle_core: a core is idle when every sibling is `available_idle_cpu`.
        let whole_core_idle = |c: CpuId| {
            (0..n)
                .filter(|&s| topo.core[s] == topo.core[c])
                .all(|s| view.idle_cpu(s))
        };
        if let Some(c) = p
            .cpus_allowed
            .iter(n)
            .find(|&c| near(c) && idle(c) && whole_core_idle(c))
        {
            return c;
        }
    }
    // select_idle_cpu: for_each_cpu_wrap from target + 1 over the LLC's allowed CPUs,
    // "if (--nr <= 0) return -1" before each.
    for c in (1..=n).map(|k| (target + k) % n) {
        if !(allowed(c) && near(c)) {
            continue;
        }
        nr -= 1;
        if nr == 0 {
            return target;
        }
        if idle(c) {
            return c;
        }
    }
    target
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
mod tests;

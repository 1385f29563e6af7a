//! The load balancer of today's fair class, as Linux 6.18 has it (`kernel/sched/fair.c` of
//! v6.18: `sched_balance_rq` and its helpers; `kernel/sched/topology.c`: `sd_init`), for
//! `eevdf:era=6.18`. The 2.6.2x balancer of `sched_domains` compares average loads only; this
//! one first classifies each group by how busy it is and moves tasks by count or by load
//! according to the pair of classes.
//!
//! - Domains (`sd_init`, topology.c 1625): the spans of `sched_domains` with today's
//!   constants: `busy_factor` 16, `imbalance_pct` 117 (110 between SMT siblings);
//!   `min_interval` = the span's CPU count in ms, `max_interval` twice that, the balance
//!   interval starting at `min_interval`; `cache_nice_tries` 1 (0 between SMT siblings, 2
//!   across NUMA nodes).
//! - When (`get_sd_balance_interval`, `sched_balance_domains`): each level every
//!   `balance_interval` ms, × `busy_factor` less a jiffy on a busy CPU; the interval doubles up
//!   to `max_interval` while a periodic pass finds the level balanced (not after a new-idle
//!   pass) and returns to `min_interval` whenever a pass finds an imbalance
//!   (`sched_balance_rq`, fair.c 11972 and 12013).
//! - `update_sg_lb_stats` + `group_classify`: per group, its PELT load, its runnable tasks,
//!   idle CPUs; `group_overloaded` when it runs more tasks than CPUs and its runnable load
//!   exceeds its capacity by `imbalance_pct`; `group_fully_busy` when it has no spare
//!   capacity; else `group_has_spare`.
//! - `update_sd_pick_busiest`: the highest class; among overloaded groups the highest
//!   average load; among groups with spare capacity the fewest idle CPUs, then the most tasks.
//! - `sched_balance_find_src_group`: balanced when the local group is of a higher class,
//!   when both are overloaded and the busiest is within `imbalance_pct`, and, unless the
//!   busiest is overloaded, whenever this CPU is busy or the busiest runs one task.
//! - `calculate_imbalance`: a local group with spare capacity takes *tasks*: half the
//!   difference in running tasks between single-CPU groups (`sibling_imbalance`), or the
//!   difference in idle CPUs; otherwise *load*: the smaller of the busiest's excess over the
//!   domain average and the local group's shortfall.
//! - `sched_balance_find_src_rq`: the busiest group's runqueue with the most runnable tasks
//!   (by count) or the highest load (by load).
//! - `detach_tasks` + `can_migrate_task`: from the task least recently queued or run on
//!   (`cfs_tasks`' tail: a task goes to its head when queued and when picked to run), at most
//!   `sysctl_sched_nr_migrate` (32) looked at; skipped: a task
//!   not allowed here, a delayed one (the kernel moves one when it migrates load; here never:
//!   it is asleep as far as the hosts know, and they move runnable tasks only), one not
//!   eligible on its runqueue while this one has tasks (`task_is_ineligible_on_dst_cpu`),
//!   unless balancing failed before, and one that ran within `sysctl_sched_migration_cost`
//!   (0.5 ms, `task_hot`; never a SCHED_IDLE task, never between SMT siblings, never a task
//!   just migrated) unless balancing failed more than `cache_nice_tries` times; a
//!   new-idle balance moves one task (CONFIG_PREEMPTION, as the recording kernel has).
//!   `nr_balance_failed` counts passes that found an imbalance and moved nothing.
//!
//! Simplified, and said so: the runqueue's PELT load stands for its load, runnable and
//! utilisation averages alike (the kernel keeps three signals, per entity); loads by weight
//! in `detach_tasks` use the task's weight, not its PELT load; no active balancing (the
//! migration thread pushing a running task), no misfit, asymmetric-packing or SMT-balance
//! classes, no `migrate_util` case (a local group with spare capacity against an overloaded
//! one across a domain that shares no cache: fair.c 11146), no NUMA imbalance allowance; the
//! new-idle balance is not skipped on `avg_idle` against the measured cost of balancing
//! (`max_newidle_lb_cost`), nor drawn at random by its success (6.18.y's NI_RANDOM).

use super::sched_domains::SchedDomains;
use crate::class::{Busiest, CpuIdle, CpuView, OpCounter};
use crate::machine::Topology;
use crate::task::CpuId;

/// `SCHED_CAPACITY_SCALE`: one CPU's capacity (every CPU of the shipped profiles is equal).
pub const CAPACITY: u64 = 1024;
/// `sysctl_sched_nr_migrate`: tasks `detach_tasks` looks at per pass.
pub const NR_MIGRATE: usize = 32;

/// `enum group_type`, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    HasSpare,
    FullyBusy,
    Overloaded,
}

/// `enum migration_type` with its amount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Migration {
    /// Move this many tasks.
    Tasks(u64),
    /// Move this much load.
    Load(u64),
}

/// One level of a CPU's 6.18 domains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Level {
    pub name: &'static str,
    pub span: Vec<CpuId>,
    pub groups: Vec<Vec<CpuId>>,
    pub imbalance_pct: u64,
    pub busy_factor: u64,
    pub min_interval_ms: u64,
    pub max_interval_ms: u64,
    pub cache_nice_tries: u32,
    /// `sd->balance_interval`, ms.
    pub balance_interval_ms: u64,
    /// When it last balanced, ns.
    pub last_balance: u64,
    pub nr_balance_failed: u32,
}

/// `sg_lb_stats` of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupStats {
    pub load: u64,
    pub nr_running: u64,
    pub idle_cpus: u64,
    pub weight: u64,
    pub capacity: u64,
    pub avg_load: u64,
}

impl GroupStats {
    /// `group_classify` (reduced: the runqueue load stands for runnable and utilisation).
    pub fn classify(&self, imbalance_pct: u64) -> GroupType {
        let runnable = self.load;
        let util = self.load.min(self.capacity);
        // group_is_overloaded
        if self.nr_running > self.weight
            && (self.capacity * 100 < util * imbalance_pct
                || self.capacity * imbalance_pct < runnable * 100)
        {
            return GroupType::Overloaded;
        }
        // group_has_capacity
        let has_capacity = self.nr_running < self.weight
            || (self.capacity * imbalance_pct >= runnable * 100
                && self.capacity * 100 > util * imbalance_pct);
        if has_capacity {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        }
    }
}

/// A CPU's domains under the 6.18 balancer and their state.
#[derive(Clone, Debug, Default)]
pub struct Domains {
    pub levels: Vec<Level>,
    /// What the last `find_busiest` decided, for `move_tasks` (the kernel's `lb_env`).
    pub pending: Option<(usize, Migration)>,
}

impl Domains {
    /// `build_sched_domains` + `sd_init` for `cpu`.
    pub fn build(cpu: CpuId, topology: &Topology) -> Domains {
        let spans = SchedDomains::build(cpu, topology);
        let levels = spans
            .levels
            .into_iter()
            .map(|l| {
                let weight = l.span.len() as u64;
                // sd_init: imbalance_pct 117 for every level but SMT siblings' (110);
                // cache_nice_tries 1, 2 across NUMA nodes, 0 between SMT siblings.
                let (pct, tries) = match l.name {
                    "SMT" => (110, 0),
                    "NUMA" => (117, 2),
                    _ => (117, 1),
                };
                Level {
                    name: l.name,
                    imbalance_pct: pct,
                    busy_factor: 16,
                    min_interval_ms: weight,
                    max_interval_ms: 2 * weight,
                    cache_nice_tries: tries,
                    balance_interval_ms: weight,
                    last_balance: 0,
                    nr_balance_failed: 0,
                    span: l.span,
                    groups: l.groups,
                }
            })
            .collect();
        Domains {
            levels,
            pending: None,
        }
    }

    /// How often the core should run this CPU's balancer, in ticks: the smallest interval of
    /// any level (`rq->next_balance`), each level keeping its own in `find_busiest`.
    pub fn interval_ticks(&self, idle: bool, hz: u32) -> u64 {
        let ms = self
            .levels
            .iter()
            .map(|l| {
                if idle {
                    l.balance_interval_ms
                } else {
                    l.balance_interval_ms * l.busy_factor
                }
            })
            .min()
            .unwrap_or(1);
        (ms * hz as u64 / 1000).max(1)
    }

    /// `sched_balance_domains` (or the new-idle pass): the first level that is due and finds
    /// an imbalance names the runqueue to pull from; what to move is kept for `move_tasks`.
    pub fn find_busiest(
        &mut self,
        ops: &mut OpCounter,
        now: u64,
        this_cpu: CpuId,
        view: &CpuView,
        idle: CpuIdle,
    ) -> Option<Busiest> {
        self.pending = None;
        for i in 0..self.levels.len() {
            let lvl = &self.levels[i];
            if idle != CpuIdle::NewlyIdle {
                // get_sd_balance_interval: balance_interval ms, x busy_factor less a jiffy
                // on a busy CPU.
                let mut every = lvl.balance_interval_ms * 1_000_000;
                if idle == CpuIdle::NotIdle {
                    let jiffy = 1_000_000_000 / view.hz.max(1) as u64;
                    every = (every * lvl.busy_factor).saturating_sub(jiffy).max(jiffy);
                }
                if now < lvl.last_balance.saturating_add(every) {
                    continue;
                }
                self.levels[i].last_balance = now;
            }
            let found = find_src(ops, &self.levels[i], this_cpu, view, idle);
            let lvl = &mut self.levels[i];
            match found {
                Some((cpu, m)) => {
                    // "We were unbalanced, so reset the balancing interval" (whether or not
                    // the pass then moves anything).
                    lvl.balance_interval_ms = lvl.min_interval_ms;
                    self.pending = Some((i, m));
                    let imbalance = match m {
                        Migration::Tasks(n) | Migration::Load(n) => n as usize,
                    };
                    return Some(Busiest { cpu, imbalance });
                }
                None => {
                    // out_balanced: the level is fine; back off, except after a new-idle
                    // pass, which runs at every idle entry and would send the interval
                    // up in no time.
                    lvl.nr_balance_failed = 0;
                    if idle != CpuIdle::NewlyIdle && lvl.balance_interval_ms < lvl.max_interval_ms {
                        lvl.balance_interval_ms *= 2;
                    }
                }
            }
        }
        None
    }

    /// After `move_tasks`: a pass that found an imbalance and moved nothing counts as failed
    /// (not a new-idle one); one that moved something clears the count.
    pub fn balanced(&mut self, moved: usize, idle: CpuIdle) {
        let Some((i, _)) = self.pending.take() else {
            return;
        };
        let lvl = &mut self.levels[i];
        if moved > 0 {
            lvl.nr_balance_failed = 0;
        } else if idle != CpuIdle::NewlyIdle {
            lvl.nr_balance_failed += 1;
        }
    }

    /// The pending pass's migration, the level's tolerance for hot or ineligible tasks, and
    /// whether it balances between SMT siblings (which share a cache: nothing is hot there).
    pub fn pending(&self) -> Option<(Migration, u32, u32, bool)> {
        self.pending.map(|(i, m)| {
            let l = &self.levels[i];
            (m, l.nr_balance_failed, l.cache_nice_tries, l.name == "SMT")
        })
    }
}

/// `update_sd_lb_stats` + `sched_balance_find_src_group` + `calculate_imbalance` +
/// `sched_balance_find_src_rq` within one level.
fn find_src(
    ops: &mut OpCounter,
    lvl: &Level,
    this_cpu: CpuId,
    view: &CpuView,
    idle: CpuIdle,
) -> Option<(CpuId, Migration)> {
    let pct = lvl.imbalance_pct;
    let mut local: Option<(usize, GroupStats, GroupType)> = None;
    let mut busiest: Option<(usize, GroupStats, GroupType)> = None;
    let (mut total_load, mut total_capacity) = (0u64, 0u64);
    for (gi, g) in lvl.groups.iter().enumerate() {
        let mut st = GroupStats {
            weight: g.len() as u64,
            capacity: CAPACITY * g.len() as u64,
            ..GroupStats::default()
        };
        for &c in g {
            ops.remote_touches += 1;
            let cs = view.cpu(c);
            st.nr_running += cs.nr_running as u64;
            st.load += cs.load;
            if cs.nr_running == 0 && view.idle_cpu(c) {
                st.idle_cpus += 1;
            }
        }
        let gt = st.classify(pct);
        if gt == GroupType::Overloaded {
            st.avg_load = st.load * CAPACITY / st.capacity;
        }
        total_load += st.load;
        total_capacity += st.capacity;
        if g.contains(&this_cpu) {
            local = Some((gi, st, gt));
            continue;
        }
        // update_sd_pick_busiest
        if st.nr_running == 0 {
            continue;
        }
        let better = match busiest {
            None => true,
            Some((_, b, bt)) => {
                if gt != bt {
                    gt > bt
                } else {
                    match gt {
                        GroupType::Overloaded | GroupType::FullyBusy => st.avg_load > b.avg_load,
                        GroupType::HasSpare => {
                            st.idle_cpus < b.idle_cpus
                                || (st.idle_cpus == b.idle_cpus && st.nr_running > b.nr_running)
                        }
                    }
                }
            }
        };
        if better {
            busiest = Some((gi, st, gt));
        }
    }
    let (bi, b, bt) = busiest?;
    let (_, mut l, lt) = local?;
    // sched_balance_find_src_group
    if lt > bt {
        return None;
    }
    let avg = total_load * CAPACITY / total_capacity.max(1);
    if lt == GroupType::Overloaded
        && (l.avg_load >= b.avg_load || l.avg_load >= avg || 100 * b.avg_load <= pct * l.avg_load)
    {
        return None;
    }
    if bt != GroupType::Overloaded {
        if !idle.is_idle() {
            return None;
        }
        if b.weight > 1 && l.idle_cpus <= b.idle_cpus + 1 {
            return None;
        }
        if b.nr_running == 1 {
            return None;
        }
    }
    // calculate_imbalance
    let m = if lt == GroupType::HasSpare {
        let n = if b.weight == 1 {
            // sibling_imbalance with one core each side: the difference in running tasks.
            if !idle.is_idle() {
                0
            } else {
                b.nr_running.saturating_sub(l.nr_running)
            }
        } else {
            l.idle_cpus.saturating_sub(b.idle_cpus)
        };
        Migration::Tasks(n >> 1)
    } else {
        if lt < GroupType::Overloaded {
            l.avg_load = l.load * CAPACITY / l.capacity;
            if l.avg_load >= b.avg_load || l.avg_load >= avg {
                return None;
            }
        }
        let excess = b.avg_load.saturating_sub(avg) * b.capacity;
        let shortfall = avg.saturating_sub(l.avg_load) * l.capacity;
        Migration::Load(excess.min(shortfall) / CAPACITY)
    };
    let amount = match m {
        Migration::Tasks(n) | Migration::Load(n) => n,
    };
    if amount == 0 {
        return None;
    }
    // sched_balance_find_src_rq
    let cpu = lvl.groups[bi]
        .iter()
        .copied()
        .filter(|&c| view.cpu(c).nr_running >= 1)
        .max_by_key(|&c| {
            let cs = view.cpu(c);
            match m {
                Migration::Tasks(_) => (cs.nr_running as u64, std::cmp::Reverse(c)),
                Migration::Load(_) => (cs.load, std::cmp::Reverse(c)),
            }
        })?;
    Some((cpu, m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::{CpuStatus, Cpus};
    use crate::machine::TopologySpec;

    fn topo(cpus: usize, smt: usize, per_cache: usize) -> Topology {
        Topology::from_spec(&TopologySpec {
            cpus,
            threads_per_core: smt,
            cpus_per_cache: per_cache,
            cpus_per_node: None,
            cpus_per_l2: None,
            cpus_per_package: None,
        })
    }

    fn cpu(nr: usize, load: u64) -> CpuStatus {
        CpuStatus {
            curr: (nr > 0).then_some(crate::task::TaskId(nr as u32 + 100)),
            nr_running: nr,
            load,
            last_schedule_ns: 0,
        }
    }

    fn view<'a>(st: &'a [CpuStatus], t: &'a Topology) -> CpuView<'a> {
        CpuView {
            cpus: Cpus::Snapshot(st),
            topology: t,
            now: 0,
            hz: 250,
        }
    }

    #[test]
    fn sd_init_constants() {
        // Two CPUs sharing a cache: one MC level of weight 2.
        let d = Domains::build(0, &topo(2, 1, 2));
        assert_eq!(d.levels.len(), 1);
        let l = &d.levels[0];
        assert_eq!((l.name, l.imbalance_pct, l.busy_factor), ("MC", 117, 16));
        assert_eq!(
            (l.min_interval_ms, l.max_interval_ms, l.balance_interval_ms),
            (2, 4, 2)
        );
        assert_eq!(l.cache_nice_tries, 1);
        // Busy: 2 ms x 16 = 32 ms = 8 ticks at HZ=250; idle: 2 ms, rounded up to one tick.
        assert_eq!(d.interval_ticks(false, 250), 8);
        assert_eq!(d.interval_ticks(true, 250), 1);
        // SMT siblings: 110, no cache_nice_tries.
        let d = Domains::build(0, &topo(4, 2, 4));
        assert_eq!(d.levels[0].imbalance_pct, 110);
        assert_eq!(d.levels[0].cache_nice_tries, 0);
        assert_eq!(d.levels[1].imbalance_pct, 117);
    }

    #[test]
    fn groups_are_classified_by_tasks_and_load() {
        let g = |nr, load| GroupStats {
            load,
            nr_running: nr,
            weight: 1,
            capacity: 1024,
            ..Default::default()
        };
        // No task: spare. One task at half a CPU: spare (1024 * 100 > 512 * 117).
        assert_eq!(g(0, 0).classify(117), GroupType::HasSpare);
        assert_eq!(g(1, 512).classify(117), GroupType::HasSpare);
        // One task always running: util 1024, 1024 * 100 < 1024 * 117: fully busy.
        assert_eq!(g(1, 1024).classify(117), GroupType::FullyBusy);
        // Two runnable tasks: runnable 2048 > 1024 * 117 / 100: overloaded.
        assert_eq!(g(2, 2048).classify(117), GroupType::Overloaded);
        // Two tasks queued but a lower average (one just woke): overloaded once the
        // utilisation passes 1024 * 100 / 117 = 875 (1024 * 100 < 1000 * 117) ...
        assert_eq!(g(2, 1000).classify(117), GroupType::Overloaded);
        // ... below it, and with runnable under 1024 * 1.17 = 1198, spare capacity
        // (1024 * 117 >= 800 * 100 and 1024 * 100 > 800 * 117 = 93 600).
        assert_eq!(g(2, 800).classify(117), GroupType::HasSpare);
        // One task at 900: not more tasks than CPUs; 1024 * 100 = 102 400 is not above
        // 900 * 117 = 105 300: no spare capacity.
        assert_eq!(g(1, 900).classify(117), GroupType::FullyBusy);
    }

    #[test]
    fn an_idle_cpu_takes_half_the_difference_in_tasks() {
        let t = topo(2, 1, 2);
        let mut d = Domains::build(0, &t);
        let mut ops = OpCounter::default();
        // CPU 1 runs 5 tasks (load 5120), CPU 0 is idle: migrate_task, (5 - 0) >> 1 = 2.
        let st = [cpu(0, 0), cpu(5, 5120)];
        let b = d
            .find_busiest(&mut ops, 10_000_000, 0, &view(&st, &t), CpuIdle::Idle)
            .expect("imbalanced");
        assert_eq!((b.cpu, b.imbalance), (1, 2));
        assert_eq!(d.pending(), Some((Migration::Tasks(2), 0, 1, false)));
        // Two tasks: (2 - 0) >> 1 = 1. One task: balanced (sum_h_nr_running == 1).
        let st = [cpu(0, 0), cpu(2, 2048)];
        let b = d
            .find_busiest(&mut ops, 20_000_000, 0, &view(&st, &t), CpuIdle::NewlyIdle)
            .unwrap();
        assert_eq!(b.imbalance, 1);
        let st = [cpu(0, 0), cpu(1, 1024)];
        assert!(d
            .find_busiest(&mut ops, 30_000_000, 0, &view(&st, &t), CpuIdle::NewlyIdle)
            .is_none());
    }

    #[test]
    fn busy_cpus_balance_load_beyond_imbalance_pct_only() {
        let t = topo(2, 1, 2);
        let mut d = Domains::build(0, &t);
        let mut ops = OpCounter::default();
        // Busy CPU 0 with 2 tasks (2048) against CPU 1 with 4 (4096): both overloaded;
        // avg_load 2048 vs 4096, domain average 3072; 4096 * 100 > 117 * 2048: move
        // min(4096 - 3072, 3072 - 2048) * 1024 / 1024 = 1024 of load.
        let st = [cpu(2, 2048), cpu(4, 4096)];
        let b = d
            .find_busiest(&mut ops, 1_000_000_000, 0, &view(&st, &t), CpuIdle::NotIdle)
            .unwrap();
        assert_eq!((b.cpu, b.imbalance), (1, 1024));
        assert_eq!(d.pending().unwrap().0, Migration::Load(1024));
        // 2048 against 2300: within 117 %: balanced, and the interval doubles (2 -> 4 ms).
        let st = [cpu(2, 2048), cpu(2, 2300)];
        assert!(d
            .find_busiest(&mut ops, 2_000_000_000, 0, &view(&st, &t), CpuIdle::NotIdle)
            .is_none());
        assert_eq!(d.levels[0].balance_interval_ms, 4);
        // A busy CPU never pulls from a group that is not overloaded.
        let st = [cpu(1, 1024), cpu(1, 1024)];
        assert!(d
            .find_busiest(&mut ops, 3_000_000_000, 0, &view(&st, &t), CpuIdle::NotIdle)
            .is_none());
        // Not due again until balance_interval x busy_factor = 4 x 16 = 64 ms later.
        let st = [cpu(2, 2048), cpu(4, 4096)];
        assert!(d
            .find_busiest(&mut ops, 3_050_000_000, 0, &view(&st, &t), CpuIdle::NotIdle)
            .is_none());
        assert!(d
            .find_busiest(&mut ops, 3_065_000_000, 0, &view(&st, &t), CpuIdle::NotIdle)
            .is_some());
        // Moving something resets the interval; finding and moving nothing counts a failure.
        d.balanced(1, CpuIdle::NotIdle);
        assert_eq!(d.levels[0].balance_interval_ms, 2);
        d.find_busiest(&mut ops, 4_000_000_000, 0, &view(&st, &t), CpuIdle::NotIdle)
            .unwrap();
        d.balanced(0, CpuIdle::NotIdle);
        assert_eq!(d.levels[0].nr_balance_failed, 1);
        // A new-idle pass that finds the level balanced does not back off; a periodic one
        // does (fair.c 12013).
        let st = [cpu(0, 0), cpu(1, 1024)];
        d.levels[0].balance_interval_ms = 2;
        assert!(d
            .find_busiest(
                &mut ops,
                5_000_000_000,
                0,
                &view(&st, &t),
                CpuIdle::NewlyIdle
            )
            .is_none());
        assert_eq!(d.levels[0].balance_interval_ms, 2);
        assert!(d
            .find_busiest(&mut ops, 6_000_000_000, 0, &view(&st, &t), CpuIdle::Idle)
            .is_none());
        assert_eq!(d.levels[0].balance_interval_ms, 4);
        // Finding an imbalance resets the interval even if the pass then moves nothing.
        let st = [cpu(0, 0), cpu(3, 3072)];
        assert!(d
            .find_busiest(&mut ops, 7_000_000_000, 0, &view(&st, &t), CpuIdle::Idle)
            .is_some());
        assert_eq!(d.levels[0].balance_interval_ms, 2);
        d.balanced(0, CpuIdle::Idle);
        assert_eq!(d.levels[0].nr_balance_failed, 1);
    }
}

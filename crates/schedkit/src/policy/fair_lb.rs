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
//! - `update_sg_lb_stats` + `group_classify`: per group, its PELT load, its tasks
//!   (`sum_nr_running`, which counts the delayed tasks still queued, as `rq->nr_running` has
//!   since 6.12; and `sum_h_nr_running`, the runnable fair ones, which decides whether a group
//!   has anything to pull), idle CPUs; `group_overloaded` when it runs more tasks than CPUs and its runnable load
//!   exceeds its capacity by `imbalance_pct`; `group_fully_busy` when it has no spare
//!   capacity; else `group_has_spare`.
//! - `update_sd_pick_busiest`: the highest class; among overloaded groups the highest
//!   average load; among groups with spare capacity the fewest idle CPUs, then the most tasks;
//!   of equals the first, the groups looked at from the local one on (`build_sched_groups`
//!   links each CPU's from its own, wrapping round), except fully busy ones, whose average
//!   load is never computed: of those the last, unless the busiest so far is an SMT core
//!   ("sched/fair: Keep a fully_busy SMT sched group as busiest", v6.5).
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
//! - A new task's CPU (`sched_balance_find_dst_cpu`, the slow path of `select_task_rq_fair`
//!   for a fork) walks the same domains with the same group types: [`DstDomains`], in
//!   `fork.rs`.
//!
//! Simplified, and said so: the runqueue's PELT load stands for its load, runnable and
//! utilisation averages alike (the kernel keeps three signals); loads by weight in
//! `detach_tasks` are the tasks' own PELT signals (`task_h_load`, kept by the class); no
//! active balancing (the
//! migration thread pushing a running task), no misfit, asymmetric-packing or SMT-balance
//! classes, no `migrate_util` case (a local group with spare capacity against an overloaded
//! one across a domain that shares no cache: fair.c 11146), no `fbq_type` (NUMA balancing's
//! preferred-node classes; automatic NUMA balancing is not modelled), no `SD_SERIALIZE`.
//!
//! NUMA (a machine of several nodes; `sd_init`'s `SD_NUMA` case): the level spanning the
//! nodes takes `cache_nice_tries` 2 (its `SD_PREFER_SIBLING` is dropped, which only matters to
//! the level above); `SD_BALANCE_FORK`/`EXEC` and `SD_WAKE_AFFINE` are dropped only beyond
//! `node_reclaim_distance` (30, or 32 on every Zen: `init_amd_zen_common`), which no shipped
//! profile exceeds, so nothing changes there. `imb_numa_nr` (`build_sched_domains`,
//! topology.c 2548): at the first level above the LLC, the number of LLCs it spans (12.5 % of
//! its CPUs where it spans one LLC), at least 1; above it, that times how many of the first
//! NUMA level's spans it covers. `calculate_imbalance`'s `adjust_numa_imbalance` (fair.c 1481,
//! 11368): when the local group has spare capacity, a NUMA level tolerates an imbalance of up
//! to `NUMA_IMBALANCE_MIN` (2) tasks while the local group would run no more than
//! `imb_numa_nr` tasks, so that a pair of communicating tasks stays on its node.
//!
//! New-idle gating (`sched_balance_newidle`, fair.c of 6.18.35 12970; `update_newidle_cost`
//! 12350; `ttwu_do_activate`, core.c 3726), in [`NewIdle`]:
//! - a CPU about to go idle stamps the time (`idle_stamp`); the next wakeup queued on it
//!   folds the time since into `avg_idle` (`update_avg`: an eighth of the difference), capped
//!   at twice `max_idle_balance_cost`; `avg_idle` starts at 1 ms, twice
//!   `sysctl_sched_migration_cost`;
//! - no pass unless some CPU of the root domain has two tasks (`rd->overloaded`) and
//!   `avg_idle` is at least the lowest level's `max_newidle_lb_cost`; a level is searched
//!   only while `avg_idle` exceeds what the pass has cost so far plus that level's cost;
//! - each level's `max_newidle_lb_cost` is the most a pass over it has cost (measured by the
//!   host: the simulated time of the pass, or the clock in the runtime), decayed by 253/256
//!   once a second by the periodic balancer, which also keeps `max_idle_balance_cost` at
//!   least `sysctl_sched_migration_cost`;
//! - NI_RANDOM (6.18.y, from v6.19): a level is searched with probability
//!   (1 + `newidle_ratio`)/1024, the ratio being its successes per 1 024 passes (halved
//!   every 1 024; it starts at 512 of 512), drawn from a per-CPU `prandom_u32_state`.
//!
//! Simplified there: `rd->overloaded` is read from the CPUs' current counts (the kernel
//! sets the flag as a runqueue reaches two tasks and clears it at the root level's
//! statistics); a pass over several levels is timed
//! as a whole and its cost shared equally among the levels it searched, and a later level's
//! gate adds the earlier levels' recorded costs instead of their cost in this pass; the
//! per-CPU generators are seeded from the CPU's number, so runs repeat (the kernel seeds
//! them from the entropy pool).
//!
//! Shared machinery for a fair class, as `sched_domains` is: must never depend on a design
//! (it is `eevdf:era=6.18`'s by use, not by name), the stacked RT class, a host, the core or
//! the registry.

use super::sched_domains::SchedDomains;
use crate::class::{Busiest, CpuIdle, CpuView};
use crate::ds::work::OpCounter;
use crate::machine::Topology;
use crate::task::CpuId;

/// `SCHED_CAPACITY_SCALE`: one CPU's capacity (every CPU of the shipped profiles is equal).
pub const CAPACITY: u64 = 1024;
/// `sysctl_sched_nr_migrate`: tasks `detach_tasks` looks at per pass.
pub const NR_MIGRATE: usize = 32;

/// SIS_UTIL's part of each LLC's `sched_domain_shared` (fair.c of v6.18:
/// `update_idle_cpu_scan`, written by the periodic balancer; `select_idle_cpu`, read at every
/// wakeup that searches for an idle CPU): `nr_idle_scan`, how many CPUs of the LLC a wakeup's
/// idle search may look at. One per LLC, shared by its CPUs' runqueues (atomics: the runtime's
/// workers read it without a lock, as the kernel reads it with `READ_ONCE`).
///
/// It starts at the LLC's CPU count, what a periodic pass over an idle LLC writes: a simulation
/// or a replay starts on an idle machine that has been up for a while (the recording script
/// waits for a quiet machine). The kernel zeroes it when it builds the domains (`sd_init`
/// takes the `sched_domain_shared` that `__sdt_alloc` zeroed) and the first periodic pass, a
/// few milliseconds after boot, sets it.
#[derive(Debug)]
pub struct LlcShared {
    /// Each CPU's LLC (`Topology::cache`, numbered from 0).
    llc_of: Vec<usize>,
    /// `sd_llc_size` of each LLC.
    llc_size: Vec<u64>,
    nr_idle_scan: Vec<std::sync::atomic::AtomicU32>,
}

impl LlcShared {
    pub fn new(topology: &Topology) -> LlcShared {
        let mut llc_size = vec![0u64; topology.ncaches()];
        for &l in &topology.cache {
            llc_size[l] += 1;
        }
        LlcShared {
            // What a periodic pass over an idle LLC writes: its every CPU.
            nr_idle_scan: llc_size.iter().map(|&n| (n as u32).into()).collect(),
            llc_size,
            llc_of: topology.cache.clone(),
        }
    }

    /// `per_cpu(sd_llc_size, cpu)`: how many CPUs share `cpu`'s last-level cache.
    pub fn llc_size(&self, cpu: CpuId) -> u32 {
        self.llc_size[self.llc_of[cpu]] as u32
    }

    /// `READ_ONCE(sd_share->nr_idle_scan)` of `cpu`'s LLC.
    pub fn nr_idle_scan(&self, cpu: CpuId) -> u32 {
        self.nr_idle_scan[self.llc_of[cpu]].load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `update_idle_cpu_scan`: after a periodic (not new-idle) pass of `dst_cpu` over a level
    /// of `span_weight` CPUs whose groups' utilisation sums to `sum_util`, at the level's
    /// `imbalance_pct`. Only the level that is the LLC writes. "The number of CPUs to search
    /// drops as sum_util increases, when sum_util hits 85% or above, the scan stops": with
    /// x = sum_util / llc_weight, y = 1024 − x² · pct² / (10000 · 1024) (at least 0), and
    /// `nr_idle_scan` = y · llc_weight / 1024, in the kernel's integer steps.
    pub fn update_idle_cpu_scan(
        &self,
        dst_cpu: CpuId,
        span_weight: usize,
        sum_util: u64,
        pct: u64,
    ) {
        let llc_weight = self.llc_size[self.llc_of[dst_cpu]];
        if span_weight as u64 != llc_weight {
            return;
        }
        let x = sum_util / llc_weight;
        let tmp = (x * x * pct * pct / (10_000 * CAPACITY)).min(CAPACITY);
        let y = (CAPACITY - tmp) * llc_weight / CAPACITY;
        self.nr_idle_scan[self.llc_of[dst_cpu]]
            .store(y as u32, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `enum group_type`, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    HasSpare,
    FullyBusy,
    /// A CPU runs a task too big for its capacity (`group_misfit_task`; asymmetric machines).
    Misfit,
    /// The group's tasks should move to a CPU of higher ITMT priority (`group_asym_packing`).
    AsymPacking,
    Overloaded,
}

/// `enum migration_type` with its amount.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Migration {
    /// Move this many tasks.
    Tasks(u64),
    /// Move this much load.
    Load(u64),
    /// Move the task that does not fit its CPU (`migrate_misfit`).
    Misfit,
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
    /// `SD_NUMA`: the level spans NUMA nodes.
    pub numa: bool,
    /// `sd->imb_numa_nr`: tasks a NUMA level lets a node take before it balances the last
    /// two (0 on a level that is not above the LLC).
    pub imb_numa_nr: u64,
    /// `sg->cores` of each group (its physical cores), for a NUMA level's `sibling_imbalance`.
    pub group_cores: Vec<u64>,
    /// `sd->balance_interval`, ms.
    pub balance_interval_ms: u64,
    /// When it last balanced, ns.
    pub last_balance: u64,
    pub nr_balance_failed: u32,
    /// The most a new-idle pass over this level has cost, ns (decayed once a second).
    pub max_newidle_lb_cost: u64,
    /// When `max_newidle_lb_cost` was last raised or decayed, ns.
    pub last_decay_max_lb_cost: u64,
    /// NI_RANDOM's counts: passes, successes weighted by how unlikely the pass was, and the
    /// successes per 1 024 passes that set the odds of the next (topology.c 1671).
    pub newidle_call: u32,
    pub newidle_success: u32,
    pub newidle_ratio: u32,
}

impl Level {
    /// `update_newidle_stats`.
    fn newidle_stats(&mut self, success: u32) {
        self.newidle_call += 1;
        self.newidle_success += success;
        if self.newidle_call >= 1024 {
            self.newidle_ratio = self.newidle_success;
            self.newidle_call /= 2;
            self.newidle_success /= 2;
        }
    }

    /// `update_newidle_cost`: a pass of `cost` ns (0 from the periodic balancer's visit)
    /// raises the level's maximum; a second without a raise decays it by 253/256. Whether it
    /// decayed.
    fn newidle_cost(&mut self, now: u64, cost: u64, success: u32) -> bool {
        if cost > 0 {
            self.newidle_stats(success);
        }
        if cost > self.max_newidle_lb_cost {
            self.max_newidle_lb_cost = cost;
            self.last_decay_max_lb_cost = now;
        } else if now > self.last_decay_max_lb_cost + 1_000_000_000 {
            self.max_newidle_lb_cost = self.max_newidle_lb_cost * 253 / 256;
            self.last_decay_max_lb_cost = now;
            return true;
        }
        false
    }
}

/// `prandom_u32_state` (lib/random32.c): L'Ecuyer's four-component Tausworthe generator
/// (LFSR113), the kernel's per-CPU `sched_rnd_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prandom([u32; 4]);

impl Prandom {
    /// Seeded as lib/random32.c's self-test seeds it (each component the "super-duper"
    /// LCG, x 69069, of the one before, raised past the bits its step discards: 2, 8, 16,
    /// 128), then warmed up by ten draws (`prandom_warmup`). The kernel seeds
    /// `sched_rnd_state` from the entropy pool; schedkit from the CPU's number, so that a
    /// run repeats.
    pub fn seeded(seed: u32) -> Prandom {
        let lcg = |x: u32| x.wrapping_mul(69069);
        let at_least = |x: u32, m: u32| if x < m { x + m } else { x };
        let s1 = at_least(lcg(seed), 2);
        let s2 = at_least(lcg(s1), 8);
        let s3 = at_least(lcg(s2), 16);
        let s4 = at_least(lcg(s3), 128);
        let mut r = Prandom([s1, s2, s3, s4]);
        for _ in 0..10 {
            r.next_u32();
        }
        r
    }

    pub fn next_u32(&mut self) -> u32 {
        fn taus(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
            ((s & c) << d) ^ (((s << a) ^ s) >> b)
        }
        let s = &mut self.0;
        s[0] = taus(s[0], 6, 13, 4_294_967_294, 18);
        s[1] = taus(s[1], 2, 27, 4_294_967_288, 2);
        s[2] = taus(s[2], 13, 21, 4_294_967_280, 7);
        s[3] = taus(s[3], 3, 12, 4_294_967_168, 13);
        s[0] ^ s[1] ^ s[2] ^ s[3]
    }
}

/// What gates a CPU's new-idle balance: `rq->avg_idle`, `rq->idle_stamp`,
/// `rq->max_idle_balance_cost`, and the pass in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewIdle {
    pub avg_idle: u64,
    /// When the CPU last went looking for work, until a wakeup queues a task here (or a pass
    /// pulls one).
    pub idle_stamp: Option<u64>,
    pub max_idle_balance_cost: u64,
    /// `sysctl_sched_migration_cost`.
    pub migration_cost: u64,
    pub rng: Prandom,
    /// The pass under way: when it began, the levels it searched (a bit each) and the
    /// NI_RANDOM weight of each.
    pub pass: Option<Pass>,
}

/// A new-idle pass that `find_busiest` began and `newidle_done` closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    pub started: u64,
    pub levels: u32,
    pub weights: [u32; 8],
}

impl Default for NewIdle {
    fn default() -> NewIdle {
        NewIdle::new(0, 500_000)
    }
}

impl NewIdle {
    fn new(cpu: CpuId, migration_cost: u64) -> NewIdle {
        NewIdle {
            avg_idle: 2 * migration_cost,
            idle_stamp: None,
            max_idle_balance_cost: migration_cost,
            migration_cost,
            rng: Prandom::seeded(cpu as u32 + 1),
            pass: None,
        }
    }

    /// `ttwu_do_activate`: a task woken onto this runqueue ends the idle time begun at the
    /// last new-idle entry.
    pub fn woken(&mut self, now: u64) {
        if let Some(stamp) = self.idle_stamp.take() {
            let sample = now.saturating_sub(stamp) as i64;
            // update_avg: avg += (sample - avg) / 8, the division truncating towards zero.
            let avg = self.avg_idle as i64;
            self.avg_idle = (avg + (sample - avg) / 8) as u64;
            self.avg_idle = self.avg_idle.min(2 * self.max_idle_balance_cost);
        }
    }
}

/// `sg_lb_stats` of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupStats {
    pub load: u64,
    /// `sum_nr_running`: the runqueues' `nr_running`, delayed tasks included.
    pub nr_running: u64,
    /// `sum_h_nr_running`: their fair tasks that are runnable (`cfs.h_nr_runnable`).
    pub h_nr_running: u64,
    pub idle_cpus: u64,
    pub weight: u64,
    pub capacity: u64,
    pub avg_load: u64,
}

impl GroupStats {
    /// `group_classify` (reduced: the runqueue load stands for runnable and utilisation, the
    /// utilisation capped at the group's capacity).
    pub fn classify(&self, imbalance_pct: u64) -> GroupType {
        self.classify_util(imbalance_pct, self.load.min(self.capacity))
    }

    /// The sums `update_sg_lb_stats` and `update_sg_wakeup_stats` make over group `g`, with
    /// `cap` each CPU's capacity, and the group's utilisation (`group_util`: each CPU's at
    /// most its capacity); one read of each CPU's published state.
    pub fn gather(g: &[CpuId], view: &CpuView, cap: impl Fn(CpuId) -> u64) -> (GroupStats, u64) {
        let mut st = GroupStats {
            weight: g.len() as u64,
            ..GroupStats::default()
        };
        let mut util = 0;
        for &c in g {
            let cs = view.cpu(c);
            st.capacity += cap(c);
            st.load += cs.load;
            util += cs.load.min(cap(c));
            st.h_nr_running += cs.nr_running as u64;
            // rq->nr_running, delayed tasks included; idle: the idle task with nothing queued.
            st.nr_running += cs.rq_nr_running() as u64;
            if cs.rq_nr_running() == 0 && cs.curr.is_none() {
                st.idle_cpus += 1;
            }
        }
        (st, util)
    }

    /// `group_classify` with the group's utilisation given (`group_util`: the kernel sums
    /// each CPU's, capped at that CPU's capacity), the runqueue load standing for runnable.
    pub fn classify_util(&self, imbalance_pct: u64, util: u64) -> GroupType {
        let runnable = self.load;
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
    pub newidle: NewIdle,
    /// Asymmetric machines: what every CPU publishes (utilisation, misfit load, stopper
    /// requests); `None` on a machine of one kind of CPU, whose balancing is as before.
    pub asym: Option<std::sync::Arc<super::asym::Published>>,
    /// The pending pass may push the source's running task if nothing else moves
    /// (`need_active_balance`: a misfit, or asym packing's `asym_active_balance`).
    pub active_ok: bool,
    /// SIS_UTIL: the LLC's `nr_idle_scan`, which this CPU's periodic passes over the LLC
    /// level update (`None`: SIS_UTIL off, or a machine of several kinds of CPU, whose
    /// balancer `capacity::find_src` does not sum utilisation and whose wakeups search by
    /// capacity instead).
    pub llc_shared: Option<std::sync::Arc<LlcShared>>,
}

impl Domains {
    /// `build_sched_domains` + `sd_init` for `cpu`.
    pub fn build(cpu: CpuId, topology: &Topology, migration_cost: u64) -> Domains {
        let spans = SchedDomains::build(cpu, topology);
        // SD_SHARE_LLC: every CPU of the span under one last-level cache.
        let llc = |span: &[CpuId]| {
            span.iter()
                .all(|&c| topology.cache[c] == topology.cache[cpu])
        };
        let shares_llc: Vec<bool> = spans.levels.iter().map(|l| llc(&l.span)).collect();
        let is_numa = |l: &super::sched_domains::DomainLevel| {
            l.span
                .iter()
                .any(|&c| topology.node[c] != topology.node[cpu])
        };
        // imb_numa_nr (build_sched_domains, topology.c 2548).
        let mut imb_nr = vec![0u64; spans.levels.len()];
        let (mut imb, mut imb_span) = (0u64, 1u64);
        for i in 0..spans.levels.len() {
            let w = spans.levels[i].span.len() as u64;
            if !shares_llc[i] && i > 0 && shares_llc[i - 1] {
                let child = spans.levels[i - 1].span.len() as u64;
                let nr_llcs = w / child;
                imb = if nr_llcs == 1 { w >> 3 } else { nr_llcs }.max(1);
                imb_nr[i] = imb;
                // The span of the first NUMA domain at or above this one's parent.
                imb_span = spans.levels[i + 1..]
                    .iter()
                    .find(|l| is_numa(l))
                    .map_or(w, |l| l.span.len() as u64);
            } else {
                imb_nr[i] = imb * (w / imb_span).max(1);
            }
        }
        let levels = spans
            .levels
            .into_iter()
            .zip(imb_nr)
            .map(|(mut l, imb_numa_nr)| {
                // build_sched_groups links a CPU's groups from its own on, wrapping round
                // (`for_each_cpu_wrap(i, span, cpu)`): a tie in update_sd_pick_busiest or
                // update_pick_idlest goes to the first group after the local one.
                if let Some(own) = l.groups.iter().position(|g| g.contains(&cpu)) {
                    l.groups.rotate_left(own);
                }
                let weight = l.span.len() as u64;
                // sd_init: imbalance_pct 117 for every level but SMT siblings' (110);
                // cache_nice_tries 1, 2 across NUMA nodes, 0 between SMT siblings.
                let numa = is_numa(&l);
                let (pct, tries) = match l.name {
                    "SMT" => (110, 0),
                    _ if numa => (117, 2),
                    _ => (117, 1),
                };
                Level {
                    name: l.name,
                    imbalance_pct: pct,
                    busy_factor: 16,
                    min_interval_ms: weight,
                    max_interval_ms: 2 * weight,
                    cache_nice_tries: tries,
                    numa,
                    imb_numa_nr,
                    group_cores: l
                        .groups
                        .iter()
                        .map(|g| {
                            let mut cores: Vec<usize> =
                                g.iter().map(|&c| topology.core[c]).collect();
                            cores.sort_unstable();
                            cores.dedup();
                            cores.len() as u64
                        })
                        .collect(),
                    balance_interval_ms: weight,
                    last_balance: 0,
                    nr_balance_failed: 0,
                    max_newidle_lb_cost: 0,
                    last_decay_max_lb_cost: 0,
                    newidle_call: 512,
                    newidle_success: 256,
                    newidle_ratio: 512,
                    span: l.span,
                    groups: l.groups,
                }
            })
            .collect();
        Domains {
            levels,
            pending: None,
            newidle: NewIdle::new(cpu, migration_cost),
            asym: None,
            active_ok: false,
            llc_shared: None,
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
    /// `sched_idle`: this CPU runs SCHED_IDLE tasks only (`sched_idle_cpu`), so that it is not
    /// `busy` and its intervals are not stretched by `busy_factor`, though it balances as a
    /// CPU that is not idle.
    pub fn find_busiest(
        &mut self,
        ops: &mut OpCounter,
        now: u64,
        this_cpu: CpuId,
        view: &CpuView,
        idle: CpuIdle,
        sched_idle: bool,
    ) -> Option<Busiest> {
        self.pending = None;
        if idle == CpuIdle::NewlyIdle {
            return self.find_busiest_newidle(ops, now, this_cpu, view);
        }
        // "Decay the newidle max times here because this is a regular visit to all the
        // domains" (each level's result overwrites the last, as the kernel's need_decay).
        let mut need_decay = false;
        let mut max_cost = 0;
        for lvl in &mut self.levels {
            need_decay = lvl.newidle_cost(now, 0, 0);
            max_cost += lvl.max_newidle_lb_cost;
        }
        if need_decay {
            self.newidle.max_idle_balance_cost = max_cost.max(self.newidle.migration_cost);
        }
        for i in 0..self.levels.len() {
            let lvl = &self.levels[i];
            // get_sd_balance_interval: balance_interval ms, x busy_factor less a jiffy
            // on a busy CPU (`busy = idle != CPU_IDLE && !sched_idle_cpu(cpu)`).
            let mut every = lvl.balance_interval_ms * 1_000_000;
            if idle == CpuIdle::NotIdle && !sched_idle {
                let jiffy = 1_000_000_000 / view.hz.max(1) as u64;
                every = (every * lvl.busy_factor).saturating_sub(jiffy).max(jiffy);
            }
            if now < lvl.last_balance.saturating_add(every) {
                continue;
            }
            self.levels[i].last_balance = now;
            if let Some(b) = self.search(ops, i, this_cpu, view, idle) {
                return Some(b);
            }
        }
        None
    }

    /// `sched_balance_newidle`: stamps the idle entry, then searches the levels its gates
    /// let through, opening a [`Pass`] for `newidle_done` when it searched any.
    fn find_busiest_newidle(
        &mut self,
        ops: &mut OpCounter,
        now: u64,
        this_cpu: CpuId,
        view: &CpuView,
    ) -> Option<Busiest> {
        self.newidle.idle_stamp = Some(now);
        self.newidle.pass = None;
        let (Some(first), Some(root)) = (self.levels.first(), self.levels.last()) else {
            return None;
        };
        // get_rd_overloaded: one read of the root domain's flag.
        ops.remote_touches += 1;
        // The root level spans every CPU: a host's count of such CPUs answers at once.
        let overloaded = match view.overloaded {
            Some(n) if root.span.len() == view.ncpus() => n > 0,
            _ => root.span.iter().any(|&c| view.cpu(c).rq_nr_running() >= 2),
        };
        if !overloaded || self.newidle.avg_idle < first.max_newidle_lb_cost {
            return None;
        }
        let mut pass = Pass {
            started: now,
            levels: 0,
            weights: [1; 8],
        };
        let mut cost = 0;
        let mut found = None;
        for i in 0..self.levels.len().min(8) {
            if self.newidle.avg_idle < cost + self.levels[i].max_newidle_lb_cost {
                break;
            }
            // NI_RANDOM: "Throw a 1k sided dice; and only run newidle_balance according to
            // the success rate."
            let d1k = self.newidle.rng.next_u32() % 1024;
            let weight = 1 + self.levels[i].newidle_ratio;
            if d1k > weight {
                self.levels[i].newidle_stats(0);
                continue;
            }
            pass.levels |= 1 << i;
            pass.weights[i] = (1024 + weight / 2) / weight;
            cost += self.levels[i].max_newidle_lb_cost;
            found = self.search(ops, i, this_cpu, view, CpuIdle::NewlyIdle);
            if found.is_some() {
                break;
            }
        }
        if pass.levels != 0 {
            self.newidle.pass = Some(pass);
        }
        found
    }

    /// `newidle_done`: the pass that began at `pass.started` ended at `now`, having pulled a
    /// task or not. Its cost raises each searched level's `max_newidle_lb_cost` (shared
    /// equally) and the runqueue's `max_idle_balance_cost`; the level it ended on counts a
    /// success, weighted by how unlikely its draw was.
    pub fn newidle_done(&mut self, now: u64, pulled: bool) {
        let Some(pass) = self.newidle.pass.take() else {
            return;
        };
        let cost = now.saturating_sub(pass.started);
        let share = cost / u64::from(pass.levels.count_ones().max(1));
        let last = 31 - pass.levels.leading_zeros() as usize;
        for i in 0..self.levels.len().min(8) {
            if pass.levels & (1 << i) != 0 {
                let success = if pulled && i == last {
                    pass.weights[i]
                } else {
                    0
                };
                self.levels[i].newidle_cost(now, share, success);
            }
        }
        if cost > self.newidle.max_idle_balance_cost {
            self.newidle.max_idle_balance_cost = cost;
        }
        if pulled {
            self.newidle.idle_stamp = None;
        }
    }

    /// `sched_balance_rq` at level `i`, up to the choice of source runqueue.
    fn search(
        &mut self,
        ops: &mut OpCounter,
        i: usize,
        this_cpu: CpuId,
        view: &CpuView,
        idle: CpuIdle,
    ) -> Option<Busiest> {
        let mut sum_util = 0;
        let found = find_src(
            ops,
            &self.levels[i],
            this_cpu,
            view,
            idle,
            self.asym.as_deref(),
            &mut sum_util,
        );
        // update_sd_lb_stats ends with update_idle_cpu_scan ("only during periodic load
        // balancing, rather than CPU_NEWLY_IDLE, because the latter can fire way more
        // frequently than the former").
        if let Some(sh) = self.llc_shared.as_deref() {
            if idle != CpuIdle::NewlyIdle && self.asym.is_none() {
                let l = &self.levels[i];
                sh.update_idle_cpu_scan(this_cpu, l.span.len(), sum_util, l.imbalance_pct);
            }
        }
        let lvl = &mut self.levels[i];
        match found {
            Some((cpu, m, active_ok)) => {
                self.active_ok = active_ok;
                // "We were unbalanced, so reset the balancing interval" (whether or not
                // the pass then moves anything).
                lvl.balance_interval_ms = lvl.min_interval_ms;
                self.pending = Some((i, m));
                let imbalance = match m {
                    Migration::Tasks(n) | Migration::Load(n) => n as usize,
                    Migration::Misfit => 1,
                };
                Some(Busiest { cpu, imbalance })
            }
            None => {
                // out_balanced: the level is fine; back off, except after a new-idle
                // pass, which runs at every idle entry and would send the interval
                // up in no time.
                lvl.nr_balance_failed = 0;
                if idle != CpuIdle::NewlyIdle && lvl.balance_interval_ms < lvl.max_interval_ms {
                    lvl.balance_interval_ms *= 2;
                }
                None
            }
        }
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

/// `sibling_imbalance` (fair.c 10460): the running tasks to move so that both groups run as
/// many per core; (tasks, cores) of the busiest and the local group.
fn sibling_imbalance(idle: CpuIdle, busiest: (u64, u64), local: (u64, u64)) -> u64 {
    let ((b_nr, b_cores), (l_nr, l_cores)) = (busiest, local);
    if !idle.is_idle() || b_nr == 0 {
        return 0;
    }
    if b_cores == l_cores {
        return b_nr.saturating_sub(l_nr);
    }
    let imb = (l_cores * b_nr).saturating_sub(b_cores * l_nr);
    let imb = (2 * imb + l_cores + b_cores) / (l_cores + b_cores);
    if imb <= 1 && l_nr == 0 && b_nr > 1 {
        return 2;
    }
    imb
}

/// `NUMA_IMBALANCE_MIN` (fair.c 1478).
const NUMA_IMBALANCE_MIN: u64 = 2;

/// `adjust_numa_imbalance` (fair.c 1481): no imbalance of `NUMA_IMBALANCE_MIN` tasks or fewer
/// while the destination would run at most `imb_numa_nr`.
pub fn adjust_numa_imbalance(imbalance: u64, dst_running: u64, imb_numa_nr: u64) -> u64 {
    if dst_running > imb_numa_nr {
        return imbalance;
    }
    if imbalance <= NUMA_IMBALANCE_MIN {
        return 0;
    }
    imbalance
}

/// A group made of one core's SMT siblings (`sg->flags & SD_SHARE_CPUCAPACITY`).
pub(super) fn smt_group(topology: &Topology, g: &[CpuId]) -> bool {
    g.len() > 1 && g.iter().all(|&c| topology.core[c] == topology.core[g[0]])
}

/// `update_sd_lb_stats` + `sched_balance_find_src_group` + `calculate_imbalance` +
/// `sched_balance_find_src_rq` within one level.
fn find_src(
    ops: &mut OpCounter,
    lvl: &Level,
    this_cpu: CpuId,
    view: &CpuView,
    idle: CpuIdle,
    asym: Option<&super::asym::Published>,
    sum_util: &mut u64,
) -> Option<(CpuId, Migration, bool)> {
    match asym {
        Some(p) => capacity::find_src(ops, lvl, this_cpu, view, idle, p),
        None => find_src_sym(ops, lvl, this_cpu, view, idle, sum_util).map(|(c, m)| (c, m, false)),
    }
}

/// `find_src` on a machine whose CPUs are all alike; `sum_util` gets the sum of the groups'
/// utilisation (`update_sd_lb_stats`'s, for SIS_UTIL), each CPU's `cpu_util_cfs` at most its
/// capacity, with the runqueue's PELT load standing for its utilisation as in `classify`.
fn find_src_sym(
    ops: &mut OpCounter,
    lvl: &Level,
    this_cpu: CpuId,
    view: &CpuView,
    idle: CpuIdle,
    sum_util: &mut u64,
) -> Option<(CpuId, Migration)> {
    let pct = lvl.imbalance_pct;
    let mut local: Option<(usize, GroupStats, GroupType)> = None;
    let mut busiest: Option<(usize, GroupStats, GroupType)> = None;
    let (mut total_load, mut total_capacity) = (0u64, 0u64);
    for (gi, g) in lvl.groups.iter().enumerate() {
        ops.remote_touches += g.len() as u64;
        // group_util: each CPU's `cpu_util_cfs`, at most its capacity.
        let (mut st, util) = GroupStats::gather(g, view, |_| CAPACITY);
        *sum_util += util;
        let gt = st.classify_util(pct, util);
        if gt == GroupType::Overloaded {
            st.avg_load = st.load * CAPACITY / st.capacity;
        }
        total_load += st.load;
        total_capacity += st.capacity;
        if g.contains(&this_cpu) {
            local = Some((gi, st, gt));
            continue;
        }
        // update_sd_pick_busiest: "Make sure that there is at least one task to pull".
        if st.h_nr_running == 0 {
            continue;
        }
        let better = match busiest {
            None => true,
            Some((bi, b, bt)) => {
                if gt != bt {
                    gt > bt
                } else {
                    match gt {
                        // "avg_load is not computed and always 0 so we select the 1st one,
                        // except if @sg is composed of SMT siblings": of equal fully busy
                        // groups the later replaces the busiest unless the busiest is an SMT
                        // core ("SMT sched groups need more help", v6.5).
                        GroupType::FullyBusy => {
                            st.avg_load > b.avg_load
                                || (st.avg_load == b.avg_load
                                    && !smt_group(view.topology, &lvl.groups[bi]))
                        }
                        GroupType::Overloaded | GroupType::Misfit | GroupType::AsymPacking => {
                            st.avg_load > b.avg_load
                        }
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
        // "busiest doesn't have any tasks waiting to run"
        if b.h_nr_running == 1 {
            return None;
        }
    }
    // calculate_imbalance
    let m = if lt == GroupType::HasSpare {
        let n = if lvl.numa {
            // A NUMA level's groups carry their child's SD_PREFER_SIBLING (every level
            // below a NUMA one has it): sibling_imbalance, fair.c 10460.
            let li = lvl.groups.iter().position(|g| g.contains(&this_cpu));
            sibling_imbalance(
                idle,
                (b.nr_running, lvl.group_cores[bi]),
                (l.nr_running, li.map_or(1, |i| lvl.group_cores[i])),
            )
        } else if b.weight == 1 {
            // sibling_imbalance with one core each side: the difference in running tasks.
            if !idle.is_idle() {
                0
            } else {
                b.nr_running.saturating_sub(l.nr_running)
            }
        } else {
            l.idle_cpus.saturating_sub(b.idle_cpus)
        };
        // "Consider allowing a small imbalance between NUMA groups"
        let n = if lvl.numa {
            adjust_numa_imbalance(n, l.nr_running + 1, lvl.imb_numa_nr)
        } else {
            n
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
        Migration::Misfit => 1,
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
                Migration::Tasks(_) | Migration::Misfit => {
                    (cs.nr_running as u64, std::cmp::Reverse(c))
                }
                Migration::Load(_) => (cs.load, std::cmp::Reverse(c)),
            }
        })?;
    Some((cpu, m))
}

mod capacity;
mod fork;
pub use fork::DstDomains;
#[cfg(test)]
mod tests;

//! Where today's fair class puts a new task: the slow path of `select_task_rq_fair` for
//! `WF_FORK` (`kernel/sched/fair.c` of v6.18: `sched_balance_find_dst_cpu`,
//! `sched_balance_find_dst_group`, `update_sg_wakeup_stats`, `update_pick_idlest`,
//! `sched_balance_find_dst_group_cpu`; the group types are Vincent Guittot's rework of v5.5,
//! "sched/fair: Rework find_idlest_group()", and the `group_util` tie-break is commit
//! 3edecfef0285 of v5.9). Every 6.18 domain has `SD_BALANCE_FORK` (`sd_init`; a NUMA level
//! loses it only beyond `node_reclaim_distance`, which no shipped profile exceeds), so the
//! walk starts at the parent CPU's widest domain:
//!
//! - `sched_balance_find_dst_group`: per group of the level, its wakeup statistics (the
//!   runqueues' load, `rq->nr_running` with delayed tasks, CPUs with nothing queued that are
//!   idle, capacity) and its type by `group_classify`; the idlest group other than the local
//!   one is the lowest type, then by type the lowest average load (fully busy, overloaded)
//!   or the most idle CPUs and then the lowest utilisation (spare capacity). The local group
//!   is kept (`NULL`) when it is of a lower type; when of the same type, a busy pair keeps it
//!   unless the local average load exceeds the idlest's by `imbalance_pct` (and the idlest is
//!   not heavier by `imbalance`, a nice-0 task's load times `imbalance_pct − 100` percent; on
//!   a NUMA level it must be lighter by `imbalance`), and a pair with spare capacity keeps it
//!   unless the idlest has more idle CPUs (on a NUMA level, unless that leaves more than
//!   `imb_numa_nr` tasks or an imbalance of more than two idle CPUs). The groups are looked at
//!   from the local one on, wrapping round, as `build_sched_groups` links them, so a tie goes
//!   to the first group after the local one.
//! - `sched_balance_find_dst_group_cpu`: the group's only CPU; else the first CPU running
//!   SCHED_IDLE tasks only, else the idle CPU that went idle last, else the least loaded.
//! - `sched_balance_find_dst_cpu`: no group or the same CPU sends the walk one level down;
//!   another CPU restarts it there, at that CPU's widest level narrower than this one.
//!
//! A new task has no PELT history yet (`last_update_time` is 0 until its first enqueue
//! attaches it, after the placement), so the `*_without(p)` helpers see the runqueues as they
//! are, and its utilisation of 0 fits every CPU: no group is `group_misfit_task` at fork
//! (unless a `uclamp_min` inherited from the parent says otherwise: not modelled).
//! `group_imbalanced` (a group the balancer could not even out because of affinity) is not
//! modelled either, here or in the balancer.
//!
//! Simplified, and said so: the runqueue's PELT load stands for its load, runnable and
//! utilisation averages alike, as in [`GroupStats::classify`]; a CPU's capacity is its
//! `capacity_of` without the RT, deadline and IRQ pressure the kernel subtracts; "went idle
//! last" reads the time of the CPU's last switch ([`CpuStatus::last_schedule_ns`]) for
//! `rq->idle_stamp`, and the cpuidle exit latency the kernel compares first is left out:
//! with the `haltpoll` driver of the recording VM (`guest_halt_poll_ns=0`: every idle vCPU
//! halts at once, one exit latency for all) and on a machine whose deeper states come with
//! longer idleness, both orders agree. `sched_core_cookie_match` (core scheduling) is not
//! modelled. NUMA balancing's preferred node (`p->numa_preferred_nid`) is none for a new
//! task.
//!
//! [`CpuStatus::last_schedule_ns`]: crate::class::CpuStatus::last_schedule_ns

use super::{adjust_numa_imbalance, Domains, GroupStats, GroupType, CAPACITY};
use crate::class::CpuView;
use crate::machine::Topology;
use crate::task::CpuId;

/// One level of a CPU's domains as the fork walk reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DstLevel {
    /// `sd->span_weight`.
    weight: usize,
    groups: Vec<Vec<CpuId>>,
    imbalance_pct: u64,
    /// `SD_NUMA`.
    numa: bool,
    imb_numa_nr: u64,
}

/// Every CPU's 6.18 domains (lowest first), built once from the topology and shared by the
/// class's runqueues: the fork walk moves from one CPU's domains to another's.
#[derive(Clone, Debug, Default)]
pub struct DstDomains {
    per_cpu: Vec<Vec<DstLevel>>,
}

/// What `update_sg_wakeup_stats` gathers of one group.
#[derive(Clone, Copy, Debug)]
struct WakeupStats {
    st: GroupStats,
    ty: GroupType,
    /// `group_util`: the CPUs' utilisation, each at most its capacity.
    util: u64,
}

impl DstDomains {
    pub fn new(topology: &Topology) -> DstDomains {
        let per_cpu = (0..topology.ncpus)
            .map(|cpu| {
                Domains::build(cpu, topology, 0)
                    .levels
                    .into_iter()
                    .map(|l| DstLevel {
                        weight: l.span.len(),
                        // From the CPU's own group on, as `Domains::build` orders them.
                        groups: l.groups,
                        imbalance_pct: l.imbalance_pct,
                        numa: l.numa,
                        imb_numa_nr: l.imb_numa_nr,
                    })
                    .collect()
            })
            .collect();
        DstDomains { per_cpu }
    }

    /// `sched_balance_find_dst_cpu(sd, p, cpu, prev_cpu, SD_BALANCE_FORK)` for a task
    /// forked on `this_cpu` (its `prev_cpu` too: `sched_cgroup_fork` set the child's CPU to
    /// the parent's), `allowed` its `cpus_ptr`.
    pub fn find_dst_cpu(
        &self,
        view: &CpuView,
        allowed: &dyn Fn(CpuId) -> bool,
        this_cpu: CpuId,
    ) -> CpuId {
        let mut cpu = this_cpu;
        let mut new_cpu = this_cpu;
        let Some(levels) = self.per_cpu.get(cpu) else {
            return this_cpu;
        };
        // The widest domain with SD_BALANCE_FORK: every level has it.
        let mut level = levels.len().checked_sub(1);
        while let Some(i) = level {
            let lvl = &self.per_cpu[cpu][i];
            let Some(g) = find_dst_group(lvl, view, allowed, cpu) else {
                level = i.checked_sub(1);
                continue;
            };
            new_cpu = find_dst_group_cpu(&lvl.groups[g], view, allowed, cpu);
            if new_cpu == cpu {
                // "Now try balancing at a lower domain level of 'cpu'".
                level = i.checked_sub(1);
                continue;
            }
            // "Now try balancing at a lower domain level of 'new_cpu'": its widest domain
            // narrower than this one.
            let weight = lvl.weight;
            cpu = new_cpu;
            level = self.per_cpu[cpu].iter().rposition(|l| l.weight < weight);
        }
        new_cpu
    }
}

/// `update_sg_wakeup_stats` for a new task (no contribution of its own anywhere).
fn wakeup_stats(g: &[CpuId], view: &CpuView, pct: u64) -> WakeupStats {
    let topo = view.topology;
    // cpu_util_without: each CPU's utilisation at most its capacity.
    let (mut st, util) = GroupStats::gather(g, view, |c| topo.capacity_of(c));
    let ty = st.classify_util(pct, util);
    // "Computing avg_load makes sense only when group is fully busy or overloaded".
    if matches!(ty, GroupType::FullyBusy | GroupType::Overloaded) {
        st.avg_load = st.load * CAPACITY / st.capacity.max(1);
    }
    WakeupStats { st, ty, util }
}

/// `update_pick_idlest`: whether `sgs` is idler than the idlest so far (`None`: the
/// kernel's starting `idlest_sgs`, overloaded with an average load of `UINT_MAX`).
fn idler(idlest: Option<&WakeupStats>, sgs: &WakeupStats) -> bool {
    let Some(idlest) = idlest else {
        return sgs.ty < GroupType::Overloaded || sgs.st.avg_load < u64::from(u32::MAX);
    };
    if sgs.ty != idlest.ty {
        return sgs.ty < idlest.ty;
    }
    match sgs.ty {
        GroupType::Overloaded | GroupType::FullyBusy => idlest.st.avg_load > sgs.st.avg_load,
        // Not used in the slow wakeup path (and a misfit never arises at fork: above).
        GroupType::Misfit | GroupType::AsymPacking => false,
        GroupType::HasSpare => {
            idlest.st.idle_cpus < sgs.st.idle_cpus
                || (idlest.st.idle_cpus == sgs.st.idle_cpus && idlest.util > sgs.util)
        }
    }
}

/// `sched_balance_find_dst_group`: the index of the group to move to, `None` to stay in the
/// local one.
fn find_dst_group(
    lvl: &DstLevel,
    view: &CpuView,
    allowed: &dyn Fn(CpuId) -> bool,
    this_cpu: CpuId,
) -> Option<usize> {
    let pct = lvl.imbalance_pct;
    // scale_load_down(NICE_0_LOAD) * (imbalance_pct - 100) / 100
    let imbalance = CAPACITY * (pct - 100) / 100;
    let mut local: Option<(usize, WakeupStats)> = None;
    let mut idlest: Option<(usize, WakeupStats)> = None;
    for (gi, g) in lvl.groups.iter().enumerate() {
        // "Skip over this group if it has no CPUs allowed".
        if !g.iter().any(|&c| allowed(c)) {
            continue;
        }
        let sgs = wakeup_stats(g, view, pct);
        if g.contains(&this_cpu) {
            local = Some((gi, sgs));
        } else if idler(idlest.as_ref().map(|(_, s)| s), &sgs) {
            idlest = Some((gi, sgs));
        }
    }
    let (gi, idlest) = idlest?;
    // "The local group has been skipped because of CPU affinity".
    let Some((li, local)) = local else {
        return Some(gi);
    };
    if local.ty != idlest.ty {
        // A local group busier than the idlest sends the task there.
        return (local.ty > idlest.ty).then_some(gi);
    }
    let stay = match local.ty {
        GroupType::Overloaded | GroupType::FullyBusy => {
            (lvl.numa && idlest.st.avg_load + imbalance >= local.st.avg_load)
                || idlest.st.avg_load >= local.st.avg_load + imbalance
                || 100 * local.st.avg_load <= pct * idlest.st.avg_load
        }
        GroupType::Misfit | GroupType::AsymPacking => true,
        GroupType::HasSpare => {
            let numa_keeps = lvl.numa && {
                // The task may run on fewer CPUs of the local group than the level's
                // threshold counts (`p->nr_cpus_allowed != NR_CPUS`, always so).
                let w = lvl.groups[li].iter().filter(|&&c| allowed(c)).count() as u64;
                let imb_numa_nr = w.min(lvl.imb_numa_nr);
                let imb = local.st.idle_cpus.abs_diff(idlest.st.idle_cpus);
                adjust_numa_imbalance(imb, local.st.nr_running + 1, imb_numa_nr) == 0
            };
            numa_keeps || local.st.idle_cpus >= idlest.st.idle_cpus
        }
    };
    (!stay).then_some(gi)
}

/// `sched_balance_find_dst_group_cpu`.
fn find_dst_group_cpu(
    g: &[CpuId],
    view: &CpuView,
    allowed: &dyn Fn(CpuId) -> bool,
    this_cpu: CpuId,
) -> CpuId {
    // "Check if we have any choice".
    if g.len() == 1 {
        return g[0];
    }
    let mut least_loaded = this_cpu;
    let mut min_load = u64::MAX;
    // (CPU, rq->idle_stamp)
    let mut shallowest: Option<(CpuId, u64)> = None;
    for &c in g.iter().filter(|&&c| allowed(c)) {
        let cs = view.cpu(c);
        if cs.sched_idle {
            return c;
        }
        if cs.curr.is_none() && cs.rq_nr_running() == 0 {
            // The most recently idled CPU "might have a warmer cache".
            if shallowest.is_none_or(|(_, stamp)| cs.last_schedule_ns > stamp) {
                shallowest = Some((c, cs.last_schedule_ns));
            }
        } else if shallowest.is_none() && cs.load < min_load {
            min_load = cs.load;
            least_loaded = c;
        }
    }
    shallowest.map_or(least_loaded, |(c, _)| c)
}

#[cfg(test)]
mod tests {
    //! Hand-worked placements (capacity 1024 per CPU; `imbalance_pct` 117 on MC, 110 on SMT;
    //! `imbalance` = 1024 × 17 / 100 = 174 on MC).
    use super::*;
    use crate::class::{CpuStatus, Cpus};
    use crate::machine::TopologySpec;
    use crate::task::TaskId;

    fn topo(cpus: usize, smt: usize) -> Topology {
        Topology::from_spec(&TopologySpec {
            cpus,
            threads_per_core: smt,
            cpus_per_cache: cpus,
            cpus_per_node: None,
            cpus_per_l2: None,
            cpus_per_package: None,
        })
    }

    /// A CPU with `nr` runnable tasks of PELT load `load` in all, idle since `idle_at` when
    /// it has none.
    fn cpu(nr: usize, load: u64, idle_at: u64) -> CpuStatus {
        CpuStatus {
            curr: (nr > 0).then_some(TaskId(nr as u32 + 100)),
            nr_running: nr,
            load,
            nr_delayed: 0,
            sched_idle: false,
            last_schedule_ns: idle_at,
        }
    }

    fn place(
        t: &Topology,
        st: &[CpuStatus],
        this: CpuId,
        allowed: &dyn Fn(CpuId) -> bool,
    ) -> CpuId {
        let v = CpuView {
            cpus: Cpus::Snapshot(st),
            topology: t,
            now: 0,
            hz: 250,
            overloaded: None,
        };
        DstDomains::new(t).find_dst_cpu(&v, allowed, this)
    }

    const ANY: &dyn Fn(CpuId) -> bool = &|_| true;

    #[test]
    fn an_idle_cpu_takes_the_child_of_a_busy_parent() {
        let t = topo(2, 1);
        // Local {0}: spare capacity, no idle CPU; {1}: one idle CPU.
        assert_eq!(place(&t, &[cpu(1, 300, 0), cpu(0, 0, 5)], 0, ANY), 1);
    }

    #[test]
    fn two_groups_with_spare_capacity_and_no_idle_cpu_keep_the_child_local() {
        // Both have spare capacity (300 × 117 < 102 400), no idle CPU: the local group wins
        // the tie although the other is lighter (the 2.6.2x walk would move it).
        let t = topo(2, 1);
        assert_eq!(place(&t, &[cpu(1, 300, 0), cpu(1, 200, 0)], 0, ANY), 0);
    }

    #[test]
    fn a_busier_type_sends_the_child_to_the_lighter_group() {
        let t = topo(2, 1);
        // Local: 2 tasks, util 1024 × 117 > 102 400 → overloaded; the other: one task of
        // 1 000, 1 000 × 117 = 117 000 > 102 400 → fully busy, a lower type.
        assert_eq!(place(&t, &[cpu(2, 2048, 0), cpu(1, 1000, 0)], 0, ANY), 1);
        // Fully busy local (1 000) against spare capacity (800 × 117 = 93 600): move.
        assert_eq!(place(&t, &[cpu(1, 1000, 0), cpu(1, 800, 0)], 0, ANY), 1);
        // Both fully busy, 1 000 against 950: 100 × 1 000 ≤ 117 × 950, stay.
        assert_eq!(place(&t, &[cpu(1, 1000, 0), cpu(1, 950, 0)], 0, ANY), 0);
    }

    #[test]
    fn overloaded_groups_compare_average_loads_by_imbalance_pct() {
        let t = topo(2, 1);
        // 3 000 against 2 000: 2 000 < 3 000 + 174 and 300 000 > 117 × 2 000: move.
        assert_eq!(place(&t, &[cpu(3, 3000, 0), cpu(2, 2000, 0)], 0, ANY), 1);
        // 3 000 against 2 600: 300 000 ≤ 117 × 2 600 = 304 200: stay.
        assert_eq!(place(&t, &[cpu(3, 3000, 0), cpu(2, 2600, 0)], 0, ANY), 0);
    }

    #[test]
    fn among_equally_idle_groups_the_least_utilised_is_the_idlest() {
        // Three single-CPU groups; the local one overloaded; {1} and {2} both with spare
        // capacity and no idle CPU: the lower group_util (200) wins (3edecfef0285).
        let t = topo(3, 1);
        let st = [cpu(2, 2048, 0), cpu(1, 500, 0), cpu(1, 200, 0)];
        assert_eq!(place(&t, &st, 0, ANY), 2);
    }

    #[test]
    fn the_walk_descends_into_the_chosen_core_and_takes_the_last_cpu_to_go_idle() {
        // Two SMT cores {0,1} {2,3} under one MC level. The parent's core is busy, the other
        // idle: MC moves to {2,3}; in it CPU 3 went idle last (80 > 50); then CPU 3's SMT
        // level ({2} against {3}, one idle CPU each) keeps it.
        let t = topo(4, 2);
        let st = [cpu(1, 300, 0), cpu(1, 300, 0), cpu(0, 0, 50), cpu(0, 0, 80)];
        assert_eq!(place(&t, &st, 0, ANY), 3);
        // In the chosen group a CPU that runs SCHED_IDLE tasks only is taken first; the SMT
        // level below then weighs it as busy, and moves on to its idle sibling.
        let mut st = [cpu(1, 300, 0), cpu(1, 300, 0), cpu(1, 3, 0), cpu(0, 0, 80)];
        st[2].sched_idle = true;
        assert_eq!(place(&t, &st, 0, ANY), 3);
        // With no idle sibling to move on to (CPU 3 busy; the parent's core overloaded, so
        // the MC level still leaves it), the SCHED_IDLE CPU keeps the task.
        let mut st = [
            cpu(2, 2048, 0),
            cpu(2, 2048, 0),
            cpu(1, 3, 0),
            cpu(1, 300, 0),
        ];
        st[2].sched_idle = true;
        assert_eq!(place(&t, &st, 0, ANY), 2);
    }

    #[test]
    fn affinity_skips_the_groups_the_task_may_not_use() {
        // Allowed on {0,1} only: MC sees the local group alone and keeps it; the SMT level
        // then moves to the idle sibling.
        let t = topo(4, 2);
        let st = [cpu(1, 300, 0), cpu(0, 0, 10), cpu(0, 0, 50), cpu(0, 0, 80)];
        assert_eq!(place(&t, &st, 0, &|c| c < 2), 1);
        // The parent runs where the child may not: the local group is skipped.
        assert_eq!(place(&t, &st, 0, &|c| c >= 2), 3);
    }

    #[test]
    fn a_one_cpu_machine_has_no_level_and_keeps_the_parent_cpu() {
        // No domain is built for one CPU: the walk has nothing to index.
        let t = topo(1, 1);
        assert_eq!(place(&t, &[cpu(1, 300, 0)], 0, ANY), 0);
    }

    #[test]
    fn a_group_s_utilisation_is_capped_per_cpu() {
        // Cores {0,1} {2,3}. CPU 0 runs two tasks (2 048), CPU 1 is idle, CPUs 2 and 3 run
        // one each (1 024, 600). The parent's core: util min(2 048, 1 024) + 0 = 1 024,
        // 204 800 > 1 024 × 117: spare capacity, one idle CPU; the other core none: keep it,
        // and the SMT level moves to CPU 1. (Capped for the group as a whole, 2 048 × 117 >
        // 204 800 would call the parent's core fully busy and send the child to CPU 3.)
        let t = topo(4, 2);
        let st = [
            cpu(2, 2048, 0),
            cpu(0, 0, 5),
            cpu(1, 1024, 0),
            cpu(1, 600, 0),
        ];
        assert_eq!(place(&t, &st, 0, ANY), 1);
    }

    #[test]
    fn a_tie_goes_to_the_first_group_after_the_local_one() {
        // Four single-CPU groups, the parent on CPU 2, the others idle since the same time:
        // the groups are looked at from CPU 2's on ({2} {3} {0} {1}), and of equally idle
        // ones the first stays the idlest.
        let t = topo(4, 1);
        let st = [cpu(0, 0, 5), cpu(0, 0, 5), cpu(1, 300, 0), cpu(0, 0, 5)];
        assert_eq!(place(&t, &st, 2, ANY), 3);
    }

    #[test]
    fn a_numa_level_keeps_a_child_home_while_the_imbalance_is_small() {
        // Two nodes of two CPUs, one LLC each: imb_numa_nr 2 at the NUMA level.
        let t = Topology::from_spec(&TopologySpec {
            cpus: 4,
            threads_per_core: 1,
            cpus_per_cache: 2,
            cpus_per_node: Some(2),
            cpus_per_l2: None,
            cpus_per_package: None,
        });
        // Home node: the parent and an idle CPU (1 idle), the other node 2 idle. Idle CPUs
        // differ by 1 ≤ NUMA_IMBALANCE_MIN and the home node would run 2 ≤ imb_numa_nr tasks:
        // adjust_numa_imbalance gives 0, so home is kept, and the LLC level takes CPU 1.
        let st = [cpu(1, 300, 0), cpu(0, 0, 5), cpu(0, 0, 10), cpu(0, 0, 20)];
        assert_eq!(place(&t, &st, 0, ANY), 1);
        // Home node with no idle CPU and 3 tasks: 4 > imb_numa_nr, the imbalance of 2 idle
        // CPUs stands, the other node wins, and in it the CPU idle last (3).
        let st = [cpu(2, 600, 0), cpu(1, 300, 0), cpu(0, 0, 10), cpu(0, 0, 20)];
        assert_eq!(place(&t, &st, 0, ANY), 3);
    }

    #[test]
    fn a_cpu_holding_a_delayed_task_is_not_idle() {
        // CPU 1 runs its idle task but still holds a sleeping task DELAY_DEQUEUE kept
        // (`rq->nr_running` 1): no idle CPU anywhere, both groups with spare capacity, and
        // the local one is kept.
        let t = topo(2, 1);
        let mut delayed = cpu(0, 100, 5);
        delayed.nr_delayed = 1;
        assert_eq!(place(&t, &[cpu(1, 300, 0), delayed], 0, ANY), 0);
        delayed.nr_delayed = 0;
        assert_eq!(place(&t, &[cpu(1, 300, 0), delayed], 0, ANY), 1);
    }

    #[test]
    fn with_no_idle_cpu_in_the_group_the_least_loaded_is_taken() {
        // The parent's core is overloaded (5 tasks); the other core has spare capacity
        // (util 1 400 × 117 < 204 800) and no idle CPU: its least loaded CPU, 3 (500), where
        // the SMT level keeps it ({3} has spare capacity, {2} at 900 is fully busy).
        let t = topo(4, 2);
        let st = [
            cpu(3, 3072, 0),
            cpu(2, 2048, 0),
            cpu(1, 900, 0),
            cpu(1, 500, 0),
        ];
        assert_eq!(place(&t, &st, 0, ANY), 3);
    }
}

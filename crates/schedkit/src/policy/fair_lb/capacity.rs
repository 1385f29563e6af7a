//! The 6.18 balancer's rules for CPUs that differ (`kernel/sched/fair.c` of v6.18), taken
//! only on a machine with asymmetric capacity or ITMT priorities (`Domains::asym`):
//!
//! - `update_sg_lb_stats` (10517): a group's capacity is its CPUs' `capacity_of`; on a domain
//!   with `SD_ASYM_CPUCAPACITY` (its span holds more than one capacity) the group's
//!   `group_misfit_task_load` is its CPUs' largest `rq->misfit_task_load`; a non-local group
//!   with runnable tasks whose best CPU (`asym_prefer_cpu`, the highest ITMT priority) this
//!   idle CPU is preferred to (`sched_group_asym`, 10417: not an SMT group with more than one
//!   busy CPU) is `group_asym_packing`.
//! - `group_classify` (10347): overloaded, then asym packing, then misfit, then fully busy.
//! - `update_sd_pick_busiest` (10616): a misfit group only for a CPU of greater capacity
//!   (`capacity_greater`) whose own group has spare capacity; among asym-packing groups the one
//!   of lowest priority; among misfit groups the largest misfit load; on an asymmetric domain
//!   no group of bigger CPUs that is not overloaded.
//! - `sched_balance_find_src_group` (11476 on): a misfit forces balancing; otherwise, with an
//!   Energy Model and no CPU overutilized, nothing is balanced (EAS keeps placement); asym
//!   packing forces balancing past the load checks.
//! - `calculate_imbalance` (11262): misfit → `migrate_misfit` of one task; asym packing →
//!   `migrate_task` of all the group's runnable tasks.
//! - `sched_balance_find_src_rq` (11602): on an asymmetric domain no CPU with one task that is
//!   not smaller than this one; no CPU with one task that is preferred to this one
//!   (`sched_asym`); for a misfit, the largest misfit load; by load, the largest load per
//!   capacity.
//! - `need_active_balance` (11782): a misfit migration, or `asym_active_balance` (11747: this
//!   CPU idle and using its priority, and preferred to the source or the source not using
//!   its own): when `detach_tasks` moved nothing, the source's running task is pushed here by
//!   the stopper (`active_load_balance_cpu_stop`; `SchedClass::push_running`).
//!
//! `sched_use_asym_prio` (10383): priorities count on a domain with `SD_ASYM_PACKING` (x86's
//! MC and above, not SMT: `x86_topology`, arch/x86/kernel/smpboot.c) when SMT is off or the
//! CPU's core is idle. Simplified: no `group_smt_balance` or `group_imbalanced`, the
//! overutilized state read from the CPUs' signals (`asym::overutilized`).

use super::{CpuIdle, GroupStats, GroupType, Level, Migration, CAPACITY};
use crate::class::CpuView;
use crate::ds::work::OpCounter;
use crate::policy::asym::{self, Published};
use crate::task::CpuId;

#[derive(Clone, Copy, Debug, Default)]
struct Extra {
    max_cap: u64,
    min_cap: u64,
    misfit: u64,
    prefer_cpu: CpuId,
}

pub(super) fn find_src(
    ops: &mut OpCounter,
    lvl: &Level,
    this_cpu: CpuId,
    view: &CpuView,
    idle: CpuIdle,
    published: &Published,
) -> Option<(CpuId, Migration, bool)> {
    let t = view.topology;
    let pct = lvl.imbalance_pct;
    let cap = |c: CpuId| t.capacity_of(c);
    let lvl_cap = lvl.span.iter().any(|&c| cap(c) != cap(lvl.span[0]));
    let lvl_pack = t.asym_packing && lvl.name != "SMT";
    let smt_active = (0..t.ncpus).any(|c| (0..t.ncpus).any(|s| s != c && t.core[s] == t.core[c]));
    let is_core_idle = |c: CpuId| {
        (0..t.ncpus)
            .filter(|&s| s != c && t.core[s] == t.core[c])
            .all(|s| view.idle_cpu(s))
    };
    let use_prio = |c: CpuId| lvl_pack && (!smt_active || is_core_idle(c));
    let sched_asym = |dst: CpuId, src: CpuId| use_prio(dst) && asym::sched_asym_prefer(t, dst, src);
    let mut groups: Vec<(usize, GroupStats, GroupType, Extra)> = Vec::new();
    let (mut total_load, mut total_capacity) = (0u64, 0u64);
    let mut local = None;
    for (gi, g) in lvl.groups.iter().enumerate() {
        ops.remote_touches += g.len() as u64;
        // The sums of update_sg_lb_stats, group_util capped per CPU (`cpu_util_cfs`).
        let (mut st, util) = GroupStats::gather(g, view, cap);
        let mut ex = Extra {
            min_cap: u64::MAX,
            prefer_cpu: g[0],
            ..Extra::default()
        };
        for &c in g {
            ex.max_cap = ex.max_cap.max(cap(c));
            ex.min_cap = ex.min_cap.min(cap(c));
            if lvl_cap {
                ex.misfit = ex.misfit.max(published.misfit(c));
            }
            if asym::sched_asym_prefer(t, c, ex.prefer_cpu) {
                ex.prefer_cpu = c;
            }
        }
        let is_local = g.contains(&this_cpu);
        let smt_group = super::smt_group(t, g);
        let group_asym = !is_local
            && idle.is_idle()
            && st.h_nr_running > 0
            && !(smt_group && st.weight - st.idle_cpus != 1)
            && sched_asym(this_cpu, ex.prefer_cpu);
        let mut gt = st.classify_util(pct, util);
        if gt != GroupType::Overloaded {
            if group_asym {
                gt = GroupType::AsymPacking;
            } else if ex.misfit > 0 {
                gt = GroupType::Misfit;
            }
        }
        if gt >= GroupType::FullyBusy {
            st.avg_load = st.load * CAPACITY / st.capacity.max(1);
        }
        total_load += st.load;
        total_capacity += st.capacity;
        if is_local {
            local = Some(groups.len());
        }
        groups.push((gi, st, gt, ex));
    }
    let (_, mut l, lt, _) = groups[local?];
    let mut busiest: Option<(usize, GroupStats, GroupType, Extra)> = None;
    for (k, &(gi, st, gt, ex)) in groups.iter().enumerate() {
        if Some(k) == local || st.h_nr_running == 0 {
            continue;
        }
        if lvl_cap
            && gt == GroupType::Misfit
            && (!asym::capacity_greater(cap(this_cpu), ex.max_cap) || lt != GroupType::HasSpare)
        {
            continue;
        }
        let better = match busiest {
            None => true,
            Some((bi, b, bt, bex)) => {
                if gt != bt {
                    gt > bt
                } else {
                    match gt {
                        GroupType::Overloaded => st.avg_load > b.avg_load,
                        // Of equal fully busy groups the later, unless the busiest is an SMT
                        // core (`update_sd_pick_busiest`, v6.5).
                        GroupType::FullyBusy => {
                            st.avg_load > b.avg_load
                                || (st.avg_load == b.avg_load
                                    && !super::smt_group(t, &lvl.groups[bi]))
                        }
                        GroupType::AsymPacking => {
                            asym::sched_asym_prefer(t, bex.prefer_cpu, ex.prefer_cpu)
                        }
                        GroupType::Misfit => ex.misfit > bex.misfit,
                        GroupType::HasSpare => {
                            st.idle_cpus < b.idle_cpus
                                || (st.idle_cpus == b.idle_cpus && st.nr_running > b.nr_running)
                        }
                    }
                }
            }
        };
        // "Candidate sg has no more than one task per CPU and has higher per-CPU capacity.
        // Migrating tasks to less capable CPUs may harm throughput."
        if better
            && lvl_cap
            && gt <= GroupType::FullyBusy
            && asym::capacity_greater(ex.min_cap, cap(this_cpu))
        {
            continue;
        }
        if better {
            busiest = Some((gi, st, gt, ex));
        }
    }
    let (bi, b, bt, bex) = busiest?;
    // sched_balance_find_src_group
    if bt != GroupType::Misfit {
        if !t.em.is_empty() && !asym::overutilized(t, &published.utils(), &published.clamps()) {
            return None;
        }
        if bt != GroupType::AsymPacking {
            if lt > bt {
                return None;
            }
            let avg = total_load * CAPACITY / total_capacity.max(1);
            if lt == GroupType::Overloaded
                && (l.avg_load >= b.avg_load
                    || l.avg_load >= avg
                    || 100 * b.avg_load <= pct * l.avg_load)
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
                if b.h_nr_running == 1 {
                    return None;
                }
            }
        }
    }
    // calculate_imbalance
    let m = match bt {
        GroupType::Misfit if lvl_cap => Migration::Misfit,
        GroupType::Misfit => Migration::Load(bex.misfit),
        GroupType::AsymPacking => Migration::Tasks(b.h_nr_running),
        _ if lt == GroupType::HasSpare => {
            let n = if b.weight == 1 {
                if !idle.is_idle() {
                    0
                } else {
                    b.nr_running.saturating_sub(l.nr_running)
                }
            } else {
                l.idle_cpus.saturating_sub(b.idle_cpus)
            };
            Migration::Tasks(n >> 1)
        }
        _ => {
            let avg = total_load * CAPACITY / total_capacity.max(1);
            if lt < GroupType::Overloaded {
                l.avg_load = l.load * CAPACITY / l.capacity.max(1);
                if l.avg_load >= b.avg_load || l.avg_load >= avg {
                    return None;
                }
            }
            let excess = b.avg_load.saturating_sub(avg) * b.capacity;
            let shortfall = avg.saturating_sub(l.avg_load) * l.capacity;
            Migration::Load(excess.min(shortfall) / CAPACITY)
        }
    };
    if matches!(m, Migration::Tasks(0) | Migration::Load(0)) {
        return None;
    }
    // sched_balance_find_src_rq
    let mut best: Option<(CpuId, u64, u64)> = None;
    for &c in &lvl.groups[bi] {
        let cs = view.cpu(c);
        let nr = cs.nr_running as u64;
        if nr == 0 {
            continue;
        }
        if lvl_cap && !asym::capacity_greater(cap(this_cpu), cap(c)) && nr == 1 {
            continue;
        }
        if sched_asym(c, this_cpu) && nr == 1 {
            continue;
        }
        let (key, c_cap) = match m {
            Migration::Misfit => (published.misfit(c), 1),
            Migration::Tasks(_) => (nr, 1),
            Migration::Load(_) => (cs.load, cap(c)),
        };
        // load_i / capacity_i > load_j / capacity_j, cross-multiplied; ties to the first.
        let more = match best {
            None => key > 0 || !matches!(m, Migration::Misfit),
            Some((_, bk, bc)) => key as u128 * bc as u128 > bk as u128 * c_cap as u128,
        };
        if more {
            best = Some((c, key, c_cap));
        }
    }
    let (src, _, _) = best?;
    // need_active_balance: a misfit, or asym_active_balance.
    let active = matches!(m, Migration::Misfit)
        || (idle.is_idle()
            && use_prio(this_cpu)
            && (asym::sched_asym_prefer(t, this_cpu, src) || !use_prio(src)));
    Some((src, m, active))
}

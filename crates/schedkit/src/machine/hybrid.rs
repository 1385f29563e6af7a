//! Hybrid machines (`[[core_type]]`): what the scheduler of Linux v6.18 sees of CPUs that are
//! not alike, derived from a profile as the kernel derives it at boot.
//!
//! - CPU capacity (`arch_scale_cpu_capacity`). Arm: the device tree's `capacity-dmips-mhz`
//!   times the CPU's top frequency, normalised so the biggest is 1024
//!   (`topology_normalize_cpu_scale`, drivers/base/arch_topology.c 234). x86: intel_pstate
//!   enables capacity scaling on a hybrid part only when SMT is impossible
//!   (`hybrid_init_cpu_capacity_scaling`, drivers/cpufreq/intel_pstate.c 1139: "because the
//!   capacity of SMT threads is not deterministic even approximately, do not do that when SMT
//!   is in use"); with SMT every CPU keeps `SCHED_CAPACITY_SCALE` (1024) and ITMT packs
//!   instead.
//! - ITMT priorities (x86): `intel_pstate_set_itmt_prio` (intel_pstate.c 362) hands each CPU's
//!   CPPC highest performance to `sched_set_itmt_core_prio` (arch/x86/kernel/itmt.c 187), which
//!   stores it as the CPU's `arch_asym_cpu_priority`; both threads of a core get the core's.
//!   With ITMT on, x86's SMT and MC domains carry `SD_ASYM_PACKING`.
//! - `SD_ASYM_CPUCAPACITY`: set on a domain whose span holds CPUs of more than one capacity
//!   (`asym_cpu_capacity_classify`, kernel/sched/topology.c); `sched_asym_cpucap_active`.
//! - The Energy Model (kernel/power/energy_model.c, include/linux/energy_model.h): one
//!   performance domain per cpufreq policy, a state per OPP with `power` from
//!   `dev_pm_opp_calc_power` (drivers/opp/of.c 1465: `C * mV^2 * MHz / 10^6` µW, `C` the
//!   `dynamic-power-coefficient`, mV truncated), `performance = cap * f / fmax`
//!   (`em_init_performance`, 205) and `cost = 10 * power / performance`
//!   (`em_compute_costs`, 229). Registered only where every type gives a coefficient and
//!   voltages; EAS then runs where the machine also has asymmetric capacity. Simplified:
//!   inefficient states are not skipped (`EM_PERF_DOMAIN_SKIP_INEFFICIENCIES`), by the EM or by
//!   schedutil, and EAS is on whatever governor runs (the kernel also asks for schedutil:
//!   `sched_is_eas_possible`).

use super::{CoreTypeSpec, MachineProfile, Topology};
use crate::task::CpuId;

/// `SCHED_CAPACITY_SCALE`.
pub const CAPACITY_SCALE: u64 = 1024;

/// One performance state of an Energy Model (`struct em_perf_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmState {
    pub freq_khz: u64,
    /// Capacity at this frequency.
    pub performance: u64,
    /// Power of one CPU busy at this state, µW.
    pub power_uw: u64,
    /// `10 * power / performance`.
    pub cost: u64,
}

/// One performance domain with its Energy Model (`struct perf_domain` + `em_perf_domain`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmDomain {
    pub cpus: Vec<CpuId>,
    /// Ascending by frequency.
    pub states: Vec<EmState>,
}

impl EmDomain {
    /// `em_pd_get_efficient_state` (energy_model.h 201, without skipping inefficient states):
    /// the lowest state whose performance reaches `max_util`, else the highest.
    pub fn state_for(&self, max_util: u64) -> &EmState {
        self.states
            .iter()
            .find(|s| s.performance >= max_util)
            .unwrap_or_else(|| &self.states[self.states.len() - 1])
    }

    /// `em_cpu_energy` (energy_model.h 239): the domain's energy for its busiest CPU's
    /// `max_util` (clamped to `allowed_cap`) and the sum of its CPUs' utilisation:
    /// `ps->cost * sum_util`.
    pub fn cpu_energy(&self, max_util: u64, sum_util: u64, allowed_cap: u64) -> u64 {
        if sum_util == 0 {
            return 0;
        }
        self.state_for(max_util.min(allowed_cap)).cost * sum_util
    }
}

/// The CPU numbers each core type covers, in order.
pub fn type_ranges(types: &[CoreTypeSpec]) -> Vec<std::ops::Range<CpuId>> {
    let mut start = 0;
    types
        .iter()
        .map(|t| {
            let r = start..start + t.cpus;
            start += t.cpus;
            r
        })
        .collect()
}

/// `dev_pm_opp_calc_power`: µW of one CPU at `mhz` and `volts` with coefficient `c`.
pub fn opp_power_uw(c: u32, volts: f64, mhz: f64) -> u64 {
    let mv = (volts * 1000.0 + 1e-6).floor() as u64;
    let hz_mhz = mhz.round() as u64;
    (c as u64) * mv * mv * hz_mhz / 1_000_000
}

/// Applies a profile's core types to its topology: per-CPU core, L2, type, capacity, ITMT
/// priority, the asymmetry flags and the Energy Model.
pub fn apply(topology: &mut Topology, p: &MachineProfile) {
    let Some(types) = p.core_types.as_deref() else {
        return;
    };
    let n = topology.ncpus;
    let ranges = type_ranges(types);
    let mut core = vec![0; n];
    let mut l2 = vec![0; n];
    let mut core_type = vec![0; n];
    let (mut next_core, mut next_l2) = (0, 0);
    for (ti, (t, r)) in types.iter().zip(&ranges).enumerate() {
        let tpc = t.threads_per_core.max(1);
        let per_l2 = t.cpus_per_l2.unwrap_or(tpc).max(1);
        for c in r.clone() {
            let i = c - r.start;
            core[c] = next_core + i / tpc;
            l2[c] = next_l2 + i / per_l2;
            core_type[c] = ti;
        }
        next_core += t.cpus.div_ceil(tpc);
        next_l2 += t.cpus.div_ceil(per_l2);
    }
    let smt = types.iter().any(|t| t.threads_per_core > 1);
    let itmt = types.iter().any(|t| t.itmt_priority.is_some());
    // Raw capacity per type: capacity-dmips-mhz (or perf_per_mhz x 1024) x top frequency.
    let raw: Vec<u64> = types
        .iter()
        .map(|t| {
            let dmips = t
                .capacity_dmips_mhz
                .map(u64::from)
                .unwrap_or_else(|| (t.perf_per_mhz * 1024.0).round() as u64);
            let fmax_khz = (t.pstates_mhz.last().copied().unwrap_or(1.0) * 1000.0).round();
            dmips * fmax_khz as u64
        })
        .collect();
    let scale = raw.iter().copied().max().unwrap_or(1).max(1);
    // x86 with SMT keeps every CPU at 1024 (intel_pstate.c 1160).
    let x86_smt = itmt && smt;
    let type_cap: Vec<u64> = raw
        .iter()
        .map(|&r| {
            if x86_smt {
                CAPACITY_SCALE
            } else {
                (r << 10) / scale
            }
        })
        .collect();
    let capacity: Vec<u64> = (0..n).map(|c| type_cap[core_type[c]]).collect();
    let mut prio = vec![0u32; n];
    if itmt {
        for (t, r) in types.iter().zip(&ranges) {
            let tpc = t.threads_per_core.max(1);
            if let Some(pr) = &t.itmt_priority {
                for c in r.clone() {
                    prio[c] = pr.get((c - r.start) / tpc).copied().unwrap_or(0);
                }
            }
        }
    }
    let asym_capacity = capacity.iter().any(|&c| c != capacity[0]);
    // The Energy Model: one domain per frequency domain, where every type gives it.
    let mut em = Vec::new();
    let em_possible = types
        .iter()
        .all(|t| t.dynamic_power_coefficient.is_some() && t.volts.is_some());
    if em_possible {
        for (ti, (t, r)) in types.iter().zip(&ranges).enumerate() {
            let (Some(coef), Some(volts)) = (t.dynamic_power_coefficient, t.volts.as_ref()) else {
                continue;
            };
            let fmax = t.pstates_mhz.last().copied().unwrap_or(1.0);
            let per = t.cpus_per_freq_domain.max(1);
            let mut states: Vec<EmState> = t
                .pstates_mhz
                .iter()
                .zip(volts)
                .map(|(&mhz, &v)| {
                    let power_uw = opp_power_uw(coef, v, mhz);
                    let performance =
                        (type_cap[ti] * (mhz * 1000.0).round() as u64) / (fmax * 1000.0) as u64;
                    EmState {
                        freq_khz: (mhz * 1000.0).round() as u64,
                        performance,
                        power_uw,
                        cost: power_uw * 10 / performance.max(1),
                    }
                })
                .collect();
            states.sort_by_key(|s| s.freq_khz);
            let mut c = r.start;
            while c < r.end {
                em.push(EmDomain {
                    cpus: (c..(c + per).min(r.end)).collect(),
                    states: states.clone(),
                });
                c += per;
            }
        }
    }
    topology.core = core;
    topology.l2 = l2;
    topology.core_type = core_type;
    topology.capacity = capacity;
    topology.asym_prio = prio;
    topology.asym_capacity = asym_capacity;
    topology.asym_packing = itmt && x86_smt;
    topology.em = em;
}

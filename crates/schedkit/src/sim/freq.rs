//! The machine's speed and power: SMT siblings sharing a core, P-states chosen by a cpufreq
//! governor, turbo bins by busy-core count, and the energy all of it costs.
//!
//! Workload work is measured at the profile's `clock.mhz` (its top non-turbo P-state): a
//! compute of 10 ms is 10 ms of cycles at that clock. A CPU's *speed* is its core's actual
//! frequency over that clock, times the SMT factor while its sibling is busy; a user segment
//! of `w` work takes `w / speed` of time, and a speed change in the middle of one re-times the
//! rest (see `Sim::respeed`). Kernel costs (system calls, switches, interrupts) are the
//! profile's measured times and do not scale: a simplification, stated in docs/machine.md.
//!
//! Governors (a `Governor` per run):
//! - `performance` / `powersave`: the top / bottom P-state, always.
//! - `ondemand`, as Linux 2.6.38's `cpufreq_ondemand.c` (machine-facts.md): every
//!   `sampling_rate` (10 ms: the NO_HZ minimum, `max(10 ms, transition latency x 1000)`),
//!   timers aligned across CPUs, for each CPU of the policy `load = 100 * busy / wall` over
//!   the window, `load_freq = load * freq_avg` where `freq_avg` is the average frequency the
//!   CPU ran at while busy (APERF/MPERF); above `up_threshold (95) * cur` go to the maximum,
//!   below `(up_threshold - down_differential (3)) * cur` go to the lowest table frequency at
//!   or above `max_load_freq / (95 - 3)`. The 2.6.38 timers are deferrable (an idle CPU's
//!   sample waits for it to wake); here every sample runs on time — a simplification.
//! - `schedutil` (4.7+): at each tick, at most once per rate limit (`min(latency x 1000,
//!   10 ms)`), `next = 1.25 * cur * util / 1024` for the busiest CPU of the policy (util is
//!   the CPU's PELT running average; not frequency-invariant, the formula's `cur` form),
//!   the lowest table frequency at or above it.
//!
//! Hybrid machines (`[[core_type]]`): each core type has its own P-states, voltages and power,
//! and runs work `perf_per_mhz` as fast per clock as the reference type; a policy covers a
//! type's `cpus_per_freq_domain` CPUs (a cluster, or a core). schedutil there reads a
//! frequency- and capacity-invariant utilisation (the CPU's work rate over the reference
//! type's at `clock.mhz`, x 1024) and asks, as v6.18's `get_next_freq`, `1.25 * f_max * util /
//! cap` (cap: the type's top work rate, the same scale), the lowest table frequency at or above
//! it. Busy time and core energy are kept per type (`by_type`). No turbo bins there.
//!
//! A request takes effect `transition_latency` later. BFS is told which CPUs run below the
//! maximum (`cpu_scaling`), as the 2.6.38 governors patched by BFS told it.
//!
//! Who shares a request (`FreqDomain`): a core, a package, or — with hardware coordination
//! (`hw`, ACPI HW_ALL: a cpufreq policy per logical CPU) — nobody: each CPU's governor
//! requests its own P-state, the package runs at the highest request among its busy CPUs
//! (none busy: the highest of all), and each CPU is "scaling" by its own request, which is
//! how an idle CPU of a busy Nehalem package looked throttled to BFS.
//!
//! Turbo: a busy core at the top P-state runs at `turbo_mhz[busy cores in its package - 1]`.
//!
//! Energy: per core, busy at frequency f and voltage V: `idle_w + (active_w - idle_w) *
//! (V/V_top)^2 * f/f_top` (dynamic power goes as C V^2 f, leakage is folded into idle_w);
//! idle: `idle_w`; plus `uncore_w` for the package all the time. The profiles' watt figures
//! are estimates and say so (no per-state power was published for these CPUs).

use crate::machine::{CpufreqSpec, FreqDomain, Governor, Machine, PowerSpec};
use crate::policy::pelt::Pelt;
use crate::task::CpuId;

/// Fixed-point speed: `SPEED_ONE` is the profile's clock with no SMT sharing.
pub(crate) const SPEED_SHIFT: u32 = 16;
pub(crate) const SPEED_ONE: u32 = 1 << SPEED_SHIFT;

/// Time for `work` (ns at the reference clock) at `speed`, rounded up.
#[inline]
pub(crate) fn work_to_ns(work: u64, speed: u32) -> u64 {
    if speed == SPEED_ONE {
        return work;
    }
    (((work as u128) << SPEED_SHIFT).div_ceil(speed.max(1) as u128)).min(u64::MAX as u128) as u64
}

/// Work done in `ns` at `speed`, rounded down (so `ns_to_work(work_to_ns(w)) >= w`).
#[inline]
pub(crate) fn ns_to_work(ns: u64, speed: u32) -> u64 {
    if speed == SPEED_ONE {
        return ns;
    }
    ((ns as u128 * speed as u128) >> SPEED_SHIFT) as u64
}

/// 2.6.38 ondemand's tunables under NO_HZ micro-accounting (machine-facts.md).
pub const ONDEMAND_UP_THRESHOLD: u64 = 95;
pub const ONDEMAND_DOWN_DIFFERENTIAL: u64 = 3;
/// `MIN_SAMPLING_RATE` with NO_HZ (10 ms), and `LATENCY_MULTIPLIER` (1000).
pub const ONDEMAND_MIN_SAMPLING_NS: u64 = 10_000_000;
pub const LATENCY_MULTIPLIER: u64 = 1000;
/// schedutil's cap on its rate limit (10 ms) and its headroom (1.25).
pub const SCHEDUTIL_MAX_RATE_LIMIT_NS: u64 = 10_000_000;

/// One ondemand decision: the P-state index to request, given the highest `load * freq_avg`
/// of the policy's CPUs (load in percent, kHz), the current request and the table (kHz,
/// ascending). `None`: no change.
pub fn ondemand_next(max_load_freq: u64, cur: usize, table_khz: &[u64]) -> Option<usize> {
    let top = table_khz.len() - 1;
    let cur_khz = table_khz[cur];
    if max_load_freq > ONDEMAND_UP_THRESHOLD * cur_khz {
        return (cur != top).then_some(top);
    }
    if cur == 0 {
        return None;
    }
    let down = ONDEMAND_UP_THRESHOLD - ONDEMAND_DOWN_DIFFERENTIAL;
    if max_load_freq < down * cur_khz {
        let freq_next = max_load_freq / down;
        // CPUFREQ_RELATION_L: the lowest frequency at or above the target (min at least).
        let idx = table_khz
            .iter()
            .position(|&f| f >= freq_next)
            .unwrap_or(top);
        return (idx != cur).then_some(idx);
    }
    None
}

/// One schedutil decision: `1.25 * cur * util / 1024`, the lowest table frequency at or
/// above it.
pub fn schedutil_next(util: u64, cur: usize, table_khz: &[u64]) -> Option<usize> {
    let top = table_khz.len() - 1;
    let cur_khz = table_khz[cur];
    let target = (cur_khz + (cur_khz >> 2)) * util.min(1024) / 1024;
    let idx = table_khz.iter().position(|&f| f >= target).unwrap_or(top);
    (idx != cur).then_some(idx)
}

/// schedutil on a hybrid machine, as v6.18's `get_next_freq` (cpufreq_schedutil.c) with a
/// frequency- and capacity-invariant `util`: `map_util_perf` adds a quarter
/// (`util + util >> 2`), `map_util_freq` scales the top frequency by it over the CPU's capacity
/// (`max_freq * util / cap`), and the driver resolves it to the lowest table frequency at or
/// above (CPUFREQ_RELATION_L). The P-state index.
pub fn schedutil_invariant(util: u64, cap: u64, table_khz: &[u64]) -> usize {
    let top = table_khz.len() - 1;
    let perf = util + (util >> 2);
    let target = table_khz[top] * perf / cap.max(1);
    table_khz.iter().position(|&f| f >= target).unwrap_or(top)
}

/// The frequency a busy core runs at: its P-state's, or at the top P-state the turbo bin for
/// the number of busy cores in its package.
pub fn actual_mhz(spec: &CpufreqSpec, pstate: usize, busy_cores_in_pkg: usize) -> f64 {
    let top = spec.pstates_mhz.len() - 1;
    match &spec.turbo_mhz {
        Some(bins) if pstate == top && busy_cores_in_pkg > 0 => *bins
            .get(busy_cores_in_pkg - 1)
            .unwrap_or(&spec.pstates_mhz[top]),
        _ => spec.pstates_mhz[pstate],
    }
}

/// Voltage at frequency `mhz` (a P-state's, or interpolated up to the turbo voltage).
fn volts_at(spec: &CpufreqSpec, mhz: f64) -> Option<f64> {
    let v = spec.volts.as_ref()?;
    let table = &spec.pstates_mhz;
    if let Some(i) = table.iter().position(|&f| (f - mhz).abs() < 1e-9) {
        return Some(v[i]);
    }
    let (ftop, vtop) = (table[table.len() - 1], v[v.len() - 1]);
    let fmax = spec
        .turbo_mhz
        .as_ref()
        .and_then(|b| b.iter().copied().reduce(f64::max))
        .unwrap_or(ftop);
    let vmax = spec.turbo_volts.unwrap_or(vtop);
    if mhz <= ftop || fmax <= ftop {
        return Some(vtop);
    }
    Some(vtop + (vmax - vtop) * (mhz - ftop) / (fmax - ftop))
}

/// Power of one core, W: busy at `mhz`, or idle.
pub fn core_power(power: &PowerSpec, spec: Option<&CpufreqSpec>, busy: bool, mhz: f64) -> f64 {
    if !busy {
        return power.core_idle_w;
    }
    let dynamic = power.core_active_w - power.core_idle_w;
    let Some(spec) = spec else {
        return power.core_active_w;
    };
    let ftop = spec.pstates_mhz[spec.pstates_mhz.len() - 1];
    let v_ratio = match (volts_at(spec, mhz), volts_at(spec, ftop)) {
        (Some(v), Some(vt)) if vt > 0.0 => v / vt,
        _ => 1.0,
    };
    power.core_idle_w + dynamic * v_ratio * v_ratio * mhz / ftop
}

/// Per-CPU accounting a governor reads.
#[derive(Clone, Debug, Default)]
struct CpuLoad {
    busy: bool,
    /// When `busy` last changed (or the window last started).
    since: u64,
    /// Busy ns in the current sampling window, and busy ns x MHz (for `freq_avg`).
    busy_ns: u64,
    busy_mhz_ns: f64,
    util: Pelt,
}

/// One core type of a hybrid machine, as the speed and power model sees it.
#[derive(Clone, Debug)]
struct TypeFreq {
    /// Its P-states and voltages (no turbo bins), as a `CpufreqSpec`.
    spec: CpufreqSpec,
    /// Its busy and idle power (uncore 0: the machine's is counted once).
    power: PowerSpec,
    /// Work per clock relative to the reference type.
    perf: f64,
    table_khz: Vec<u64>,
    /// Its capacity at the top P-state on the reference scale (1024: the reference type at
    /// `clock.mhz`), which schedutil's invariant utilisation is measured against.
    cap: u64,
}

/// One governor policy: the CPUs it samples and sets.
#[derive(Clone, Debug)]
struct Domain {
    cpus: Vec<CpuId>,
    cores: Vec<usize>,
    /// The P-state in force (under hardware coordination: this CPU's request in force), and
    /// the one requested and not yet in force.
    pstate: usize,
    pending: Option<usize>,
    window_start: u64,
    last_schedutil: Option<u64>,
    /// Hybrid: the core type of its CPUs.
    ty: usize,
}

/// What a change asks the simulator to do.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// CPUs whose speed changed.
    pub respeed: Vec<CpuId>,
    /// (CPU, scaling) notices for the policy.
    pub scaling: Vec<(CpuId, bool)>,
}

/// The model's state for one run.
#[derive(Clone, Debug)]
pub(crate) struct FreqModel {
    pub governor: Option<Governor>,
    spec: Option<CpufreqSpec>,
    power: Option<PowerSpec>,
    smt_factor: Option<u32>,
    ref_mhz: f64,
    table_khz: Vec<u64>,
    cpu_core: Vec<usize>,
    core_pkg: Vec<usize>,
    /// The governor policy of each CPU.
    cpu_domain: Vec<usize>,
    /// Hardware coordination: each package's P-state, the highest request among its busy
    /// CPUs (`None`: every core runs its own domain's P-state).
    hw_pkg_pstate: Option<Vec<usize>>,
    pkg_cpus: Vec<Vec<CpuId>>,
    core_cpus: Vec<Vec<CpuId>>,
    core_busy: Vec<u32>,
    pkg_busy_cores: Vec<usize>,
    pkg_cores: Vec<Vec<usize>>,
    domains: Vec<Domain>,
    cpus: Vec<CpuLoad>,
    speed: Vec<u32>,
    /// Energy: per core, the time its power was last integrated and that power.
    core_since: Vec<u64>,
    core_watts: Vec<f64>,
    core_joules: Vec<f64>,
    /// Time spent per P-state, summed over busy CPUs (for the result's residency table).
    pub busy_ns_at_mhz: Vec<(f64, u64)>,
    /// Hybrid machines (`[[core_type]]`): each type's tables and power, and each core's type
    /// (`None`: every core alike, as before).
    types: Option<Vec<TypeFreq>>,
    core_type: Vec<usize>,
    /// Hybrid: busy ns per core type (for where tasks ran), and the types' names.
    type_busy_ns: Vec<u64>,
    type_names: Vec<String>,
}

impl FreqModel {
    /// The model for `machine` under `governor` (the profile's default when `None`); `None`
    /// for a machine with neither SMT sharing, frequency scaling nor power figures, which then
    /// runs exactly as before any of them existed.
    pub fn new(machine: &Machine, governor: Option<Governor>) -> Option<FreqModel> {
        let p = &machine.profile;
        if p.smt.is_none() && p.cpufreq.is_none() && p.power.is_none() {
            return None;
        }
        let t = &machine.topology;
        let n = t.ncpus;
        let ncores = t.ncores();
        let mut core_cpus = vec![Vec::new(); ncores];
        for c in 0..n {
            core_cpus[t.core[c]].push(c);
        }
        let core_pkg: Vec<usize> = (0..ncores).map(|k| t.package[core_cpus[k][0]]).collect();
        let npkg = core_pkg.iter().copied().max().map_or(1, |m| m + 1);
        let mut pkg_cores = vec![Vec::new(); npkg];
        for (k, &pk) in core_pkg.iter().enumerate() {
            pkg_cores[pk].push(k);
        }
        let spec = p.cpufreq.clone();
        let governor = spec
            .as_ref()
            .map(|s| governor.unwrap_or(s.default_governor));
        let kind = spec.as_ref().map_or(FreqDomain::Core, |s| s.domain);
        let mut cpu_domain: Vec<usize> = (0..n)
            .map(|c| match kind {
                FreqDomain::Package => core_pkg[t.core[c]],
                FreqDomain::Core => t.core[c],
                FreqDomain::Hw => c,
            })
            .collect();
        let mut core_type = vec![0; ncores];
        let types = p.core_types.as_ref().map(|ts| {
            // Each type's CPUs in groups of its `cpus_per_freq_domain`, one policy each.
            let ranges = crate::machine::hybrid::type_ranges(ts);
            let mut d = 0;
            for (ti, (ct, r)) in ts.iter().zip(&ranges).enumerate() {
                let per = ct.cpus_per_freq_domain.max(1);
                for c in r.clone() {
                    cpu_domain[c] = d + (c - r.start) / per;
                    core_type[t.core[c]] = ti;
                }
                d += ct.cpus.div_ceil(per);
            }
            ts.iter()
                .map(|ct| {
                    let base = p
                        .cpufreq
                        .clone()
                        .expect("checked: a hybrid profile has [cpufreq]");
                    let spec = CpufreqSpec {
                        pstates_mhz: ct.pstates_mhz.clone(),
                        volts: ct.volts.clone(),
                        turbo_mhz: None,
                        turbo_volts: None,
                        ..base
                    };
                    let ftop = ct.pstates_mhz[ct.pstates_mhz.len() - 1];
                    let dynamic = match (ct.dynamic_power_coefficient, &ct.volts) {
                        (Some(c), Some(v)) => {
                            crate::machine::hybrid::opp_power_uw(c, v[v.len() - 1], ftop) as f64
                                * 1e-6
                        }
                        _ => ct.core_active_w.unwrap_or(ct.core_idle_w) - ct.core_idle_w,
                    };
                    TypeFreq {
                        power: PowerSpec {
                            core_active_w: ct.core_idle_w + dynamic.max(0.0),
                            core_idle_w: ct.core_idle_w,
                            uncore_w: 0.0,
                        },
                        perf: ct.perf_per_mhz,
                        table_khz: ct
                            .pstates_mhz
                            .iter()
                            .map(|m| (m * 1000.0).round() as u64)
                            .collect(),
                        cap: (1024.0 * ct.perf_per_mhz * ftop / p.clock.mhz).round() as u64,
                        spec,
                    }
                })
                .collect::<Vec<_>>()
        });
        let ndom = cpu_domain.iter().copied().max().map_or(1, |m| m + 1);
        let mut pkg_cpus = vec![Vec::new(); npkg];
        for c in 0..n {
            pkg_cpus[core_pkg[t.core[c]]].push(c);
        }
        let table_khz: Vec<u64> = spec
            .as_ref()
            .map(|s| {
                s.pstates_mhz
                    .iter()
                    .map(|m| (m * 1000.0).round() as u64)
                    .collect()
            })
            .unwrap_or_else(|| vec![(p.clock.mhz * 1000.0).round() as u64]);
        let top = table_khz.len() - 1;
        let start = match governor {
            Some(Governor::Powersave) => 0,
            _ => top,
        };
        let domains = (0..ndom)
            .map(|d| {
                let first = (0..n).find(|&c| cpu_domain[c] == d).unwrap_or(0);
                let ty = core_type[t.core[first]];
                let start = match (&types, governor) {
                    (Some(ts), Some(Governor::Powersave)) if ts.len() > ty => 0,
                    (Some(ts), _) => ts[ty].table_khz.len() - 1,
                    _ => start,
                };
                Domain {
                    cpus: (0..n).filter(|&c| cpu_domain[c] == d).collect(),
                    cores: (0..ncores)
                        .filter(|&k| core_cpus[k].iter().any(|&c| cpu_domain[c] == d))
                        .collect(),
                    pstate: start,
                    pending: None,
                    window_start: 0,
                    last_schedutil: None,
                    ty,
                }
            })
            .collect();
        let mut m = FreqModel {
            governor,
            spec,
            power: p.power.clone(),
            smt_factor: p
                .smt
                .as_ref()
                .map(|s| (s.busy_sibling_factor * SPEED_ONE as f64).round() as u32),
            ref_mhz: p.clock.mhz,
            table_khz,
            cpu_core: t.core.clone(),
            core_pkg,
            cpu_domain,
            hw_pkg_pstate: (kind == FreqDomain::Hw).then(|| vec![start; npkg]),
            pkg_cpus,
            core_cpus,
            core_busy: vec![0; ncores],
            pkg_busy_cores: vec![0; npkg],
            pkg_cores,
            domains,
            cpus: vec![CpuLoad::default(); n],
            speed: vec![SPEED_ONE; n],
            core_since: vec![0; ncores],
            core_watts: vec![0.0; ncores],
            core_joules: vec![0.0; ncores],
            busy_ns_at_mhz: Vec::new(),
            type_busy_ns: vec![0; types.as_ref().map_or(0, |t| t.len())],
            type_names: p
                .core_types
                .as_ref()
                .map(|ts| ts.iter().map(|t| t.name.clone()).collect())
                .unwrap_or_default(),
            types,
            core_type,
        };
        for k in 0..ncores {
            m.core_watts[k] = m.core_power_now(k);
        }
        for c in 0..n {
            m.speed[c] = m.compute_speed(c);
        }
        Some(m)
    }

    #[inline]
    pub fn speed(&self, cpu: CpuId) -> u32 {
        self.speed[cpu]
    }

    /// The CPUs' initial `cpu_scaling` state, for the policy.
    pub fn initial_scaling(&self) -> Vec<(CpuId, bool)> {
        self.domains
            .iter()
            .flat_map(|d| {
                let top = self.table(d.ty).len() - 1;
                d.cpus.iter().map(move |&c| (c, d.pstate < top))
            })
            .collect()
    }

    /// The P-state table (kHz) of a domain of core type `ty` (the machine's, without types).
    fn table(&self, ty: usize) -> &[u64] {
        match &self.types {
            Some(ts) => &ts[ty].table_khz,
            None => &self.table_khz,
        }
    }

    /// The P-state `core` runs at.
    fn core_pstate(&self, core: usize) -> usize {
        match &self.hw_pkg_pstate {
            Some(p) => p[self.core_pkg[core]],
            None => self.domains[self.cpu_domain[self.core_cpus[core][0]]].pstate,
        }
    }

    /// Hardware coordination: the package runs at the highest request among its busy CPUs
    /// (none busy: the highest request of all).
    fn coordinate(&mut self, pkg: usize) {
        let Some(_) = &self.hw_pkg_pstate else {
            return;
        };
        let request = |c: CpuId| self.domains[self.cpu_domain[c]].pstate;
        let cpus = &self.pkg_cpus[pkg];
        let busy = cpus
            .iter()
            .filter(|&&c| self.cpus[c].busy)
            .map(|&c| request(c));
        let p = busy
            .max()
            .unwrap_or_else(|| cpus.iter().map(|&c| request(c)).max().unwrap_or(0));
        if let Some(v) = &mut self.hw_pkg_pstate {
            v[pkg] = p;
        }
    }

    /// The frequency `core` runs at now if busy, MHz.
    fn core_mhz(&self, core: usize) -> f64 {
        if let Some(ts) = &self.types {
            return ts[self.core_type[core]].spec.pstates_mhz[self.core_pstate(core)];
        }
        match &self.spec {
            Some(s) => actual_mhz(
                s,
                self.core_pstate(core),
                self.pkg_busy_cores[self.core_pkg[core]],
            ),
            None => self.ref_mhz,
        }
    }

    fn compute_speed(&self, cpu: CpuId) -> u32 {
        let core = self.cpu_core[cpu];
        let mut f = self.core_mhz(core);
        if let Some(ts) = &self.types {
            // A core type's work per clock: a task's work runs `perf * f / clock.mhz` as fast.
            f *= ts[self.core_type[core]].perf;
        }
        let mut s = if (f - self.ref_mhz).abs() < 1e-9 {
            SPEED_ONE as u64
        } else {
            (f / self.ref_mhz * SPEED_ONE as f64).round() as u64
        };
        if let Some(k) = self.smt_factor {
            let others_busy = self.core_cpus[core]
                .iter()
                .any(|&o| o != cpu && self.cpus[o].busy);
            if others_busy {
                s = (s * k as u64) >> SPEED_SHIFT;
            }
        }
        s.clamp(1, u32::MAX as u64) as u32
    }

    fn core_power_now(&self, core: usize) -> f64 {
        if let (Some(ts), Some(_)) = (&self.types, &self.power) {
            let tf = &ts[self.core_type[core]];
            return core_power(
                &tf.power,
                Some(&tf.spec),
                self.core_busy[core] > 0,
                self.core_mhz(core),
            );
        }
        match &self.power {
            Some(p) => core_power(
                p,
                self.spec.as_ref(),
                self.core_busy[core] > 0,
                self.core_mhz(core),
            ),
            None => 0.0,
        }
    }

    /// Integrates the power of `core` up to `now` and takes its new power.
    fn repower(&mut self, core: usize, now: u64) {
        if self.power.is_none() {
            return;
        }
        let dt = now.saturating_sub(self.core_since[core]);
        self.core_joules[core] += self.core_watts[core] * dt as f64 * 1e-9;
        self.core_since[core] = now;
        self.core_watts[core] = self.core_power_now(core);
    }

    /// Accounts `cpu`'s busy time up to `now` at its current frequency.
    fn account(&mut self, cpu: CpuId, now: u64) {
        let mhz = self.core_mhz(self.cpu_core[cpu]);
        let l = &mut self.cpus[cpu];
        let dt = now.saturating_sub(l.since);
        if l.busy && dt > 0 && !self.type_busy_ns.is_empty() {
            self.type_busy_ns[self.core_type[self.cpu_core[cpu]]] += dt;
        }
        let l = &mut self.cpus[cpu];
        if l.busy && dt > 0 {
            l.busy_ns += dt;
            l.busy_mhz_ns += mhz * dt as f64;
            match self
                .busy_ns_at_mhz
                .iter_mut()
                .find(|(m, _)| (*m - mhz).abs() < 1e-9)
            {
                Some(e) => e.1 += dt,
                None => self.busy_ns_at_mhz.push((mhz, dt)),
            }
        }
        // Hybrid: the frequency- and capacity-invariant utilisation schedutil reads (the work
        // rate relative to the reference type at its top, x 1024); else the busy fraction.
        let rate = match &self.types {
            Some(ts) => (1024.0 * ts[self.core_type[self.cpu_core[cpu]]].perf * mhz / self.ref_mhz)
                .round() as u64,
            None => 1024,
        };
        let l = &mut self.cpus[cpu];
        l.util.update(now, if l.busy { rate } else { 0 });
        l.since = now;
    }

    /// Recomputes the speed of `cpu`, noting it if it changed.
    fn respeed(&mut self, cpu: CpuId, fx: &mut Effects) {
        let s = self.compute_speed(cpu);
        if s != self.speed[cpu] {
            self.speed[cpu] = s;
            fx.respeed.push(cpu);
        }
    }

    /// `cpu` became busy (runs a task) or idle at `now`.
    pub fn set_busy(&mut self, cpu: CpuId, busy: bool, now: u64) -> Effects {
        let mut fx = Effects::default();
        if self.cpus[cpu].busy == busy {
            return fx;
        }
        let core = self.cpu_core[cpu];
        let pkg = self.core_pkg[core];
        // Everything whose frequency or sharing may change is accounted up to now first: the
        // package's cores when turbo bins count busy cores or the hardware coordinates the
        // package's requests among busy CPUs, else this core's threads. (Index loops: this
        // runs at every idle/busy switch and allocates nothing.)
        let whole_pkg = self.hw_pkg_pstate.is_some()
            || self.spec.as_ref().is_some_and(|s| s.turbo_mhz.is_some());
        let ncores = if whole_pkg {
            self.pkg_cores[pkg].len()
        } else {
            1
        };
        let affected = |m: &FreqModel, i: usize| {
            if whole_pkg {
                m.pkg_cores[pkg][i]
            } else {
                core
            }
        };
        for i in 0..ncores {
            let k = affected(self, i);
            for j in 0..self.core_cpus[k].len() {
                self.account(self.core_cpus[k][j], now);
            }
        }
        self.cpus[cpu].busy = busy;
        let was_core_busy = self.core_busy[core] > 0;
        if busy {
            self.core_busy[core] += 1;
        } else {
            self.core_busy[core] -= 1;
        }
        let is_core_busy = self.core_busy[core] > 0;
        if was_core_busy != is_core_busy {
            if is_core_busy {
                self.pkg_busy_cores[pkg] += 1;
            } else {
                self.pkg_busy_cores[pkg] -= 1;
            }
        }
        self.coordinate(pkg);
        for i in 0..ncores {
            let k = affected(self, i);
            self.repower(k, now);
            for j in 0..self.core_cpus[k].len() {
                self.respeed(self.core_cpus[k][j], &mut fx);
            }
        }
        fx
    }

    /// The ondemand sampling period (`None` for the other governors).
    pub fn ondemand_period(&self) -> Option<u64> {
        (self.governor == Some(Governor::Ondemand)).then(|| {
            let lat = self.spec.as_ref().map_or(0.0, |s| s.transition_latency_ns) as u64;
            ONDEMAND_MIN_SAMPLING_NS.max(lat / 1000 * LATENCY_MULTIPLIER * 1000)
        })
    }

    pub fn ndomains(&self) -> usize {
        self.domains.len()
    }

    pub fn transition_latency_ns(&self) -> u64 {
        self.spec.as_ref().map_or(0.0, |s| s.transition_latency_ns) as u64
    }

    /// ondemand's sample of domain `d` at `now`: the P-state to request, if it changes.
    pub fn ondemand_sample(&mut self, d: usize, now: u64) -> Option<usize> {
        let cpus = self.domains[d].cpus.clone();
        let mut max_load_freq = 0u64;
        let cur = self.domains[d].pending.unwrap_or(self.domains[d].pstate);
        let table = self.table(self.domains[d].ty).to_vec();
        let cur_khz = table[cur];
        let wall = now.saturating_sub(self.domains[d].window_start);
        for &c in &cpus {
            self.account(c, now);
            let l = &mut self.cpus[c];
            let busy = std::mem::take(&mut l.busy_ns);
            let mhz_ns = std::mem::take(&mut l.busy_mhz_ns);
            if wall == 0 || wall < busy {
                continue;
            }
            let load = 100 * busy / wall;
            let freq_avg = if busy > 0 {
                (mhz_ns / busy as f64 * 1000.0).round() as u64
            } else {
                cur_khz
            };
            max_load_freq = max_load_freq.max(load * freq_avg);
        }
        self.domains[d].window_start = now;
        let next = ondemand_next(max_load_freq, cur, &table)?;
        self.domains[d].pending = Some(next);
        Some(next)
    }

    /// schedutil at a tick of `cpu`: the P-state to request for its domain, if it changes
    /// and the rate limit allows.
    pub fn schedutil_tick(&mut self, cpu: CpuId, now: u64) -> Option<(usize, usize)> {
        if self.governor != Some(Governor::Schedutil) {
            return None;
        }
        let d = self.cpu_domain[cpu];
        let limit = (self.transition_latency_ns() / 1000 * LATENCY_MULTIPLIER * 1000)
            .min(SCHEDUTIL_MAX_RATE_LIMIT_NS);
        if self.domains[d]
            .last_schedutil
            .is_some_and(|t| now.saturating_sub(t) < limit)
        {
            return None;
        }
        self.domains[d].last_schedutil = Some(now);
        let cpus = self.domains[d].cpus.clone();
        let mut util = 0;
        for &c in &cpus {
            self.account(c, now);
            util = util.max(self.cpus[c].util.load_avg);
        }
        let cur = self.domains[d].pending.unwrap_or(self.domains[d].pstate);
        let next = match &self.types {
            Some(ts) => {
                let tf = &ts[self.domains[d].ty];
                let i = schedutil_invariant(util, tf.cap, &tf.table_khz);
                (i != cur).then_some(i)?
            }
            None => schedutil_next(util, cur, &self.table_khz)?,
        };
        self.domains[d].pending = Some(next);
        Some((d, next))
    }

    /// The request for domain `d` takes effect at `now`.
    pub fn apply(&mut self, d: usize, pstate: usize, now: u64) -> Effects {
        let mut fx = Effects::default();
        if self.domains[d].pending == Some(pstate) {
            self.domains[d].pending = None;
        }
        if self.domains[d].pstate == pstate {
            return fx;
        }
        let cpus = self.domains[d].cpus.clone();
        // What runs at the changed P-state: the domain's CPUs and cores, or under hardware
        // coordination the whole package, whose P-state follows the busy CPUs' requests.
        let (runs_cpus, runs_cores) = if self.hw_pkg_pstate.is_some() {
            let pkg = self.core_pkg[self.cpu_core[cpus[0]]];
            (self.pkg_cpus[pkg].clone(), self.pkg_cores[pkg].clone())
        } else {
            (cpus.clone(), self.domains[d].cores.clone())
        };
        for &c in &runs_cpus {
            self.account(c, now);
        }
        // Each core's stored power is still the old P-state's: `repower` integrates it up to
        // now, then takes the new one.
        self.domains[d].pstate = pstate;
        if self.hw_pkg_pstate.is_some() {
            self.coordinate(self.core_pkg[self.cpu_core[cpus[0]]]);
        }
        for &k in &runs_cores {
            self.repower(k, now);
        }
        for &c in &runs_cpus {
            self.respeed(c, &mut fx);
        }
        let top = self.table(self.domains[d].ty).len() - 1;
        fx.scaling = cpus.iter().map(|&c| (c, pstate < top)).collect();
        fx
    }

    /// Hybrid: per core type, its name, busy CPU time (ns), the energy its cores used (J,
    /// uncore excluded; after `energy`) and its relative performance per clock (empty on a
    /// machine of one type).
    pub fn by_type(&self) -> Vec<(String, u64, f64, f64)> {
        let Some(ts) = &self.types else {
            return Vec::new();
        };
        (0..ts.len())
            .map(|ty| {
                let joules = (0..self.core_type.len())
                    .filter(|&k| self.core_type[k] == ty)
                    .map(|k| self.core_joules[k])
                    .sum();
                (
                    self.type_names[ty].clone(),
                    self.type_busy_ns[ty],
                    joules,
                    ts[ty].perf,
                )
            })
            .collect()
    }

    /// Energy up to `now`: (joules, average watts over `now` ns), uncore included; `None`
    /// without power figures.
    pub fn energy(&mut self, now: u64) -> Option<(f64, f64)> {
        let ncores = self.core_busy.len();
        for c in 0..self.cpus.len() {
            self.account(c, now);
        }
        for k in 0..ncores {
            self.repower(k, now);
        }
        let p = self.power.as_ref()?;
        let npkg = self.pkg_cores.len();
        let joules: f64 =
            self.core_joules.iter().sum::<f64>() + p.uncore_w * npkg as f64 * now as f64 * 1e-9;
        let watts = if now > 0 {
            joules / (now as f64 * 1e-9)
        } else {
            0.0
        };
        Some((joules, watts))
    }
}

#[cfg(test)]
mod tests;

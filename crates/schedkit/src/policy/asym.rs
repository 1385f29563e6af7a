//! Capacity- and energy-aware placement of Linux v6.18's fair class (`kernel/sched/fair.c`)
//! for machines whose CPUs differ (`machine/hybrid.rs`): the rules as pure functions over the
//! topology and the utilisation each CPU publishes, for `eevdf:era=6.18` to call.
//!
//! - `fits_capacity` (fair.c 104): `util * 1280 < capacity * 1024`, a 20 % margin.
//! - `capacity_greater` (fair.c 112): `a * 1024 > b * 1078`, about 5 % more.
//! - `util_fits_cpu` (5030) with util clamping: a task's `uclamp_max` lets it fit a CPU of
//!   capacity at or above it (except the biggest, where a `uclamp_max` of 1024 means no
//!   clamp); a `uclamp_min` above the CPU's capacity makes a fit a "fits, but below the
//!   performance hint" (-1).
//! - `select_idle_capacity` (7814): the idle CPUs from `target + 1` round the domain, the first
//!   that fits, else the idle one with the biggest capacity (a CPU that fits only without its
//!   hint counted one below its capacity).
//! - `asym_fits_cpu` (7861): on an asymmetric machine an idle target or previous CPU is taken
//!   only if the task fits it.
//! - `sched_asym_prefer` (sched.h 967): `arch_asym_cpu_priority(a) > ...(b)`.
//! - The Energy Model's estimate (`compute_energy`, 8371, with `eenv_pd_busy_time` 8300 and
//!   `eenv_pd_max_util` 8324): for a performance domain, the busiest CPU's utilisation with a
//!   quarter's headroom (`sugov_effective_cpu_perf`) chooses the state, the domain's summed
//!   utilisation (capped at its capacity) is billed at that state's cost.
//! - `find_energy_efficient_cpu` (8427): in each domain the CPU with the most spare capacity
//!   that fits (and the previous CPU), each costed against the domain's energy without the
//!   task; the cheapest wins, the previous CPU unless another saves energy.
//!
//! Simplified, and said so: utilisation is PELT's `util_avg` without UTIL_EST; no IRQ, RT or
//! deadline utilisation (`effective_cpu_util` is the fair class's alone, capped at capacity);
//! thermal pressure is none (`capacity_of` = `arch_scale_cpu_capacity`); uclamp is a task's own
//! `uclamp_min`/`uclamp_max` (no cgroup or system defaults); a runqueue's clamp is the
//! running task's (the kernel max-aggregates every runnable task's: `uclamp_rq_get`).
//!
//! Shared machinery, as `fair_lb` is: must never depend on a design, a host or the core.

use crate::machine::{EmDomain, Topology};
use crate::task::CpuId;

/// `SCHED_CAPACITY_SCALE`.
pub const SCALE: u64 = 1024;

/// `fits_capacity(cap, max)`.
#[inline]
pub fn fits_capacity(util: u64, capacity: u64) -> bool {
    util * 1280 < capacity * 1024
}

/// `capacity_greater(cap1, cap2)`.
#[inline]
pub fn capacity_greater(a: u64, b: u64) -> bool {
    a * 1024 > b * 1078
}

/// A task's utilisation clamps (`uclamp_eff_value` of UCLAMP_MIN and UCLAMP_MAX).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uclamp {
    pub min: u64,
    pub max: u64,
}

impl Default for Uclamp {
    fn default() -> Uclamp {
        Uclamp { min: 0, max: SCALE }
    }
}

impl Uclamp {
    /// No clamp at all (`uclamp_is_used()` false when no task sets one).
    pub fn is_default(&self) -> bool {
        *self == Uclamp::default()
    }
}

/// `util_fits_cpu`: 1 fits, 0 does not, -1 fits but below `uclamp_min`'s hint.
pub fn util_fits_cpu(util: u64, clamp: Uclamp, capacity: u64, uclamp_used: bool) -> i32 {
    let fits = fits_capacity(util, capacity);
    if !uclamp_used {
        return i32::from(fits);
    }
    // capacity_orig = arch_scale_cpu_capacity (no thermal pressure: = capacity_of).
    let orig = capacity;
    let biggest_unclamped = orig == SCALE && clamp.max == SCALE;
    let max_fits = !biggest_unclamped && clamp.max <= orig;
    let fits = fits || max_fits;
    let min = clamp.min.min(clamp.max);
    if fits && util < min && min > capacity {
        return -1;
    }
    i32::from(fits)
}

/// `sched_asym_prefer(a, b)`.
#[inline]
pub fn sched_asym_prefer(t: &Topology, a: CpuId, b: CpuId) -> bool {
    t.asym_prio.get(a).copied().unwrap_or(0) > t.asym_prio.get(b).copied().unwrap_or(0)
}

/// `select_idle_capacity` over `span` from `target`: the first idle CPU (of those `allowed`)
/// the task fits, else the idle one of most capacity; `None`: no idle CPU.
pub fn select_idle_capacity(
    t: &Topology,
    span: &[CpuId],
    target: CpuId,
    task_util: u64,
    clamp: Uclamp,
    uclamp_used: bool,
    idle: &dyn Fn(CpuId) -> bool,
    allowed: &dyn Fn(CpuId) -> bool,
) -> Option<CpuId> {
    let n = t.ncpus;
    let mut best: Option<(u64, CpuId)> = None;
    // for_each_cpu_wrap(cpu, cpus, target + 1)
    for k in 1..=n {
        let cpu = (target + k) % n;
        if !span.contains(&cpu) || !allowed(cpu) || !idle(cpu) {
            continue;
        }
        let mut cap = t.capacity_of(cpu);
        let fits = util_fits_cpu(task_util, clamp, cap, uclamp_used);
        if fits > 0 {
            return Some(cpu);
        }
        // "Only the min performance hint (i.e. uclamp_min) doesn't fit. Look for the CPU
        // with highest performance capacity."
        if fits < 0 {
            cap = cap.saturating_sub(1);
        }
        if best.is_none_or(|(b, _)| cap > b) {
            best = Some((cap, cpu));
        }
    }
    best.map(|(_, c)| c)
}

/// `asym_fits_cpu`: without asymmetric capacity every CPU fits.
pub fn asym_fits_cpu(
    t: &Topology,
    util: u64,
    clamp: Uclamp,
    uclamp_used: bool,
    cpu: CpuId,
) -> bool {
    !t.asym_capacity || util_fits_cpu(util, clamp, t.capacity_of(cpu), uclamp_used) > 0
}

/// What `find_energy_efficient_cpu` knows of the waking task and the CPUs: each CPU's fair
/// utilisation with the task taken off where it last ran (`cpu_util(cpu, p, -1, 0)`), and the
/// task's own.
pub struct EnergyEnv<'a> {
    pub topology: &'a Topology,
    /// `cpu_util` of each CPU without the task.
    pub util: &'a [u64],
    pub task_util: u64,
    pub clamp: Uclamp,
    pub uclamp_used: bool,
}

impl EnergyEnv<'_> {
    /// `effective_cpu_util` (fair utilisation only, at most the CPU's capacity).
    fn eff(&self, cpu: CpuId, util: u64) -> u64 {
        util.min(self.topology.capacity_of(cpu))
    }

    /// `compute_energy(eenv, pd, cpus, p, dst_cpu)`: the domain's energy with the task on
    /// `dst` (`None`: without it).
    pub fn compute_energy(&self, pd: &EmDomain, dst: Option<CpuId>) -> u64 {
        let cpu_cap = pd
            .cpus
            .first()
            .map_or(SCALE, |&c| self.topology.capacity_of(c));
        let pd_cap = cpu_cap * pd.cpus.len() as u64;
        // eenv_pd_busy_time: the CPUs' utilisation without the task, capped at pd_cap.
        let pd_busy: u64 = pd
            .cpus
            .iter()
            .map(|&c| self.eff(c, self.util[c]))
            .sum::<u64>()
            .min(pd_cap);
        // eenv_pd_max_util: the busiest CPU with the task where it would go, with headroom
        // (sugov_effective_cpu_perf: `util + util/4`, at most the clamp `max`, at least
        // `min`).
        let mut max_util = 0;
        for &c in &pd.cpus {
            let mut util = self.util[c];
            if Some(c) == dst {
                util += self.task_util;
            }
            let eff = self.eff(c, util);
            let cap = self.topology.capacity_of(c);
            let (mut min, mut max) = (0, cap);
            if Some(c) == dst && self.uclamp_used {
                min = min.max(self.clamp.min);
                max = self.clamp.max;
            }
            let actual = eff + (eff >> 2);
            let perf = min.max(actual.min(max));
            max_util = max_util.max(perf);
        }
        let max_util = max_util.min(cpu_cap);
        let busy = match dst {
            Some(_) => (pd_busy + self.task_util).min(pd_cap),
            None => pd_busy,
        };
        pd.cpu_energy(max_util, busy, cpu_cap)
    }

    /// `find_energy_efficient_cpu(p, prev_cpu)` over the Energy Model's domains: the CPU to
    /// wake the task on; `None` where the kernel returns -1 (no Energy Model) — it returns
    /// `prev_cpu` whenever it bails out after that.
    pub fn find_energy_efficient_cpu(
        &self,
        prev: CpuId,
        allowed: &dyn Fn(CpuId) -> bool,
    ) -> Option<CpuId> {
        let t = self.topology;
        if t.em.is_empty() {
            return None;
        }
        // "if (!task_util_est(p) && p_util_min == 0) goto unlock": target = prev_cpu.
        if self.task_util == 0 && self.clamp.min == 0 {
            return Some(prev);
        }
        let (mut prev_delta, mut best_delta) = (u64::MAX, u64::MAX);
        let (mut prev_fits, mut best_fits) = (-1i32, -1i32);
        let (mut best_cap, mut prev_cap) = (0u64, 0u64);
        let mut best_cpu = None;
        for pd in &t.em {
            let cpu_cap_actual = pd.cpus.first().map_or(SCALE, |&c| t.capacity_of(c));
            let (mut prev_spare, mut max_spare) = (-1i64, -1i64);
            let mut max_spare_cpu = None;
            let mut max_fits = -1i32;
            for &cpu in &pd.cpus {
                if !allowed(cpu) {
                    continue;
                }
                // cpu_util(cpu, p, cpu, 0): with the task on it.
                let util = self.util[cpu] + self.task_util;
                let cap = t.capacity_of(cpu);
                let fits = util_fits_cpu(util, self.clamp, cap, self.uclamp_used);
                if fits == 0 {
                    continue;
                }
                let spare = cap.saturating_sub(util) as i64;
                if cpu == prev {
                    prev_spare = spare;
                    prev_fits = fits;
                } else if fits > max_fits || (fits == max_fits && spare > max_spare) {
                    max_spare = spare;
                    max_spare_cpu = Some(cpu);
                    max_fits = fits;
                }
            }
            if max_spare_cpu.is_none() && prev_spare < 0 {
                continue;
            }
            let base = self.compute_energy(pd, None);
            if prev_spare > -1 {
                let e = self.compute_energy(pd, Some(prev));
                if e < base {
                    return Some(prev);
                }
                prev_delta = e - base;
                prev_cap = cpu_cap_actual;
                best_delta = best_delta.min(prev_delta);
            }
            if let Some(c) = max_spare_cpu.filter(|_| max_spare > prev_spare) {
                if max_fits < best_fits {
                    continue;
                }
                if max_fits < 0 && cpu_cap_actual <= best_cap {
                    continue;
                }
                let e = self.compute_energy(pd, Some(c));
                if e < base {
                    return Some(prev);
                }
                let cur = e - base;
                if max_fits > 0 && best_fits > 0 && cur >= best_delta {
                    continue;
                }
                best_delta = cur;
                best_cpu = Some(c);
                best_fits = max_fits;
                best_cap = cpu_cap_actual;
            }
        }
        let take_best = best_fits > prev_fits
            || (best_fits > 0 && best_delta < prev_delta)
            || (best_fits < 0 && best_cap > prev_cap);
        Some(match best_cpu {
            Some(c) if take_best => c,
            _ => prev,
        })
    }
}

/// `is_rd_overutilized` from each CPU's published utilisation: some CPU's utilisation does
/// not fit its capacity under its runqueue's clamps (`cpu_overutilized`: `util_fits_cpu` with
/// `uclamp_rq_get`; `clamps` empty: none). The kernel keeps a flag that enqueue and tick set
/// and the root domain's statistics clear; here it is read from the CPUs' signals.
pub fn overutilized(t: &Topology, util: &[u64], clamps: &[Uclamp]) -> bool {
    (0..t.ncpus).any(|c| {
        let clamp = clamps.get(c).copied().unwrap_or_default();
        util_fits_cpu(util[c], clamp, t.capacity_of(c), !clamp.is_default()) == 0
    })
}

#[cfg(test)]
mod tests;

/// What each CPU publishes for the capacity-aware rules, read by other CPUs without its
/// runqueue lock (as the kernel reads `cpu_util_cfs`, `rq->misfit_task_load` and writes
/// `busiest->push_cpu` for the stopper): relaxed atomics, one slot per CPU.
#[derive(Debug, Default)]
pub struct Published {
    slots: Box<[Slot]>,
}

#[derive(Debug)]
struct Slot {
    /// `cfs_rq->avg.util_avg`.
    util: std::sync::atomic::AtomicU64,
    /// `rq->misfit_task_load`.
    misfit: std::sync::atomic::AtomicU64,
    /// Utilisation of tasks that woke elsewhere since the runqueue's last update
    /// (`cfs_rq->removed.util_avg`).
    removed_util: std::sync::atomic::AtomicU64,
    /// `rq->push_cpu` of a pending active balance (`u32::MAX`: none).
    push_to: std::sync::atomic::AtomicU32,
    /// The task the stopper took off this CPU and its destination (task index + 1 in the
    /// high half, the CPU in the low; 0: none), until the task is placed there.
    pushed: std::sync::atomic::AtomicU64,
    /// The runqueue's clamps (`uclamp_rq_get`: here the running task's; min in the high
    /// half, max in the low; 1024 max, 0 min when idle or unclamped).
    clamp: std::sync::atomic::AtomicU64,
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            util: 0.into(),
            misfit: 0.into(),
            removed_util: 0.into(),
            push_to: u32::MAX.into(),
            pushed: 0.into(),
            clamp: SCALE.into(),
        }
    }
}

use std::sync::atomic::Ordering::Relaxed;

impl Published {
    pub fn new(ncpus: usize) -> Published {
        Published {
            slots: (0..ncpus).map(|_| Slot::default()).collect(),
        }
    }
    pub fn util(&self, cpu: CpuId) -> u64 {
        self.slots.get(cpu).map_or(0, |s| s.util.load(Relaxed))
    }
    pub fn set_util(&self, cpu: CpuId, v: u64) {
        if let Some(s) = self.slots.get(cpu) {
            s.util.store(v, Relaxed);
        }
    }
    pub fn misfit(&self, cpu: CpuId) -> u64 {
        self.slots.get(cpu).map_or(0, |s| s.misfit.load(Relaxed))
    }
    pub fn set_misfit(&self, cpu: CpuId, v: u64) {
        if let Some(s) = self.slots.get(cpu) {
            s.misfit.store(v, Relaxed);
        }
    }
    pub fn add_removed_util(&self, cpu: CpuId, v: u64) {
        if let Some(s) = self.slots.get(cpu) {
            s.removed_util.fetch_add(v, Relaxed);
        }
    }
    pub fn take_removed_util(&self, cpu: CpuId) -> u64 {
        self.slots.get(cpu).map_or(0, |s| {
            if s.removed_util.load(Relaxed) == 0 {
                0
            } else {
                s.removed_util.swap(0, Relaxed)
            }
        })
    }
    /// `stop_one_cpu_nowait(active_load_balance_cpu_stop)` asked of `cpu`: move its running
    /// task to `dst`.
    pub fn request_push(&self, cpu: CpuId, dst: CpuId) {
        if let Some(s) = self.slots.get(cpu) {
            s.push_to.store(dst as u32, Relaxed);
        }
    }
    pub fn push_pending(&self, cpu: CpuId) -> Option<CpuId> {
        let v = self.slots.get(cpu)?.push_to.load(Relaxed);
        (v != u32::MAX).then_some(v as CpuId)
    }
    pub fn take_push(&self, cpu: CpuId) -> Option<CpuId> {
        let v = self.slots.get(cpu)?.push_to.swap(u32::MAX, Relaxed);
        (v != u32::MAX).then_some(v as CpuId)
    }
    /// The stopper takes `task` off `cpu` for `dst`.
    pub fn set_pushed(&self, cpu: CpuId, task: u32, dst: CpuId) {
        if let Some(s) = self.slots.get(cpu) {
            s.pushed.store(
                (u64::from(task) + 1) << 32 | dst as u64 & 0xffff_ffff,
                Relaxed,
            );
        }
    }
    /// Where the stopper sends `task`, taken off `cpu` (once).
    pub fn take_pushed(&self, cpu: CpuId, task: u32) -> Option<CpuId> {
        let s = self.slots.get(cpu)?;
        let v = s.pushed.load(Relaxed);
        if v >> 32 != u64::from(task) + 1 {
            return None;
        }
        s.pushed.store(0, Relaxed);
        Some((v & 0xffff_ffff) as CpuId)
    }
    /// The runqueue's clamps: the running task's (`None`: idle, no clamp).
    pub fn set_clamp(&self, cpu: CpuId, c: Uclamp) {
        if let Some(s) = self.slots.get(cpu) {
            s.clamp.store(c.min << 32 | c.max, Relaxed);
        }
    }
    pub fn clamp(&self, cpu: CpuId) -> Uclamp {
        self.slots.get(cpu).map_or_else(Uclamp::default, |s| {
            let v = s.clamp.load(Relaxed);
            Uclamp {
                min: v >> 32,
                max: v & 0xffff_ffff,
            }
        })
    }
    /// Every CPU's runqueue clamps.
    pub fn clamps(&self) -> Vec<Uclamp> {
        (0..self.slots.len()).map(|c| self.clamp(c)).collect()
    }
    /// Every CPU's utilisation, for `find_energy_efficient_cpu`.
    pub fn utils(&self) -> Vec<u64> {
        self.slots.iter().map(|s| s.util.load(Relaxed)).collect()
    }
}

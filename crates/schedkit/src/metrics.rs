//! What a run reports. The JSON shape is part of the interface (see README).

use serde::Serialize;
use std::collections::BTreeMap;

/// One simulated run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunResult {
    pub policy: String,
    pub machine: String,
    pub workload: String,
    pub seed: u64,
    /// Simulated time covered: until every foreground task ended, or the duration.
    pub simulated_s: f64,
    /// Whether every foreground task ended before the duration ran out.
    pub completed: bool,
    pub metrics: Metrics,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Metrics {
    /// Switches to a different task, idle included (the kernel's `nr_switches`, vmstat `cs`).
    pub context_switches: u64,
    pub context_switches_per_s: f64,
    /// Times a task started running on a different CPU than it last ran on.
    pub migrations: u64,
    /// Idle share of CPU time, averaged over CPUs (0..1).
    pub idle_fraction: f64,
    /// From a wakeup (or fork) to running, over all tasks.
    pub wakeup_latency_us: Latency,
    /// The same for tasks marked interactive, if any ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interactive_wakeup_latency_us: Option<Latency>,
    /// Jain's index over CPU time / (weight x lifetime) of the tasks (1 = perfectly fair).
    pub fairness_jain: f64,
    pub throughput: Throughput,
    /// Derived per-operation figures (lmbench style: µs per fork, per hop).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_op_us: BTreeMap<String, f64>,
    /// Where the CPUs' time went, summed over CPUs, seconds.
    pub cpu_time_s: CpuTime,
    pub locks: LockStats,
    /// Scheduler work reported by the policy's hooks.
    pub sched_ops: SchedOps,
    pub tasks_created: u64,
    pub sim: SimStats,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Default)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub count: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Throughput {
    pub unit: String,
    pub value: f64,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Default)]
pub struct CpuTime {
    /// Tasks computing in user space.
    pub user: f64,
    /// Tasks in system calls (pipe, socket, fork, exec work).
    pub sys: f64,
    /// schedule(): runqueue lock, policy work, context switch.
    pub sched: f64,
    /// Of which spinning on a runqueue lock.
    pub lock_spin: f64,
    /// Cache refills after a task ran elsewhere or was evicted.
    pub cache_refill: f64,
    /// Timer ticks and IPIs.
    pub irq: f64,
    pub idle: f64,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Default)]
pub struct LockStats {
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_us: f64,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Default)]
pub struct SchedOps {
    pub tasks_scanned: u64,
    pub recalc_visits: u64,
    pub bitmap_searches: u64,
    pub list_ops: u64,
    pub tree_steps: u64,
    pub remote_touches: u64,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Default)]
pub struct SimStats {
    pub events: u64,
    /// Host wall-clock seconds the simulation took (the only non-deterministic field).
    pub wall_s: f64,
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²); 1 for an empty or all-zero set.
pub fn jain(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        1.0
    } else {
        s * s / (n * s2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), 1.0);
        assert!(
            (jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12,
            "1/n when one takes all"
        );
        assert!((jain(&[2.0, 1.0]) - 0.9).abs() < 1e-12);
    }
}

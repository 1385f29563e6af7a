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
    /// How semaphores that follow the run hand over (`handoff` or `opportunistic`), when the
    /// workload has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_mode: Option<String>,
    /// RT balancing mode of a per-CPU policy (`passive` or `pushpull`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rt_balance: Option<String>,
    /// Simulated time covered: until every foreground task ended, or the duration.
    pub simulated_s: f64,
    /// Whether every foreground task ended before the duration ran out.
    pub completed: bool,
    /// Why the run stopped: `completed`, `time_limit` (the duration ran out) or `deadlock`
    /// (no task could ever run again).
    pub stop_reason: String,
    /// For a deadlock: what each remaining task waited for, and since when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlock: Option<Vec<String>>,
    pub metrics: Metrics,
    /// Who ran on each CPU in a short window of the run (the last whole
    /// `trace::timeline::DEFAULT_WIDTH_NS` before it ended), where the caller asked for one
    /// (the CLI does for `--json` and `--report`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<crate::trace::timeline::Timeline>,
    /// The figures of each phase of the run, where phases were asked for (`--phases`):
    /// what changes when a workload's step begins (a group started or changed at a time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseMetrics>,
    /// The starvation watchdog's report, where one was asked for (`--starve`): the tasks that
    /// waited runnable longer than its threshold, longest wait first (at most
    /// `sim::watchdog::SHOWN`), with what ran meanwhile on each CPU they may use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starved: Option<Vec<StarvedTask>>,
    /// With `starved`: its threshold, s, and how many tasks waited longer than it in all
    /// (`starved` lists the first of them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starve_threshold_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starved_total: Option<u64>,
}

/// A task the starvation watchdog caught: runnable, not running, for longer than its threshold.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StarvedTask {
    /// Its process id (as in traces: never reused within a run).
    pub pid: u32,
    /// Its program's name, and its index in its group (`{i}`; 0 for a forked task).
    pub name: String,
    pub member: u32,
    /// When it became runnable (woken, forked, preempted) for the wait reported, s.
    pub runnable_since_s: f64,
    /// How long it waited for a CPU, s: until it ran, or until the run ended
    /// (`still_waiting`). Its longest such wait, where it starved more than once.
    pub waited_s: f64,
    pub still_waiting: bool,
    /// The CPUs it may run on (at the end of the wait).
    pub cpus_allowed: Vec<usize>,
    /// What ran meanwhile on each CPU it may use.
    pub ran_meanwhile: Vec<CpuDuringWait>,
}

/// What one CPU ran during a starved task's wait.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuDuringWait {
    pub cpu: usize,
    /// The tasks that held the CPU the longest in the window, longest first (at most
    /// `sim::watchdog::TOP_RAN`), and their time on it there, s.
    pub top: Vec<RanMeanwhile>,
    /// The other tasks that ran there in the window: how many, and their time in all, s.
    pub others: u64,
    pub others_s: f64,
}

/// A task that held a CPU during a starved task's wait.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RanMeanwhile {
    pub pid: u32,
    pub name: String,
    pub member: u32,
    /// Its time on the CPU within the wait (from its switch-in to its switch-out), s.
    pub cpu_s: f64,
}

/// The figures of one phase of a run: the part from `from_s` to `to_s` alone.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PhaseMetrics {
    pub from_s: f64,
    pub to_s: f64,
    /// The workload's throughput figure over the phase (its unit as the run's).
    pub throughput: f64,
    pub context_switches_per_s: f64,
    pub migrations: u64,
    /// Runnable tasks (queued or running) sampled at each tick of CPU 0, as vmstat's `r`.
    pub runqueue_length_avg: f64,
    pub interactive_wakeup_latency_us: Option<Latency>,
    pub probe_latency_us: Option<Latency>,
    pub audio: Option<AudioReport>,
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
    /// The distribution behind `wakeup_latency_us`: `[µs, fraction of wakeups at or under
    /// it]` at fixed quantiles (see [`latency_cdf`]), for the report's CDF plots.
    pub wakeup_latency_cdf_us: Vec<[f64; 2]>,
    /// The same for tasks marked interactive, if any ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interactive_wakeup_latency_us: Option<Latency>,
    /// Lateness of the workload's cyclictest-style probes (`probe`, `rtmix`, or a file's
    /// `timer T P cyclic`): from each timer expiry to the probe running, missed expiries
    /// included — Jussi Laako's wakeup-latency measure, cyclictest's `diff`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_latency_us: Option<Latency>,
    /// Jain's index over CPU time / (weight x lifetime) of the tasks (1 = perfectly fair).
    pub fairness_jain: f64,
    /// Starvation: the longest any runnable task waited for a CPU (from its wakeup, fork or
    /// preemption to running; a task still waiting when the run ended counts until then).
    pub longest_runnable_wait_us: f64,
    /// Runnable tasks machine-wide, the running ones included, sampled at CPU 0's ticks.
    pub runqueue_length: RunqueueLength,
    /// What the audio players (the `audio` workload) achieved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioReport>,
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
    /// Active RT balancing, and the RT-placement audit (with `--audit-every`).
    pub rt: RtStats,
    /// The deadline class's figures, where the workload has `SCHED_DEADLINE` tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlineReport>,
    /// The workload's sleeping locks (semaphores, mutexes, the big kernel lock).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sleep_locks: Vec<SleepLockStats>,
    /// rt-migrate-test's results, for the `rtmigrate` workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtmigrate: Option<RtMigrateReport>,
    pub sim: SimStats,
    /// Frequency and energy, on a machine whose profile models them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerReport>,
    /// Coherence traffic of kernel data and bus queueing, on a machine whose profile has an
    /// `[interconnect]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interconnect: Option<InterconnectReport>,
    /// Address spaces at fork, exec and exit, on a machine whose profile sets
    /// `kernel.cow_fault_ns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mm: Option<MmReport>,
}

/// What the coherence directory and the bus model counted (`sim::interconnect`).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct InterconnectReport {
    /// Kernel lines supplied by another CPU's cache (scheduler data and mm lines).
    pub transfers: u64,
    /// Of those, lines that crossed from one bus to another.
    pub cross_bus: u64,
    /// Kernel lines read from memory.
    pub memory_reads: u64,
    /// Writes that invalidated other CPUs' copies.
    pub invalidations: u64,
    /// Time line transfers and cache refills waited for the bus, µs.
    pub bus_wait_us: f64,
    /// Cache refills that shared the bus with another streaming CPU.
    pub contended_refills: u64,
}

/// What the address-space model counted (`sim::mm`).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct MmReport {
    /// Page references taken by fork.
    pub fork_pages: u64,
    /// Write-protection faults, and the copies among them (pages still shared when written).
    pub cow_faults: u64,
    pub cow_copies: u64,
    /// Page references dropped by exit and exec.
    pub dropped_pages: u64,
    /// `struct page` and page-table lines pulled from another CPU's cache.
    pub line_transfers: u64,
}

/// What the machine's frequency and power model reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PowerReport {
    /// The cpufreq governor of the run (none on a profile without frequency scaling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// Energy of the whole run, J, and its average power, W (on a profile with power figures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_w: Option<f64>,
    /// Busy CPU time at each frequency, as a share of all busy time, ascending by MHz.
    pub busy_at_mhz: Vec<FreqShare>,
    /// A hybrid machine: per core type, the busy CPU time there and its cores' energy.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_core_type: Vec<CoreTypeShare>,
}

/// Where a hybrid machine's busy time went, by core type.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CoreTypeShare {
    pub name: String,
    /// Busy CPU time on this type's CPUs, s, and as a share of all busy CPU time.
    pub busy_s: f64,
    pub busy_share: f64,
    /// Energy of this type's cores, J (the uncore is in the run's total only).
    pub energy_j: f64,
    /// The type of most work per clock (the big or P-cores).
    pub biggest: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FreqShare {
    pub mhz: f64,
    pub share: f64,
}

/// One sleeping lock's record.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SleepLockStats {
    pub name: String,
    pub kind: String,
    pub acquisitions: u64,
    /// Acquisitions that slept or spun first.
    pub contended: u64,
    /// up()s that passed ownership to a woken waiter before it ran.
    pub handoffs: u64,
    /// Acquisitions made while others were queued.
    pub steals: u64,
    pub wait_us_total: f64,
    pub wait_us_max: f64,
    /// Audits (with --audit-every) that found a queued task asleep while the lock was free.
    pub stranded_audits: u64,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Default)]
pub struct RtStats {
    /// RT tasks pushed to another CPU.
    pub pushes: u64,
    /// RT tasks pulled from another CPU.
    pub pulls: u64,
    /// Invariant audits run.
    pub audits: u64,
    /// Audits that found a runnable RT task waiting while a CPU it may use ran less important
    /// work with no reschedule pending.
    pub inversions: u64,
}

/// What the deadline class did (`policy::deadline`): its push/pull balancing and, per task,
/// its jobs (a wakeup, or the start, to the next block or exit), the jobs that ended after
/// their absolute deadline (the job's start plus the relative deadline), and the times its
/// runtime ran out and it was throttled.
#[derive(Clone, Debug, Serialize, PartialEq, Default)]
pub struct DeadlineReport {
    pub pushes: u64,
    pub pulls: u64,
    pub jobs: u64,
    pub deadline_misses: u64,
    pub throttles: u64,
    pub tasks: Vec<DlTaskReport>,
}

/// One `SCHED_DEADLINE` task's record.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DlTaskReport {
    /// Its program's name and its index in its group.
    pub name: String,
    pub member: u32,
    pub runtime_us: f64,
    pub deadline_us: f64,
    pub period_us: f64,
    pub jobs: u64,
    pub deadline_misses: u64,
    pub throttles: u64,
}

/// rt-migrate-test's output: per iteration, each thread's start offset from the parent's
/// stamp, the end of its busy loop, and the CPU it got in the loop (µs; the tool prints loop
/// counts, which are proportional to it).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RtMigrateReport {
    pub threads: u32,
    /// FIFO priority of each thread, lowest first.
    pub prios: Vec<u8>,
    pub iterations: Vec<RtIteration>,
    pub failed_iterations: u32,
    /// First failing iteration (rt-migrate-test -c stops there).
    pub first_failure: Option<u32>,
    /// Worst start delay of the highest-priority thread, µs.
    pub worst_start_delay_highest_us: f64,
    /// Per thread: start delay max / min / average, µs (the tool's closing summary).
    pub start_delay_us: Vec<MaxMinAvg>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RtIteration {
    pub start_us: Vec<f64>,
    pub end_us: Vec<f64>,
    pub cpu_us: Vec<f64>,
    pub failed: bool,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct MaxMinAvg {
    pub max: f64,
    pub min: f64,
    pub avg: f64,
}

/// Builds rt-migrate-test's report from busy-loop records (iteration, thread, start, end, cpu,
/// all ns relative to the iteration's stamp), applying its `check_times` rule: iteration fails
/// when a thread started more than `maxerr` after the next-lower-priority one *and* it got less
/// CPU, or started after that one ended, or ended more than `maxerr` after it.
pub fn rtmigrate_report(
    threads: u32,
    base_prio: u8,
    maxerr_ns: u64,
    records: &[(u32, u32, u64, u64, u64)],
) -> RtMigrateReport {
    let n = threads as usize;
    let last_iter = records.iter().map(|r| r.0).max().unwrap_or(0);
    let us = |ns: u64| ns as f64 / 1e3;
    let mut iterations = Vec::new();
    let mut failed_iterations = 0;
    let mut first_failure = None;
    let mut worst = 0.0f64;
    let mut starts: Vec<Vec<f64>> = vec![Vec::new(); n];
    for it in 1..=last_iter {
        let mut row = vec![None; n];
        for r in records.iter().filter(|r| r.0 == it && (r.1 as usize) < n) {
            row[r.1 as usize] = Some((r.2, r.3, r.4));
        }
        if row.iter().any(|r| r.is_none()) {
            continue; // the run ended inside this iteration
        }
        let row: Vec<(u64, u64, u64)> = row.into_iter().map(|r| r.expect("checked")).collect();
        let m = maxerr_ns as i128;
        let failed = (1..n).any(|i| {
            let (s, e, c) = (row[i].0 as i128, row[i].1 as i128, row[i].2);
            let (ps, pe, pc) = (row[i - 1].0 as i128, row[i - 1].1 as i128, row[i - 1].2);
            s - ps > m && (c < pc || s > pe || e - pe > m)
        });
        if failed {
            failed_iterations += 1;
            first_failure.get_or_insert(it - 1);
        }
        worst = worst.max(us(row[n - 1].0));
        for (i, r) in row.iter().enumerate() {
            starts[i].push(us(r.0));
        }
        iterations.push(RtIteration {
            start_us: row.iter().map(|r| us(r.0)).collect(),
            end_us: row.iter().map(|r| us(r.1)).collect(),
            cpu_us: row.iter().map(|r| us(r.2)).collect(),
            failed,
        });
    }
    let start_delay_us = starts
        .iter()
        .map(|v| MaxMinAvg {
            max: v.iter().copied().fold(0.0, f64::max),
            min: if v.is_empty() {
                0.0
            } else {
                v.iter().copied().fold(f64::INFINITY, f64::min)
            },
            avg: if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            },
        })
        .collect();
    RtMigrateReport {
        threads,
        prios: (0..threads).map(|i| base_prio + i as u8).collect(),
        iterations,
        failed_iterations,
        first_failure,
        worst_start_delay_highest_us: worst,
        start_delay_us,
    }
}

/// Audio playback: periods written, audible skips, deadlines missed, and how late each
/// period was past its deadline (0 when on time; shown as the 1 ns floor of the histogram).
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Default)]
pub struct AudioReport {
    pub chunks: u64,
    pub underruns: u64,
    pub deadline_misses: u64,
    pub lateness_us: Latency,
}

/// The quantiles a CDF is sampled at: every percent, then the tail (99.5, 99.9, 99.99 %) and
/// the maximum. Fixed points keep results small (104 pairs) and comparable run to run.
pub const CDF_QUANTILES: [f64; 104] = {
    let mut q = [0.0; 104];
    let mut i = 0;
    while i <= 100 {
        q[i] = i as f64 / 100.0;
        i += 1;
    }
    // Indexes 100..=103: 0.995, 0.999, 0.9999, 1.0 (the 1.0 of the loop moves to the end).
    q[100] = 0.995;
    q[101] = 0.999;
    q[102] = 0.9999;
    q[103] = 1.0;
    q
};

/// `[µs, quantile]` pairs of a histogram of ns at [`CDF_QUANTILES`]; empty for no samples.
pub fn latency_cdf(h: &hdrhistogram::Histogram<u64>) -> Vec<[f64; 2]> {
    if h.is_empty() {
        return Vec::new();
    }
    CDF_QUANTILES
        .iter()
        .map(|&q| [h.value_at_quantile(q) as f64 / 1e3, q])
        .collect()
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Default)]
pub struct RunqueueLength {
    pub avg: f64,
    pub max: u64,
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
    /// How many times the workload's first part ran its `count` statement: the figure's raw
    /// numerator (`value` is `count` per simulated second, times the workload's scale).
    pub count: u64,
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
    /// Task slots the run needed: the most tasks alive at once (dead tasks' slots are reused).
    pub task_slots: u64,
    /// Host memory of one task slot's records (the scheduler's task and the simulator's
    /// program state), bytes: what each of the `task_slots` costs.
    pub task_record_bytes: u64,
    /// Messages sent (`send`) while no receiver waited on the channel, which a receiver then
    /// takes without blocking. In a replayed trace every channel is a recorded wakeup's token:
    /// each one posted before its sleeper waited is a recorded sleep, wakeup and pair of
    /// switches that the replay did not repeat.
    pub sent_unwaited: u64,
    /// Timed sleeps whose interrupt, on another CPU (`sleep D irq-on N`), woke the task
    /// before it had left its own CPU: it did not sleep, and no wakeup or switch happened.
    /// In a replayed trace, another way a recorded wakeup is not repeated.
    pub timers_before_sleep: u64,
    /// Host wall-clock seconds the simulation took (the only non-deterministic field).
    pub wall_s: f64,
}

/// Jain's index from the count, sum and sum of squares of the values (so that values can
/// be folded in as they become known): `sum^2 / (n * sum2)`, 1 for no data.
pub fn jain_from_sums(n: u64, sum: f64, sum2: f64) -> f64 {
    if n == 0 || sum2 == 0.0 {
        1.0
    } else {
        sum * sum / (n as f64 * sum2)
    }
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
    fn rtmigrate_check_follows_the_tool() {
        let ms = 1_000_000;
        // Iteration 1: all start at once (fine). Iteration 2: thread 1 (higher) starts 20 ms
        // late, after thread 0 ended - the failure the test exists to catch. Iteration 3: the
        // lower thread starts late but the higher one did not wait: fine.
        let recs = [
            (1, 0, 30_000, 20 * ms, 20 * ms),
            (1, 1, 40_000, 20 * ms, 20 * ms),
            (2, 0, 30_000, 20 * ms, 20 * ms),
            (2, 1, 20 * ms + 50_000, 20 * ms + 60_000, 10_000),
            (3, 0, 20 * ms, 20 * ms + 1000, 1000),
            (3, 1, 30_000, 20 * ms, 20 * ms),
        ];
        let r = rtmigrate_report(2, 2, ms, &recs);
        assert_eq!(r.iterations.len(), 3);
        assert_eq!(
            r.iterations.iter().map(|i| i.failed).collect::<Vec<_>>(),
            vec![false, true, false]
        );
        assert_eq!((r.failed_iterations, r.first_failure), (1, Some(1)));
        assert!((r.worst_start_delay_highest_us - 20_050.0).abs() < 1e-6);
        assert_eq!(r.prios, vec![2, 3]);
    }

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

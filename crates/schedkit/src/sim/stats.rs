//! What the run counts as it goes, for its result (`result.rs`): the run's tally (`RunTally`:
//! switches, migrations, the workload's counters, latency histograms, the runqueue-length
//! samples, lock waits, fairness sums of the dead, RT balancing and audit counts), each CPU's
//! time by category (`CpuAccount`), per-phase tallies, the audio players' tally, the busy
//! loops' records, and the histogram shape every latency uses.
//!
//! Counting only: no figure here may feed back into what the run does. The fairness sums are
//! floating point and folded in the order tasks die: their order is part of the figures.

use super::*;

/// Everything the run counts for its result, as it goes.
pub(super) struct RunTally {
    /// Context switches (a CPU changing what it runs, idle included).
    pub(super) switches: u64,
    /// Switches-in of a task on another CPU than the one it last ran on.
    pub(super) migrations: u64,
    /// The workload's counters (`Op::Count`), one per workload part; part 0 is the throughput.
    pub(super) counts: Vec<u64>,
    /// Wakeup latency (runnable to running) of every task, and of the interactive ones.
    pub(super) lat_all: Histogram<u64>,
    pub(super) lat_interactive: Histogram<u64>,
    /// cyclictest-style probes (`Op::Lateness`): how late each ran after its timer's expiry.
    pub(super) probe: Histogram<u64>,
    pub(super) audio: AudioTally,
    /// The phase now running and the phases already over (`SimConfig::phases`).
    pub(super) phase: Option<Box<PhaseTally>>,
    pub(super) phases_done: Vec<crate::metrics::PhaseMetrics>,
    /// The longest a runnable task waited for a CPU, ns.
    pub(super) max_runnable_wait: u64,
    /// Runnable tasks machine-wide (running ones included), sampled at CPU 0's ticks.
    pub(super) rq_len: RunqueueSamples,
    /// Per sleeping lock of the workload: the time tasks waited for it, and how many audits
    /// found a waiter asleep while a unit was free.
    pub(super) lock_waits: Vec<LockWait>,
    pub(super) stranded: Vec<u64>,
    /// The finished busy loops (`SpinUntil`, rt-migrate-test).
    pub(super) spins: Vec<SpinRecord>,
    /// RT tasks moved by push and by pull, audits run, and audits that found a runnable RT
    /// task waiting while a CPU it may use ran less important work with no reschedule pending.
    pub(super) rt: RtStats,
    /// The deadline class's pushes and pulls, and the records of deadline tasks that died.
    pub(super) dl: crate::metrics::DeadlineReport,
    /// Fairness sums and CPU time of the tasks that died, folded in as each dies.
    pub(super) dead_shares: ShareSums,
    pub(super) dead_exec_ns: u64,
    /// Tasks ever created (`metrics.tasks_created`).
    pub(super) tasks_created: u64,
    /// Messages sent while no receiver waited, which the receiver then takes without
    /// blocking (`sim.sent_unwaited`).
    pub(super) sent_unwaited: u64,
    /// Timed sleeps woken before the task left its CPU (`sim.timers_before_sleep`).
    pub(super) timers_before_sleep: u64,
}

impl RunTally {
    /// Nothing counted yet, for a workload of `parts` parts and `locks` sleeping locks.
    pub(super) fn new(parts: usize, locks: usize) -> Self {
        RunTally {
            switches: 0,
            migrations: 0,
            counts: vec![0; parts],
            lat_all: hist(),
            lat_interactive: hist(),
            probe: hist(),
            audio: AudioTally {
                chunks: 0,
                underruns: 0,
                deadline_misses: 0,
                lateness: hist(),
            },
            phase: None,
            phases_done: Vec::new(),
            max_runnable_wait: 0,
            rq_len: RunqueueSamples::default(),
            lock_waits: vec![LockWait::default(); locks],
            stranded: vec![0; locks],
            spins: Vec::new(),
            rt: RtStats::default(),
            dl: Default::default(),
            dead_shares: ShareSums::default(),
            dead_exec_ns: 0,
            tasks_created: 0,
            sent_unwaited: 0,
            timers_before_sleep: 0,
        }
    }

    /// A fresh phase beginning at `at`: the run's counters now, empty histograms.
    pub(super) fn phase_tally(&self, at: u64) -> PhaseTally {
        PhaseTally {
            start_ns: at,
            switches: self.switches,
            migrations: self.migrations,
            count0: self.counts.first().copied().unwrap_or(0),
            rq_len: self.rq_len,
            audio: self.audio.counts(),
            lat_interactive: hist(),
            probe: hist(),
            audio_lateness: hist(),
        }
    }
}

/// Where a CPU's time went, ns: each closed segment adds to one category (interrupt work
/// inserted into a segment to `irq`). The categories add up to the time simulated.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CpuAccount {
    pub(super) user: u64,
    pub(super) sys: u64,
    /// In `schedule()` and the switch, less the lock spin.
    pub(super) sched: u64,
    /// Spinning on runqueue locks inside `schedule()`.
    pub(super) spin: u64,
    /// A task just switched in bringing its working set back into the cache.
    pub(super) refill: u64,
    pub(super) irq: u64,
    pub(super) idle: u64,
}

impl CpuAccount {
    /// All categories: the time accounted.
    pub(super) fn total(&self) -> u64 {
        self.user + self.sys + self.sched + self.spin + self.refill + self.irq + self.idle
    }
}

/// Samples of the machine's runnable tasks: their sum, how many, and the largest.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RunqueueSamples {
    pub(super) sum: u64,
    pub(super) samples: u64,
    pub(super) max: u64,
}

impl RunqueueSamples {
    pub(super) fn add(&mut self, n: u64) {
        self.sum += n;
        self.samples += 1;
        self.max = self.max.max(n);
    }
}

/// The time tasks waited for one sleeping lock, ns: in all, and the longest wait.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LockWait {
    pub(super) total_ns: u64,
    pub(super) max_ns: u64,
}

impl LockWait {
    pub(super) fn add(&mut self, ns: u64) {
        self.total_ns += ns;
        self.max_ns = self.max_ns.max(ns);
    }
}

/// Jain's fairness sums over tasks' shares (CPU time per unit of weight per ns alive): how
/// many, their sum and the sum of their squares (`metrics::jain_from_sums`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ShareSums {
    pub(super) n: u64,
    pub(super) sum: f64,
    pub(super) sum_sq: f64,
}

impl ShareSums {
    pub(super) fn add(&mut self, share: f64) {
        self.n += 1;
        self.sum += share;
        self.sum_sq += share * share;
    }
}

/// What a phase of the run has counted since it began (`SimConfig::phases`): the run's
/// counters where it began, and its own latency histograms.
pub(super) struct PhaseTally {
    pub(super) start_ns: u64,
    pub(super) switches: u64,
    pub(super) migrations: u64,
    pub(super) count0: u64,
    pub(super) rq_len: RunqueueSamples,
    pub(super) audio: AudioCounts,
    pub(super) lat_interactive: Histogram<u64>,
    pub(super) probe: Histogram<u64>,
    pub(super) audio_lateness: Histogram<u64>,
}

/// What the audio players of a run achieved.
pub(super) struct AudioTally {
    pub(super) chunks: u64,
    pub(super) underruns: u64,
    pub(super) deadline_misses: u64,
    /// Per chunk after the first: how late past its deadline it was written (1 ns floor).
    pub(super) lateness: Histogram<u64>,
}

impl AudioTally {
    pub(super) fn counts(&self) -> AudioCounts {
        AudioCounts {
            chunks: self.chunks,
            underruns: self.underruns,
            deadline_misses: self.deadline_misses,
        }
    }
}

/// The audio players' counters at one instant (where a phase began).
#[derive(Clone, Copy, Debug)]
pub(super) struct AudioCounts {
    pub(super) chunks: u64,
    pub(super) underruns: u64,
    pub(super) deadline_misses: u64,
}

/// One finished `SpinUntil`: times relative to the iteration's stamp.
#[derive(Clone, Copy, Debug)]
pub(super) struct SpinRecord {
    pub(super) iteration: u32,
    pub(super) id: u32,
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    pub(super) cpu_ns: u64,
}

pub(super) fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1_000_000_000_000, 3).expect("valid histogram bounds")
}

impl<P: SchedClass> Sim<'_, '_, P> {
    /// The phase now running ends and the next begins.
    pub(super) fn next_phase(&mut self) {
        let now = self.now;
        if let Some(p) = self.tally.phase.as_deref() {
            let done = self.phase_metrics(p, now);
            self.tally.phases_done.push(done);
        }
        self.tally.phase = Some(Box::new(self.tally.phase_tally(now)));
    }
}

//! What the run counts as it goes, for its result (`result.rs`): per-phase tallies, the audio
//! players' tally, the busy loops' records, and the histogram shape every latency uses.
//!
//! Counting only: no figure here may feed back into what the run does.

use super::*;

/// What a phase of the run has counted since it began (`SimConfig::phases`): the run's
/// counters where it began, and its own latency histograms.
pub(crate) struct PhaseTally {
    pub start_ns: u64,
    pub switches: u64,
    pub migrations: u64,
    pub count0: u64,
    pub rq_len: (u64, u64),
    pub audio: (u64, u64, u64),
    pub lat_interactive: Histogram<u64>,
    pub probe: Histogram<u64>,
    pub audio_lateness: Histogram<u64>,
}

/// What the audio players of a run achieved.
pub(crate) struct AudioTally {
    pub chunks: u64,
    pub underruns: u64,
    pub deadline_misses: u64,
    /// Per chunk after the first: how late past its deadline it was written (1 ns floor).
    pub lateness: Histogram<u64>,
}

/// One finished `SpinUntil`: times relative to the iteration's stamp.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpinRecord {
    pub iteration: u32,
    pub id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub cpu_ns: u64,
}

pub(super) fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1_000_000_000_000, 3).expect("valid histogram bounds")
}

impl<P: SchedClass> Sim<'_, '_, P> {
    /// A fresh phase beginning at `at`: the run's counters now, empty histograms.
    pub(super) fn phase_tally(&self, at: u64) -> PhaseTally {
        PhaseTally {
            start_ns: at,
            switches: self.switches,
            migrations: self.migrations,
            count0: self.counts.first().copied().unwrap_or(0),
            rq_len: (self.rq_len.0, self.rq_len.1),
            audio: (
                self.audio.chunks,
                self.audio.underruns,
                self.audio.deadline_misses,
            ),
            lat_interactive: hist(),
            probe: hist(),
            audio_lateness: hist(),
        }
    }

    /// The phase now running ends and the next begins.
    pub(super) fn next_phase(&mut self) {
        let now = self.now;
        if let Some(p) = self.phase.as_deref() {
            let done = self.phase_metrics(p, now);
            self.phases_done.push(done);
        }
        self.phase = Some(Box::new(self.phase_tally(now)));
    }
}

//! What a validation compares and how it judges: the figures of a trace in table order with
//! their targets ([`FIGURES`], [`Tolerance`]), one figure's recorded and replayed values with
//! the kernel's own range ([`Row`]), and what a workload gave with its scores
//! ([`WorkloadResult`]). Pure: nothing here runs or reads anything.

use crate::trace::figures::Figures;
use crate::trace::replay;
use serde::Serialize;

/// How close a replayed figure must be to the recorded one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tolerance {
    /// |replayed / recorded − 1| ≤ this.
    Relative(f64),
    /// replayed / recorded within [1/this, this].
    Factor(f64),
    /// Reported only.
    None,
}

impl Tolerance {
    pub fn holds(self, recorded: f64, replayed: f64) -> Option<bool> {
        match self {
            Tolerance::None => None,
            Tolerance::Relative(r) => Some(if recorded == 0.0 {
                replayed == 0.0
            } else {
                (replayed / recorded - 1.0).abs() <= r + 1e-12
            }),
            Tolerance::Factor(f) => Some(if recorded <= 0.0 || replayed <= 0.0 {
                recorded == replayed
            } else {
                let q = replayed / recorded;
                q <= f + 1e-12 && q >= 1.0 / f - 1e-12
            }),
        }
    }

    pub fn describe(self) -> String {
        match self {
            Tolerance::None => "-".into(),
            Tolerance::Relative(r) => format!("±{:.0}%", r * 100.0),
            Tolerance::Factor(f) => format!("×{f:.0}"),
        }
    }
}

/// The figures of a validation, in table order, with their targets (issue 28, item 4).
pub const FIGURES: [(&str, Tolerance); 7] = [
    ("context switches", Tolerance::Relative(0.15)),
    ("wakeups", Tolerance::Relative(0.15)),
    ("migrations", Tolerance::Relative(0.15)),
    ("busy CPU time (ms)", Tolerance::Relative(0.10)),
    ("wakeup latency p50 (us)", Tolerance::Factor(2.0)),
    ("wakeup latency p99 (us)", Tolerance::None),
    ("CPU time spread (cv)", Tolerance::None),
];

/// The target of a model's headline figure against the real run's.
pub const MODEL_TOLERANCE: Tolerance = Tolerance::Relative(0.25);

/// The coefficient of variation of CPU time over the tasks that ran: how unevenly the CPU
/// was spread (0: every task got the same).
pub fn cpu_spread(f: &Figures) -> f64 {
    let v: Vec<f64> = f
        .tasks
        .iter()
        .map(|t| t.cpu_ms)
        .filter(|&c| c > 0.0)
        .collect();
    if v.len() < 2 {
        return 0.0;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64;
    if mean > 0.0 {
        var.sqrt() / mean
    } else {
        0.0
    }
}

pub(super) fn values(f: &Figures) -> [f64; 7] {
    [
        f.context_switches as f64,
        f.wakeups as f64,
        f.migrations as f64,
        f.busy_cpu_s * 1e3,
        f.wakeup_latency_us.p50,
        f.wakeup_latency_us.p99,
        cpu_spread(f),
    ]
}

/// One figure of one workload.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub figure: String,
    pub recorded: f64,
    pub replayed: f64,
    /// replayed / recorded − 1 (None where recorded is 0).
    pub error: Option<f64>,
    pub target: Tolerance,
    /// None: no target.
    pub within: Option<bool>,
    /// The lowest and highest value over every recording of the command (the replayed one
    /// and its repeats), where the suite has repeats: the kernel's own spread.
    pub kernel_range: Option<(f64, f64)>,
    /// Where the suite has repeats: the replayed value is within its target of at least one
    /// recording (for a figure without a target: within `kernel_range`).
    pub within_some_run: Option<bool>,
}

impl Row {
    pub(super) fn new(figure: &str, recorded: f64, replayed: f64, target: Tolerance) -> Row {
        Row {
            figure: figure.to_string(),
            recorded,
            replayed,
            error: (recorded != 0.0).then(|| replayed / recorded - 1.0),
            target,
            within: target.holds(recorded, replayed),
            kernel_range: None,
            within_some_run: None,
        }
    }

    /// Sets the kernel's range from the values of the repeats (the recorded value included),
    /// and whether the replayed value is within its target of any of them.
    pub(super) fn with_repeats(mut self, repeats: &[f64]) -> Row {
        if repeats.is_empty() {
            return self;
        }
        let (lo, hi) = repeats
            .iter()
            .fold((self.recorded, self.recorded), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        self.kernel_range = Some((lo, hi));
        self.within_some_run = Some(match self.target {
            Tolerance::None => (lo..=hi).contains(&self.replayed),
            t => std::iter::once(self.recorded)
                .chain(repeats.iter().copied())
                .any(|v| t.holds(v, self.replayed) == Some(true)),
        });
        self
    }
}

/// What a workload of the suite gave.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadResult {
    pub name: String,
    pub command: String,
    pub policy: String,
    /// The replay finished within its time limit.
    pub completed: bool,
    pub rows: Vec<Row>,
    /// The model's headline figure against the benchmark's, where the suite names a model.
    pub model: Option<Row>,
    /// Why the model could not give its figure, if it could not.
    pub model_error: Option<String>,
    pub recorded: Figures,
    pub replayed: Figures,
    pub replay_stats: replay::ReplayStats,
    /// Recorded task wakeups whose token the replay's waker posted before the sleeper reached
    /// its wait (`sim.sent_unwaited`): the sleeper did not sleep, and the wakeup and its two
    /// switches were not repeated. The mechanism behind the message-passing misses.
    pub tokens_posted_first: u64,
    /// Recorded interrupt wakeups whose interrupt, replayed on its recorded CPU, came before
    /// the sleeper had left its own (`sim.timers_before_sleep`): not repeated either.
    pub timers_before_sleep: u64,
    /// Where the recording's and the replay's forked tasks started
    /// ([`crate::trace::figures::ForkStarts`]): a recording kernel that keeps children on their
    /// parent's CPU beside an idle one is not placing forks as mainline does.
    pub fork_starts: [crate::trace::figures::ForkStarts; 2],
    /// Repeats of the recording measured for `kernel_range`.
    pub repeats: usize,
    /// The kernel against itself: of each repeat's figures that have a target, how many are
    /// within it of the replayed recording's (passed, judged).
    pub kernel_self: (usize, usize),
}

impl WorkloadResult {
    /// Figures with a target, and how many of them hold.
    pub fn score(&self) -> (usize, usize) {
        let rows = self.rows.iter().chain(self.model.as_ref());
        let judged: Vec<bool> = rows.filter_map(|r| r.within).collect();
        (judged.iter().filter(|&&b| b).count(), judged.len())
    }

    /// Figures with a target and repeats, and how many are within their target of at least
    /// one recording.
    pub fn score_range(&self) -> (usize, usize) {
        let rows = self.rows.iter().chain(self.model.as_ref());
        let judged: Vec<bool> = rows
            .filter(|r| r.within.is_some())
            .filter_map(|r| r.within_some_run)
            .collect();
        (judged.iter().filter(|&&b| b).count(), judged.len())
    }

    /// Recordings the kernel range spans (1 + repeats).
    pub fn recordings(&self) -> usize {
        1 + self.repeats
    }
}

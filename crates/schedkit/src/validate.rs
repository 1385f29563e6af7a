//! `schedkit validate`: does the simulated scheduler behave like the kernel that recorded a
//! suite of traces?
//!
//! A *suite* is a folder with a `suite.toml` (what recorded it: kernel release, its
//! `sched_features`, HZ, preemption mode, the machine profile and the fair class that stand
//! for it) and, per workload, a trace recorded with `scripts/record-trace.sh` (plain or
//! gzip-compressed) and what the benchmark itself printed. `scripts/record-suite.sh` records
//! one. For each workload the trace is replayed (`trace::replay`) under the recording kernel's
//! class on the suite's machine, and the replay's own trace is measured exactly as the
//! recorded one (`trace::figures`), so every figure of a row is measured alike:
//!
//! | figure | target (issue 28, item 4) |
//! |---|---|
//! | context switches, wakeups, migrations | within ±15 % |
//! | busy CPU time | within ±10 % |
//! | wakeup latency p50 | within a factor of 2 |
//! | wakeup latency p99, spread of CPU time over tasks | reported, no target |
//!
//! Where the suite names a built-in workload that models the benchmark (`model`), the model is
//! simulated too and its headline figure (hackbench's `Time:`, cyclictest's latency, ...) set
//! against what the real run printed (target ±25 %).
//!
//! Nothing here fits anything: the figures are what the modelled mechanisms give. A miss is
//! reported as a miss; `docs/validation.md` says which mechanism it comes from.
//!
//! Depends on `trace`, `sim` (through `PolicyKind::simulate`), `machine`, `registry`,
//! `workload` and `metrics`; nothing depends on it but the front ends.

use crate::machine::Machine;
use crate::registry::PolicyKind;
use crate::report::svg::esc;
use crate::trace::figures::{figures, Figures};
use crate::trace::{replay, TraceRecorder};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `suite.toml`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// `uname -r` of the recording kernel.
    pub kernel: String,
    #[serde(default)]
    pub uname: String,
    /// Day of the recording.
    #[serde(default)]
    pub recorded: String,
    /// Machine profile standing for the recording machine (a shipped name or a path
    /// relative to the suite).
    pub machine: String,
    /// The recording kernel's fair class, as a policy name (`eevdf:era=6.18`).
    pub class: String,
    /// CONFIG_HZ of the recording kernel.
    #[serde(default)]
    pub hz: Option<u32>,
    /// The preemption mode (`/sys/kernel/debug/sched/preempt`), or why it is unknown.
    #[serde(default)]
    pub preempt: String,
    /// `/sys/kernel/debug/sched/features`, or why it could not be read.
    #[serde(default)]
    pub sched_features: String,
    /// The scheduler-related lines of the kernel's config.
    #[serde(default)]
    pub config: String,
    /// `/proc/sys/kernel/sched_autogroup_enabled`.
    #[serde(default)]
    pub autogroup: Option<u8>,
    #[serde(default, rename = "workload")]
    pub workloads: Vec<SuiteWorkload>,
    /// The folder the suite was read from (not in the file).
    #[serde(skip)]
    pub dir: PathBuf,
}

/// One recorded workload of a suite.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteWorkload {
    pub name: String,
    /// The trace, relative to the suite's folder.
    pub trace: PathBuf,
    /// The command that was recorded.
    pub command: String,
    /// What the benchmark printed, relative to the suite's folder.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Events in the trace and its span, as the recording script counted them.
    #[serde(default)]
    pub events: Option<u64>,
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// The benchmark's own headline figure, as it printed it.
    #[serde(default)]
    pub headline: Option<Headline>,
    /// A built-in workload spec that models the benchmark (`hackbench:groups=2,...`).
    #[serde(default)]
    pub model: Option<String>,
    /// Which simulated figure of the model stands for the headline (see [`ModelFigure`]).
    #[serde(default)]
    pub model_figure: Option<String>,
    /// Free text: what is known about this workload's recording.
    #[serde(default)]
    pub note: Option<String>,
    /// More recordings of the same command on the same machine (`record-suite.sh
    /// --repeats N`): not replayed, only measured, for the kernel's own spread of each
    /// figure from run to run.
    #[serde(default, rename = "repeat")]
    pub repeats: Vec<Repeat>,
}

/// Another recording of a workload's command.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Repeat {
    /// The trace, relative to the suite's folder.
    pub trace: PathBuf,
    /// What the benchmark printed, relative to the suite's folder.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// The benchmark's headline figure in that run, as it printed it.
    #[serde(default)]
    pub headline: Option<f64>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Headline {
    pub name: String,
    pub value: f64,
    #[serde(default)]
    pub unit: Option<String>,
}

/// A simulated figure of a built-in model that can stand for a benchmark's headline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelFigure {
    /// Simulated time until every task of the model ended (hackbench's `Time:`, messaging's
    /// `Total time`), seconds.
    ElapsedS,
    /// The same divided by the model's operation count `ops=N` (`perf bench sched pipe`'s
    /// usecs/op), µs.
    ElapsedPerOpUs(u64),
    /// Wakeup latency percentiles of the model's tasks, µs (schbench).
    WakeupP50Us,
    WakeupP99Us,
    /// The probes' lateness (cyclictest's `diff`), µs.
    ProbeP50Us,
    ProbeP99Us,
    ProbeMaxUs,
}

impl ModelFigure {
    pub fn parse(s: &str) -> Result<ModelFigure, String> {
        let s = s.trim();
        if let Some(n) = s.strip_prefix("elapsed_per_op_us:ops=") {
            let n: u64 = n
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("model_figure '{s}': ops must be a positive integer"))?;
            return Ok(ModelFigure::ElapsedPerOpUs(n));
        }
        Ok(match s {
            "elapsed_s" => ModelFigure::ElapsedS,
            "wakeup_p50_us" => ModelFigure::WakeupP50Us,
            "wakeup_p99_us" => ModelFigure::WakeupP99Us,
            "probe_p50_us" => ModelFigure::ProbeP50Us,
            "probe_p99_us" => ModelFigure::ProbeP99Us,
            "probe_max_us" => ModelFigure::ProbeMaxUs,
            _ => {
                return Err(format!(
                    "model_figure '{s}': one of elapsed_s, elapsed_per_op_us:ops=N, wakeup_p50_us, wakeup_p99_us, probe_p50_us, probe_p99_us, probe_max_us"
                ))
            }
        })
    }

    fn of(self, r: &crate::metrics::RunResult) -> Option<f64> {
        let m = &r.metrics;
        match self {
            ModelFigure::ElapsedS => r.completed.then_some(r.simulated_s),
            ModelFigure::ElapsedPerOpUs(n) => r.completed.then_some(r.simulated_s * 1e6 / n as f64),
            ModelFigure::WakeupP50Us => Some(m.wakeup_latency_us.p50),
            ModelFigure::WakeupP99Us => Some(m.wakeup_latency_us.p99),
            ModelFigure::ProbeP50Us => m.probe_latency_us.as_ref().map(|l| l.p50),
            ModelFigure::ProbeP99Us => m.probe_latency_us.as_ref().map(|l| l.p99),
            ModelFigure::ProbeMaxUs => m.probe_latency_us.as_ref().map(|l| l.max),
        }
    }
}

impl Suite {
    /// Reads `DIR/suite.toml` (or the file itself), checking every workload's files exist.
    pub fn load(path: &Path) -> Result<Suite, String> {
        let (dir, file) = if path.is_dir() {
            (path.to_path_buf(), path.join("suite.toml"))
        } else {
            (
                path.parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from(".")),
                path.to_path_buf(),
            )
        };
        let text = crate::infile::read_to_string(&file, crate::infile::MAX_TEXT_INPUT, "suite")
            .map_err(|e| format!("cannot read suite {}: {e}", file.display()))?;
        let mut suite: Suite =
            toml::from_str(&text).map_err(|e| format!("suite {}: {e}", file.display()))?;
        suite.dir = dir;
        if suite.workloads.is_empty() {
            return Err(format!("suite {}: no [[workload]]", file.display()));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, w) in suite.workloads.iter().enumerate() {
            let at = format!(
                "suite {}: workload {} ('{}')",
                file.display(),
                i + 1,
                w.name
            );
            if w.name.trim().is_empty() {
                return Err(format!("{at}: empty name"));
            }
            if !names.insert(w.name.clone()) {
                return Err(format!("{at}: the name is used twice"));
            }
            let t = suite.dir.join(&w.trace);
            if !t.is_file() {
                return Err(format!("{at}: trace {} not found", t.display()));
            }
            for (k, r) in w.repeats.iter().enumerate() {
                let t = suite.dir.join(&r.trace);
                if !t.is_file() {
                    return Err(format!(
                        "{at}: repeat {}: trace {} not found",
                        k + 1,
                        t.display()
                    ));
                }
                if r.headline.is_some_and(|v| !v.is_finite()) {
                    return Err(format!("{at}: repeat {}: headline is not a number", k + 1));
                }
            }
            if let Some(f) = &w.model_figure {
                ModelFigure::parse(f).map_err(|e| format!("{at}: {e}"))?;
                if w.model.is_none() || w.headline.is_none() {
                    return Err(format!("{at}: model_figure needs model and headline"));
                }
            }
            if let Some(m) = &w.model {
                crate::workload::Workload::parse(m).map_err(|e| format!("{at}: model: {e}"))?;
            }
        }
        Ok(suite)
    }

    /// The machine profile: a shipped name, or a path relative to the suite.
    pub fn machine(&self) -> Result<Machine, String> {
        let rel = self.dir.join(&self.machine);
        if self.machine.ends_with(".toml") && rel.is_file() {
            Machine::load(&rel.to_string_lossy()).map_err(|e| e.to_string())
        } else {
            Machine::load(&self.machine).map_err(|e| e.to_string())
        }
    }
}

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

fn values(f: &Figures) -> [f64; 7] {
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
    fn new(figure: &str, recorded: f64, replayed: f64, target: Tolerance) -> Row {
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
    fn with_repeats(mut self, repeats: &[f64]) -> Row {
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

/// Options of a validation run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The class to replay under (default: the suite's).
    pub policy: Option<PolicyKind>,
    /// The machine (default: the suite's).
    pub machine: Option<Machine>,
    pub seed: u64,
    /// Only these workloads (all when empty).
    pub only: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            policy: None,
            machine: None,
            seed: 1,
            only: Vec::new(),
        }
    }
}

/// Replays `recorded` under `policy` on `machine`: the run's result and its own trace.
pub fn replay_trace(
    recorded: &crate::trace::Trace,
    name: &str,
    policy: PolicyKind,
    machine: &Machine,
    seed: u64,
) -> Result<
    (
        crate::metrics::RunResult,
        crate::trace::Trace,
        replay::Replay,
    ),
    String,
> {
    let (workload, rep) = replay::workload(recorded, name, &replay::OpPrices::of_machine(machine))?;
    let span = recorded.end_ns.saturating_sub(recorded.start_ns);
    let mut rec = TraceRecorder::new(None);
    let cfg = crate::sim::SimConfig {
        duration_ns: span.saturating_mul(10).max(1_000_000_000),
        seed,
        trace: Some(&mut rec),
        ..Default::default()
    };
    let r = policy
        .simulate(machine, &workload, cfg)
        .map_err(|e| format!("replaying {name} under {}: {e}", policy.label()))?;
    Ok((r, rec.finish(), rep))
}

/// Validates one workload of `suite`.
pub fn run_workload(
    suite: &Suite,
    w: &SuiteWorkload,
    policy: PolicyKind,
    machine: &Machine,
    seed: u64,
) -> Result<WorkloadResult, String> {
    let path = suite.dir.join(&w.trace);
    let recorded = crate::trace::import::load(&path)?;
    let (r, t, rep) = replay_trace(&recorded, &w.name, policy, machine, seed)?;
    let (fr, fs) = (figures(&recorded), figures(&t));
    let (a, b) = (values(&fr), values(&fs));
    // The kernel's own spread: the same figures of each repeat of the recording.
    let mut reps: Vec<[f64; 7]> = Vec::with_capacity(w.repeats.len());
    for (k, r) in w.repeats.iter().enumerate() {
        let t = crate::trace::import::load(&suite.dir.join(&r.trace))
            .map_err(|e| format!("{}: repeat {}: {e}", w.name, k + 1))?;
        reps.push(values(&figures(&t)));
    }
    let rows = FIGURES
        .iter()
        .enumerate()
        .map(|(i, (name, tol))| {
            let others: Vec<f64> = reps.iter().map(|v| v[i]).collect();
            Row::new(name, a[i], b[i], *tol).with_repeats(&others)
        })
        .collect();
    let headlines: Vec<f64> = w.repeats.iter().filter_map(|r| r.headline).collect();
    // The kernel against itself: each repeat judged by the targets against the recording.
    let mut kernel_self = (0, 0);
    for v in &reps {
        for (i, (_, tol)) in FIGURES.iter().enumerate() {
            if let Some(ok) = tol.holds(a[i], v[i]) {
                kernel_self.0 += usize::from(ok);
                kernel_self.1 += 1;
            }
        }
    }
    if let Some(h) = &w.headline {
        for &v in &headlines {
            if let Some(ok) = MODEL_TOLERANCE.holds(h.value, v) {
                kernel_self.0 += usize::from(ok);
                kernel_self.1 += 1;
            }
        }
    }
    let (mut model, mut model_error) = (None, None);
    if let (Some(spec), Some(h)) = (&w.model, &w.headline) {
        let fig = match &w.model_figure {
            Some(f) => ModelFigure::parse(f)?,
            None => ModelFigure::ElapsedS,
        };
        let wl = crate::workload::Workload::parse(spec).map_err(|e| e.to_string())?;
        let cfg = crate::sim::SimConfig {
            duration_ns: 60_000_000_000,
            seed,
            ..Default::default()
        };
        match policy.simulate(machine, &wl, cfg) {
            Ok(mr) => match fig.of(&mr) {
                Some(v) => {
                    model = Some(
                        Row::new(&format!("model: {}", h.name), h.value, v, MODEL_TOLERANCE)
                            .with_repeats(&headlines),
                    )
                }
                None => model_error = Some(format!("{spec} gave no {fig:?} (not completed?)")),
            },
            Err(e) => model_error = Some(format!("{spec}: {e}")),
        }
    }
    Ok(WorkloadResult {
        name: w.name.clone(),
        command: w.command.clone(),
        policy: policy.label(),
        completed: r.completed,
        rows,
        model,
        model_error,
        recorded: fr,
        replayed: fs,
        replay_stats: rep.stats,
        repeats: w.repeats.len(),
        kernel_self,
    })
}

/// Validates every (selected) workload of `suite`, `jobs` at a time; results in suite order.
pub fn run(
    suite: &Suite,
    opts: &Options,
    jobs: usize,
    on_done: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Result<WorkloadResult, String>>, String> {
    let policy = match opts.policy {
        Some(p) => p,
        None => PolicyKind::parse(&suite.class).map_err(|e| {
            format!(
                "suite {}: class: {e}; name another with --policy",
                suite.dir.display()
            )
        })?,
    };
    let machine = match &opts.machine {
        Some(m) => m.clone(),
        None => suite.machine()?,
    };
    for o in &opts.only {
        if !suite.workloads.iter().any(|w| &w.name == o) {
            let names: Vec<&str> = suite.workloads.iter().map(|w| w.name.as_str()).collect();
            return Err(format!(
                "--only {o}: no such workload in the suite ({})",
                names.join(", ")
            ));
        }
    }
    let picked: Vec<&SuiteWorkload> = suite
        .workloads
        .iter()
        .filter(|w| opts.only.is_empty() || opts.only.contains(&w.name))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: std::sync::Mutex<Vec<Option<Result<WorkloadResult, String>>>> =
        std::sync::Mutex::new(vec![None; picked.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(picked.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(w) = picked.get(i) else { break };
                let r = run_workload(suite, w, policy, &machine, opts.seed);
                on_done(&w.name);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    Ok(out
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not run".into())))
        .collect())
}

fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The text table of a validation.
pub fn table(suite: &Suite, machine: &str, results: &[Result<WorkloadResult, String>]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "suite {} (kernel {}, recorded {}), machine {}",
        suite.dir.display(),
        suite.kernel,
        suite.recorded,
        machine
    );
    let ranges = results.iter().flatten().any(|w| w.repeats > 0);
    let _ = writeln!(
        s,
        "{:<16} {:<26} {:>11} {:>11} {:>8} {:>7}  {:<5}{}",
        "workload",
        "figure",
        "recorded",
        "replayed",
        "error",
        "target",
        "",
        if ranges {
            " kernel's range (runs), target of any"
        } else {
            ""
        }
    );
    let (mut ok, mut all) = (0, 0);
    let (mut in_range, mut ranged) = (0, 0);
    let (mut selfs, mut self_judged) = (0, 0);
    for r in results {
        match r {
            Err(e) => {
                let _ = writeln!(s, "error: {e}");
            }
            Ok(w) => {
                let title = format!("{} ({})", w.name, w.policy);
                for (i, row) in w.rows.iter().chain(w.model.as_ref()).enumerate() {
                    let range = match (row.kernel_range, row.within_some_run) {
                        (Some((lo, hi)), Some(inside)) => format!(
                            " {}..{} ({}) {}",
                            num(lo),
                            num(hi),
                            w.recordings(),
                            match (inside, row.within.is_some()) {
                                (true, true) => "ok",
                                (false, true) => "MISS",
                                (true, false) => "in",
                                (false, false) => "out",
                            }
                        ),
                        _ => String::new(),
                    };
                    let _ = writeln!(
                        s,
                        "{:<16} {:<26} {:>11} {:>11} {:>8} {:>7}  {:<5}{}",
                        if i == 0 { w.name.as_str() } else { "" },
                        row.figure,
                        num(row.recorded),
                        num(row.replayed),
                        row.error
                            .map_or("-".into(), |e| format!("{:+.1}%", e * 100.0)),
                        row.target.describe(),
                        match row.within {
                            Some(true) => "ok",
                            Some(false) => "MISS",
                            None => "",
                        },
                        range
                    );
                }
                if let Some(e) = &w.model_error {
                    let _ = writeln!(s, "{:<16} model: {e}", "");
                }
                if !w.completed {
                    let _ = writeln!(s, "{:<16} note: {title}'s replay hit its time limit", "");
                }
                let (a, b) = w.score();
                ok += a;
                all += b;
                let (a, b) = w.score_range();
                in_range += a;
                ranged += b;
                selfs += w.kernel_self.0;
                self_judged += w.kernel_self.1;
            }
        }
    }
    let _ = writeln!(s, "{ok} of {all} figures within their targets");
    if ranged > 0 {
        let _ = writeln!(
            s,
            "{in_range} of {ranged} within their targets of at least one of the kernel's recordings of the command"
        );
        let _ = writeln!(
            s,
            "the kernel against itself: {selfs} of {self_judged} figures of its repeated recordings within the same targets of the replayed recording ({:.0} %, the replay {:.0} %)",
            100.0 * selfs as f64 / self_judged.max(1) as f64,
            100.0 * ok as f64 / all.max(1) as f64
        );
    }
    s
}

/// The validation as one self-contained HTML page (no script, nothing fetched): what recorded
/// the suite, an error chart of every figure with a target (its band shaded), and each
/// workload's table.
pub fn html(
    suite: &Suite,
    policy: &str,
    machine: &str,
    results: &[Result<WorkloadResult, String>],
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>schedkit validate: {}</title>\
<style>body{{font:14px sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse;margin:.5em 0 1.5em}}\
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}td:nth-child(1),th:nth-child(1){{text-align:left}}\
.ok{{background:#e3f5e3}}.miss{{background:#fbe0e0}}pre{{background:#f6f6f6;padding:.5em;white-space:pre-wrap}}</style></head><body>",
        esc(&suite.kernel)
    );
    let _ = write!(
        s,
        "<h1>Replayed against recorded</h1><p>Suite <code>{}</code>, recorded {} on kernel <code>{}</code>; replayed under <b>{}</b> on machine <b>{}</b>. \
Each figure is measured the same way on the recorded trace and on the replay's own trace (<code>trace/figures.rs</code>).</p>\
<details><summary>Recording kernel</summary><pre>{}\nHZ {}\npreempt: {}\nautogroup: {}\nsched_features: {}\n{}</pre></details>",
        esc(&suite.dir.display().to_string()),
        esc(&suite.recorded),
        esc(&suite.kernel),
        esc(policy),
        esc(machine),
        esc(&suite.uname),
        suite.hz.map_or("?".into(), |h| h.to_string()),
        esc(&suite.preempt),
        suite.autogroup.map_or("?".into(), |a| a.to_string()),
        esc(&suite.sched_features),
        esc(&suite.config)
    );
    // The error chart: one line per workload, one marker per targeted figure.
    let ok: Vec<&WorkloadResult> = results.iter().flatten().collect();
    let judged: Vec<(usize, &str)> = FIGURES
        .iter()
        .enumerate()
        .filter(|(_, (_, t))| *t != Tolerance::None)
        .map(|(i, (n, _))| (i, *n))
        .collect();
    let (w, lh, left) = (760.0, 22.0, 150.0);
    let h = 40.0 + lh * ok.len() as f64;
    let x = |e: f64| left + (w - left - 20.0) * ((e.clamp(-1.0, 1.0) + 1.0) / 2.0);
    let _ = write!(
        s,
        "<h2>Errors</h2><p>replayed / recorded − 1, clipped to ±100 %; the shaded band is ±15 %, the counts' target (busy CPU time's is ±10 %, wakeup p50's a factor of 2: the tables below judge each).</p>\
<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-size=\"11\">\
<rect x=\"{:.1}\" y=\"20\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#e3f5e3\"/>\
<line x1=\"{:.1}\" y1=\"20\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\"/>",
        x(-0.15),
        x(0.15) - x(-0.15),
        h - 30.0,
        x(0.0),
        x(0.0),
        h - 10.0
    );
    let colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"];
    for (k, (_, name)) in judged.iter().enumerate() {
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"10\" r=\"4\" fill=\"{}\"/><text x=\"{:.1}\" y=\"14\">{}</text>",
            left + 120.0 * k as f64,
            colors[k % colors.len()],
            left + 120.0 * k as f64 + 7.0,
            esc(name)
        );
    }
    for (r, wr) in ok.iter().enumerate() {
        let y = 30.0 + lh * r as f64 + lh / 2.0;
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{:.1}\">{}</text>",
            y + 4.0,
            esc(&wr.name)
        );
        for (k, (i, _)) in judged.iter().enumerate() {
            if let Some(e) = wr.rows[*i].error {
                let _ = write!(
                    s,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{}\"><title>{} {}: {:+.1}%</title></circle>",
                    x(e),
                    y,
                    colors[k % colors.len()],
                    esc(&wr.name),
                    esc(&wr.rows[*i].figure),
                    e * 100.0
                );
            }
        }
    }
    s.push_str("</svg>");
    for r in results {
        match r {
            Err(e) => {
                let _ = write!(s, "<p class=\"miss\">error: {}</p>", esc(e));
            }
            Ok(wr) => {
                let _ = write!(
                    s,
                    "<h2>{}</h2><p><code>{}</code></p><table><tr><th>figure</th><th>recorded</th><th>replayed</th><th>error</th><th>target</th>{}</tr>",
                    esc(&wr.name),
                    esc(&wr.command),
                    if wr.repeats > 0 {
                        format!("<th>kernel's range ({} runs)</th>", wr.recordings())
                    } else {
                        String::new()
                    }
                );
                for row in wr.rows.iter().chain(wr.model.as_ref()) {
                    let class = match row.within {
                        Some(true) => " class=\"ok\"",
                        Some(false) => " class=\"miss\"",
                        None => "",
                    };
                    let range = match (row.kernel_range, row.within_some_run) {
                        (Some((lo, hi)), Some(inside)) => format!(
                            "<td class=\"{}\">{} – {}</td>",
                            if inside { "ok" } else { "miss" },
                            num(lo),
                            num(hi)
                        ),
                        _ if wr.repeats > 0 => "<td></td>".into(),
                        _ => String::new(),
                    };
                    let _ = write!(
                        s,
                        "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{range}</tr>",
                        esc(&row.figure),
                        num(row.recorded),
                        num(row.replayed),
                        row.error
                            .map_or("-".into(), |e| format!("{:+.1}%", e * 100.0)),
                        esc(&row.target.describe())
                    );
                }
                s.push_str("</table>");
                if let Some(e) = &wr.model_error {
                    let _ = write!(s, "<p>model: {}</p>", esc(e));
                }
            }
        }
    }
    let (a, b) = ok.iter().fold((0, 0), |(a, b), w| {
        let (x, y) = w.score();
        (a + x, b + y)
    });
    let (c, d) = ok.iter().fold((0, 0), |(a, b), w| {
        let (x, y) = w.score_range();
        (a + x, b + y)
    });
    let (e, f) = ok.iter().fold((0, 0), |(a, b), w| {
        (a + w.kernel_self.0, b + w.kernel_self.1)
    });
    let range = if d > 0 {
        format!(" <b>{c} of {d}</b> within their targets of at least one of the kernel's recordings of the command (the range column: green where so). \
The kernel against itself: {e} of {f} figures of its repeated recordings within the same targets of the replayed recording.")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "<p><b>{a} of {b}</b> figures within their targets.{range}</p></body></html>"
    );
    s
}

/// The summary as a Markdown table (`validate --markdown`), one row per workload: the
/// shape of `docs/validation.md`'s table, so the docs print from the command.
pub fn markdown(results: &[Result<WorkloadResult, String>]) -> String {
    use std::fmt::Write as _;
    let ranges = results.iter().flatten().any(|w| w.repeats > 0);
    let mut s = if ranges {
        String::from(
            "| workload | switches | wakeups | migrations | busy CPU | wakeup p50 | model | within target of a recording |\n|---|---|---|---|---|---|---|---|\n",
        )
    } else {
        String::from(
            "| workload | switches | wakeups | migrations | busy CPU | wakeup p50 | model |\n|---|---|---|---|---|---|---|\n",
        )
    };
    let int = |v: f64| {
        let n = v.round() as i64;
        let digits = n.abs().to_string();
        let mut out = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push('\u{202f}');
            }
            out.push(ch);
        }
        if n < 0 {
            format!("−{out}")
        } else {
            out
        }
    };
    let pct = |e: Option<f64>| match e {
        Some(e) => {
            let p = (e * 100.0).round() as i64;
            if p < 0 {
                format!("−{} %", -p)
            } else {
                format!("+{p} %")
            }
        }
        None => "-".into(),
    };
    let us = |v: f64| {
        if v >= 100.0 {
            int(v)
        } else if v >= 1.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    };
    for r in results {
        let Ok(w) = r else {
            let _ = writeln!(
                s,
                "| error: {} | | | | | | |{}",
                // One cell: no column bar or line break may escape it.
                r.as_ref()
                    .err()
                    .map_or(String::new(), |e| e.replace('|', "\\|").replace('\n', " ")),
                if ranges { " |" } else { "" }
            );
            continue;
        };
        let row = |i: usize| &w.rows[i];
        let count = |i: usize| {
            format!(
                "{} → {} ({})",
                int(row(i).recorded),
                int(row(i).replayed),
                pct(row(i).error)
            )
        };
        let model = match &w.model {
            Some(m) => format!(
                "{} → {} ({})",
                m.recorded,
                (m.replayed * 1000.0).round() / 1000.0,
                pct(m.error)
            ),
            None => "—".into(),
        };
        let range = if ranges {
            let (a, b) = w.score_range();
            if b > 0 {
                format!(" {a} of {b} ({} runs) |", w.recordings())
            } else {
                " — |".into()
            }
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} → {} | {} | {} → {} µs | {} |{range}",
            w.name,
            count(0),
            count(1),
            int(row(2).recorded),
            int(row(2).replayed),
            pct(row(3).error),
            us(row(4).recorded),
            us(row(4).replayed),
            model
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances() {
        assert_eq!(Tolerance::Relative(0.15).holds(100.0, 115.0), Some(true));
        assert_eq!(Tolerance::Relative(0.15).holds(100.0, 116.0), Some(false));
        assert_eq!(Tolerance::Relative(0.15).holds(100.0, 85.0), Some(true));
        assert_eq!(Tolerance::Relative(0.15).holds(0.0, 0.0), Some(true));
        assert_eq!(Tolerance::Relative(0.15).holds(0.0, 1.0), Some(false));
        assert_eq!(Tolerance::Factor(2.0).holds(10.0, 20.0), Some(true));
        assert_eq!(Tolerance::Factor(2.0).holds(10.0, 4.9), Some(false));
        assert_eq!(Tolerance::None.holds(1.0, 9.0), None);
    }

    #[test]
    fn the_kernels_range_and_a_target_of_any_recording() {
        // Recorded 100; the repeats 60 and 130: range 60..130. Replayed 68 misses ±15 % of
        // 100 (−32 %) but is within it of 60 (+13 %).
        let r = Row::new("switches", 100.0, 68.0, Tolerance::Relative(0.15))
            .with_repeats(&[60.0, 130.0]);
        assert_eq!(r.within, Some(false));
        assert_eq!(r.kernel_range, Some((60.0, 130.0)));
        assert_eq!(r.within_some_run, Some(true));
        // 40 is within ±15 % of none of them.
        let r = Row::new("switches", 100.0, 40.0, Tolerance::Relative(0.15))
            .with_repeats(&[60.0, 130.0]);
        assert_eq!(r.within_some_run, Some(false));
        // A figure without a target: inside the bare range or not.
        let r = Row::new("p99", 100.0, 131.0, Tolerance::None).with_repeats(&[60.0, 130.0]);
        assert_eq!((r.within, r.within_some_run), (None, Some(false)));
        // No repeats: nothing to say.
        let r = Row::new("p99", 100.0, 131.0, Tolerance::None).with_repeats(&[]);
        assert_eq!((r.kernel_range, r.within_some_run), (None, None));
    }

    #[test]
    fn model_figures_parse() {
        assert_eq!(ModelFigure::parse("elapsed_s"), Ok(ModelFigure::ElapsedS));
        assert_eq!(
            ModelFigure::parse("elapsed_per_op_us:ops=100"),
            Ok(ModelFigure::ElapsedPerOpUs(100))
        );
        assert!(ModelFigure::parse("elapsed_per_op_us:ops=0").is_err());
        assert!(ModelFigure::parse("speed").unwrap_err().contains("one of"));
    }

    #[test]
    fn spread_of_cpu_time() {
        let t = |ms: f64| crate::trace::figures::TaskFigures {
            pid: 1,
            comm: "x".into(),
            cpu_ms: ms,
            runs: 1,
            wakeups: 0,
            max_wakeup_latency_us: 0.0,
            runqueue_wait_ms: 0.0,
        };
        let mut f = figures(&crate::trace::Trace::default());
        f.tasks = vec![t(1.0), t(3.0), t(0.0)];
        // Tasks that never ran are left out: mean 2, deviation 1.
        assert!((cpu_spread(&f) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_bad_suite_is_refused_with_its_place() {
        let dir = std::env::temp_dir().join(format!("schedkit-suite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |text: &str| std::fs::write(dir.join("suite.toml"), text).unwrap();
        write("kernel = \"6.18\"\nmachine = \"host\"\nclass = \"eevdf\"\n");
        assert!(Suite::load(&dir).unwrap_err().contains("no [[workload]]"));
        write("kernel = \"6.18\"\nmachine = \"host\"\nclass = \"eevdf\"\n[[workload]]\nname = \"a\"\ntrace = \"a.txt\"\ncommand = \"x\"\n");
        let e = Suite::load(&dir).unwrap_err();
        assert!(
            e.contains("workload 1 ('a')") && e.contains("not found"),
            "{e}"
        );
        std::fs::write(dir.join("a.txt"), "").unwrap();
        write("kernel = \"6.18\"\nmachine = \"host\"\nclass = \"eevdf\"\n[[workload]]\nname = \"a\"\ntrace = \"a.txt\"\ncommand = \"x\"\n[[workload.repeat]]\ntrace = \"r/a.1.txt.zst\"\n");
        let e = Suite::load(&dir).unwrap_err();
        assert!(e.contains("repeat 1") && e.contains("not found"), "{e}");
        write("kernel = \"6.18\"\nmachine = \"host\"\nclass = \"eevdf\"\nbogus = 1\n[[workload]]\nname = \"a\"\ntrace = \"a.txt\"\ncommand = \"x\"\n");
        assert!(Suite::load(&dir).unwrap_err().contains("bogus"));
        // A class schedkit does not model loads (--policy may name another) but does not run.
        write("kernel = \"5.15\"\nmachine = \"host\"\nclass = \"cfs:era=5.15\"\n[[workload]]\nname = \"a\"\ntrace = \"a.txt\"\ncommand = \"x\"\n");
        let suite = Suite::load(&dir).unwrap();
        let e = run(&suite, &Options::default(), 1, &|_| {}).unwrap_err();
        assert!(e.contains("class") && e.contains("--policy"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! A validation suite: `suite.toml` (what recorded it, the machine and class standing for the
//! recording kernel, its workloads with their traces, repeats and headlines), read and
//! checked against the files it names; [`ModelFigure`], which simulated figure of a built-in
//! model stands for a benchmark's headline.

use crate::machine::Machine;
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

    pub(super) fn of(self, r: &crate::metrics::RunResult) -> Option<f64> {
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

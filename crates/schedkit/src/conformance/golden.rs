//! Golden figures: a class's figures on a fixed set of short simulator runs, as stable text,
//! compared with a file kept beside its tests. The simulator is a pure function of its inputs,
//! so any difference is a change of behaviour: on purpose, rewrite the file with
//! `SCHEDKIT_BLESS=1` and say why in the commit; by accident, the failure names the run and
//! the figures that moved. schedkit's own `tests/golden.rs` runs every built-in policy on the
//! same runs with the same functions, into `tests/golden/figures.json`.

use crate::machine::{Governor, Machine};
use crate::registry::PolicyKind;
use crate::sim::SimConfig;
use crate::workload::Workload;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The machine profiles of the golden runs, each with the governor it runs under (UP, 4-way
/// SMP, SMT, frequency-scaled with ondemand).
pub const MACHINES: &[(&str, Option<&str>)] = &[
    ("up-2002", None),
    ("smp4-2002", None),
    ("prescott-ht", None),
    ("i7-m620", Some("ondemand")),
];

/// The workloads of the golden runs.
pub const WORKLOADS: &[&str] = &[
    "yield:instances=4",
    "chat:rooms=2,messages=40",
    "makej:jobs=4,units=6+interactive:sleep=20ms,work=1ms",
];

/// How long each golden run lasts (simulated).
pub const DURATION_NS: u64 = 300_000_000;

/// The key of a run in a golden file: `policy | machine[ governor] | workload`.
pub fn key(policy: PolicyKind, machine: &str, governor: Option<&str>, workload: &str) -> String {
    format!(
        "{} | {machine}{} | {workload}",
        policy.name(),
        governor.map_or(String::new(), |g| format!(" {g}"))
    )
}

/// A run's result as JSON, less the host's wall time (the one field that is not a figure of
/// the model) and the latency CDF's points (the same distribution as its percentiles, which
/// stay). An error names the run and what failed.
pub fn figures(
    policy: PolicyKind,
    machine: &str,
    governor: Option<&str>,
    workload: &str,
) -> Result<Value, String> {
    let what = || key(policy, machine, governor, workload);
    let m = Machine::load(machine).map_err(|e| format!("{}: {e}", what()))?;
    let w = Workload::parse(workload).map_err(|e| format!("{}: {e}", what()))?;
    let governor = governor
        .map(Governor::parse)
        .transpose()
        .map_err(|e| format!("{}: {e}", what()))?;
    let cfg = SimConfig {
        duration_ns: DURATION_NS,
        seed: 1,
        governor,
        ..Default::default()
    };
    let r = policy
        .simulate(&m, &w, cfg)
        .map_err(|e| format!("{}: {e}", what()))?;
    let mut v = serde_json::to_value(&r).map_err(|e| format!("{}: {e}", what()))?;
    strip(&mut v);
    Ok(v)
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("wall_s");
            o.remove("wakeup_latency_cdf_us");
            o.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

/// Every golden run of `policy`, by key.
pub fn runs(policy: PolicyKind) -> Result<BTreeMap<String, Value>, String> {
    let mut out = BTreeMap::new();
    for &(m, g) in MACHINES {
        for &w in WORKLOADS {
            out.insert(key(policy, m, g, w), figures(policy, m, g, w)?);
        }
    }
    Ok(out)
}

/// Runs as the text of a golden file: pretty JSON, keys sorted, a newline at the end.
pub fn to_text(runs: &BTreeMap<String, Value>) -> String {
    serde_json::to_string_pretty(runs).expect("JSON values serialize") + "\n"
}

/// `policy`'s golden figures as the text of its golden file: every run of [`MACHINES`] ×
/// [`WORKLOADS`], [`DURATION_NS`] each, seed 1, by key.
pub fn golden(policy: PolicyKind) -> Result<String, String> {
    runs(policy).map(|r| to_text(&r))
}

/// The leaves that differ between two results: (path, golden, now).
pub fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, String, String)>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                diff(&format!("{path}.{k}"), va, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if a != b => out.push((path.to_string(), a.to_string(), b.to_string())),
        _ => {}
    }
}

/// The differences between a golden file's runs and this run's, one line each (at most eight
/// figures per run, then a count).
pub fn report(golden: &BTreeMap<String, Value>, now: &BTreeMap<String, Value>) -> Vec<String> {
    let mut report = Vec::new();
    for key in golden
        .keys()
        .chain(now.keys().filter(|k| !golden.contains_key(*k)))
    {
        match (golden.get(key), now.get(key)) {
            (Some(a), Some(b)) => {
                let mut d = Vec::new();
                diff("", a, b, &mut d);
                for (p, x, y) in d.iter().take(8) {
                    report.push(format!("{key}: {p}: golden {x}, now {y}"));
                }
                if d.len() > 8 {
                    report.push(format!("{key}: … {} more", d.len() - 8));
                }
            }
            (Some(_), None) => report.push(format!("{key}: in the golden file, not run now")),
            (None, Some(_)) => report.push(format!("{key}: run now, not in the golden file")),
            (None, None) => unreachable!("a key of either map"),
        }
    }
    report
}

/// Compares `policy`'s golden figures with the file at `path`, or, when `SCHEDKIT_BLESS` is
/// set, writes them there (creating its directory). The comparison is of the text, exactly;
/// an error names the file and each run and figure that moved (or the first line that
/// differs), and says how to rewrite it.
///
/// ```no_run
/// use schedkit::conformance::golden::check_golden;
/// use schedkit::registry::PolicyKind;
/// # fn demo(fifo: &'static schedkit::external::ExternalPolicy) {
/// // In a test of the crate that defines `static FIFO: ExternalPolicy`:
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/fifo.json");
/// check_golden(PolicyKind::External(fifo), path).unwrap_or_else(|e| panic!("{e}"));
/// # }
/// ```
pub fn check_golden(policy: PolicyKind, path: impl AsRef<Path>) -> Result<(), String> {
    let path = path.as_ref();
    let now = runs(policy)?;
    let text = to_text(&now);
    if std::env::var_os("SCHEDKIT_BLESS").is_some() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("blessed {} runs into {}", now.len(), path.display());
        return Ok(());
    }
    let kept = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (write it with SCHEDKIT_BLESS=1 and commit it)",
            path.display()
        )
    })?;
    if kept == text {
        return Ok(());
    }
    let golden: BTreeMap<String, Value> = serde_json::from_str(&kept)
        .map_err(|e| format!("{}: not a golden file: {e}", path.display()))?;
    let mut lines = report(&golden, &now);
    if lines.is_empty() {
        // The same values read back, different text (a figure off in its last digit).
        let (k, n) = kept
            .lines()
            .zip(text.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map_or(
                (
                    kept.lines().count().min(text.lines().count()),
                    ("(end)", "(end)"),
                ),
                |(i, p)| (i, p),
            );
        lines.push(format!("line {}: golden {:?}, now {:?}", k + 1, n.0, n.1));
    }
    Err(format!(
        "{} differences of {}'s figures from {} (rewrite it with SCHEDKIT_BLESS=1 if the change \
         is meant, and say why in the commit):\n{}",
        lines.len(),
        policy.label(),
        path.display(),
        lines.join("\n")
    ))
}

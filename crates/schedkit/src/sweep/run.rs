//! Running a sweep's points: one point as `schedkit sim` runs it, its row (the inputs, then
//! the result flattened to dotted columns, those `record` keeps), and many points on N
//! threads with their rows handed back on the caller's thread.

use super::Point;
use crate::class::SchedClass;
use crate::machine::Machine;
use crate::metrics::RunResult;
use crate::registry::PolicyKind;
use crate::sim::SimConfig;
use crate::workload::Workload;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs one point as `schedkit sim` would (same configuration, no trace).
pub fn run_point(p: &Point) -> Result<RunResult, String> {
    let machine = Machine::load(&p.machine).map_err(|e| e.to_string())?;
    let workload = Workload::parse(&p.workload).map_err(|e| e.to_string())?;
    run_on(p, &machine, &workload)
}

/// Runs `p`'s policy, seed and knobs on a machine and workload the caller built (the Python
/// package's profiles and workloads given as dicts), as `schedkit sim` would.
pub fn run_on(p: &Point, machine: &Machine, workload: &Workload) -> Result<RunResult, String> {
    let policy = PolicyKind::parse(&p.policy)?;
    policy
        .simulate_with(p.rt_balance, machine, workload, config(p))
        .map_err(|e| e.to_string())
}

/// Runs `p`'s seed and knobs under `class`, a class value the caller built (a Python class's
/// adapter), in place of `p.policy`: the configuration of [`run_on`], the stack of a
/// registered class ([`crate::sim::simulate_class`]).
pub fn run_class_on<C: SchedClass>(
    p: &Point,
    machine: &Machine,
    workload: &Workload,
    class: C,
) -> Result<RunResult, String> {
    crate::sim::simulate_class(class, p.rt_balance, machine, workload, config(p))
        .map_err(|e| e.to_string())
}

/// The simulator's configuration of a point: what `schedkit sim` sets from the same flags.
fn config(p: &Point) -> SimConfig<'static> {
    SimConfig {
        duration_ns: p.duration_ns,
        seed: p.seed,
        lock_mode: p.lock_mode,
        governor: p.governor,
        ..Default::default()
    }
}

/// Columns left out of a row: per-sample lists (see the module's doc).
const LEFT_OUT: [&str; 3] = [
    "timeline",
    "metrics.wakeup_latency_cdf_us",
    "metrics.rtmigrate.iterations",
];

fn flatten(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    if LEFT_OUT.contains(&prefix) {
        return;
    }
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&join(k), x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&join(&i.to_string()), x, out);
            }
        }
        x => {
            out.insert(prefix.to_string(), x.clone());
        }
    }
}

/// The row of a finished point: its inputs, then the result's columns (those `record` keeps),
/// or an `error` column.
pub fn row(
    p: &Point,
    r: &Result<RunResult, String>,
    record: Option<&[String]>,
) -> Map<String, Value> {
    let mut out = p.columns();
    match r {
        Ok(r) => {
            let v = serde_json::to_value(r).expect("a result serialises");
            let mut flat = Map::new();
            if let Value::Object(m) = v {
                for (k, x) in &m {
                    // The inputs are already columns.
                    if !matches!(
                        k.as_str(),
                        "policy" | "machine" | "workload" | "seed" | "lock_mode" | "rt_balance"
                    ) {
                        flatten(k, x, &mut flat);
                    }
                }
            }
            for (k, x) in flat {
                if record.is_none_or(|keep| keep.iter().any(|pre| records(&k, pre))) {
                    out.insert(k, x);
                }
            }
            out.insert("error".into(), Value::Null);
        }
        Err(e) => {
            out.insert("error".into(), e.clone().into());
        }
    }
    out
}

/// Whether a `record` prefix keeps column `k`: the column itself, a dotted prefix of it, or
/// the same under `metrics.` (`throughput` keeps `metrics.throughput.value`).
pub fn records(k: &str, prefix: &str) -> bool {
    let dotted = |k: &str| k == prefix || k.starts_with(&format!("{prefix}."));
    // Whole names only: `context_switches` keeps `metrics.context_switches`, not
    // `metrics.context_switches_per_s`.
    dotted(k) || k.strip_prefix("metrics.").is_some_and(dotted)
}

/// Runs `points` on `jobs` threads, each taking the next point not yet taken (so a long point
/// never holds up the others), and hands each finished point's index and row to `done`, on the
/// calling thread, in the order they finish.
pub fn run_points(
    points: &[Point],
    record: Option<&[String]>,
    jobs: usize,
    mut done: impl FnMut(usize, Map<String, Value>),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, points.len().max(1)) {
            let tx = tx.clone();
            let next = &next;
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = points.get(i) else { break };
                let r = run_point(p);
                if tx.send((i, row(p, &r, record))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            done(i, r);
        }
    });
}

/// One run's row: column name to value.
pub type Row = Map<String, Value>;

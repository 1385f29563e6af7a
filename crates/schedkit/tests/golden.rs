//! Golden figures: every registered policy on short runs of a few workloads over profiles of
//! each kind (UP, 4-way SMP, SMT, frequency-scaled with ondemand), every figure of each run's
//! result compared exactly with `tests/golden/figures.json`. The simulator is a pure function
//! of its inputs, so any difference is a change of behaviour: on purpose, rewrite the file
//! with `SCHEDKIT_BLESS=1 cargo test -p schedkit --test golden` and say in the commit what
//! moved and why; by accident, the failure names the run and the figures that moved.

use schedkit::machine::{Governor, Machine};
use schedkit::registry::PolicyKind;
use schedkit::sim::SimConfig;
use schedkit::workload::Workload;
use serde_json::Value;
use std::collections::BTreeMap;

const MACHINES: &[(&str, Option<&str>)] = &[
    ("up-2002", None),
    ("smp4-2002", None),
    ("prescott-ht", None),
    ("i7-m620", Some("ondemand")),
];

const WORKLOADS: &[&str] = &[
    "yield:instances=4",
    "chat:rooms=2,messages=40",
    "makej:jobs=4,units=6+interactive:sleep=20ms,work=1ms",
];

const DURATION_NS: u64 = 300_000_000;

fn path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/figures.json")
}

/// A run's result as JSON, less the host's wall time (the one field that is not a figure of
/// the model) and the latency CDF's points (the same distribution as its percentiles, which
/// stay).
fn figures(policy: PolicyKind, machine: &str, governor: Option<&str>, workload: &str) -> Value {
    let m = Machine::load(machine).unwrap();
    let w = Workload::parse(workload).unwrap();
    let cfg = SimConfig {
        duration_ns: DURATION_NS,
        seed: 1,
        governor: governor.map(|g| Governor::parse(g).unwrap()),
        ..Default::default()
    };
    let r = policy.simulate(&m, &w, cfg).unwrap();
    let mut v = serde_json::to_value(&r).unwrap();
    strip(&mut v);
    v
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

/// The leaves that differ between two results: (path, golden, now).
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, String, String)>) {
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

#[test]
fn every_policy_keeps_its_golden_figures() {
    let mut now = BTreeMap::new();
    for &p in PolicyKind::ALL {
        for &(m, g) in MACHINES {
            for &w in WORKLOADS {
                let key = format!(
                    "{} | {m}{} | {w}",
                    p.name(),
                    g.map_or(String::new(), |g| format!(" {g}"))
                );
                now.insert(key, figures(p, m, g, w));
            }
        }
    }
    let text = serde_json::to_string_pretty(&now).unwrap() + "\n";
    if std::env::var("SCHEDKIT_BLESS").is_ok() {
        std::fs::create_dir_all(path().parent().unwrap()).unwrap();
        std::fs::write(path(), &text).unwrap();
        eprintln!("blessed {} runs into {}", now.len(), path().display());
        return;
    }
    let golden: BTreeMap<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(path()).expect("tests/golden/figures.json (bless it first)"),
    )
    .unwrap();
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
            (None, None) => unreachable!(),
        }
    }
    assert!(
        report.is_empty(),
        "{} differences from tests/golden/figures.json (rewrite it with SCHEDKIT_BLESS=1 if \
         the change is meant, and say why in the commit):\n{}",
        report.len(),
        report.join("\n")
    );
}

//! Sweeps: a grid of simulator runs (policies x machines x workloads x knobs x seeds), each a
//! pure function of its inputs, run on every core and recorded one flat row per run.
//!
//! A grid is a TOML file:
//!
//! ```toml
//! policies  = ["goodness", "o1:era=2002", "o1"]
//! machines  = ["smp2-2002", "smp8-2002"]          # shipped names or .toml paths (relative
//!                                                  # to the grid file)
//! workloads = ["chat:rooms={5,10,20},messages=100", "yield:instances=4"]
//! seeds     = "1..=8"          # or [1, 2, 3], or 7; "a..b" excludes b as Rust ranges do
//! duration  = "2s"             # one value, or a list: another axis
//! rt_balance = ["passive", "pushpull"]   # optional axes: rt_balance, lock_mode, governor
//! record    = ["throughput", "context_switches_per_s", "wakeup_latency_us"]  # optional
//! ```
//!
//! `{a,b,c}` in a workload spec is an axis of its own: each brace group multiplies the
//! specs (`chat:rooms={5,10},messages={100,1000}` is four workloads). Every entry is checked
//! when the grid is read (the policy is registered, the machine loads, the workload parses), and
//! an error names the grid's line. `record` keeps the metric columns named by one of the given
//! names or their dotted parents, with or without `metrics.` (`wakeup_latency_us` keeps
//! `metrics.wakeup_latency_us.p99`; `context_switches` does not keep
//! `metrics.context_switches_per_s`) (default: all of them).
//!
//! A row is the point's inputs (`policy`, `machine`, `workload`, `seed`, `duration_s`,
//! `rt_balance`, `lock_mode`, `governor`, and the point's `key`) followed by the run's result
//! flattened to dotted columns (`metrics.wakeup_latency_us.p99`); lists of objects are indexed
//! (`metrics.sleep_locks.0.acquisitions`), and the long per-sample lists (the latency CDF, the
//! per-iteration `rtmigrate` records, the timeline) are left out: `schedkit sim --json` has them.
//! A point that fails (a workload too big for its machine, say) gives a row whose `error`
//! column says why.
//!
//! Every run of a point gives the same row (bit for bit, except `metrics.sim.wall_s`, the host
//! time it took), whichever host ran it: [`run_point`] is what `schedkit sim` runs, with the
//! same defaults.

use crate::class::RtBalance;
use crate::machine::{Governor, Machine};
use crate::metrics::RunResult;
use crate::registry::PolicyKind;
use crate::sim::SimConfig;
use crate::workload::{parse_duration, LockMode, Workload};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use toml::Spanned;

#[cfg(feature = "tables")]
pub mod tables;

/// An error in a grid file, with the line it is on (0: the file as a whole, e.g. unreadable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridError {
    pub path: String,
    pub line: usize,
    pub problem: String,
}

impl std::fmt::Display for GridError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "sweep grid {}: {}", self.path, self.problem),
            n => write!(f, "sweep grid {}: line {n}: {}", self.path, self.problem),
        }
    }
}

impl std::error::Error for GridError {}

/// The most points one grid may have (a typo such as `seeds = "1..1000000000"` is refused
/// before anything runs).
pub const MAX_POINTS: usize = 2_000_000;

/// One run of a sweep: everything its result depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub policy: String,
    /// A shipped profile's name or a profile's path (resolved against the grid's folder).
    pub machine: String,
    pub workload: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub rt_balance: RtBalance,
    pub lock_mode: LockMode,
    pub governor: Option<Governor>,
}

impl Point {
    /// A stable text naming the point: equal inputs, equal keys (used to resume a sweep).
    pub fn key(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}",
            self.policy,
            self.machine,
            self.workload,
            self.seed,
            self.duration_ns,
            self.rt_balance.name(),
            self.lock_mode.name(),
            self.governor.map_or("-", |g| g.name())
        )
    }

    /// The point's input columns.
    pub fn columns(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("key".into(), self.key().into());
        m.insert("policy".into(), self.policy.clone().into());
        m.insert("machine".into(), self.machine.clone().into());
        m.insert("workload".into(), self.workload.clone().into());
        m.insert("seed".into(), self.seed.into());
        m.insert("duration_s".into(), (self.duration_ns as f64 / 1e9).into());
        m.insert("rt_balance".into(), self.rt_balance.name().into());
        m.insert("lock_mode".into(), self.lock_mode.name().into());
        m.insert(
            "governor".into(),
            self.governor.map_or(Value::Null, |g| g.name().into()),
        );
        m
    }
}

/// A parsed grid: its points, in axis order (policies outermost, seeds innermost), and the
/// metric prefixes to record.
#[derive(Clone, Debug)]
pub struct Grid {
    pub points: Vec<Point>,
    pub record: Option<Vec<String>>,
    /// What the grid named twice (the same seed, duration, policy, ... on one axis), each
    /// kept once: a point runs once however often the grid names it.
    pub notes: Vec<String>,
}

/// `v` with each value's later repeats left out, and a note for each repeat (`show` writes
/// the value as the note names it).
fn once<T: PartialEq>(
    axis: &str,
    v: Vec<T>,
    show: impl Fn(&T) -> String,
    notes: &mut Vec<String>,
) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if out.contains(&x) {
            notes.push(format!(
                "{axis}: {} is given more than once; it runs once",
                show(&x)
            ));
        } else {
            out.push(x);
        }
    }
    out
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GridFile {
    policies: Option<Spanned<toml::Value>>,
    machines: Option<Spanned<toml::Value>>,
    workloads: Option<Spanned<toml::Value>>,
    seeds: Option<Spanned<toml::Value>>,
    duration: Option<Spanned<toml::Value>>,
    rt_balance: Option<Spanned<toml::Value>>,
    lock_mode: Option<Spanned<toml::Value>>,
    governor: Option<Spanned<toml::Value>>,
    record: Option<Spanned<toml::Value>>,
}

/// The strings of a field that is one string or a list of them, each with the offset of its
/// text in the file (found after the previous one's, inside the field's span).
fn strings(
    text: &str,
    name: &str,
    v: &Spanned<toml::Value>,
) -> Result<Vec<(String, usize)>, (usize, String)> {
    let span = v.span();
    let items: Vec<&toml::Value> = match v.get_ref() {
        toml::Value::Array(a) => a.iter().collect(),
        one => vec![one],
    };
    if items.is_empty() {
        return Err((span.start, format!("'{name}' is empty: give at least one")));
    }
    let mut from = span.start;
    let mut out = Vec::new();
    for it in items {
        let toml::Value::String(s) = it else {
            return Err((from, format!("'{name}' holds {it}, not a string")));
        };
        let at = text
            .get(from..span.end.min(text.len()))
            .and_then(|t| t.find(s.as_str()))
            .map_or(from, |i| from + i);
        out.push((s.clone(), at));
        from = at + s.len();
    }
    Ok(out)
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Expands every `{a,b,c}` group of a spec into the specs it stands for, in order (at most
/// [`MAX_POINTS`] of them).
pub fn expand_braces(spec: &str) -> Result<Vec<String>, String> {
    let groups = spec
        .split('{')
        .skip(1)
        .map(|g| g.split('}').next().unwrap_or(""));
    let n = groups
        .map(|g| g.split(',').count())
        .try_fold(1usize, |acc, k| acc.checked_mul(k))
        .filter(|&n| n <= MAX_POINTS);
    if n.is_none() {
        return Err(format!(
            "'{spec}' stands for more than {MAX_POINTS} workloads"
        ));
    }
    expand(spec)
}

fn expand(spec: &str) -> Result<Vec<String>, String> {
    let Some(open) = spec.find('{') else {
        if spec.contains('}') {
            return Err(format!("'{spec}': a '}}' without its '{{'"));
        }
        return Ok(vec![spec.to_string()]);
    };
    let close = spec[open..]
        .find('}')
        .map(|i| open + i)
        .ok_or_else(|| format!("'{spec}': a '{{' without its '}}'"))?;
    let inner = &spec[open + 1..close];
    if inner.contains('{') {
        return Err(format!("'{spec}': braces do not nest"));
    }
    let choices: Vec<&str> = inner.split(',').map(str::trim).collect();
    if choices.iter().any(|c| c.is_empty()) {
        return Err(format!("'{spec}': an empty choice in {{{inner}}}"));
    }
    let mut out = Vec::new();
    for c in choices {
        for rest in expand(&spec[close + 1..])? {
            out.push(format!("{}{c}{rest}", &spec[..open]));
        }
    }
    Ok(out)
}

fn parse_seeds(s: &str) -> Result<Vec<u64>, String> {
    let s = s.trim();
    let (a, b, inclusive) = if let Some((a, b)) = s.split_once("..=") {
        (a, b, true)
    } else if let Some((a, b)) = s.split_once("..") {
        (a, b, false)
    } else {
        let one = s
            .parse::<u64>()
            .map_err(|_| format!("'{s}' is not a seed or a range such as \"1..=32\""))?;
        return Ok(vec![one]);
    };
    let num = |x: &str| {
        x.trim()
            .parse::<u64>()
            .map_err(|_| format!("'{s}': '{}' is not an unsigned number", x.trim()))
    };
    let (a, b) = (num(a)?, num(b)?);
    let end = if inclusive { b.checked_add(1) } else { Some(b) };
    let end = end.ok_or_else(|| format!("'{s}': the range ends past the largest seed"))?;
    if end <= a {
        return Err(format!("'{s}' is an empty range"));
    }
    if end - a > MAX_POINTS as u64 {
        return Err(format!("'{s}' has more than {MAX_POINTS} seeds"));
    }
    Ok((a..end).collect())
}

/// Reads a grid file.
pub fn load_grid(path: &Path) -> Result<Grid, GridError> {
    let text = crate::infile::read_to_string(path, crate::infile::MAX_TEXT_INPUT, "sweep grid")
        .map_err(|e| GridError {
            path: path.display().to_string(),
            line: 0,
            problem: format!("cannot read it: {e}"),
        })?;
    parse_grid(&text, &path.display().to_string(), path.parent())
}

/// Parses grid text; `path` names it in errors; machine paths are resolved against `dir`.
pub fn parse_grid(text: &str, path: &str, dir: Option<&Path>) -> Result<Grid, GridError> {
    let err = |offset: usize, problem: String| GridError {
        path: path.into(),
        line: line_of(text, offset),
        problem,
    };
    let g: GridFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        err(at, e.message().trim().to_string())
    })?;
    let required = |name: &str, v: &Option<Spanned<toml::Value>>| match v {
        None => Err(err(
            text.len(),
            format!("'{name}' is missing: give at least one"),
        )),
        Some(v) => strings(text, name, v).map_err(|(at, e)| err(at, e)),
    };
    let mut kinds: Vec<(PolicyKind, String)> = Vec::new();
    for (p, at) in required("policies", &g.policies)? {
        let k = PolicyKind::parse(&p).map_err(|e| err(at, e))?;
        kinds.push((k, p.trim().to_string()));
    }
    let mut machines = Vec::new();
    for (name, at) in required("machines", &g.machines)? {
        let name = name.trim();
        let resolved = match dir {
            Some(d) if !d.as_os_str().is_empty() && d.join(name).is_file() => {
                d.join(name).display().to_string()
            }
            _ => name.to_string(),
        };
        Machine::load(&resolved).map_err(|e| err(at, e.to_string()))?;
        machines.push(resolved);
    }
    let mut workloads = Vec::new();
    for (w, at) in required("workloads", &g.workloads)? {
        let specs = expand_braces(&w).map_err(|e| err(at, e))?;
        if workloads.len() + specs.len() > MAX_POINTS {
            return Err(err(
                at,
                format!("the grid has more than {MAX_POINTS} points"),
            ));
        }
        for spec in specs {
            // A workload file, like a machine profile, is found beside the grid first.
            let spec = match dir {
                Some(d) if !d.as_os_str().is_empty() && d.join(&spec).is_file() => {
                    d.join(&spec).display().to_string()
                }
                _ => spec,
            };
            Workload::parse(&spec).map_err(|e| err(at, format!("'{spec}': {e}")))?;
            workloads.push(spec);
        }
    }
    let seeds = match &g.seeds {
        None => vec![1],
        Some(s) => {
            let at = s.span().start;
            let one = |v: &toml::Value| match v {
                toml::Value::Integer(n) => {
                    u64::try_from(*n).map_err(|_| format!("seed {n} is negative"))
                }
                other => Err(format!("seed {other} is not a number")),
            };
            match s.get_ref() {
                toml::Value::Integer(_) => vec![one(s.get_ref()).map_err(|e| err(at, e))?],
                toml::Value::String(r) => parse_seeds(r).map_err(|e| err(at, e))?,
                toml::Value::Array(v) if !v.is_empty() => v
                    .iter()
                    .map(one)
                    .collect::<Result<_, _>>()
                    .map_err(|e| err(at, e))?,
                _ => {
                    return Err(err(
                        at,
                        "'seeds' is a number, a list of numbers or a range such as \"1..=32\""
                            .into(),
                    ))
                }
            }
        }
    };
    fn axis<T>(
        text: &str,
        name: &str,
        v: &Option<Spanned<toml::Value>>,
        default: T,
        parse: impl Fn(&str) -> Result<T, String>,
        err: &dyn Fn(usize, String) -> GridError,
    ) -> Result<Vec<T>, GridError> {
        match v {
            None => Ok(vec![default]),
            Some(v) => strings(text, name, v)
                .map_err(|(at, e)| err(at, e))?
                .iter()
                .map(|(s, at)| parse(s).map_err(|e| err(*at, e)))
                .collect(),
        }
    }
    let durations = axis(
        text,
        "duration",
        &g.duration,
        10_000_000_000,
        |s| match parse_duration(s)? {
            0 => Err(format!("duration '{s}' must be longer than 0")),
            d => Ok(d),
        },
        &err,
    )?;
    let balances = axis(
        text,
        "rt_balance",
        &g.rt_balance,
        RtBalance::Passive,
        RtBalance::parse,
        &err,
    )?;
    let lock_modes = axis(
        text,
        "lock_mode",
        &g.lock_mode,
        LockMode::Handoff,
        LockMode::parse,
        &err,
    )?;
    let governors = axis(
        text,
        "governor",
        &g.governor,
        None,
        |s| Governor::parse(s).map(Some),
        &err,
    )?;
    let record = match &g.record {
        None => None,
        Some(v) => Some(
            strings(text, "record", v)
                .map_err(|(at, e)| err(at, e))?
                .into_iter()
                .map(|(s, _)| s)
                .collect(),
        ),
    };

    // The same value twice on an axis would make the same point twice (and one row where
    // two are expected): keep each once, and say so.
    let mut notes = Vec::new();
    // Two spellings of one policy (`o1` and `o1:era=2003`) are one policy.
    let mut policies: Vec<String> = Vec::new();
    let mut seen: Vec<PolicyKind> = Vec::new();
    for (k, p) in kinds {
        if let Some(i) = seen.iter().position(|&s| s == k) {
            notes.push(format!(
                "policies: '{p}' is the policy '{}' already names; it runs once",
                policies[i]
            ));
        } else {
            seen.push(k);
            policies.push(p);
        }
    }
    let machines = once("machines", machines, |m| format!("'{m}'"), &mut notes);
    let workloads = once("workloads", workloads, |w| format!("'{w}'"), &mut notes);
    let seeds = once("seeds", seeds, |s| s.to_string(), &mut notes);
    let durations = once(
        "duration",
        durations,
        |d| format!("{} s", *d as f64 / 1e9),
        &mut notes,
    );
    let balances = once("rt_balance", balances, |b| b.name().to_string(), &mut notes);
    let lock_modes = once(
        "lock_mode",
        lock_modes,
        |l| l.name().to_string(),
        &mut notes,
    );
    let governors = once(
        "governor",
        governors,
        |g| g.map_or("-".to_string(), |g| g.name().to_string()),
        &mut notes,
    );
    let n = [
        policies.len(),
        machines.len(),
        workloads.len(),
        seeds.len(),
        durations.len(),
        balances.len(),
        lock_modes.len(),
        governors.len(),
    ]
    .iter()
    .try_fold(1usize, |acc, &k| acc.checked_mul(k))
    .filter(|&n| n <= MAX_POINTS)
    .ok_or_else(|| err(0, format!("the grid has more than {MAX_POINTS} points")))?;
    let mut points = Vec::with_capacity(n);
    for p in &policies {
        for m in &machines {
            for w in &workloads {
                for &d in &durations {
                    for &b in &balances {
                        for &l in &lock_modes {
                            for &gv in &governors {
                                for &s in &seeds {
                                    points.push(Point {
                                        policy: p.clone(),
                                        machine: m.clone(),
                                        workload: w.clone(),
                                        seed: s,
                                        duration_ns: d,
                                        rt_balance: b,
                                        lock_mode: l,
                                        governor: gv,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(Grid {
        points,
        record,
        notes,
    })
}

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
    let cfg = SimConfig {
        duration_ns: p.duration_ns,
        seed: p.seed,
        lock_mode: p.lock_mode,
        governor: p.governor,
        ..Default::default()
    };
    policy
        .simulate_with(p.rt_balance, machine, workload, cfg)
        .map_err(|e| e.to_string())
}

impl Point {
    /// The point as a JSON object (what a cluster worker is sent), with its `key`, which
    /// [`Point::from_json`] does not read.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "key": self.key(),
            "policy": self.policy,
            "machine": self.machine,
            "workload": self.workload,
            "seed": self.seed,
            "duration_ns": self.duration_ns,
            "rt_balance": self.rt_balance.name(),
            "lock_mode": self.lock_mode.name(),
            "governor": self.governor.map(|g| g.name()),
        })
    }

    /// The point back from [`Point::to_json`]'s object, every field checked.
    pub fn from_json(v: &Value) -> Result<Point, String> {
        let text = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("point: '{k}' missing or not a string"))
        };
        let num = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("point: '{k}' missing or not an unsigned number"))
        };
        Ok(Point {
            policy: text("policy")?,
            machine: text("machine")?,
            workload: text("workload")?,
            seed: num("seed")?,
            duration_ns: num("duration_ns")?,
            rt_balance: RtBalance::parse(&text("rt_balance")?)?,
            lock_mode: LockMode::parse(&text("lock_mode")?)?,
            governor: match v.get("governor") {
                None | Some(Value::Null) => None,
                Some(g) => Some(Governor::parse(
                    g.as_str().ok_or("point: 'governor' is not a string")?,
                )?),
            },
        })
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

/// Where a sweep written to `out` keeps its journal (one JSON row per finished point, appended
/// as each finishes: what a resumed sweep reads).
pub fn journal_path(out: &Path) -> PathBuf {
    out.with_extension("jsonl")
}

/// A sweep's journal, open for appending one row per finished point.
pub struct Journal {
    file: std::fs::File,
    path: PathBuf,
}

impl Journal {
    /// Opens the journal at `path` (made if absent) and reads the rows it holds. A last line
    /// cut short (the sweep was killed while writing it) is dropped from the file, so that the
    /// next row starts on a line of its own, and reported in the note; any other bad line is an
    /// error naming it.
    pub fn recover(path: &Path) -> Result<(Journal, Vec<Row>, Option<String>), String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut rows = Vec::new();
        let mut note = None;
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Row>(line) {
                Ok(r) if r.get("key").is_some_and(Value::is_string) => rows.push(r),
                Ok(_) => {
                    return Err(format!(
                        "{}: line {}: a row without its 'key'",
                        path.display(),
                        i + 1
                    ))
                }
                Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {
                    note = Some(format!(
                        "{}: line {} was cut short (the sweep stopped while writing it); that point runs again",
                        path.display(),
                        i + 1
                    ));
                }
                Err(e) => return Err(format!("{}: line {}: {e}", path.display(), i + 1)),
            }
        }
        let mut j = Journal::append_to(path)?;
        if note.is_some() {
            let whole = text.rfind('\n').map_or(0, |i| i + 1);
            j.file
                .set_len(whole as u64)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        } else if !text.is_empty() && !text.ends_with('\n') {
            // A whole last row whose newline was not written (by a version that wrote it
            // apart): end its line, so that the next row starts on its own.
            use std::io::Write;
            j.file
                .write_all(b"\n")
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok((j, rows, note))
    }

    /// Opens the journal at `path` for appending without reading it (one already recovered).
    pub fn append_to(path: &Path) -> Result<Journal, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(Journal {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends one row (a JSON object's text) with its newline in one `write()`, and flushes
    /// it: a killed sweep loses only the runs in flight, and never leaves a whole row without
    /// its newline for the next row to run into.
    pub fn append(&mut self, row_json: &str) -> Result<(), String> {
        use std::io::Write;
        let mut line = String::with_capacity(row_json.len() + 1);
        line.push_str(row_json);
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.flush())
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// The journal's rows that stand for points of this grid: a row whose inputs (policy,
/// machine, workload, seed, duration, knobs) are not those of the point its key names was
/// edited or written by another version, and its point runs again. Returns the rows by key
/// (the first of each key), and a note for each row left out.
pub fn resumable(
    points: &[Point],
    rows: Vec<Row>,
) -> (std::collections::HashMap<String, Row>, Vec<String>) {
    let by_key: std::collections::HashMap<String, &Point> =
        points.iter().map(|p| (p.key(), p)).collect();
    let mut have = std::collections::HashMap::new();
    let mut notes = Vec::new();
    for r in rows {
        let Some(k) = r.get("key").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        if have.contains_key(&k) {
            continue;
        }
        if let Some(p) = by_key.get(&k) {
            let differ: Vec<String> = p
                .columns()
                .into_iter()
                .filter(|(c, v)| c != "key" && r.get(c) != Some(v))
                .map(|(c, v)| {
                    format!(
                        "{c} {} where the key says {v}",
                        r.get(&c).map_or("missing".to_string(), Value::to_string)
                    )
                })
                .collect();
            if !differ.is_empty() {
                notes.push(format!(
                    "the row of {k} does not match its key ({}): that point runs again",
                    differ.join(", ")
                ));
                continue;
            }
        }
        have.insert(k, r);
    }
    (have, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_multiply_in_order() {
        assert_eq!(
            expand_braces("chat:rooms={5,10},messages={1,2}").unwrap(),
            vec![
                "chat:rooms=5,messages=1",
                "chat:rooms=5,messages=2",
                "chat:rooms=10,messages=1",
                "chat:rooms=10,messages=2"
            ]
        );
        assert_eq!(expand_braces("yield").unwrap(), vec!["yield"]);
        assert!(expand_braces("a={1,2").is_err());
        assert!(expand_braces("a=1}").is_err());
        assert!(expand_braces("a={1,,2}").is_err());
    }

    #[test]
    fn seed_ranges_follow_rust() {
        assert_eq!(parse_seeds("1..4").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_seeds("1..=4").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_seeds("7").unwrap(), vec![7]);
        assert!(parse_seeds("4..4").is_err());
        assert!(parse_seeds("a..4").is_err());
    }

    #[test]
    fn a_record_entry_keeps_whole_names_only() {
        assert!(records("metrics.throughput.value", "throughput"));
        assert!(records("metrics.context_switches", "context_switches"));
        assert!(records(
            "metrics.wakeup_latency_us.p99",
            "wakeup_latency_us"
        ));
        assert!(records("policy", "policy"));
        assert!(!records(
            "metrics.context_switches_per_s",
            "context_switches"
        ));
        assert!(!records("metrics.wakeup_latency_us.p99", "wake"));
    }

    #[test]
    fn a_value_named_twice_on_an_axis_makes_one_point_and_a_note() {
        // Each of these used to make the same point twice: the sweep ran both and then
        // panicked looking for the second row.
        let g = parse_grid(
            "policies = [\"o1\", \" o1 \", \"eevdf\", \"eevdf:era=6.6\"]\nmachines = \"smp2-2002\"\nworkloads = [\"yield:instances={2,2}\"]\nseeds = [1, 1, 2]\nduration = [\"1ms\", \"1000us\"]\n",
            "g.toml",
            None,
        )
        .unwrap();
        let keys: std::collections::HashSet<String> = g.points.iter().map(Point::key).collect();
        assert_eq!(keys.len(), g.points.len(), "every point once");
        assert_eq!(g.points.len(), 2 * 2);
        assert_eq!(g.notes.len(), 5, "{:?}", g.notes);
        assert!(
            g.notes.iter().any(|n| n.starts_with("seeds: 1 ")),
            "{:?}",
            g.notes
        );
        assert!(
            g.notes
                .iter()
                .any(|n| n.contains("'eevdf:era=6.6' is the policy 'eevdf'")),
            "{:?}",
            g.notes
        );
    }

    #[test]
    fn a_grid_expands_axes_and_names_bad_lines() {
        let g = parse_grid(
            "policies = [\"goodness\", \"o1\"]\nmachines = \"smp2-2002\"\nworkloads = [\"yield:instances={2,4}\"]\nseeds = \"1..=3\"\nduration = \"10ms\"\n",
            "g.toml",
            None,
        )
        .unwrap();
        assert_eq!(g.points.len(), 2 * 2 * 3);
        assert_eq!(g.points[0].workload, "yield:instances=2");
        assert_eq!(g.points[0].seed, 1);
        assert_eq!(g.points[11].policy, "o1");
        let e = parse_grid(
            "policies = [\"o1\"]\nmachines = [\"smp2-2002\"]\nworkloads = [\"yield\",\n  \"nosuch:x=1\"]\n",
            "g.toml",
            None,
        )
        .unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        let e = parse_grid(
            "policies = [\"o1\", \"o2\"]\nmachines = [\"smp2-2002\"]\nworkloads = [\"yield\"]\n",
            "g.toml",
            None,
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.problem.contains("o2"), "{e}");
        let e = parse_grid(
            "policies = [\"o1\"]\nmachines = [\"smp2-2002\"]\nworkloads = [\"yield\"]\nseedz = 3\n",
            "g.toml",
            None,
        )
        .unwrap_err();
        assert_eq!(e.line, 4, "{e}");
    }

    #[test]
    fn a_row_is_the_inputs_and_the_flattened_result() {
        let g = parse_grid(
            "policies = \"o1\"\nmachines = \"smp2-2002\"\nworkloads = \"yield:instances=4\"\nduration = \"20ms\"\n",
            "g.toml",
            None,
        )
        .unwrap();
        let p = &g.points[0];
        let r = run_point(p);
        let all = row(p, &r, None);
        assert_eq!(all["policy"], "o1");
        assert_eq!(all["duration_s"], 0.02);
        let r = r.unwrap();
        assert_eq!(
            all["metrics.context_switches"],
            Value::from(r.metrics.context_switches)
        );
        assert!(all.contains_key("metrics.wakeup_latency_us.p99"));
        assert!(!all
            .keys()
            .any(|k| k.starts_with("metrics.wakeup_latency_cdf_us")));
        let kept = row(p, &Ok(r), Some(&["context_switches".to_string()]));
        assert!(kept.contains_key("metrics.context_switches"));
        // A whole name, not a text prefix (issue 34): the rate is another column.
        assert!(!kept.contains_key("metrics.context_switches_per_s"));
        assert!(!kept.contains_key("metrics.migrations"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Any text, and any byte-level edit of a valid grid, is parsed or refused with a line
        /// inside the text; nothing panics.
        #[test]
        fn grids_are_parsed_or_refused_never_panic(
            junk in "[\\PC\n]{0,200}",
            at in 0usize..400,
            insert in "[\\[\\]{},=\"'.0-9a-z\n ]{0,12}",
        ) {
            let ok = "policies = [\"o1\"]\nmachines = \"smp2-2002\"\nworkloads = [\"yield:instances={2,4}\"]\nseeds = \"1..=3\"\nduration = \"10ms\"\n";
            for text in [junk.clone(), {
                let mut t = ok.to_string();
                let mut i = at.min(t.len());
                while !t.is_char_boundary(i) { i -= 1; }
                t.insert_str(i, &insert);
                t
            }] {
                if let Err(e) = parse_grid(&text, "g.toml", None) {
                    proptest::prop_assert!(e.line >= 1 && e.line <= text.lines().count().max(1) + 1, "{e}");
                }
            }
        }
    }

    #[test]
    fn brace_bombs_are_refused_before_expanding() {
        let bomb = "yield:instances={1,2,3,4,5,6,7,8,9,10}".repeat(8);
        assert!(expand_braces(&bomb).unwrap_err().contains("more than"));
    }
}

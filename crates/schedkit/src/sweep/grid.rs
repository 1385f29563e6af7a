//! A sweep's grid: the TOML file read and every entry checked (the policy is registered, the
//! machine loads, the workload parses; errors name the line), `{a,b}` choices and seed ranges
//! expanded, values given twice kept once with a note, and the points made in axis order.

use super::Point;
use crate::class::RtBalance;
use crate::machine::{Governor, Machine};
use crate::registry::PolicyKind;
use crate::workload::{parse_duration, LockMode, Workload};
use serde::Deserialize;
use std::collections::HashSet;
use std::hash::Hash;
use std::ops::RangeInclusive;
use std::path::Path;
use toml::Spanned;

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
/// before anything expands or runs: [`parse_grid_limited`] counts the points first).
pub const MAX_POINTS: usize = 2_000_000;

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

/// `v` with each value's later repeats left out, and a note for each repeat (`key` tells
/// values apart, `show` writes the value as the note names it). Linear in `v`: an axis may
/// hold a million seeds.
fn once<T, K: Hash + Eq>(
    axis: &str,
    v: Vec<T>,
    key: impl Fn(&T) -> K,
    show: impl Fn(&T) -> String,
    notes: &mut Vec<String>,
) -> Vec<T> {
    let mut seen: HashSet<K> = HashSet::with_capacity(v.len());
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !seen.insert(key(&x)) {
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

/// How many specs `spec`'s `{a,b,c}` groups stand for, counted without expanding them (the
/// product of each group's choices; `None` past `u64::MAX`).
fn brace_count(spec: &str) -> Option<u64> {
    spec.split('{')
        .skip(1)
        .map(|g| g.split('}').next().unwrap_or("").split(',').count() as u64)
        .try_fold(1u64, |acc, k| acc.checked_mul(k))
}

/// Expands every `{a,b,c}` group of a spec into the specs it stands for, in order (at most
/// [`MAX_POINTS`] of them: more is refused before expanding).
pub fn expand_braces(spec: &str) -> Result<Vec<String>, String> {
    if !matches!(brace_count(spec), Some(n) if n <= MAX_POINTS as u64) {
        return Err(format!(
            "'{spec}' stands for more than {MAX_POINTS} workloads"
        ));
    }
    expand(spec)
}

/// The specs `spec` stands for; the caller has counted them ([`brace_count`]). A loop, not a
/// recursion: a spec may hold any number of groups.
fn expand(spec: &str) -> Result<Vec<String>, String> {
    let mut out = vec![String::new()];
    let mut rest = spec;
    while let Some(open) = rest.find('{') {
        let (lit, after) = (&rest[..open], &rest[open + 1..]);
        if lit.contains('}') {
            return Err(format!("'{spec}': a '}}' without its '{{'"));
        }
        let close = after
            .find('}')
            .ok_or_else(|| format!("'{spec}': a '{{' without its '}}'"))?;
        let inner = &after[..close];
        if inner.contains('{') {
            return Err(format!("'{spec}': braces do not nest"));
        }
        let choices: Vec<&str> = inner.split(',').map(str::trim).collect();
        if choices.iter().any(|c| c.is_empty()) {
            return Err(format!("'{spec}': an empty choice in {{{inner}}}"));
        }
        if let [c] = choices[..] {
            // In place: a spec of many one-choice groups costs its length, not its square.
            for s in &mut out {
                s.push_str(lit);
                s.push_str(c);
            }
        } else {
            // At least doubles the specs, so at most log2(count) times.
            out = out
                .iter()
                .flat_map(|head| choices.iter().map(move |c| format!("{head}{lit}{c}")))
                .collect();
        }
        rest = &after[close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("'{spec}': a '}}' without its '{{'"));
    }
    for s in &mut out {
        s.push_str(rest);
    }
    Ok(out)
}

/// A seed (`7`) or a range of seeds (`"1..=32"`, `"1..33"`), as the seeds it stands for,
/// not yet listed.
pub(super) fn parse_seeds(s: &str) -> Result<RangeInclusive<u64>, String> {
    let s = s.trim();
    let (a, b, inclusive) = if let Some((a, b)) = s.split_once("..=") {
        (a, b, true)
    } else if let Some((a, b)) = s.split_once("..") {
        (a, b, false)
    } else {
        let one = s
            .parse::<u64>()
            .map_err(|_| format!("'{s}' is not a seed or a range such as \"1..=32\""))?;
        return Ok(one..=one);
    };
    let num = |x: &str| {
        x.trim()
            .parse::<u64>()
            .map_err(|_| format!("'{s}': '{}' is not an unsigned number", x.trim()))
    };
    let (a, b) = (num(a)?, num(b)?);
    let last = if inclusive { Some(b) } else { b.checked_sub(1) };
    match last {
        Some(last) if last >= a => Ok(a..=last),
        _ => Err(format!("'{s}' is an empty range")),
    }
}

/// How many seeds `r` holds (`None`: all 2^64 of them).
fn seed_count(r: &RangeInclusive<u64>) -> Option<u64> {
    (r.end() - r.start()).checked_add(1)
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

/// Parses grid text; `path` names it in errors; machine paths are resolved against `dir`. A
/// grid of more than [`MAX_POINTS`] points is refused: [`parse_grid_limited`] at that limit.
pub fn parse_grid(text: &str, path: &str, dir: Option<&Path>) -> Result<Grid, GridError> {
    parse_grid_limited(text, path, dir, MAX_POINTS)
}

/// [`parse_grid`] with another limit on the points: a grid of more than `max_points` is
/// refused, with an error naming the limit and the line of its largest axis. The points are
/// counted before anything expands (brace groups, seed ranges) or a workload is parsed, as
/// the product of the axes' sizes as the grid writes them (a value given twice counts twice
/// here, though it makes one point), so that a refused grid costs no more than reading its
/// text. A caller that can afford less than [`MAX_POINTS`] (the fuzzer) passes its own limit.
pub fn parse_grid_limited(
    text: &str,
    path: &str,
    dir: Option<&Path>,
    max_points: usize,
) -> Result<Grid, GridError> {
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
    // The workloads' brace groups are counted here and expanded only once the grid's size
    // is known to be within the limit.
    let workload_specs = required("workloads", &g.workloads)?;
    // A range of seeds stays a range until then, for the same reason.
    let seeds: Vec<RangeInclusive<u64>> = match &g.seeds {
        None => vec![1..=1],
        Some(s) => {
            let at = s.span().start;
            let one = |v: &toml::Value| match v {
                toml::Value::Integer(n) => u64::try_from(*n)
                    .map(|n| n..=n)
                    .map_err(|_| format!("seed {n} is negative")),
                other => Err(format!("seed {other} is not a number")),
            };
            match s.get_ref() {
                toml::Value::Integer(_) => vec![one(s.get_ref()).map_err(|e| err(at, e))?],
                toml::Value::String(r) => vec![parse_seeds(r).map_err(|e| err(at, e))?],
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

    // The grid's size, before anything expands: each axis as written (`None`: past
    // `u64::MAX`), with the offset its error would name.
    let field_at = |v: &Option<Spanned<toml::Value>>| v.as_ref().map_or(0, |v| v.span().start);
    fn sum(mut counts: impl Iterator<Item = Option<u64>>) -> Option<u64> {
        counts.try_fold(0u64, |acc, n| acc.checked_add(n?))
    }
    // Sizes past `u64::MAX` compare as the largest.
    let size = |n: Option<u64>| n.map_or(u128::MAX, u128::from);
    let workloads_count = sum(workload_specs.iter().map(|(w, _)| brace_count(w)));
    // The workloads' line is that of the spec standing for the most.
    let workloads_at = workload_specs
        .iter()
        .max_by_key(|(w, _)| size(brace_count(w)))
        .map_or(field_at(&g.workloads), |&(_, at)| at);
    let axes: [(&str, Option<u64>, usize); 8] = [
        ("policies", Some(kinds.len() as u64), field_at(&g.policies)),
        (
            "machines",
            Some(machines.len() as u64),
            field_at(&g.machines),
        ),
        ("workloads", workloads_count, workloads_at),
        (
            "seeds",
            sum(seeds.iter().map(seed_count)),
            field_at(&g.seeds),
        ),
        (
            "durations",
            Some(durations.len() as u64),
            field_at(&g.duration),
        ),
        (
            "RT balancing modes",
            Some(balances.len() as u64),
            field_at(&g.rt_balance),
        ),
        (
            "lock modes",
            Some(lock_modes.len() as u64),
            field_at(&g.lock_mode),
        ),
        (
            "governors",
            Some(governors.len() as u64),
            field_at(&g.governor),
        ),
    ];
    let written = axes
        .iter()
        .try_fold(1u64, |acc, &(_, n, _)| acc.checked_mul(n?));
    if !matches!(written, Some(n) if n <= max_points as u64) {
        let largest = axes
            .iter()
            .max_by_key(|&&(_, n, _)| size(n))
            .map_or(0, |&(_, _, at)| at);
        let each: Vec<String> = axes
            .iter()
            .filter(|&&(_, n, _)| n != Some(1))
            .map(|&(name, n, _)| match n {
                Some(n) => format!("{n} {name}"),
                None => format!("2^64 or more {name}"),
            })
            .collect();
        let total = match written {
            Some(1) => "1 point".to_string(),
            Some(n) => format!("{n} points"),
            None => "2^64 or more points".to_string(),
        };
        let each = match each.len() {
            0 => String::new(),
            _ => format!(" ({})", each.join(" x ")),
        };
        return Err(err(
            largest,
            format!("the grid has {total}{each}, more than the limit of {max_points}"),
        ));
    }

    let mut workloads = Vec::new();
    for (w, at) in workload_specs {
        for spec in expand(&w).map_err(|e| err(at, e))? {
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
    let seeds: Vec<u64> = seeds.into_iter().flatten().collect();
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
    let machines = once(
        "machines",
        machines,
        String::clone,
        |m| format!("'{m}'"),
        &mut notes,
    );
    let workloads = once(
        "workloads",
        workloads,
        String::clone,
        |w| format!("'{w}'"),
        &mut notes,
    );
    let seeds = once("seeds", seeds, |&s| s, |s| s.to_string(), &mut notes);
    let durations = once(
        "duration",
        durations,
        |&d| d,
        |d| format!("{} s", *d as f64 / 1e9),
        &mut notes,
    );
    let balances = once(
        "rt_balance",
        balances,
        |b| b.name(),
        |b| b.name().to_string(),
        &mut notes,
    );
    let lock_modes = once(
        "lock_mode",
        lock_modes,
        |l| l.name(),
        |l| l.name().to_string(),
        &mut notes,
    );
    let governors = once(
        "governor",
        governors,
        |g| g.map(|g| g.name()),
        |g| g.map_or("-".to_string(), |g| g.name().to_string()),
        &mut notes,
    );
    // At most the count made before expanding: a value given twice makes one point.
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
    .product::<usize>();
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

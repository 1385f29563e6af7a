//! The built-in workloads, ported from the benchmarks in `../shared/reference/benchmarks.md`.
//!
//! Each built-in is one [`Builtin`] entry, written once beside its constructor: its name, its
//! parameters with their defaults and ranges, the line `schedkit list workloads` prints, and the
//! builder that reads the parameters and calls the constructor. The entries live in one file per
//! family (`micro`: yield, fork, ctx, loops, cpujob; `messaging`: chat, hackbench, schbench,
//! pipechain; `network`: tbench, netperf; `latency`: rtmigrate, audio, mpg123, desktop, interactive, probe, rtmix;
//! `throughput`: makej, aim7, x264) and [`BUILTINS`] lists them in the order `list` shows.
//!
//! Every built-in also takes `nice=N`, which renices every task (the announcement's
//! `nice -n 19 ./chat_c`, which reniced the clients and not the server, is
//! `chat:rooms=10,messages=1000,client_nice=19`); `start=D`, which starts its tasks at `D`
//! instead of at 0; and `renice=T/N` and `chpolicy=T/P` (`P`: normal, batch, idle, fifo:PRIO,
//! rr:PRIO), which change every live task running one of its programs at `T` (children it
//! forked included) from outside, as `renice`/`chrt -p` at a shell would.
//!
//! Must never depend on a host (`sim`, `runtime`) or a policy: a built-in is data.

mod latency;
mod messaging;
mod micro;
mod network;
#[cfg(test)]
mod tests;
mod throughput;

pub use latency::*;
pub use messaging::*;
pub use micro::*;
pub use network::*;
pub use throughput::*;

use super::{
    parse_duration, AttrChange, AttrTo, ChanKind, ChannelSpec, Dist, KernelWork, Op,
    ProgramBuilder, TaskSpec, Workload, WorkloadError,
};
use crate::task::{SchedPolicy, NICE_MAX, NICE_MIN, RT_PRIO_MAX, RT_PRIO_MIN};

/// One built-in workload: what `name:key=value,...` means.
pub struct Builtin {
    pub name: &'static str,
    /// Its own parameters, in the order `list` shows them (the shared `nice`, `start`,
    /// `renice` and `chpolicy` are not repeated here).
    pub params: &'static [Param],
    /// What it models and what its throughput counts (one line of `list workloads`).
    pub about: &'static str,
    /// Reads the parameters from `Args` and builds the workload.
    build: fn(&mut Args<'_>) -> Result<Workload, WorkloadError>,
}

/// A parameter of a built-in: its default is text, parsed by the same rules as a value the user
/// gives, so that the default shown and the default used cannot differ.
pub struct Param {
    pub name: &'static str,
    pub default: &'static str,
    kind: Kind,
}

/// How a parameter's value is read.
enum Kind {
    /// A whole number within `min..=max`.
    Int(i64, i64),
    /// A duration (`10ms`, `250us`, `2s`).
    Dur,
    /// A finite number within `min..=max`.
    Num(f64, f64),
    /// One of the words listed.
    Choice(&'static [&'static str]),
    /// Read by the builder itself ([`Args::text`]).
    Text,
}

impl Param {
    pub const fn int(name: &'static str, default: &'static str, min: i64, max: i64) -> Param {
        Param {
            name,
            default,
            kind: Kind::Int(min, max),
        }
    }
    pub const fn dur(name: &'static str, default: &'static str) -> Param {
        Param {
            name,
            default,
            kind: Kind::Dur,
        }
    }
    pub const fn num(name: &'static str, default: &'static str, min: f64, max: f64) -> Param {
        Param {
            name,
            default,
            kind: Kind::Num(min, max),
        }
    }
    pub const fn choice(
        name: &'static str,
        default: &'static str,
        words: &'static [&'static str],
    ) -> Param {
        Param {
            name,
            default,
            kind: Kind::Choice(words),
        }
    }
    pub const fn text(name: &'static str, default: &'static str) -> Param {
        Param {
            name,
            default,
            kind: Kind::Text,
        }
    }
}

impl Builtin {
    /// `key=default,...` of its own parameters.
    pub fn defaults(&self) -> String {
        self.params
            .iter()
            .map(|p| format!("{}={}", p.name, p.default))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Every built-in, in the order `schedkit list workloads` prints them.
pub static BUILTINS: &[Builtin] = &[
    micro::YIELD,
    messaging::CHAT,
    micro::FORK,
    micro::CTX,
    throughput::MAKEJ,
    latency::RTMIGRATE,
    throughput::AIM7,
    micro::LOOPS,
    micro::CPUJOB,
    messaging::HACKBENCH,
    messaging::SCHBENCH,
    network::TBENCH,
    network::NETPERF,
    latency::AUDIO,
    latency::MPG123,
    messaging::PIPECHAIN,
    latency::INTERACTIVE,
    latency::DESKTOP,
    latency::PROBE,
    latency::RTMIX,
    throughput::X264,
];

/// The built-in called `name`.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// The `key=value` pairs of one spec, each marked when a builder reads it, so that a key no
/// builder reads is refused by name.
struct Params<'a> {
    workload: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
    used: Vec<bool>,
}

impl<'a> Params<'a> {
    fn parse(workload: &'a str, s: &'a str) -> Result<Self, WorkloadError> {
        let mut pairs = Vec::new();
        for kv in s.split(',').map(str::trim).filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| WorkloadError::Param {
                workload: workload.into(),
                problem: format!("'{kv}' is not key=value"),
            })?;
            let k = k.trim();
            if pairs.iter().any(|(p, _)| *p == k) {
                return Err(WorkloadError::Param {
                    workload: workload.into(),
                    problem: format!("parameter '{k}' is given twice"),
                });
            }
            pairs.push((k, v.trim()));
        }
        let used = vec![false; pairs.len()];
        Ok(Params {
            workload,
            pairs,
            used,
        })
    }

    fn err(&self, problem: String) -> WorkloadError {
        WorkloadError::Param {
            workload: self.workload.into(),
            problem,
        }
    }

    fn raw(&mut self, key: &str) -> Option<&'a str> {
        let i = self.pairs.iter().position(|(k, _)| *k == key)?;
        self.used[i] = true;
        Some(self.pairs[i].1)
    }

    fn int(&self, key: &str, v: &str, min: i64, max: i64) -> Result<i64, WorkloadError> {
        let n: i64 = v
            .parse()
            .map_err(|_| self.err(format!("{key}={v}: not a whole number")))?;
        if n < min || n > max {
            return Err(self.err(format!("{key}={n}: must be within {min}..={max}")));
        }
        Ok(n)
    }

    fn dur(&self, key: &str, v: &str) -> Result<u64, WorkloadError> {
        parse_duration(v).map_err(|e| self.err(format!("{key}: {e}")))
    }

    fn finish(&self, known: &str) -> Result<(), WorkloadError> {
        if let Some(i) = self.used.iter().position(|u| !u) {
            return Err(self.err(format!(
                "unknown parameter '{}' (takes: {known}; and every built-in: nice, start, renice, chpolicy)",
                self.pairs[i].0
            )));
        }
        Ok(())
    }
}

/// What a builder reads its parameters through: each value is the one given or the entry's
/// default, checked against the parameter's kind.
pub struct Args<'a> {
    p: Params<'a>,
    entry: &'static Builtin,
    /// The spec's `nice=N`.
    pub nice: i32,
    /// Set by a builder that applied `nice` itself (to some of its tasks only).
    pub nice_applied: bool,
}

impl<'a> Args<'a> {
    fn param(&self, key: &str) -> &'static Param {
        // A builder reading a parameter its entry does not declare is a bug of the table,
        // found by the test that builds every entry with its defaults.
        self.entry
            .params
            .iter()
            .find(|p| p.name == key)
            .unwrap_or_else(|| {
                panic!(
                    "built-in {} reads undeclared parameter {key}",
                    self.entry.name
                )
            })
    }

    /// An error about this spec.
    pub fn err(&self, problem: String) -> WorkloadError {
        self.p.err(problem)
    }

    /// The value given for `key`, or its default, as text.
    pub fn text(&mut self, key: &str) -> &'a str {
        let param = self.param(key);
        self.p.raw(key).unwrap_or(param.default)
    }

    pub fn int(&mut self, key: &str) -> Result<i64, WorkloadError> {
        let Kind::Int(min, max) = self.param(key).kind else {
            panic!("{key} of {} is not a whole number", self.entry.name)
        };
        let v = self.text(key);
        self.p.int(key, v, min, max)
    }

    pub fn dur(&mut self, key: &str) -> Result<u64, WorkloadError> {
        let Kind::Dur = self.param(key).kind else {
            panic!("{key} of {} is not a duration", self.entry.name)
        };
        let v = self.text(key);
        self.p.dur(key, v)
    }

    pub fn num(&mut self, key: &str) -> Result<f64, WorkloadError> {
        let Kind::Num(min, max) = self.param(key).kind else {
            panic!("{key} of {} is not a number", self.entry.name)
        };
        let v = self.text(key);
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && (min..=max).contains(x))
            .ok_or_else(|| self.err(format!("{key}={v}: must be a number within {min}..={max}")))
    }

    pub fn choice(&mut self, key: &str) -> Result<&'a str, WorkloadError> {
        let Kind::Choice(words) = self.param(key).kind else {
            panic!("{key} of {} is not a choice", self.entry.name)
        };
        let v = self.text(key);
        if words.contains(&v) {
            return Ok(v);
        }
        let list = match words {
            [one] => one.to_string(),
            [init @ .., last] => format!("{} or {last}", init.join(", ")),
            [] => String::new(),
        };
        Err(self.err(format!("{key}={v}: must be {list}")))
    }
}

/// Parses `name:key=value,...`.
pub fn parse(spec: &str) -> Result<Workload, WorkloadError> {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let name = name.trim();
    let Some(entry) = find(name) else {
        return Err(WorkloadError::Unknown(
            name.to_string(),
            BUILTINS
                .iter()
                .map(|b| b.name)
                .collect::<Vec<_>>()
                .join(", "),
        ));
    };
    let mut p = Params::parse(name, rest)?;
    let nice = match p.raw("nice") {
        None => 0,
        Some(v) => p.int("nice", v, NICE_MIN as i64, NICE_MAX as i64)? as i32,
    };
    // Taken by every built-in: when its tasks start, and changes made to them from outside.
    let start_ns = match p.raw("start") {
        None => 0,
        Some(v) => p.dur("start", v)?,
    };
    let mut changes = Vec::new();
    if let Some(v) = p.raw("renice") {
        changes.push(AttrChange::parse_renice(v).map_err(|e| p.err(format!("renice={v}: {e}")))?);
    }
    if let Some(v) = p.raw("chpolicy") {
        changes
            .push(AttrChange::parse_chpolicy(v).map_err(|e| p.err(format!("chpolicy={v}: {e}")))?);
    }
    changes.sort_by_key(|c| c.at_ns);
    if let Some(c) = changes.first().filter(|c| c.at_ns < start_ns) {
        return Err(p.err(format!(
            "a change at {} comes before the tasks start (start={})",
            fmt_dur(c.at_ns),
            fmt_dur(start_ns)
        )));
    }
    let mut args = Args {
        p,
        entry,
        nice,
        nice_applied: false,
    };
    let mut w = (entry.build)(&mut args)?;
    args.p.finish(&entry.defaults())?;
    // A parameter added to the name: after ':' if it is the first, so that it parses back.
    let add = |name: &mut String, kv: String| {
        name.push(if name.contains(':') { ',' } else { ':' });
        name.push_str(&kv);
    };
    if nice != 0 {
        if !args.nice_applied {
            for t in &mut w.tasks {
                t.nice = nice;
            }
        }
        add(&mut w.name, format!("nice={nice}"));
    }
    if start_ns > 0 {
        for t in &mut w.tasks {
            t.start_ns = start_ns;
        }
        add(&mut w.name, format!("start={}", fmt_dur(start_ns)));
    }
    for c in &changes {
        w.changes.push(super::GroupChange {
            change: *c,
            progs: (0..w.programs.len() as u32).collect(),
        });
        let key = match c.to {
            AttrTo::Nice(_) => "renice",
            AttrTo::Policy(..) => "chpolicy",
        };
        add(&mut w.name, format!("{key}={}", c.spec()));
    }
    debug_assert!(w.validate().is_ok(), "{:?}", w.validate());
    Ok(w)
}

fn base(name: String, unit: &str) -> Workload {
    Workload {
        name,
        programs: Vec::new(),
        channels: Vec::new(),
        tasks: Vec::new(),
        throughput_unit: unit.into(),
        per_op_label: None,
        rtmigrate: None,
        locks: Vec::new(),
        throughput_scale: 1.0,
        changes: Vec::new(),
    }
}

pub(crate) fn fmt_dur(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

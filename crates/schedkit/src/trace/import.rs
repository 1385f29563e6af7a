//! Reading scheduler traces recorded on real machines.
//!
//! Three text forms, detected line by line (a file holds one, but nothing depends on that):
//! - **tracefs** (`/sys/kernel/tracing/trace`): `comm-pid [cpu] flags ts: event: key=value…`,
//!   with the optional tgid column `(  77)` and 4- or 5-character flags (the line layout of
//!   Perfetto's `systrace_line_tokenizer.cc`).
//! - **`trace-cmd report`**: the same header without flags; with its default plugins the
//!   sched events are rewritten (`prev:pid [prio] S ==> next:pid [prio]`,
//!   `comm:pid [prio] CPU:003`, libtraceevent's `plugin_sched_switch.c`); `-N` prints the
//!   kernel's `key=value` form; `-R` prints raw fields (`prev_state` as a number).
//! - **`perf sched script` / `perf script`**: `comm pid[/tid] [cpu] ts: sched:event: key=value…`.
//!
//! Everything that is not turned into an event is counted in [`ImportStats`]: header lines,
//! events of other kinds, malformed lines (with the first few line numbers), cut first and
//! last lines, `<...>` names, PID reuse, time stamps out of order and the overlapping runs
//! that clock skew between CPUs produces. Nothing here panics on any input (fuzzed in
//! `tests/fuzz_traces.rs`).
//!
//! The lines become raw events that a `Builder` turns into the trace (tasks, PID reuse,
//! switches put back); trace-cmd's binary trace.dat ([`super::tracedat`]) feeds the same
//! builder. [`load`] and [`parse_bytes`] take any of these forms, gzip-compressed or not.

use super::*;
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Which text form a line was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// tracefs or `trace-cmd report` (`comm-pid [cpu]`).
    Ftrace,
    /// `perf script` (`comm pid [cpu]`).
    Perf,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ImportError {
    #[error("{0}")]
    Empty(String),
}

fn ftrace_line() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*(?P<tgid>\d+|-+)\)\s+)?\[(?P<cpu>\d+)\]\s+(?:(?P<flags>\S{4,5})\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>[A-Za-z_][\w:]*):\s*(?P<args>.*)$",
        )
        .expect("valid regex")
    })
}

fn perf_line() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^\s*(?P<comm>.*?)\s+(?P<pid>\d+)(?:/(?P<tid>\d+))?\s+\[(?P<cpu>\d+)\]\s+(?P<ts>\d+\.\d+):\s+(?:\d+\s+)?(?P<event>[A-Za-z_][\w:]*):\s*(?P<args>.*)$",
        )
        .expect("valid regex")
    })
}

fn key_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=").expect("valid regex"))
}

fn plugin_switch() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?P<pc>.*):(?P<pp>\d+) \[(?P<ppr>-?\d+)\] (?P<st>\S+) ==> (?P<nc>.*):(?P<np>\d+) \[(?P<npr>-?\d+)\]\s*$",
        )
        .expect("valid regex")
    })
}

fn plugin_wakeup() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?P<c>.*):(?P<p>\d+) \[(?P<pr>-?\d+)\](?: success=\d+)? CPU:(?P<cpu>\d+)\s*$")
            .expect("valid regex")
    })
}

/// A task as an event names it: PID and, if known, its name and priority.
#[derive(Clone, Debug)]
pub(crate) struct Ref {
    pub(crate) pid: u32,
    pub(crate) comm: Option<String>,
    pub(crate) prio: Option<i32>,
}

/// An event as a front end decoded it, before PIDs become tasks.
#[derive(Clone, Debug)]
pub(crate) enum RawKind {
    Switch {
        prev: Ref,
        state: PrevState,
        next: Ref,
    },
    /// `waking`: a `sched_waking` (true) or a `sched_wakeup` (false).
    Wake {
        task: Ref,
        cpu: u32,
        waking: bool,
    },
    WakeupNew {
        task: Ref,
        cpu: u32,
    },
    Fork {
        parent: Ref,
        child: Ref,
    },
    Exit {
        task: Ref,
    },
    Migrate {
        task: Ref,
        orig: u32,
        dest: u32,
    },
    Freq {
        cpu: u32,
        khz: u64,
    },
    Idle {
        cpu: u32,
        state: Option<u32>,
    },
    Mark {
        begin: bool,
        pid: u32,
        name: String,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct Raw {
    pub(crate) ts: u64,
    pub(crate) cpu: u32,
    /// The task running where the event fired (the line's header).
    pub(crate) current: Ref,
    pub(crate) tgid: Option<u32>,
    pub(crate) irq: bool,
    pub(crate) kind: RawKind,
}

/// Seconds with a fraction → ns (digits past the ninth are dropped); None on overflow.
pub fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    let sec: u64 = sec.parse().ok()?;
    let mut ns: u64 = 0;
    let mut digits = 0;
    for c in frac.chars().take(9) {
        ns = ns * 10 + c.to_digit(10)? as u64;
        digits += 1;
    }
    for _ in digits..9 {
        ns *= 10;
    }
    sec.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// `key=value` arguments; a value runs to the next ` key=` (names may hold spaces).
fn kv(args: &str) -> HashMap<&str, &str> {
    let mut out = HashMap::new();
    let keys: Vec<_> = key_re().captures_iter(args).collect();
    for (i, c) in keys.iter().enumerate() {
        let (Some(whole), Some(k)) = (c.get(0), c.get(1)) else {
            continue;
        };
        let end = keys
            .get(i + 1)
            .and_then(|n| n.get(0))
            .map_or(args.len(), |m| m.start());
        let start = whole.end();
        if start > end {
            continue;
        }
        let v = args[start..end].trim();
        let v = v.strip_suffix("==>").map_or(v, str::trim_end);
        out.insert(k.as_str(), v);
    }
    out
}

fn num<T: std::str::FromStr>(m: &HashMap<&str, &str>, k: &str) -> Result<T, String> {
    let v = m.get(k).ok_or_else(|| format!("no `{k}=`"))?;
    v.trim()
        .parse()
        .map_err(|_| format!("`{k}={v}` is not a number in range"))
}

fn comm_of(m: &HashMap<&str, &str>, k: &str) -> Option<String> {
    m.get(k).map(|s| s.to_string())
}

/// `prev_state` as text (`S`, `R+`, `D|K`, the plugin's `W` for I) or a raw number (`-R`).
pub fn parse_prev_state(s: &str) -> Result<PrevState, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u64>() {
        // Raw TASK_REPORT bits (6.x: 1 S, 2 D, 4 T, 8 t, 16 X, 32 Z, 64 P, 128 I; 256 is
        // TASK_REPORT_MAX, "preempted").
        return Ok(if n & (16 | 32) != 0 {
            PrevState::Dead
        } else if n & 2 != 0 {
            PrevState::DiskSleep
        } else if n & (4 | 8) != 0 {
            PrevState::Stopped
        } else if n & (1 | 64 | 128) != 0 {
            PrevState::Sleep
        } else {
            PrevState::Runnable
        });
    }
    let first = s.chars().next().ok_or("empty `prev_state`")?;
    Ok(match first {
        'R' => PrevState::Runnable,
        'S' | 'I' | 'W' | 'P' | 'x' | 'K' => PrevState::Sleep,
        'D' => PrevState::DiskSleep,
        'T' | 't' => PrevState::Stopped,
        'X' | 'Z' => PrevState::Dead,
        _ => return Err(format!("unknown `prev_state={s}`")),
    })
}

/// Parses one event's arguments. `Ok(None)`: an event kind the model does not use.
fn parse_event(event: &str, args: &str, ts_cpu: u32) -> Result<Option<RawKind>, String> {
    let name = event
        .strip_prefix("sched:")
        .or_else(|| event.strip_prefix("power:"))
        .or_else(|| event.strip_prefix("ftrace:"))
        .unwrap_or(event);
    Ok(Some(match name {
        "sched_switch" => {
            if args.contains("prev_pid=") {
                let m = kv(args);
                RawKind::Switch {
                    prev: Ref {
                        pid: num(&m, "prev_pid")?,
                        comm: comm_of(&m, "prev_comm"),
                        prio: num(&m, "prev_prio").ok(),
                    },
                    state: parse_prev_state(m.get("prev_state").ok_or("no `prev_state=`")?)?,
                    next: Ref {
                        pid: num(&m, "next_pid")?,
                        comm: comm_of(&m, "next_comm"),
                        prio: num(&m, "next_prio").ok(),
                    },
                }
            } else {
                let c = plugin_switch()
                    .captures(args)
                    .ok_or("sched_switch: neither `prev_pid=` fields nor `prev:pid [prio] S ==> next:pid [prio]`")?;
                let n = |k: &str| c.name(k).map_or("", |m| m.as_str());
                RawKind::Switch {
                    prev: Ref {
                        pid: n("pp").parse().map_err(|_| "prev pid out of range")?,
                        comm: Some(n("pc").to_string()),
                        prio: n("ppr").parse().ok(),
                    },
                    state: parse_prev_state(n("st"))?,
                    next: Ref {
                        pid: n("np").parse().map_err(|_| "next pid out of range")?,
                        comm: Some(n("nc").to_string()),
                        prio: n("npr").parse().ok(),
                    },
                }
            }
        }
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let (task, cpu) = if args.contains("pid=") {
                let m = kv(args);
                let cpu = num(&m, "target_cpu").unwrap_or(ts_cpu);
                (
                    Ref {
                        pid: num(&m, "pid")?,
                        comm: comm_of(&m, "comm"),
                        prio: num(&m, "prio").ok(),
                    },
                    cpu,
                )
            } else {
                let c = plugin_wakeup()
                    .captures(args)
                    .ok_or("wakeup: neither `pid=` fields nor `comm:pid [prio] CPU:n`")?;
                let n = |k: &str| c.name(k).map_or("", |m| m.as_str());
                (
                    Ref {
                        pid: n("p").parse().map_err(|_| "pid out of range")?,
                        comm: Some(n("c").to_string()),
                        prio: n("pr").parse().ok(),
                    },
                    n("cpu").parse().map_err(|_| "CPU out of range")?,
                )
            };
            if name == "sched_wakeup_new" {
                RawKind::WakeupNew { task, cpu }
            } else {
                RawKind::Wake {
                    task,
                    cpu,
                    waking: name == "sched_waking",
                }
            }
        }
        "sched_process_fork" => {
            let m = kv(args);
            // `trace-cmd report -R` prints the raw field names (parent_comm, parent_pid).
            let raw = m.contains_key("parent_pid");
            RawKind::Fork {
                parent: Ref {
                    pid: num(&m, if raw { "parent_pid" } else { "pid" })?,
                    comm: comm_of(&m, if raw { "parent_comm" } else { "comm" }),
                    prio: None,
                },
                child: Ref {
                    pid: num(&m, "child_pid")?,
                    comm: comm_of(&m, "child_comm"),
                    prio: None,
                },
            }
        }
        "sched_process_exit" => {
            let m = kv(args);
            RawKind::Exit {
                task: Ref {
                    pid: num(&m, "pid")?,
                    comm: comm_of(&m, "comm"),
                    prio: num(&m, "prio").ok(),
                },
            }
        }
        "sched_migrate_task" => {
            let m = kv(args);
            RawKind::Migrate {
                task: Ref {
                    pid: num(&m, "pid")?,
                    comm: comm_of(&m, "comm"),
                    prio: num(&m, "prio").ok(),
                },
                orig: num(&m, "orig_cpu")?,
                dest: num(&m, "dest_cpu")?,
            }
        }
        "cpu_frequency" => {
            let m = kv(args);
            RawKind::Freq {
                cpu: num(&m, "cpu_id")?,
                khz: num(&m, "state")?,
            }
        }
        "cpu_idle" => {
            let m = kv(args);
            let state: u64 = num(&m, "state")?;
            RawKind::Idle {
                cpu: num(&m, "cpu_id")?,
                // PWR_EVENT_EXIT is (u32)-1; some tools print it as -1 or as a u64.
                state: (state < u32::MAX as u64).then_some(state as u32),
            }
        }
        "print" | "tracing_mark_write" => {
            // tracefs prints `tracing_mark_write: ` before the text; `trace-cmd report` the
            // ip's symbol, or its address where the file has no kallsyms.
            let a = args.trim();
            let a = a
                .strip_prefix("tracing_mark_write:")
                .unwrap_or(a)
                .trim_start();
            let a = match a.split_once(": ") {
                Some((ip, rest))
                    if !ip.is_empty() && !ip.contains(|c: char| c.is_whitespace() || c == '|') =>
                {
                    rest
                }
                _ => a,
            };
            return parse_mark(a);
        }
        _ => return Ok(None),
    }))
}

/// The text of a `print` event (a write to `trace_marker`): an ATrace slice `B|pid|name` or
/// `E|pid` is a sleeping-lock wait; anything else is not used (`Ok(None)`).
pub(crate) fn parse_mark(text: &str) -> Result<Option<RawKind>, String> {
    let mut parts = text.trim().splitn(3, '|');
    let (Some(kind), Some(pid)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    let begin = match kind {
        "B" => true,
        "E" => false,
        _ => return Ok(None),
    };
    let pid = pid.trim().parse().map_err(|_| "marker pid out of range")?;
    Ok(Some(RawKind::Mark {
        begin,
        pid,
        name: parts.next().unwrap_or("").trim().to_string(),
    }))
}

/// The most CPUs a machine may have here (a limit on what a corrupt trace can make the
/// replay allocate).
pub(crate) const MAX_CPUS: u32 = 65_536;

/// Every CPU number an event names is one of a machine's.
pub(crate) fn check_cpus(kind: &RawKind) -> Result<(), String> {
    let named: &[u32] = match kind {
        RawKind::Freq { cpu, .. } | RawKind::Idle { cpu, .. } => &[*cpu],
        RawKind::Wake { cpu, .. } | RawKind::WakeupNew { cpu, .. } => &[*cpu],
        RawKind::Migrate { orig, dest, .. } => &[*orig, *dest],
        _ => &[],
    };
    match named.iter().find(|&&c| c >= MAX_CPUS) {
        Some(c) => Err(format!(
            "CPU {c} is beyond any machine (limit {})",
            MAX_CPUS - 1
        )),
        None => Ok(()),
    }
}

/// What one text line is.
enum Line {
    Header(Option<u32>),
    /// `CPU:1 [LOST 12 EVENTS]` (tracefs), `CPU:1 [12 EVENTS DROPPED]` (`trace-cmd report`).
    Lost(u64),
    Event(Box<Raw>),
    Other(String),
}

fn parse_line(line: &str) -> Result<Line, String> {
    let t = line.trim();
    if t.is_empty() {
        return Ok(Line::Header(None));
    }
    // A comment starts in the first column; a task name may start with '#' after padding.
    if line.starts_with('#') {
        // "# entries-in-buffer/entries-written: 5508/5508   #P:2"
        let cpus = t.split("#P:").nth(1).and_then(|s| s.trim().parse().ok());
        return header_cpus(cpus);
    }
    if let Some(n) = t.strip_prefix("cpus=") {
        return header_cpus(n.trim().parse().ok());
    }
    if t.starts_with("CPU:") && (t.contains("[LOST ") || t.contains("EVENTS DROPPED]")) {
        // The count, where the kernel kept it: at least one event was lost.
        let n = t
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        return Ok(Line::Lost(n));
    }
    if t.starts_with("version =")
        || (t.starts_with("CPU") && (t.contains("is empty") || t.contains("data recorded")))
    {
        return Ok(Line::Header(None));
    }
    let (caps, format) = match ftrace_line().captures(line) {
        Some(c) => (c, Format::Ftrace),
        None => match perf_line().captures(line) {
            Some(c) => (c, Format::Perf),
            None => {
                return Err("no `comm-pid [cpu] timestamp: event:` (ftrace) or `comm pid [cpu] timestamp: event:` (perf) prefix".into())
            }
        },
    };
    let g = |k: &str| caps.name(k).map_or("", |m| m.as_str());
    let mut pid: u32 = g("pid").parse().map_err(|_| "pid out of range")?;
    let mut tgid = match g("tgid") {
        "" => None,
        s => s.parse().ok(),
    };
    if format == Format::Perf && !g("tid").is_empty() {
        tgid = Some(pid);
        pid = g("tid").parse().map_err(|_| "tid out of range")?;
    }
    let cpu: u32 = g("cpu").parse().map_err(|_| "CPU number out of range")?;
    if cpu >= MAX_CPUS {
        return Err(format!(
            "CPU {cpu} is beyond any machine (limit {})",
            MAX_CPUS - 1
        ));
    }
    let ts = parse_ts(g("ts")).ok_or("time stamp out of range")?;
    // ftrace flags: irqs-off, need-resched, hardirq/softirq, preempt depth[, migrate-disable].
    let irq = g("flags")
        .chars()
        .nth(2)
        .is_some_and(|c| matches!(c, 'h' | 'H' | 's' | 'Z'));
    let comm = g("comm").trim();
    let current = Ref {
        pid,
        comm: (!comm.is_empty()).then(|| comm.to_string()),
        prio: None,
    };
    let event = g("event");
    match parse_event(event, g("args"), cpu).map_err(|e| format!("{event}: {e}"))? {
        Some(kind) => {
            check_cpus(&kind).map_err(|e| format!("{event}: {e}"))?;
            Ok(Line::Event(Box::new(Raw {
                ts,
                cpu,
                current,
                tgid,
                irq,
                kind,
            })))
        }
        None => Ok(Line::Other(
            event.strip_prefix("sched:").unwrap_or(event).to_string(),
        )),
    }
}

/// A header's CPU count, if it is one a machine can have.
fn header_cpus(n: Option<u32>) -> Result<Line, String> {
    match n {
        Some(c) if c == 0 || c > 65_536 => Err(format!(
            "a header gives {c} CPUs (a machine has 1 to 65536)"
        )),
        c => Ok(Line::Header(c)),
    }
}

/// The most lines a trace may have (a limit on memory: 100 million events is ~10 GB of text).
pub const MAX_LINES: usize = 100_000_000;

/// Parses a trace text. Fails only when it holds no scheduler event at all.
pub fn parse(text: &str) -> Result<Trace, ImportError> {
    let mut b = Builder::new();
    let mut failures: Vec<(usize, String)> = Vec::new();
    let mut first_data: Option<usize> = None;
    let mut last_line = 0;
    for (i, line) in text.lines().enumerate().take(MAX_LINES) {
        let no = i + 1;
        last_line = no;
        b.stats.lines += 1;
        match parse_line(line) {
            Ok(Line::Header(c)) => {
                b.stats.header_lines += 1;
                if let Some(c) = c {
                    b.cpus(c);
                }
            }
            Ok(Line::Lost(n)) => {
                b.stats.header_lines += 1;
                b.lost(n);
            }
            Ok(Line::Event(r)) => {
                first_data.get_or_insert(no);
                b.event(*r);
            }
            Ok(Line::Other(name)) => {
                first_data.get_or_insert(no);
                b.other(&name);
            }
            Err(e) => {
                first_data.get_or_insert(no);
                failures.push((no, e));
            }
        }
    }
    for (no, e) in failures {
        // A buffer dumped mid-line cuts the first or the last line.
        if Some(no) == first_data || no == last_line {
            b.stats.truncated_edges += 1;
            continue;
        }
        b.malformed(format!("line {no}: {e}"));
    }
    b.finish("lines")
}

/// What both front ends (the text lines above, `tracedat`'s records) hand over: the events as
/// decoded, in file order, and everything not used. [`Builder::finish`] sorts them and turns
/// PIDs into tasks ([`Resolver`]: PID reuse, switches put back, overlapping runs), so that a
/// trace.dat and its `trace-cmd report` text give one trace.
pub(crate) struct Builder {
    pub(crate) stats: ImportStats,
    header_cpus: Option<u32>,
    raws: Vec<Raw>,
    max_ts: u64,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder {
            stats: ImportStats::default(),
            header_cpus: None,
            raws: Vec::new(),
            max_ts: 0,
        }
    }

    /// The machine's CPUs, as a header gives them (the last one given counts).
    pub(crate) fn cpus(&mut self, n: u32) {
        self.header_cpus = Some(n);
    }

    /// An event of the model, in file order.
    pub(crate) fn event(&mut self, r: Raw) {
        if r.ts < self.max_ts {
            self.stats.out_of_order += 1;
        }
        self.max_ts = self.max_ts.max(r.ts);
        self.raws.push(r);
    }

    /// An event of a kind the model does not use.
    pub(crate) fn other(&mut self, name: &str) {
        match self.stats.other_events.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.stats.other_events.insert(name.to_string(), 1);
            }
        }
    }

    /// Something that could not be read, described with where it is.
    pub(crate) fn malformed(&mut self, example: String) {
        self.stats.malformed += 1;
        if self.stats.malformed_examples.len() < 5 {
            self.stats.malformed_examples.push(example);
        }
    }

    /// Events the kernel's ring buffer dropped.
    pub(crate) fn lost(&mut self, n: u64) {
        self.stats.lost_events = self.stats.lost_events.saturating_add(n);
    }

    /// The trace; `unit` names what `stats.lines` counts, for the error when there is no
    /// scheduler event at all.
    pub(crate) fn finish(self, unit: &str) -> Result<Trace, ImportError> {
        let Builder {
            stats,
            header_cpus,
            mut raws,
            ..
        } = self;
        if raws.is_empty() {
            let mut why = format!(
                "no scheduler events (sched_switch, sched_waking, …) in {} {unit}",
                stats.lines
            );
            if let Some(ex) = stats.malformed_examples.first() {
                why += &format!("; {} malformed, first at {ex}", stats.malformed);
            }
            return Err(ImportError::Empty(why));
        }
        raws.sort_by_key(|r| r.ts);
        let has_waking = raws
            .iter()
            .any(|r| matches!(r.kind, RawKind::Wake { waking: true, .. }));
        let n = raws.len();
        let t = Resolver::new(stats, header_cpus).run(raws, has_waking);
        let names_a_task = |e: &Event| match e.kind {
            EventKind::Switch { prev, next, .. } => prev.is_some() || next.is_some(),
            EventKind::CpuFrequency { .. } | EventKind::CpuIdle { .. } => false,
            _ => true,
        };
        if !t.events.iter().any(names_a_task) {
            return Err(ImportError::Empty(format!(
                "none of the {n} scheduler events names a task other than the idle task"
            )));
        }
        Ok(t)
    }
}

/// Turns PIDs into tasks in time order (a PID seen again after its task died is a new task),
/// and checks each CPU's switches against what it was known to run.
struct Resolver {
    trace: Trace,
    live: HashMap<u32, TaskIdx>,
    /// Tasks whose last switch-out was as dead: their PID's next use is a new task.
    dead: Vec<bool>,
    /// The CPU each running task is on.
    on_cpu: HashMap<TaskIdx, u32>,
    cpu_curr: HashMap<u32, Option<TaskIdx>>,
    /// The last event's time on each CPU.
    cpu_last: HashMap<u32, u64>,
    /// When each task was last named by an event, and the time of the event at hand.
    last_seen: Vec<u64>,
    now: u64,
}

impl Resolver {
    fn new(stats: ImportStats, header_cpus: Option<u32>) -> Resolver {
        Resolver {
            trace: Trace {
                ncpus: header_cpus.unwrap_or(0),
                stats,
                ..Default::default()
            },
            live: HashMap::new(),
            dead: Vec::new(),
            on_cpu: HashMap::new(),
            cpu_curr: HashMap::new(),
            cpu_last: HashMap::new(),
            last_seen: Vec::new(),
            now: 0,
        }
    }

    fn new_task(&mut self, r: &Ref) -> TaskIdx {
        let i = self.trace.tasks.len();
        self.trace.tasks.push(TraceTask {
            pid: r.pid,
            tgid: None,
            comm: String::new(),
            prio: 120,
        });
        self.dead.push(false);
        self.last_seen.push(self.now);
        self.live.insert(r.pid, i);
        i
    }

    /// The task a reference names (None: the idle task), creating or renewing it.
    fn task(&mut self, r: &Ref) -> Option<TaskIdx> {
        if r.pid == 0 {
            return None;
        }
        let i = match self.live.get(&r.pid) {
            Some(&i) if !self.dead[i] => i,
            Some(_) => {
                self.trace.stats.pid_reuse += 1;
                self.new_task(r)
            }
            None => self.new_task(r),
        };
        let t = &mut self.trace.tasks[i];
        match r.comm.as_deref() {
            Some("<...>") => self.trace.stats.unknown_comms += 1,
            Some(c) if !c.is_empty() => t.comm = truncate_comm(c),
            _ => {}
        }
        if let Some(p) = r.prio {
            t.prio = p;
        }
        self.last_seen[i] = self.now;
        Some(i)
    }

    /// An event's line names the task running on its CPU. If the CPU was last seen running
    /// another task (or idle) with no `sched_switch` between, the switch was not recorded
    /// (some kernels drop the switch out of idle: on the project VM, every one on CPU 1; a
    /// buffer may also lose events). The switch is put back, at the CPU's previous event or
    /// the task's own (its wakeup, its fork), whichever is later: the earliest it can have
    /// happened. It is counted.
    fn infer_switch(
        &mut self,
        cpu: u32,
        ts: u64,
        current: Option<TaskIdx>,
        seen_before: Option<u64>,
    ) {
        let Some(&known) = self.cpu_curr.get(&cpu) else {
            self.cpu_curr.insert(cpu, current);
            if let Some(c) = current {
                self.on_cpu.insert(c, cpu);
                self.trace.running_at_start.insert(cpu, c);
            }
            return;
        };
        if known == current {
            return;
        }
        let at = self
            .cpu_last
            .get(&cpu)
            .copied()
            .unwrap_or(ts)
            .max(seen_before.unwrap_or(0))
            .min(ts);
        self.trace.stats.inferred_switches += 1;
        if let Some(k) = known {
            self.on_cpu.remove(&k);
        }
        if let Some(c) = current {
            if let Some(other) = self.on_cpu.insert(c, cpu) {
                if other != cpu {
                    self.trace.stats.overlapping_runs += 1;
                    self.cpu_curr.insert(other, None);
                }
            }
        }
        self.cpu_curr.insert(cpu, current);
        self.trace.events.push(Event {
            ts: at,
            cpu,
            kind: EventKind::Switch {
                prev: known,
                prev_state: PrevState::Runnable,
                next: current,
            },
        });
    }

    fn run(mut self, raws: Vec<Raw>, has_waking: bool) -> Trace {
        let mut max_cpu = 0;
        for r in raws {
            max_cpu = max_cpu.max(r.cpu);
            self.now = r.ts;
            // The task running on the CPU: a switch's own prev, else the line's task. (A switch
            // whose prev is not its line's task contradicts itself; its prev is trusted.)
            let running = match &r.kind {
                RawKind::Switch { prev, .. } => {
                    if prev.pid != r.current.pid {
                        self.trace.stats.inconsistent_switches += 1;
                    }
                    prev.clone()
                }
                _ => r.current.clone(),
            };
            // When that task was named before (its switch-in cannot precede that).
            let seen_before = self
                .live
                .get(&running.pid)
                .filter(|&&i| !self.dead[i])
                .map(|&i| self.last_seen[i]);
            let current = self.task(&r.current);
            if let (Some(c), Some(g)) = (current, r.tgid) {
                self.trace.tasks[c].tgid = Some(g);
            }
            let running = if running.pid == r.current.pid {
                current
            } else {
                self.task(&running)
            };
            self.infer_switch(r.cpu, r.ts, running, seen_before);
            self.cpu_last.insert(r.cpu, r.ts);
            let kind = match r.kind {
                RawKind::Switch { prev, state, next } => {
                    let p = self.task(&prev);
                    let n = self.task(&next);
                    if let Some(p) = p {
                        self.on_cpu.remove(&p);
                        if state == PrevState::Dead {
                            self.dead[p] = true;
                        }
                    }
                    if let Some(n) = n {
                        if let Some(other) = self.on_cpu.insert(n, r.cpu) {
                            if other != r.cpu {
                                self.trace.stats.overlapping_runs += 1;
                                self.cpu_curr.insert(other, None);
                            }
                        }
                    }
                    self.cpu_curr.insert(r.cpu, n);
                    EventKind::Switch {
                        prev: p,
                        prev_state: state,
                        next: n,
                    }
                }
                RawKind::Wake { task, cpu, waking } => {
                    if has_waking && !waking {
                        // sched_waking is the one that runs in the waker's context.
                        *self
                            .trace
                            .stats
                            .other_events
                            .entry("sched_wakeup (sched_waking used)".into())
                            .or_default() += 1;
                        self.task(&task);
                        continue;
                    }
                    let Some(t) = self.task(&task) else {
                        continue;
                    };
                    max_cpu = max_cpu.max(cpu);
                    EventKind::Waking {
                        waker: current,
                        task: t,
                        target_cpu: cpu,
                        irq: r.irq,
                    }
                }
                RawKind::WakeupNew { task, cpu } => {
                    let Some(t) = self.task(&task) else { continue };
                    max_cpu = max_cpu.max(cpu);
                    EventKind::WakeupNew {
                        task: t,
                        target_cpu: cpu,
                    }
                }
                RawKind::Fork { parent, child } => {
                    let p = self.task(&parent);
                    if child.pid != 0 {
                        if let Some(&old) = self.live.get(&child.pid) {
                            // The child's PID names a task still alive here: its exit was not
                            // recorded. The PID is reused all the same.
                            self.dead[old] = true;
                        }
                    }
                    let c = self.task(&child);
                    match (p, c) {
                        (Some(parent), Some(child)) => EventKind::Fork { parent, child },
                        _ => continue,
                    }
                }
                RawKind::Exit { task } => match self.task(&task) {
                    Some(t) => EventKind::Exit { task: t },
                    None => continue,
                },
                RawKind::Migrate { task, orig, dest } => match self.task(&task) {
                    Some(t) => {
                        max_cpu = max_cpu.max(orig).max(dest);
                        EventKind::Migrate {
                            task: t,
                            orig_cpu: orig,
                            dest_cpu: dest,
                        }
                    }
                    None => continue,
                },
                RawKind::Freq { cpu, khz } => {
                    self.trace.stats.events += 1;
                    self.trace.events.push(Event {
                        ts: r.ts,
                        cpu,
                        kind: EventKind::CpuFrequency { khz },
                    });
                    continue;
                }
                RawKind::Idle { cpu, state } => {
                    self.trace.stats.events += 1;
                    self.trace.events.push(Event {
                        ts: r.ts,
                        cpu,
                        kind: EventKind::CpuIdle { state },
                    });
                    continue;
                }
                RawKind::Mark { begin, pid, name } => {
                    let t = match pid {
                        0 => current,
                        p => self.task(&Ref {
                            pid: p,
                            comm: None,
                            prio: None,
                        }),
                    };
                    match t {
                        Some(task) => EventKind::LockWait {
                            task,
                            lock: name,
                            begin,
                        },
                        None => continue,
                    }
                }
            };
            self.trace.stats.events += 1;
            self.trace.events.push(Event {
                ts: r.ts,
                cpu: r.cpu,
                kind,
            });
        }
        for t in &mut self.trace.tasks {
            if t.comm.is_empty() {
                t.comm = "<...>".into();
            }
        }
        // Put-back switches sit at their CPU's previous event, which may precede events of
        // other CPUs already pushed.
        self.trace.events.sort_by_key(|e| e.ts);
        self.trace.stats.header_cpus = (self.trace.ncpus > 0).then_some(self.trace.ncpus);
        self.trace.stats.event_cpus = if self.trace.events.is_empty() {
            0
        } else {
            max_cpu + 1
        };
        self.trace.ncpus = self.trace.ncpus.max(max_cpu + 1);
        self.trace.start_ns = self.trace.events.first().map_or(0, |e| e.ts);
        self.trace.end_ns = self.trace.events.last().map_or(0, |e| e.ts);
        self.trace
    }
}

/// The most bytes a compressed trace may unpack to (a gzip file, or the sections and CPU data
/// of a compressed trace.dat, all together): a limit on memory.
pub const MAX_DECOMPRESSED: u64 = 4 << 30;

/// The gzip magic.
const GZIP: [u8; 2] = [0x1f, 0x8b];
/// The zstd frame magic (RFC 8878).
const ZSTD: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Reads a trace file, naming the file in errors: any of the text forms, trace-cmd's binary
/// trace.dat (see [`super::tracedat`]), or either of them gzip- or zstd-compressed.
pub fn load(path: &std::path::Path) -> Result<Trace, String> {
    let bytes = crate::infile::read(path, crate::infile::MAX_TRACE_INPUT, "trace")
        .map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
    parse_bytes(&bytes).map_err(|e| format!("trace {}: {e}", path.display()))
}

/// Reads a trace from its bytes, whatever its form: text, trace.dat, or a gzip or zstd of
/// either.
pub fn parse_bytes(bytes: &[u8]) -> Result<Trace, String> {
    let (inner, how) = if bytes.starts_with(&GZIP) {
        (gunzip(bytes, MAX_DECOMPRESSED)?, "gzip")
    } else if bytes.starts_with(&ZSTD) {
        (unzstd(bytes, MAX_DECOMPRESSED)?, "zstd")
    } else {
        return parse_plain(bytes);
    };
    if inner.starts_with(&GZIP) || inner.starts_with(&ZSTD) {
        return Err(format!(
            "compressed twice ({how}, then again inside); unpack it once"
        ));
    }
    parse_plain(&inner).map_err(|e| format!("({how}-compressed) {e}"))
}

fn parse_plain(bytes: &[u8]) -> Result<Trace, String> {
    if bytes.starts_with(&super::tracedat::MAGIC) {
        return super::tracedat::parse(bytes).map_err(|e| format!("trace.dat: {e}"));
    }
    if bytes.starts_with(b"PERFILE2") {
        return Err(
            "a binary perf.data; convert it with `perf sched script -i FILE > trace.txt`".into(),
        );
    }
    let text = String::from_utf8_lossy(bytes);
    parse(&text).map_err(|e| e.to_string())
}

/// A gzip stream (one member or several, as `cat a.gz b.gz` makes) unpacked, refused past
/// `limit` bytes.
pub fn gunzip(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("not a readable gzip stream: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!(
            "gzip stream unpacks to more than {} GiB, the limit on a trace",
            limit >> 30
        ));
    }
    Ok(out)
}

/// A zstd stream (one frame or several, as `cat a.zst b.zst` makes) unpacked, refused past
/// `limit` bytes.
pub fn unzstd(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut rest: &[u8] = bytes;
    while !rest.is_empty() {
        let room = limit.saturating_add(1).saturating_sub(out.len() as u64);
        let mut frame = ruzstd::decoding::StreamingDecoder::new(&mut rest)
            .map_err(|e| format!("not a readable zstd stream: {e}"))?;
        (&mut frame)
            .take(room)
            .read_to_end(&mut out)
            .map_err(|e| format!("not a readable zstd stream: {e}"))?;
        if out.len() as u64 > limit {
            return Err(format!(
                "zstd stream unpacks to more than {} GiB, the limit on a trace",
                limit >> 30
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACEFS: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 6/6   #P:4
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
            bash-1234    [001] d..4.  5075.957990: sched_waking: comm=sshd pid=880 prio=120 target_cpu=003
            bash-1234    [001] d..5.  5075.957995: sched_wakeup: comm=sshd pid=880 prio=120 target_cpu=003
          <idle>-0       [003] d..2.  5075.958000: sched_switch: prev_comm=swapper/3 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sshd next_pid=880 next_prio=120
            sshd-880     [003] d..2.  5075.958500: sched_switch: prev_comm=sshd prev_pid=880 prev_prio=120 prev_state=S ==> next_comm=swapper/3 next_pid=0 next_prio=120
          <idle>-0       [000] dNh2.  5075.959000: sched_waking: comm=sshd pid=880 prio=120 target_cpu=003
             cc1-4242    [002] d..2  5075.960000: sched_switch: prev_comm=cc1 prev_pid=4242 prev_prio=120 prev_state=R+ ==> next_comm=kworker/2:1 next_pid=88 next_prio=120
";

    /// A header with more CPUs than the events use is believed (an idle CPU is a CPU of the
    /// machine) and both counts are kept for the notes (issue 34: `#P:65536`).
    #[test]
    fn a_header_with_more_cpus_than_the_events_use_is_kept_and_said() {
        let text = TRACEFS.replace("#P:4", "#P:65536");
        let t = parse(&text).unwrap();
        assert_eq!(t.ncpus, 65536);
        assert_eq!(t.stats.header_cpus, Some(65536));
        assert_eq!(
            t.stats.event_cpus, 4,
            "CPU 3 is the highest named (target_cpu)"
        );
        // Events on a CPU above the header's count raise the count.
        let low = TRACEFS.replace("#P:4", "#P:2");
        let t = parse(&low).unwrap();
        assert_eq!((t.ncpus, t.stats.header_cpus), (4, Some(2)));
    }

    #[test]
    fn tracefs_text_becomes_events() {
        let t = parse(TRACEFS).unwrap();
        assert_eq!(t.ncpus, 4);
        // sched_wakeup is not used beside sched_waking.
        assert_eq!(t.events.len(), 5);
        assert_eq!(t.stats.malformed, 0);
        assert_eq!(t.stats.header_lines, 4);
        let sshd = t.tasks.iter().position(|x| x.pid == 880).unwrap();
        let bash = t.tasks.iter().position(|x| x.pid == 1234).unwrap();
        assert_eq!(
            t.events[0].kind,
            EventKind::Waking {
                waker: Some(bash),
                task: sshd,
                target_cpu: 3,
                irq: false
            }
        );
        assert_eq!(t.events[0].ts, 5_075_957_990_000);
        assert!(matches!(
            t.events[2].kind,
            EventKind::Switch {
                prev: Some(p),
                prev_state: PrevState::Sleep,
                next: None
            } if p == sshd
        ));
        // The hardirq flag marks the wakeup as an interrupt's.
        assert!(matches!(
            t.events[3].kind,
            EventKind::Waking {
                waker: None,
                irq: true,
                ..
            }
        ));
        // 4-character flags (older kernels) and R+.
        assert!(matches!(
            t.events[4].kind,
            EventKind::Switch {
                prev_state: PrevState::Runnable,
                ..
            }
        ));
    }

    #[test]
    fn trace_cmd_plugin_and_raw_forms() {
        let text = "\
cpus=2
            bash-29893 [001] 18074.110025: sched_wakeup:         rcu_preempt:15 [120] CPU:001
            bash-29893 [001] 18074.110068: sched_switch:         bash:29893 [120] R ==> rcu_preempt:15 [120]
     rcu_preempt-15    [001] 18074.110080: sched_switch:         rcu_preempt:15 [120] W ==> bash:29893 [120]
 memfd:sealed-91-28848 [000] 18074.110173: sched_switch:         memfd:sealed-91:28848 [120] S ==> swapper/0:0 [120]
     rcu_preempt-15    [001] 18074.110090: sched_switch:          prev_comm=rcu_preempt prev_pid=15 prev_prio=120 prev_state=128 next_comm=bash next_pid=29893 next_prio=120
";
        let t = parse(text).unwrap();
        assert_eq!(t.ncpus, 2);
        assert_eq!(t.stats.malformed, 0, "{:?}", t.stats);
        let memfd = t.tasks.iter().find(|x| x.pid == 28848).unwrap();
        assert_eq!(memfd.comm, "memfd:sealed-91");
        let states: Vec<_> = t
            .events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Switch { prev_state, .. } => Some(prev_state),
                _ => None,
            })
            .collect();
        // The last line has rcu_preempt running on CPU 1 after it switched to bash there:
        // a switch back is put in (as Runnable) and counted.
        assert_eq!(
            states,
            [
                PrevState::Runnable,
                PrevState::Sleep,
                PrevState::Runnable,
                PrevState::Sleep,
                PrevState::Sleep
            ]
        );
        assert_eq!(t.stats.inferred_switches, 1);
        // Out of file order (18074.110090 after .110173): counted, then sorted.
        assert_eq!(t.stats.out_of_order, 1);
        assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    }

    #[test]
    fn perf_script_lines() {
        let text = "\
            perf 29984 [000] 18084.114077: sched:sched_stat_runtime: comm=perf pid=29984 runtime=52769 [ns]
            perf 29984 [000] 18084.114083:       sched:sched_waking: comm=migration/0 pid=18 prio=0 target_cpu=000
            perf 29984 [000] 18084.114089:       sched:sched_switch: prev_comm=perf prev_pid=29984 prev_prio=120 prev_state=D ==> next_comm=migration/0 next_pid=18 next_prio=0
  Web Content 7/8 [001] 18084.114095: sched:sched_migrate_task: comm=perf pid=29984 prio=120 orig_cpu=0 dest_cpu=1
";
        let t = parse(text).unwrap();
        assert_eq!(t.stats.other_events.get("sched_stat_runtime"), Some(&1));
        assert_eq!(t.events.len(), 3);
        let mig = t.tasks.iter().find(|x| x.pid == 18).unwrap();
        assert_eq!(mig.prio, 0);
        // `pid/tid`: the thread is the task, the process its group.
        let web = t.tasks.iter().find(|x| x.pid == 8).unwrap();
        assert_eq!((web.comm.as_str(), web.tgid), ("Web_Content", Some(7)));
        assert!(matches!(
            t.events[1].kind,
            EventKind::Switch {
                prev_state: PrevState::DiskSleep,
                ..
            }
        ));
    }

    #[test]
    fn pid_reuse_unknown_comms_and_cut_edges() {
        let text = "\
rev_state=R ==> next_comm=b next_pid=6 next_prio=120
   x-5 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=6 next_prio=120
   b-6 [000] d..2. 1.000100: sched_process_exit: comm=b pid=6 prio=120 group_dead=true
   b-6 [000] d..2. 1.000200: sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=X ==> next_comm=a next_pid=5 next_prio=120
   a-5 [000] d..2. 1.000300: sched_process_fork: comm=a pid=5 child_comm=<...> child_pid=6
garbage in the middle
   a-5 [000] d..2. 1.000400: sched_wakeup_new: comm=a pid=6 prio=120 target_cpu=001
   a-5 [000] d..2. 1.0005";
        let t = parse(text).unwrap();
        assert_eq!(t.stats.pid_reuse, 1);
        assert_eq!(t.stats.unknown_comms, 1);
        assert_eq!(t.stats.truncated_edges, 2, "{:?}", t.stats);
        assert_eq!(t.stats.malformed, 1);
        assert!(t.stats.malformed_examples[0].starts_with("line 6:"));
        let sixes: Vec<_> = t.tasks.iter().filter(|x| x.pid == 6).collect();
        assert_eq!(sixes.len(), 2);
        // The new incarnation takes its name from the wakeup_new event.
        assert_eq!(sixes[1].comm, "a");
    }

    #[test]
    fn a_switch_out_of_idle_the_kernel_did_not_record_is_put_back() {
        // As on the project VM's CPU 1: woken from idle, the task runs with no sched_switch.
        let text = "\
               a-5       [001] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] dNh2. 1.000010: sched_wakeup: comm=a pid=5 prio=120 target_cpu=001
               a-5       [001] d..3. 1.000015: sched_waking: comm=b pid=6 prio=120 target_cpu=000
               a-5       [001] d..2. 1.000020: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
        let t = parse(text).unwrap();
        assert_eq!(t.stats.inferred_switches, 1);
        assert_eq!(t.stats.inconsistent_switches, 0);
        let f = super::super::figures::figures(&t);
        let a = f.tasks.iter().find(|x| x.pid == 5).unwrap();
        // From the wakeup (the CPU's previous event) to its switch out.
        assert_eq!(a.cpu_ms, 0.010);
        assert_eq!(f.context_switches, 3);
    }

    #[test]
    fn clock_skew_overlap_is_counted() {
        let text = "\
   a-5 [000] d..2. 1.000000: sched_switch: prev_comm=i prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=t next_pid=7 next_prio=120
   b-6 [001] d..2. 1.000100: sched_switch: prev_comm=i prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=t next_pid=7 next_prio=120
";
        let t = parse(text).unwrap();
        assert_eq!(t.stats.overlapping_runs, 1);
    }

    #[test]
    fn lost_events_and_markers_with_an_address() {
        let text = "\
CPU:1 [LOST 12 EVENTS]
   a-5 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=6 next_prio=120
CPU:0 [3 EVENTS DROPPED]
   b-6 [000]   1.000100: print:                0xffffffff81498b1a: B|6|lock x
CPU:0 [EVENTS DROPPED]
   b-6 [000]   1.000200: print:                tracing_mark_write: E|6
   b-6 [000]   1.000300: print:                0xffffffff81498b1a: not|a slice
";
        let t = parse(text).unwrap();
        assert_eq!(t.stats.lost_events, 12 + 3 + 1);
        assert_eq!(t.stats.malformed, 0, "{:?}", t.stats.malformed_examples);
        assert_eq!(t.stats.other_events.get("print"), Some(&1));
        let marks: Vec<_> = t
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::LockWait { lock, begin, .. } => Some((lock.as_str(), *begin)),
                _ => None,
            })
            .collect();
        assert_eq!(marks, [("lock x", true), ("", false)]);
    }

    #[test]
    fn a_zstd_compressed_trace_reads_as_the_text_does() {
        use ruzstd::encoding::{compress_to_vec, CompressionLevel};
        let plain = parse(TRACEFS).unwrap();
        let z = compress_to_vec(TRACEFS.as_bytes(), CompressionLevel::Fastest);
        let t = parse_bytes(&z).unwrap();
        assert_eq!(t.events.len(), plain.events.len());
        // Two frames, as `cat a.zst b.zst` makes: one stream.
        let mut two = z.clone();
        two.extend_from_slice(&compress_to_vec(&b"\n"[..], CompressionLevel::Fastest));
        assert_eq!(parse_bytes(&two).unwrap().events.len(), plain.events.len());
        // Cut short, compressed twice, past the limit: each an error that says so.
        assert!(parse_bytes(&z[..z.len() - 3]).unwrap_err().contains("zstd"));
        let twice = compress_to_vec(&z[..], CompressionLevel::Fastest);
        assert!(parse_bytes(&twice)
            .unwrap_err()
            .contains("compressed twice"));
        assert!(unzstd(&z, 10).unwrap_err().contains("limit"));
    }

    #[test]
    fn nothing_usable_is_an_error() {
        let e = parse("hello\nworld\nfoo\n").unwrap_err();
        assert!(e.to_string().contains("no scheduler events"), "{e}");
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn prev_states() {
        assert_eq!(parse_prev_state("D|K").unwrap(), PrevState::DiskSleep);
        assert_eq!(parse_prev_state("256").unwrap(), PrevState::Runnable);
        assert_eq!(parse_prev_state("0").unwrap(), PrevState::Runnable);
        assert_eq!(parse_prev_state("2").unwrap(), PrevState::DiskSleep);
        assert_eq!(parse_prev_state("16").unwrap(), PrevState::Dead);
        assert!(parse_prev_state("?").is_err());
        assert_eq!(parse_ts("1.5"), Some(1_500_000_000));
        assert_eq!(parse_ts("0.1234567891"), Some(123_456_789));
        assert_eq!(parse_ts("99999999999999999999.0"), None);
    }
}

//! The text forms, line by line: the line layouts of tracefs, `trace-cmd report` and `perf
//! script` (regular expressions), the `key=value` and plugin forms of each sched event, into
//! raw events.

use super::*;

pub(super) fn ftrace_line() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+(?:\(\s*(?P<tgid>\d+|-+)\)\s+)?\[(?P<cpu>\d+)\]\s+(?:(?P<flags>\S{4,5})\s+)?(?P<ts>\d+\.\d+):\s+(?P<event>[A-Za-z_][\w:]*):\s*(?P<args>.*)$",
        )
        .expect("valid regex")
    })
}

/// The syscall tracepoints as tracefs prints them (`print_syscall_enter`/`_exit`,
/// kernel/trace/trace_syscalls.c): `sys_NAME(arg: v, ...)` and `sys_NAME -> 0xRET`, with no
/// `event:` of their own; `trace-cmd report` prints them from their formats as
/// `sys_enter_NAME: arg: 0x..., ...` and `sys_exit_NAME: 0x...`.
fn syscall_line() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?P<head>\s*.*?-\d+\s+(?:\(\s*(?:\d+|-+)\)\s+)?\[\d+\]\s+(?:\S{4,5}\s+)?\d+\.\d+):\s+sys_(?P<name>\w+)(?:\((?P<args>.*)\)|\s+->\s+(?P<ret>0x[0-9a-fA-F]+))\s*$",
        )
        .expect("valid regex")
    })
}

/// A syscall tracepoint's line in tracefs' own form, rewritten into the `event: args` form
/// the other events have (`sys_enter_NAME: args`, `sys_exit_NAME: RET`).
fn syscall_as_event(line: &str) -> Option<String> {
    let c = syscall_line().captures(line)?;
    let (head, name) = (&c["head"], &c["name"]);
    Some(match (c.name("args"), c.name("ret")) {
        (Some(a), _) => format!("{head}: sys_enter_{name}: {}", a.as_str()),
        (_, Some(r)) => format!("{head}: sys_exit_{name}: {}", r.as_str()),
        _ => return None,
    })
}

pub(super) fn perf_line() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^\s*(?P<comm>.*?)\s+(?P<pid>\d+)(?:/(?P<tid>\d+))?\s+\[(?P<cpu>\d+)\]\s+(?P<ts>\d+\.\d+):\s+(?:\d+\s+)?(?P<event>[A-Za-z_][\w:]*):\s*(?P<args>.*)$",
        )
        .expect("valid regex")
    })
}

pub(super) fn key_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=").expect("valid regex"))
}

pub(super) fn plugin_switch() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?P<pc>.*):(?P<pp>\d+) \[(?P<ppr>-?\d+)\] (?P<st>\S+) ==> (?P<nc>.*):(?P<np>\d+) \[(?P<npr>-?\d+)\]\s*$",
        )
        .expect("valid regex")
    })
}

pub(super) fn plugin_wakeup() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?P<c>.*):(?P<p>\d+) \[(?P<pr>-?\d+)\](?: success=\d+)? CPU:(?P<cpu>\d+)\s*$")
            .expect("valid regex")
    })
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
pub(super) fn kv(args: &str) -> HashMap<&str, &str> {
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

pub(super) fn num<T: std::str::FromStr>(m: &HashMap<&str, &str>, k: &str) -> Result<T, String> {
    let v = m.get(k).ok_or_else(|| format!("no `{k}=`"))?;
    v.trim()
        .parse()
        .map_err(|_| format!("`{k}={v}` is not a number in range"))
}

pub(super) fn comm_of(m: &HashMap<&str, &str>, k: &str) -> Option<String> {
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
pub(super) fn parse_event(event: &str, args: &str, ts_cpu: u32) -> Result<Option<RawKind>, String> {
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
        // The syscall tracepoints' arguments are hex: `0x...` from their formats (`trace-cmd
        // report`: `pid: 0x00000000, policy: 0x00000005, ...`); as tracefs prints them
        // (`print_syscall_enter`), `%lx` with no prefix in older kernels and, since a 2025
        // change, `%lu` below 10 and `0x%lx` from 10 on (`pid: 0, policy: 5, param:
        // 0x7ffd...`, this project's 6.18): a bare number is hex in both. The return value is one hex word.
        "sys_enter_sched_setscheduler" => {
            let field = |k: &str| -> Result<u64, String> {
                let v = args
                    .split(',')
                    .find_map(|f| f.trim().strip_prefix(k))
                    .ok_or_else(|| format!("no `{k}`"))?
                    .trim();
                u64::from_str_radix(v.strip_prefix("0x").unwrap_or(v), 16)
                    .map_err(|_| format!("`{k}` is not a hex number: '{v}'"))
            };
            // A PID no task can have (a failing call's -1) names none.
            let pid = u32::try_from(field("pid:")?).unwrap_or(u32::MAX);
            // SCHED_RESET_ON_FORK (0x40000000) rides on the policy.
            let policy = (field("policy:")? & !0x4000_0000) as u32;
            RawKind::SetSchedulerEnter { pid, policy }
        }
        "sys_exit_sched_setscheduler" => {
            let v = args.trim().trim_start_matches("0x");
            let ret = u64::from_str_radix(v, 16)
                .map_err(|_| format!("the return value is not a hex number: '{}'", args.trim()))?
                as i64;
            RawKind::SetSchedulerExit { ret }
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
pub(super) enum Line {
    Header(Option<u32>),
    /// `CPU:1 [LOST 12 EVENTS]` (tracefs), `CPU:1 [12 EVENTS DROPPED]` (`trace-cmd report`).
    Lost(u64),
    Event(Box<Raw>),
    Other(String),
}

pub(super) fn parse_line(line: &str) -> Result<Line, String> {
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
    let native = if line.contains(": sys_") {
        syscall_as_event(line)
    } else {
        None
    };
    let line = native.as_deref().unwrap_or(line);
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
    // The depth is a hex digit, '.' for 0 (`trace_print_lat_fmt`, kernel/trace/trace_output.c).
    let depth = g("flags").chars().nth(3).and_then(|c| match c {
        '.' => Some(0),
        c => c.to_digit(16).map(|d| d as u8),
    });
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
                depth,
                kind,
            })))
        }
        None => Ok(Line::Other(
            event.strip_prefix("sched:").unwrap_or(event).to_string(),
        )),
    }
}

/// A header's CPU count, if it is one a machine can have.
pub(super) fn header_cpus(n: Option<u32>) -> Result<Line, String> {
    match n {
        Some(c) if c == 0 || c > 65_536 => Err(format!(
            "a header gives {c} CPUs (a machine has 1 to 65536)"
        )),
        c => Ok(Line::Header(c)),
    }
}

//! Workload files: task groups and their programs in TOML.
//!
//! ```toml
//! name = "ring"                 # optional; default: the file name
//! throughput = "hops/s"         # unit of the `count` statement's figure (default "ops/s")
//!
//! [[channel]]
//! name = "pipe"
//! count = 4                     # pipe.0 .. pipe.3
//! kind = "pipe"                 # pipe | socket | tcp | semaphore | condvar | timer | task-timer
//!                               # (socket: 2.4's loopback TCP, its reader woken without
//!                               # WF_SYNC; tcp: today's, woken with WF_SYNC; same costs)
//! capacity = 64                 # messages; omit for unbounded
//!
//! [[group]]
//! name = "member"
//! count = 4                     # tasks started at time 0, 0..=1000000 (0: a template for `fork`)
//! nice = 0                      # -20..=19
//! policy = "normal"             # normal | batch | idle | fifo | rr | deadline
//! # rt_priority = 50            # 1..=99: required with fifo/rr, refused with normal/batch/idle
//! # dl_runtime = "2ms"          # deadline: the reservation (sched_attr's sched_runtime,
//! # dl_deadline = "10ms"        # sched_deadline, sched_period; the period defaults to the
//! # dl_period = "10ms"          # deadline), required with it and refused without it
//! # dl_reclaim = false          # deadline: SCHED_FLAG_RECLAIM (GRUB)
//! # slice = "3ms"               # sched_attr.sched_runtime: the slice it asks for, 0.1..=100 ms
//!                               # (EEVDF of 6.12+ honours it; other classes ignore it)
//! # uclamp = [0, 30]            # utilisation clamps min, max in percent, as cgroup v2's
//!                               # cpu.uclamp.min/max (eevdf:era=6.18 on a hybrid machine)
//! affinity = [0, 1]             # CPUs; default all
//! working_set_kb = 16
//! mm_pages = 300                # resident pages of its address space (fork/exec/exit model)
//! threads = false               # true: the group's tasks share one address space
//! interactive = false           # report this group's wakeup latency separately
//! background = false            # the run does not wait for these tasks to end
//! # start = "10s"               # the group's tasks start at 10 s instead of at 0
//! # renice = ["20s/19"]         # at 20 s, renice every live task running this group's program
//! #                             # (those forked from it too) to 19, from outside, as `renice`
//! #                             # at a shell would: not the task itself
//! # chpolicy = ["30s/idle"]     # at 30 s, `chrt -p`: normal, batch, idle, fifo:PRIO, rr:PRIO
//! program = [
//!   "loop forever",
//!   "recv pipe.{i-1}",          # {i} is the task's index in its group, taken modulo the count;
//!                               # the group's tasks share this one program
//!   "compute exp(50us)",
//!   "count",
//!   "send pipe.{i}",
//!   "end",
//! ]
//! ```
//!
//! Statements: `compute D`, `touch`, `sleep D`, `io D` (uninterruptible; both take
//! `irq-on N`: the interrupt that ends the sleep runs on CPU N, as a replayed trace's
//! recorded one did, instead of on the sleeper's own CPU), `yield`,
//! `send CH` (`send CH sync`: the reader is woken with WF_SYNC, as a replayed trace's exiting
//! child wakes its parent in `wait()`), `recv CH`, `fork GROUP`, `thread GROUP`, `exec`, `shell`, `wait`, `exit`,
//! `nice N`, `policy P [PRIO]`, `affinity 0,2`, `affinity-next`, `stamp`, `spin-until D ID`,
//! `audio-write PERIOD BUFFER`, `dirty N` (write the first N pages of the address space),
//! `lock L`, `unlock L`, `kwork D` (non-preemptible kernel work), `count`,
//! `cond-wait C L`, `cond-signal C`, `cond-broadcast C` (pthread condition variables on a
//! `condvar` channel: a signal with no waiter is lost), `timer T PERIOD [relative|absolute|cyclic]`
//! (rt-app's periodic timer on a `timer` channel, shared by the tasks that use it, or a
//! `task-timer`, one per task; `cyclic` is cyclictest's loop: absolute expiries, missed ones
//! skipped, and how late each wakeup ran recorded as the run's probe latency; a timer is
//! anchored where it is first used, its first expiry one period after the first `timer`
//! statement that reaches it: to phase a periodic task, start its group later with `start`),
//! `loop N|forever` ... `end`.
//!
//! Sleeping locks:
//!
//! ```toml
//! [[lock]]
//! name = "bkl"
//! kind = "bkl"                  # semaphore | mutex | bkl (a semaphore of count 1)
//! mode = "run"                  # handoff | opportunistic | run (follow --lock-mode, default)
//! count = 1                     # semaphores
//! spin = false                  # mutexes: spin while the owner runs (2.6.30)
//! ``` `D` is a duration or a
//! distribution: `5ms`, `exp(10ms)`, `uniform(1ms,5ms)`, `lognormal(100ms,0.5)`.

mod stmt;
#[cfg(test)]
mod tests;

use super::limits::{MAX_CHANNELS, MAX_LOOP_DEPTH, MAX_PROGRAM_OPS, MAX_TASKS, MAX_TOTAL_OPS};
use super::{
    parse_dist_with_unit as parse_dist, parse_duration_with_unit as parse_duration, AttrChange,
    ChanKind, ChannelSpec, KernelWork, LockMode, LockSpec, Op, ProgramBuilder, ProgramSource,
    TaskSpec, Workload, WorkloadError,
};
use crate::task::{CpuMask, SchedPolicy, NICE_MAX, NICE_MIN, RT_PRIO_MAX, RT_PRIO_MIN};
use serde::Deserialize;
use stmt::*;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: Option<String>,
    throughput: Option<String>,
    #[serde(default)]
    channel: Vec<Spanned<ChannelEntry>>,
    #[serde(default)]
    group: Vec<Spanned<GroupEntry>>,
    #[serde(default)]
    lock: Vec<Spanned<LockEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LockEntry {
    name: String,
    /// semaphore | mutex | bkl
    kind: String,
    /// Semaphore count (default 1).
    count: Option<u32>,
    /// handoff | opportunistic | run (follow --lock-mode; the default)
    mode: Option<String>,
    /// Mutex: spin while the owner runs.
    #[serde(default)]
    spin: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChannelEntry {
    name: String,
    /// Numbers are read wide and checked here, so that an error names the field's line.
    count: Option<Spanned<i64>>,
    #[serde(default = "pipe")]
    kind: String,
    capacity: Option<Spanned<i64>>,
}

fn pipe() -> String {
    "pipe".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupEntry {
    name: String,
    count: Option<Spanned<i64>>,
    nice: Option<Spanned<i64>>,
    policy: Option<Spanned<String>>,
    rt_priority: Option<Spanned<i64>>,
    slice: Option<Spanned<String>>,
    dl_runtime: Option<Spanned<String>>,
    dl_deadline: Option<Spanned<String>>,
    dl_period: Option<Spanned<String>>,
    dl_reclaim: Option<Spanned<bool>>,
    uclamp: Option<Spanned<Vec<i64>>>,
    affinity: Option<Spanned<Vec<i64>>>,
    working_set_kb: Option<Spanned<i64>>,
    mm_pages: Option<Spanned<i64>>,
    start: Option<Spanned<String>>,
    #[serde(default)]
    renice: Vec<Spanned<String>>,
    #[serde(default)]
    chpolicy: Vec<Spanned<String>>,
    #[serde(default)]
    threads: bool,
    #[serde(default)]
    interactive: bool,
    #[serde(default)]
    background: bool,
    program: Vec<Spanned<String>>,
}

/// A group's `SCHED_DEADLINE` reservation: `dl_runtime`, `dl_deadline` (required with policy
/// deadline), `dl_period` (default: the deadline), `dl_reclaim`; each refused with another
/// policy. Checked as `__checkparam_dl` does; admission control is the run's (it depends on
/// the machine's CPUs).
fn dl_params(
    g: &GroupEntry,
    policy: SchedPolicy,
    gat: usize,
    err: &dyn Fn(usize, String) -> WorkloadError,
) -> Result<Option<crate::task::DlParams>, WorkloadError> {
    let keys = [
        ("dl_runtime", &g.dl_runtime),
        ("dl_deadline", &g.dl_deadline),
        ("dl_period", &g.dl_period),
    ];
    if !policy.is_dl() {
        for (k, v) in keys {
            if let Some(v) = v {
                return Err(err(
                    v.span().start,
                    format!("group '{}': {k} needs policy deadline", g.name),
                ));
            }
        }
        if let Some(v) = &g.dl_reclaim {
            return Err(err(
                v.span().start,
                format!("group '{}': dl_reclaim needs policy deadline", g.name),
            ));
        }
        return Ok(None);
    }
    let at = g.policy.as_ref().map_or(gat, |p| p.span().start);
    let mut ns = [0u64; 3];
    for (i, (k, v)) in keys.iter().enumerate() {
        match v {
            Some(v) => {
                ns[i] = parse_duration(v.get_ref())
                    .map_err(|e| err(v.span().start, format!("group '{}': {k}: {e}", g.name)))?;
            }
            None if i < 2 => {
                return Err(err(
                    at,
                    format!(
                        "group '{}': policy deadline needs dl_runtime and dl_deadline (dl_period defaults to the deadline)",
                        g.name
                    ),
                ))
            }
            None => {}
        }
    }
    let p = crate::task::DlParams {
        runtime_ns: ns[0],
        deadline_ns: ns[1],
        period_ns: ns[2],
        reclaim: g.dl_reclaim.as_ref().is_some_and(|r| *r.get_ref()),
    }
    .check()
    .map_err(|e| err(at, format!("group '{}': {e}", g.name)))?;
    Ok(Some(p))
}

/// Reads and parses a workload file.
pub fn load(path: &str) -> Result<Workload, WorkloadError> {
    let text = crate::infile::read_to_string(
        std::path::Path::new(path),
        crate::infile::MAX_TEXT_INPUT,
        "workload file",
    )
    .map_err(|e| WorkloadError::Io {
        path: path.into(),
        problem: e.to_string(),
    })?;
    let stem = std::path::Path::new(path)
        .file_stem()
        .map_or("workload".into(), |s| s.to_string_lossy().into_owned());
    parse_str(&text, path, &stem)
}

/// Where each line of a text starts, so that the line of any offset is a binary search
/// (a program of a million statements asks a million times).
struct LineIndex(Vec<usize>);

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        LineIndex(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i)
                .collect(),
        )
    }

    /// The 1-based line of byte `offset`.
    fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&nl| nl < offset) + 1
    }
}

/// Parses workload-file text; `path` names it in errors.
pub fn parse_str(text: &str, path: &str, default_name: &str) -> Result<Workload, WorkloadError> {
    let index = LineIndex::new(text);
    let line_of = |_: &str, offset: usize| index.line(offset);
    let err = |offset: usize, problem: String| WorkloadError::File {
        path: path.into(),
        line: line_of(text, offset),
        problem,
    };
    let spec: FileSpec = toml::from_str(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        err(at, e.message().to_string())
    })?;
    if spec.group.is_empty() {
        return Err(err(
            text.len(),
            "no [[group]]: a workload needs at least one task group".into(),
        ));
    }

    // A number field read wide, checked against its range where it stands.
    let ranged = |f: &Spanned<i64>, what: &str, lo: i64, hi: i64| -> Result<i64, WorkloadError> {
        let v = *f.get_ref();
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(err(
                f.span().start,
                format!("{what} {v} is outside {lo}..={hi}"),
            ))
        }
    };

    // Channels: name -> (first id, count).
    let mut channels: Vec<(String, u32, u32)> = Vec::new();
    let mut chan_specs = Vec::new();
    let mut nchannels = 0i64;
    for c in &spec.channel {
        let at = c.span().start;
        let c = c.get_ref();
        let kind = match c.kind.as_str() {
            "pipe" => ChanKind::Pipe,
            "socket" => ChanKind::Socket,
            "tcp" => ChanKind::Tcp,
            "semaphore" => ChanKind::Semaphore,
            "condvar" => ChanKind::CondVar,
            "timer" => ChanKind::Timer,
            "task-timer" => ChanKind::TaskTimer,
            k => {
                return Err(err(
                    at,
                    format!(
                        "channel '{}': kind '{k}' (use pipe, socket, tcp, semaphore, condvar, timer, task-timer)",
                        c.name
                    ),
                ))
            }
        };
        if !kind.carries_messages() {
            if let Some(cap) = &c.capacity {
                return Err(err(
                    cap.span().start,
                    format!(
                        "channel '{}': a {} holds no messages, so no capacity",
                        c.name, c.kind
                    ),
                ));
            }
        }
        let count = match &c.count {
            None => 1,
            Some(n) => ranged(
                n,
                &format!("channel '{}': count", c.name),
                1,
                MAX_CHANNELS as i64,
            )?,
        };
        nchannels += count;
        if nchannels > MAX_CHANNELS as i64 {
            return Err(err(
                c.count.as_ref().map_or(at, |n| n.span().start),
                format!(
                    "channel '{}': {nchannels} channels in all, more than the limit of {MAX_CHANNELS}",
                    c.name
                ),
            ));
        }
        let capacity = match &c.capacity {
            None => None,
            Some(n) => Some(ranged(
                n,
                &format!("channel '{}': capacity", c.name),
                1,
                u32::MAX as i64,
            )? as u32),
        };
        if channels.iter().any(|(n, _, _)| *n == c.name) {
            return Err(err(at, format!("channel '{}' is defined twice", c.name)));
        }
        channels.push((c.name.clone(), chan_specs.len() as u32, count as u32));
        for _ in 0..count {
            chan_specs.push(ChannelSpec { kind, capacity });
        }
    }

    let mut locks: Vec<(String, LockSpec)> = Vec::new();
    for l in &spec.lock {
        let at = l.span().start;
        let l = l.get_ref();
        if locks.iter().any(|(n, _)| *n == l.name) {
            return Err(err(at, format!("lock '{}' is defined twice", l.name)));
        }
        let mode = match l.mode.as_deref() {
            None | Some("run") => None,
            Some(m) => {
                Some(LockMode::parse(m).map_err(|e| err(at, format!("lock '{}': {e}", l.name)))?)
            }
        };
        let lspec = match l.kind.as_str() {
            "semaphore" => {
                let count = l.count.unwrap_or(1);
                if count == 0 {
                    return Err(err(
                        at,
                        format!("lock '{}': count must be at least 1", l.name),
                    ));
                }
                LockSpec::Semaphore { count, mode }
            }
            "bkl" => LockSpec::Semaphore { count: 1, mode },
            "mutex" => {
                if l.count.is_some() || l.mode.is_some() {
                    return Err(err(
                        at,
                        format!("lock '{}': a mutex takes no count or mode", l.name),
                    ));
                }
                LockSpec::Mutex { spin: l.spin }
            }
            k => {
                return Err(err(
                    at,
                    format!("lock '{}': kind '{k}' (use semaphore, mutex, bkl)", l.name),
                ))
            }
        };
        if l.spin && !matches!(lspec, LockSpec::Mutex { .. }) {
            return Err(err(at, format!("lock '{}': only a mutex spins", l.name)));
        }
        locks.push((l.name.clone(), lspec));
    }
    let lock_names: Vec<&str> = locks.iter().map(|(n, _)| n.as_str()).collect();

    let group_names: Vec<&str> = spec
        .group
        .iter()
        .map(|g| g.get_ref().name.as_str())
        .collect();
    for (i, n) in group_names.iter().enumerate() {
        if group_names[..i].contains(n) {
            return Err(err(
                spec.group[i].span().start,
                format!("group '{n}' is defined twice"),
            ));
        }
    }

    let mut w = Workload {
        name: spec
            .name
            .clone()
            .unwrap_or_else(|| default_name.to_string()),
        programs: Vec::new(),
        channels: chan_specs,
        tasks: Vec::new(),
        throughput_unit: spec.throughput.clone().unwrap_or_else(|| "ops/s".into()),
        per_op_label: None,
        rtmigrate: None,
        locks: locks.clone(),
        throughput_scale: 1.0,
        changes: Vec::new(),
    };

    // One program per group, shared by its tasks (group g runs program g); `{i}` in a
    // channel name is resolved when a task runs, from its index in the group.
    let prog_base: Vec<u32> = (0..spec.group.len() as u32).collect();

    let mut mm_next = 0u32;
    let mut ntasks = 0i64;
    let mut total_ops = 0u64;
    for g in spec.group.iter() {
        let gat = g.span().start;
        let g = g.get_ref();
        let count = match &g.count {
            None => 1,
            Some(n) => ranged(
                n,
                &format!("group '{}': count", g.name),
                0,
                MAX_TASKS as i64,
            )?,
        } as u32;
        ntasks += count as i64;
        if ntasks > MAX_TASKS as i64 {
            return Err(err(
                g.count.as_ref().map_or(gat, |n| n.span().start),
                format!(
                    "group '{}': {ntasks} tasks in all, more than the limit of {MAX_TASKS}",
                    g.name
                ),
            ));
        }
        let nice = match &g.nice {
            None => 0,
            Some(n) => ranged(
                n,
                &format!("group '{}': nice", g.name),
                NICE_MIN as i64,
                NICE_MAX as i64,
            )?,
        } as i32;
        // sched_attr.sched_runtime: __setparam_fair clamps it to 0.1..100 ms; a value
        // outside is refused here rather than changed without a word.
        // cpu.uclamp.min/max: percentages (cpu_uclamp_write refuses above 100); a min above
        // the max is refused here (the kernel would cap the min at the max).
        let uclamp = match &g.uclamp {
            None => [0, 100],
            Some(u) => match u.get_ref()[..] {
                [min, max] if (0..=100).contains(&min) && (0..=100).contains(&max) && min <= max => {
                    [min as u8, max as u8]
                }
                _ => {
                    return Err(err(
                        u.span().start,
                        format!(
                            "group '{}': uclamp {:?} must be [min, max] in percent, 0 <= min <= max <= 100",
                            g.name,
                            u.get_ref()
                        ),
                    ))
                }
            },
        };
        let slice_ns = match &g.slice {
            None => None,
            Some(s) => {
                let ns = parse_duration(s.get_ref())
                    .map_err(|e| err(s.span().start, format!("group '{}': slice: {e}", g.name)))?;
                if !(100_000..=100_000_000).contains(&ns) {
                    return Err(err(
                        s.span().start,
                        format!(
                            "group '{}': slice {} is outside 0.1..=100 ms (the kernel's clamp of sched_runtime)",
                            g.name,
                            s.get_ref()
                        ),
                    ));
                }
                Some(ns)
            }
        };
        let policy = match &g.policy {
            None => SchedPolicy::Normal,
            Some(p) => SchedPolicy::parse(p.get_ref()).ok_or_else(|| {
                err(
                    p.span().start,
                    format!(
                        "group '{}': policy '{}' (use normal, batch, idle, fifo, rr, deadline)",
                        g.name,
                        p.get_ref()
                    ),
                )
            })?,
        };
        let dl = dl_params(g, policy, gat, &err)?;
        let rt_priority = match (&g.rt_priority, policy.is_rt()) {
            (Some(r), true) => ranged(
                r,
                &format!("group '{}': rt_priority", g.name),
                RT_PRIO_MIN as i64,
                RT_PRIO_MAX as i64,
            )? as u8,
            (Some(r), false) => {
                return Err(err(
                    r.span().start,
                    format!(
                        "group '{}': rt_priority needs policy fifo or rr (the policy is {})",
                        g.name,
                        g.policy.as_ref().map_or("normal", |p| p.get_ref().as_str())
                    ),
                ))
            }
            (None, true) => {
                return Err(err(
                    g.policy.as_ref().map_or(gat, |p| p.span().start),
                    format!(
                        "group '{}': policy {} needs rt_priority 1..=99",
                        g.name,
                        g.policy.as_ref().map_or("", |p| p.get_ref().as_str())
                    ),
                ))
            }
            (None, false) => 0,
        };
        let start_ns = match &g.start {
            None => 0,
            Some(s) if count == 0 => {
                return Err(err(
                    s.span().start,
                    format!(
                        "group '{}': start needs tasks to start (count = 0 makes the group a template for `fork`, whose copies start when they are forked)",
                        g.name
                    ),
                ))
            }
            Some(s) => parse_duration(s.get_ref())
                .map_err(|e| err(s.span().start, format!("group '{}': start: {e}", g.name)))?,
        };
        let mut changes = Vec::new();
        for (key, list, parse) in [
            (
                "renice",
                &g.renice,
                AttrChange::parse_renice as fn(&str) -> Result<AttrChange, String>,
            ),
            ("chpolicy", &g.chpolicy, AttrChange::parse_chpolicy),
        ] {
            for v in list {
                let c = parse(v.get_ref())
                    .map_err(|e| err(v.span().start, format!("group '{}': {key}: {e}", g.name)))?;
                if c.at_ns < start_ns {
                    return Err(err(
                        v.span().start,
                        format!(
                            "group '{}': {key} '{}' comes before the group starts (start = \"{}\")",
                            g.name,
                            v.get_ref(),
                            g.start.as_ref().map_or("", |s| s.get_ref().as_str())
                        ),
                    ));
                }
                changes.push(c);
            }
        }
        let working_set_kb = match &g.working_set_kb {
            None => 0,
            Some(n) => ranged(
                n,
                &format!("group '{}': working_set_kb", g.name),
                0,
                1 << 30,
            )?,
        } as u32;
        let mm_pages = match &g.mm_pages {
            None => 0,
            Some(n) => ranged(n, &format!("group '{}': mm_pages", g.name), 0, 1 << 20)?,
        } as u32;
        let affinity = match &g.affinity {
            None => None,
            Some(cpus) => {
                let at = cpus.span().start;
                if cpus.get_ref().is_empty() {
                    return Err(err(
                        at,
                        format!("group '{}': affinity lists no CPU", g.name),
                    ));
                }
                let mut m = CpuMask::empty();
                for &c in cpus.get_ref() {
                    if !(0..CpuMask::MAX_CPUS as i64).contains(&c) {
                        return Err(err(
                            at,
                            format!(
                                "group '{}': CPU {c} is outside 0..{}",
                                g.name,
                                CpuMask::MAX_CPUS
                            ),
                        ));
                    }
                    m.set(c as usize);
                }
                Some(m)
            }
        };
        let mut b = ProgramBuilder::new();
        let mut lines: Vec<u32> = Vec::new();
        let chan_kinds: Vec<ChanKind> = w.channels.iter().map(|c| c.kind).collect();
        for stmt in &g.program {
            let sat = stmt.span().start;
            parse_stmt(
                stmt.get_ref(),
                &channels,
                &chan_kinds,
                &group_names,
                &lock_names,
                &prog_base,
                &mut b,
            )
            .map_err(|p| err(sat, format!("'{}': {p}", stmt.get_ref())))?;
            lines.resize(b.len(), line_of(text, sat) as u32);
            if b.len() as u64 > MAX_PROGRAM_OPS {
                return Err(err(
                    sat,
                    format!(
                        "group '{}': more than {MAX_PROGRAM_OPS} statements in one program",
                        g.name
                    ),
                ));
            }
        }
        if b.open_loops() > 0 {
            let at = g.program.last().map_or(gat, |s| s.span().start);
            return Err(err(
                at,
                format!(
                    "group '{}': {} loop(s) not closed with 'end'",
                    g.name,
                    b.open_loops()
                ),
            ));
        }
        total_ops += b.len() as u64;
        if total_ops > MAX_TOTAL_OPS {
            return Err(err(
                gat,
                format!("the programs have more than {MAX_TOTAL_OPS} statements together"),
            ));
        }
        let mut prog = b
            .build(g.name.clone())
            .with_working_set(working_set_kb)
            .with_mm_pages(mm_pages);
        prog.source = Some(ProgramSource {
            path: path.to_string(),
            lines,
        });
        let prog_id = w.programs.len() as u32;
        w.programs.push(prog);
        let shared_mm = mm_next;
        // Where an error about the task found at run time points: its affinity (the one
        // field only the machine can check), else the group.
        let origin = format!(
            "{path} line {}",
            line_of(text, g.affinity.as_ref().map_or(gat, |a| a.span().start))
        );
        for i in 0..count {
            let mut t = TaskSpec::new(prog_id);
            t.nice = nice;
            t.slice_ns = slice_ns;
            t.uclamp_pct = uclamp;
            t.policy = policy;
            t.rt_priority = rt_priority;
            t.dl = dl;
            t.affinity = affinity;
            t.mm = if g.threads { shared_mm } else { mm_next + i };
            t.interactive = g.interactive;
            t.background = g.background;
            t.member = i;
            t.origin = Some(origin.clone());
            t.start_ns = start_ns;
            w.tasks.push(t);
        }
        for change in changes {
            w.changes.push(super::GroupChange {
                change,
                progs: vec![prog_id],
            });
        }
        mm_next += count.max(1);
    }
    if w.tasks.is_empty() {
        return Err(err(
            text.len(),
            "every group has count = 0: nothing starts".into(),
        ));
    }
    // Applied in time order; two at the same time in the order written.
    w.changes.sort_by_key(|c| c.change.at_ns);
    w.validate().map_err(|p| err(0, p))?;
    Ok(w)
}

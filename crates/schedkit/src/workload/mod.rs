//! Workloads: groups of tasks running programs, connected by channels.
//!
//! A workload is given either as a built-in spec (`chat:rooms=10,messages=1000`, see
//! [`builtin`]) or as a TOML file (see [`file`](mod@file)). Several can run side by side, joined with `+`
//! (`makej:jobs=16+interactive`): the first one's figure is the run's throughput, and tasks
//! marked interactive report their own wakeup latency.

pub mod builtin;
pub mod file;
pub mod program;
pub mod rtapp;

/// What a workload may ask of the simulator, checked before a run starts (so that a typo
/// is an error message, not an exhausted machine). Each error names the limit.
pub mod limits {
    /// Tasks alive at once: those a workload starts, and those forked while it runs.
    pub const MAX_TASKS: u64 = 1_000_000;
    /// Channels (pipes, sockets, semaphores), counting every member of an array.
    pub const MAX_CHANNELS: u64 = 1_000_000;
    /// Statements in one program.
    pub const MAX_PROGRAM_OPS: u64 = 1_000_000;
    /// Statements in all programs of a workload together.
    pub const MAX_TOTAL_OPS: u64 = 20_000_000;
    /// Loops nested inside each other.
    pub const MAX_LOOP_DEPTH: usize = 1_000;
    /// Memory a run may need for its tasks, channels and programs, bytes (the simulator
    /// estimates it from the workload before it starts).
    pub const MAX_RUN_MEMORY: u64 = 4 << 30;
}

pub use program::{
    ChanId, Dist, KernelWork, Op, ProgId, Program, ProgramBuilder, ProgramSource, TaskRng,
};

use crate::task::{CpuMask, SchedPolicy};

// The semaphore's discipline belongs to the sleeping locks (`crate::sleeplock`); a workload
// names it, so `workload::LockMode` stays its path here too.
pub use crate::sleeplock::LockMode;

/// A sleeping lock the workload's tasks take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockSpec {
    /// A counting semaphore; `mode: None` follows the run's `--lock-mode`.
    Semaphore { count: u32, mode: Option<LockMode> },
    /// A mutex, optionally spinning while its owner runs.
    Mutex { spin: bool },
}

/// What a channel stands for, which prices its send and receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChanKind {
    /// A pipe (lat_ctx, lat_pipe).
    Pipe,
    /// A loopback TCP socket (chat), woken as 2.4 woke one: `sock_def_readable` called
    /// `wake_up_interruptible`, not a sync wakeup.
    Socket,
    /// A loopback TCP socket of today's kernels (tbench, netperf TCP_RR): priced as `Socket`,
    /// but the reader is woken with WF_SYNC, as `sock_def_readable` has done since 2.6.3x
    /// (`wake_up_interruptible_sync_poll`, net/core/sock.c of v6.18), in the sender's
    /// context (the loopback device's receive softirq runs on the sending CPU).
    Tcp,
    /// A counting semaphore: up/down cost a system call and no data copy.
    Semaphore,
    /// A condition variable (`pthread_cond_*`): a signal with no waiter is lost. Used with
    /// `Op::CondWait` / `Op::CondSignal` only.
    CondVar,
    /// A periodic timer shared by every task that uses it (rt-app's named timers), for
    /// `Op::Timer` only.
    Timer,
    /// A periodic timer of which each task has its own (rt-app's `unique` timers).
    TaskTimer,
}

impl ChanKind {
    /// Carries messages (`send`/`recv`), as opposed to a condition variable or a timer.
    pub fn carries_messages(self) -> bool {
        matches!(
            self,
            ChanKind::Pipe | ChanKind::Socket | ChanKind::Tcp | ChanKind::Semaphore
        )
    }

    pub fn is_timer(self) -> bool {
        matches!(self, ChanKind::Timer | ChanKind::TaskTimer)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChannelSpec {
    pub kind: ChanKind,
    /// Messages it holds before a sender blocks (`None`: unbounded).
    pub capacity: Option<u32>,
}

/// One task present when the workload starts.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskSpec {
    pub prog: ProgId,
    pub nice: i32,
    pub policy: SchedPolicy,
    pub rt_priority: u8,
    /// The slice it asks for (`sched_attr.sched_runtime`), where not the default.
    pub slice_ns: Option<u64>,
    /// The `SCHED_DEADLINE` reservation, for a task of that policy.
    pub dl: Option<crate::task::DlParams>,
    /// Its utilisation clamps, min and max, in whole percent (cgroup v2's
    /// `cpu.uclamp.min`/`max`); [0, 100] is no clamp.
    pub uclamp_pct: [u8; 2],
    pub affinity: Option<CpuMask>,
    /// Address-space id: tasks with the same value are threads of one process.
    pub mm: u32,
    /// Its wakeups are reported separately as the interactive latency.
    pub interactive: bool,
    /// The run does not wait for it to finish (it loops forever beside the others).
    pub background: bool,
    /// Which of the `+`-joined workloads it belongs to (0 = the one whose throughput counts).
    pub part: usize,
    /// Its index in its group: `{i}` in the channel names of a shared program.
    pub member: u32,
    /// Where it was defined ("file.toml line 12"), for errors found when the machine is known.
    pub origin: Option<String>,
    /// When it starts, ns from the run's start (0: present from the start). A task started
    /// later is created then by an agent outside the model (its creator's own work is not
    /// charged; the kernel's placing of a new task is, on the CPU it is created on).
    pub start_ns: u64,
}

/// A change made from outside, at a given time, to every live task running one of some
/// programs (a workload file's group, forked copies included; every program of a built-in):
/// the user running `renice` or `chrt -p` on each of their pids at a shell.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupChange {
    pub change: AttrChange,
    /// The programs whose tasks it changes.
    pub progs: Vec<ProgId>,
}

/// A change of a live task's nice level or policy made from outside at a given time (the
/// user running `renice -n N -p PID` or `chrt -p`, not the task itself).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttrChange {
    /// When, ns from the run's start.
    pub at_ns: u64,
    pub to: AttrTo,
}

/// What an [`AttrChange`] sets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AttrTo {
    Nice(i32),
    /// A policy and its RT priority (0 for the non-RT policies).
    Policy(SchedPolicy, u8),
}

impl AttrChange {
    /// `T/N`: at time `T`, nice `N` (`20s/5`).
    pub fn parse_renice(v: &str) -> Result<AttrChange, String> {
        let (at, n) = v
            .split_once('/')
            .ok_or_else(|| format!("'{v}' is not TIME/NICE (e.g. 20s/5)"))?;
        let at_ns = parse_duration_with_unit(at.trim())?;
        let nice: i32 = n
            .trim()
            .parse()
            .map_err(|_| format!("'{}' is not a nice level", n.trim()))?;
        if !(crate::task::NICE_MIN..=crate::task::NICE_MAX).contains(&nice) {
            return Err(format!("nice {nice} is outside -20..=19"));
        }
        Ok(AttrChange {
            at_ns,
            to: AttrTo::Nice(nice),
        })
    }

    /// `T/P`: at time `T`, policy `P` (`normal`, `batch`, `idle`, `fifo:PRIO`, `rr:PRIO`;
    /// `30s/idle`, `5s/fifo:50`).
    pub fn parse_chpolicy(v: &str) -> Result<AttrChange, String> {
        let (at, p) = v
            .split_once('/')
            .ok_or_else(|| format!("'{v}' is not TIME/POLICY (e.g. 20s/idle, 5s/fifo:50)"))?;
        let at_ns = parse_duration_with_unit(at.trim())?;
        let (name, prio) = match p.trim().split_once(':') {
            Some((n, pr)) => (n, Some(pr)),
            None => (p.trim(), None),
        };
        let policy = SchedPolicy::parse(name).ok_or_else(|| {
            format!("policy '{name}' (use normal, batch, idle, fifo:PRIO or rr:PRIO)")
        })?;
        if policy.is_dl() {
            return Err(
                "chpolicy to deadline is not supported (a reservation needs runtime, deadline and \
                 period); give the group policy = \"deadline\" instead"
                    .into(),
            );
        }
        let rt_priority = match (policy.is_rt(), prio) {
            (true, Some(pr)) => {
                let n: u8 = pr
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| (crate::task::RT_PRIO_MIN..=crate::task::RT_PRIO_MAX).contains(n))
                    .ok_or_else(|| format!("RT priority '{pr}' is not within 1..=99"))?;
                n
            }
            (true, None) => return Err(format!("{name} needs a priority: {name}:PRIO (1..=99)")),
            (false, Some(_)) => return Err(format!("{name} takes no priority")),
            (false, None) => 0,
        };
        Ok(AttrChange {
            at_ns,
            to: AttrTo::Policy(policy, rt_priority),
        })
    }

    /// The form the parsers read (`20s/5`, `30s/idle`, `5s/fifo:50`), for workload names.
    pub fn spec(&self) -> String {
        let at = builtin::fmt_dur(self.at_ns);
        match self.to {
            AttrTo::Nice(n) => format!("{at}/{n}"),
            AttrTo::Policy(p, 0) => format!("{at}/{}", p.name()),
            AttrTo::Policy(p, prio) => format!("{at}/{}:{prio}", p.name()),
        }
    }
}

impl TaskSpec {
    pub fn new(prog: ProgId) -> TaskSpec {
        TaskSpec {
            prog,
            nice: 0,
            policy: SchedPolicy::Normal,
            rt_priority: 0,
            slice_ns: None,
            dl: None,
            uclamp_pct: [0, 100],
            affinity: None,
            mm: 0,
            interactive: false,
            background: false,
            part: 0,
            member: 0,
            origin: None,
            start_ns: 0,
        }
    }
}

/// A complete workload, ready to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// The canonical spec, as reported in results.
    pub name: String,
    pub programs: Vec<Program>,
    pub channels: Vec<ChannelSpec>,
    pub tasks: Vec<TaskSpec>,
    /// Unit of the throughput figure (`messages/s`, `yields/s`, ...).
    pub throughput_unit: String,
    /// If set, the run also reports `1e6 / throughput` under this name (µs per operation, as
    /// lmbench prints it).
    pub per_op_label: Option<String>,
    /// If set, the run's `SpinUntil` records are checked as rt-migrate-test checks them.
    pub rtmigrate: Option<RtMigrateSpec>,
    /// Sleeping locks, by index (`Op::Lock`), with their names for the report.
    pub locks: Vec<(String, LockSpec)>,
    /// Throughput is reported as count per second times this (60 for jobs/min).
    pub throughput_scale: f64,
    /// Changes made to running groups from outside (`renice=`, `chpolicy=`), in time order.
    pub changes: Vec<GroupChange>,
}

/// What the rt-migrate-test analysis needs to know about the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct RtMigrateSpec {
    pub threads: u32,
    /// SCHED_FIFO priority of thread `i` is `base_prio + i`.
    pub base_prio: u8,
    /// `-m/--maxerr`, ns.
    pub maxerr_ns: u64,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WorkloadError {
    #[error("unknown workload '{0}' (built-in: {1}); or give a path to a .toml workload file")]
    Unknown(String, String),
    #[error("workload '{workload}': {problem}")]
    Param { workload: String, problem: String },
    #[error("workload file {path}: line {line}: {problem}")]
    File {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("rt-app file {path}: at {at}: {problem}")]
    RtApp {
        path: String,
        /// The key path (`tasks.thread0.phases.p1.run`).
        at: String,
        problem: String,
    },
    #[error("cannot read workload file {path}: {problem}")]
    Io { path: String, problem: String },
}

impl Workload {
    /// Parses a spec: built-ins and `.toml` files, joined with `+`. A spec that names an
    /// existing file is that file, even if its path contains `+`.
    pub fn parse(spec: &str) -> Result<Workload, WorkloadError> {
        if spec.contains('+') && std::path::Path::new(spec.trim()).is_file() {
            let w = if spec.trim().ends_with(".json") {
                rtapp::load(spec.trim())?
            } else {
                file::load(spec.trim())?
            };
            w.check_has_foreground()
                .map_err(|problem| WorkloadError::Param {
                    workload: spec.to_string(),
                    problem,
                })?;
            return Ok(w);
        }
        // `+` joins workloads, except as the sign of a renice level (`renice=10s/+5`): a
        // piece ending in '/' takes the '+' and the number after it back.
        let mut parts: Vec<String> = Vec::new();
        for piece in spec.split('+') {
            match parts.last_mut() {
                Some(last)
                    if last.ends_with('/') && piece.starts_with(|c: char| c.is_ascii_digit()) =>
                {
                    last.push('+');
                    last.push_str(piece);
                }
                _ => parts.push(piece.to_string()),
            }
        }
        let mut parts = parts.iter().map(|p| p.trim());
        let first = parts.next().unwrap_or_default();
        let mut w = Workload::parse_one(first)?;
        for (i, p) in parts.enumerate() {
            let other = Workload::parse_one(p)?;
            w.append(other, i + 1);
        }
        w.check_has_foreground()
            .map_err(|problem| WorkloadError::Param {
                workload: spec.to_string(),
                problem,
            })?;
        Ok(w)
    }

    fn parse_one(spec: &str) -> Result<Workload, WorkloadError> {
        if spec.ends_with(".json") {
            return rtapp::load(spec);
        }
        if spec.ends_with(".toml") || std::path::Path::new(spec).is_file() {
            return file::load(spec);
        }
        builtin::parse(spec)
    }

    /// Adds another workload's tasks beside this one's.
    pub fn append(&mut self, other: Workload, part: usize) {
        let prog_off = self.programs.len() as u32;
        let chan_off = self.channels.len() as u32;
        let mm_off = self.tasks.iter().map(|t| t.mm + 1).max().unwrap_or(0);
        let lock_off_pending = self.locks.len() as u32;
        for mut p in other.programs {
            for op in &mut p.ops {
                match op {
                    Op::Send(c) | Op::SendSync(c) | Op::Recv(c) => *c += chan_off,
                    Op::CondWait { cond, lock } => {
                        *cond += chan_off;
                        *lock += lock_off_pending;
                    }
                    Op::CondSignal { cond, .. } => *cond += chan_off,
                    Op::Timer { timer, .. } | Op::Lateness { timer, .. } => *timer += chan_off,
                    Op::SendMember { base, .. } | Op::RecvMember { base, .. } => *base += chan_off,
                    Op::Fork { prog, .. } => *prog += prog_off,
                    Op::Lock(l) | Op::Unlock(l) => *l += lock_off_pending,
                    _ => {}
                }
            }
            self.programs.push(p);
        }
        self.channels.extend(other.channels);
        self.locks.extend(other.locks);
        for mut c in other.changes {
            for p in &mut c.progs {
                *p += prog_off;
            }
            self.changes.push(c);
        }
        self.changes.sort_by_key(|c| c.change.at_ns);
        for mut t in other.tasks {
            t.prog += prog_off;
            t.mm += mm_off;
            t.part = part;
            self.tasks.push(t);
        }
        self.name = format!("{}+{}", self.name, other.name);
    }

    /// Does any semaphore follow the run's lock mode (`--lock-mode`)?
    pub fn follows_lock_mode(&self) -> bool {
        self.locks
            .iter()
            .any(|(_, s)| matches!(s, LockSpec::Semaphore { mode: None, .. }))
    }

    /// A run waits for the tasks that are not in the background; if there are none it would
    /// end before it starts.
    pub fn check_has_foreground(&self) -> Result<(), String> {
        if !self.tasks.is_empty() && self.tasks.iter().all(|t| t.background) {
            return Err(format!(
                "every task of '{}' runs in the background: the run would end at once (run it beside a workload with +, e.g. makej+{})",
                self.name, self.name
            ));
        }
        Ok(())
    }

    /// Checks internal references (programs, channels, loops) and the limits in [`limits`].
    pub fn validate(&self) -> Result<(), String> {
        use limits::*;
        if self.tasks.len() as u64 > MAX_TASKS {
            return Err(format!(
                "{} tasks: more than the limit of {MAX_TASKS}",
                self.tasks.len()
            ));
        }
        if self.channels.len() as u64 > MAX_CHANNELS {
            return Err(format!(
                "{} channels: more than the limit of {MAX_CHANNELS}",
                self.channels.len()
            ));
        }
        for c in &self.changes {
            if let Some(p) = c.progs.iter().find(|&&p| p as usize >= self.programs.len()) {
                return Err(format!("a change names program {p}, which does not exist"));
            }
        }
        let mut total = 0u64;
        for p in &self.programs {
            let n = p.ops.len() as u64;
            if n > MAX_PROGRAM_OPS {
                return Err(format!(
                    "program '{}' has {n} statements: more than the limit of {MAX_PROGRAM_OPS}",
                    p.name
                ));
            }
            total += n;
        }
        if total > MAX_TOTAL_OPS {
            return Err(format!(
                "the programs have {total} statements together: more than the limit of {MAX_TOTAL_OPS}"
            ));
        }
        for (i, p) in self.programs.iter().enumerate() {
            p.validate()
                .map_err(|e| format!("program {i} ({}): {e}", p.name))?;
            for op in &p.ops {
                match op {
                    Op::Send(c) | Op::SendSync(c) | Op::Recv(c)
                        if *c as usize >= self.channels.len() =>
                    {
                        return Err(format!("program {}: channel {c} does not exist", p.name));
                    }
                    Op::Send(c) | Op::SendSync(c) | Op::Recv(c)
                        if !self.channels[*c as usize].kind.carries_messages() =>
                    {
                        return Err(format!(
                            "program {}: channel {c} is a {:?}, which carries no messages",
                            p.name, self.channels[*c as usize].kind
                        ));
                    }
                    Op::CondWait { cond, .. } | Op::CondSignal { cond, .. }
                        if self.channels.get(*cond as usize).map(|c| c.kind)
                            != Some(ChanKind::CondVar) =>
                    {
                        return Err(format!(
                            "program {}: channel {cond} is not a condition variable",
                            p.name
                        ));
                    }
                    Op::CondWait { lock, .. } if *lock as usize >= self.locks.len() => {
                        return Err(format!("program {}: lock {lock} does not exist", p.name));
                    }
                    Op::Timer { timer, .. } | Op::Lateness { timer, .. }
                        if !self
                            .channels
                            .get(*timer as usize)
                            .is_some_and(|c| c.kind.is_timer()) =>
                    {
                        return Err(format!(
                            "program {}: channel {timer} is not a timer",
                            p.name
                        ));
                    }
                    Op::SendMember { base, count, .. } | Op::RecvMember { base, count, .. }
                        if *count == 0
                            || *base as u64 + *count as u64 > self.channels.len() as u64 =>
                    {
                        return Err(format!(
                            "program {}: channels {base}..{} do not exist",
                            p.name,
                            *base as u64 + *count as u64
                        ));
                    }
                    Op::Fork { prog, .. } if *prog as usize >= self.programs.len() => {
                        return Err(format!("program {}: forks unknown program {prog}", p.name));
                    }
                    Op::Lock(l) | Op::Unlock(l) if *l as usize >= self.locks.len() => {
                        return Err(format!("program {}: lock {l} does not exist", p.name));
                    }
                    _ => {}
                }
            }
        }
        for t in &self.tasks {
            if t.prog as usize >= self.programs.len() {
                return Err(format!("a task runs unknown program {}", t.prog));
            }
        }
        if self.tasks.is_empty() {
            return Err("the workload has no tasks".into());
        }
        Ok(())
    }
}

/// Parses a duration: `250us`, `10ms`, `1.5s`, `100ns`, `2m`. A bare number is seconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = number_prefix_len(s);
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (try 10ms, 250us, 2s)"))?;
    let mult = match unit.trim() {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" | "μs" => 1e3,
        "ns" => 1.0,
        "m" | "min" => 60e9,
        u => return Err(format!("'{s}': unknown unit '{u}' (use ns, us, ms, s, m)")),
    };
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("'{s}' must be a non-negative duration"));
    }
    let ns = v * mult;
    if ns > 1e15 {
        return Err(format!(
            "'{s}' is longer than the simulator's limit of 1e6 s"
        ));
    }
    Ok(ns as u64)
}

/// The length of the number at the start of `s`: digits with an optional sign, point and
/// exponent (`1.5e3` in `1.5e3ms`); the unit follows.
fn number_prefix_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    // An exponent only if digits follow (so that `2m` stays two minutes).
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    i
}

/// Parses a duration or a distribution: `5ms`, `exp(10ms)`, `uniform(1ms,5ms)`,
/// `lognormal(100ms,0.5)`.
pub fn parse_dist(s: &str) -> Result<Dist, String> {
    parse_dist_with(s, parse_duration)
}

/// A duration that must name its unit: `10` alone is refused (where a bare number would
/// silently be seconds, as in a workload file's statements).
pub fn parse_duration_with_unit(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if !t.is_empty() && t.len() == number_prefix_len(t) {
        return Err(format!(
            "'{t}' has no unit: write {t}s, {t}ms, {t}us or {t}ns"
        ));
    }
    parse_duration(t)
}

/// [`parse_dist`] whose durations must name their unit.
pub fn parse_dist_with_unit(s: &str) -> Result<Dist, String> {
    parse_dist_with(s, parse_duration_with_unit)
}

fn parse_dist_with(
    s: &str,
    parse_duration: fn(&str) -> Result<u64, String>,
) -> Result<Dist, String> {
    let s = s.trim();
    let Some(open) = s.find('(') else {
        return parse_duration(s).map(Dist::Const);
    };
    if !s.ends_with(')') {
        return Err(format!("'{s}': missing ')'"));
    }
    let name = &s[..open];
    let args: Vec<&str> = s[open + 1..s.len() - 1].split(',').map(str::trim).collect();
    let want = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("'{s}': {name}() takes {n} argument(s)"))
        }
    };
    match name {
        "exp" => {
            want(1)?;
            Ok(Dist::Exp(parse_duration(args[0])?))
        }
        "uniform" => {
            want(2)?;
            let (lo, hi) = (parse_duration(args[0])?, parse_duration(args[1])?);
            if hi < lo {
                return Err(format!("'{s}': upper bound below lower bound"));
            }
            Ok(Dist::Uniform(lo, hi))
        }
        "lognormal" => {
            want(2)?;
            let sigma: f64 = args[1]
                .parse()
                .map_err(|_| format!("'{s}': sigma must be a number"))?;
            if !(sigma.is_finite() && (0.0..=5.0).contains(&sigma)) {
                return Err(format!("'{s}': sigma must be within 0..=5"));
            }
            Ok(Dist::LogNormal(parse_duration(args[0])?, sigma))
        }
        _ => Err(format!(
            "'{s}': unknown distribution '{name}' (exp, uniform, lognormal)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms"), Ok(10_000_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("250us"), Ok(250_000));
        assert_eq!(parse_duration("3"), Ok(3_000_000_000));
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("ms").is_err());
        // µs is a listed unit (the micro sign and the Greek mu), and exponents are numbers.
        assert_eq!(parse_duration("10µs"), Ok(10_000));
        assert_eq!(parse_duration("10μs"), Ok(10_000));
        assert_eq!(parse_duration("1.5e3ms"), Ok(1_500_000_000));
        assert_eq!(parse_duration("2e-3s"), Ok(2_000_000));
        assert_eq!(parse_duration("2m"), Ok(120_000_000_000));
        assert!(parse_duration("1e400s").is_err());
    }

    #[test]
    fn distributions() {
        assert_eq!(parse_dist("exp(2ms)"), Ok(Dist::Exp(2_000_000)));
        assert_eq!(
            parse_dist("uniform(1ms, 2ms)"),
            Ok(Dist::Uniform(1_000_000, 2_000_000))
        );
        assert!(parse_dist("uniform(2ms,1ms)").is_err());
        assert!(parse_dist("gauss(1ms)").is_err());
    }

    #[test]
    fn joined_workloads_renumber_references() {
        let w = Workload::parse("ctx:procs=2+interactive").unwrap();
        w.validate().unwrap();
        assert!(w.tasks.iter().any(|t| t.interactive && t.part == 1));
        assert_eq!(w.name, "ctx:procs=2,size=0+interactive:sleep=20ms,work=1ms");
    }
}

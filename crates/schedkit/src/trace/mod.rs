//! Scheduler traces: one event model for traces recorded on real machines and traces of
//! simulated runs, read from and written to the formats kernel engineers use.
//!
//! - [`import`]: tracefs text, `trace-cmd report` (plugin, `-N`, `-R`) and `perf sched script`
//!   text → a [`Trace`], defensively (every line that is not used is counted, with its line
//!   number; nothing panics); [`tracedat`], trace-cmd's binary `trace.dat` (versions 6 and 7)
//!   through the same builder; either of them gzip-compressed.
//! - [`figures`]: what a trace says happened (per-task CPU time, context switches, wakeup
//!   latency, migrations, runqueue wait), computed the same way for a recorded trace and for
//!   a simulated run, so that `replay --policies recorded` sits beside the policies.
//! - [`replay`]: a trace → a workload, with `perf sched replay`'s atom model (run, sleep, wake
//!   task Y, fork, exit).
//! - [`ftrace`] and [`perfetto`]: a [`Trace`] → ftrace text or Perfetto's protobuf.
//!
//! The simulator fills a [`TraceRecorder`] while it runs (`SimConfig::trace`).
//!
//! Depends on `task` and `workload` only; never on `sim`, `runtime` or a policy.

pub mod figures;
pub mod ftrace;
pub mod import;
pub mod input;
pub mod perfetto;
pub mod replay;
pub mod timeline;
pub mod tracedat;

/// A task of a trace: one *incarnation* of a PID (a PID reused after an exit is a new task).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceTask {
    pub pid: u32,
    /// Thread-group id, where the trace says (tracefs with `record-tgid`, `perf -F pid,tid`).
    pub tgid: Option<u32>,
    pub comm: String,
    /// Kernel priority as the trace prints it (`prio`: 0..99 RT, 100..139 nice −20..19).
    pub prio: i32,
}

/// Index of a task in [`Trace::tasks`]; `None` where an event names the idle task (PID 0).
pub type TaskIdx = usize;

/// How a task left the CPU in a `sched_switch` (`prev_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevState {
    /// Still runnable: preempted (`R+`, or `R` from a kernel that prints no `+`).
    Runnable,
    /// Interruptible sleep (`S`, and `I`, the idle kernel thread's sleep).
    Sleep,
    /// Uninterruptible sleep (`D`): I/O or a sleeping lock.
    DiskSleep,
    /// Stopped or traced (`T`, `t`).
    Stopped,
    /// Exiting (`X`, `Z`).
    Dead,
}

impl PrevState {
    /// The letter ftrace prints.
    pub fn letter(self) -> &'static str {
        match self {
            PrevState::Runnable => "R+",
            PrevState::Sleep => "S",
            PrevState::DiskSleep => "D",
            PrevState::Stopped => "T",
            PrevState::Dead => "X",
        }
    }

    pub fn is_sleep(self) -> bool {
        matches!(
            self,
            PrevState::Sleep | PrevState::DiskSleep | PrevState::Stopped
        )
    }
}

/// One event, in the order of the sched tracepoints (`include/trace/events/sched.h`).
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// `sched_switch`: `prev` (None: the idle task) leaves the CPU, `next` takes it.
    Switch {
        prev: Option<TaskIdx>,
        prev_state: PrevState,
        next: Option<TaskIdx>,
    },
    /// `sched_waking` (or `sched_wakeup` where the trace has no `sched_waking`): `task` is
    /// woken by `waker`, the task running where the event fired (None: the idle task), to
    /// run on `target_cpu`. `irq` says the wakeup came from interrupt context (the `h`/`s`
    /// flag of ftrace), so `waker` only happened to be interrupted. `depth`: the preemption
    /// depth ftrace recorded with it (the fourth character of its flags, `common_preempt_count`
    /// of a trace.dat), where the trace has one: how many locks and guards the waker's path
    /// held, which tells one kernel path from another (`trace::replay` reads it to tell
    /// `exit_notify`'s sync wakeup of a parent from the SIGCHLD signal's).
    Waking {
        waker: Option<TaskIdx>,
        task: TaskIdx,
        target_cpu: u32,
        irq: bool,
        depth: Option<u8>,
    },
    /// `sched_wakeup_new`: a forked task is runnable for the first time.
    WakeupNew { task: TaskIdx, target_cpu: u32 },
    /// `sched_process_fork`.
    Fork { parent: TaskIdx, child: TaskIdx },
    /// `sched_process_exit`.
    Exit { task: TaskIdx },
    /// `sched_migrate_task`.
    Migrate {
        task: TaskIdx,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    /// `cpu_frequency`: the CPU's clock, kHz.
    CpuFrequency { khz: u64 },
    /// `cpu_idle`: entering idle state `state`, or leaving idle (`None`, PWR_EVENT_EXIT).
    CpuIdle { state: Option<u32> },
    /// A `sched_setscheduler()` that succeeded (`syscalls:sys_enter_sched_setscheduler` and
    /// its `sys_exit` with 0): `task` has the Linux policy number `policy` from here on
    /// (SCHED_NORMAL 0, FIFO 1, RR 2, BATCH 3, IDLE 5). A trace's `prio` fields cannot say a
    /// SCHED_IDLE or SCHED_BATCH task from a nice-0 one; this event can. `by`: the task that
    /// made the call (`task` itself, or another, as `chrt -p` does).
    SetPolicy {
        task: TaskIdx,
        policy: u32,
        by: TaskIdx,
    },
    /// A sleeping-lock wait as an ATrace slice in a `print`/`tracing_mark_write` event
    /// (`B|pid|name` when the wait starts, `E|pid` when the lock is taken).
    LockWait {
        task: TaskIdx,
        lock: String,
        begin: bool,
    },
}

/// An event at a time on a CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// ns since the trace clock's origin.
    pub ts: u64,
    pub cpu: u32,
    pub kind: EventKind,
}

/// What the importer met that it did not turn into events: counted, never silently dropped.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ImportStats {
    /// Lines read (records, for a trace.dat).
    pub lines: u64,
    /// Lines that became events.
    pub events: u64,
    /// Header and comment lines (`#…`, `cpus=2`, `version = 6`, `CPU 0 is empty`, …).
    pub header_lines: u64,
    /// Events of kinds the model does not use (`sched_stat_runtime`, `irq_handler_entry`…),
    /// by name.
    pub other_events: std::collections::BTreeMap<String, u64>,
    /// Lines that could not be parsed, and the first few of them with their line numbers.
    pub malformed: u64,
    pub malformed_examples: Vec<String>,
    /// The first or last line of the file cut short (a buffer dumped mid-line).
    pub truncated_edges: u64,
    /// Task names printed as `<...>` (comm unknown when the line was written); resolved
    /// from another event where one names the task.
    pub unknown_comms: u64,
    /// PIDs that appeared again after their task exited: a new task each time.
    pub pid_reuse: u64,
    /// Events whose time stamp is earlier than one before it in the file (clock skew between
    /// CPUs, or per-CPU buffers merged out of order); the trace is sorted, stably.
    pub out_of_order: u64,
    /// A task switched in on one CPU while still running on another (clock skew): the
    /// earlier run is closed where the later one starts.
    pub overlapping_runs: u64,
    /// `sched_switch` whose `prev` is not the task its own line names as running.
    pub inconsistent_switches: u64,
    /// Switches put back where a CPU's events show another task running than the last
    /// recorded switch left there (a switch the kernel did not record, or a lost event).
    pub inferred_switches: u64,
    /// Events the kernel's ring buffer dropped before they were read (`[LOST n EVENTS]`,
    /// `[n EVENTS DROPPED]`, a trace.dat page flagged with missed events; 1 where the count
    /// was not kept).
    pub lost_events: u64,
    /// CPUs the header gives (`#P:N`, `cpus=N`), where it gives them, and the CPUs the
    /// events use (the highest named + 1): a header with more CPUs than the events touch is
    /// believed (an idle CPU is a CPU of the machine), and said.
    pub header_cpus: Option<u32>,
    pub event_cpus: u32,
}

/// A scheduler trace: tasks, time-ordered events, and the machine's size.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// CPUs of the traced machine (from the header, else the highest CPU seen + 1).
    pub ncpus: u32,
    pub tasks: Vec<TraceTask>,
    /// Sorted by time stamp (stable for equal stamps: the file's order).
    pub events: Vec<Event>,
    /// Where the trace starts and ends, ns (first and last event, or the recording window).
    pub start_ns: u64,
    pub end_ns: u64,
    /// What the importer did not use (all zero for a trace the simulator made).
    pub stats: ImportStats,
    /// The task each CPU ran when the trace starts, where known (the header of a CPU's first
    /// line names it); writers start from it so that a trace reads back the same.
    pub running_at_start: std::collections::BTreeMap<u32, TaskIdx>,
    /// The `sched_waking`s (by time stamp and wakee) of a task still on its CPU on its way to
    /// sleep: its switch to S or D follows the waking, and its `sched_wakeup` that switch
    /// (`try_to_wake_up` found it dequeued but still `p->on_cpu`, waited, and queued it). A
    /// waking of a running task without both is one the task absorbed (`ttwu_runnable`).
    /// Found by the importer where the trace has both events; empty otherwise.
    pub wakings_of_blocking: std::collections::BTreeSet<(u64, TaskIdx)>,
}

impl Trace {
    /// The task's name, or `swapper/N` for the idle task on CPU `cpu`.
    pub fn comm(&self, t: Option<TaskIdx>, cpu: u32) -> String {
        match t {
            Some(i) => self.tasks[i].comm.clone(),
            None => format!("swapper/{cpu}"),
        }
    }

    pub fn pid(&self, t: Option<TaskIdx>) -> u32 {
        t.map_or(0, |i| self.tasks[i].pid)
    }

    pub fn prio(&self, t: Option<TaskIdx>) -> i32 {
        t.map_or(120, |i| self.tasks[i].prio)
    }

    /// The events between `from` and `to` ns (a `--trace-window`), with the tasks they name;
    /// the window's edges become the trace's start and end, and what each CPU ran at `from`
    /// (as the events before it say) its `running_at_start`.
    pub fn window(&self, from: u64, to: u64) -> Trace {
        let mut on_cpu = OnCpu::new(self);
        for e in self.events.iter().take_while(|e| e.ts < from) {
            on_cpu.see(e);
        }
        let running_at_start = running_map(&on_cpu.0);
        Trace {
            ncpus: self.ncpus,
            tasks: self.tasks.clone(),
            events: self
                .events
                .iter()
                .filter(|e| e.ts >= from && e.ts <= to)
                .cloned()
                .collect(),
            start_ns: from.max(self.start_ns),
            end_ns: to.min(self.end_ns),
            stats: self.stats.clone(),
            running_at_start,
            wakings_of_blocking: self
                .wakings_of_blocking
                .range((from, 0)..=(to, TaskIdx::MAX))
                .copied()
                .collect(),
        }
    }
}

/// The task each CPU runs, as a reader infers it from the line headers (see
/// `import::Resolver::infer_switch`): a switch sets it, and so do events that name the running
/// task (a waking's waker, a fork's parent, an exiting task), so that the header of an event
/// that does not name it agrees with the lines before. Both writers follow it.
pub(crate) struct OnCpu(Vec<Option<TaskIdx>>);

impl OnCpu {
    pub(crate) fn new(trace: &Trace) -> OnCpu {
        let mut curr = vec![None; trace.ncpus as usize];
        for (&cpu, &t) in &trace.running_at_start {
            if let Some(c) = curr.get_mut(cpu as usize) {
                *c = Some(t);
            }
        }
        OnCpu(curr)
    }

    /// The task running on `e`'s CPU when `e` fires (its line's task); a switch then leaves
    /// its `next` there.
    pub(crate) fn see(&mut self, e: &Event) -> Option<TaskIdx> {
        let c = self.0.get_mut(e.cpu as usize)?;
        if let Some(h) = header_task(&e.kind) {
            *c = h;
        }
        let here = *c;
        if let EventKind::Switch { next, .. } = e.kind {
            *c = next;
        }
        here
    }
}

/// The task an event's line names as running on its CPU, where the event says (`None`: the
/// event does not say; `Some(None)`: the idle task).
fn header_task(k: &EventKind) -> Option<Option<TaskIdx>> {
    match k {
        EventKind::Switch { prev, .. } => Some(*prev),
        EventKind::Waking { waker, .. } => Some(*waker),
        EventKind::Fork { parent, .. } => Some(Some(*parent)),
        EventKind::Exit { task } | EventKind::LockWait { task, .. } => Some(Some(*task)),
        EventKind::SetPolicy { by, .. } => Some(Some(*by)),
        _ => None,
    }
}

/// A per-CPU "what runs" vector as `Trace::running_at_start` (idle CPUs left out).
fn running_map(curr: &[Option<TaskIdx>]) -> std::collections::BTreeMap<u32, TaskIdx> {
    curr.iter()
        .enumerate()
        .filter_map(|(cpu, t)| t.map(|t| (cpu as u32, t)))
        .collect()
}

/// When a task started running, for the readers that add up its runs (`figures`, `replay`).
/// A task seen leaving a CPU (or waking another) before it was ever seen arriving has run
/// since the trace began.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RunClock {
    since: Option<u64>,
    seen: bool,
}

impl RunClock {
    /// It starts running at `ts`.
    pub(crate) fn start(&mut self, ts: u64) {
        self.since = Some(ts);
        self.seen = true;
    }

    /// It stops running at `ts`: the time it ran.
    pub(crate) fn stop(&mut self, ts: u64, trace_start: u64) -> u64 {
        let since = match self.since.take() {
            Some(s) => s,
            None if !self.seen => trace_start,
            None => ts,
        };
        self.seen = true;
        ts.saturating_sub(since)
    }

    /// The time it ran up to `ts`, going on running from there (a wakeup or fork it makes
    /// in the middle of a run); 0 if it is not running.
    pub(crate) fn split(&mut self, ts: u64, trace_start: u64) -> u64 {
        let ran = match self.since {
            Some(s) => ts.saturating_sub(s),
            None if !self.seen => ts.saturating_sub(trace_start),
            None => return 0,
        };
        self.start(ts);
        ran
    }

    pub(crate) fn running(&self) -> bool {
        self.since.is_some()
    }

    pub(crate) fn seen(&self) -> bool {
        self.seen
    }

    /// Seen, not running (a forked child; a task first seen asleep).
    pub(crate) fn mark_seen(&mut self) {
        self.seen = true;
    }
}

/// Collects a simulated run's events (the simulator calls it at each switch, wakeup, fork,
/// exit, idle transition and lock wait), keeping those inside `window` if one is set.
#[derive(Debug, Default)]
pub struct TraceRecorder {
    pub window: Option<(u64, u64)>,
    /// Keep only the last `rolling` ns window that ended before the run did (aligned to
    /// multiples of it): a short timeline of a run whose length is not known in advance.
    rolling: Option<Rolling>,
    trace: Trace,
    /// Tasks by the simulator's pid (pids are never reused in a simulated run).
    index: std::collections::HashMap<u32, TaskIdx>,
    end_ns: u64,
}

/// The two windows a rolling recorder holds: the one events arrive in, and the one before.
#[derive(Debug, Default)]
struct Rolling {
    width: u64,
    /// Index of the window now filling (its events are `trace.events`).
    k: u64,
    /// What each CPU ran when window `k` began.
    k_start: Vec<Option<TaskIdx>>,
    /// Window `k − 1`'s events and what ran when it began (None before the first rotation).
    prev: Option<(Vec<Event>, Vec<Option<TaskIdx>>)>,
    /// What each CPU runs now (from the switches pushed).
    curr: Vec<Option<TaskIdx>>,
}

impl TraceRecorder {
    pub fn new(window: Option<(u64, u64)>) -> TraceRecorder {
        TraceRecorder {
            window,
            ..Default::default()
        }
    }

    /// A recorder that keeps only the last whole `width`-ns window of the run, aligned to
    /// multiples of `width` (or the whole run, if shorter): memory stays that of one window
    /// whatever the run's length.
    pub fn rolling(width: u64) -> TraceRecorder {
        TraceRecorder {
            rolling: Some(Rolling {
                width: width.max(1),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Called once before the run: the machine's size and its CPUs' clock.
    pub fn begin(&mut self, ncpus: usize, khz: u64) {
        self.trace.ncpus = ncpus as u32;
        if let Some(r) = &mut self.rolling {
            r.curr = vec![None; ncpus];
            r.k_start = vec![None; ncpus];
        }
        let at = self.window.map_or(0, |w| w.0);
        self.trace.start_ns = at;
        for cpu in 0..ncpus as u32 {
            self.trace.events.push(Event {
                ts: at,
                cpu,
                kind: EventKind::CpuFrequency { khz },
            });
        }
    }

    /// Whether an event at `ts` is kept (callers skip building it otherwise).
    #[inline]
    pub fn wants(&self, ts: u64) -> bool {
        self.window.is_none_or(|(a, b)| ts >= a && ts <= b)
    }

    /// The trace's task for simulator pid `pid`, registered with its name and priority.
    pub fn task(&mut self, pid: u32, comm: &str, prio: i32) -> TaskIdx {
        if let Some(&i) = self.index.get(&pid) {
            self.trace.tasks[i].prio = prio;
            return i;
        }
        let i = self.trace.tasks.len();
        self.trace.tasks.push(TraceTask {
            pid,
            tgid: None,
            // The whole program name, not the kernel's 15 bytes: a replayed task's name says
            // which recorded task it stands for.
            comm: comm.replace(char::is_whitespace, "_"),
            prio,
        });
        self.index.insert(pid, i);
        i
    }

    pub fn push(&mut self, ts: u64, cpu: usize, kind: EventKind) {
        if let Some(r) = &mut self.rolling {
            let k = ts / r.width;
            if k > r.k {
                // A new window: the one filling becomes the previous (an empty one if the
                // run was quiet for a whole window).
                let events = std::mem::take(&mut self.trace.events);
                let prev = if k == r.k + 1 {
                    (events, std::mem::take(&mut r.k_start))
                } else {
                    (Vec::new(), r.curr.clone())
                };
                r.prev = Some(prev);
                r.k = k;
                r.k_start = r.curr.clone();
            }
            if let EventKind::Switch { next, .. } = kind {
                if let Some(c) = r.curr.get_mut(cpu) {
                    *c = next;
                }
            }
            // A stamp a little behind the window now filling (another CPU's path) belongs to
            // the previous one.
            let event = Event {
                ts,
                cpu: cpu as u32,
                kind,
            };
            match &mut r.prev {
                Some((prev, _)) if k < r.k => prev.push(event),
                _ => self.trace.events.push(event),
            }
            return;
        }
        if self.wants(ts) {
            self.trace.events.push(Event {
                ts,
                cpu: cpu as u32,
                kind,
            });
        }
    }

    /// The simulator says when the run ended.
    pub fn end(&mut self, end_ns: u64) {
        self.end_ns = end_ns;
    }

    /// Events kept so far.
    pub fn len(&self) -> usize {
        self.trace.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.trace.events.is_empty()
    }

    /// The recorded trace, ending where the run ended (or the window, if sooner).
    pub fn finish(mut self) -> Trace {
        let end_ns = self.end_ns;
        self.trace.end_ns = self.window.map_or(end_ns, |w| w.1.min(end_ns));
        if let Some(r) = self.rolling.take() {
            // The window now filling if the run ended at its end (or it is the only one),
            // else the whole one before it.
            let whole = end_ns >= (r.k + 1) * r.width;
            let (k, start) = match r.prev {
                Some((events, start)) if !whole => {
                    self.trace.events = events;
                    (r.k - 1, start)
                }
                _ => (r.k, r.k_start),
            };
            self.trace.start_ns = k * r.width;
            self.trace.end_ns = ((k + 1) * r.width).min(end_ns);
            self.trace.running_at_start = running_map(&start);
        }
        // Events are pushed in simulated-time order per path; a path's sections may stamp an
        // event a little after a later-pushed one on another CPU: sort, stably.
        self.trace.events.sort_by_key(|e| e.ts);
        self.trace
    }
}

/// The first 15 bytes of a name, cut at a character boundary (TASK_COMM_LEN − 1).
pub fn truncate_comm(s: &str) -> String {
    let mut end = s.len().min(15);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    // Whitespace in a name survives in the kernel, but the text formats separate fields by
    // it; an underscore keeps the name one token.
    s[..end].replace(char::is_whitespace, "_")
}

/// Kernel priority of a task (`prio` in the tracepoints): RT priority p → 99 − p, nice n →
/// 120 + n.
pub fn kernel_prio(policy: crate::task::SchedPolicy, nice: i32, rt_priority: u8) -> i32 {
    if policy.is_rt() {
        99 - rt_priority as i32
    } else {
        120 + nice
    }
}

//! The simulator's scheduling decisions, for `schedkit diff`: each completed pick
//! (`schedule()` on a CPU: the time, the CPU, prev and next) and each placement of a woken or
//! new task (`select_task_rq`: the task, the CPU chosen, and whether that CPU was asked to
//! reschedule), told to a [`DecisionLog`] in the order the run makes them.
//!
//! A log records a run's decisions, or compares a run's against a recorded stream and keeps
//! the state at the first that differs, or keeps the state at a given decision (a rerun: the
//! simulator being deterministic, the rerun reaches the same decision). Nothing here runs
//! without a log (`Sim::decisions` is `None` in every other run); the log only reads the run,
//! so its figures are the same with or without one.

use super::*;
use serde::Serialize;

/// What a decision decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// `schedule()` on `cpu` picked `task` (0: idle) after `prev` (0: idle).
    Pick,
    /// A woken `task` was placed on `cpu` (from the waker's CPU `from`).
    Wakeup,
    /// A new `task` (a fork, or a workload task started later) was placed on `cpu`.
    Fork,
}

/// One scheduling decision. Tasks are named by their pid (the simulator's, as in its traces:
/// 1, 2, … in creation order; 0 is idle), which the two runs of a diff share up to their
/// first difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// When, ns: a pick where `schedule()` switches, a wakeup where `try_to_wake_up` ran.
    pub at_ns: u64,
    pub kind: DecisionKind,
    /// A pick: the CPU that picked. A placement: the CPU chosen.
    pub cpu: u32,
    /// The CPU whose path made the decision (the waker's, the parent's; a pick's own).
    pub from: u32,
    /// A pick: the task that was running (0: idle). A placement: 0.
    pub prev: u32,
    /// A pick: the task chosen (0: idle). A placement: the task placed.
    pub task: u32,
    /// A placement: whether it asked the chosen CPU to reschedule (wakeup preemption).
    pub preempt: bool,
}

impl Decision {
    /// The same decision, the time left out where `ignore_time` says so.
    pub fn same(&self, other: &Decision, ignore_time: bool) -> bool {
        let t = ignore_time || self.at_ns == other.at_ns;
        t && Decision { at_ns: 0, ..*self } == Decision { at_ns: 0, ..*other }
    }

    /// What differs between `self` and `other`, in words.
    pub fn differences(&self, other: &Decision) -> String {
        let mut d = Vec::new();
        if self.kind != other.kind {
            d.push("the kind of decision");
        }
        if self.cpu != other.cpu {
            d.push("the CPU");
        }
        if self.from != other.from {
            d.push("the deciding CPU");
        }
        if self.prev != other.prev {
            d.push("the task that was running");
        }
        if self.task != other.task {
            d.push(match self.kind {
                DecisionKind::Pick => "the task chosen",
                _ => "the task placed",
            });
        }
        if self.preempt != other.preempt {
            d.push("whether it preempted");
        }
        if self.at_ns != other.at_ns {
            d.push("the time");
        }
        d.join(", ")
    }
}

/// A task as the state dump shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskInfo {
    pub pid: u32,
    /// Its program's name.
    pub name: String,
    pub policy: &'static str,
    pub nice: i32,
    pub rt_priority: u8,
    /// "running on CPU n", "queued", "asleep", …
    pub state: String,
    /// What its class says of it (`SchedClass::describe_task`: its key in the queue).
    pub class: String,
}

/// One CPU at the decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuState {
    pub cpu: u32,
    /// The task it runs (after a pick: the one picked).
    pub curr: Option<TaskInfo>,
    pub need_resched: bool,
}

/// One runqueue at the decision: every task its classes hold, in the order they list them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RqState {
    /// The runqueue's CPU (the first of the machine for a global runqueue).
    pub cpu: u32,
    /// Whether it is one runqueue for the whole machine (2.4, BFS).
    pub global: bool,
    pub nr_running: usize,
    pub tasks: Vec<TaskInfo>,
}

/// The state of the run just after a decision was made (a pick's task taken off its
/// runqueue, a woken task queued).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Snapshot {
    pub at_ns: u64,
    /// The class stack's name.
    pub class: String,
    /// The rule that chose: for a pick, the pick rule of the chosen task's class; for a
    /// placement, which class's `select_task_rq` placed it.
    pub rule: String,
    pub cpus: Vec<CpuState>,
    pub runqueues: Vec<RqState>,
}

/// The decision a log was waiting for, with the run's state there.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Found {
    pub index: u64,
    pub decision: Decision,
    pub state: Snapshot,
}

enum Mode {
    Record,
    Compare(Vec<Decision>),
    Capture(u64),
}

/// Where a run tells its decisions (see the module's header).
pub struct DecisionLog {
    mode: Mode,
    limit: u64,
    ignore_time: bool,
    seen: u64,
    recorded: Vec<Decision>,
    found: Option<Found>,
}

impl DecisionLog {
    /// Records the run's first `limit` decisions.
    pub fn record(limit: u64) -> DecisionLog {
        DecisionLog {
            mode: Mode::Record,
            limit,
            ignore_time: false,
            seen: 0,
            recorded: Vec::new(),
            found: None,
        }
    }

    /// Compares the run's first `limit` decisions with `reference` (another run's, recorded
    /// with the same limit) and keeps the state at the first that differs: one that
    /// `reference` does not have counts, unless `reference` stopped at the limit.
    pub fn compare(reference: Vec<Decision>, limit: u64, ignore_time: bool) -> DecisionLog {
        DecisionLog {
            mode: Mode::Compare(reference),
            limit,
            ignore_time,
            seen: 0,
            recorded: Vec::new(),
            found: None,
        }
    }

    /// Keeps the state at decision `index` (0 first).
    pub fn capture_at(index: u64) -> DecisionLog {
        DecisionLog {
            mode: Mode::Capture(index),
            limit: u64::MAX,
            ignore_time: false,
            seen: 0,
            recorded: Vec::new(),
            found: None,
        }
    }

    /// How many decisions the run made.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Decision `i` of the stream a comparing log compares with.
    pub fn reference_at(&self, i: u64) -> Option<Decision> {
        match &self.mode {
            Mode::Compare(r) => r.get(i as usize).copied(),
            _ => None,
        }
    }

    /// The decisions recorded (a recording log).
    pub fn take_recorded(&mut self) -> Vec<Decision> {
        std::mem::take(&mut self.recorded)
    }

    /// The decision looked for (the first that differs, or the one asked for) and the state
    /// there, if the run reached it.
    pub fn found(&self) -> Option<&Found> {
        self.found.as_ref()
    }

    /// Takes decision `d`; whether the run should give its state now.
    fn offer(&mut self, d: Decision) -> bool {
        let i = self.seen;
        self.seen += 1;
        if self.found.is_some() || i >= self.limit {
            return false;
        }
        match &self.mode {
            Mode::Record => {
                self.recorded.push(d);
                false
            }
            Mode::Compare(r) => !r
                .get(i as usize)
                .is_some_and(|x| x.same(&d, self.ignore_time)),
            Mode::Capture(k) => i == *k,
        }
    }
}

impl<P: SchedClass> Sim<'_, '_, P> {
    fn pid_of(&self, t: Option<TaskId>) -> u32 {
        t.map_or(0, |t| self.procs[t.index()].pid)
    }

    /// `schedule()` on `cpu` picked `next` after `prev` (at the cursor, as `trace_switch`).
    #[inline]
    pub(super) fn decided_pick(&mut self, cpu: CpuId, prev: Option<TaskId>, next: Option<TaskId>) {
        if self.decisions.is_none() {
            return;
        }
        let d = Decision {
            at_ns: self.cursor,
            kind: DecisionKind::Pick,
            cpu: cpu as u32,
            from: cpu as u32,
            prev: self.pid_of(prev),
            task: self.pid_of(next),
            preempt: false,
        };
        let rule = match next {
            Some(n) => self.sched.pick_rule(&self.tasks[n]).to_string(),
            None => "nothing runnable on this runqueue: the idle task".to_string(),
        };
        self.offer(d, rule);
    }

    /// Which CPUs have a reschedule pending, before a placement (only with a log).
    pub(super) fn resched_before(&self) -> Option<Vec<bool>> {
        self.decisions
            .as_ref()
            .map(|_| self.cpus.iter().map(|c| c.need_resched).collect())
    }

    /// Task `t` was placed (woken, or new) from `from`'s path, at `at`; `before` is
    /// [`Self::resched_before`] taken before the placement.
    pub(super) fn decided_placement(
        &mut self,
        kind: DecisionKind,
        t: TaskId,
        from: CpuId,
        at: u64,
        before: Option<Vec<bool>>,
    ) {
        let Some(before) = before else {
            return;
        };
        let cpu = self.tasks[t].cpu;
        let d = Decision {
            at_ns: at,
            kind,
            cpu: cpu as u32,
            from: from as u32,
            prev: 0,
            task: self.pid_of(Some(t)),
            preempt: self.cpus[cpu].need_resched && !before.get(cpu).copied().unwrap_or(false),
        };
        let class = self.sched.class.name();
        let rule = if self.sched.in_rt(&self.tasks[t]) {
            format!("select_task_rq of the RT class (stacked in front of {class}), then its preemption check against the chosen CPU's task")
        } else {
            format!("select_task_rq of {class} (its select_cpu), then the preemption check against the chosen CPU's task")
        };
        self.offer(d, rule);
    }

    fn offer(&mut self, d: Decision, rule: String) {
        let Some(log) = self.decisions.as_mut() else {
            return;
        };
        let index = log.seen;
        if !log.offer(d) {
            return;
        }
        let state = self.snapshot(d.at_ns, rule);
        if let Some(log) = self.decisions.as_mut() {
            log.found = Some(Found {
                index,
                decision: d,
                state,
            });
        }
    }

    fn task_info(&self, t: TaskId, rq: &Rq<P::Rq>) -> TaskInfo {
        let task = &self.tasks[t];
        let pr = &self.procs[t.index()];
        let state = match task.state {
            TaskState::Running(c) => format!("running on CPU {c}"),
            TaskState::Queued => "queued".to_string(),
            TaskState::Sleeping { .. } if self.cpus.iter().any(|c| c.curr == Some(t)) => {
                "going to sleep (still current)".to_string()
            }
            TaskState::Sleeping { .. } => "asleep".to_string(),
            TaskState::Dead => "dead".to_string(),
            TaskState::New => "new".to_string(),
        };
        TaskInfo {
            pid: pr.pid,
            name: self.workload.programs[pr.prog as usize].name.clone(),
            policy: task.policy.name(),
            nice: task.nice,
            rt_priority: task.rt_priority,
            state,
            class: self.sched.describe_task(rq, task),
        }
    }

    /// Every CPU and runqueue now.
    fn snapshot(&self, at_ns: u64, rule: String) -> Snapshot {
        let cpus = (0..self.ncpus)
            .map(|c| {
                let rq = &self.rqs[self.layout.domain_of(c)];
                CpuState {
                    cpu: c as u32,
                    curr: self.cpus[c].curr.map(|t| self.task_info(t, rq)),
                    need_resched: self.cpus[c].need_resched,
                }
            })
            .collect();
        let runqueues = self
            .rqs
            .iter()
            .map(|rq| {
                let mut ids = Vec::new();
                self.tasks
                    .with_view(|tasks| self.sched.for_each_queued(rq, tasks, &mut |t| ids.push(t)));
                RqState {
                    cpu: rq.cpu as u32,
                    global: self.layout == LockLayout::Global && self.ncpus > 1,
                    nr_running: rq.nr_running,
                    tasks: ids.into_iter().map(|t| self.task_info(t, rq)).collect(),
                }
            })
            .collect();
        Snapshot {
            at_ns,
            class: self.sched.class.name().to_string(),
            rule,
            cpus,
            runqueues,
        }
    }
}

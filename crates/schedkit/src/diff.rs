//! `schedkit diff`: two policies (or two eras or options of one) on the same machine,
//! workload and seed, their scheduling decisions compared in order (`sim::decisions`: each
//! pick, each placement of a woken or new task), the first that differs shown with the state
//! of both runs there, then both runs' figures.
//!
//! Run A records its decisions; run B compares its own with them as it goes and keeps its
//! state at the first that differs; A is then run again to that decision (the simulator is
//! deterministic: the rerun must make the same decision there, which is checked) to keep its
//! state. Both figures come from the first two runs, which the logs only read.

use crate::class::RtBalance;
use crate::machine::{Governor, Machine};
use crate::metrics::RunResult;
use crate::registry::PolicyKind;
use crate::sim::decisions::{Decision, DecisionKind, DecisionLog, Found, Snapshot, TaskInfo};
use crate::sim::{SimConfig, SimError};
use crate::workload::{LockMode, Workload};
use serde::Serialize;

/// Decisions compared at most by default (each kept costs 32 bytes while B runs).
pub const DEFAULT_LIMIT: u64 = 2_000_000;

/// What both runs share besides machine and workload.
#[derive(Clone, Copy, Debug)]
pub struct DiffConfig {
    pub duration_ns: u64,
    pub seed: u64,
    pub rt_balance: RtBalance,
    pub lock_mode: LockMode,
    pub governor: Option<Governor>,
    /// Compare at most this many decisions.
    pub limit: u64,
    /// Compare what was decided, not when.
    pub ignore_time: bool,
}

impl Default for DiffConfig {
    fn default() -> Self {
        DiffConfig {
            duration_ns: 10_000_000_000,
            seed: 1,
            rt_balance: RtBalance::Passive,
            lock_mode: LockMode::Handoff,
            governor: None,
            limit: DEFAULT_LIMIT,
            ignore_time: false,
        }
    }
}

/// One run of a diff.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub policy: String,
    /// How many decisions the whole run made.
    pub decisions: u64,
    /// Its decision at the first difference, with its state there (`None`: no difference, or
    /// this run made no decision there: it had ended).
    pub at: Option<Found>,
}

/// Two runs' decisions compared.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub a: Side,
    pub b: Side,
    /// Where the streams first differ (0 first), if they do within the limit.
    pub first: Option<u64>,
    /// What differs there, in words.
    pub what: Option<String>,
    /// Decisions compared and found the same (before the first difference).
    pub same: u64,
    pub limit: u64,
    /// The streams were the same up to the limit, and went on.
    pub limit_reached: bool,
    pub ignore_time: bool,
    /// Both runs' figures (A, then B).
    pub runs: Vec<RunResult>,
}

/// Runs `a` and `b` on `machine` and `workload` and compares their decisions.
pub fn diff(
    a: PolicyKind,
    b: PolicyKind,
    machine: &Machine,
    workload: &Workload,
    cfg: DiffConfig,
) -> Result<Diff, SimError> {
    if cfg.limit == 0 {
        return Err(SimError::Impossible(
            "compare at least one decision (a limit of 0)".into(),
        ));
    }
    let run = |p: PolicyKind, log: &mut DecisionLog| run_logged(p, machine, workload, &cfg, log);
    let mut log_a = DecisionLog::record(cfg.limit);
    let ra = run(a, &mut log_a)?;
    let seen_a = log_a.seen();
    let recorded = log_a.take_recorded();
    let a_len = recorded.len() as u64;
    let mut log_b = DecisionLog::compare(recorded, cfg.limit, cfg.ignore_time);
    let rb = run(b, &mut log_b)?;
    let seen_b = log_b.seen();
    let found_b = log_b.found().cloned();
    let first = match &found_b {
        Some(f) => Some(f.index),
        // B ended with every decision the same, before A did.
        None if seen_b < a_len => Some(seen_b),
        None => None,
    };
    let mut found_a = None;
    if let Some(i) = first.filter(|&i| i < a_len) {
        let mut rerun = DecisionLog::capture_at(i);
        run(a, &mut rerun)?;
        let expected = log_b.reference_at(i);
        let got = rerun.found().cloned();
        if got.as_ref().map(|f| f.decision) != expected {
            return Err(SimError::Invariant {
                at_ns: expected.map_or(0, |d| d.at_ns),
                what: format!(
                    "{} run again did not make its decision #{i} again ({:?}, then {:?}): \
                     the simulator is not deterministic",
                    a.label(),
                    expected,
                    got.map(|f| f.decision)
                ),
            });
        }
        found_a = got;
    }
    let what = first.map(|_| match (&found_a, &found_b) {
        (Some(x), Some(y)) => x.decision.differences(&y.decision),
        (Some(_), None) => format!("{}'s run had ended", b.label()),
        (None, _) => format!("{}'s run had ended", a.label()),
    });
    let limit_reached = first.is_none() && a_len == cfg.limit && seen_a > cfg.limit;
    Ok(Diff {
        a: Side {
            policy: a.label(),
            decisions: seen_a,
            at: found_a,
        },
        b: Side {
            policy: b.label(),
            decisions: seen_b,
            at: found_b,
        },
        same: first.unwrap_or(seen_a.min(seen_b).min(cfg.limit)),
        first,
        what,
        limit: cfg.limit,
        limit_reached,
        ignore_time: cfg.ignore_time,
        runs: vec![ra, rb],
    })
}

fn run_logged(
    p: PolicyKind,
    machine: &Machine,
    workload: &Workload,
    cfg: &DiffConfig,
    log: &mut DecisionLog,
) -> Result<RunResult, SimError> {
    let config = SimConfig {
        duration_ns: cfg.duration_ns,
        seed: cfg.seed,
        lock_mode: cfg.lock_mode,
        governor: cfg.governor,
        ..Default::default()
    };
    p.simulate_logged(cfg.rt_balance, machine, workload, config, Some(log))
}

fn secs(ns: u64) -> String {
    format!("{}.{:09} s", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// "pid 3 (yield)", the name taken from the state dump.
fn task_name(pid: u32, state: &Snapshot) -> String {
    if pid == 0 {
        return "idle".into();
    }
    let name = state
        .cpus
        .iter()
        .filter_map(|c| c.curr.as_ref())
        .chain(state.runqueues.iter().flat_map(|r| r.tasks.iter()))
        .find(|t| t.pid == pid)
        .map(|t| t.name.as_str());
    match name {
        Some(n) => format!("pid {pid} ({n})"),
        None => format!("pid {pid}"),
    }
}

/// One decision in a line.
fn decision_line(d: &Decision, state: &Snapshot) -> String {
    let t = |pid| task_name(pid, state);
    match d.kind {
        DecisionKind::Pick if d.prev == d.task => format!(
            "{}  pick on CPU {}: {} keeps the CPU",
            secs(d.at_ns),
            d.cpu,
            t(d.task)
        ),
        DecisionKind::Pick => format!(
            "{}  pick on CPU {}: {} -> {}",
            secs(d.at_ns),
            d.cpu,
            t(d.prev),
            t(d.task)
        ),
        DecisionKind::Wakeup | DecisionKind::Fork => format!(
            "{}  {} of {} from CPU {}: placed on CPU {}{}",
            secs(d.at_ns),
            if d.kind == DecisionKind::Wakeup {
                "wakeup"
            } else {
                "new task"
            },
            t(d.task),
            d.from,
            d.cpu,
            if d.preempt {
                ", which is asked to reschedule (preemption)"
            } else {
                ", no preemption"
            }
        ),
    }
}

fn task_text(t: &TaskInfo) -> String {
    let mut s = format!("pid {} ({}) {} nice {}", t.pid, t.name, t.policy, t.nice);
    if t.rt_priority > 0 {
        s += &format!(" rt_priority {}", t.rt_priority);
    }
    if !t.class.is_empty() {
        s += &format!(", {}", t.class);
    }
    s
}

/// The state of the CPUs a decision involved, and of their runqueues.
fn state_text(f: &Found, others: &[u32]) -> String {
    let s = &f.state;
    let mut cpus: Vec<u32> = vec![f.decision.cpu, f.decision.from];
    cpus.extend_from_slice(others);
    cpus.sort_unstable();
    cpus.dedup();
    let mut out = format!("  the rule that chose: {}\n", s.rule);
    let d = &f.decision;
    for c in s.cpus.iter().filter(|c| cpus.contains(&c.cpu)) {
        // A pick is recorded as it completes, before the host switches: `curr` is still prev.
        let switching = d.kind == DecisionKind::Pick && c.cpu == d.cpu && d.prev != d.task;
        out += &format!(
            "  CPU {}: {}{}{}\n",
            c.cpu,
            match &c.curr {
                Some(t) if switching => format!("switching from {}", task_text(t)),
                Some(t) => format!("running {}", task_text(t)),
                None if switching => "switching from idle".into(),
                None => "idle".into(),
            },
            if switching {
                format!(" to {}", task_name(d.task, s))
            } else {
                String::new()
            },
            if c.need_resched {
                " (need_resched set)"
            } else {
                ""
            }
        );
    }
    for rq in &s.runqueues {
        if !rq.global && !cpus.contains(&rq.cpu) {
            continue;
        }
        let whose = if rq.global {
            "the global runqueue".to_string()
        } else {
            format!("CPU {}'s runqueue", rq.cpu)
        };
        if rq.tasks.is_empty() {
            out += &format!("  {whose} (nr_running {}): empty\n", rq.nr_running);
            continue;
        }
        out += &format!(
            "  {whose} (nr_running {}), as its classes list it:\n",
            rq.nr_running
        );
        for t in &rq.tasks {
            out += &format!("    {}, {}\n", task_text(t), t.state);
        }
    }
    out
}

impl Diff {
    /// The first difference (or that there is none), each side's state there, then both
    /// runs' figures side by side.
    pub fn render(&self) -> String {
        let (a, b) = (&self.a, &self.b);
        let w = a.policy.len().max(b.policy.len());
        let mut out = String::new();
        match self.first {
            None => {
                out += &format!(
                    "No decision differs: {} and {} made the same {} decisions{}{}.\n",
                    a.policy,
                    b.policy,
                    self.same,
                    if self.ignore_time {
                        " (times not compared)"
                    } else {
                        ", at the same times"
                    },
                    if self.limit_reached {
                        format!(
                            " (the first {}: the limit; the runs went on, to {} and {} decisions)",
                            self.limit, a.decisions, b.decisions
                        )
                    } else {
                        String::new()
                    }
                );
            }
            Some(i) => {
                out += &format!(
                    "First differing decision: #{i} ({}{}); what differs: {}\n",
                    if i == 0 {
                        "the very first".to_string()
                    } else {
                        format!("the {i} before it are the same")
                    },
                    if self.ignore_time {
                        ", times not compared"
                    } else {
                        ""
                    },
                    self.what.as_deref().unwrap_or("")
                );
                if self.what.as_deref() == Some("the time") {
                    out += "  (the same choice at another time: --ignore-time compares only what was chosen)\n";
                }
                for s in [a, b] {
                    let line = match &s.at {
                        Some(f) => decision_line(&f.decision, &f.state),
                        None => format!(
                            "no decision #{i}: its run had ended after {} decisions",
                            s.decisions
                        ),
                    };
                    out += &format!("  {:<w$}  {line}\n", s.policy);
                }
                let involved = |s: &Side| {
                    s.at.as_ref()
                        .map(|f| vec![f.decision.cpu, f.decision.from])
                        .unwrap_or_default()
                };
                for (s, other) in [(a, b), (b, a)] {
                    if let Some(f) = &s.at {
                        out += &format!(
                            "\n{} at decision #{i} ({}, class {}), just after it:\n",
                            s.policy,
                            secs(f.state.at_ns),
                            f.state.class
                        );
                        out += &state_text(f, &involved(other));
                    }
                }
            }
        }
        out += &format!(
            "\nFigures of both runs ({} made {} decisions, {} made {}):\n",
            a.policy, a.decisions, b.policy, b.decisions
        );
        out += &crate::report::table(&self.runs);
        out
    }
}

#[cfg(test)]
mod tests;

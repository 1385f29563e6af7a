//! An rt-app file's translation as data (tasks as groups of statements, resources with their
//! schedkit names) and its two renderings: the [`Workload`] a run simulates, built directly,
//! and the workload file (TOML) that stands for it, an export only (`rtapp::to_toml`), which
//! [`crate::workload::file`] reads back into the same workload. Depends on the workload
//! types, never on the JSON reading or the simulator.

use super::{at, At, R};
use crate::task::{CpuMask, SchedPolicy};
use crate::workload::limits::{MAX_PROGRAM_OPS, MAX_TASKS, MAX_TOTAL_OPS};
use crate::workload::{
    ChanKind, ChannelSpec, Dist, LockSpec, Op, ProgramBuilder, TaskSpec, Workload,
};
use std::collections::HashMap;
use std::fmt::Write;

/// One statement of a translated task, resources by their schedkit names.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Stmt {
    /// `run`, µs.
    Compute(i64),
    /// `sleep` (and a task's `delay`), µs.
    Sleep(i64),
    Yield,
    Lock(String),
    Unlock(String),
    CondSignal(String),
    CondBroadcast(String),
    /// Condition variable, mutex.
    CondWait(String, String),
    Timer {
        timer: String,
        period_us: i64,
        absolute: bool,
    },
    /// `fork`: a thread running the task of this index.
    Thread(usize),
    /// A policy (schedkit's name) and its RT priority (0 for the others).
    Policy(&'static str, i64),
    Nice(i64),
    Affinity(Vec<i64>),
    /// `None`: forever.
    Loop(Option<i64>),
    End,
    Count,
}

/// One rt-app task: a group of `instance` tasks running its program.
pub(super) struct Group {
    /// Its name in the rt-app file, and as a schedkit group (the same where it is plain).
    pub task: String,
    pub name: String,
    pub instance: i64,
    pub policy: &'static str,
    pub nice: i64,
    pub rt_priority: i64,
    /// The SCHED_DEADLINE reservation, for a deadline task.
    pub dl: Option<crate::task::DlParams>,
    pub cpus: Option<Vec<i64>>,
    pub prog: Vec<Stmt>,
}

/// A whole rt-app file, translated.
pub(super) struct Translation {
    pub name: String,
    /// (rt-app name, kind: "mutex", "condvar", "timer", "task-timer", schedkit name), in the
    /// order of first use.
    pub resources: Vec<(String, &'static str, String)>,
    pub groups: Vec<Group>,
}

/// `s` as one line of a TOML comment: control characters and the like escaped, so that no
/// name can end the comment and start a definition.
fn comment(s: &str) -> String {
    s.escape_debug().to_string()
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn policy_of(name: &str) -> SchedPolicy {
    SchedPolicy::parse(name).expect("the translation names only schedkit's policies")
}

impl Stmt {
    /// The statement as the workload file writes it.
    fn text(&self, groups: &[Group]) -> String {
        match self {
            Stmt::Compute(us) => format!("compute {us}us"),
            Stmt::Sleep(us) => format!("sleep {us}us"),
            Stmt::Yield => "yield".into(),
            Stmt::Lock(m) => format!("lock {m}"),
            Stmt::Unlock(m) => format!("unlock {m}"),
            Stmt::CondSignal(c) => format!("cond-signal {c}"),
            Stmt::CondBroadcast(c) => format!("cond-broadcast {c}"),
            Stmt::CondWait(c, m) => format!("cond-wait {c} {m}"),
            Stmt::Timer {
                timer,
                period_us,
                absolute,
            } => {
                let mode = if *absolute { " absolute" } else { "" };
                format!("timer {timer} {period_us}us{mode}")
            }
            Stmt::Thread(g) => format!("thread {}", groups[*g].name),
            Stmt::Policy(p, 0) => format!("policy {p}"),
            Stmt::Policy(p, rt) => format!("policy {p} {rt}"),
            Stmt::Nice(n) => format!("nice {n}"),
            Stmt::Affinity(c) => {
                let list: Vec<String> = c.iter().map(|c| c.to_string()).collect();
                format!("affinity {}", list.join(","))
            }
            Stmt::Loop(None) => "loop forever".into(),
            Stmt::Loop(Some(n)) => format!("loop {n}"),
            Stmt::End => "end".into(),
            Stmt::Count => "count".into(),
        }
    }
}

/// CPUs as a mask, each below the simulator's limit.
fn mask(cpus: &[i64], path: &str) -> R<CpuMask> {
    let mut m = CpuMask::empty();
    for &c in cpus {
        if !(0..CpuMask::MAX_CPUS as i64).contains(&c) {
            return Err(at(
                path,
                format!("CPU {c} is outside 0..{}", CpuMask::MAX_CPUS),
            ));
        }
        m.set(c as usize);
    }
    Ok(m)
}

impl Translation {
    /// The workload file that stands for the translation.
    pub fn toml(&self) -> String {
        let mut out = format!(
            "# Translated from rt-app JSON by schedkit (workload/rtapp.rs).\nname = {}\nthroughput = \"activations/s\"\n",
            quote(&self.name)
        );
        for (orig, kind, safe) in &self.resources {
            let _ = writeln!(out, "\n# rt-app resource {}", comment(orig));
            if *kind == "mutex" {
                let _ = writeln!(out, "[[lock]]\nname = {}\nkind = \"mutex\"", quote(safe));
            } else {
                let _ = writeln!(
                    out,
                    "[[channel]]\nname = {}\nkind = \"{kind}\"",
                    quote(safe)
                );
            }
        }
        for g in &self.groups {
            let _ = writeln!(out, "\n# rt-app task {}", comment(&g.task));
            let _ = writeln!(
                out,
                "[[group]]\nname = {}\ncount = {}",
                quote(&g.name),
                g.instance
            );
            let _ = writeln!(out, "policy = \"{}\"", g.policy);
            if let Some(d) = &g.dl {
                let _ = writeln!(
                    out,
                    "dl_runtime = \"{}ns\"\ndl_deadline = \"{}ns\"\ndl_period = \"{}ns\"",
                    d.runtime_ns, d.deadline_ns, d.period_ns
                );
            } else if g.rt_priority > 0 {
                let _ = writeln!(out, "rt_priority = {}", g.rt_priority);
            } else {
                let _ = writeln!(out, "nice = {}", g.nice);
            }
            if let Some(c) = &g.cpus {
                let list: Vec<String> = c.iter().map(|c| c.to_string()).collect();
                let _ = writeln!(out, "affinity = [{}]", list.join(", "));
            }
            out.push_str("program = [\n");
            for s in &g.prog {
                let _ = writeln!(out, "  {},", quote(&s.text(&self.groups)));
            }
            out.push_str("]\n");
        }
        out
    }

    /// The workload, built as data: mutexes become locks and the other resources channels,
    /// in the order of first use; each rt-app task a program run by its instances (each its
    /// own process). Errors name the rt-app task; [`Workload::validate`] is the last check.
    pub fn build(&self, path: &str) -> R<Workload> {
        let mut w = Workload {
            name: self.name.clone(),
            programs: Vec::with_capacity(self.groups.len()),
            channels: Vec::new(),
            tasks: Vec::new(),
            throughput_unit: "activations/s".into(),
            per_op_label: None,
            rtmigrate: None,
            locks: Vec::new(),
            throughput_scale: 1.0,
            changes: Vec::new(),
        };
        // Schedkit name -> channel or lock index.
        let mut chans: HashMap<&str, u32> = HashMap::new();
        let mut locks: HashMap<&str, u32> = HashMap::new();
        for (_, kind, safe) in &self.resources {
            let kind = match *kind {
                "mutex" => {
                    locks.insert(safe, w.locks.len() as u32);
                    w.locks
                        .push((safe.clone(), LockSpec::Mutex { spin: false }));
                    continue;
                }
                "condvar" => ChanKind::CondVar,
                "timer" => ChanKind::Timer,
                "task-timer" => ChanKind::TaskTimer,
                k => unreachable!("resource kind {k}"),
            };
            chans.insert(safe, w.channels.len() as u32);
            w.channels.push(ChannelSpec {
                kind,
                capacity: None,
            });
        }
        let chan = |n: &String| chans[n.as_str()];
        let lock = |n: &String| locks[n.as_str()];
        let (mut ntasks, mut total_ops, mut mm_next) = (0u64, 0u64, 0u32);
        for (gi, g) in self.groups.iter().enumerate() {
            let tp = format!("tasks.{}", g.task);
            let count = g.instance as u32;
            ntasks += count as u64;
            if ntasks > MAX_TASKS {
                return Err(at(
                    &tp,
                    format!("{ntasks} tasks in all, more than the limit of {MAX_TASKS}"),
                ));
            }
            let affinity = match &g.cpus {
                Some(c) => Some(mask(c, &format!("{tp}.cpus"))?),
                None => None,
            };
            let mut b = ProgramBuilder::new();
            for s in &g.prog {
                match s {
                    Stmt::Compute(us) => b.push(Op::Compute(Dist::Const(*us as u64 * 1000))),
                    Stmt::Sleep(us) => b.push(Op::Sleep {
                        dur: Dist::Const(*us as u64 * 1000),
                        uninterruptible: false,
                        irq_cpu: None,
                    }),
                    Stmt::Yield => b.push(Op::Yield),
                    Stmt::Lock(m) => b.push(Op::Lock(lock(m))),
                    Stmt::Unlock(m) => b.push(Op::Unlock(lock(m))),
                    Stmt::CondSignal(c) => b.push(Op::CondSignal {
                        cond: chan(c),
                        all: false,
                    }),
                    Stmt::CondBroadcast(c) => b.push(Op::CondSignal {
                        cond: chan(c),
                        all: true,
                    }),
                    Stmt::CondWait(c, m) => {
                        b.push(Op::CondWait {
                            cond: chan(c),
                            lock: lock(m),
                        });
                        // pthread_cond_wait takes the mutex again before it returns.
                        b.push(Op::Lock(lock(m)));
                    }
                    Stmt::Timer {
                        timer,
                        period_us,
                        absolute,
                    } => b.push(Op::Timer {
                        timer: chan(timer),
                        period: *period_us as u64 * 1000,
                        absolute: *absolute,
                    }),
                    Stmt::Thread(t) => b.push(Op::Fork {
                        prog: *t as u32,
                        thread: true,
                    }),
                    Stmt::Policy(p, rt) => b.push(Op::SetPolicy(policy_of(p), *rt as u8)),
                    Stmt::Nice(n) => b.push(Op::SetNice(*n as i32)),
                    Stmt::Affinity(c) => b.push(Op::SetAffinity(mask(c, &tp)?)),
                    Stmt::Loop(n) => b.begin(n.map(|n| n as u64)),
                    Stmt::End => b.close(),
                    Stmt::Count => b.push(Op::Count),
                }
            }
            if b.len() as u64 > MAX_PROGRAM_OPS {
                return Err(at(
                    &tp,
                    format!("more than {MAX_PROGRAM_OPS} statements in one program"),
                ));
            }
            total_ops += b.len() as u64;
            if total_ops > MAX_TOTAL_OPS {
                return Err(at(
                    &tp,
                    format!("the programs have more than {MAX_TOTAL_OPS} statements together"),
                ));
            }
            w.programs.push(b.build(g.name.clone()));
            let policy = policy_of(g.policy);
            let origin = format!("{path} {tp}");
            for i in 0..count {
                let mut t = TaskSpec::new(gi as u32);
                t.nice = g.nice as i32;
                t.policy = policy;
                t.rt_priority = g.rt_priority as u8;
                t.dl = g.dl;
                t.affinity = affinity;
                t.mm = mm_next + i;
                t.member = i;
                t.origin = Some(origin.clone());
                w.tasks.push(t);
            }
            mm_next += count.max(1);
        }
        if w.tasks.is_empty() {
            return Err(at(
                "tasks",
                "every task has \"instance\": 0: nothing starts",
            ));
        }
        w.validate().map_err(|e| At("(workload)".into(), e))?;
        Ok(w)
    }
}

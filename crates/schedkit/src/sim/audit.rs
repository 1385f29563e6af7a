//! The simulator's checks on itself: the invariant audit (every task in exactly one place),
//! the RT-placement audit (a runnable RT task never waits while a CPU it may use runs less
//! important work), the count of sleeping locks with a unit free and a waiter asleep, and the
//! conservation of CPU time at the end of a run.
//!
//! Read-only over the run's state (only `count_stranded` bumps its counter): an audit must
//! never change what the run does, so that its figures are the same at any `audit_every`.

use super::*;

impl<P: SchedClass> Sim<'_, '_, P> {
    /// Every task is in exactly one place: running on the CPU that names it, queued once, or
    /// blocked on something that will wake it; dead tasks are nowhere.
    pub(super) fn audit(&self) -> Result<(), SimError> {
        let bad = |what: String| {
            Err(SimError::Invariant {
                at_ns: self.now,
                what,
            })
        };
        let mut seen = vec![0u8; self.tasks.len()];
        for rq in &self.rqs {
            let mut dup = None;
            self.tasks.with_view(|tasks| {
                self.sched.for_each_queued(rq, tasks, &mut |t| {
                    seen[t.index()] += 1;
                    if seen[t.index()] > 1 {
                        dup = Some(t);
                    }
                })
            });
            if let Some(t) = dup {
                return bad(format!("{t} is queued twice"));
            }
        }
        for (c, cpu) in self.cpus.iter().enumerate() {
            if let Some(t) = cpu.curr {
                match self.tasks[t].state {
                    TaskState::Running(x) if x == c => {}
                    TaskState::Sleeping { .. } => {}
                    s => return bad(format!("CPU {c} runs {t}, which is {s:?}")),
                }
            }
        }
        for task in self.tasks.iter() {
            let t = task.id;
            let pr = &self.procs[t.index()];
            match task.state {
                TaskState::Running(c) => {
                    if self.cpus[c].curr != Some(t) {
                        return bad(format!(
                            "{t} claims CPU {c}, which runs {:?}",
                            self.cpus[c].curr
                        ));
                    }
                }
                TaskState::Queued => {
                    if seen[t.index()] != 1 {
                        return bad(format!("{t} is runnable but on no runqueue (lost)"));
                    }
                }
                TaskState::Sleeping { .. } => {
                    let on_cpu = self.cpus.iter().any(|c| c.curr == Some(t));
                    if pr.block == Block::None && !on_cpu {
                        return bad(format!("{t} sleeps with nothing to wake it"));
                    }
                    if seen[t.index()] > 0 && !on_cpu {
                        return bad(format!("{t} sleeps but is still queued"));
                    }
                }
                TaskState::Dead => {
                    if seen[t.index()] > 0 || self.cpus.iter().any(|c| c.curr == Some(t)) {
                        return bad(format!("{t} is dead but still scheduled"));
                    }
                }
                TaskState::New => return bad(format!("{t} was never enqueued")),
            }
        }
        Ok(())
    }

    /// Counts, per sleeping lock, whether a queued task sleeps while a unit is free.
    pub(super) fn count_stranded(&mut self) {
        for (i, lk) in self.sleeplocks.iter().enumerate() {
            let l = i as u32;
            let asleep = |w: TaskId| {
                self.procs[w.index()].block == Block::Lock(l)
                    && !matches!(self.tasks[w].state, TaskState::Running(_))
            };
            if lk.stranded(asleep) {
                self.tally.stranded[i] += 1;
            }
        }
    }

    /// Is a runnable RT task waiting while a CPU it may run on runs less important work
    /// (a lower RT priority, a normal task, or idle) and no such CPU has a reschedule pending?
    /// That is the promise of push/pull: the highest-priority runnable RT tasks run, as far as
    /// their affinity allows, within one scheduling event.
    pub(super) fn rt_inversion(&self) -> bool {
        let rank = |t: Option<TaskId>| {
            t.map_or(-1, |t| {
                if self.tasks[t].is_rt() {
                    self.tasks[t].rt_priority as i32
                } else {
                    0
                }
            })
        };
        self.tasks
            .iter()
            .filter(|t| t.state == TaskState::Queued && t.is_rt())
            .any(|task| {
                let mine = task.rt_priority as i32;
                let mut lower = false;
                let mut pending = false;
                for c in task.cpus_allowed.iter(self.ncpus) {
                    let cpu = &self.cpus[c];
                    // A normal task the fair server picked runs as the deadline class's.
                    let served = cpu
                        .curr
                        .is_some_and(|t| self.sched.served(&self.rqs[self.layout.domain_of(c)], t));
                    if !served && rank(cpu.curr) < mine {
                        lower = true;
                        pending |= cpu.need_resched || cpu.ipi_pending;
                    }
                }
                lower && !pending
            })
    }

    /// CPU time is conserved: each CPU's categories add up to the elapsed time, and the time
    /// charged to tasks equals the CPUs' user, system and refill time.
    pub(super) fn check_conservation(&self, end: u64) -> Result<(), SimError> {
        let mut charged_cpus = 0u64;
        for (i, c) in self.cpus.iter().enumerate() {
            let sum: u64 = c.acct.total();
            if sum != end {
                return Err(SimError::Invariant {
                    at_ns: end,
                    what: format!("CPU {i} accounted {sum} ns of {end} ns"),
                });
            }
            charged_cpus += c.acct.user + c.acct.sys + c.acct.refill;
        }
        let charged_tasks: u64 = self.tally.dead_exec_ns
            + self
                .tasks
                .iter()
                .filter(|t| t.state != TaskState::Dead)
                .map(|t| t.sum_exec_ns)
                .sum::<u64>();
        if charged_tasks != charged_cpus {
            return Err(SimError::Invariant {
                at_ns: end,
                what: format!("tasks were charged {charged_tasks} ns but CPUs ran tasks for {charged_cpus} ns"),
            });
        }
        Ok(())
    }
}

//! Where tasks come from and go: slots reused after death, the live-task limit, the memory a
//! run will need, and the detection of a run in which no task can ever run again.

use super::*;
use crate::workload::limits::{MAX_RUN_MEMORY, MAX_TASKS};

impl<P: SchedClass> Sim<'_, '_, P> {
    /// Refuses a workload whose tasks, channels and programs would not fit the memory limit,
    /// from their counts and the sizes of the structures that hold them.
    pub(super) fn check_memory(workload: &Workload) -> Result<(), SimError> {
        let tasks = workload.tasks.len() as u64;
        let per_task = (std::mem::size_of::<crate::task::Task<P::TaskData>>()
            + std::mem::size_of::<Proc>()
            + std::mem::size_of::<CpuStatus>()) as u64;
        let ops: u64 = workload.programs.iter().map(|p| p.ops.len() as u64).sum();
        let bytes = tasks * per_task
            + workload.channels.len() as u64 * std::mem::size_of::<Chan>() as u64
            + ops * std::mem::size_of::<Op>() as u64;
        if bytes > MAX_RUN_MEMORY {
            return Err(SimError::Impossible(format!(
                "the run would need about {:.1} GiB for {tasks} tasks, {} channels and {ops} program statements (limit {} GiB)",
                bytes as f64 / (1u64 << 30) as f64,
                workload.channels.len(),
                MAX_RUN_MEMORY >> 30
            )));
        }
        Ok(())
    }

    /// A slot for a new task, a dead task's if there is one, with its cache lines fresh (a new
    /// `task_struct` is new memory); `Err((live, limit))` once `limit` tasks are alive.
    pub(super) fn take_slot(&mut self) -> Result<TaskId, (usize, u64)> {
        let live = self.tasks.len() - self.free_slots.len();
        let limit = self.cfg.max_live_tasks.min(MAX_TASKS);
        if live as u64 >= limit {
            return Err((live, limit));
        }
        self.tasks_created += 1;
        let t = match self.free_slots.pop() {
            Some(t) => {
                self.tasks[t] = crate::task::Task::new(t);
                t
            }
            None => self.tasks.spawn(),
        };
        if let Some(ic) = self.ic.as_mut() {
            ic.forget_task(t);
        }
        Ok(t)
    }

    /// A slot for a task forked by `parent` on `cpu`.
    pub(super) fn alloc_task(&mut self, cpu: CpuId, parent: TaskId) -> Result<TaskId, SimError> {
        self.take_slot().map_err(|(live, limit)| {
            let pr = &self.procs[parent.index()];
            let prog = &self.workload.programs[pr.prog as usize];
            SimError::Impossible(format!(
                "{} alive at {:.3} ms: {} forks past the limit of {limit} live tasks (a fork bomb?) on CPU {cpu}",
                live,
                self.now as f64 / 1e6,
                prog.where_is(pr.pc as usize)
            ))
        })
    }

    /// Installs the host state of task `t` (a new slot or a reused one; a reused slot keeps
    /// counting its incarnations and sleep generations, so that nothing addressed to the dead
    /// task reaches the new one).
    pub(super) fn put_proc(&mut self, t: TaskId, mut pr: Proc) {
        if t.index() < self.procs.len() {
            let old = &self.procs[t.index()];
            pr.incarnation = old.incarnation + 1;
            pr.sleep_gen = old.sleep_gen;
            self.procs[t.index()] = pr;
        } else {
            self.procs.push(pr);
        }
    }

    /// The dead task `x` leaves the table: its fairness share and CPU time are folded into
    /// the run's sums and its slot is free for the next fork.
    pub(super) fn retire(&mut self, x: TaskId) {
        let task = &self.tasks[x];
        let pr = &self.procs[x.index()];
        let life = pr.died.unwrap_or(self.now).saturating_sub(pr.born);
        if life > 0 {
            let share = task.sum_exec_ns as f64 / (task.weight() as f64 * life as f64);
            self.dead_shares.0 += 1;
            self.dead_shares.1 += share;
            self.dead_shares.2 += share * share;
        }
        self.dead_exec_ns += task.sum_exec_ns;
        self.free_slots.push(x);
    }

    /// The parent of `x` if it is still alive and still the task that forked `x` (its slot
    /// may have been reused).
    pub(super) fn parent_of(&self, x: TaskId) -> Option<TaskId> {
        let p = self.tasks[x].parent?;
        (self.tasks[p].state != TaskState::Dead
            && self.procs[p.index()].incarnation == self.procs[x.index()].parent_incarnation)
            .then_some(p)
    }

    /// No task can ever run again: every CPU is idle with nothing pending, nothing is
    /// runnable, and no sleep timer will fire, yet foreground tasks remain.
    pub(super) fn stuck(&self) -> bool {
        self.foreground_alive > 0
            && self.pending_starts == 0
            && self.timers.is_empty()
            && self.cpus.iter().all(|c| {
                c.curr.is_none() && c.seg == SegKind::Idle && !c.need_resched && !c.ipi_pending
            })
            && self.status.iter().all(|s| s.nr_running == 0)
    }

    /// What each live task waits for, and since when (for a deadlock's report).
    pub(super) fn waits(&self) -> Vec<String> {
        let mut out = Vec::new();
        for task in self.tasks.iter() {
            if task.state == TaskState::Dead {
                continue;
            }
            let t = task.id;
            let pr = &self.procs[t.index()];
            let prog = &self.workload.programs[pr.prog as usize];
            let on = match pr.block {
                Block::Recv(c) if self.chans[c as usize].kind == ChanKind::CondVar => {
                    format!("a signal on condition variable {c}")
                }
                Block::Recv(c) => format!("a message on channel {c}"),
                Block::Send(c) => format!("room on full channel {c}"),
                Block::Lock(l) => format!("lock '{}'", self.workload.locks[l as usize].0),
                Block::Child => "a child to exit".into(),
                Block::Timer => "a timer".into(),
                Block::Exiting => "its exit".into(),
                Block::None => "nothing (it is runnable)".into(),
            };
            out.push(format!(
                "{t} ({}) waits for {on} since {:.3} ms",
                prog.where_is(pr.pc as usize),
                pr.block_since as f64 / 1e6
            ));
        }
        out
    }
}

//! Where tasks come from and go: the workload's tasks created and placed (at the start or
//! later), each task's host state, slots reused after death, the live-task limit, the memory a
//! run will need, and the detection of a run in which no task can ever run again.
//!
//! Must never schedule: a new task is handed to the core (`place_initial`, `fork`) to place.

use super::*;
use crate::workload::limits::{MAX_RUN_MEMORY, MAX_TASKS};

impl<P: SchedClass> Sim<'_, '_, P> {
    /// Places the workload's tasks present from the start and posts what comes later: the
    /// tasks that start later, the workload's changes, the phases, and each CPU's first IPI
    /// and tick.
    pub(super) fn start_tasks(&mut self) -> Result<(), SimError> {
        self.trace_begin();
        let w = self.workload;
        for i in 0..w.tasks.len() {
            let spec = &w.tasks[i];
            if spec.start_ns > 0 {
                // It starts later: the run waits for it as for a task alive.
                self.check_affinity(i)?;
                if !spec.background {
                    self.foreground_alive += 1;
                }
                self.pending_starts += 1;
                self.post(spec.start_ns, Ev::Start { spec: i as u32 });
                continue;
            }
            let (t, cpu) = self.create_spec_task(i)?;
            let d = self.layout.domain_of(cpu);
            let mut ctx = Ctx::new(
                0,
                self.machine.hz(),
                self.ncpus,
                self.tasks.view(),
                &mut self.ops_total,
            );
            core::attr::place_initial(&self.sched, &mut ctx, &mut self.rqs[d], cpu, t);
            self.procs[t.index()].runnable_since = Some(0);
            self.procs[t.index()].waiting_since = Some(0);
            self.watch_wait(t, 0);
            self.trace_wakeup_new(t, cpu);
            self.publish(cpu);
        }
        // After the starts, so that a change made when its group starts finds the group there
        // (events of one time run in the order posted).
        for (i, c) in w.changes.iter().enumerate() {
            self.post(c.change.at_ns, Ev::Change { i: i as u32 });
        }
        for c in 0..self.ncpus {
            self.cpus[c].need_resched = true;
            self.post(0, Ev::Ipi { cpu: c as u32 });
            self.post(self.tick_ns, Ev::Tick { cpu: c as u32 });
        }
        if !self.cfg.phases.is_empty() {
            self.tally.phase = Some(Box::new(self.tally.phase_tally(0)));
            for i in 0..self.cfg.phases.len() {
                let at = self.cfg.phases[i];
                self.post(at, Ev::Phase);
            }
        }
        Ok(())
    }

    pub(super) fn new_proc(
        &mut self,
        prog: u32,
        part: u32,
        interactive: bool,
        background: bool,
    ) -> Proc {
        if !background {
            self.foreground_alive += 1;
        }
        self.last_pid += 1;
        Proc {
            pid: self.last_pid,
            prog,
            pc: 0,
            loop_top: LoopFrame::default(),
            loop_depth: 0,
            outer_loops: Vec::new(),
            compute_left: 0,
            computing: false,
            entered: false,
            spin: None,
            audio: None,
            lock_since: None,
            lock_waited: false,
            part,
            member: 0,
            interactive,
            background,
            wss_kb: self.workload.programs[prog as usize].working_set_kb,
            block: Block::None,
            block_since: 0,
            incarnation: 0,
            parent_incarnation: 0,
            sleep_gen: 0,
            timer_cpu: NO_CPU,
            runnable_since: None,
            waiting_since: None,
            last_cpu: NO_CPU,
            warmth: Warmth::default(),
            children: 0,
            zombies: 0,
            born: self.now,
            died: None,
            // Start tasks and forked children replace it with their own stream.
            rng: crate::workload::TaskRng::root(self.cfg.seed, u64::MAX),
            fork_mm: None,
        }
    }

    /// The CPUs workload task `i` may run on here, or the error naming it when there are none.
    fn check_affinity(&self, i: usize) -> Result<crate::task::CpuMask, SimError> {
        let all = self.machine.topology.all_cpus();
        let spec = &self.workload.tasks[i];
        let allowed = spec.affinity.map_or(all, |a| a.and(&all));
        if !allowed.is_empty() {
            return Ok(allowed);
        }
        let cpus = spec
            .affinity
            .map(|a| {
                a.iter(crate::task::CpuMask::MAX_CPUS)
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let what = match &spec.origin {
            Some(o) => format!(
                "{o}: group '{}'",
                self.workload.programs[spec.prog as usize].name
            ),
            None => format!(
                "task {i} ({})",
                self.workload.programs[spec.prog as usize].name
            ),
        };
        Err(SimError::Impossible(format!(
            "{what} may only run on CPU(s) {cpus}, none of which {} has (CPUs 0 to {})",
            self.machine.name(),
            self.ncpus - 1
        )))
    }

    /// Creates the task of workload task `i` (not yet queued) and the CPU it starts from:
    /// round robin over its allowed CPUs, as if already balanced. Tasks present from the
    /// start take consecutive slots; one started later takes a free slot as a fork would.
    pub(super) fn create_spec_task(&mut self, i: usize) -> Result<(TaskId, CpuId), SimError> {
        let allowed = self.check_affinity(i)?;
        let w = self.workload;
        let spec = &w.tasks[i];
        let later = spec.start_ns > 0;
        let t = if later {
            self.take_slot().map_err(|(live, limit)| {
                SimError::Impossible(format!(
                    "task {i} ({}) starts at {:.3} ms with {live} tasks alive: past the limit of {limit} live tasks",
                    w.programs[spec.prog as usize].name,
                    self.now as f64 / 1e6
                ))
            })?
        } else {
            self.tally.tasks_created += 1;
            self.tasks.spawn()
        };
        {
            let task = &mut self.tasks[t];
            task.nice = spec.nice;
            task.policy = spec.policy;
            task.rt_priority = spec.rt_priority;
            task.slice_ns = spec.slice_ns.and_then(std::num::NonZeroU64::new);
            task.uclamp_pct = spec.uclamp_pct;
            task.cpus_allowed = allowed;
            task.mm = spec.mm;
            task.dl_entity = None;
            if let Some(p) = spec.dl {
                task.dl_mut().params = p;
            }
        }
        if spec.policy.is_dl() {
            // sched_setattr(SCHED_DEADLINE) before the task first runs: admission control.
            let what = match &spec.origin {
                Some(o) => format!("{o}: group '{}'", w.programs[spec.prog as usize].name),
                None => format!("task {i} ({})", w.programs[spec.prog as usize].name),
            };
            self.sched
                .dl
                .admit(&mut self.tasks[t], &what)
                .map_err(SimError::Impossible)?;
        }
        let allowed_cpus: Vec<CpuId> = allowed.iter(self.ncpus).collect();
        let cpu = allowed_cpus[i % allowed_cpus.len()];
        if let Some(mm) = self.mm.as_mut() {
            let pages = w.programs[spec.prog as usize].mm_pages;
            if mm.size(spec.mm) == 0 && mm.would_exceed(pages as u64) {
                return Err(SimError::Impossible(format!(
                    "task {i} ({}): the workload's address spaces pass {} pages",
                    w.programs[spec.prog as usize].name,
                    mm::MAX_LIVE_PAGES
                )));
            }
            mm.attach(spec.mm, pages, if later { cpu } else { 0 });
        }
        let mut pr = self.new_proc(
            spec.prog,
            spec.part as u32,
            spec.interactive,
            spec.background,
        );
        pr.member = spec.member;
        pr.rng = crate::workload::TaskRng::root(self.cfg.seed, i as u64);
        if later {
            self.put_proc(t, pr);
        } else {
            self.procs.push(pr);
        }
        self.tasks[t].cpu = cpu;
        self.tasks[t].timestamp_ns = self.now;
        Ok((t, cpu))
    }

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
        self.tally.tasks_created += 1;
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

    /// The deadline class's record of task `x`.
    pub(super) fn dl_record(&self, x: TaskId) -> crate::metrics::DlTaskReport {
        let t = &self.tasks[x];
        let pr = &self.procs[x.index()];
        let p = t.dl().params;
        crate::metrics::DlTaskReport {
            name: self.workload.programs[pr.prog as usize].name.clone(),
            member: pr.member,
            runtime_us: p.runtime_ns as f64 / 1e3,
            deadline_us: p.deadline_ns as f64 / 1e3,
            period_us: p.period_ns as f64 / 1e3,
            jobs: t.dl().jobs,
            deadline_misses: t.dl().misses,
            throttles: t.dl().throttles,
        }
    }

    /// The deadline report: the dead tasks' records, then the live ones' (in slot order);
    /// none where no deadline task ran.
    pub(super) fn deadline_report(&self) -> Option<crate::metrics::DeadlineReport> {
        let mut r = self.tally.dl.clone();
        for (i, t) in self.tasks.iter().enumerate() {
            if t.dl().params.runtime_ns > 0 && t.state != TaskState::Dead && i < self.procs.len() {
                r.tasks.push(self.dl_record(t.id));
            }
        }
        if r.tasks.is_empty() {
            return None;
        }
        r.jobs = r.tasks.iter().map(|t| t.jobs).sum();
        r.deadline_misses = r.tasks.iter().map(|t| t.deadline_misses).sum();
        r.throttles = r.tasks.iter().map(|t| t.throttles).sum();
        Some(r)
    }

    /// The dead task `x` leaves the table: its fairness share and CPU time are folded into
    /// the run's sums and its slot is free for the next fork.
    pub(super) fn retire(&mut self, x: TaskId) {
        let task = &self.tasks[x];
        let pr = &self.procs[x.index()];
        let life = pr.died.unwrap_or(self.now).saturating_sub(pr.born);
        if life > 0 {
            let share = task.sum_exec_ns as f64 / (task.weight() as f64 * life as f64);
            self.tally.dead_shares.add(share);
        }
        self.tally.dead_exec_ns += task.sum_exec_ns;
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

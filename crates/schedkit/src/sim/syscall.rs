//! The kernel side of the system calls a program makes: channels (send, receive), the
//! sleeping locks (`down()`/`mutex_lock()`, `up()`/`mutex_unlock()`, whose state machines are
//! `crate::sleeplock`'s) and condition variables, fork, exit, exec and wait with their address
//! spaces (`mm.rs`), blocking and timed sleeps, and the attribute changes a task makes to
//! itself (nice, policy, affinity). Each returns the kernel time it costs.
//!
//! Must never call a class hook or take a runqueue lock itself: a wakeup, a fork's placement or
//! an attribute change goes through `core_path` and the core.

use super::*;

pub(super) struct Chan {
    pub(super) kind: ChanKind,
    pub(super) capacity: Option<u32>,
    pub(super) msgs: u64,
    /// A shared timer's next expiry (None until its first use).
    pub(super) timer_next: Option<u64>,
    pub(super) recv_waiters: VecDeque<TaskId>,
    pub(super) send_waiters: VecDeque<TaskId>,
}

impl<P: SchedClass> Sim<'_, '_, P> {
    pub(super) fn k(&self) -> &crate::machine::KernelSpec {
        &self.machine.profile.kernel
    }

    pub(super) fn syscall_ns(&self) -> u64 {
        self.machine.profile.costs.syscall_ns as u64
    }

    /// `t` goes to sleep now, waiting for `why` (it leaves the CPU at the end of this step).
    pub(super) fn block(&mut self, t: TaskId, why: Block, uninterruptible: bool) {
        let p = &mut self.procs[t.index()];
        p.block = why;
        p.block_since = self.now;
        self.tasks[t].state = TaskState::Sleeping { uninterruptible };
    }

    /// `t` sleeps until `at` (a timed sleep, a timer's expiry): blocked on its timer, with a
    /// new generation so that an older pending expiry does not wake it. The interrupt runs on
    /// `irq_cpu` where given, otherwise on the CPU `t` sleeps on.
    pub(super) fn sleep_until(
        &mut self,
        t: TaskId,
        at: u64,
        uninterruptible: bool,
        irq_cpu: Option<u32>,
    ) {
        self.block(t, Block::Timer, uninterruptible);
        let p = &mut self.procs[t.index()];
        p.sleep_gen += 1;
        p.timer_cpu = irq_cpu.unwrap_or(NO_CPU);
        let gen = p.sleep_gen;
        self.post(
            at,
            Ev::Timer {
                task: t.0,
                gen,
                stage: super::engine::TimerStage::Expiry,
            },
        );
    }

    /// `set_user_nice` / `sched_setscheduler` on the running task `t`.
    pub(super) fn change_attr(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        f: impl FnOnce(&mut crate::task::Task<P::TaskData>),
    ) -> Result<u64, SimError> {
        let (_, cost, _) =
            self.core_path(cpu, self.now, |s| core::attr::change_attr(s, cpu, t, f))?;
        Ok(cost)
    }

    /// Binds the running task `t` to `mask`; off its CPU, schedule() hands it to an allowed one
    /// (the migration thread's job in 2.6's `set_cpus_allowed`).
    pub(super) fn bind(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        mask: crate::task::CpuMask,
    ) -> Result<Step, SimError> {
        let allowed = mask.and(&self.machine.topology.all_cpus());
        if allowed.is_empty() {
            return Err(SimError::Impossible(format!(
                "program '{}' binds itself to CPUs {:?}, none of which {} has",
                self.workload.programs[self.procs[t.index()].prog as usize].name,
                mask.iter(crate::task::CpuMask::MAX_CPUS)
                    .collect::<Vec<_>>(),
                self.machine.name()
            )));
        }
        // Dequeue and requeue so that the policy sees the new mask (RT migratory counts).
        let cost = self.change_attr(cpu, t, |task| task.cpus_allowed = allowed)?;
        self.advance(t);
        Ok(Step::Sys(cost))
    }

    // ----- sleeping locks -----

    /// `down()` / `mutex_lock()` of sleeping lock `l` by `t` running on `cpu`.
    pub(super) fn lock(&mut self, cpu: CpuId, t: TaskId, l: u32) -> Result<Step, SimError> {
        use sleeplock::Attempt;
        let now = self.now;
        let lk = &self.sleeplocks[l as usize];
        // Adaptive spinning only while the owner runs on another CPU and we need not yield.
        let owner_running = lk
            .owner
            .is_some_and(|o| matches!(self.tasks[o].state, TaskState::Running(c) if c != cpu))
            && !self.cpus[cpu].need_resched;
        let p = &mut self.procs[t.index()];
        let since = *p.lock_since.get_or_insert(now);
        let waited = p.lock_waited;
        match self.sleeplocks[l as usize].lock(t, waited, owner_running) {
            Attempt::Acquired => {
                self.trace_lock_wait(cpu, t, l, since);
                self.lock_holders[l as usize].push(t);
                let p = &mut self.procs[t.index()];
                p.lock_since = None;
                p.lock_waited = false;
                self.tally.lock_waits[l as usize].add(now - since);
                self.advance(t);
                Ok(Step::Sys(2 * self.atomic_ns))
            }
            Attempt::Spin => {
                self.procs[t.index()].lock_waited = true;
                // mutex_spin_on_owner: poll the owner at about a cache-line transfer a round.
                Ok(Step::Sys(self.transfer_ns.max(1)))
            }
            Attempt::Sleep => {
                self.procs[t.index()].lock_waited = true;
                self.block(t, Block::Lock(l), true);
                Ok(Step::Sys(2 * self.atomic_ns))
            }
        }
    }

    /// `t` releases sleeping lock `l` (`up()`, `mutex_unlock()`), waking the waiter the lock
    /// chose; returns the ns it spends.
    pub(super) fn release_lock(&mut self, cpu: CpuId, t: TaskId, l: u32) -> Result<u64, SimError> {
        // Only a holder releases a lock (up() by a stranger would free it for everyone: a
        // bug in the workload, not a scheduling fact).
        let holders = &mut self.lock_holders[l as usize];
        let Some(i) = holders.iter().position(|&h| h == t) else {
            let pr = &self.procs[t.index()];
            return Err(SimError::Impossible(format!(
                "{t} ({}) releases lock '{}', which it does not hold",
                self.workload.programs[pr.prog as usize].where_is(pr.pc as usize),
                self.workload.locks[l as usize].0
            )));
        };
        holders.swap_remove(i);
        let woken = self.sleeplocks[l as usize].unlock(t);
        let mut cost = 2 * self.atomic_ns;
        // Wake the chosen waiter if it is still asleep on this lock (the opportunistic
        // semaphore and the mutex may pick one that was already woken).
        if let Some(w) = woken {
            if self.procs[w.index()].block == Block::Lock(l) {
                cost += self.wake(w, cpu, false, false, self.now)?;
            }
        }
        Ok(cost)
    }

    /// `pthread_cond_wait`: `t` waits on condition variable `cond`, releasing sleeping lock
    /// `lock`.
    pub(super) fn cond_wait(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        cond: u32,
        lock: u32,
    ) -> Result<Step, SimError> {
        // Queue first, then release (atomic in pthread_cond_wait: a signal sent
        // once the lock is free finds this waiter). The op after this one takes the
        // lock again.
        self.advance(t);
        self.block(t, Block::Recv(cond), false);
        self.chans[cond as usize].recv_waiters.push_back(t);
        Ok(Step::Sys(self.release_lock(cpu, t, lock)?))
    }

    /// `pthread_cond_signal` (`all`: `_broadcast`) on condition variable `cond`.
    pub(super) fn cond_signal(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        cond: u32,
        all: bool,
    ) -> Result<Step, SimError> {
        self.advance(t);
        let mut cost = 2 * self.atomic_ns;
        while let Some(w) = self.chans[cond as usize].recv_waiters.pop_front() {
            // A futex wake per waiter woken (glibc makes no system call when there
            // is nobody to wake).
            cost += self.syscall_ns();
            if self.procs[w.index()].block == Block::Recv(cond) {
                cost += self.wake(w, cpu, false, false, self.now)?;
            }
            if !all {
                break;
            }
        }
        Ok(Step::Sys(cost))
    }

    // ----- channels -----

    pub(super) fn chan_costs(&self, kind: ChanKind) -> (u64, u64) {
        let k = self.k();
        let sys = self.syscall_ns();
        match kind {
            ChanKind::Pipe => (k.pipe_write_ns as u64, k.pipe_read_ns as u64),
            ChanKind::Socket | ChanKind::Tcp => (k.sock_send_ns as u64, k.sock_recv_ns as u64),
            ChanKind::Semaphore => (sys, sys),
            // Not message carriers: their operations are priced where they run.
            ChanKind::CondVar | ChanKind::Timer | ChanKind::TaskTimer => (sys, sys),
        }
    }

    /// `sync`: wake the reader with WF_SYNC whatever the channel's kind says (`Op::SendSync`).
    pub(super) fn send(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        ch: u32,
        sync: bool,
    ) -> Result<Step, SimError> {
        let c = &mut self.chans[ch as usize];
        if c.capacity.is_some_and(|cap| c.msgs >= cap as u64) {
            c.send_waiters.push_back(t);
            self.block(t, Block::Send(ch), false);
            return Ok(Step::Continue);
        }
        c.msgs += 1;
        // 2.4 pipes wake readers with wake_up_interruptible_sync; 2.4's sockets do not,
        // today's TCP sockets do (`ChanKind::Tcp`).
        let sync = sync || matches!(c.kind, ChanKind::Pipe | ChanKind::Tcp);
        let woken = c.recv_waiters.pop_front();
        if woken.is_none() {
            self.tally.sent_unwaited += 1;
        }
        self.advance(t);
        match woken {
            Some(w) => Ok(Step::Sys(self.wake(w, cpu, sync, false, self.now)?)),
            None => Ok(Step::Continue),
        }
    }

    pub(super) fn recv(&mut self, cpu: CpuId, t: TaskId, ch: u32) -> Result<Step, SimError> {
        let (_, recv_ns) = self.chan_costs(self.chans[ch as usize].kind);
        let c = &mut self.chans[ch as usize];
        if c.msgs == 0 {
            c.recv_waiters.push_back(t);
            self.block(t, Block::Recv(ch), false);
            return Ok(Step::Continue);
        }
        c.msgs -= 1;
        let woken = c.send_waiters.pop_front();
        self.advance(t);
        // The entry was paid before the check; the copy-out is the rest of the measured cost.
        let mut cost = recv_ns.saturating_sub(self.syscall_ns());
        if let Some(w) = woken {
            cost += self.wake(w, cpu, false, false, self.now)?;
        }
        Ok(Step::Sys(cost))
    }

    // ----- processes and address spaces -----

    pub(super) fn fork(
        &mut self,
        cpu: CpuId,
        parent: TaskId,
        prog: u32,
        thread: bool,
    ) -> Result<Step, SimError> {
        let child = self.alloc_task(cpu, parent)?;
        let (pol, nice, prio, allowed, mm, slice, uclamp) = {
            let p = &self.tasks[parent];
            (
                p.policy,
                p.nice,
                p.rt_priority,
                p.cpus_allowed,
                p.mm,
                p.slice_ns,
                p.uclamp_pct,
            )
        };
        // The address space: shared by a thread; a process's was copied in the fork's kernel
        // work (`fork_mm`).
        let new_mm = match self.procs[parent.index()].fork_mm.take() {
            _ if thread => {
                if let Some(m) = self.mm.as_mut() {
                    m.attach(mm, 0, cpu);
                }
                mm
            }
            Some(copied) => copied,
            None => self.next_mm(),
        };
        {
            let c = &mut self.tasks[child];
            c.policy = pol;
            c.nice = nice;
            c.rt_priority = prio;
            // sched_fork keeps the parent's sched_attr, the slice it asked for included.
            c.slice_ns = slice;
            // uclamp_fork: the parent's clamps (no reset_on_fork).
            c.uclamp_pct = uclamp;
            c.cpus_allowed = allowed;
            c.mm = new_mm;
            c.parent = Some(parent);
            c.cpu = cpu;
            c.timestamp_ns = self.now;
        }
        let (part, interactive, background) = {
            let p = &self.procs[parent.index()];
            (p.part, p.interactive, p.background)
        };
        let mut proc_ = self.new_proc(prog, part, interactive, background);
        proc_.parent_incarnation = self.procs[parent.index()].incarnation;
        proc_.rng = self.procs[parent.index()].rng.split();
        if !thread && self.mm.is_some() {
            // With the address-space model, a forked process works in a copy of its parent's
            // address space: the same physical pages until it writes them, cached where the
            // parent left them. (A new thread's working set is its own, cold; without the
            // model every child starts cold, as before it existed.)
            proc_.warmth = self.procs[parent.index()].warmth;
        }
        self.put_proc(child, proc_);
        self.procs[parent.index()].children += 1;
        self.advance(parent);

        // A new task_struct: fresh memory (`take_slot` forgot its lines), written by the
        // forking CPU. One line is priced, as for every class, a read-for-ownership from
        // memory (the copy of the rest is inside the profile's fork cost, measured with
        // lat_proc); a class that lays its structure out also gets every line it tracks put in
        // the forking CPU's cache, unpriced.
        let line_ns = match self.ic.as_mut() {
            Some(ic) => {
                if let Some(l) = self.sched.task_struct_layout() {
                    for &s in l.fork {
                        ic.claim(cpu, Line::TaskBytes(child, s));
                    }
                }
                ic.write(cpu, Line::Task(child))
            }
            None => 0,
        };
        let before = self.resched_before();
        let (_, cost, _) = self.core_path(cpu, self.now, |s| {
            core::attr::fork(s, cpu, Some(parent), child, Some(cpu))
        })?;
        self.trace_fork(cpu, parent, child);
        let at = self.now;
        self.decided_placement(decisions::DecisionKind::Fork, child, cpu, at, before);
        Ok(Step::Sys(cost + line_ns))
    }

    /// `copy_mm` of a fork by `t` on `cpu` (with the address-space model): the child's
    /// address space, shared copy-on-write, kept for the child the fork will create; returns
    /// the ns its coherence traffic costs.
    pub(super) fn fork_mm(&mut self, cpu: CpuId, t: TaskId) -> Result<u64, SimError> {
        let Some(m) = self.mm.as_ref() else {
            return Ok(0);
        };
        let mm = self.tasks[t].mm;
        if m.would_exceed(m.size(mm)) {
            return Err(self.too_many_pages(t, cpu));
        }
        let child_mm = self.next_mm();
        self.procs[t.index()].fork_mm = Some(child_mm);
        let m = self.mm.as_mut().expect("checked");
        Ok(m.fork(mm, child_mm, cpu, self.ic.as_mut()))
    }

    /// A new address-space id (numbered after the workload's own).
    fn next_mm(&mut self) -> u32 {
        let id = self.next_mm_id;
        self.next_mm_id = self.next_mm_id.wrapping_add(1);
        id
    }

    /// `exit()` (after its kernel work): the task stops; its parent is told when it has
    /// switched out for the last time. The last user of an address space drops its pages.
    pub(super) fn exit(&mut self, t: TaskId) -> Step {
        let cpu = self.tasks[t].cpu;
        self.trace_exit(cpu, t);
        self.block(t, Block::Exiting, true);
        let mm_id = self.tasks[t].mm;
        let ns = self
            .mm
            .as_mut()
            .map_or(0, |m| m.detach(mm_id, cpu, self.ic.as_mut()));
        Step::sys_or_continue(ns)
    }

    /// `exec` on `cpu`: `t` leaves its address space (the last user drops it) for a new one of
    /// its program's size. A task whose address space has other users (threads) gets a new
    /// one of its own rather than taking the others down with it: a simplification.
    pub(super) fn exec_mm(&mut self, cpu: CpuId, t: TaskId) -> Result<u64, SimError> {
        let old = self.tasks[t].mm;
        let new = self.next_mm();
        self.tasks[t].mm = new;
        let pages = self.workload.programs[self.procs[t.index()].prog as usize].mm_pages;
        let Some(m) = self.mm.as_mut() else {
            return Ok(0);
        };
        let ns = m.detach(old, cpu, self.ic.as_mut());
        if m.would_exceed(pages as u64) {
            return Err(self.too_many_pages(t, cpu));
        }
        let m = self.mm.as_mut().expect("checked");
        m.attach(new, pages, cpu);
        Ok(ns)
    }

    /// The error of a fork or exec past the model's limit on live pages.
    fn too_many_pages(&self, t: TaskId, cpu: CpuId) -> SimError {
        let pr = &self.procs[t.index()];
        SimError::Impossible(format!(
            "{} at {:.3} ms on CPU {cpu}: the live address spaces would pass {} pages (a fork bomb of large processes?)",
            self.workload.programs[pr.prog as usize].where_is(pr.pc as usize),
            self.now as f64 / 1e6,
            mm::MAX_LIVE_PAGES
        ))
    }

    /// `exec` or a shell's startup: kernel work at the profile's price.
    pub(super) fn kernel_work(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        w: KernelWork,
    ) -> Result<Step, SimError> {
        let ns = match w {
            KernelWork::Exec => self.k().exec_ns,
            KernelWork::ShellStartup => self.k().shell_startup_ns,
        } as u64;
        self.advance(t);
        // exec gives the task a new, cold address space.
        let mut ns = ns;
        if w == KernelWork::Exec {
            ns += self.exec_mm(cpu, t)?;
            let topo = &self.machine.topology;
            let pr = &mut self.procs[t.index()];
            pr.warmth = Warmth::default();
            if self.mm.is_some() {
                // With the address-space model, the new program's working set is
                // fetched as it starts (a Refill segment once the exec's kernel work
                // is done). Without it (profiles with no `kernel.cow_fault_ns`) the
                // cold set waits for the next switch-in, the simpler rule those
                // profiles' published figures were made with.
                self.cpus[cpu].refill_due = self.cache.dispatch(
                    &mut pr.warmth,
                    topo.cache[cpu],
                    topo.l2[cpu],
                    topo.node[cpu],
                    pr.wss_kb as u64,
                );
            }
        }
        Ok(Step::Sys(ns))
    }

    /// `wait()`: reaps a zombie child, fails at once without children (ECHILD), or sleeps
    /// until a child exits.
    pub(super) fn wait_child(&mut self, t: TaskId) -> Step {
        let p = &mut self.procs[t.index()];
        if p.zombies > 0 {
            p.zombies -= 1;
            self.advance(t);
            Step::Sys(self.k().wait_ns as u64)
        } else if p.children == 0 {
            // ECHILD.
            self.advance(t);
            Step::Continue
        } else {
            self.block(t, Block::Child, false);
            Step::Continue
        }
    }
}

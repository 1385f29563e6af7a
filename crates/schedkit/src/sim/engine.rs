//! The simulator's kernel: program interpretation (system calls), the entry points into the
//! scheduler core (`schedule()`, wakeups, the tick, fork, yield, attribute changes), IPIs, and
//! the invariant audit.

use super::*;
use crate::sched_core::{CoreError, Leave};

impl<P: SchedClass> Sim<'_, '_, P> {
    /// `t` computed `progress` ns in user space: its current Compute/Touch advances, or its
    /// busy loop is credited (and re-examined against its deadline when it next runs).
    pub(super) fn user_progress(&mut self, t: TaskId, progress: u64) {
        let p = &mut self.procs[t.index()];
        if let Some(s) = p.spin.as_mut() {
            s.cpu_ns += progress;
            p.computing = false;
            return;
        }
        p.compute_left = p.compute_left.saturating_sub(progress);
        if p.compute_left == 0 {
            p.computing = false;
            self.advance(t);
        }
    }

    /// `down()` / `mutex_lock()` of sleeping lock `l` by `t` running on `cpu`.
    fn lock(&mut self, cpu: CpuId, t: TaskId, l: u32) -> Result<Step, SimError> {
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
                let w = &mut self.lock_waits[l as usize];
                w.0 += now - since;
                w.1 = w.1.max(now - since);
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

    /// Binds the running task `t` to `mask`; off its CPU, schedule() hands it to an allowed one
    /// (the migration thread's job in 2.6's `set_cpus_allowed`).
    fn bind(
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

    // ----- programs -----

    /// Moves `t` past its current operation, closing finished loop iterations.
    pub(super) fn advance(&mut self, t: TaskId) {
        let p = &mut self.procs[t.index()];
        p.pc += 1;
        while let Some(f) = p.innermost_loop() {
            if p.pc != f.end {
                break;
            }
            match f.left {
                LoopFrame::FOREVER => {
                    p.pc = f.start;
                    break;
                }
                n if n > 1 => {
                    p.loop_top.left = n - 1;
                    p.pc = f.start;
                    break;
                }
                _ => p.pop_loop(),
            }
        }
    }

    fn k(&self) -> &crate::machine::KernelSpec {
        &self.machine.profile.kernel
    }

    fn syscall_ns(&self) -> u64 {
        self.machine.profile.costs.syscall_ns as u64
    }

    /// Executes the current operation of `t`, running on `cpu`.
    pub(super) fn step(&mut self, cpu: CpuId, t: TaskId) -> Result<Step, SimError> {
        let pr = &self.procs[t.index()];
        let ops = &self.workload.programs[pr.prog as usize].ops;
        if pr.computing {
            return Ok(if pr.spin.is_some() {
                Step::Spin(pr.compute_left)
            } else {
                Step::User(pr.compute_left)
            });
        }
        let Some(op) = ops.get(pr.pc as usize).cloned() else {
            return Ok(self.exit(t));
        };
        // A channel named by the task's index in its group (`pipe.{i+1}`) is chosen now.
        let op = match op {
            Op::SendMember {
                base,
                count,
                offset,
            } => Op::Send(base + ((pr.member as i64 + offset).rem_euclid(count as i64)) as u32),
            Op::RecvMember {
                base,
                count,
                offset,
            } => Op::Recv(base + ((pr.member as i64 + offset).rem_euclid(count as i64)) as u32),
            op => op,
        };
        let sys = self.syscall_ns();
        // A system call first does its kernel work, then takes effect (a message arrives, a
        // child becomes runnable, the caller blocks) at the end of that work.
        if !pr.entered {
            let entry = match op {
                Op::Send(ch) => Some(self.chan_costs(self.chans[ch as usize].kind).0),
                Op::Recv(_)
                | Op::Sleep { .. }
                | Op::Timer { .. }
                | Op::CondWait { .. }
                | Op::AudioWrite { .. }
                | Op::Yield
                | Op::Wait
                | Op::SetNice(_)
                | Op::SetPolicy(..)
                | Op::SetAffinity(_)
                | Op::AffinityNextCpu => Some(sys),
                Op::Fork { thread, .. } => {
                    // copy_mm is part of the fork's kernel work: done before the child exists.
                    let mm_ns = if thread { 0 } else { self.fork_mm(cpu, t)? };
                    Some(self.k().fork_ns as u64 + mm_ns)
                }
                Op::Exit => Some(self.k().exit_ns as u64),
                _ => None,
            };
            if let Some(ns) = entry {
                self.procs[t.index()].entered = true;
                return Ok(Step::Sys(ns.max(1)));
            }
        }
        self.procs[t.index()].entered = false;
        Ok(match op {
            Op::Compute(d) => {
                let ns = d.sample(&mut self.procs[t.index()].rng);
                self.begin_compute(t, ns)
            }
            Op::ComputeCycles(cycles) => {
                let ns = (cycles as f64 * 1000.0 / self.machine.profile.clock.mhz).round() as u64;
                self.begin_compute(t, ns)
            }
            Op::Touch => {
                // One cache-latency load per 32-byte line (P6 line size), no overlap.
                let lines = self.procs[t.index()].wss_kb as u64 * 1024 / 32;
                let ns = (lines as f64 * self.machine.profile.costs.cache_latency_ns) as u64;
                self.begin_compute(t, ns)
            }
            Op::Count => {
                self.counts[self.procs[t.index()].part as usize] += 1;
                self.advance(t);
                Step::Continue
            }
            Op::Dirty(n) => {
                self.advance(t);
                let mm_id = self.tasks[t].mm;
                let ns = self
                    .mm
                    .as_mut()
                    .map_or(0, |mm| mm.dirty(mm_id, n, cpu, self.ic.as_mut()));
                Step::sys_or_continue(ns)
            }
            Op::Loop { times, len } => {
                let p = &mut self.procs[t.index()];
                let start = p.pc + 1;
                let end = start + len;
                if times == Some(0) || len == 0 {
                    p.pc = end;
                    // The loop body is empty or skipped: step past it like a finished loop.
                    p.pc -= 1;
                    self.advance(t);
                } else {
                    p.push_loop(LoopFrame {
                        start,
                        end,
                        left: times.unwrap_or(LoopFrame::FOREVER),
                    });
                    p.pc = start;
                }
                Step::Continue
            }
            Op::Sleep {
                dur,
                uninterruptible,
            } => {
                let ns = dur.sample(&mut self.procs[t.index()].rng);
                self.advance(t);
                self.sleep_until(t, self.now + ns, uninterruptible);
                Step::Continue
            }
            Op::AudioWrite { period, buffer } => {
                let now = self.now;
                let p = &mut self.procs[t.index()];
                let a = p.audio.get_or_insert_with(|| {
                    Box::new(AudioStream {
                        t0: now,
                        written: 0,
                        released: now,
                    })
                });
                let k = a.written;
                if k > 0 {
                    // Interbench's test: the period's work done within a period of its release.
                    let deadline = a.released + period;
                    let late = now.saturating_sub(deadline);
                    if late > 0 {
                        self.audio.deadline_misses += 1;
                    }
                    self.audio.lateness.saturating_record(late.max(1));
                    if let Some(ph) = self.phase.as_deref_mut() {
                        ph.audio_lateness.saturating_record(late.max(1));
                    }
                    // The device reached chunk k before it was written: a skip; the stream
                    // restarts with this chunk.
                    if now > a.t0 + k * period {
                        self.audio.underruns += 1;
                        a.t0 = now - k * period;
                    }
                }
                self.audio.chunks += 1;
                a.written = k + 1;
                // Room for chunk k+1 once chunk k+1-buffer has played out.
                let room = (a.t0 + (k + 2).saturating_sub(buffer as u64) * period).max(now);
                a.released = room;
                self.advance(t);
                if room > now {
                    self.sleep_until(t, room, false);
                }
                Step::Continue
            }
            Op::Yield => {
                let (_, cost, _) =
                    self.core_path(cpu, self.now, |s| core::attr::sched_yield(s, cpu, t))?;
                self.advance(t);
                Step::Sys(cost)
            }
            Op::Send(ch) => self.send(cpu, t, ch)?,
            Op::Recv(ch) => self.recv(cpu, t, ch)?,
            Op::SendMember { .. } | Op::RecvMember { .. } => unreachable!("resolved above"),
            Op::Fork { prog, thread } => self.fork(cpu, t, prog, thread)?,
            Op::Kernel(w) => {
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
                            pr.wss_kb as u64,
                        );
                    }
                }
                Step::Sys(ns)
            }
            Op::Wait => {
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
            Op::Exit => self.exit(t),
            Op::SetNice(n) => {
                let cost = self.change_attr(cpu, t, |task| task.nice = n)?;
                self.advance(t);
                Step::Sys(cost)
            }
            Op::SetAffinity(mask) => self.bind(cpu, t, mask)?,
            Op::AffinityNextCpu => {
                let n = self.ncpus;
                let current = self.tasks[t].cpus_allowed;
                let from = if current.count() == 1 {
                    current.iter(n).next().unwrap_or(cpu)
                } else {
                    cpu
                };
                self.bind(cpu, t, crate::task::CpuMask::single((from + 1) % n))?
            }
            Op::KernelCompute(d) => {
                let ns = d.sample(&mut self.procs[t.index()].rng);
                self.advance(t);
                // No kernel work is no step of time: a loop of nothing but `kwork 0ms` is
                // caught as a loop that spends no time, where 1 ns steps spun for minutes.
                Step::sys_or_continue(ns)
            }
            Op::Lock(l) => self.lock(cpu, t, l)?,
            Op::Unlock(l) => {
                let cost = self.release_lock(cpu, t, l)?;
                self.advance(t);
                Step::Sys(cost)
            }
            Op::CondWait { cond, lock } => {
                // Queue first, then release (atomic in pthread_cond_wait: a signal sent
                // once the lock is free finds this waiter). The op after this one takes the
                // lock again.
                self.advance(t);
                self.block(t, Block::Recv(cond), false);
                self.chans[cond as usize].recv_waiters.push_back(t);
                Step::Sys(self.release_lock(cpu, t, lock)?)
            }
            Op::CondSignal { cond, all } => {
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
                Step::Sys(cost)
            }
            Op::Timer {
                timer,
                period,
                absolute,
            } => {
                let now = self.now;
                let pid = self.procs[t.index()].pid;
                let next = match self.chans[timer as usize].kind {
                    ChanKind::TaskTimer => self.task_timers.entry((pid, timer)).or_insert(now),
                    _ => self.chans[timer as usize].timer_next.get_or_insert(now),
                };
                // rt-app: t_next += period; sleep until it unless already past, when the
                // relative mode restarts the period from now.
                *next += period;
                let target = *next;
                if target <= now && !absolute {
                    *next = now;
                }
                self.advance(t);
                if target > now {
                    self.sleep_until(t, target, false);
                }
                Step::Continue
            }
            Op::Lateness { timer, period } => {
                let now = self.now;
                let pid = self.procs[t.index()].pid;
                let next = match self.chans[timer as usize].kind {
                    ChanKind::TaskTimer => self.task_timers.get_mut(&(pid, timer)),
                    _ => self.chans[timer as usize].timer_next.as_mut(),
                };
                // cyclictest takes the time as it returns from the sleep: the refill of the
                // working set that the model charged at this switch-in (if the task was just
                // switched in) is spent in the work after that, not before.
                let measured = match self.cpus[cpu].switch_in_refill {
                    Some((task, refill)) if task == t => now - refill,
                    _ => now,
                };
                // Before the timer's first use there is no expiry to be late for.
                if let Some(next) = next {
                    let late = measured.saturating_sub(*next).max(1);
                    self.probe.saturating_record(late);
                    if let Some(ph) = self.phase.as_deref_mut() {
                        ph.probe.saturating_record(late);
                    }
                    while *next + period < now {
                        *next += period;
                    }
                }
                self.advance(t);
                Step::Continue
            }
            Op::Stamp => {
                self.mark = self.now;
                self.iteration += 1;
                self.advance(t);
                Step::Continue
            }
            Op::SpinUntil { ns, id } => {
                let now = self.now;
                let (mark, iteration) = (self.mark, self.iteration);
                let p = &mut self.procs[t.index()];
                let s = **p.spin.get_or_insert_with(|| {
                    Box::new(SpinState {
                        deadline: mark + ns,
                        id,
                        iteration,
                        started: now,
                        cpu_ns: 0,
                    })
                });
                if now >= s.deadline {
                    p.spin = None;
                    self.spins.push(SpinRecord {
                        iteration: s.iteration,
                        id: s.id,
                        start_ns: s.started - mark.min(s.started),
                        end_ns: now - mark.min(now),
                        cpu_ns: s.cpu_ns,
                    });
                    self.advance(t);
                    Step::Continue
                } else {
                    p.computing = true;
                    p.compute_left = s.deadline - now;
                    Step::Spin(s.deadline - now)
                }
            }
            Op::SetPolicy(pol, prio) => {
                let cost = self.change_attr(cpu, t, |task| {
                    task.policy = pol;
                    task.rt_priority = if pol.is_rt() { prio } else { 0 };
                })?;
                self.advance(t);
                Step::Sys(cost)
            }
        })
    }

    fn begin_compute(&mut self, t: TaskId, ns: u64) -> Step {
        if ns == 0 {
            self.advance(t);
            return Step::Continue;
        }
        let p = &mut self.procs[t.index()];
        p.compute_left = ns;
        p.computing = true;
        Step::User(ns)
    }

    /// `set_user_nice` / `sched_setscheduler` on the running task `t`.
    fn change_attr(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        f: impl FnOnce(&mut crate::task::Task<P::TaskData>),
    ) -> Result<u64, SimError> {
        let (_, cost, _) = self.core_path(cpu, self.now, |s| {
            core::attr::change_attr(s, cpu, t, f);
            Ok(())
        })?;
        Ok(cost)
    }

    /// `t` releases sleeping lock `l` (`up()`, `mutex_unlock()`), waking the waiter the lock
    /// chose; returns the ns it spends.
    fn release_lock(&mut self, cpu: CpuId, t: TaskId, l: u32) -> Result<u64, SimError> {
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

    fn chan_costs(&self, kind: ChanKind) -> (u64, u64) {
        let k = self.k();
        let sys = self.syscall_ns();
        match kind {
            ChanKind::Pipe => (k.pipe_write_ns as u64, k.pipe_read_ns as u64),
            ChanKind::Socket => (k.sock_send_ns as u64, k.sock_recv_ns as u64),
            ChanKind::Semaphore => (sys, sys),
            // Not message carriers: their operations are priced where they run.
            ChanKind::CondVar | ChanKind::Timer | ChanKind::TaskTimer => (sys, sys),
        }
    }

    fn send(&mut self, cpu: CpuId, t: TaskId, ch: u32) -> Result<Step, SimError> {
        let c = &mut self.chans[ch as usize];
        if c.capacity.is_some_and(|cap| c.msgs >= cap as u64) {
            c.send_waiters.push_back(t);
            self.block(t, Block::Send(ch), false);
            return Ok(Step::Continue);
        }
        c.msgs += 1;
        // 2.4 pipes wake readers with wake_up_interruptible_sync; sockets do not.
        let sync = c.kind == ChanKind::Pipe;
        let woken = c.recv_waiters.pop_front();
        self.advance(t);
        match woken {
            Some(w) => Ok(Step::Sys(self.wake(w, cpu, sync, false, self.now)?)),
            None => Ok(Step::Continue),
        }
    }

    fn recv(&mut self, cpu: CpuId, t: TaskId, ch: u32) -> Result<Step, SimError> {
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

    fn fork(
        &mut self,
        cpu: CpuId,
        parent: TaskId,
        prog: u32,
        thread: bool,
    ) -> Result<Step, SimError> {
        let child = self.alloc_task(cpu, parent)?;
        let (pol, nice, prio, allowed, mm, slice) = {
            let p = &self.tasks[parent];
            (
                p.policy,
                p.nice,
                p.rt_priority,
                p.cpus_allowed,
                p.mm,
                p.slice_ns,
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
        let (_, cost, _) = self.core_path(cpu, self.now, |s| {
            core::attr::fork(s, cpu, Some(parent), child, Some(cpu))
        })?;
        self.trace_fork(cpu, parent, child);
        Ok(Step::Sys(cost + line_ns))
    }

    /// `copy_mm` of a fork by `t` on `cpu` (with the address-space model): the child's
    /// address space, shared copy-on-write, kept for the child the fork will create; returns
    /// the ns its coherence traffic costs.
    fn fork_mm(&mut self, cpu: CpuId, t: TaskId) -> Result<u64, SimError> {
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
    fn exit(&mut self, t: TaskId) -> Step {
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
    fn exec_mm(&mut self, cpu: CpuId, t: TaskId) -> Result<u64, SimError> {
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

    /// `t` goes to sleep now, waiting for `why` (it leaves the CPU at the end of this step).
    fn block(&mut self, t: TaskId, why: Block, uninterruptible: bool) {
        let p = &mut self.procs[t.index()];
        p.block = why;
        p.block_since = self.now;
        self.tasks[t].state = TaskState::Sleeping { uninterruptible };
    }

    /// `t` sleeps until `at` (a timed sleep, a timer's expiry): blocked on its timer, with a
    /// new generation so that an older pending expiry does not wake it.
    fn sleep_until(&mut self, t: TaskId, at: u64, uninterruptible: bool) {
        self.block(t, Block::Timer, uninterruptible);
        let p = &mut self.procs[t.index()];
        p.sleep_gen += 1;
        let gen = p.sleep_gen;
        self.post(
            at,
            Ev::Timer {
                task: t.0,
                gen,
                handler: false,
            },
        );
    }

    /// The timer of `t`'s timed sleep expires now (`handler`: its interrupt's handler runs
    /// now, the CPU having left its idle state for it). The timer is the CPU's the task slept
    /// on, as an hrtimer is armed on the CPU that sleeps.
    pub(super) fn sleep_timer(
        &mut self,
        t: TaskId,
        gen: u32,
        handler: bool,
    ) -> Result<(), SimError> {
        let cpu = self.tasks[t].cpu;
        let costs = &self.machine.profile.costs;
        let Some(after) = costs.timer_wake_exit_ns else {
            // The older model: the wakeup is the whole of the interrupt's price; returning
            // from it to user space reschedules at once if the wakeup asked to.
            let cost = self.wake(t, cpu, false, true, self.now)?;
            if self.cpus[cpu].in_user() && self.cpus[cpu].need_resched {
                self.interrupt_user(cpu, cost)?;
            } else {
                self.charge_irq(cpu, cost);
            }
            return Ok(());
        };
        let after = after as u64;
        let exit = costs.idle_exit_ns as u64;
        // hrtimer_interrupt: entry, the expired timers' callbacks (hrtimer_wakeup ->
        // try_to_wake_up, where the trace's sched_waking is), then the clock event device
        // reprogrammed for the next expiry and the exit (kernel/time/hrtimer.c).
        let before = (costs.timer_irq_ns as u64).saturating_sub(after);
        if self.cpus[cpu].seg == SegKind::Idle {
            if !handler && exit > 0 {
                // The interrupt first brings the CPU out of its idle state (time it spends
                // idle, as the kernel accounts it).
                self.post(
                    self.now + exit,
                    Ev::Timer {
                        task: t.0,
                        gen,
                        handler: true,
                    },
                );
                return Ok(());
            }
            // In the interrupt, the CPU is no longer idle: the wakeup sets need_resched and
            // the idle loop schedules when the interrupt returns, with no IPI.
            self.close_segment(cpu, self.now);
            self.start_segment(cpu, SegKind::Irq, before);
            let cost = self.wake(t, cpu, false, true, self.now + before)?;
            self.charge_irq(cpu, cost + after);
            return Ok(());
        }
        let cost = self.wake(t, cpu, false, true, self.now + before)?;
        let total = before + cost + after;
        if self.cpus[cpu].in_user() && self.cpus[cpu].need_resched {
            self.interrupt_user(cpu, total)?;
        } else {
            self.charge_irq(cpu, total);
        }
        Ok(())
    }

    /// Workload task `i` starts now (`start=`): created by an agent outside the model, it is
    /// placed as a new task (`wake_up_new_task`) from the CPU its index gives. The kernel's
    /// part of that is charged to that CPU as interrupt work (as a timer's wakeup is); the
    /// creating agent's own work is not modelled.
    pub(super) fn start_later(&mut self, i: usize) -> Result<(), SimError> {
        self.pending_starts -= 1;
        if !self.workload.tasks[i].background {
            // Counted alive while it waited to start; new_proc counts it again.
            self.foreground_alive -= 1;
        }
        let (t, cpu) = self.create_spec_task(i)?;
        let (_, cost, _) =
            self.core_path(cpu, self.now, |s| core::attr::fork(s, cpu, None, t, None))?;
        self.trace_wakeup_new(t, self.tasks[t].cpu);
        if self.cpus[cpu].in_user() && self.cpus[cpu].need_resched {
            self.interrupt_user(cpu, cost)?;
        } else {
            self.charge_irq(cpu, cost);
        }
        Ok(())
    }

    /// The workload's change `i` is made now (`renice=`, `chpolicy=`) to every live task
    /// running one of its programs, in task order: by an agent outside the model (its own
    /// work is not charged), under each task's runqueue lock (which the lock model holds for
    /// the kernel's part).
    pub(super) fn change_group(&mut self, i: usize) -> Result<(), SimError> {
        let c = &self.workload.changes[i];
        let to = c.change.to;
        let targets: Vec<TaskId> = (0..self.procs.len())
            .map(|k| TaskId(k as u32))
            .filter(|&t| {
                t.index() < self.tasks.len()
                    && !matches!(self.tasks[t].state, TaskState::Dead | TaskState::New)
                    && c.progs.contains(&self.procs[t.index()].prog)
            })
            .collect();
        // The agent changes one task after another: each change starts where the kernel's
        // part of the last one ended (all at one instant, the lock model would queue them
        // behind each other as if they contended).
        let mut at = self.now;
        for t in targets {
            let cpu = self.tasks[t].cpu;
            let (_, cost, _) = self.core_path(cpu, at, |s| {
                let nice_only = matches!(to, crate::workload::AttrTo::Nice(_));
                core::attr::set_task_attr(s, t, nice_only, |task| match to {
                    crate::workload::AttrTo::Nice(n) => task.nice = n,
                    crate::workload::AttrTo::Policy(p, prio) => {
                        task.policy = p;
                        task.rt_priority = prio;
                    }
                });
                Ok(())
            })?;
            at += cost;
        }
        Ok(())
    }

    // ----- wakeups -----

    /// Wakes `t` from `waker_cpu`, a path that starts at `at`; returns the ns the waker spends.
    pub(super) fn wake(
        &mut self,
        t: TaskId,
        waker_cpu: CpuId,
        sync: bool,
        irq: bool,
        at: u64,
    ) -> Result<u64, SimError> {
        let (_, cost, _) =
            self.core_path(waker_cpu, at, |s| s.wake_here(t, waker_cpu, sync, irq))?;
        Ok(cost)
    }

    /// The wakeup of `t`, continuing the path under way.
    pub(super) fn wake_here(
        &mut self,
        t: TaskId,
        waker_cpu: CpuId,
        sync: bool,
        irq: bool,
    ) -> Result<(), CoreError> {
        let uninterruptible = match self.tasks[t].state {
            TaskState::Sleeping { uninterruptible } => uninterruptible,
            s => return Err(CoreError::new(format!("wakeup of {t} in state {s:?}"))),
        };
        self.procs[t.index()].block = Block::None;
        // The waker writes the task's state (and, once queued, its runqueue links).
        let state_line = match self.sched.task_struct_layout() {
            Some(l) => Line::TaskBytes(t, l.state),
            None => Line::Task(t),
        };
        if let Some(ic) = self.ic.as_mut() {
            self.cursor += ic.write(waker_cpu, state_line);
        }
        // Still current on its CPU (it has not switched out yet): try_to_wake_up finds it
        // still on its runqueue, takes the lock and sets it running again, nothing more.
        let cpu = self.tasks[t].cpu;
        if self.cpus[cpu].curr == Some(t) {
            self.trace_waking(t, waker_cpu, irq);
            self.tasks[t].state = TaskState::Running(cpu);
            self.cursor += 2 * self.atomic_ns;
            return Ok(());
        }
        core::wake::try_to_wake_up(self, t, Some(waker_cpu), sync, irq, uninterruptible)?;
        self.trace_waking(t, waker_cpu, irq);
        Ok(())
    }

    /// `resched_task`: set need_resched on `cpu`, with an IPI if it is another CPU.
    pub(super) fn resched_cpu(&mut self, cpu: CpuId, from: CpuId) -> u64 {
        let c = &mut self.cpus[cpu];
        if cpu == from && c.seg != SegKind::Idle {
            c.need_resched = true;
            return 0;
        }
        c.need_resched = true;
        if c.ipi_pending {
            return 0;
        }
        c.ipi_pending = true;
        let costs = &self.machine.profile.costs;
        let mut delay = costs.ipi_latency_ns as u64;
        if c.seg == SegKind::Idle {
            delay += costs.idle_exit_ns as u64;
        }
        self.post(self.now + delay, Ev::Ipi { cpu: cpu as u32 });
        if cpu == from {
            0
        } else {
            costs.ipi_send_ns as u64
        }
    }

    pub(super) fn ipi(&mut self, cpu: CpuId) -> Result<(), SimError> {
        self.cpus[cpu].ipi_pending = false;
        let costs = &self.machine.profile.costs;
        let entry = if self.now == 0 {
            0
        } else {
            costs.ipi_irq_ns.unwrap_or(costs.timer_irq_ns) as u64
        };
        match self.cpus[cpu].seg {
            SegKind::Idle => {
                self.close_segment(cpu, self.now);
                self.start_segment(cpu, SegKind::Irq, entry);
                if entry == 0 {
                    return self.seg_end(cpu);
                }
            }
            _ if self.cpus[cpu].in_user() && self.cpus[cpu].need_resched => {
                self.interrupt_user(cpu, entry)?
            }
            _ => self.charge_irq(cpu, entry),
        }
        Ok(())
    }

    /// An interrupt of `cost` hits a CPU in user space that must reschedule: the user (or
    /// refill) segment ends now, the interrupt runs, then schedule().
    pub(super) fn interrupt_user(&mut self, cpu: CpuId, cost: u64) -> Result<(), SimError> {
        let t = self.cpus[cpu].curr.expect("user segment without a task");
        let computing = self.cpus[cpu].seg == SegKind::User;
        let progress = self.close_segment(cpu, self.now);
        if computing {
            self.user_progress(t, progress);
        }
        self.start_segment(cpu, SegKind::Irq, cost.max(1));
        Ok(())
    }

    // ----- speed: SMT, frequency, turbo (`freq`) -----

    /// Tells the policy which CPUs start throttled and arms the ondemand sampler (its timers
    /// aligned across CPUs, as 2.6.38's `delay -= jiffies % delay`).
    pub(super) fn start_freq(&mut self) {
        let Some(f) = self.freq.as_ref() else {
            return;
        };
        for (cpu, scaling) in f.initial_scaling() {
            self.sched.cpu_scaling(cpu, scaling);
        }
        if let Some(period) = f.ondemand_period() {
            for d in 0..f.ndomains() {
                self.post(period, Ev::Governor { domain: d as u32 });
            }
        }
    }

    /// `cpu` starts or stops running a task: siblings and turbo bins may change speed.
    pub(super) fn cpu_busy(&mut self, cpu: CpuId, busy: bool) {
        if let Some(f) = self.freq.as_mut() {
            let fx = f.set_busy(cpu, busy, self.now);
            self.freq_effects(fx);
        }
    }

    fn freq_effects(&mut self, fx: super::freq::Effects) {
        for (cpu, scaling) in fx.scaling {
            self.sched.cpu_scaling(cpu, scaling);
        }
        for c in fx.respeed {
            self.post(self.now, Ev::Respeed { cpu: c as u32 });
        }
    }

    pub(super) fn governor_sample(&mut self, d: usize) {
        let Some(f) = self.freq.as_mut() else {
            return;
        };
        let period = f.ondemand_period().unwrap_or(u64::MAX);
        let latency = f.transition_latency_ns();
        if let Some(p) = f.ondemand_sample(d, self.now) {
            self.post(
                self.now + latency,
                Ev::FreqApply {
                    domain: d as u32,
                    pstate: p as u32,
                },
            );
        }
        self.post(
            self.now.saturating_add(period),
            Ev::Governor { domain: d as u32 },
        );
    }

    pub(super) fn freq_apply(&mut self, d: usize, pstate: usize) {
        if let Some(f) = self.freq.as_mut() {
            let fx = f.apply(d, pstate, self.now);
            self.freq_effects(fx);
        }
    }

    /// A user segment timed at an old speed: what it did so far counts, the rest is timed
    /// anew. A CPU about to reschedule is left to it (its next segment takes the new speed).
    pub(super) fn respeed(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let speed = self
            .freq
            .as_ref()
            .map_or(super::freq::SPEED_ONE, |f| f.speed(cpu));
        let c = &self.cpus[cpu];
        if c.seg != SegKind::User || c.need_resched || c.seg_speed == speed {
            return Ok(());
        }
        let t = c.curr.expect("user segment without a task");
        if self.procs[t.index()].spin.is_some() {
            return Ok(()); // a busy loop until a time: its length does not depend on speed
        }
        let progress = self.close_segment(cpu, self.now);
        self.user_progress(t, progress);
        self.resume(cpu)
    }

    // ----- the tick -----

    pub(super) fn tick(&mut self, cpu: CpuId) -> Result<(), SimError> {
        self.post(self.now + self.tick_ns, Ev::Tick { cpu: cpu as u32 });
        if let Some(f) = self.freq.as_mut() {
            if let Some((d, p)) = f.schedutil_tick(cpu, self.now) {
                let at = self.now + f.transition_latency_ns();
                self.post(
                    at,
                    Ev::FreqApply {
                        domain: d as u32,
                        pstate: p as u32,
                    },
                );
            }
        }
        let mut irq = self.machine.profile.costs.timer_irq_ns as u64;
        let idle = self.cpus[cpu].curr.is_none();
        // A current task that is on its way out (blocked, not switched yet) takes no tick.
        let curr = self.cpus[cpu]
            .curr
            .filter(|&c| self.tasks[c].state == TaskState::Running(cpu));
        // The tick writes the running task's slice (2.4's counter, O(1)'s time_slice): here,
        // unless the class reports its own fields from its task_tick.
        if self.sched.task_struct_layout().is_none() {
            if let (Some(ic), Some(c)) = (self.ic.as_mut(), curr) {
                irq += ic.write(cpu, Line::Task(c));
            }
        }
        let jiffies = self.now / self.tick_ns;
        if cpu == 0 {
            let n = match self.layout {
                LockLayout::PerCpu => self.status.iter().map(|s| s.nr_running as u64).sum(),
                LockLayout::Global => self.status[0].nr_running as u64,
            };
            self.rq_len.0 += n;
            self.rq_len.1 += 1;
            self.rq_len.2 = self.rq_len.2.max(n);
        }
        // The interrupt's entry first, then the scheduler's part of it.
        let (_, c, _) = self.core_path(cpu, self.now + irq, |s| {
            core::tick::scheduler_tick(s, cpu, curr, idle, 1, jiffies)
        })?;
        let cost = irq + c;
        match self.cpus[cpu].seg {
            _ if self.cpus[cpu].in_user() && self.cpus[cpu].need_resched => {
                self.interrupt_user(cpu, cost)?
            }
            SegKind::Idle if self.cpus[cpu].need_resched => {
                self.close_segment(cpu, self.now);
                self.start_segment(cpu, SegKind::Irq, cost);
            }
            _ => self.charge_irq(cpu, cost),
        }
        Ok(())
    }

    // ----- schedule() -----

    /// `schedule()` on `cpu` at `self.now`: returns its cost (lock, policy work, switch, refill).
    pub(super) fn schedule(&mut self, cpu: CpuId) -> Result<u64, SimError> {
        self.pending_spin = 0;
        self.cpus[cpu].need_resched = false;
        let prev = self.cpus[cpu].curr;
        let leave = match prev {
            None => Leave::Runnable,
            Some(p) => match self.tasks[p].state {
                TaskState::Running(c) if c == cpu => Leave::Runnable,
                TaskState::Sleeping { .. } if self.procs[p.index()].block == Block::Exiting => {
                    Leave::Exit
                }
                TaskState::Sleeping { uninterruptible } => Leave::Sleep { uninterruptible },
                s => {
                    return Err(SimError::Invariant {
                        at_ns: self.now,
                        what: format!("CPU {cpu} switches away from {p}, which is {s:?}"),
                    })
                }
            },
        };
        let (_, cost, spin) = self.core_path(cpu, self.now, |s| {
            core::schedule::schedule(s, cpu, prev, leave).map(|_| ())
        })?;
        // Every lock spin of this schedule() (balancing, pulls, the pick, reaping, pushes).
        self.pending_spin = spin;
        Ok(cost)
    }

    // ----- checks -----

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
                self.stranded[i] += 1;
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
                    if rank(cpu.curr) < mine {
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
            let sum: u64 = c.acct.iter().sum();
            if sum != end {
                return Err(SimError::Invariant {
                    at_ns: end,
                    what: format!("CPU {i} accounted {sum} ns of {end} ns"),
                });
            }
            charged_cpus += c.acct[A_USER] + c.acct[A_SYS] + c.acct[A_REFILL];
        }
        let charged_tasks: u64 = self.dead_exec_ns
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

    // ----- result -----

    /// The figures of phase `p`, from its start to `end`.
    pub(super) fn phase_metrics(&self, p: &PhaseTally, end: u64) -> crate::metrics::PhaseMetrics {
        let secs = end.saturating_sub(p.start_ns) as f64 / 1e9;
        let rate = |x: u64| {
            if secs > 0.0 {
                x as f64 / secs
            } else {
                f64::NAN
            }
        };
        let lat = |h: &Histogram<u64>| {
            (!h.is_empty()).then(|| Latency {
                p50: h.value_at_quantile(0.5) as f64 / 1e3,
                p99: h.value_at_quantile(0.99) as f64 / 1e3,
                max: h.max() as f64 / 1e3,
                count: h.len(),
            })
        };
        let count0 = self.counts.first().copied().unwrap_or(0);
        let samples = self.rq_len.1 - p.rq_len.1;
        let chunks = self.audio.chunks - p.audio.0;
        crate::metrics::PhaseMetrics {
            from_s: p.start_ns as f64 / 1e9,
            to_s: end as f64 / 1e9,
            throughput: rate(count0 - p.count0) * self.workload.throughput_scale,
            context_switches_per_s: rate(self.switches - p.switches),
            migrations: self.migrations - p.migrations,
            runqueue_length_avg: (self.rq_len.0 - p.rq_len.0) as f64 / samples.max(1) as f64,
            interactive_wakeup_latency_us: lat(&p.lat_interactive),
            probe_latency_us: lat(&p.probe),
            audio: (chunks > 0).then(|| AudioReport {
                chunks,
                underruns: self.audio.underruns - p.audio.1,
                deadline_misses: self.audio.deadline_misses - p.audio.2,
                lateness_us: lat(&p.audio_lateness).unwrap_or_default(),
            }),
        }
    }

    pub(super) fn result(&self, wall_s: f64) -> RunResult {
        let end = self.end_time.unwrap_or(self.cfg.duration_ns).max(1);
        let secs = end as f64 / 1e9;
        let lat = |h: &Histogram<u64>| Latency {
            p50: h.value_at_quantile(0.5) as f64 / 1e3,
            p99: h.value_at_quantile(0.99) as f64 / 1e3,
            max: h.max() as f64 / 1e3,
            count: h.len(),
        };
        let sum = |i: usize| self.cpus.iter().map(|c| c.acct[i]).sum::<u64>() as f64 / 1e9;
        let idle_fraction = self
            .cpus
            .iter()
            .map(|c| c.acct[A_IDLE] as f64 / end as f64)
            .sum::<f64>()
            / self.ncpus as f64;
        // Fairness: CPU time per unit of weight per second alive; the dead were folded in as
        // they died (their slots are reused), the living are added now.
        let (mut n_shares, mut share_sum, mut share_sum2) = self.dead_shares;
        for t in self.tasks.iter().filter(|t| t.state != TaskState::Dead) {
            let pr = &self.procs[t.id.index()];
            let life = pr.died.unwrap_or(end).saturating_sub(pr.born);
            if life > 0 {
                let x = t.sum_exec_ns as f64 / (t.weight() as f64 * life as f64);
                n_shares += 1;
                share_sum += x;
                share_sum2 += x * x;
            }
        }
        // A run shorter than one timer tick has no meaningful rate (one switch in 1 ns is
        // not a billion switches a second): rates are then NaN, written as null.
        let rate = |x: f64| {
            if end >= self.tick_ns {
                x / secs
            } else {
                f64::NAN
            }
        };
        let throughput = rate(self.counts[0] as f64) * self.workload.throughput_scale;
        let mut per_op_us = std::collections::BTreeMap::new();
        if let Some(label) = &self.workload.per_op_label {
            if throughput > 0.0 && throughput.is_finite() {
                per_op_us.insert(label.clone(), 1e6 / throughput);
            }
        }
        let locks = self.locks.iter().fold(LockStats::default(), |mut a, l| {
            a.acquisitions += l.acquisitions;
            a.contended += l.contended;
            a.wait_us += l.wait_ns as f64 / 1e3;
            a
        });
        let o = &self.ops_total;
        RunResult {
            policy: self.sched.label(),
            machine: self.machine.name().to_string(),
            workload: self.workload.name.clone(),
            seed: self.cfg.seed,
            rt_balance: None,
            lock_mode: self
                .workload
                .locks
                .iter()
                .any(|(_, s)| matches!(s, crate::workload::LockSpec::Semaphore { mode: None, .. }))
                .then(|| self.cfg.lock_mode.name().to_string()),
            simulated_s: secs,
            completed: self.stop == StopReason::Completed,
            stop_reason: match self.stop {
                StopReason::Completed => "completed",
                StopReason::TimeLimit => "time_limit",
                StopReason::Deadlock(_) => "deadlock",
            }
            .to_string(),
            deadlock: match &self.stop {
                StopReason::Deadlock(waits) => Some(waits.clone()),
                _ => None,
            },
            timeline: None,
            phases: match self.phase.as_deref() {
                Some(p) => {
                    let mut v = self.phases_done.clone();
                    v.push(self.phase_metrics(p, end));
                    v
                }
                None => Vec::new(),
            },
            metrics: Metrics {
                context_switches: self.switches,
                context_switches_per_s: rate(self.switches as f64),
                migrations: self.migrations,
                idle_fraction,
                wakeup_latency_us: lat(&self.lat_all),
                wakeup_latency_cdf_us: crate::metrics::latency_cdf(&self.lat_all),
                interactive_wakeup_latency_us: (!self.lat_interactive.is_empty())
                    .then(|| lat(&self.lat_interactive)),
                probe_latency_us: (!self.probe.is_empty()).then(|| lat(&self.probe)),
                fairness_jain: jain_from_sums(n_shares, share_sum, share_sum2),
                longest_runnable_wait_us: {
                    // Tasks still waiting when the run ended count too (the starved ones).
                    let still = self
                        .tasks
                        .iter()
                        .filter(|t| t.state == TaskState::Queued)
                        .filter_map(|t| self.procs[t.id.index()].waiting_since)
                        .map(|s| end.saturating_sub(s))
                        .max()
                        .unwrap_or(0);
                    self.max_runnable_wait.max(still) as f64 / 1e3
                },
                audio: (self.audio.chunks > 0).then(|| AudioReport {
                    chunks: self.audio.chunks,
                    underruns: self.audio.underruns,
                    deadline_misses: self.audio.deadline_misses,
                    lateness_us: lat(&self.audio.lateness),
                }),
                runqueue_length: RunqueueLength {
                    avg: self.rq_len.0 as f64 / self.rq_len.1.max(1) as f64,
                    max: self.rq_len.2,
                },
                throughput: Throughput {
                    unit: self.workload.throughput_unit.clone(),
                    value: throughput,
                    count: self.counts.first().copied().unwrap_or(0),
                },
                per_op_us,
                cpu_time_s: CpuTime {
                    user: sum(A_USER),
                    sys: sum(A_SYS),
                    sched: sum(A_SCHED) + sum(A_SPIN),
                    lock_spin: sum(A_SPIN),
                    cache_refill: sum(A_REFILL),
                    irq: sum(A_IRQ),
                    idle: sum(A_IDLE),
                },
                locks,
                sched_ops: SchedOps {
                    tasks_scanned: o.scanned,
                    recalc_visits: o.recalc,
                    bitmap_searches: o.bitmap_searches,
                    list_ops: o.list_ops,
                    tree_steps: o.tree_steps,
                    remote_touches: o.remote_touches,
                },
                tasks_created: self.tasks_created,
                rt: RtStats {
                    pushes: self.rt_pushes,
                    pulls: self.rt_pulls,
                    audits: self.audits,
                    inversions: self.rt_inversions,
                },
                sleep_locks: self
                    .sleeplocks
                    .iter()
                    .enumerate()
                    .map(|(i, lk)| SleepLockStats {
                        name: self.workload.locks[i].0.clone(),
                        kind: match lk.kind {
                            sleeplock::LockKind::Semaphore(m) => {
                                format!("semaphore ({})", m.name())
                            }
                            sleeplock::LockKind::Mutex { spin: true } => "mutex (spinning)".into(),
                            sleeplock::LockKind::Mutex { spin: false } => "mutex".into(),
                        },
                        acquisitions: lk.counters.acquisitions,
                        contended: lk.counters.contended,
                        handoffs: lk.counters.handoffs,
                        steals: lk.counters.steals,
                        wait_us_total: self.lock_waits[i].0 as f64 / 1e3,
                        wait_us_max: self.lock_waits[i].1 as f64 / 1e3,
                        stranded_audits: self.stranded[i],
                    })
                    .collect(),
                rtmigrate: self.workload.rtmigrate.as_ref().map(|s| {
                    let recs: Vec<_> = self
                        .spins
                        .iter()
                        .map(|r| (r.iteration, r.id, r.start_ns, r.end_ns, r.cpu_ns))
                        .collect();
                    rtmigrate_report(s.threads, s.base_prio, s.maxerr_ns, &recs)
                }),
                sim: SimStats {
                    events: self.nevents,
                    task_slots: self.tasks.len() as u64,
                    task_record_bytes: (std::mem::size_of::<crate::task::Task<P::TaskData>>()
                        + std::mem::size_of::<Proc>())
                        as u64,
                    wall_s,
                },
                power: self.freq.clone().map(|mut f| {
                    let (energy_j, avg_w) = f.energy(end).unzip();
                    let total: u64 = f.busy_ns_at_mhz.iter().map(|e| e.1).sum();
                    let mut busy_at_mhz: Vec<FreqShare> = f
                        .busy_ns_at_mhz
                        .iter()
                        .map(|&(mhz, ns)| FreqShare {
                            mhz,
                            share: ns as f64 / total.max(1) as f64,
                        })
                        .collect();
                    busy_at_mhz.sort_by(|a, b| a.mhz.total_cmp(&b.mhz));
                    PowerReport {
                        governor: f.governor.map(|g| g.name().to_string()),
                        energy_j,
                        avg_w,
                        busy_at_mhz,
                    }
                }),
                interconnect: self.ic.as_ref().map(|ic| {
                    let s = &ic.stats;
                    InterconnectReport {
                        transfers: s.transfers,
                        cross_bus: s.cross_bus,
                        memory_reads: s.memory_reads,
                        invalidations: s.invalidations,
                        bus_wait_us: s.bus_wait_ns as f64 / 1e3,
                        contended_refills: s.contended_refills,
                    }
                }),
                mm: self.mm.as_ref().map(|m| {
                    let s = &m.stats;
                    MmReport {
                        fork_pages: s.fork_pages,
                        cow_faults: s.wp_faults,
                        cow_copies: s.cow_copies,
                        dropped_pages: s.dropped_pages,
                        line_transfers: s.line_transfers,
                    }
                }),
            },
        }
    }
}

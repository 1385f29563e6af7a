//! The program interpreter: a task's workload program run one statement at a time on the CPU
//! it runs on, each statement turned into what the CPU does next (`Step`: compute in user space,
//! busy-loop, spend kernel time, or go on at once). Loops, counters, probes, timers, audio
//! writes and busy loops are interpreted here; a statement that is a system call takes its
//! kernel side from `syscall.rs`.
//!
//! Must never call a class hook or take a runqueue lock itself: a statement that reaches the
//! scheduler (yield, a wakeup, an attribute change) goes through `core_path` and the core.

use super::*;

/// What executing one operation did.
pub(super) enum Step {
    /// Continue with the next operation at once.
    Continue,
    /// The CPU computes in user space this much work (ns at the profile's clock).
    User(u64),
    /// The CPU busy-loops in user space for this long, whatever its speed.
    Spin(u64),
    /// The CPU is in a system call for this long.
    Sys(u64),
}

impl Step {
    /// Kernel work of `ns` (none: go on at once).
    pub(super) fn sys_or_continue(ns: u64) -> Step {
        match ns {
            0 => Step::Continue,
            ns => Step::Sys(ns),
        }
    }
}

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

    /// Executes the current operation of `t`, running on `cpu`.
    pub(super) fn step(&mut self, cpu: CpuId, t: TaskId) -> Result<Step, SimError> {
        let pr = &self.procs[t.index()];
        if pr.computing {
            return Ok(if pr.spin.is_some() {
                Step::Spin(pr.compute_left)
            } else {
                Step::User(pr.compute_left)
            });
        }
        let Some(op) = self.current_op(t) else {
            return Ok(self.exit(t));
        };
        // A system call first does its kernel work, then takes effect (a message arrives, a
        // child becomes runnable, the caller blocks) at the end of that work.
        if !self.procs[t.index()].entered {
            if let Some(ns) = self.syscall_entry(cpu, t, &op)? {
                self.procs[t.index()].entered = true;
                return Ok(Step::Sys(ns.max(1)));
            }
        }
        self.procs[t.index()].entered = false;
        self.execute(cpu, t, op)
    }

    /// The operation at `t`'s pc (none past the program's end), with a channel named by the
    /// task's index in its group (`pipe.{i+1}`) chosen now.
    fn current_op(&self, t: TaskId) -> Option<Op> {
        let pr = &self.procs[t.index()];
        let ops = &self.workload.programs[pr.prog as usize].ops;
        let op = ops.get(pr.pc as usize).cloned()?;
        Some(match op {
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
        })
    }

    /// The kernel work a system call does before it takes effect, ns (`None`: `op` is no
    /// system call, or one priced where it takes effect).
    fn syscall_entry(&mut self, cpu: CpuId, t: TaskId, op: &Op) -> Result<Option<u64>, SimError> {
        let sys = self.syscall_ns();
        Ok(match *op {
            Op::Send(ch) | Op::SendSync(ch) => {
                Some(self.chan_costs(self.chans[ch as usize].kind).0)
            }
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
        })
    }

    /// `op` takes effect for `t` on `cpu` (a system call's kernel work is done).
    fn execute(&mut self, cpu: CpuId, t: TaskId, op: Op) -> Result<Step, SimError> {
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
                self.tally.counts[self.procs[t.index()].part as usize] += 1;
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
            Op::Loop { times, len } => self.enter_loop(t, times, len),
            Op::Sleep {
                dur,
                uninterruptible,
                irq_cpu,
            } => {
                if let Some(c) = irq_cpu.filter(|&c| c as usize >= self.ncpus) {
                    return Err(SimError::Impossible(format!(
                        "program '{}': a sleep ended by an interrupt on CPU {c}, which {} does not have (CPUs 0 to {})",
                        self.workload.programs[self.procs[t.index()].prog as usize].name,
                        self.machine.name(),
                        self.ncpus - 1
                    )));
                }
                let ns = dur.sample(&mut self.procs[t.index()].rng);
                self.advance(t);
                self.sleep_until(t, self.now + ns, uninterruptible, irq_cpu);
                Step::Continue
            }
            Op::AudioWrite { period, buffer } => self.audio_write(t, period, buffer),
            Op::Yield => {
                let (_, cost, _) =
                    self.core_path(cpu, self.now, |s| core::attr::sched_yield(s, cpu, t))?;
                self.advance(t);
                Step::Sys(cost)
            }
            Op::Send(ch) => self.send(cpu, t, ch, false)?,
            Op::SendSync(ch) => self.send(cpu, t, ch, true)?,
            Op::Recv(ch) => self.recv(cpu, t, ch)?,
            Op::SendMember { .. } | Op::RecvMember { .. } => unreachable!("resolved above"),
            Op::Fork { prog, thread } => self.fork(cpu, t, prog, thread)?,
            Op::Kernel(w) => self.kernel_work(cpu, t, w)?,
            Op::Wait => self.wait_child(t),
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
            Op::CondWait { cond, lock } => self.cond_wait(cpu, t, cond, lock)?,
            Op::CondSignal { cond, all } => self.cond_signal(cpu, t, cond, all)?,
            Op::Timer {
                timer,
                period,
                absolute,
            } => self.timer_sleep(t, timer, period, absolute),
            Op::Lateness { timer, period } => self.lateness(cpu, t, timer, period),
            Op::Stamp => {
                self.mark = self.now;
                self.iteration += 1;
                self.advance(t);
                Step::Continue
            }
            Op::SpinUntil { ns, id } => self.spin_until(t, ns, id),
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

    /// A loop statement: its body is the next `len` statements, run `times` times (`None`:
    /// for ever).
    fn enter_loop(&mut self, t: TaskId, times: Option<u64>, len: u32) -> Step {
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

    /// A write of one period's chunk to `t`'s sound device, whose ring holds `buffer` chunks:
    /// scored against Interbench's deadline, then a sleep until the ring has room.
    fn audio_write(&mut self, t: TaskId, period: u64, buffer: u32) -> Step {
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
                self.tally.audio.deadline_misses += 1;
            }
            self.tally.audio.lateness.saturating_record(late.max(1));
            if let Some(ph) = self.tally.phase.as_deref_mut() {
                ph.audio_lateness.saturating_record(late.max(1));
            }
            // The device reached chunk k before it was written: a skip; the stream
            // restarts with this chunk.
            if now > a.t0 + k * period {
                self.tally.audio.underruns += 1;
                a.t0 = now - k * period;
            }
        }
        self.tally.audio.chunks += 1;
        a.written = k + 1;
        // Room for chunk k+1 once chunk k+1-buffer has played out.
        let room = (a.t0 + (k + 2).saturating_sub(buffer as u64) * period).max(now);
        a.released = room;
        self.advance(t);
        if room > now {
            self.sleep_until(t, room, false, None);
        }
        Step::Continue
    }

    /// rt-app's periodic timer: the next expiry of `timer` (shared, or `t`'s own) moves on a
    /// period and `t` sleeps until it.
    fn timer_sleep(&mut self, t: TaskId, timer: u32, period: u64, absolute: bool) -> Step {
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
            self.sleep_until(t, target, false, None);
        }
        Step::Continue
    }

    /// A cyclictest probe: how late `t` runs after `timer`'s last expiry.
    fn lateness(&mut self, cpu: CpuId, t: TaskId, timer: u32, period: u64) -> Step {
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
            self.tally.probe.saturating_record(late);
            if let Some(ph) = self.tally.phase.as_deref_mut() {
                ph.probe.saturating_record(late);
            }
            while *next + period < now {
                *next += period;
            }
        }
        self.advance(t);
        Step::Continue
    }

    /// rt-migrate-test's busy loop until `ns` after the last stamp: started, continued, or
    /// recorded once its deadline has passed.
    fn spin_until(&mut self, t: TaskId, ns: u64, id: u32) -> Step {
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
            self.tally.spins.push(SpinRecord {
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
}

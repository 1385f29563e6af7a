//! The simulator's event loop and its entries into the scheduler core. The loop pops events
//! (segment ends, ticks, sleep timers, IPIs, the governor's, workload starts and changes) in
//! (time, sequence) order and, when a CPU is free, decides what it does next (`resume`:
//! `schedule()`, the refill of a task just switched in, or the task's next statement). The
//! entries: a timed sleep's timer interrupt, workload tasks started and changed from outside,
//! wakeups, reschedule requests and IPIs, the tick and `schedule()`.
//!
//! Must never repeat the core's orchestration: each entry prices and schedules the CPU's time
//! around one `core_path` call into `sched_core`; what a statement does is `program.rs`'s.

use super::*;
use crate::sched_core::{CoreError, Leave};

/// Where a timed sleep's interrupt is (on a machine whose timer interrupt is modelled in two
/// parts, `costs.timer_wake_exit_ns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerStage {
    /// The timer expires: the interrupt arrives.
    Expiry,
    /// The CPU has left its idle state for it: its handler runs now.
    LeftIdle,
    /// The interrupt's entry, taken out of a busy CPU's time, is done: the expired timer's
    /// callback wakes the task now, so that what the wakeup starts (an IPI to the CPU it
    /// chose) comes after its `sched_waking`.
    EntryDone,
}

/// Event kinds; the heap orders by (time, seq), the kind only breaks no ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ev {
    /// The CPU's current segment ends (valid if `gen` matches).
    SegEnd {
        cpu: u32,
        gen: u64,
    },
    Tick {
        cpu: u32,
    },
    /// A sleep timer's interrupt, at `stage` (valid if `gen` matches the task's sleep
    /// generation).
    Timer {
        task: u32,
        gen: u32,
        stage: TimerStage,
    },
    /// A reschedule IPI arrives.
    Ipi {
        cpu: u32,
    },
    /// The ondemand governor samples frequency domain `domain`.
    Governor {
        domain: u32,
    },
    /// A governor's request for `domain` takes effect.
    FreqApply {
        domain: u32,
        pstate: u32,
    },
    /// The CPU's speed changed (frequency, turbo, SMT sibling): re-time its user segment.
    Respeed {
        cpu: u32,
    },
    /// Workload task `spec` (its index in the workload) starts now (`start=`).
    Start {
        spec: u32,
    },
    /// The workload's change `i` is made now (`renice=`, `chpolicy=`).
    Change {
        i: u32,
    },
    /// A phase of the run begins (`SimConfig::phases`).
    Phase,
}

impl<P: SchedClass> Sim<'_, '_, P> {
    // ----- the event loop -----

    pub(super) fn post(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        match ev {
            Ev::Timer { .. } => self.timers.push(Reverse((at, self.seq, ev))),
            // Ticks are posted in time order (each a tick period after the event that posts
            // it), so a FIFO keeps them sorted by (time, sequence) at no cost per CPU: on a
            // 256-CPU machine they were most of the heap.
            Ev::Tick { cpu } if self.ticks.back().is_none_or(|b| b.0 <= at) => {
                self.ticks.push_back((at, self.seq, cpu))
            }
            _ => self.events.push(Reverse((at, self.seq, ev))),
        }
    }

    /// The earliest pending event of the three queues, by (time, sequence).
    fn pop_event(&mut self) -> Option<(u64, Ev)> {
        let e = self.events.peek().map(|Reverse(e)| (e.0, e.1));
        let t = self.timers.peek().map(|Reverse(t)| (t.0, t.1));
        let k = self.ticks.front().map(|k| (k.0, k.1));
        // The smallest key; a queue that is empty never wins.
        let min = [e, t, k].into_iter().flatten().min()?;
        if k == Some(min) {
            return self
                .ticks
                .pop_front()
                .map(|(at, _, cpu)| (at, Ev::Tick { cpu }));
        }
        let q = if t == Some(min) {
            &mut self.timers
        } else {
            &mut self.events
        };
        q.pop().map(|Reverse((at, _, ev))| (at, ev))
    }

    pub(super) fn run(&mut self) -> Result<(), SimError> {
        let duration = self.cfg.duration_ns;
        let mut next_progress = duration / 100;
        while let Some((at, ev)) = self.pop_event() {
            if at > duration {
                self.now = duration;
                break;
            }
            self.now = at;
            self.nevents += 1;
            match ev {
                Ev::SegEnd { cpu, gen } => {
                    if self.cpus[cpu as usize].gen == gen {
                        self.seg_end(cpu as usize)?;
                    }
                }
                Ev::Tick { cpu } => self.tick(cpu as usize)?,
                Ev::Timer { task, gen, stage } => {
                    let t = TaskId(task);
                    if self.procs[t.index()].sleep_gen == gen
                        && self.procs[t.index()].block == Block::Timer
                    {
                        self.sleep_timer(t, gen, stage)?;
                    }
                }
                Ev::Ipi { cpu } => self.ipi(cpu as usize)?,
                Ev::Governor { domain } => self.governor_sample(domain as usize),
                Ev::FreqApply { domain, pstate } => {
                    self.freq_apply(domain as usize, pstate as usize)
                }
                Ev::Respeed { cpu } => self.respeed(cpu as usize)?,
                Ev::Start { spec } => self.start_later(spec as usize)?,
                Ev::Change { i } => self.change_group(i as usize)?,
                Ev::Phase => self.next_phase(),
            }
            if self.foreground_alive == 0 {
                self.end_time = Some(self.now);
                self.stop = StopReason::Completed;
                break;
            }
            if self.starved_now() {
                self.end_time = Some(self.now);
                self.stop = StopReason::Starved;
                break;
            }
            if matches!(ev, Ev::Tick { cpu: 0 }) && self.stuck() {
                self.end_time = Some(self.now);
                self.stop = StopReason::Deadlock(self.waits());
                break;
            }
            if self.cfg.audit_every > 0 && self.nevents.is_multiple_of(self.cfg.audit_every) {
                self.audit()?;
                self.tally.rt.audits += 1;
                self.tally.rt.inversions += u64::from(self.rt_inversion());
                self.count_stranded();
            }
            if self.now >= next_progress {
                if let Some(p) = self.cfg.progress.as_mut() {
                    p(self.now as f64 / duration as f64);
                }
                next_progress = self.now + duration / 100;
            }
        }
        let end = self.end_time.unwrap_or(duration);
        self.now = end;
        self.trace_end();
        for c in 0..self.ncpus {
            self.close_segment(c, end);
        }
        self.audit()?;
        self.check_conservation(end)?;
        Ok(())
    }

    fn seg_end(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let kind = self.cpus[cpu].seg;
        let progress = self.close_segment(cpu, self.now);
        if kind == SegKind::User {
            let t = self.cpus[cpu].curr.expect("user segment without a task");
            self.user_progress(t, progress);
        }
        self.resume(cpu)
    }

    /// The CPU is free to do its next thing at `self.now`.
    pub(super) fn resume(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let mut zero_cost_steps = 0u32;
        loop {
            if self.cpus[cpu].need_resched {
                let cost = self.schedule(cpu)?;
                if cost > 0 || self.cpus[cpu].curr.is_some() {
                    self.start_segment(cpu, SegKind::Sched, cost);
                    // Spin was recorded by schedule() in the pending field.
                    self.cpus[cpu].seg_spin = self.pending_spin;
                    return Ok(());
                }
            }
            let Some(t) = self.cpus[cpu].curr else {
                self.start_segment(cpu, SegKind::Idle, 0);
                return Ok(());
            };
            if self.tasks[t].state != TaskState::Running(cpu) {
                // Blocked or exiting: switch away.
                self.cpus[cpu].need_resched = true;
                continue;
            }
            // A task just switched in first brings its working set back.
            let refill = std::mem::take(&mut self.cpus[cpu].refill_due);
            if !refill.is_empty() {
                let ns = match self.ic.as_mut() {
                    // Over a bus other CPUs may be streaming on too.
                    Some(ic) => {
                        let alone = self.cache.mem_line_ns(ic.line_bytes());
                        let mem = ic.stream_ns(cpu, refill.mem_kb as f64, alone);
                        ic.set_streaming(cpu, true);
                        (mem as f64 + self.cache.llc_ns(refill)) as u64
                    }
                    None => self.cache.price(refill),
                };
                if ns > 0 {
                    self.start_segment(cpu, SegKind::Refill, ns);
                    self.cpus[cpu].switch_in_refill = Some((t, ns));
                    return Ok(());
                }
            }
            match self.step(cpu, t)? {
                Step::Continue => {
                    zero_cost_steps += 1;
                    if zero_cost_steps > 1_000_000 {
                        return Err(SimError::Impossible(format!(
                            "program '{}' loops without spending any time (add compute, sleep or a system call to its loop)",
                            self.workload.programs[self.procs[t.index()].prog as usize].name
                        )));
                    }
                }
                Step::User(work) => {
                    let speed = self.freq.as_ref().map_or(freq::SPEED_ONE, |f| f.speed(cpu));
                    self.start_segment(cpu, SegKind::User, freq::work_to_ns(work, speed));
                    self.cpus[cpu].seg_speed = speed;
                    return Ok(());
                }
                Step::Spin(ns) => {
                    self.start_segment(cpu, SegKind::User, ns);
                    self.cpus[cpu].seg_speed = freq::SPEED_ONE;
                    return Ok(());
                }
                Step::Sys(ns) => {
                    self.start_segment(cpu, SegKind::Sys, ns.max(1));
                    return Ok(());
                }
            }
        }
    }

    // ----- timers and outside agents -----

    /// The interrupt of `t`'s timed sleep, at `stage`. The interrupt is the CPU's the task
    /// slept on, as an hrtimer is armed on the CPU that sleeps, unless the sleep names
    /// another (a replayed trace's interrupt, recorded on the CPU it ran on).
    pub(super) fn sleep_timer(
        &mut self,
        t: TaskId,
        gen: u32,
        stage: TimerStage,
    ) -> Result<(), SimError> {
        let cpu = match self.procs[t.index()].timer_cpu {
            NO_CPU => self.tasks[t].cpu,
            c => c as CpuId,
        };
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
            if stage == TimerStage::Expiry && exit > 0 {
                // The interrupt first brings the CPU out of its idle state (time it spends
                // idle, as the kernel accounts it).
                self.post(
                    self.now + exit,
                    Ev::Timer {
                        task: t.0,
                        gen,
                        stage: TimerStage::LeftIdle,
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
        if stage != TimerStage::EntryDone {
            // The interrupt's entry comes out of what the CPU was doing; the wakeup follows
            // it, in an event of its own, so that everything the wakeup sets off (the IPI to
            // another CPU it chooses, that CPU's switch) comes after it in time.
            self.charge_irq(cpu, before);
            self.post(
                self.now + before,
                Ev::Timer {
                    task: t.0,
                    gen,
                    stage: TimerStage::EntryDone,
                },
            );
            return Ok(());
        }
        let cost = self.wake(t, cpu, false, true, self.now)?;
        let rest = cost + after;
        if self.cpus[cpu].in_user() && self.cpus[cpu].need_resched {
            self.interrupt_user(cpu, rest)?;
        } else {
            self.charge_irq(cpu, rest);
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
        let before = self.resched_before();
        let (_, cost, _) =
            self.core_path(cpu, self.now, |s| core::attr::fork(s, cpu, None, t, None))?;
        self.trace_wakeup_new(t, self.tasks[t].cpu);
        let at = self.now;
        self.decided_placement(decisions::DecisionKind::Fork, t, cpu, at, before);
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
                })
            })?;
            at += cost;
        }
        Ok(())
    }

    // ----- wakeups and IPIs -----

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
    ) -> Result<core::Wakee, CoreError> {
        let uninterruptible = match self.tasks[t].state {
            TaskState::Sleeping { uninterruptible } => uninterruptible,
            s => return Err(CoreError::new(format!("wakeup of {t} in state {s:?}"))),
        };
        let timed = self.procs[t.index()].block == Block::Timer;
        self.procs[t.index()].block = Block::None;
        // The waker writes the task's state (and, once queued, its runqueue links).
        let state_line = match self.sched.task_struct_layout() {
            Some(l) => Line::TaskBytes(t, l.state),
            None => Line::Task(t),
        };
        if let Some(ic) = self.ic.as_mut() {
            self.cursor += ic.write(waker_cpu, state_line);
        }
        let before = self.resched_before();
        // sched_waking is the first thing try_to_wake_up does (kernel/sched/core.c): stamped
        // at the path's start, before the wakeup's own work, so that what the wakeup sets off
        // (an IPI, posted at `now` plus its latency: `resched_cpu`) does not come before it
        // in the trace where the path starts `now`.
        let waking_at = self.cursor;
        let found =
            core::wake::try_to_wake_up(self, t, Some(waker_cpu), sync, irq, uninterruptible)?;
        self.trace_waking(t, waker_cpu, irq, waking_at);
        let at = self.cursor;
        self.decided_placement(decisions::DecisionKind::Wakeup, t, waker_cpu, at, before);
        if found == core::Wakee::StillCurrent {
            // `claim_wakee` found it still current and set it running again, under the lock
            // of its runqueue: two atomics, after the instant sched_waking is stamped with.
            self.cursor += 2 * self.atomic_ns;
            if timed {
                self.tally.timers_before_sleep += 1;
            }
        }
        Ok(found)
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
        // From `now`, not from the path's own clock (`cursor`, `now` plus what the path has
        // cost so far): a path is priced as one step. A path that starts later than `now`
        // would send its IPI early; the timer's wakeup on a busy CPU, which follows the
        // interrupt's entry, is an event of its own for that reason (`TimerStage`). The idle
        // CPU's timer path still runs its wakeup after the entry within one event: its wakee
        // mostly lands on that CPU or on its own idle previous one, with no IPI, but one
        // placed on a third, busy CPU gets its IPI up to the entry's length early.
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
            self.tally.rq_len.add(n);
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
}

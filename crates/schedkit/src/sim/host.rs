//! The simulator as a host of the scheduler core.
//!
//! Time: a kernel path the core runs on a CPU (a wakeup, a tick, a `schedule()`) starts at a
//! simulated instant, and each lock section it takes starts where the previous one ended: the
//! section's spin, lock atomics, cache-line transfer and the work the class reported (priced
//! by `cost`) move `cursor` on. IPIs sent and context switches made move it too. The engine
//! reads how far it moved and charges the CPU that much. The core never sees a price.

use super::*;
use crate::sched_core::{ClassRq, CoreError, CoreEvent, Host, TaskData, Wakee};
use crate::task::{CpuMask, TaskView};

/// The coherence model seen from one CPU running a kernel path: what the lines it touches
/// cost it, summed.
pub(super) struct LineCharge<'a> {
    ic: &'a mut Interconnect,
    cpu: CpuId,
    pub ns: u64,
}

impl<'a> LineCharge<'a> {
    pub(super) fn new(ic: &'a mut Interconnect, cpu: CpuId) -> Self {
        LineCharge { ic, cpu, ns: 0 }
    }
}

impl LineSink for LineCharge<'_> {
    fn read(&mut self, line: Line) {
        self.ns += self.ic.read(self.cpu, line);
    }
    fn write(&mut self, line: Line) {
        self.ns += self.ic.write(self.cpu, line);
    }
}

impl<P: SchedClass> Sim<'_, '_, P> {
    /// Runs a core path that `cpu` executes from `at`: returns what it returned, the ns the
    /// CPU spent on it, and the part of that spent spinning on runqueue locks.
    pub(super) fn core_path<R>(
        &mut self,
        cpu: CpuId,
        at: u64,
        f: impl FnOnce(&mut Self) -> Result<R, CoreError>,
    ) -> Result<(R, u64, u64), SimError> {
        self.cursor = at;
        self.cursor_spin = 0;
        self.path_cpu = cpu;
        let r = f(self).map_err(|e| self.core_error(e))?;
        Ok((r, self.cursor - at, self.cursor_spin))
    }

    pub(super) fn core_error(&self, e: CoreError) -> SimError {
        SimError::Invariant {
            at_ns: self.now,
            what: e.0.to_string(),
        }
    }

    /// Publishes `cpu`'s runqueue length (all CPUs for a global runqueue) for lock-free reads.
    pub(super) fn publish(&mut self, cpu: CpuId) {
        let d = self.layout.domain_of(cpu);
        match self.layout {
            LockLayout::PerCpu => {
                let was = self.status[cpu].rq_nr_running() >= 2;
                self.status[cpu].nr_running = self.sched.nr_running(&self.rqs[d], cpu);
                self.status[cpu].nr_delayed = self.sched.nr_delayed(&self.rqs[d], cpu);
                self.status[cpu].sched_idle = self.sched.sched_idle_cpu(&self.rqs[d], cpu);
                self.status[cpu].load = self.sched.load(&self.rqs[d], cpu);
                let is = self.status[cpu].rq_nr_running() >= 2;
                if was != is {
                    if was {
                        self.overloaded -= 1;
                    } else {
                        self.overloaded += 1;
                    }
                }
            }
            LockLayout::Global => {
                let n = self.sched.nr_running(&self.rqs[0], cpu);
                for s in &mut self.status {
                    s.nr_running = n;
                }
                self.overloaded = if self.status[0].rq_nr_running() >= 2 {
                    self.status.len()
                } else {
                    0
                };
            }
        }
    }

    #[inline(always)]
    fn section<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(&Sched<P>, &mut Ctx<'_, P::TaskData>, &mut Rq<P::Rq>, &CpuView) -> R,
    ) -> R {
        let at = self.cursor;
        let d = self.layout.domain_of(cpu);
        let before = self.ops_total;
        let exec = self.path_cpu;
        // With a coherence model, taking the lock is a read-for-ownership of the runqueue's
        // lock-and-header line by the CPU running the path, and the lines the hook touches
        // are priced as it reports them, inside the critical section.
        let mut lines = self.ic.as_mut().map(|ic| LineCharge::new(ic, exec));
        if let Some(l) = lines.as_mut() {
            l.write(Line::Rq(d));
        }
        let r = {
            let mut ctx = Ctx::new(
                at,
                self.machine.hz(),
                self.ncpus,
                self.tasks.view(),
                &mut self.ops_total,
            );
            ctx.lines = lines.as_mut().map(|l| l as &mut dyn LineSink);
            let view = CpuView {
                cpus: Cpus::Snapshot(&self.status),
                topology: &self.machine.topology,
                now: at,
                hz: self.machine.hz(),
                overloaded: Some(self.overloaded),
            };
            f(&self.sched, &mut ctx, &mut self.rqs[d], &view)
        };
        let mut work = self.costs.price(&diff(&self.ops_total, &before));
        let held = match lines {
            Some(l) => {
                work += l.ns;
                self.locks[d].acquire(exec, at, work, self.atomic_ns, 0)
            }
            // Without one, the lock model takes the section as run by `cpu`, the runqueue's
            // own CPU, and charges a line transfer when another CPU held the lock last.
            None => {
                let xfer =
                    self.lines
                        .between(&self.machine.topology, self.locks[d].last_owner(), cpu);
                self.locks[d].acquire(cpu, at, work, self.atomic_ns, xfer)
            }
        };
        self.publish(cpu);
        self.cursor += held.total_ns;
        self.cursor_spin += held.wait_ns;
        r
    }
}

impl<P: SchedClass> Host for Sim<'_, '_, P> {
    type Class = P;
    type Inside = ();

    fn sched(&self) -> &Sched<P> {
        &self.sched
    }

    fn ncpus(&self) -> usize {
        self.ncpus
    }

    fn hz(&self) -> u32 {
        self.machine.hz()
    }

    fn lock_rq<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(&Sched<P>, &mut Ctx<'_, TaskData<Self>>, &mut Rq<ClassRq<Self>>, &()) -> R,
    ) -> R {
        self.section(cpu, |s, ctx, rq, _| f(s, ctx, rq, &()))
    }

    fn lock_rq_viewing<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(&Sched<P>, &mut Ctx<'_, TaskData<Self>>, &mut Rq<ClassRq<Self>>, &CpuView) -> R,
    ) -> R {
        self.section(cpu, f)
    }

    /// Both locks as `double_rq_lock` takes them: the lower-numbered first, held while the
    /// other is taken and the section runs.
    fn lock_two_rqs<R>(
        &mut self,
        caller: CpuId,
        a: CpuId,
        b: CpuId,
        f: impl FnOnce(
            &Sched<P>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &mut Rq<ClassRq<Self>>,
        ) -> R,
    ) -> R {
        crate::check!(a != b && self.layout == LockLayout::PerCpu);
        let at = self.cursor;
        let before = self.ops_total;
        let r = {
            let (ra, rb) = if a < b {
                let (l, r) = self.rqs.split_at_mut(b);
                (&mut l[a], &mut r[0])
            } else {
                let (l, r) = self.rqs.split_at_mut(a);
                (&mut r[0], &mut l[b])
            };
            let mut ctx = Ctx::new(
                at,
                self.machine.hz(),
                self.ncpus,
                self.tasks.view(),
                &mut self.ops_total,
            );
            f(&self.sched, &mut ctx, ra, rb)
        };
        let mut work = self.costs.price(&diff(&self.ops_total, &before));
        let (lo, hi) = (a.min(b), a.max(b));
        let transfer = match self.ic.as_mut() {
            // Both lock-and-header lines are taken for ownership by the caller.
            Some(ic) => {
                work += ic.write(caller, Line::Rq(a)) + ic.write(caller, Line::Rq(b));
                Some(0)
            }
            None => None,
        };
        let topo = &self.machine.topology;
        let xfer = |l: &LockModel| {
            transfer.unwrap_or_else(|| self.lines.between(topo, l.last_owner(), caller))
        };
        let (x1, x2) = (xfer(&self.locks[lo]), xfer(&self.locks[hi]));
        let h1 = self.locks[lo].acquire(caller, at, 0, self.atomic_ns, x1);
        let h2 = self.locks[hi].acquire(caller, at + h1.total_ns, work, self.atomic_ns, x2);
        let end = at + h1.total_ns + h2.total_ns;
        self.locks[lo].hold_until(end);
        self.publish(a);
        self.publish(b);
        self.cursor = end;
        self.cursor_spin += h1.wait_ns + h2.wait_ns;
        r
    }

    fn select_view<R>(
        &mut self,
        f: impl FnOnce(&Sched<P>, &TaskView<'_, TaskData<Self>>, &CpuView, &mut Work<'_>) -> R,
    ) -> R {
        let view = CpuView {
            cpus: Cpus::Snapshot(&self.status),
            topology: &self.machine.topology,
            now: self.now,
            hz: self.machine.hz(),
            overloaded: Some(self.overloaded),
        };
        let exec = self.path_cpu;
        let mut lines = self.ic.as_mut().map(|ic| LineCharge::new(ic, exec));
        let (sched, ops) = (&self.sched, &mut self.ops_total);
        let r = self.tasks.with_view(|tasks| {
            let mut work = Work {
                ops,
                lines: lines.as_mut().map(|l| l as &mut dyn LineSink),
            };
            f(sched, tasks, &view, &mut work)
        });
        if let Some(l) = lines {
            self.cursor += l.ns;
        }
        r
    }

    fn task_allowed(&self, t: TaskId) -> CpuMask {
        self.tasks[t].cpus_allowed
    }

    fn task_cpu(&self, t: TaskId) -> CpuId {
        self.tasks[t].cpu
    }

    fn published_nr_running(&self, cpu: CpuId) -> usize {
        self.status[cpu].nr_running
    }

    /// A sleeping task still current on its CPU (it has not switched out yet) is found still on
    /// its runqueue: `try_to_wake_up` takes the lock and sets it running again, nothing more
    /// (`wake_here` charges the lock's two atomics).
    fn claim_wakee(&mut self, t: TaskId, _waker_cpu: Option<CpuId>) -> Wakee {
        if !matches!(self.tasks[t].state, TaskState::Sleeping { .. }) {
            return Wakee::NotAsleep;
        }
        let cpu = self.tasks[t].cpu;
        if self.cpus[cpu].curr != Some(t) {
            return Wakee::Asleep;
        }
        self.tasks[t].state = TaskState::Running(cpu);
        Wakee::StillCurrent
    }

    /// `READ_ONCE(p->on_rq)`: the class's own record of whether it still holds `t` queued
    /// (delayed), read as the kernel reads `p->on_rq`, without the lock; it is cleared where
    /// the kernel clears `p->on_rq` (the delayed task's final dequeue at a pick, or its
    /// requeue by a wakeup), so a task dequeued to sleep is woken without its old runqueue's
    /// lock (`try_to_wake_up` calls `ttwu_runnable` only when `p->on_rq` is set).
    fn may_be_queued(&self, t: TaskId) -> bool {
        self.sched.queued_asleep(&self.tasks[t])
    }

    fn resched(&mut self, cpu: CpuId, from: Option<CpuId>) {
        // No asking CPU (an agent outside the model: a task started or changed from outside)
        // reaches `cpu` as a remote CPU would, by IPI; sending it is the agent's own work.
        let cost = self.resched_cpu(cpu, from.unwrap_or(NO_CPU as CpuId));
        if from.is_some() {
            self.cursor += cost;
        }
    }

    fn set_need_resched(&mut self, cpu: CpuId) {
        self.cpus[cpu].need_resched = true;
    }

    fn task_queued(&mut self, t: TaskId, kind: EnqueueKind) {
        // Wakeup latency runs from here; a task moved off a CPU it may no longer use was
        // not woken.
        let pr = &mut self.procs[t.index()];
        pr.runnable_since = match kind {
            EnqueueKind::Migrate => None,
            _ => Some(self.now),
        };
        // A queued task moved elsewhere keeps waiting since when it started to.
        if kind != EnqueueKind::Migrate || pr.waiting_since.is_none() {
            pr.waiting_since = Some(self.now);
            self.watch_wait(t, self.now);
        }
    }

    fn switched(
        &mut self,
        cpu: CpuId,
        prev: Option<TaskId>,
        next: Option<TaskId>,
    ) -> Result<(), CoreError> {
        self.decided_pick(cpu, prev, next);
        if next != prev {
            // A refill owed by a task switched in but never run is forgotten with it.
            self.cpus[cpu].refill_due = Refill::default();
            self.cpus[cpu].switch_in_refill = None;
            // The switch writes both tasks' scheduling lines and this CPU's `curr` (a class
            // that lays out its task_struct reports its switch path's lines from pick_next).
            let layout = self.sched.task_struct_layout();
            if let (Some(ic), None) = (self.ic.as_mut(), layout) {
                for l in [
                    prev.map(Line::Task),
                    next.map(Line::Task),
                    Some(Line::Cpu(cpu)),
                ]
                .into_iter()
                .flatten()
                {
                    self.cursor += ic.write(cpu, l);
                }
            }
            self.trace_switch(cpu, prev, next);
            self.tally.switches += 1;
            if let Some(p) = prev {
                if self.tasks[p].state == TaskState::Queued {
                    // Preempted: it waits again from now.
                    self.procs[p.index()].waiting_since = Some(self.cursor);
                    self.watch_wait(p, self.cursor);
                }
            }
            self.watch_switch(cpu, next);
            self.cursor += self.machine.profile.costs.context_switch_ns as u64;
            self.status[cpu].last_schedule_ns = self.now;
            if let Some(n) = next {
                let pr = &mut self.procs[n.index()];
                if pr.last_cpu != super::NO_CPU && pr.last_cpu as CpuId != cpu {
                    self.tally.migrations += 1;
                }
                pr.last_cpu = cpu as u32;
                let waited = pr.waiting_since.take();
                if let Some(since) = waited {
                    self.tally.max_runnable_wait = self
                        .tally
                        .max_runnable_wait
                        .max(self.cursor.saturating_sub(since));
                }
                // Latency ends when the switch completes and the task executes; the refill of
                // its working set happens while it runs (its first accesses miss).
                if let Some(since) = pr.runnable_since.take() {
                    let lat = self.cursor.saturating_sub(since).max(1);
                    self.tally.lat_all.saturating_record(lat);
                    if pr.interactive {
                        self.tally.lat_interactive.saturating_record(lat);
                        if let Some(ph) = self.tally.phase.as_deref_mut() {
                            ph.lat_interactive.saturating_record(lat);
                        }
                    }
                }
                let topo = &self.machine.topology;
                let refill = self.cache.dispatch(
                    &mut pr.warmth,
                    topo.cache[cpu],
                    topo.l2[cpu],
                    topo.node[cpu],
                    pr.wss_kb as u64,
                );
                // Paid as a preemptible Refill segment once the switch is done.
                self.cpus[cpu].refill_due = refill;
                if waited.is_some() {
                    self.watch_ran(n, self.cursor);
                }
            }
        } else if let Some(n) = next {
            self.procs[n.index()].runnable_since = None;
            if self.procs[n.index()].waiting_since.take().is_some() {
                self.watch_ran(n, self.cursor);
            }
        }
        self.cpus[cpu].curr = next;
        self.status[cpu].curr = next;
        if prev.is_some() != next.is_some() {
            self.cpu_busy(cpu, next.is_some());
        }
        // The task this CPU will probably switch to next has, with many runnable tasks,
        // long left the cache: start loading its records now, a slice before they are read.
        if let Some(x) = self
            .sched
            .next_in_line(&self.rqs[self.layout.domain_of(cpu)])
        {
            if x.index() < self.procs.len() {
                prefetch(&self.tasks[x], std::mem::size_of_val(&self.tasks[x]));
                prefetch(&self.procs[x.index()], PROC_HOT_BYTES);
            }
        }
        Ok(())
    }

    fn live_parent(&self, x: TaskId) -> Option<TaskId> {
        self.parent_of(x)
    }

    /// The exited task is gone: its parent learns it has a zombie to wait for.
    fn release_task(
        &mut self,
        cpu: CpuId,
        x: TaskId,
        parent: Option<TaskId>,
    ) -> Result<(), CoreError> {
        self.tasks[x].state = TaskState::Dead;
        let pr = &mut self.procs[x.index()];
        pr.died = Some(self.now);
        pr.block = Block::None;
        if !pr.background {
            self.foreground_alive -= 1;
        }
        if self.tasks[x].dl().params.runtime_ns > 0 {
            let rec = self.dl_record(x);
            self.tally.dl.tasks.push(rec);
        }
        self.retire(x);
        if let Some(p) = parent {
            let pp = &mut self.procs[p.index()];
            pp.children -= 1;
            pp.zombies += 1;
            if pp.block == Block::Child {
                self.wake_here(p, cpu, false, false)?;
            }
        }
        Ok(())
    }

    fn count(&mut self, ev: CoreEvent) {
        match ev {
            CoreEvent::RtPush => self.tally.rt.pushes += 1,
            CoreEvent::RtPull(n) => self.tally.rt.pulls += n as u64,
            CoreEvent::DlPush => self.tally.dl.pushes += 1,
            CoreEvent::DlPull => self.tally.dl.pulls += 1,
        }
    }
}

/// Asks the CPU to load the cache lines of `r`'s first `bytes` bytes (x86-64; elsewhere
/// nothing). Only speed changes.
#[inline]
fn prefetch<T>(r: &T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let p = r as *const T as *const i8;
        for off in (0..bytes.min(std::mem::size_of::<T>())).step_by(64) {
            // SAFETY: `p + off` lies within `*r`; a prefetch reads nothing the program sees.
            unsafe { std::arch::x86_64::_mm_prefetch(p.add(off), std::arch::x86_64::_MM_HINT_T0) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (r, bytes);
}

/// The simulator driven step by step by the conformance suite (`crate::conformance`) and the
/// core's tests.
pub(crate) mod scripted {
    use super::*;
    use crate::sched_core::scripted::{Scripted, TaskSpecT};
    use crate::sched_core::Leave;

    /// A machine of `topology` whose every cost is zero, so that every lock section of a
    /// scripted step runs at the step's instant, as the runtime host is told to.
    pub(crate) fn costless_machine(topology: &crate::machine::TopologySpec) -> Machine {
        let mut m = Machine::load("smp2-2002").expect("shipped profile");
        m.profile.topology = topology.clone();
        m.topology = crate::machine::Topology::from_spec(topology);
        // No coherence model: it prices lines, and its buses are the profile's two CPUs'.
        m.profile.interconnect = None;
        let c = &mut m.profile.costs;
        c.cache_latency_ns = 0.0;
        c.mem_latency_ns = 0.0;
        // Refilling a working set takes no time either (the cache model prices it at this rate).
        c.mem_read_mb_s = f64::INFINITY;
        c.atomic_ns = 0.0;
        c.syscall_ns = 0.0;
        c.context_switch_ns = 0.0;
        c.timer_irq_ns = 0.0;
        c.ipi_send_ns = 0.0;
        c.ipi_latency_ns = 0.0;
        c.idle_exit_ns = 0.0;
        m.profile.clock.mhz = 1e12;
        m.profile.clock.hz = 1000;
        m
    }

    /// Runs `f` on a simulator of `machine` with no tasks of its own; the event loop never
    /// runs, the test is the clock.
    pub(crate) fn run<P: SchedClass, R>(
        sched: Sched<P>,
        machine: &Machine,
        f: impl FnOnce(&mut Sim<'_, '_, P>) -> Result<R, CoreError>,
    ) -> Result<R, CoreError> {
        let mut w = Workload::parse("yield:instances=1").expect("built-in workload");
        w.tasks.clear();
        let mut sim = Sim::assemble(sched, machine, &w, SimConfig::default())
            .map_err(|e| CoreError::new(e.to_string()))?;
        // No CPU has been asked anything yet (a run's start asks every CPU to schedule).
        for c in &mut sim.cpus {
            c.need_resched = false;
        }
        f(&mut sim)
    }

    impl<P: SchedClass> Scripted for Sim<'_, '_, P> {
        fn add_task(&mut self, spec: &TaskSpecT, parent: Option<TaskId>) -> TaskId {
            let t = self.tasks.spawn();
            let task = &mut self.tasks[t];
            task.policy = spec.policy;
            task.nice = spec.nice;
            task.rt_priority = spec.rt_priority;
            task.cpus_allowed = spec.allowed;
            task.parent = parent;
            task.mm = t.0;
            let pr = self.new_proc(0, 0, false, false);
            self.procs.push(pr);
            if let Some(p) = parent {
                self.procs[p.index()].children += 1;
            }
            t
        }
        fn at(&mut self, now: u64) {
            self.now = now;
            self.cursor = now;
        }
        fn begin_sleep(&mut self, t: TaskId) -> Leave {
            self.tasks[t].state = TaskState::Sleeping {
                uninterruptible: false,
            };
            self.procs[t.index()].block = Block::Timer;
            Leave::Sleep {
                uninterruptible: false,
            }
        }
        /// As `Sim::schedule` tells it, by the task's state when it switches out.
        fn sleep_leave(&mut self, t: TaskId) -> Leave {
            match self.tasks[t].state {
                TaskState::Sleeping { uninterruptible } => Leave::Sleep { uninterruptible },
                _ => Leave::Runnable,
            }
        }
        fn wake(&mut self, t: TaskId, waker: CpuId) -> Result<Wakee, CoreError> {
            self.wake_here(t, waker, false, false)
        }
        fn take_need_resched(&mut self, cpu: CpuId) -> bool {
            std::mem::take(&mut self.cpus[cpu].need_resched)
        }
        fn task_state(&self, t: TaskId) -> TaskState {
            self.tasks[t].state
        }
        fn ntasks(&self) -> usize {
            self.tasks.len()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::RtBalance;
    use crate::conformance::{costless_machine, curr_of, settle, sleep, spec};
    use crate::policy::eevdf::Eevdf;
    use crate::sched_core::scripted::Scripted;
    use crate::sched_core::{attr, with_rq};
    use crate::task::SchedPolicy;

    const MS: u64 = 1_000_000;

    /// Runqueue-lock sections the wakeup of `t` from CPU 1 takes, all runqueues together, and
    /// what it found.
    fn wake_sections<P: SchedClass>(
        h: &mut Sim<'_, '_, P>,
        t: TaskId,
    ) -> Result<(u64, Wakee), CoreError> {
        let before: u64 = h.locks.iter().map(|l| l.acquisitions).sum();
        let found = Scripted::wake(h, t, 1)?;
        let after: u64 = h.locks.iter().map(|l| l.acquisitions).sum();
        Ok((after - before, found))
    }

    /// `try_to_wake_up` of 6.12+ takes the lock of the wakee's old runqueue for
    /// `ttwu_runnable` only when `p->on_rq` is set (core.c: `if (READ_ONCE(p->on_rq) &&
    /// ttwu_runnable(p, wake_flags)) break;`): for a task DELAY_DEQUEUE kept queued, not for
    /// one dequeued to sleep, nor for a delayed one that a pick has since dequeued
    /// (`pick_next_entity` → `dequeue_entities(DEQUEUE_DELAYED)` → `__block_task` clears
    /// `p->on_rq`). Two tasks pinned to CPU 0 of a costless 6.18 machine (nice 0: virtual time
    /// is real time), woken from CPU 1:
    ///
    /// 1. At 1 ms D and W are forked, placed at V with no lag; D runs. At 3 ms D (vruntime
    ///    V0 + 2 ms) sleeps not eligible (V = V0 + 1 ms): kept queued, delayed. Its wakeup
    ///    requeues it where it is: one section (CPU 0's, `ttwu_runnable`), no placement.
    /// 2. At 4 ms W (V0 + 1 ms) sleeps eligible (V = V0 + 1.5 ms): dequeued, `on_rq` 0. Its
    ///    wakeup takes one section, CPU 0's to queue it (`ttwu_do_activate`); before the
    ///    simulator read `p->on_rq` it took two, CPU 0's for `ttwu_runnable` first. Woken
    ///    with its lag (placed back at V0 + 1 ms) and the earlier deadline, W preempts D.
    /// 3. At 6 ms W (V0 + 3 ms) sleeps not eligible (V = V0 + 2.5 ms): delayed; D runs. At
    ///    6.5 ms D (V0 + 2.5 ms) sleeps eligible (V = V0 + 2.75 ms, the delayed W counted):
    ///    dequeued, and the pick finds only W, dequeues it and leaves CPU 0 idle. W's wakeup
    ///    then takes one section, to queue it, as in 2.
    #[test]
    fn a_wakeup_takes_the_old_runqueues_lock_only_for_a_task_still_queued() {
        let machine = costless_machine();
        crate::sched_core::lockdep::forget_held();
        let class = Eevdf {
            fair_server: None,
            ..Eevdf::v6_18(2)
        };
        let s = Sched::new(class, RtBalance::Passive, 2);
        scripted::run(s, &machine, |h| {
            let mut log = Vec::new();
            h.at(MS);
            let mut forked = [TaskId(0); 2];
            for t in &mut forked {
                *t = h.add_task(&spec(SchedPolicy::Normal, 0, 0, CpuMask::single(0)), None);
                attr::fork(h, 0, None, *t, None)?;
            }
            settle(h, &mut log)?;
            let [p, q] = forked;
            let (d, w) = if curr_of(h, 0) == Some(p) {
                (p, q)
            } else {
                (q, p)
            };
            let state = |h: &mut Sim<'_, '_, Eevdf>, t: TaskId| {
                with_rq(h, 0, |_, ctx, _, _| {
                    (ctx.tasks[t].data.on_rq, ctx.tasks[t].data.sched_delayed)
                })
            };

            // 1. Delayed: its old runqueue's lock, to requeue it there.
            h.at(3 * MS);
            assert_eq!(sleep(h, 0, d)?.next, Some(w));
            assert_eq!(state(h, d), (true, true), "D slept not eligible: delayed");
            assert!(h.may_be_queued(d));
            assert_eq!(wake_sections(h, d)?, (1, Wakee::Asleep));
            assert_eq!(
                (h.task_state(d), state(h, d)),
                (TaskState::Queued, (true, false))
            );
            settle(h, &mut log)?;

            // 2. Dequeued to sleep: only the lock of the runqueue it is queued on.
            h.at(4 * MS);
            assert_eq!(sleep(h, 0, w)?.next, Some(d));
            assert_eq!(state(h, w), (false, false), "W slept eligible: dequeued");
            assert!(!h.may_be_queued(w));
            assert_eq!(wake_sections(h, w)?, (1, Wakee::Asleep));
            assert_eq!(h.task_state(w), TaskState::Queued);
            settle(h, &mut log)?;
            assert_eq!(curr_of(h, 0), Some(w), "W, woken with its lag, preempts D");

            // 3. Delayed, then dequeued by a pick: as dequeued.
            h.at(6 * MS);
            assert_eq!(sleep(h, 0, w)?.next, Some(d));
            assert_eq!(state(h, w), (true, true), "W slept not eligible: delayed");
            h.at(6 * MS + MS / 2);
            assert_eq!(
                sleep(h, 0, d)?.next,
                None,
                "the pick dequeues W: CPU 0 idles"
            );
            assert_eq!(state(h, d), (false, false), "D slept eligible: dequeued");
            assert_eq!(state(h, w), (false, false), "W dequeued at the pick");
            assert!(!h.may_be_queued(w));
            assert_eq!(wake_sections(h, w)?, (1, Wakee::Asleep));
            assert_eq!(h.task_state(w), TaskState::Queued);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}", e.what()));
    }
}

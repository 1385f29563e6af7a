//! The core's tests, with both hosts driven step by step from this thread through their
//! scripted faces ([`Scripted`]: the simulator's in `sim/host.rs`, the runtime's in
//! `runtime/scripted.rs`) and the kit of `crate::conformance` (settling the CPUs, the
//! invariant audit): the cross-host conformance suite run on every built-in class
//! (`conformance`, thin callers of the library), the yield semantics every class keeps in
//! both hosts, and the `task_rq_lock` retry that the runtime's old reap cut short.
//!
//! What needs the runtime is gated on the runtime's own `cfg` (Linux x86-64, as in `lib.rs`);
//! elsewhere the simulator's half runs alone.

use super::*;
use crate::registry::{BuildEnv, PolicyKind, WithSched};
use crate::task::SchedPolicy;

mod conformance;
use crate::conformance::{costless_machine, curr_of, settle, spec};
use crate::sched_core::scripted::Scripted;

/// `WithSched::run_external` of the core's tests, which build built-in classes only.
macro_rules! builtin_only {
    () => {
        fn run_external(
            self,
            policy: &'static crate::registry::ExternalPolicy,
            _env: &crate::registry::BuildEnv,
        ) -> Self::Out {
            unreachable!(
                "the core's tests run built-in classes only, not {}",
                policy.name
            )
        }
    };
}

/// The host under test with two probes: its lock-free read of `task_cpu` is stale for the
/// first `stale` reads (as a parent that keeps migrating looks to a reaper on another CPU);
/// and, with `wake_in_window` set, the first time the core takes a runqueue lock to *view*
/// the CPUs (the new-idle balance's `find_busiest`, the leaving CPU's own lock dropped) it
/// runs a synchronous wakeup of that task from that CPU (wake-affine draws it to the waker's
/// CPU): a wakeup arriving on another CPU while prev is between its dequeue and the pick.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
struct ProbeHost<H> {
    inner: H,
    stale: usize,
    reads: std::cell::Cell<usize>,
    wake_in_window: Option<(TaskId, CpuId)>,
    woke: Option<Wakee>,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl<H> ProbeHost<H> {
    fn new(inner: H) -> ProbeHost<H> {
        ProbeHost {
            inner,
            stale: 0,
            reads: std::cell::Cell::new(0),
            wake_in_window: None,
            woke: None,
        }
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl<H: Host> Host for ProbeHost<H> {
    type Class = H::Class;
    type Inside = H::Inside;
    fn sched(&self) -> &Sched<H::Class> {
        self.inner.sched()
    }
    fn ncpus(&self) -> usize {
        self.inner.ncpus()
    }
    fn hz(&self) -> u32 {
        self.inner.hz()
    }
    fn lock_rq<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(
            &Sched<H::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &H::Inside,
        ) -> R,
    ) -> R {
        self.inner.lock_rq(cpu, f)
    }
    fn lock_rq_viewing<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(
            &Sched<H::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &CpuView,
        ) -> R,
    ) -> R {
        if let Some((victim, waker)) = self.wake_in_window.take() {
            self.woke = Some(
                wake::try_to_wake_up(&mut self.inner, victim, Some(waker), true, false, false)
                    .unwrap_or_else(|e| panic!("{}", e.what())),
            );
        }
        self.inner.lock_rq_viewing(cpu, f)
    }
    fn lock_two_rqs<R>(
        &mut self,
        caller: CpuId,
        a: CpuId,
        b: CpuId,
        f: impl FnOnce(
            &Sched<H::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &mut Rq<ClassRq<Self>>,
        ) -> R,
    ) -> R {
        self.inner.lock_two_rqs(caller, a, b, f)
    }
    fn select_view<R>(
        &mut self,
        f: impl FnOnce(&Sched<H::Class>, &TaskView<'_, TaskData<Self>>, &CpuView, &mut Work<'_>) -> R,
    ) -> R {
        self.inner.select_view(f)
    }
    fn task_allowed(&self, t: TaskId) -> CpuMask {
        self.inner.task_allowed(t)
    }
    fn task_cpu(&self, t: TaskId) -> CpuId {
        let real = self.inner.task_cpu(t);
        self.reads.set(self.reads.get() + 1);
        if self.reads.get() <= self.stale {
            (real + 1) % self.inner.ncpus()
        } else {
            real
        }
    }
    fn published_nr_running(&self, cpu: CpuId) -> usize {
        self.inner.published_nr_running(cpu)
    }
    fn claim_wakee(&mut self, t: TaskId, waker_cpu: Option<CpuId>) -> Wakee {
        self.inner.claim_wakee(t, waker_cpu)
    }
    fn resched(&mut self, cpu: CpuId, from: Option<CpuId>) {
        self.inner.resched(cpu, from)
    }
    fn set_need_resched(&mut self, cpu: CpuId) {
        self.inner.set_need_resched(cpu)
    }
    fn kick_idle_balancer(&mut self, busy: CpuId, at_tick: bool) {
        self.inner.kick_idle_balancer(busy, at_tick)
    }
    fn task_queued(&mut self, t: TaskId, kind: EnqueueKind) {
        self.inner.task_queued(t, kind)
    }
    fn switched(
        &mut self,
        cpu: CpuId,
        p: Option<TaskId>,
        n: Option<TaskId>,
    ) -> Result<(), CoreError> {
        self.inner.switched(cpu, p, n)
    }
    fn live_parent(&self, x: TaskId) -> Option<TaskId> {
        self.inner.live_parent(x)
    }
    fn release_task(&mut self, cpu: CpuId, x: TaskId, p: Option<TaskId>) -> Result<(), CoreError> {
        self.inner.release_task(cpu, x, p)
    }
    fn count(&mut self, ev: CoreEvent) {
        self.inner.count(ev)
    }
    fn commit_block(inside: &H::Inside, t: TaskId) -> bool {
        H::commit_block(inside, t)
    }
    fn finish_block(inside: &H::Inside, t: TaskId) -> bool {
        H::finish_block(inside, t)
    }
    fn blocked_queued(inside: &H::Inside, t: TaskId, kept: bool) {
        H::blocked_queued(inside, t, kept)
    }
    fn may_be_queued(&self, t: TaskId) -> bool {
        self.inner.may_be_queued(t)
    }
    fn prev_stopped(inside: &H::Inside, cpu: CpuId, task: &mut Task<TaskData<Self>>, now: u64) {
        H::prev_stopped(inside, cpu, task, now)
    }
    fn publish_curr(
        inside: &H::Inside,
        cpu: CpuId,
        next: Option<TaskId>,
        switched: bool,
        now: u64,
    ) {
        H::publish_curr(inside, cpu, next, switched, now)
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn task_data<H: Host>(h: &mut H, cpu: CpuId, t: TaskId) -> String {
    with_rq(h, cpu, |_, ctx, _, _| format!("{:?}", ctx.tasks[t].data))
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
struct ReapAfterStaleReads {
    stale: usize,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl WithSched for ReapAfterStaleReads {
    type Out = i64;
    builtin_only!();
    fn run<C: SchedClass>(self, sched: Sched<C>) -> i64 {
        let stale = self.stale;
        let topology = crate::machine::Topology::flat(2);
        let out = crate::runtime::scripted::run(sched, topology, 1000, |h| {
            let all = CpuMask::first_n(2);
            let normal = spec(SchedPolicy::Normal, 0, 0, all);
            h.at(1_000_000);
            let parent = h.add_task(&normal, None);
            attr::fork(h, 1, None, parent, None)?;
            settle(h, &mut Vec::new())?;
            let child = h.add_task(&normal, Some(parent));
            attr::fork(h, 1, Some(parent), child, Some(1))?;
            settle(h, &mut Vec::new())?;
            // O(1)'s child runs first, on its parent's CPU; it exits at once, its first slice
            // unused: sched_exit must give that back to the parent.
            assert_eq!(curr_of(h, 1), Some(child), "the child runs first");
            let before = task_data(h, 1, parent);
            let mut stale_host = ProbeHost {
                stale,
                ..ProbeHost::new(&mut *h)
            };
            schedule::schedule(&mut stale_host, 1, Some(child), Leave::Exit)?;
            let after = task_data(h, 1, parent);
            Ok(vec![before, after])
        })
        .expect("script runs");
        i64::from(out[0] != out[1])
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl<H: Host> Host for &mut H {
    type Class = H::Class;
    type Inside = H::Inside;
    fn sched(&self) -> &Sched<H::Class> {
        (**self).sched()
    }
    fn ncpus(&self) -> usize {
        (**self).ncpus()
    }
    fn hz(&self) -> u32 {
        (**self).hz()
    }
    fn lock_rq<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(
            &Sched<H::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &H::Inside,
        ) -> R,
    ) -> R {
        (**self).lock_rq(cpu, f)
    }
    fn lock_rq_viewing<R>(
        &mut self,
        cpu: CpuId,
        f: impl FnOnce(
            &Sched<H::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &CpuView,
        ) -> R,
    ) -> R {
        (**self).lock_rq_viewing(cpu, f)
    }
    fn lock_two_rqs<R>(
        &mut self,
        caller: CpuId,
        a: CpuId,
        b: CpuId,
        f: impl FnOnce(
            &Sched<H::Class>,
            &mut Ctx<'_, TaskData<Self>>,
            &mut Rq<ClassRq<Self>>,
            &mut Rq<ClassRq<Self>>,
        ) -> R,
    ) -> R {
        (**self).lock_two_rqs(caller, a, b, f)
    }
    fn select_view<R>(
        &mut self,
        f: impl FnOnce(&Sched<H::Class>, &TaskView<'_, TaskData<Self>>, &CpuView, &mut Work<'_>) -> R,
    ) -> R {
        (**self).select_view(f)
    }
    fn task_allowed(&self, t: TaskId) -> CpuMask {
        (**self).task_allowed(t)
    }
    fn task_cpu(&self, t: TaskId) -> CpuId {
        (**self).task_cpu(t)
    }
    fn published_nr_running(&self, cpu: CpuId) -> usize {
        (**self).published_nr_running(cpu)
    }
    fn claim_wakee(&mut self, t: TaskId, waker_cpu: Option<CpuId>) -> Wakee {
        (**self).claim_wakee(t, waker_cpu)
    }
    fn resched(&mut self, cpu: CpuId, from: Option<CpuId>) {
        (**self).resched(cpu, from)
    }
    fn set_need_resched(&mut self, cpu: CpuId) {
        (**self).set_need_resched(cpu)
    }
    fn switched(
        &mut self,
        cpu: CpuId,
        p: Option<TaskId>,
        n: Option<TaskId>,
    ) -> Result<(), CoreError> {
        (**self).switched(cpu, p, n)
    }
    fn live_parent(&self, x: TaskId) -> Option<TaskId> {
        (**self).live_parent(x)
    }
    fn release_task(&mut self, cpu: CpuId, x: TaskId, p: Option<TaskId>) -> Result<(), CoreError> {
        (**self).release_task(cpu, x, p)
    }
    fn commit_block(inside: &H::Inside, t: TaskId) -> bool {
        H::commit_block(inside, t)
    }
    fn finish_block(inside: &H::Inside, t: TaskId) -> bool {
        H::finish_block(inside, t)
    }
    fn blocked_queued(inside: &H::Inside, t: TaskId, kept: bool) {
        H::blocked_queued(inside, t, kept)
    }
    fn may_be_queued(&self, t: TaskId) -> bool {
        (**self).may_be_queued(t)
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn task_dead_tells_the_class_even_when_the_parent_keeps_moving() {
    // The runtime's old reap gave up after 8 stale reads of the parent's CPU and skipped
    // task_exit (O(1) then never gave the parent its child's unused slice back).
    // task_rq_lock retries until it holds the right runqueue.
    let m = crate::machine::Machine::load("smp2-2002").unwrap();
    let env = BuildEnv::of_machine(&m, crate::class::RtBalance::Passive);
    assert_eq!(
        PolicyKind::O1.build(&env, ReapAfterStaleReads { stale: 0 }),
        1,
        "sched_exit changed the parent"
    );
    assert_eq!(
        PolicyKind::O1.build(&env, ReapAfterStaleReads { stale: 20 }),
        1,
        "... also after 20 stale reads"
    );
}

#[test]
fn a_cpu_outside_the_affinity_is_an_error() {
    assert!(check_cpu("select_cpu", "x", 1, 2, Some(&CpuMask::single(0))).is_err());
    assert!(check_cpu("select_cpu", "x", 2, 2, None).is_err());
    assert_eq!(
        check_cpu("select_cpu", "x", 1, 2, Some(&CpuMask::first_n(2))),
        Ok(1)
    );
}

/// Two nice-0 tasks bound to CPU 0, forked and settled at 1 ms: (the one running, the one
/// queued).
fn two_normal_tasks_on_cpu0<H: Scripted>(h: &mut H) -> Result<(TaskId, TaskId), CoreError> {
    let cpu0 = CpuMask::single(0);
    h.at(1_000_000);
    let a = h.add_task(&spec(SchedPolicy::Normal, 0, 0, cpu0), None);
    let b = h.add_task(&spec(SchedPolicy::Normal, 0, 0, cpu0), None);
    for t in [a, b] {
        attr::fork(h, 0, None, t, None)?;
    }
    settle(h, &mut Vec::new())?;
    let first = curr_of(h, 0).ok_or(CoreError::new("nothing runs"))?;
    Ok((first, if first == a { b } else { a }))
}

/// `sched_yield()` as each design documents it, on CPU 0 with everything bound there: a
/// normal task yields to another normal task of its nice level; an RT task yields to RT
/// tasks of its own priority and never to lower ones.
fn yield_semantics<H: Scripted>(h: &mut H) -> Result<Vec<String>, CoreError> {
    let cpu0 = CpuMask::single(0);
    let (first, other) = two_normal_tasks_on_cpu0(h)?;
    let next = schedule::schedule(h, 0, Some(first), Leave::Yield)?.next;
    if <H::Class as SchedClass>::YIELD_GIVES_WAY && next != Some(other) {
        return Err(CoreError::new(format!(
            "{first} yielded to {next:?}, not {other}"
        )));
    }
    if next.is_none() {
        return Err(CoreError::new(format!("{first} yielded to nothing")));
    }
    let r1 = h.add_task(&spec(SchedPolicy::Fifo, 0, 50, cpu0), None);
    let r2 = h.add_task(&spec(SchedPolicy::Fifo, 0, 50, cpu0), None);
    let low = h.add_task(&spec(SchedPolicy::Fifo, 0, 10, cpu0), None);
    for t in [r1, r2, low] {
        attr::fork(h, 0, None, t, None)?;
    }
    settle(h, &mut Vec::new())?;
    let mut seen = Vec::new();
    for _ in 0..4 {
        let c = curr_of(h, 0).ok_or(CoreError::new("nothing runs"))?;
        seen.push(c);
        schedule::schedule(h, 0, Some(c), Leave::Yield)?;
    }
    if seen != [r1, r2, r1, r2] && seen != [r2, r1, r2, r1] {
        return Err(CoreError::new(format!(
            "RT tasks {r1}, {r2} (priority 50) and {low} (10) yielded in the order {seen:?}"
        )));
    }
    Ok(Vec::new())
}

struct YieldBothHosts;

impl WithSched for YieldBothHosts {
    type Out = Result<(), CoreError>;
    builtin_only!();
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Self::Out {
        let name = sched.name();
        let m = costless_machine();
        crate::sim::scripted::run(sched, &m, |h| yield_semantics(h))
            .map_err(|e| CoreError::new(format!("{name} in the simulator: {}", e.what())))?;
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            let env = BuildEnv::of_machine(&m, crate::class::RtBalance::Passive);
            PolicyKind::parse(name)
                .expect("registered")
                .build(&env, YieldRuntime { machine: m })
                .map_err(|e| CoreError::new(format!("{name} in the runtime: {}", e.what())))
        }
        #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
        Ok(())
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
struct YieldRuntime {
    machine: crate::machine::Machine,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl WithSched for YieldRuntime {
    type Out = Result<(), CoreError>;
    builtin_only!();
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Self::Out {
        let (topology, hz) = (self.machine.topology.clone(), self.machine.hz());
        crate::runtime::scripted::run(sched, topology, hz, |h| yield_semantics(h)).map(|_| ())
    }
}

#[test]
fn yield_semantics_hold_for_every_class_in_both_hosts() {
    let m = costless_machine();
    let env = BuildEnv::of_machine(&m, crate::class::RtBalance::Passive);
    for &kind in PolicyKind::ALL {
        kind.build(&env, YieldBothHosts)
            .unwrap_or_else(|e| panic!("{}", e.what()));
    }
}

/// A fair task that turns RT while it runs (`sched_setscheduler` on itself) leaves its fair
/// class at once: the class must not keep it as its current task (found by the workload-file
/// fuzzer: under EEVDF the stale pointer, inherited by a new task reusing the slot, had it
/// counted twice).
#[test]
fn a_running_task_turning_rt_leaves_its_fair_class() {
    use crate::policy::{cfs, eevdf};
    let machine = crate::machine::Machine::load("smp2-2002").unwrap();
    let all = CpuMask::single(0);
    fn to_rt<D>(p: &mut crate::task::Task<D>) {
        p.policy = SchedPolicy::Rr;
        p.rt_priority = 5;
    }
    lockdep::forget_held();
    let s = Sched::new(eevdf::Eevdf::v6_6(2), RtBalance::Passive, 2);
    crate::sim::scripted::run(s, &machine, |h| {
        let mut log = Vec::new();
        let a = h.add_task(&spec(SchedPolicy::Normal, 0, 0, all), None);
        attr::fork(h, 0, None, a, None)?;
        settle(h, &mut log)?;
        assert_eq!(curr_of(h, 0), Some(a));
        assert_eq!(with_rq(h, 0, |_, _, rq, _| rq.class.curr), Some(a));
        attr::change_attr(h, 0, a, to_rt::<_>)?;
        assert_eq!(with_rq(h, 0, |_, _, rq, _| rq.class.curr), None);
        settle(h, &mut log)?;
        assert_eq!(curr_of(h, 0), Some(a), "still running, now as RT");
        Ok(())
    })
    .unwrap();
    lockdep::forget_held();
    let s = Sched::new(cfs::Cfs::v2_6_24(2), RtBalance::Passive, 2);
    crate::sim::scripted::run(s, &machine, |h| {
        let mut log = Vec::new();
        let a = h.add_task(&spec(SchedPolicy::Normal, 0, 0, all), None);
        attr::fork(h, 0, None, a, None)?;
        settle(h, &mut log)?;
        attr::change_attr(h, 0, a, to_rt::<_>)?;
        assert_eq!(with_rq(h, 0, |_, _, rq, _| rq.class.curr), None);
        Ok(())
    })
    .unwrap();
}

/// The new-idle balance runs once prev has left the runqueue (2.6.0's `schedule()`:
/// `deactivate_task(prev)`, then `if (!rq->nr_running) load_balance(rq, 1, ...)`), so the
/// balancer sees this CPU empty. Under O(1), CPU 1 runs one task with one queued: with CPU 0
/// empty the imbalance is (2 − 0) / 2 = 1 and the queued task is pulled when CPU 0's task
/// sleeps; counted with the sleeper still there it would be (2 − 1) / 2 = 0, and CPU 0 would
/// idle beside a waiting task.
#[test]
fn a_newly_idle_cpu_balances_after_its_task_left() {
    use crate::policy::o1;
    let machine = crate::machine::Machine::load("smp2-2002").unwrap();
    lockdep::forget_held();
    let s = Sched::new(o1::O1::new(&machine), RtBalance::Passive, 2);
    crate::sim::scripted::run(s, &machine, |h| {
        let mut log = Vec::new();
        let (cpu0, cpu1, all) = (CpuMask::single(0), CpuMask::single(1), CpuMask::first_n(2));
        h.at(1_000_000);
        let a = h.add_task(&spec(SchedPolicy::Normal, 0, 0, cpu0), None);
        attr::fork(h, 0, None, a, None)?;
        let b = h.add_task(&spec(SchedPolicy::Normal, 0, 0, cpu1), None);
        attr::fork(h, 1, None, b, None)?;
        settle(h, &mut log)?;
        // C may run anywhere; it starts on CPU 1 behind B.
        let c = h.add_task(&spec(SchedPolicy::Normal, 0, 0, cpu1), None);
        attr::fork(h, 1, None, c, None)?;
        settle(h, &mut log)?;
        attr::change_attr(h, 1, c, |t| t.cpus_allowed = all)?;
        settle(h, &mut log)?;
        assert_eq!((curr_of(h, 0), curr_of(h, 1)), (Some(a), Some(b)));
        assert_eq!(h.task_cpu(c), 1);
        h.at(2_000_000);
        let sw = crate::conformance::sleep(h, 0, a)?;
        assert_eq!(sw.next, Some(c), "CPU 0 pulls the task waiting on CPU 1");
        Ok(Vec::<String>::new())
    })
    .unwrap_or_else(|e| panic!("{}", e.what()));
}

/// 6.12+ keeps a task that sleeps while not eligible queued (DELAY_DEQUEUE) until a pick
/// finds it. A CPU that runs dry balances new-idle only after its pick found nothing, and that
/// pick dequeues every delayed task it finds first (fair.c of 6.18.35: `pick_next_task_fair`
/// 9033 calls `sched_balance_newidle` once `pick_task_fair` 8996 returns nothing; its
/// `pick_next_entity` 5582 dequeues a delayed entity and picks again). So the balancer sees
/// this CPU with nothing queued, and `task_is_ineligible_on_dst_cpu` (9522), which holds back
/// a task not eligible where it waits only while the destination has entities queued, lets it
/// go.
///
/// Worked by hand (nice 0, so virtual time is real time; V is the mean vruntime of a
/// runqueue's queued tasks, the running one included). At 1 ms two tasks are forked on each
/// CPU, each placed at its CPU's V with no lag and the same deadline; D and C are the ones
/// their CPUs run first, A and B wait. D and C run 2 ms. At 3 ms CPU 1 switches from C
/// (vruntime C0 + 2 ms) to B (eligible at C0 < V = C0 + 1 ms); D sleeps not eligible
/// (D0 + 2 ms > V = D0 + 1 ms), so it stays queued, delayed, and A runs. At 4 ms A sleeps
/// eligible (D0 + 1 ms < V = D0 + 1.5 ms) and leaves: CPU 0 has nothing runnable, D still
/// queued. CPU 1 runs B (C0 + 1 ms) with C queued at C0 + 2 ms > V = C0 + 1.5 ms: not
/// eligible, and not cache-hot (it stopped 1 ms ago, past `sysctl_sched_migration_cost`'s
/// 0.5 ms). With D dequeued first CPU 0 pulls C; had it balanced with D still queued, C would
/// have been held back and CPU 0 left idle.
#[test]
fn a_newly_idle_cpu_dequeues_its_delayed_tasks_before_it_balances() {
    use crate::policy::eevdf::Eevdf;
    const MS: u64 = 1_000_000;
    let machine = costless_machine();
    lockdep::forget_held();
    // The fair server (the deadline class's) is left out: its timers are not this case's.
    let class = Eevdf {
        fair_server: None,
        ..Eevdf::v6_18(2)
    };
    let s = Sched::new(class, RtBalance::Passive, 2);
    crate::sim::scripted::run(s, &machine, |h| {
        let mut log = Vec::new();
        let (cpu0, cpu1, all) = (CpuMask::single(0), CpuMask::single(1), CpuMask::first_n(2));
        h.at(MS);
        let two_on = |h: &mut _, cpu: CpuId, mask: CpuMask| -> Result<[TaskId; 2], CoreError> {
            let mut ts = [TaskId(0); 2];
            for t in &mut ts {
                *t = Scripted::add_task(h, &spec(SchedPolicy::Normal, 0, 0, mask), None);
                attr::fork(h, cpu, None, *t, None)?;
            }
            Ok(ts)
        };
        let [p, q] = two_on(&mut *h, 0, cpu0)?;
        let [x, y] = two_on(&mut *h, 1, cpu1)?;
        settle(h, &mut log)?;
        let (d, a) = if curr_of(h, 0) == Some(p) {
            (p, q)
        } else {
            (q, p)
        };
        let (c, b) = if curr_of(h, 1) == Some(x) {
            (x, y)
        } else {
            (y, x)
        };
        assert_eq!((curr_of(h, 0), curr_of(h, 1)), (Some(d), Some(c)));
        h.at(3 * MS);
        let sw = schedule::schedule(h, 1, Some(c), Leave::Runnable)?;
        assert_eq!(sw.next, Some(b), "C, past V, yields to B");
        // C may run anywhere from now on; queued on CPU 1, it stays there.
        attr::change_attr(h, 1, c, |t| t.cpus_allowed = all)?;
        settle(h, &mut log)?;
        assert_eq!((h.task_cpu(c), curr_of(h, 1)), (1, Some(b)));
        let sw = crate::conformance::sleep(h, 0, d)?;
        assert_eq!(sw.next, Some(a));
        let delayed = with_rq(h, 0, |_, ctx, rq, _| {
            (ctx.tasks[d].data.sched_delayed, rq.class.nr_delayed)
        });
        assert_eq!(delayed, (true, 1), "D slept not eligible: queued, delayed");
        h.at(4 * MS);
        let sw = crate::conformance::sleep(h, 0, a)?;
        assert_eq!(sw.next, Some(c), "CPU 0 pulls C, not eligible on CPU 1");
        let left = with_rq(h, 0, |_, ctx, rq, _| {
            (
                ctx.tasks[d].data.on_rq,
                rq.class.nr_delayed,
                rq.class.nr_queued,
            )
        });
        assert_eq!(left, (false, 0, 1), "D dequeued; C alone queued on CPU 0");
        Ok(Vec::<String>::new())
    })
    .unwrap_or_else(|e| panic!("{}", e.what()));
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
struct WakeWhileLeaving;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
impl WithSched for WakeWhileLeaving {
    /// None: a global runqueue (no new-idle balance).
    type Out = Result<Option<Wakee>, String>;
    fn run_external(
        self,
        policy: &'static crate::registry::ExternalPolicy,
        _env: &crate::registry::BuildEnv,
    ) -> Self::Out {
        Err(format!("built-in classes only, not {}", policy.name))
    }
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Self::Out {
        if sched.layout() != LockLayout::PerCpu {
            return Ok(None);
        }
        lockdep::forget_held();
        let topology = crate::machine::Topology::flat(2);
        crate::runtime::scripted::run(sched, topology, 1000, |h| {
            let all = CpuMask::first_n(2);
            let mut log = Vec::new();
            h.at(1_000_000);
            // A alone on CPU 0, B on CPU 1 (which may not leave it).
            let a = h.add_task(&spec(SchedPolicy::Normal, 0, 0, CpuMask::single(0)), None);
            attr::fork(h, 0, None, a, None)?;
            let b = h.add_task(&spec(SchedPolicy::Normal, 0, 0, CpuMask::single(1)), None);
            attr::fork(h, 1, None, b, None)?;
            settle(h, &mut log)?;
            attr::change_attr(h, 0, a, |t| t.cpus_allowed = all)?;
            settle(h, &mut log)?;
            if (curr_of(h, 0), curr_of(h, 1)) != (Some(a), Some(b)) {
                return Err(CoreError::new("the setup did not place A and B"));
            }
            h.at(2_000_000);
            // A blocks; CPU 0 runs dry and balances with its lock dropped; B's CPU wakes A
            // right then.
            let leave = h.begin_sleep(a);
            let mut window = ProbeHost {
                wake_in_window: Some((a, 1)),
                ..ProbeHost::new(&mut *h)
            };
            schedule::schedule(&mut window, 0, Some(a), leave)?;
            let woke = window
                .woke
                .ok_or_else(|| CoreError::new("no new-idle balance ran"))?;
            settle(h, &mut log)?;
            crate::conformance::audit(h)?;
            // A runs, on one CPU: CPU 0 is idle and A may run there or beside B.
            let running: Vec<CpuId> = (0..2).filter(|&c| curr_of(h, c) == Some(a)).collect();
            let queued = h.task_state(a) == crate::task::TaskState::Queued;
            if running.len() + usize::from(queued) != 1 {
                return Err(CoreError::new(format!(
                    "A is running on {running:?}, queued: {queued}"
                )));
            }
            Ok(Some(woke))
        })
        .map_err(|e| e.what().to_string())
    }
}

/// A wakeup from another CPU that finds prev between its dequeue and the pick (here: while
/// the CPU it leaves runs its new-idle balance with its own lock dropped) must leave it to
/// that CPU, as the kernel's `try_to_wake_up` waits for `p->on_cpu`: had the waker owned it,
/// it could queue it on its own CPU while the leaving CPU's `put_prev_task` still treats it
/// as its own (a 16-worker runtime found CFS's tree corrupt: a task picked on CPU 14 while
/// it ran on CPU 0). Every per-CPU class, on the runtime's host and its handshake. (Before
/// the handshake's last step moved to the pick, EEVDF 6.18 queued A on CPU 1 while CPU 0's
/// put_prev kept it: "picked task0 for CPU 1, but it is Running(0)".)
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn a_wakeup_during_the_new_idle_balance_leaves_prev_to_its_cpu() {
    let m = crate::machine::Machine::load("smp2-2002").unwrap();
    let env = BuildEnv::of_machine(&m, crate::class::RtBalance::Passive);
    let mut checked = 0;
    for kind in PolicyKind::ALL {
        let woke = kind.build(&env, WakeWhileLeaving);
        if woke == Ok(None) {
            continue; // a global runqueue
        }
        assert_eq!(
            woke,
            Ok(Some(Wakee::Leaving)),
            "{}: the waker found prev leaving its CPU",
            kind.name()
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} per-CPU classes checked");
}

/// The pick's check of `task_cpu`: on per-CPU runqueues a task the class picks for a CPU must
/// be queued there (its `task_cpu` that CPU); a task whose `task_cpu` says another CPU was
/// taken from a queue it is not on, and the core refuses the pick. A global runqueue's
/// `task_cpu` is only the CPU a task last ran on, and the same state is a legal pick there.
struct PickOffItsCpu;

impl WithSched for PickOffItsCpu {
    type Out = Result<(), CoreError>;
    builtin_only!();
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Self::Out {
        let m = costless_machine();
        crate::sim::scripted::run(sched, &m, |h| {
            let (first, queued) = two_normal_tasks_on_cpu0(h)?;
            // The fault under test: task_cpu of the queued task names CPU 1.
            h.lock_rq(0, |_, ctx, _, _| ctx.tasks[queued].cpu = 1);
            schedule::schedule(h, 0, Some(first), Leave::Yield).map(|_| ())
        })
        .map(|_| ())
    }
}

#[test]
fn a_pick_off_the_tasks_cpu_is_refused_on_per_cpu_runqueues() {
    let m = costless_machine();
    let env = BuildEnv::of_machine(&m, crate::class::RtBalance::Passive);
    let err = PolicyKind::O1
        .build(&env, PickOffItsCpu)
        .expect_err("O(1) picked a task queued on another CPU's runqueue");
    assert!(
        err.what().contains("but it is queued on CPU 1"),
        "{}",
        err.what()
    );
    // 2.4's one runqueue: task_cpu is where the task last ran, any CPU may pick it.
    PolicyKind::Goodness
        .build(&env, PickOffItsCpu)
        .unwrap_or_else(|e| panic!("goodness: {}", e.what()));
}

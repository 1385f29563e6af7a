//! BFS 0.404's mechanisms against hand-computed cases (designs.md §6): deadlines per nice
//! level, slice expiry at the tick with and without dither, the earliest-deadline pick with
//! RT first and affinity, the sticky bias and the skip on a throttled CPU, the ISO window and
//! its refractory switch, the idle-CPU ranking on an SMT topology, `try_preempt`'s choice of
//! victim, fork's slice split and SCHED_BATCH.

use super::*;
use crate::machine::TopologySpec;
use crate::sched_core::lockdep;
use crate::task::{CpuMask, TaskState, Tasks};

const MS: u64 = 1_000_000;

/// The global runqueue of an `ncpus` machine, driven hook by hook as the core does (the
/// state changes of `schedule()` included), at HZ=1000.
struct Fx {
    bfs: Bfs,
    tasks: Tasks<BfsTask>,
    ops: OpCounter,
    rq: Rq<BfsRq>,
    now: u64,
    ncpus: usize,
    topology: Topology,
}

impl Fx {
    fn new(ncpus: usize) -> Fx {
        Fx::on(Topology::flat(ncpus), BfsTunables::DEFAULT)
    }

    fn on(topology: Topology, tunables: BfsTunables) -> Fx {
        lockdep::forget_held();
        lockdep::acquire(0);
        let n = topology.ncpus;
        let bfs = Bfs::new(n, tunables);
        let rq = Rq::new(0, n, bfs.new_rq(0, &topology));
        Fx {
            bfs,
            tasks: Tasks::new(),
            ops: OpCounter::default(),
            rq,
            now: 1_000 * MS,
            ncpus: n,
            topology,
        }
    }

    fn ctx(&mut self) -> (Ctx<'_, BfsTask>, &mut Rq<BfsRq>, &Bfs) {
        (
            Ctx::new(self.now, 1000, self.ncpus, self.tasks.view(), &mut self.ops),
            &mut self.rq,
            &self.bfs,
        )
    }

    fn spawn_policy(&mut self, nice: i32, policy: SchedPolicy, rt_priority: u8) -> TaskId {
        let t = self.tasks.spawn();
        let task = &mut self.tasks[t];
        task.nice = nice;
        task.policy = policy;
        task.rt_priority = rt_priority;
        let (mut c, rq, b) = self.ctx();
        b.task_fork(&mut c, rq, 0, None, t);
        b.enqueue(&mut c, rq, 0, t, EnqueueKind::New);
        c.tasks[t].state = TaskState::Queued;
        t
    }

    fn spawn(&mut self, nice: i32) -> TaskId {
        self.spawn_policy(nice, SchedPolicy::Normal, 0)
    }

    /// `schedule()` on `cpu` with prev (if any) still runnable: put_prev, pick, and the
    /// core's state changes.
    fn schedule(&mut self, cpu: CpuId) -> Option<TaskId> {
        let prev = self.rq.curr_on(cpu);
        let (mut c, rq, b) = self.ctx();
        if let Some(p) = prev {
            b.put_prev(&mut c, rq, cpu, p);
        }
        let next = b.pick_next(&mut c, rq, cpu);
        if let Some(p) = prev {
            if next != Some(p) && c.tasks[p].state == TaskState::Running(cpu) {
                c.tasks[p].state = TaskState::Queued;
            }
        }
        if let Some(n) = next {
            c.tasks[n].state = TaskState::Running(cpu);
            c.tasks[n].cpu = cpu;
        }
        rq.set_curr(cpu, next);
        next
    }

    /// `ns` pass and `cpu` takes a tick: whether it asks to reschedule.
    fn tick_after(&mut self, cpu: CpuId, ns: u64) -> bool {
        self.now += ns;
        let curr = self.rq.curr_on(cpu).expect("a task runs");
        let (mut c, rq, b) = self.ctx();
        b.task_tick(&mut c, rq, cpu, curr)
    }

    fn deadline(&self, t: TaskId) -> u64 {
        self.tasks[t].data.deadline
    }

    fn select(&mut self, t: TaskId, waker: CpuId, kind: WakeKind) -> CpuId {
        let status: Vec<CpuStatus> = (0..self.ncpus)
            .map(|c| CpuStatus {
                curr: self.rq.curr_on(c),
                ..CpuStatus::default()
            })
            .collect();
        let view = CpuView {
            cpus: Cpus::Snapshot(&status),
            topology: &self.topology,
            now: self.now,
            hz: 1000,
            overloaded: None,
        };
        let tv = self.tasks.view();
        self.bfs
            .select_cpu(&tv, &view, &mut Work::new(&mut self.ops), t, waker, kind)
    }
}

#[test]
fn prio_ratios_and_deadlines_per_nice_level() {
    // designs.md §6.2: 128 at nice -20, +10% per level (integer), 836 at nice 0.
    for (nice, ratio) in [
        (-20, 128),
        (-10, 324),
        (-5, 520),
        (0, 836),
        (5, 1344),
        (10, 2161),
        (19, 5089),
    ] {
        assert_eq!(PRIO_RATIOS[user_prio(nice)], ratio, "nice {nice}");
    }
    // prio_deadline_diff = ratio * rr_interval(6) * 2^20/128 ns.
    let b = Bfs::new(1, BfsTunables::DEFAULT);
    assert_eq!(b.prio_deadline_diff(user_prio(-20)), 128 * 6 * 8192); // 6.29 ms
    assert_eq!(b.prio_deadline_diff(user_prio(0)), 41_091_072); // ~41 ms
    assert_eq!(b.prio_deadline_diff(user_prio(19)), 250_134_528); // ~250 ms
    assert_eq!(b.longest_deadline_diff(), 250_134_528);
    assert_eq!(b.timeslice(), 6 << 10, "6 ms in BFS microseconds (<< 10)");
    let b3 = Bfs::new(1, BfsTunables::parse("rr_interval=3").unwrap());
    assert_eq!(b3.prio_deadline_diff(user_prio(0)), 836 * 3 * 8192);

    // A new task's deadline is now + its offset.
    let mut fx = Fx::new(1);
    let now = fx.now;
    let a = fx.spawn(0);
    let z = fx.spawn(19);
    assert_eq!(fx.deadline(a), now + 41_091_072);
    assert_eq!(fx.deadline(z), now + 250_134_528);
    assert_eq!(
        fx.tasks[a].data.prio as usize, NORMAL_PRIO,
        "all nice levels share one list"
    );
    assert_eq!(fx.tasks[z].data.prio as usize, NORMAL_PRIO);
}

#[test]
fn the_slice_expires_at_the_tick_below_resched_us_or_half_a_jiffy_with_dither() {
    let mut fx = Fx::new(1);
    let a = fx.spawn(0);
    let _b = fx.spawn(0);
    // Picked 0.7 ms after the last tick (at t=0 of this fixture's clock): no dither.
    fx.rq.class.last_tick[0] = fx.now - 700_000;
    assert_eq!(fx.schedule(0), Some(a));
    assert!(!fx.rq.class.dither[0]);
    // 6 ms = 6_000_000 ns >> 10 = 5859 "us" used of 6144: 285 left, >= RESCHED_US.
    assert!(!fx.tick_after(0, 6 * MS));
    assert_eq!(fx.tasks[a].data.time_slice, 6144 - 5859);
    // 0.2 ms more: 195 used, 90 left < 100: expire.
    assert!(fx.tick_after(0, 200_000));
    // At the deschedule, check_deadline gives a new slice and a deadline from now.
    let now = fx.now;
    let next = fx.schedule(0);
    assert_eq!(next, Some(_b), "b's deadline is now the earlier");
    assert_eq!(fx.tasks[a].data.time_slice, 6144);
    assert_eq!(fx.deadline(a), now + 41_091_072);

    // With dither (picked within half a jiffy of the tick) the slice expires once at most
    // half a jiffy (500 us) is left.
    let mut fx = Fx::new(1);
    let a = fx.spawn(0);
    fx.rq.class.last_tick[0] = fx.now - 200_000;
    fx.schedule(0);
    assert!(fx.rq.class.dither[0]);
    // 5.5 ms: 5371 used, 773 left > 500.
    assert!(!fx.tick_after(0, 5_500_000));
    // 0.3 ms: 292 more, 481 left <= 500: zeroed and expired.
    assert!(fx.tick_after(0, 300_000));
    assert_eq!(fx.tasks[a].data.time_slice, 0);
}

#[test]
fn the_pick_takes_rt_first_then_the_earliest_deadline_within_affinity() {
    let mut fx = Fx::new(2);
    let late = fx.spawn(0);
    fx.now += MS;
    let later = fx.spawn(0);
    let early = fx.spawn(-10); // deadline now + 324*6*8192 = ~15.9 ms: earliest
    fx.tasks[early].cpus_allowed = CpuMask::single(1);
    let rt = fx.spawn_policy(0, SchedPolicy::Fifo, 10);
    assert_eq!(
        fx.tasks[rt].data.prio as usize, 89,
        "RT prio = 99 - rt_priority"
    );
    assert_eq!(fx.schedule(0), Some(rt), "RT before any deadline");
    // CPU 1 may run `early`; CPU 0 may not.
    assert_eq!(fx.schedule(1), Some(early));
    assert_eq!(fx.rq.class.qnr, 2, "running tasks leave the queue");
    // Ops: the scan looked at tasks and searched the bitmap.
    assert!(fx.ops.scanned > 0 && fx.ops.bitmap_searches > 0);
    let _ = (late, later);
}

#[test]
fn a_task_descheduled_while_runnable_sticks_and_is_biased_or_skipped_elsewhere() {
    let mut fx = Fx::new(2);
    let a = fx.spawn(0);
    fx.now += MS;
    let b = fx.spawn(0);
    assert_eq!(fx.schedule(0), Some(a));
    // a's slice runs out on CPU 0: it is requeued sticky, b takes CPU 0.
    fx.tasks[a].data.time_slice = 50;
    assert_eq!(fx.schedule(0), Some(b));
    assert!(fx.tasks[a].data.sticky);
    assert_eq!(fx.rq.class.sticky_task[0], Some(a));
    // a's new deadline is now + 41 ms. A nice 5 task (deadline now + ~66 ms) queued too:
    // on CPU 1, a's deadline counts 250 ms later, so the nice 5 task goes first.
    let c = fx.spawn(5);
    assert!(fx.deadline(a) < fx.deadline(c));
    assert_eq!(fx.schedule(1), Some(c), "the sticky bias");
    // Back to the state before: with CPU 1 throttled, a is skipped outright, even alone.
    let mut fx2 = Fx::new(2);
    let a = fx2.spawn(0);
    fx2.now += MS;
    let b = fx2.spawn(0);
    fx2.schedule(0);
    fx2.tasks[a].data.time_slice = 50;
    assert_eq!(fx2.schedule(0), Some(b));
    fx2.bfs.cpu_scaling(1, true);
    assert_eq!(
        fx2.schedule(1),
        None,
        "a sticky task is not taken by a scaling CPU"
    );
    fx2.bfs.cpu_scaling(1, false);
    assert_eq!(
        fx2.schedule(1),
        Some(a),
        "not scaling: biased, but taken when alone"
    );
    assert!(!fx2.tasks[a].data.sticky, "take_task clears the flag");

    // sticky=off: no flag at all.
    let mut fx3 = Fx::on(Topology::flat(2), BfsTunables::parse("sticky=off").unwrap());
    let a = fx3.spawn(0);
    fx3.now += MS;
    let b = fx3.spawn(0);
    fx3.schedule(0);
    fx3.tasks[a].data.time_slice = 50;
    assert_eq!(fx3.schedule(0), Some(b));
    assert!(!fx3.tasks[a].data.sticky);
    fx3.bfs.cpu_scaling(1, true);
    assert_eq!(fx3.schedule(1), Some(a));
}

#[test]
fn prev_runs_again_without_a_lookup_when_nothing_is_queued() {
    let mut fx = Fx::new(1);
    let a = fx.spawn(0);
    assert_eq!(fx.schedule(0), Some(a));
    let ops = fx.ops.scanned;
    fx.tasks[a].data.time_slice = 10;
    assert_eq!(fx.schedule(0), Some(a));
    assert_eq!(fx.ops.scanned, ops, "no scan");
    assert!(
        !fx.tasks[a].data.sticky,
        "no swap_sticky when nothing waits"
    );
    assert_eq!(
        fx.tasks[a].data.time_slice, 6144,
        "but its slice was refilled"
    );
}

#[test]
fn the_iso_window_switches_to_refractory_and_back_with_hysteresis() {
    // One CPU at HZ=1000: ISO_PERIOD = 5*1000*1 + 1 = 5001; the limit 5001*70 = 350 070.
    assert_eq!(Bfs::iso_period(1000, 1), 5001);
    let mut fx = Fx::new(1);
    let iso = fx.spawn_policy(0, SchedPolicy::Iso, 0);
    assert_eq!(fx.tasks[iso].data.prio as usize, ISO_PRIO);
    assert_eq!(fx.schedule(0), Some(iso));
    let mut ticks = 0;
    while !fx.rq.class.iso_refractory {
        fx.tasks[iso].data.time_slice = 6144; // keep it on the CPU
        fx.tick_after(0, MS);
        ticks += 1;
    }
    // 100 per tick: 3501 ticks make 350 100 > 350 070.
    assert_eq!(ticks, 3501);
    assert_eq!(fx.rq.class.iso_ticks, 350_100);
    assert_eq!(
        fx.tasks[iso].data.time_slice, 0,
        "running ISO past the limit: slice zeroed"
    );
    // It requeues as NORMAL while refractory.
    let other = fx.spawn(0);
    fx.schedule(0);
    assert_eq!(fx.tasks[iso].data.prio as usize, NORMAL_PRIO);
    // Non-ISO ticks decay: iso_ticks -= iso_ticks/5001 + 1, until below 5001*(70*115/128) =
    // 5001*62 = 310 062.
    let mut expect = fx.rq.class.iso_ticks;
    let mut decays = 0;
    while fx.rq.class.iso_refractory {
        let curr = fx.rq.curr_on(0).unwrap();
        fx.tasks[curr].data.time_slice = 6144;
        assert_eq!(fx.tasks[curr].policy, SchedPolicy::Normal);
        fx.tick_after(0, MS);
        expect -= expect / 5001 + 1;
        assert_eq!(fx.rq.class.iso_ticks, expect);
        decays += 1;
    }
    assert!(fx.rq.class.iso_ticks < 310_062);
    // Hand count: from 350 100 the decay of ~1.0 per 5001 takes about 5001*ln(350100/310062)
    // ~ 607 ticks.
    assert!((590..=620).contains(&decays), "{decays}");
    let _ = other;
}

#[test]
fn idle_cpus_are_ranked_by_locality_on_an_smt_topology() {
    // Two cores of two threads sharing one cache (the i7-m620's shape): CPUs {0,1}, {2,3}.
    let topo = Topology::from_spec(&TopologySpec {
        cpus: 4,
        threads_per_core: 2,
        cpus_per_cache: 4,
        cpus_per_node: None,
        cpus_per_l2: None,
        cpus_per_package: None,
    });
    let mut ops = OpCounter::default();
    fn idle(busy: &[CpuId]) -> impl Fn(CpuId) -> bool + '_ {
        move |c| !busy.contains(&c)
    }
    // CPU 0 busy, the task last ran there: CPU 1 ranks DIFF_THREAD|CACHE_BUSY|THREAD_BUSY
    // = 1+4+16 = 21, CPU 2 DIFF_CORE|CACHE_BUSY = 6, CPU 3 the same 6: CPU 2 (first).
    let busy = busy_groups(&topo, idle(&[0]));
    let mut mask = CpuMask::empty();
    for c in [1, 2, 3] {
        mask.set(c);
    }
    assert_eq!(best_mask_cpu(&topo, 0, &mask, &busy, &mut ops), 2);
    // Its last CPU idle: that one.
    mask.set(0);
    assert_eq!(best_mask_cpu(&topo, 0, &mask, &busy, &mut ops), 0);
    // CPU 2 busy, last ran on 0 (idle but not offered): 1 ranks DIFF_THREAD|CACHE_BUSY = 5,
    // 3 ranks DIFF_CORE|CACHE_BUSY|THREAD_BUSY = 22: the sibling wins.
    let busy = busy_groups(&topo, idle(&[2]));
    let mut mask = CpuMask::empty();
    mask.set(1);
    mask.set(3);
    assert_eq!(best_mask_cpu(&topo, 0, &mask, &busy, &mut ops), 1);
    // The locality table.
    assert_eq!(cpu_locality(&topo, 0, 1), 1);
    assert_eq!(cpu_locality(&topo, 0, 3), 2);

    // Through select_cpu: a waking task that last ran on busy CPU 0 goes to CPU 2.
    let mut fx = Fx::on(topo, BfsTunables::DEFAULT);
    let a = fx.spawn(0);
    let w = fx.spawn(0);
    assert_eq!(fx.schedule(0), Some(a));
    fx.tasks[w].cpu = 0;
    assert_eq!(fx.select(w, 0, WakeKind::Wakeup { sync: false }), 2);
}

#[test]
fn try_preempt_picks_the_worst_running_task_and_can_preempt_decides() {
    let mut fx = Fx::new(3);
    let a = fx.spawn(0);
    fx.now += MS;
    let b = fx.spawn(0); // later deadline than a
    let idle_prio = fx.spawn_policy(0, SchedPolicy::Idle, 0);
    assert_eq!(fx.tasks[idle_prio].data.prio as usize, IDLE_PRIO);
    fx.schedule(0);
    fx.schedule(1);
    fx.schedule(2);
    let (r0, r1, r2) = (
        fx.rq.curr_on(0).unwrap(),
        fx.rq.curr_on(1).unwrap(),
        fx.rq.curr_on(2).unwrap(),
    );
    assert_eq!((r0, r1, r2), (a, b, idle_prio));
    // A woken nice 0 task: the worst running is the IDLEPRIO one (highest prio number).
    fx.now += MS;
    let w = fx.spawn(0);
    assert_eq!(fx.select(w, 0, WakeKind::Wakeup { sync: false }), 2);
    // Without an IDLEPRIO task running: the latest deadline, b's on CPU 1; w's deadline
    // is later still, so it may not preempt.
    let mut fx = Fx::new(2);
    let a = fx.spawn(0);
    fx.now += MS;
    let b = fx.spawn(0);
    fx.schedule(0);
    fx.schedule(1);
    assert_eq!((fx.rq.curr_on(0), fx.rq.curr_on(1)), (Some(a), Some(b)));
    fx.now += MS;
    let w = fx.spawn(0);
    assert_eq!(fx.select(w, 0, WakeKind::Wakeup { sync: false }), 1);
    let (mut c, rq, bfs) = fx.ctx();
    assert!(!bfs.check_preempt_wakeup(&mut c, rq, 1, w, false));
    // A nice -5 wakee (deadline ~25.6 ms ahead) beats b's 41 ms.
    c.tasks[w].data.deadline = c.now + bfs.prio_deadline_diff(user_prio(-5));
    assert!(bfs.check_preempt_wakeup(&mut c, rq, 1, w, false));
    // Same priority and an earlier deadline preempts; a better priority always does.
    assert!(Bfs::can_preempt(NORMAL_PRIO, 5, NORMAL_PRIO, 6));
    assert!(!Bfs::can_preempt(NORMAL_PRIO, 6, NORMAL_PRIO, 6));
    assert!(Bfs::can_preempt(ISO_PRIO, 100, NORMAL_PRIO, 1));
    assert!(!Bfs::can_preempt(NORMAL_PRIO, 1, ISO_PRIO, 100));
    // A sync wakeup never preempts (no idle CPU here).
    assert!(!bfs.check_preempt_wakeup(&mut c, rq, 1, w, true));
}

#[test]
fn fork_halves_the_slice_or_restarts_the_child_and_batch_always_expires() {
    let mut fx = Fx::new(1);
    let p = fx.spawn(0);
    fx.schedule(0);
    fx.now += 2 * MS; // 2_000_000 >> 10 = 1953 used: 4191 left
    let c = fx.tasks.spawn();
    fx.tasks[c].parent = Some(p);
    fx.tasks[c].mm = fx.tasks[p].mm + 1;
    let (mut ctx, rq, b) = fx.ctx();
    assert!(!b.task_fork(&mut ctx, rq, 0, Some(p), c));
    assert_eq!(ctx.tasks[p].data.time_slice, 4191 / 2);
    assert_eq!(ctx.tasks[c].data.time_slice, 4191 / 2);
    assert_eq!(ctx.tasks[c].data.deadline, ctx.tasks[p].data.deadline);
    // A new address space and no idle CPU: the child runs first.
    b.enqueue(&mut ctx, rq, 0, c, EnqueueKind::New);
    ctx.tasks[c].state = TaskState::Queued;
    assert!(b.check_preempt_wakeup(&mut ctx, rq, 0, c, false));
    // A parent with under 2*RESCHED_US left reschedules; the child gets a fresh slice.
    ctx.tasks[p].data.time_slice = 150;
    ctx.tasks[p].data.run_start_ns = ctx.now;
    let c2 = fx.tasks.spawn();
    let now = fx.now;
    let (mut ctx, rq, b) = fx.ctx();
    assert!(b.task_fork(&mut ctx, rq, 0, Some(p), c2));
    assert_eq!(ctx.tasks[c2].data.time_slice, 6144);
    assert_eq!(ctx.tasks[c2].data.deadline, now + 41_091_072);

    // SCHED_BATCH: a fresh (later) deadline at every deschedule, however much slice is left.
    let mut fx = Fx::new(1);
    let batch = fx.spawn_policy(0, SchedPolicy::Batch, 0);
    fx.schedule(0);
    fx.now += 10 * MS;
    let before = fx.deadline(batch);
    fx.schedule(0);
    assert_eq!(fx.deadline(batch), fx.now + 41_091_072);
    assert!(fx.deadline(batch) > before);
}

#[test]
fn yield_keeps_the_deadline_so_the_yielder_may_run_again() {
    let mut fx = Fx::new(1);
    let a = fx.spawn(0);
    fx.now += MS;
    let b = fx.spawn(0);
    assert_eq!(fx.schedule(0), Some(a));
    let dl = fx.deadline(a);
    let (mut c, rq, bfs) = fx.ctx();
    assert!(bfs.yield_task(&mut c, rq, 0, a));
    // Requeued with its (earlier) deadline: a is picked again over b.
    assert_eq!(fx.schedule(0), Some(a));
    assert_eq!(fx.deadline(a), dl);
    let _ = b;
}

#[test]
fn tunables_parse_and_name_themselves() {
    assert_eq!(BfsTunables::parse("").unwrap(), BfsTunables::DEFAULT);
    let t = BfsTunables::parse("sticky=off, rr_interval=3,iso_cpu=50").unwrap();
    assert_eq!((t.sticky, t.rr_interval_ms, t.iso_cpu), (false, 3, 50));
    assert_eq!(t.suffix(), "sticky=off,rr_interval=3,iso_cpu=50");
    for bad in [
        "rr_interval=0",
        "rr_interval=1001",
        "iso_cpu=101",
        "sticky=maybe",
        "x=1",
        "sticky",
    ] {
        assert!(BfsTunables::parse(bad).is_err(), "{bad}");
    }
    use crate::registry::PolicyKind;
    let k = PolicyKind::parse("bfs:sticky=off").unwrap();
    assert_eq!(k.label(), "bfs:sticky=off");
    assert_eq!(PolicyKind::parse(&k.label()).unwrap(), k);
    assert_eq!(PolicyKind::parse("bfs").unwrap().label(), "bfs");
}

/// Renicing (or changing the policy of) the running task is a dequeue with SAVE and an
/// enqueue with RESTORE in the core; BFS's running task is on no list, so neither touches the
/// queue — it goes back on the list only when it stops running. (Found by the workload
/// fuzzer: a task reniced itself on CPU 0 and CPU 1 then picked it from the global queue.)
#[test]
fn an_attribute_change_of_the_running_task_does_not_queue_it() {
    let mut fx = Fx::new(2);
    let a = fx.spawn(0);
    assert_eq!(fx.schedule(0), Some(a));
    assert!(!fx.tasks[a].data.queued);
    let (mut c, rq, b) = fx.ctx();
    b.dequeue(&mut c, rq, 0, a, DequeueKind::Save);
    c.tasks[a].nice = 3;
    b.enqueue(&mut c, rq, 0, a, EnqueueKind::Restore);
    assert!(!c.tasks[a].data.queued);
    assert_eq!(rq.class.qnr, 0);
    // CPU 1 finds nothing to run; CPU 0 runs the task on.
    assert_eq!(fx.schedule(1), None);
    assert_eq!(fx.schedule(0), Some(a));
    // A queued task reniced is requeued as before.
    let q = fx.spawn(0);
    let (mut c, rq, b) = fx.ctx();
    b.dequeue(&mut c, rq, 0, q, DequeueKind::Save);
    b.enqueue(&mut c, rq, 0, q, EnqueueKind::Restore);
    assert!(c.tasks[q].data.queued);
}

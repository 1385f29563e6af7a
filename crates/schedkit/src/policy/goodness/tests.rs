//! The 2.4 scheduler against hand-worked cases: the goodness() formula, the scan and its
//! ties, epoch recalculation, yield, `reschedule_idle` and fork's counter split (moved out of
//! `goodness.rs`, unchanged).

use super::*;
use crate::ds::work::OpCounter;
use crate::task::Tasks;

struct Fx {
    tasks: Tasks<GoodnessTask>,
    ops: OpCounter,
    rq: Rq<GoodnessRq>,
}

impl Fx {
    fn new(ncpus: usize) -> Fx {
        Fx {
            tasks: Tasks::new(),
            ops: OpCounter::default(),
            rq: Rq::new(0, ncpus, Goodness.new_rq(0, &Topology::flat(ncpus))),
        }
    }
    fn ctx(&mut self) -> (Ctx<'_, GoodnessTask>, &mut Rq<GoodnessRq>) {
        (
            Ctx {
                now: 0,
                hz: 100,
                ncpus: self.rq.currs().len(),
                tasks: self.tasks.view(),
                ops: &mut self.ops,
                lines: None,
            },
            &mut self.rq,
        )
    }
    fn spawn(&mut self, nice: i32) -> TaskId {
        let t = self.tasks.spawn();
        self.tasks[t].nice = nice;
        let (mut c, rq) = self.ctx();
        Goodness.task_fork(&mut c, rq, 0, None, t);
        Goodness.enqueue(&mut c, rq, 0, t, EnqueueKind::New);
        t
    }
    /// `schedule()`'s pick, with the core's part: the pick becomes the CPU's current.
    fn pick(&mut self, cpu: CpuId) -> Option<TaskId> {
        let (mut c, rq) = self.ctx();
        let next = Goodness.pick_next(&mut c, rq, cpu);
        rq.set_curr(cpu, next);
        next
    }
}

#[test]
fn nice_to_ticks_matches_the_hz100_table() {
    // designs.md §1: at HZ=100 nice -20 gets 11 ticks, nice 0 gets 6, nice 19 gets 1.
    assert_eq!(nice_to_ticks(-20, 100), 11);
    assert_eq!(nice_to_ticks(0, 100), 6);
    assert_eq!(nice_to_ticks(19, 100), 1);
    assert_eq!(nice_to_ticks(0, 1000), 41);
}

#[test]
fn goodness_formula() {
    let mut fx = Fx::new(2);
    let a = fx.spawn(0);
    let p = &mut fx.tasks[a];
    p.cpu = 1;
    p.data.counter = 6;
    assert_eq!(goodness(p, 0, None), 6 + 20);
    assert_eq!(goodness(p, 1, None), 6 + 20 + PROC_CHANGE_PENALTY);
    assert_eq!(goodness(p, 1, Some(p.mm)), 6 + 20 + PROC_CHANGE_PENALTY + 1);
    p.data.counter = 0;
    assert_eq!(goodness(p, 1, None), 0);
    p.data.yielded = true;
    assert_eq!(goodness(p, 1, None), -1);
    p.data.yielded = false;
    p.policy = SchedPolicy::Fifo;
    p.rt_priority = 50;
    assert_eq!(goodness(p, 0, None), 1050);
}

#[test]
fn pick_scans_every_runnable_task_and_prefers_higher_goodness() {
    let mut fx = Fx::new(1);
    let low = fx.spawn(10);
    let high = fx.spawn(-10);
    let _ = low;
    fx.ops = OpCounter::default();
    assert_eq!(fx.pick(0), Some(high));
    assert_eq!(fx.ops.scanned, 2, "O(n): both tasks were examined");
}

/// add_to_runqueue is `list_add` (the front), and the loop keeps the first of equal
/// goodness (`weight > c`): the task queued last wins a tie.
#[test]
fn ties_go_to_the_earlier_list_entry_and_new_tasks_go_to_the_front() {
    let mut fx = Fx::new(1);
    let _a = fx.spawn(0);
    let b = fx.spawn(0);
    assert_eq!(fx.pick(0), Some(b));
}

#[test]
fn epoch_recalculation_covers_sleepers() {
    let mut fx = Fx::new(1);
    let run = fx.spawn(0);
    let sleeper = fx.spawn(0);
    {
        let (mut c, rq) = fx.ctx();
        Goodness.dequeue(&mut c, rq, 0, sleeper, DequeueKind::Sleep);
    }
    fx.tasks[run].data.counter = 0;
    fx.tasks[sleeper].data.counter = 4;
    fx.ops = OpCounter::default();
    assert_eq!(fx.pick(0), Some(run));
    assert_eq!(fx.rq.epochs, 1);
    assert_eq!(fx.tasks[run].data.counter, 6);
    // The sleeper keeps half and gains a slice: (4 >> 1) + 6.
    assert_eq!(fx.tasks[sleeper].data.counter, 8);
    assert_eq!(fx.ops.recalc, 2);
}

#[test]
fn yield_only_when_someone_waits() {
    let mut fx = Fx::new(1);
    let a = fx.spawn(0);
    assert_eq!(fx.pick(0), Some(a));
    let (mut c, rq) = fx.ctx();
    assert!(
        !Goodness.yield_task(&mut c, rq, 0, a),
        "alone: yield is a no-op"
    );

    let b = fx.spawn(0);
    let (mut c, rq) = fx.ctx();
    assert!(Goodness.yield_task(&mut c, rq, 0, a));

    // The yielder goes to the tail with goodness -1 for one pass: b runs.
    assert_eq!(fx.pick(0), Some(b));
    assert!(
        !fx.tasks[a].data.yielded,
        "the bit is cleared after the pass"
    );
}

#[test]
fn a_task_running_elsewhere_cannot_be_picked() {
    let mut fx = Fx::new(2);
    let a = fx.spawn(0);
    assert_eq!(fx.pick(0), Some(a));
    assert_eq!(fx.pick(1), None, "a runs on CPU 0; CPU 1 idles");
}

#[test]
fn reschedule_idle_prefers_last_cpu_then_longest_idle() {
    let fx = {
        let mut fx = Fx::new(3);
        let t = fx.spawn(0);
        fx.tasks[t].cpu = 2;
        fx
    };
    let topo = Topology::flat(3);
    let mut cpus = vec![CpuStatus::default(); 3];
    cpus[0].last_schedule_ns = 50;
    cpus[1].last_schedule_ns = 10;
    cpus[2].last_schedule_ns = 5;
    let t = TaskId(0);
    let mut ops = OpCounter::default();
    let view = CpuView {
        cpus: Cpus::Snapshot(&cpus),
        topology: &topo,
        now: 100,
        hz: 100,
        overloaded: None,
    };
    assert_eq!(
        Goodness.select_cpu(
            &fx.tasks.clone().view(),
            &view,
            &mut Work::new(&mut ops),
            t,
            0,
            WakeKind::Wakeup { sync: false }
        ),
        2
    );
    cpus[2].curr = Some(TaskId(0));
    let view = CpuView {
        cpus: Cpus::Snapshot(&cpus),
        topology: &topo,
        now: 100,
        hz: 100,
        overloaded: None,
    };
    // CPU 2 busy: the oldest idle CPU (1) wins over CPU 0.
    let mut tasks = fx.tasks.clone();
    tasks[t].data.running_on = None;
    assert_eq!(
        Goodness.select_cpu(
            &tasks.view(),
            &view,
            &mut Work::new(&mut ops),
            t,
            0,
            WakeKind::Wakeup { sync: false }
        ),
        1
    );
}

#[test]
fn fork_splits_the_counter() {
    let mut fx = Fx::new(1);
    let p = fx.spawn(0);
    fx.tasks[p].data.counter = 5;
    let c = fx.tasks.spawn();
    let (mut ctx, rq) = fx.ctx();
    let resched = Goodness.task_fork(&mut ctx, rq, 0, Some(p), c);
    assert!(!resched);
    assert_eq!((fx.tasks[p].data.counter, fx.tasks[c].data.counter), (2, 3));
}

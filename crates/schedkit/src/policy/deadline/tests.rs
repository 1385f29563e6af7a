//! The deadline class's rules, each against a hand-computed case, driven through the class
//! stack (deadline, RT, EEVDF) on one runqueue as `schedule()`, the tick and the wakeup path
//! drive it.

use super::*;
use crate::class::{EnqueueKind, SchedClass};
use crate::policy::eevdf::Eevdf;
use crate::policy::testkit::{ClassFixture, MS};
use crate::task::{DlParams, SchedPolicy, TaskState};

type Fx = ClassFixture<Eevdf>;

fn fx() -> Fx {
    ClassFixture::with(Eevdf::v6_6(1))
}

impl ClassFixture<Eevdf> {
    /// A new SCHED_DEADLINE task (runtime, deadline, period in ms), admitted and queued now.
    fn spawn_dl(&mut self, runtime: u64, deadline: u64, period: u64) -> TaskId {
        let t = self.tasks.spawn();
        self.tasks[t].policy = SchedPolicy::Deadline;
        self.tasks[t].dl_mut().params = DlParams {
            runtime_ns: runtime * MS,
            deadline_ns: deadline * MS,
            period_ns: period * MS,
            reclaim: false,
        };
        self.s
            .dl
            .admit(&mut self.tasks[t], &format!("{t}"))
            .expect("admitted");
        let (mut c, rq, s) = self.ctx();
        s.class.task_fork(&mut c, rq, 0, None, t);
        s.enqueue(&mut c, rq, 0, t, EnqueueKind::New);
        c.tasks[t].state = TaskState::Queued;
        t
    }

    /// The replenishment timers due now fire (`dl_task_timer`); whether one preempts.
    fn timers(&mut self) -> bool {
        let (mut c, rq, s) = self.ctx();
        s.dl.replenish_due(&mut c, rq)
    }

    fn wake_dl(&mut self, t: TaskId) {
        let (mut c, rq, s) = self.ctx();
        s.enqueue(
            &mut c,
            rq,
            0,
            t,
            EnqueueKind::Wakeup {
                uninterruptible: false,
                sync: false,
                irq: false,
            },
        );
        c.tasks[t].state = TaskState::Queued;
    }
}

#[test]
fn edf_picks_the_earliest_deadline_before_rt_and_normal_tasks() {
    let mut f = fx();
    let normal = f.spawn(0);
    let rt = f.tasks.spawn();
    f.tasks[rt].policy = SchedPolicy::Fifo;
    f.tasks[rt].rt_priority = 99;
    {
        let (mut c, rq, s) = f.ctx();
        s.enqueue(&mut c, rq, 0, rt, EnqueueKind::New);
        c.tasks[rt].state = TaskState::Queued;
    }
    let a = f.spawn_dl(1, 30, 30);
    let b = f.spawn_dl(1, 10, 10);
    let c = f.spawn_dl(1, 20, 20);
    // Deadlines now + 30, + 10, + 20 ms: B, then C, then A, then the RT task, then the
    // normal one.
    assert_eq!(f.tasks[b].dl().deadline, f.now + 10 * MS);
    let mut order = Vec::new();
    for _ in 0..5 {
        let n = f.pick().expect("something runs");
        order.push(n);
        f.sleep_curr();
    }
    assert_eq!(order, vec![b, c, a, rt, normal]);
}

#[test]
fn a_woken_earlier_deadline_preempts_a_later_one_and_every_lower_class() {
    let mut f = fx();
    let late = f.spawn_dl(1, 50, 50);
    assert_eq!(f.pick(), Some(late));
    let early = f.spawn_dl(1, 10, 10);
    let (c, _, s) = f.ctx();
    assert!(
        s.dl.check_preempt(&c, late, early),
        "deadline +10 ms beats +50 ms"
    );
    assert!(!s.dl.check_preempt(&c, early, late));
    drop(c);
    let normal = f.spawn(-20);
    let (mut c, rq, s) = f.ctx();
    assert!(
        !s.check_preempt(&mut c, rq, 0, normal, false),
        "a normal task never preempts"
    );
}

#[test]
fn an_overrunning_task_is_throttled_until_its_replenishment() {
    let mut f = fx();
    let hog = f.spawn(0);
    let t0 = f.now;
    let a = f.spawn_dl(2, 10, 10);
    assert_eq!(f.pick(), Some(a));
    // 1 ms run: 1 ms of runtime left, nothing to do.
    assert!(!f.run_for(MS));
    assert_eq!(f.tasks[a].dl().runtime, MS as i64);
    // 1 ms more and the runtime is gone (dl_runtime_exceeded): throttled, off the tree, its
    // timer at dl_next_period = deadline - dl_deadline + dl_period = t0 + 10 ms.
    assert!(f.run_for(MS), "throttling reschedules");
    assert!(f.tasks[a].dl().throttled);
    assert_eq!(f.tasks[a].dl().throttles, 1);
    assert_eq!(f.rq.dl.nr_running(), 0);
    assert_eq!(f.rq.dl.throttled, vec![(t0 + 10 * MS, a)]);
    // The normal task runs meanwhile; the timer is not due before t0 + 10 ms.
    assert_eq!(f.pick(), Some(hog));
    f.now = t0 + 10 * MS - 1;
    assert!(!f.timers());
    assert!(f.tasks[a].dl().throttled);
    // At t0 + 10 ms: replenish_dl_entity, deadline + one period, runtime + one runtime.
    f.now = t0 + 10 * MS;
    assert!(f.timers(), "the replenished task preempts the normal one");
    assert!(!f.tasks[a].dl().throttled);
    assert_eq!(f.tasks[a].dl().deadline, t0 + 20 * MS);
    assert_eq!(f.tasks[a].dl().runtime, 2 * MS as i64);
    assert_eq!(f.pick(), Some(a));
}

#[test]
fn an_overrun_is_paid_back_from_the_next_period() {
    let mut f = fx();
    let t0 = f.now;
    let a = f.spawn_dl(2, 10, 10);
    assert_eq!(f.pick(), Some(a));
    // The exhaustion is seen at the tick (no HRTICK): 3 ms run on a 2 ms runtime.
    assert!(f.run_for(3 * MS));
    assert_eq!(f.tasks[a].dl().runtime, -(MS as i64));
    f.pick();
    f.now = t0 + 10 * MS;
    f.timers();
    // runtime -1 + 2 = 1 ms: the overrun comes out of the next instance.
    assert_eq!(f.tasks[a].dl().runtime, MS as i64);
    assert_eq!(f.tasks[a].dl().deadline, t0 + 20 * MS);
    // An overrun of more than a runtime postpones by as many periods (the while loop).
    assert_eq!(f.pick(), Some(a));
    assert!(f.run_for(4 * MS)); // runtime 1 - 4 = -3 ms
    f.pick();
    f.now = t0 + 20 * MS;
    f.timers();
    // -3 + 2 = -1, + 2 = 1 ms: two periods, deadline t0 + 40 ms.
    assert_eq!(f.tasks[a].dl().runtime, MS as i64);
    assert_eq!(f.tasks[a].dl().deadline, t0 + 40 * MS);
}

#[test]
fn a_waking_task_keeps_its_deadline_only_while_it_fits_its_bandwidth() {
    let mut f = fx();
    let t0 = f.now;
    let a = f.spawn_dl(4, 20, 20); // bandwidth 0.2
    assert_eq!(f.pick(), Some(a));
    f.now += MS;
    f.sleep_curr(); // 3 ms left, deadline t0 + 20 ms
    assert_eq!(f.tasks[a].dl().runtime, 3 * MS as i64);
    // At t0 + 2 ms: 3 ms over 18 ms = 0.167 <= 0.2: it keeps its runtime and deadline.
    f.now = t0 + 2 * MS;
    f.wake_dl(a);
    assert_eq!(f.tasks[a].dl().deadline, t0 + 20 * MS);
    assert_eq!(f.tasks[a].dl().runtime, 3 * MS as i64);
    f.sleep(a);
    // At t0 + 10 ms: 3 ms over 10 ms = 0.3 > 0.2 (dl_entity_overflow): a new deadline
    // (t0 + 10 + 20 ms) and a full runtime.
    f.now = t0 + 10 * MS;
    f.wake_dl(a);
    assert_eq!(f.tasks[a].dl().deadline, t0 + 30 * MS);
    assert_eq!(f.tasks[a].dl().runtime, 4 * MS as i64);
    f.sleep(a);
    // After its deadline has passed: a new period whatever is left.
    f.now = t0 + 31 * MS;
    f.wake_dl(a);
    assert_eq!(f.tasks[a].dl().deadline, t0 + 51 * MS);
}

#[test]
fn a_constrained_deadline_task_waking_early_gets_its_runtime_cut_to_its_density() {
    let mut f = fx();
    let t0 = f.now;
    // runtime 2 ms, deadline 5 ms, period 20 ms: density 0.4.
    let a = f.spawn_dl(2, 5, 20);
    assert_eq!(f.pick(), Some(a));
    f.now += MS / 2;
    f.sleep_curr(); // 1.5 ms left
                    // At t0 + 2 ms: 1.5 ms over 3 ms = 0.5 > 0.4, deadline still ahead: the revised wakeup
                    // rule keeps the deadline and cuts the runtime to 0.4 x 3 ms = 1.2 ms.
    f.now = t0 + 2 * MS;
    f.wake_dl(a);
    assert_eq!(f.tasks[a].dl().deadline, t0 + 5 * MS);
    let want = 1_200_000i64;
    assert!(
        (f.tasks[a].dl().runtime - want).abs() <= 2,
        "runtime {} ns, expected {want} (BW_SHIFT rounding aside)",
        f.tasks[a].dl().runtime
    );
}

#[test]
fn a_job_ending_after_its_deadline_counts_as_missed() {
    let mut f = fx();
    let t0 = f.now;
    let a = f.spawn_dl(5, 10, 10);
    assert_eq!(f.pick(), Some(a));
    f.now = t0 + 9 * MS;
    f.sleep_curr();
    assert_eq!((f.tasks[a].dl().jobs, f.tasks[a].dl().misses), (1, 0));
    f.now = t0 + 20 * MS;
    f.wake_dl(a); // job deadline t0 + 30 ms
    f.pick();
    f.now = t0 + 30 * MS + 1;
    f.sleep_curr();
    assert_eq!((f.tasks[a].dl().jobs, f.tasks[a].dl().misses), (2, 1));
}

#[test]
fn admission_control_refuses_past_95_percent_of_the_cpus_naming_the_task() {
    let dl = DlClass::new(2);
    let mk = |runtime: u64, period: u64| {
        let mut t: Task<()> = Task::new(TaskId(0));
        t.policy = SchedPolicy::Deadline;
        t.dl_mut().params = DlParams {
            runtime_ns: runtime * MS,
            deadline_ns: period * MS,
            period_ns: period * MS,
            reclaim: false,
        };
        t
    };
    let (mut a, mut b, mut c) = (mk(8, 10), mk(9, 10), mk(3, 10));
    dl.admit(&mut a, "a").unwrap();
    dl.admit(&mut b, "b").unwrap(); // 0.8 + 0.9 = 1.7 of 0.95 x 2 = 1.9
    let e = dl.admit(&mut c, "group 'c'").unwrap_err(); // 2.0 > 1.9
    assert!(e.starts_with("group 'c': "), "{e}");
    assert!(e.contains("-EBUSY") && e.contains("2.0000"), "{e}");
    assert_eq!(c.dl().admitted_bw, 0);
    // a leaves the class (exit): its bandwidth is released and c now fits (1.2).
    dl.release(&mut a);
    dl.admit(&mut c, "c").unwrap();
    assert_eq!(dl.rd.total_bw(), b.dl().params.bw() + c.dl().params.bw());
}

#[test]
fn checkparam_refuses_what_sched_setattr_refuses() {
    let p = |r: u64, d: u64, per: u64| DlParams {
        runtime_ns: r,
        deadline_ns: d,
        period_ns: per,
        reclaim: false,
    };
    assert!(
        p(2 * MS, 10 * MS, 5 * MS).check().is_err(),
        "deadline > period"
    );
    assert!(
        p(3 * MS, 2 * MS, 10 * MS).check().is_err(),
        "runtime > deadline"
    );
    assert!(p(500, MS, MS).check().is_err(), "runtime under 1024 ns");
    assert!(p(MS, 0, 0).check().is_err(), "deadline 0");
    assert!(
        p(10_000, 50_000, 50_000).check().is_err(),
        "period under 100 us"
    );
    assert!(
        p(MS, 5_000 * MS, 5_000 * MS).check().is_err(),
        "period over 2^22 us"
    );
    // A period of 0 is the deadline.
    assert_eq!(p(MS, 10 * MS, 0).check().unwrap().period_ns, 10 * MS);
}

#[test]
fn grub_charges_a_lone_reclaiming_task_its_share_of_the_free_bandwidth() {
    // One CPU, one task of bandwidth 0.25 reclaiming: extra_bw = 0.95 - 0.25 = 0.70 is not
    // more than max_bw - dl_bw = 0.70, so u_act = 0.95 - 0 - 0.70 = 0.25 and 1 ms of running
    // costs 0.25 / 0.95 ms of runtime: it may run 3.8 times its reservation, 95% of the CPU.
    let max = to_ratio(RT_PERIOD_US, RT_RUNTIME_US);
    let bw = to_ratio(4, 1);
    let charged = grub_reclaim(MS, bw, 0, max - bw, max);
    assert!(
        (charged as i64 - 263_157).abs() <= 2,
        "charged {charged} ns for 1 ms"
    );
    // With the CPU fully reserved (no extra bandwidth) it is charged in full.
    assert_eq!(grub_reclaim(MS, bw, 0, 0, max), MS);

    let mut f = fx();
    let a = f.spawn_dl(2, 10, 10);
    f.tasks[a].dl_mut().params.reclaim = true;
    assert_eq!(f.pick(), Some(a));
    assert!(
        !f.run_for(4 * MS),
        "4 ms cost 4 x 0.2/0.95 = 0.84 ms of the 2 ms runtime"
    );
    let left = f.tasks[a].dl().runtime;
    assert!((left - 1_157_895).abs() <= 4, "{left}");
}

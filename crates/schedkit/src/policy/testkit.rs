//! Test fixture shared by the fair classes' mechanism tests: one class stack (behind the RT
//! class) on one runqueue whose lock the test thread holds, driven hook by hook the way
//! `schedule()`, the tick and the wakeup path drive it.

use crate::class::RtBalance;
use crate::class::{Ctx, DequeueKind, EnqueueKind, Rq, SchedClass};
use crate::ds::work::OpCounter;
use crate::machine::Topology;
use crate::sched_core::{lockdep, Sched};
use crate::task::{TaskId, TaskState, Tasks};

pub(crate) const MS: u64 = 1_000_000;

pub(crate) struct ClassFixture<C: SchedClass> {
    pub tasks: Tasks<C::TaskData>,
    pub ops: OpCounter,
    pub rq: Rq<C::Rq>,
    pub now: u64,
    pub s: Sched<C>,
}

impl<C: SchedClass> ClassFixture<C> {
    pub fn with(class: C) -> Self {
        lockdep::forget_held();
        lockdep::acquire(0);
        let s = Sched::new(class, RtBalance::Passive, 1);
        let rq = s.new_rq(0, &Topology::flat(1));
        ClassFixture {
            tasks: Tasks::new(),
            ops: OpCounter::default(),
            rq,
            now: 1_000 * MS,
            s,
        }
    }

    /// A hook's context at the fixture's time (HZ=1000, one CPU), the runqueue, the stack.
    pub fn ctx(&mut self) -> (Ctx<'_, C::TaskData>, &mut Rq<C::Rq>, &Sched<C>) {
        (
            Ctx::new(self.now, 1000, 1, self.tasks.view(), &mut self.ops),
            &mut self.rq,
            &self.s,
        )
    }

    /// A new task at `nice`, forked by `parent` if given, queued.
    pub fn spawn_with(&mut self, nice: i32, parent: Option<TaskId>) -> TaskId {
        let t = self.tasks.spawn();
        self.tasks[t].nice = nice;
        self.tasks[t].parent = parent;
        let (mut c, rq, s) = self.ctx();
        s.class.task_fork(&mut c, rq, 0, parent, t);
        s.enqueue(&mut c, rq, 0, t, EnqueueKind::New);
        c.tasks[t].state = TaskState::Queued;
        t
    }

    pub fn spawn(&mut self, nice: i32) -> TaskId {
        self.spawn_with(nice, None)
    }

    /// `schedule()`'s class part: put_prev, pick, and the core's curr.
    pub fn pick(&mut self) -> Option<TaskId> {
        let (mut c, rq, s) = self.ctx();
        if let Some(p) = rq.curr() {
            s.put_prev(&mut c, rq, 0, p);
        }
        let n = s.pick_next(&mut c, rq, 0);
        rq.set_curr(0, n);
        n
    }

    /// Runs the current task `ns` longer and delivers a tick: whether it asks to reschedule.
    pub fn run_for(&mut self, ns: u64) -> bool {
        self.now += ns;
        let curr = self.rq.curr().expect("a task runs");
        let (mut c, rq, s) = self.ctx();
        s.task_tick(&mut c, rq, 0, curr)
    }

    /// `t` blocks (dequeued as a sleeper).
    pub fn sleep(&mut self, t: TaskId) {
        let (mut c, rq, s) = self.ctx();
        s.dequeue(&mut c, rq, 0, t, DequeueKind::Sleep);
        c.tasks[t].state = TaskState::Sleeping {
            uninterruptible: false,
        };
    }

    /// The running task blocks and is switched out (nothing runs until the next pick).
    pub fn sleep_curr(&mut self) {
        let curr = self.rq.curr().expect("a task runs");
        self.sleep(curr);
        let (mut c, rq, s) = self.ctx();
        s.put_prev(&mut c, rq, 0, curr);
        rq.set_curr(0, None);
    }

    /// Wakes `t`; whether it preempts the running task.
    pub fn wake(&mut self, t: TaskId) -> bool {
        let (mut c, rq, s) = self.ctx();
        let kind = EnqueueKind::Wakeup {
            uninterruptible: false,
            sync: false,
            irq: false,
        };
        s.enqueue(&mut c, rq, 0, t, kind);
        c.tasks[t].state = TaskState::Queued;
        s.class.check_preempt_wakeup(&mut c, rq, 0, t, false)
    }
}

//! Lottery scheduling (Waldspurger and Weihl, OSDI 1994): each runnable task holds tickets,
//! here its nice level's load weight (1024 at nice 0, ~1.25x per level), and every quantum a
//! draw picks the winner with probability in proportion to its tickets. One list and one
//! draw per CPU; the draw is a xorshift64* generator per runqueue seeded from its CPU number, so
//! a simulation stays a pure function of its inputs. No balancing: tasks are placed as
//! `fifo` places them.

use schedkit::class::{
    CpuView, Ctx, DequeueKind, EnqueueKind, LockLayout, Rq, SchedClass, WakeKind,
};
use schedkit::ds::list::{Link, Linked, TaskList};
use schedkit::ds::work::Work;
use schedkit::external::FromEnv;
use schedkit::machine::Topology;
use schedkit::registry::BuildEnv;
use schedkit::task::{CpuId, TaskId, TaskView};

/// The quantum a winner runs for before the next draw, in milliseconds.
pub const QUANTUM_MS: u64 = 10;

pub struct Lottery;

/// A task's part: its place in the list and the tickets it entered it with.
#[derive(Clone, Debug, Default)]
pub struct LotteryTask {
    link: Link,
    tickets: u64,
}

impl Linked for LotteryTask {
    fn link(&self) -> &Link {
        &self.link
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }
}

/// One CPU's lottery: the runnable tasks (the running one included), their tickets, the
/// generator, and when the current winner's quantum ends.
#[derive(Debug)]
pub struct LotteryRq {
    tasks: TaskList,
    total: u64,
    rng: u64,
    quantum_end_ns: u64,
}

impl LotteryRq {
    /// xorshift64* (Vigna 2016): the next draw in `0..n` (n > 0).
    fn draw(&mut self, n: u64) -> u64 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        // The top 64 bits of a 128-bit product: an unbiased-enough map to 0..n for a model.
        ((x.wrapping_mul(0x2545_f491_4f6c_dd1d) as u128 * n as u128) >> 64) as u64
    }
}

impl FromEnv for Lottery {
    fn from_env(_env: &BuildEnv) -> Self {
        Lottery
    }
}

type C<'a> = Ctx<'a, LotteryTask>;

impl SchedClass for Lottery {
    type Rq = LotteryRq;
    type TaskData = LotteryTask;

    /// A yielder holds its tickets in the next draw and may win it again.
    const YIELD_GIVES_WAY: bool = false;

    fn name(&self) -> &'static str {
        "lottery"
    }

    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }

    fn new_rq(&self, domain: usize, _topology: &Topology) -> LotteryRq {
        LotteryRq {
            tasks: TaskList::default(),
            total: 0,
            // Any nonzero seed will do; a different one per CPU.
            rng: 0x9e37_79b9_7f4a_7c15 ^ (domain as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9),
            quantum_end_ns: 0,
        }
    }

    fn task_fork(
        &self,
        _: &mut C,
        _: &mut Rq<LotteryRq>,
        _: CpuId,
        _: Option<TaskId>,
        _: TaskId,
    ) -> bool {
        false
    }

    fn task_exit(&self, _: &mut C, _: &mut Rq<LotteryRq>, _: TaskId, _: Option<TaskId>) {}

    fn enqueue(&self, ctx: &mut C, rq: &mut Rq<LotteryRq>, _: CpuId, t: TaskId, _: EnqueueKind) {
        // Tickets by nice level, fixed while queued (a nice change dequeues and requeues).
        let tickets = ctx.tasks[t].weight();
        ctx.tasks[t].data.tickets = tickets;
        rq.class.tasks.push_back(&mut ctx.tasks, t, ctx.ops);
        rq.class.total += tickets;
        rq.nr_running += 1;
    }

    fn dequeue(&self, ctx: &mut C, rq: &mut Rq<LotteryRq>, _: CpuId, t: TaskId, _: DequeueKind) {
        rq.class.tasks.remove(&mut ctx.tasks, t, ctx.ops);
        rq.class.total -= ctx.tasks[t].data.tickets;
        rq.nr_running -= 1;
    }

    fn put_prev(&self, _: &mut C, _: &mut Rq<LotteryRq>, _: CpuId, _: TaskId) {}

    /// The draw: a ticket number in `0..total`, and the task holding it (a walk of the list,
    /// as the paper's list-based lottery does).
    fn pick_next(&self, ctx: &mut C, rq: &mut Rq<LotteryRq>, _: CpuId) -> Option<TaskId> {
        if rq.class.total == 0 {
            return None;
        }
        let mut ticket = rq.class.draw(rq.class.total);
        let mut winner = None;
        for t in rq.class.tasks.iter(&ctx.tasks) {
            ctx.ops.scanned += 1;
            let held = ctx.tasks[t].data.tickets;
            if ticket < held {
                winner = Some(t);
                break;
            }
            ticket -= held;
        }
        rq.class.quantum_end_ns = ctx.now + QUANTUM_MS * 1_000_000;
        winner
    }

    /// The quantum is over: draw again.
    fn task_tick(&self, ctx: &mut C, rq: &mut Rq<LotteryRq>, _: CpuId, _: TaskId) -> bool {
        ctx.now >= rq.class.quantum_end_ns && rq.class.tasks.len() > 1
    }

    fn yield_task(&self, _: &mut C, _: &mut Rq<LotteryRq>, _: CpuId, _: TaskId) -> bool {
        true
    }

    /// A waking task waits for the next draw.
    fn check_preempt_wakeup(
        &self,
        _: &mut C,
        _: &mut Rq<LotteryRq>,
        _: CpuId,
        _: TaskId,
        _: bool,
    ) -> bool {
        false
    }

    fn select_cpu(
        &self,
        tasks: &TaskView<'_, LotteryTask>,
        view: &CpuView,
        _: &mut Work<'_>,
        t: TaskId,
        _waker: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let p = &tasks[t];
        if matches!(kind, WakeKind::Wakeup { .. }) && p.cpus_allowed.contains(p.cpu) {
            return p.cpu;
        }
        let allowed = p.cpus_allowed.iter(view.ncpus());
        allowed
            .min_by_key(|&c| view.cpu(c).nr_running)
            .unwrap_or(p.cpu)
    }

    /// The runqueue's weight for anyone who compares CPUs: its tickets.
    fn load(&self, rq: &Rq<LotteryRq>, _: CpuId) -> u64 {
        rq.class.total
    }

    fn for_each_queued(
        &self,
        rq: &Rq<LotteryRq>,
        tasks: &TaskView<'_, LotteryTask>,
        f: &mut dyn FnMut(TaskId),
    ) {
        rq.class.tasks.iter(tasks).for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedkit::ds::work::OpCounter;
    use schedkit::task::Tasks;

    /// Over many draws, each task wins in proportion to its tickets: three tasks at nice -5, 0
    /// and +5 (3121, 1024 and 335 tickets) win 69.7%, 22.9% and 7.5% of 200 000 draws, each
    /// within 1% of that (a uniform draw, or one ignoring the tickets, misses by far).
    #[test]
    fn draws_are_in_proportion_to_tickets() {
        let class = Lottery;
        let topo = Topology::flat(1);
        let mut rq = Rq::new(0, 1, class.new_rq(0, &topo));
        let mut tasks: Tasks<LotteryTask> = Tasks::new();
        let mut ops = OpCounter::default();
        let nices = [-5, 0, 5];
        let ids: Vec<TaskId> = nices
            .iter()
            .map(|&n| {
                let t = tasks.spawn();
                tasks[t].nice = n;
                t
            })
            .collect();
        let mut ctx = Ctx::new(0, 1000, 1, tasks.view(), &mut ops);
        for &t in &ids {
            class.enqueue(&mut ctx, &mut rq, 0, t, EnqueueKind::New);
        }
        let total: u64 = rq.class.total;
        assert_eq!(total, 3121 + 1024 + 335);
        let draws = 200_000;
        let mut wins = [0u64; 3];
        for _ in 0..draws {
            let w = class.pick_next(&mut ctx, &mut rq, 0).expect("a winner");
            wins[ids.iter().position(|&t| t == w).unwrap()] += 1;
        }
        for (i, &t) in ids.iter().enumerate() {
            let want = ctx.tasks[t].weight() as f64 / total as f64;
            let got = wins[i] as f64 / draws as f64;
            assert!(
                (got - want).abs() < 0.01,
                "nice {}: won {got:.4} of the draws, its tickets are {want:.4}",
                nices[i]
            );
        }
        // A task that leaves takes its tickets with it.
        class.dequeue(&mut ctx, &mut rq, 0, ids[0], DequeueKind::Sleep);
        assert_eq!(rq.class.total, 1024 + 335);
        for _ in 0..1000 {
            assert_ne!(class.pick_next(&mut ctx, &mut rq, 0), Some(ids[0]));
        }
    }

    /// The simulator's figures are a pure function of its inputs: the draws are seeded from
    /// the CPU number, not from the clock or the process.
    #[test]
    fn each_cpu_draws_the_same_sequence_every_time() {
        let class = Lottery;
        let topo = Topology::flat(2);
        let seq = |cpu: usize| {
            let mut rq = class.new_rq(cpu, &topo);
            (0..8).map(|_| rq.draw(1000)).collect::<Vec<_>>()
        };
        assert_eq!(seq(0), seq(0));
        assert_ne!(seq(0), seq(1));
    }
}

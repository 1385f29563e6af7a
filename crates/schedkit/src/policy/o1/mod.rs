//! `o1`: Ingo Molnar's O(1) scheduler (announced 4 Jan 2002; designs.md §2, tags ANN, O1-25,
//! O1-260, O1-2611).
//!
//! What the announcement describes, implemented as described: per-CPU runqueues and locks; two
//! priority arrays per CPU (active, expired) reached through an index and swapped when active
//! empties; a priority bitmap searched with find-first-bit; timeslices recomputed at expiry (no
//! recalculation loop); a load estimator that punishes CPU hogs with a bounded priority
//! penalty; nice +19 batch-like; SCHED_FIFO/RR; an SMP balancer; child runs first after fork.
//!
//! Where the announcement is silent or its code was not found, this follows the 2.6 O(1) code
//! and says so:
//! - the estimator is 2.6.11's `sleep_avg` (the announcement's 4-entry ring buffer was never
//!   found), with its bonus, `TASK_INTERACTIVE`, on-runqueue credit and run-time charge;
//! - timeslices are 2.6.11's `SCALE_PRIO` (800/100/5 ms at nice -20/0/+19, at least a jiffy);
//! - `EXPIRED_STARVING` and the interactive timeslice-granularity requeue are 2.6.11's;
//! - `sched_yield` moves a normal task to the expired array (2.6.0-2.6.22);
//! - RT tasks live in the per-CPU arrays at priorities 0..99 (2.6), not the announcement's
//!   separate global RT queue;
//! - the balancer is the pre-sched-domains one of 2.5/2.6.0 (`find_busiest_queue` with
//!   `prev_cpu_load` smoothing, ~25% imbalance threshold, expired array first, cache-hot test
//!   with `cache_decay_ticks` from i386 `smp_tune_scheduling`), run every HZ/4 when busy and
//!   every tick when idle (O1-25), and from `schedule()` when the runqueue empties;
//! - wakeup placement is 2.6.0's `try_to_wake_up`, of the same pre-sched-domains era as the
//!   balancer: a sync wakeup moves the task to the waker's CPU, any other leaves it on its own
//!   runqueue; a sync wakeup on the waker's CPU enqueues without preemption check or sleep
//!   credit (`__activate_task`).
//!
//! Simplified: per-CPU `timestamp_last_tick` clock skew (the simulator has one clock);
//! `set_user_nice` re-enqueues into the active array rather than the array it came from; the
//! child of an RT parent is queued at the tail of its level rather than in front of the parent
//! (child-runs-first is applied to time-shared parents only).
//!
//! Longer than the crate's 800-line guide (about 960 lines): it is one class, whose hooks share
//! the estimator, the arrays and the jiffy constants; what the 2002 era changes is already in
//! `era2002.rs` and the tests in `tests.rs`, and the RT tasks' part of the balancer in the RT
//! class (`class::PassiveRt`).

pub mod era2002;

use crate::class::*;
use crate::ds::list::{Link, Linked};
use crate::ds::prio_array::{PrioArray, MAX_PRIO, MAX_RT_PRIO};
use crate::ds::work::{Line, OpCounter, Work};
use crate::machine::{Machine, Topology};
use crate::task::{CpuId, Task, TaskId, TaskView};

/// `MAX_USER_PRIO`.
const MAX_USER_PRIO: i64 = 40;
/// `PRIO_BONUS_RATIO` 25 → `MAX_BONUS` = 40 * 25 / 100 = 10.
pub const MAX_BONUS: i64 = MAX_USER_PRIO * 25 / 100;
const INTERACTIVE_DELTA: i64 = 2;
const ON_RUNQUEUE_WEIGHT: u64 = 30;
const CHILD_PENALTY: i64 = 95;
const PARENT_PENALTY: i64 = 100;
const EXIT_WEIGHT: u64 = 3;

/// The constants of 2.6.11 that are defined in jiffies, for a given HZ.
#[derive(Clone, Copy, Debug)]
pub struct Jiffies {
    pub hz: u64,
    pub tick_ns: u64,
    /// `DEF_TIMESLICE` = 100 ms.
    pub def_timeslice: i64,
    /// `MIN_TIMESLICE` = max(5 ms, 1 jiffy).
    pub min_timeslice: i64,
    /// `MAX_SLEEP_AVG` = DEF_TIMESLICE * MAX_BONUS (1 s).
    pub max_sleep_avg: i64,
    /// Division by `tick_ns` and by `max_sleep_avg` (see [`Recip`]).
    tick_recip: Recip,
    max_sleep_avg_recip: Recip,
}

/// `n / d` for a divisor fixed for the run, by a multiplication. 2.6.11's divisors in
/// `NS_TO_JIFFIES` and `CURRENT_BONUS` (`1e9 / HZ`, `MAX_SLEEP_AVG`) are compile-time
/// constants, which the compiler turns into multiplications; here HZ is the host's, known
/// at run time, so the reciprocal is computed once ([`O1`] keeps the [`Jiffies`] of its HZ)
/// and every quotient is still exact: with `m = floor((2^64 - 1) / d)` the high half of
/// `n * m` is `floor(n / d)` or one less, and one comparison corrects it.
#[derive(Clone, Copy, Debug)]
pub struct Recip {
    d: u64,
    m: u64,
}

/// The reciprocals of the divisors `CURRENT_BONUS` takes (index = divisor, 1..=MAX_BONUS).
const BONUS_RECIP: [Recip; MAX_BONUS as usize + 1] = {
    let mut t = [Recip::new(1); MAX_BONUS as usize + 1];
    let mut d = 2;
    while d <= MAX_BONUS as usize {
        t[d] = Recip::new(d as u64);
        d += 1;
    }
    t
};

/// `n / bonus`, 2.6.11's `run_time /= (CURRENT_BONUS(prev) ? : 1)` (the caller passes the
/// bonus already raised to 1). The bonus is 1 to MAX_BONUS in every state the policy reaches
/// (`sleep_avg` never exceeds NS_MAX_SLEEP_AVG): by the table, exact; a larger one (a
/// `sleep_avg` set from outside, or read at another HZ) by `/`, so the quotient is C's for
/// every input.
#[inline]
pub(crate) fn div_by_bonus(n: u64, bonus: u64) -> u64 {
    match BONUS_RECIP.get(bonus as usize) {
        Some(r) if bonus >= 1 => r.div(n),
        _ => n / bonus,
    }
}

impl Recip {
    pub const fn new(d: u64) -> Recip {
        Recip {
            d,
            m: if d > 1 { u64::MAX / d } else { 0 },
        }
    }

    #[inline]
    pub fn div(&self, n: u64) -> u64 {
        if self.d <= 1 {
            // 1: n itself; 0: the division by zero the plain `/` would have panicked with.
            return if self.d == 1 { n } else { n / self.d };
        }
        let q = ((n as u128 * self.m as u128) >> 64) as u64;
        if n - q * self.d >= self.d {
            q + 1
        } else {
            q
        }
    }
}

impl Jiffies {
    pub fn new(hz: u32) -> Jiffies {
        let hz = hz as u64;
        let def = (100 * hz / 1000) as i64;
        let tick_ns = 1_000_000_000 / hz;
        Jiffies {
            hz,
            tick_ns,
            def_timeslice: def,
            min_timeslice: ((5 * hz / 1000) as i64).max(1),
            max_sleep_avg: def * MAX_BONUS,
            tick_recip: Recip::new(tick_ns),
            max_sleep_avg_recip: Recip::new((def * MAX_BONUS) as u64),
        }
    }
    pub fn to_ns(&self, j: i64) -> u64 {
        j.max(0) as u64 * self.tick_ns
    }
    pub fn ns_to_jiffies(&self, ns: u64) -> i64 {
        self.tick_recip.div(ns) as i64
    }
    pub fn ns_max_sleep_avg(&self) -> u64 {
        self.to_ns(self.max_sleep_avg)
    }
    /// `STARVATION_LIMIT` = MAX_SLEEP_AVG.
    pub fn starvation_limit(&self) -> i64 {
        self.max_sleep_avg
    }

    /// `task_timeslice(p)` = SCALE_PRIO(DEF_TIMESLICE * (4 if sp < 120 else 1), sp), in jiffies.
    pub fn task_timeslice(&self, static_prio: usize) -> i64 {
        let sp = static_prio as i64;
        let x = if sp < 120 {
            self.def_timeslice * 4
        } else {
            self.def_timeslice
        };
        (x * (MAX_PRIO as i64 - sp) / (MAX_USER_PRIO / 2)).max(self.min_timeslice)
    }

    /// `CURRENT_BONUS(p)` = NS_TO_JIFFIES(sleep_avg) * MAX_BONUS / MAX_SLEEP_AVG.
    pub fn current_bonus(&self, sleep_avg: u64) -> i64 {
        // Both operands are non-negative: the unsigned quotient is C's.
        self.max_sleep_avg_recip
            .div((self.ns_to_jiffies(sleep_avg) * MAX_BONUS) as u64) as i64
    }

    /// `INTERACTIVE_SLEEP(p)` in ns.
    pub fn interactive_sleep(&self, nice: i32) -> u64 {
        self.to_ns(self.max_sleep_avg * (MAX_BONUS / 2 + delta(nice) + 1) / MAX_BONUS - 1)
    }

    /// `TIMESLICE_GRANULARITY(p)` in jiffies: 10 ms << (levels below max bonus - 1), times the
    /// number of CPUs.
    pub fn timeslice_granularity(&self, sleep_avg: u64, ncpus: usize) -> i64 {
        let gran = ((10 * self.hz / 1000) as i64).max(1);
        let steps = match MAX_BONUS - self.current_bonus(sleep_avg) {
            0 => 1,
            s => s,
        };
        gran * (1 << (steps - 1)) * ncpus as i64
    }
}

/// `DELTA(p)` = SCALE(nice, 40, MAX_BONUS) + INTERACTIVE_DELTA, with C truncation.
pub fn delta(nice: i32) -> i64 {
    nice as i64 * MAX_BONUS / 40 + INTERACTIVE_DELTA
}

/// `NICE_TO_PRIO`.
pub fn static_prio(nice: i32) -> usize {
    (120 + nice) as usize
}

/// Per-task state of the O(1) scheduler.
#[derive(Clone, Debug, Default)]
pub struct O1Task {
    run_list: Link,
    /// Which of the runqueue's two arrays holds it (`p->array`), if queued.
    pub array: Option<u8>,
    /// Dynamic priority (`p->prio`): 0..99 RT, 100..139 normal.
    pub prio: usize,
    /// `p->sleep_avg`, ns.
    pub sleep_avg: u64,
    /// Ticks left (`p->time_slice`).
    pub time_slice: i64,
    pub first_time_slice: bool,
    /// -1 woke from uninterruptible, 1 ordinary wakeup, 2 woken from interrupt, 0 none.
    pub activated: i8,
    /// A forked child queued in front of its running parent: it preempts on the first check.
    child_first: bool,
    /// `o1:era=2002`'s load history: ticks run in each of the last 4 seconds (a ring indexed
    /// by second), and the second the ring was last moved to.
    pub load_hist: [u16; era2002::LOAD_HISTORY],
    pub hist_second: u64,
}

impl Linked for O1Task {
    fn link(&self) -> &Link {
        &self.run_list
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.run_list
    }
}

/// The O(1) part of a per-CPU runqueue (`struct runqueue`); the CPU, `nr_running` (RT tasks
/// included, as 2.6 counted them), `curr` and the RT queue are in the core's [`Rq`] around it.
#[derive(Debug)]
pub struct O1Rq {
    pub arrays: [PrioArray; 2],
    /// Index of the active array; the other is expired.
    pub active: usize,
    /// Jiffy when the first task expired into the expired array (0: none).
    pub expired_timestamp: u64,
    pub best_expired_prio: usize,
    /// Array switches done (for tests and curiosity).
    pub array_switches: u64,
    /// `prev_cpu_load[]`: the balancer's last sample of every CPU's queue length.
    prev_cpu_load: Vec<usize>,
}

impl O1Rq {
    pub fn active(&self) -> &PrioArray {
        &self.arrays[self.active]
    }
    pub fn expired(&self) -> &PrioArray {
        &self.arrays[1 - self.active]
    }
}

/// The O(1) class. Holds what `smp_tune_scheduling` computes at boot. (Under passive RT
/// balancing its balancer moves RT tasks too, as 2.6's did when they sat in its arrays: the
/// core hands it the RT class's part of the pass, see `move_tasks`.)
pub struct O1 {
    /// `cache_decay_ticks`: how long a task counts as cache-hot for the balancer.
    pub cache_decay_ticks: u64,
    pub era: O1Era,
    /// The constants of the host's HZ, computed at the first hook that reads them (the
    /// kernel's are compile-time constants).
    jiffies: std::sync::OnceLock<Jiffies>,
}

/// Which O(1): the announcement's (`o1:era=2002`, [`era2002`]) or 2.6.11's (`o1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum O1Era {
    /// The patch announced on 4 Jan 2002, with 2.5.2-era constants.
    Announcement2002,
    /// 2.6.11's code where the announcement is silent (the default `o1`).
    #[default]
    V2_6_11,
}

type T = Task<O1Task>;

impl O1 {
    /// i386 `smp_tune_scheduling` (2.5/2.6): the time a memory-bound task needs to flush the
    /// cache at 350 MB/s, `cacheflush_time = (cpu_khz >> 10) * (cachesize << 10) / 350`
    /// cycles, gives `cache_decay_ticks = cacheflush_time / cpu_khz + 1`.
    pub fn new(machine: &Machine) -> O1 {
        let cpu_khz = (machine.profile.clock.mhz * 1000.0) as u64;
        let cachesize_kb = machine.profile.cache.size_kb;
        let cacheflush_time = (cpu_khz >> 10) * (cachesize_kb << 10) / 350;
        O1 {
            cache_decay_ticks: cacheflush_time / cpu_khz.max(1) + 1,
            era: O1Era::V2_6_11,
            jiffies: std::sync::OnceLock::new(),
        }
    }

    /// Built from the registry's machine facts (the same computation as [`O1::new`]).
    pub fn from_env(env: &crate::class::BuildEnv) -> O1 {
        let cpu_khz = (env.mhz * 1000.0) as u64;
        let cacheflush_time = (cpu_khz >> 10) * (env.cache_kb << 10) / 350;
        O1 {
            cache_decay_ticks: cacheflush_time / cpu_khz.max(1) + 1,
            era: O1Era::V2_6_11,
            jiffies: std::sync::OnceLock::new(),
        }
    }

    /// The announcement's O(1) (`o1:era=2002`), built from the registry's machine facts.
    pub fn era_2002(env: &crate::class::BuildEnv) -> O1 {
        O1 {
            era: O1Era::Announcement2002,
            ..O1::from_env(env)
        }
    }

    /// A policy with a given `cache_decay_ticks` (tests).
    pub fn with_cache_decay_ticks(ticks: u64) -> O1 {
        O1 {
            cache_decay_ticks: ticks,
            era: O1Era::V2_6_11,
            jiffies: std::sync::OnceLock::new(),
        }
    }

    fn y2002(&self) -> bool {
        self.era == O1Era::Announcement2002
    }

    /// `task_timeslice(p)` of this era, in jiffies.
    fn timeslice(&self, j: &Jiffies, nice: i32) -> i64 {
        if self.y2002() {
            era2002::task_timeslice(j, static_prio(nice))
        } else {
            j.task_timeslice(static_prio(nice))
        }
    }

    /// The dynamic priority of this era's estimator, as of `now`.
    fn dynamic_prio(&self, p: &mut T, now: u64, j: &Jiffies) -> usize {
        if self.y2002() && !p.policy.is_rt() {
            era2002::effective_prio(p, now, j)
        } else {
            effective_prio(p, j)
        }
    }
}

/// The end of `schedule()`'s pick: `next` becomes the runqueue's current task; a task that was
/// not running already starts its run-time clock now.
fn make_current(ctx: &mut Ctx<O1Task>, rq: &Rq<O1Rq>, next: TaskId) -> TaskId {
    let p = &mut ctx.tasks[next];
    p.data.activated = 0;
    if rq.curr() != Some(next) {
        p.timestamp_ns = ctx.now;
    }
    next
}

/// `p->prio` for comparisons with any task: an RT task's (queued by the RT class) or the
/// dynamic priority this class keeps.
fn prio(p: &T) -> usize {
    if p.policy.is_rt() {
        rt_prio(p)
    } else {
        p.data.prio
    }
}

/// `effective_prio(p)`.
pub fn effective_prio(p: &T, j: &Jiffies) -> usize {
    if p.policy.is_rt() {
        return rt_prio(p);
    }
    let bonus = j.current_bonus(p.data.sleep_avg) - MAX_BONUS / 2;
    let prio = static_prio(p.nice) as i64 - bonus;
    prio.clamp(MAX_RT_PRIO as i64, MAX_PRIO as i64 - 1) as usize
}

fn rt_prio(p: &T) -> usize {
    MAX_RT_PRIO - 1 - p.rt_priority as usize
}

/// `TASK_INTERACTIVE(p)`.
pub fn task_interactive(p: &T, _j: &Jiffies) -> bool {
    (p.data.prio as i64) <= static_prio(p.nice) as i64 - delta(p.nice)
}

/// `recalc_task_prio(p, now)`: credit the time slept since `p->timestamp`.
pub fn recalc_task_prio(p: &mut T, now: u64, j: &Jiffies) {
    let ns_max = j.ns_max_sleep_avg();
    let mut sleep_time = now.saturating_sub(p.timestamp_ns).min(ns_max);
    if sleep_time > 0 {
        let has_mm = true; // every simulated task has a user address space
        let isleep = j.interactive_sleep(p.nice);
        if has_mm && p.data.activated != -1 && sleep_time > isleep {
            // A long sleeper becomes just interactive, no more.
            p.data.sleep_avg = j.to_ns(j.max_sleep_avg - j.def_timeslice);
        } else {
            // Low sleep_avg rises faster: scale by the levels still to go.
            sleep_time *= (MAX_BONUS - j.current_bonus(p.data.sleep_avg)).max(1) as u64;
            if p.data.activated == -1 && has_mm {
                // Uninterruptible (I/O) sleep may bring a task only up to interactive.
                if p.data.sleep_avg >= isleep {
                    sleep_time = 0;
                } else if p.data.sleep_avg + sleep_time >= isleep {
                    p.data.sleep_avg = isleep;
                    sleep_time = 0;
                }
            }
            p.data.sleep_avg = (p.data.sleep_avg + sleep_time).min(ns_max);
        }
    }
    p.data.prio = effective_prio(p, j);
}

impl O1 {
    #[inline]
    fn jiffies(&self, hz: u32) -> Jiffies {
        match self.jiffies.get() {
            Some(j) if j.hz == hz as u64 => *j,
            _ => {
                let j = Jiffies::new(hz);
                let _ = self.jiffies.set(j);
                j
            }
        }
    }

    /// Queues `t` in array `which`.
    fn enqueue_array(
        &self,
        rq: &mut Rq<O1Rq>,
        tasks: &mut TaskView<'_, O1Task>,
        t: TaskId,
        which: usize,
        ops: &mut OpCounter,
    ) {
        let prio = tasks[t].data.prio;
        rq.arrays[which].enqueue(tasks, t, prio, ops);
        tasks[t].data.array = Some(which as u8);
    }

    fn dequeue_array(
        &self,
        rq: &mut Rq<O1Rq>,
        tasks: &mut TaskView<'_, O1Task>,
        t: TaskId,
        ops: &mut OpCounter,
    ) -> usize {
        let which = tasks[t].data.array.expect("dequeue of a task on no array");
        let prio = tasks[t].data.prio;
        rq.arrays[which as usize].dequeue(tasks, t, prio, ops);
        tasks[t].data.array = None;
        which as usize
    }

    /// `EXPIRED_STARVING(rq)`.
    fn expired_starving(rq: &Rq<O1Rq>, curr: &T, jiffies: u64, j: &Jiffies) -> bool {
        let limit = j.starvation_limit();
        (limit > 0
            && rq.expired_timestamp != 0
            && jiffies.saturating_sub(rq.expired_timestamp) > (limit as u64) * rq.nr_running as u64)
            || static_prio(curr.nice) > rq.best_expired_prio
    }

    /// `pull_task`: move `t` from `src` to `this`'s active array.
    fn pull_task(
        &self,
        ctx: &mut Ctx<O1Task>,
        src: &mut Rq<O1Rq>,
        this: &mut Rq<O1Rq>,
        this_cpu: CpuId,
        t: TaskId,
    ) -> bool {
        self.dequeue_array(src, &mut ctx.tasks, t, ctx.ops);
        src.nr_running -= 1;
        ctx.tasks[t].cpu = this_cpu;
        this.nr_running += 1;
        let active = this.active;
        self.enqueue_array(this, &mut ctx.tasks, t, active, ctx.ops);
        ctx.write_remote(Line::Task(t));
        this.curr()
            .is_some_and(|c| prio(&ctx.tasks[t]) < prio(&ctx.tasks[c]))
    }

    /// `can_migrate_task` (2.6.0).
    fn can_migrate(
        &self,
        p: &T,
        src: &Rq<O1Rq>,
        this_cpu: CpuId,
        idle: bool,
        now: u64,
        tick_ns: u64,
    ) -> bool {
        if src.curr() == Some(p.id) || !p.cpus_allowed.contains(this_cpu) {
            return false;
        }
        let hot = now.saturating_sub(p.timestamp_ns) < self.cache_decay_ticks * tick_ns;
        idle || !hot
    }
}

impl SchedClass for O1 {
    type Rq = O1Rq;
    type TaskData = O1Task;

    fn name(&self) -> &'static str {
        match self.era {
            O1Era::Announcement2002 => "o1:era=2002",
            O1Era::V2_6_11 => "o1",
        }
    }

    fn pick_rule(&self) -> &'static str {
        "O(1): the first task of the highest-priority non-empty list of this CPU's active \
         array (a bitmap search); when the active array is empty, the arrays swap first"
    }

    fn describe_task(&self, rq: &Rq<O1Rq>, task: &Task<O1Task>) -> String {
        let d = &task.data;
        let array = match d.array {
            Some(a) if a as usize == rq.active => "active",
            Some(_) => "expired",
            None => "no array",
        };
        format!(
            "prio {} ({array}), slice {} ticks, sleep_avg {} ms",
            d.prio,
            d.time_slice,
            d.sleep_avg / 1_000_000
        )
    }

    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }

    fn new_rq(&self, _domain: usize, topology: &Topology) -> O1Rq {
        O1Rq {
            arrays: [PrioArray::default(), PrioArray::default()],
            active: 0,
            expired_timestamp: 0,
            best_expired_prio: MAX_PRIO,
            array_switches: 0,
            prev_cpu_load: vec![0; topology.ncpus],
        }
    }

    fn rr_timeslice_ticks(&self, task: &T, hz: u32) -> i64 {
        // 2.6.11 gave SCHED_RR tasks the nice-scaled slice of everyone else.
        self.timeslice(&self.jiffies(hz), task.nice)
    }

    fn task_fork(
        &self,
        ctx: &mut Ctx<O1Task>,
        rq: &mut Rq<O1Rq>,
        cpu: CpuId,
        parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        let j = self.jiffies(ctx.hz);
        let now = ctx.now;
        let Some(parent) = parent else {
            let c = &mut ctx.tasks[child];
            c.data.time_slice = self.timeslice(&j, c.nice);
            c.data.first_time_slice = true;
            c.timestamp_ns = now;
            c.data.prio = self.dynamic_prio(c, now, &j);
            return false;
        };
        let (p, c) = ctx.tasks.pair_mut(parent, child);
        // sched_fork: split the parent's remaining slice.
        c.data.time_slice = (p.data.time_slice + 1) >> 1;
        p.data.time_slice >>= 1;
        c.data.first_time_slice = true;
        c.timestamp_ns = now;
        if self.y2002() {
            // The child's task_struct is a copy of the parent's: its load history too.
            c.data.load_hist = p.data.load_hist;
            c.data.hist_second = p.data.hist_second;
        } else {
            // wake_up_new_task: both lose interactivity credit (bonus quantised, child to
            // 95%).
            c.data.sleep_avg = j.to_ns(
                j.current_bonus(p.data.sleep_avg) * CHILD_PENALTY / 100 * j.max_sleep_avg
                    / MAX_BONUS,
            );
            p.data.sleep_avg = j.to_ns(
                j.current_bonus(p.data.sleep_avg) * PARENT_PENALTY / 100 * j.max_sleep_avg
                    / MAX_BONUS,
            );
        }
        c.data.prio = self.dynamic_prio(c, now, &j);
        if p.data.time_slice == 0 && !p.is_rt() {
            // "current->time_slice = 1; scheduler_tick()": the parent expires right away (an
            // RT parent's slice is the RT class's business).
            p.data.time_slice = 1;
            return self.task_tick(ctx, rq, cpu, parent);
        }
        false
    }

    fn task_exit(
        &self,
        ctx: &mut Ctx<O1Task>,
        _rq: &mut Rq<O1Rq>,
        child: TaskId,
        parent: Option<TaskId>,
    ) {
        let Some(parent) = parent else { return };
        let j = self.jiffies(ctx.hz);
        let (c, p) = ctx.tasks.pair_mut(child, parent);
        // sched_exit: an unused first slice goes back to the parent.
        if c.data.first_time_slice {
            p.data.time_slice =
                (p.data.time_slice + c.data.time_slice).min(self.timeslice(&j, c.nice));
        }
        if self.era == O1Era::V2_6_11 && c.data.sleep_avg < p.data.sleep_avg {
            p.data.sleep_avg = p.data.sleep_avg / (EXIT_WEIGHT + 1) * EXIT_WEIGHT
                + c.data.sleep_avg / (EXIT_WEIGHT + 1);
        }
    }

    fn enqueue(
        &self,
        ctx: &mut Ctx<O1Task>,
        rq: &mut Rq<O1Rq>,
        cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    ) {
        let j = self.jiffies(ctx.hz);
        let now = ctx.now;
        let active = rq.active;
        rq.nr_running += 1;
        match kind {
            EnqueueKind::New => {
                let parent = ctx.tasks[t].parent;
                let runs_first = parent.filter(|&p| {
                    rq.curr() == Some(p)
                        && !ctx.tasks[p].is_rt()
                        && ctx.tasks[p].data.array.is_some()
                        && ctx.tasks[p].mm != ctx.tasks[t].mm
                        && ctx.tasks[t].cpu == cpu
                });
                if let Some(p) = runs_first {
                    // Child runs first: same priority and array as the parent, just in front
                    // of it, and the parent is told to reschedule.
                    let (pprio, parr) = (ctx.tasks[p].data.prio, ctx.tasks[p].data.array.unwrap());
                    ctx.tasks[t].data.prio = pprio;
                    rq.arrays[parr as usize].enqueue_before(&mut ctx.tasks, t, pprio, p, ctx.ops);
                    ctx.tasks[t].data.array = Some(parr);
                    ctx.tasks[t].data.child_first = true;
                } else {
                    let c = &mut ctx.tasks[t];
                    c.data.prio = self.dynamic_prio(c, now, &j);
                    c.timestamp_ns = now;
                    self.enqueue_array(rq, &mut ctx.tasks, t, active, ctx.ops);
                }
            }
            EnqueueKind::Wakeup { .. } if self.y2002() => {
                // activate_task: the priority the load history gives now; no sleep credit.
                let p = &mut ctx.tasks[t];
                p.data.prio = self.dynamic_prio(p, now, &j);
                p.timestamp_ns = now;
                self.enqueue_array(rq, &mut ctx.tasks, t, active, ctx.ops);
            }
            EnqueueKind::Wakeup { sync: true, .. } => {
                // A sync wakeup on the waker's CPU: __activate_task, no sleep credit.
                self.enqueue_array(rq, &mut ctx.tasks, t, active, ctx.ops);
            }
            EnqueueKind::Wakeup {
                uninterruptible,
                irq,
                ..
            } => {
                // try_to_wake_up + activate_task.
                let p = &mut ctx.tasks[t];
                if uninterruptible {
                    p.data.activated = -1;
                }
                recalc_task_prio(p, now, &j);
                if p.data.activated == 0 {
                    p.data.activated = if irq { 2 } else { 1 };
                }
                p.timestamp_ns = now;
                self.enqueue_array(rq, &mut ctx.tasks, t, active, ctx.ops);
            }
            EnqueueKind::Migrate => self.enqueue_array(rq, &mut ctx.tasks, t, active, ctx.ops),
            EnqueueKind::Restore => {
                let p = &mut ctx.tasks[t];
                p.data.prio = self.dynamic_prio(p, now, &j);
                self.enqueue_array(rq, &mut ctx.tasks, t, active, ctx.ops);
            }
        }
    }
    fn dequeue(
        &self,
        ctx: &mut Ctx<O1Task>,
        rq: &mut Rq<O1Rq>,
        _cpu: CpuId,
        t: TaskId,
        _kind: DequeueKind,
    ) {
        if ctx.tasks[t].data.array.is_some() {
            self.dequeue_array(rq, &mut ctx.tasks, t, ctx.ops);
            rq.nr_running -= 1;
        }
    }

    fn put_prev(&self, ctx: &mut Ctx<O1Task>, _rq: &mut Rq<O1Rq>, _cpu: CpuId, prev: TaskId) {
        // schedule(): charge the run time to sleep_avg, divided by the current bonus.
        let j = self.jiffies(ctx.hz);
        let now = ctx.now;
        let p = &mut ctx.tasks[prev];
        if self.era == O1Era::V2_6_11 {
            // `run_time /= (CURRENT_BONUS(prev) ? : 1)`: a hardware division of 10-20 cycles
            // at every switch, in the kernel too; here by the divisor's reciprocal
            // ([`div_by_bonus`], exact), and none for 1.
            let run_time = div_by_bonus(
                now.saturating_sub(p.timestamp_ns).min(j.ns_max_sleep_avg()),
                j.current_bonus(p.data.sleep_avg).max(1) as u64,
            );
            p.data.sleep_avg = p.data.sleep_avg.saturating_sub(run_time);
        }
        p.timestamp_ns = now;
        p.last_ran_ns = now;
    }

    fn pick_next(&self, ctx: &mut Ctx<O1Task>, rq: &mut Rq<O1Rq>, _cpu: CpuId) -> Option<TaskId> {
        // (The stacked RT class was asked first; `nr_running` counts its tasks too, and it
        // found none.)
        if rq.nr_running == 0 || rq.arrays[0].nr_active + rq.arrays[1].nr_active == 0 {
            rq.expired_timestamp = 0;
            return None;
        }
        if rq.arrays[rq.active].nr_active == 0 {
            // The array switch: expired becomes active, O(1).
            rq.active = 1 - rq.active;
            rq.expired_timestamp = 0;
            rq.best_expired_prio = MAX_PRIO;
            rq.array_switches += 1;
        }
        let active = rq.active;
        let idx = rq.arrays[active].find_first_bit(ctx.ops);
        let next = rq.arrays[rq.active]
            .queue(idx)
            .front()
            .expect("bitmap bit set on an empty list");
        let j = self.jiffies(ctx.hz);
        let n = &ctx.tasks[next];
        if self.era == O1Era::V2_6_11 && !n.policy.is_rt() && n.data.activated > 0 {
            // Credit the time spent waiting on the runqueue (30% for an ordinary wakeup).
            let mut delta = ctx.now.saturating_sub(n.timestamp_ns);
            if n.data.activated == 1 {
                delta = delta * ON_RUNQUEUE_WEIGHT / 100;
            }
            let which = self.dequeue_array(rq, &mut ctx.tasks, next, ctx.ops);
            let p = &mut ctx.tasks[next];
            let at = p.timestamp_ns + delta;
            recalc_task_prio(p, at, &j);
            self.enqueue_array(rq, &mut ctx.tasks, next, which, ctx.ops);
        }
        Some(make_current(ctx, rq, next))
    }

    fn task_tick(
        &self,
        ctx: &mut Ctx<O1Task>,
        rq: &mut Rq<O1Rq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        let j = self.jiffies(ctx.hz);
        let jiffies = ctx.now / j.tick_ns;
        let ncpus = ctx.ncpus;
        let p = &ctx.tasks[curr];
        // (SCHED_FIFO/RR tasks tick in the stacked RT class.)
        // Expired but still running (e.g. a yield is in flight): just reschedule.
        if p.data.array != Some(rq.active as u8) {
            return true;
        }
        let p = &mut ctx.tasks[curr];
        if self.y2002() {
            era2002::charge_tick(&mut p.data, ctx.now);
        }
        p.data.time_slice -= 1;
        if p.data.time_slice <= 0 {
            self.dequeue_array(rq, &mut ctx.tasks, curr, ctx.ops);
            let p = &mut ctx.tasks[curr];
            p.data.prio = self.dynamic_prio(p, ctx.now, &j);
            p.data.time_slice = self.timeslice(&j, p.nice);
            p.data.first_time_slice = false;
            if self.y2002() {
                // Every task that used up its slice waits for the array switch.
                let expired = 1 - rq.active;
                self.enqueue_array(rq, &mut ctx.tasks, curr, expired, ctx.ops);
                rq.best_expired_prio = rq.best_expired_prio.min(static_prio(ctx.tasks[curr].nice));
                return true;
            }
            if rq.expired_timestamp == 0 {
                rq.expired_timestamp = jiffies.max(1);
            }
            let p = &ctx.tasks[curr];
            if !task_interactive(p, &j) || Self::expired_starving(rq, p, jiffies, &j) {
                let sp = static_prio(p.nice);
                let expired = 1 - rq.active;
                self.enqueue_array(rq, &mut ctx.tasks, curr, expired, ctx.ops);
                rq.best_expired_prio = rq.best_expired_prio.min(sp);
            } else {
                let active = rq.active;
                self.enqueue_array(rq, &mut ctx.tasks, curr, active, ctx.ops);
            }
            return true;
        }
        if self.y2002() {
            return false;
        }
        // An interactive task with a long slice is round-robined with its equals every
        // TIMESLICE_GRANULARITY instead of running its whole slice at once.
        let ts = self.timeslice(&j, p.nice);
        let gran = j.timeslice_granularity(p.data.sleep_avg, ncpus);
        if task_interactive(p, &j)
            && (ts - p.data.time_slice) % gran == 0
            && p.data.time_slice >= gran
        {
            let prio = p.data.prio;
            let active = rq.active;
            rq.arrays[active].requeue(&mut ctx.tasks, curr, prio, ctx.ops);
            return true;
        }
        false
    }

    fn yield_task(
        &self,
        ctx: &mut Ctx<O1Task>,
        rq: &mut Rq<O1Rq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        let Some(from) = ctx.tasks[curr].data.array else {
            return true;
        };
        let prio = ctx.tasks[curr].data.prio;
        if self.y2002() {
            // O1-25: a temporary prio++, to the tail of the (new) priority's list.
            self.dequeue_array(rq, &mut ctx.tasks, curr, ctx.ops);
            ctx.tasks[curr].data.prio = (prio + 1).min(MAX_PRIO - 1);
            self.enqueue_array(rq, &mut ctx.tasks, curr, from as usize, ctx.ops);
            return true;
        }
        if from as usize != 1 - rq.active {
            // To the expired array (RT tasks yield in the RT class).
            self.dequeue_array(rq, &mut ctx.tasks, curr, ctx.ops);
            let expired = 1 - rq.active;
            self.enqueue_array(rq, &mut ctx.tasks, curr, expired, ctx.ops);
        } else {
            rq.arrays[from as usize].requeue(&mut ctx.tasks, curr, prio, ctx.ops);
        }
        true
    }

    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<O1Task>,
        rq: &mut Rq<O1Rq>,
        cpu: CpuId,
        woken: TaskId,
        sync: bool,
    ) -> bool {
        if std::mem::take(&mut ctx.tasks[woken].data.child_first) {
            return true;
        }
        let Some(curr) = rq.curr_on(cpu) else {
            return false;
        };
        // TASK_PREEMPTS_CURR, except on a sync wakeup on the waker's own CPU.
        !sync && ctx.tasks[woken].data.prio < ctx.tasks[curr].data.prio
    }

    fn select_cpu(
        &self,
        tasks: &TaskView<'_, O1Task>,
        view: &CpuView,
        ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let p = &tasks[t];
        let n = view.ncpus();
        let first_allowed = || p.cpus_allowed.iter(n).next().unwrap_or(0);
        let sync = match kind {
            // sched_fork: the child starts on the forking CPU.
            WakeKind::Fork => {
                return if p.cpus_allowed.contains(waker_cpu) {
                    waker_cpu
                } else {
                    first_allowed()
                };
            }
            WakeKind::Wakeup { sync } => sync,
        };
        let _ = ops;
        // 2.6.0 try_to_wake_up: a sync wakeup fast-migrates the task to the waker's CPU (it is
        // about to sleep, so the pair shares a cache); any other wakeup stays on task_cpu.
        if sync && p.cpu != waker_cpu && p.cpus_allowed.contains(waker_cpu) {
            return waker_cpu;
        }
        if p.cpu < n && p.cpus_allowed.contains(p.cpu) {
            p.cpu
        } else {
            first_allowed()
        }
    }

    fn for_each_queued(
        &self,
        rq: &Rq<O1Rq>,
        tasks: &TaskView<'_, O1Task>,
        f: &mut dyn FnMut(TaskId),
    ) {
        // The audit's walk is not kernel work: its searches go to a scratch counter.
        let scratch = &mut OpCounter::default();
        for arr in rq.arrays.iter() {
            let mut idx = arr.find_first_bit(scratch);
            while idx < MAX_PRIO {
                for t in arr.queue(idx).iter(tasks) {
                    f(t);
                }
                idx = arr.find_next_bit(idx + 1, scratch);
            }
        }
    }

    fn balance_interval_ticks(&self, idle: bool, hz: u32) -> Option<u64> {
        // O1-25: IDLE_REBALANCE_TICK = HZ/1000 ?: 1, BUSY_REBALANCE_TICK = HZ/4 ?: 1.
        Some(if idle {
            (hz as u64 / 1000).max(1)
        } else {
            (hz as u64 / 4).max(1)
        })
    }

    fn find_busiest(
        &self,
        ctx: &mut Ctx<O1Task>,
        this: &mut Rq<O1Rq>,
        this_cpu: CpuId,
        view: &CpuView,
        kind: CpuIdle,
    ) -> Option<Busiest> {
        let idle = kind.is_idle();
        // find_busiest_queue (2.6.0): loads smoothed against the previous sample, the remote
        // ones downward and our own upward, so short spikes do not trigger migrations.
        let nr_running = if idle || this.nr_running > this.prev_cpu_load[this_cpu] {
            this.nr_running
        } else {
            this.prev_cpu_load[this_cpu]
        };
        let mut busiest = None;
        let mut max_load = 1;
        for i in 0..view.ncpus() {
            let src_nr = if i == this_cpu {
                this.nr_running
            } else {
                view.cpu(i).nr_running
            };
            // Every runqueue's nr_running, read without its lock: a line its own CPU
            // writes at every enqueue and dequeue.
            ctx.read_remote(Line::Rq(i));
            let load = if idle || src_nr < this.prev_cpu_load[i] {
                src_nr
            } else {
                this.prev_cpu_load[i]
            };
            this.prev_cpu_load[i] = src_nr;
            if load > max_load && i != this_cpu {
                busiest = Some(i);
                max_load = load;
            }
        }
        let busiest = busiest?;
        let imbalance = max_load.saturating_sub(nr_running);
        // It needs an at least ~25% imbalance to trigger balancing.
        if !idle && imbalance * 4 < max_load {
            return None;
        }
        Some(Busiest {
            cpu: busiest,
            imbalance,
        })
    }

    fn move_tasks(
        &self,
        ctx: &mut Ctx<O1Task>,
        this: &mut Rq<O1Rq>,
        this_cpu: CpuId,
        src: &mut Rq<O1Rq>,
        _src_cpu: CpuId,
        kind: CpuIdle,
        imbalance: usize,
        rt: &dyn PassiveRt<O1Rq, O1Task>,
    ) -> PullOutcome {
        let idle = kind.is_idle();
        // Re-check under both locks: nothing to do if the source is no longer busier.
        if src.nr_running <= this.nr_running + 1 {
            return PullOutcome::default();
        }
        let mut to_move = if idle { 1 } else { (imbalance / 2).max(1) };
        let tick_ns = ctx.tick_ns();
        let now = ctx.now;
        let mut out = PullOutcome::default();
        // Expired array first (cache-cold, not about to run), then active; best priority
        // first; each list from its tail. RT tasks sat at the top of 2.6.11's active array, so
        // they come between: the RT class walks its queue there with this balancer's test
        // (under passive RT balancing; under push/pull, as 2.6.25's load_balance_rt, it moves
        // nothing).
        let expired = 1 - src.active;
        for w in [expired, src.active] {
            if w != expired {
                let mut may_move = |ctx: &mut Ctx<O1Task>, src: &Rq<O1Rq>, t: TaskId| {
                    ctx.read_remote(Line::Task(t));
                    self.can_migrate(&ctx.tasks[t], src, this_cpu, idle, now, tick_ns)
                };
                let rt_out = rt.pull_queued(ctx, this, this_cpu, src, &mut to_move, &mut may_move);
                out.moved += rt_out.moved;
                out.resched |= rt_out.resched;
                if to_move == 0 {
                    return out;
                }
            }
            let mut idx = src.arrays[w].find_first_bit(ctx.ops);
            while idx < MAX_PRIO {
                let mut cur = src.arrays[w].queue(idx).back();
                while let Some(t) = cur {
                    cur = src.arrays[w].queue(idx).prev(&ctx.tasks, t);
                    ctx.read_remote(Line::Task(t));
                    if !self.can_migrate(&ctx.tasks[t], src, this_cpu, idle, now, tick_ns) {
                        continue;
                    }
                    out.resched |= self.pull_task(ctx, src, this, this_cpu, t);
                    out.moved += 1;
                    to_move -= 1;
                    if to_move == 0 {
                        return out;
                    }
                }
                idx = src.arrays[w].find_next_bit(idx + 1, ctx.ops);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;

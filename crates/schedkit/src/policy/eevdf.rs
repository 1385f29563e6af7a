//! `eevdf`: Earliest Eligible Virtual Deadline First, the fair class of Linux 6.6+
//! (designs.md §5.4; EEVDF-C, EEVDF-SRC: `kernel/sched/fair.c` of 6.6).
//!
//! Each task has a `vruntime` and a virtual deadline (`vruntime + slice/weight`). A task is
//! *eligible* when its lag is not negative, i.e. its vruntime is not past the load-weighted
//! average `V` of the runqueue's vruntimes; the scheduler runs the eligible task with the
//! earliest deadline. As 6.6 does it:
//! - the runqueue keeps `avg_vruntime = Σ (v_i - min_vruntime) * w_i` and `avg_load = Σ w_i`
//!   over the queued tasks (the running one added when `V` is computed), so eligibility needs
//!   no division: `avg >= (v - min_vruntime) * load`;
//! - the tree is sorted by deadline and augmented with each subtree's smallest vruntime;
//!   `pick_eevdf` walks it in O(log n): the left subtree if it holds an eligible task, else
//!   the node if eligible, else the right subtree; the running task wins if its deadline is
//!   earlier; RUN_TO_PARITY keeps it until it has used the slice it was picked with. (This
//!   is the tree of designs.md §5.4, from "sched/eevdf: Sort the rbtree by virtual deadline",
//!   merged after 6.6; 6.6 as released sorted by vruntime and kept each subtree's earliest
//!   deadline. Both walks return the same task: the eligible one with the earliest deadline.)
//! - `update_curr` charges `calc_delta_fair` (the modern `__calc_delta`), and when the
//!   running task reaches its deadline, `update_deadline` gives it a new slice
//!   (`base_slice`, 0.75 ms × (1 + ilog2(ncpus)) in 6.6) and reschedules if others wait;
//! - a dequeued task keeps its lag (`vlag = V - v`, clamped to two slices); `place_entity`
//!   puts it back at `V - vlag * (W + w) / W` (PLACE_LAG, compensating for its own effect on
//!   `V`), a new task at `V` with half a slice to its deadline (PLACE_DEADLINE_INITIAL);
//! - wakeup preemption: the woken task preempts when the pick would choose it; batch wakees
//!   never do;
//! - yield: the deadline moves one slice later.
//!
//! `eevdf:era=6.18` (plain `eevdf` is 6.6 until the validation suite says otherwise; see
//! the README) is the class as Linux 6.18 has it (`kernel/sched/fair.c`, `features.h` of
//! v6.18), which differs in these rules, each behind its `sched_features` default:
//! - the base slice is 0.70 ms × (1 + ilog2(min(ncpus, 8))) ("sched: Reduce the default
//!   slice to avoid tasks getting an extra tick", 2ae891b82695, v6.15);
//! - DELAY_DEQUEUE + DELAY_ZERO ("sched/fair: Implement delayed dequeue", 6.12): a task going
//!   to sleep while not eligible stays queued (`sched_delayed`), competing until it is picked
//!   (then it is dequeued and the pick repeated: `pick_next_entity`) or woken (then it is
//!   requeued where it is, with no CPU selection: `ttwu_runnable` → `requeue_delayed_entity`,
//!   positive lag clipped to 0);
//! - RUN_TO_PARITY as `set_protect_slice`: the running task is protected up to `vprot`, its
//!   deadline or the end of the shortest slice queued (`cfs_rq_min_slice`), set only when it is
//!   picked fresh (a re-pick of the same task keeps it), and `update_curr` reschedules once it
//!   is past (6.17, "sched/fair: Limit run to parity to the min slice of enqueued entities");
//! - PREEMPT_SHORT and per-task slices (`sched_attr.sched_runtime`, clamped to 0.1..100 ms,
//!   `custom_slice`): a woken task with a shorter slice ignores the running task's protection
//!   (`__pick_eevdf(cfs_rq, !do_preempt_short)`) and cancels it when it wins, else shortens it
//!   (`update_protect_slice`);
//! - PLACE_REL_DEADLINE: a task dequeued without sleeping (migration, attribute change)
//!   keeps its deadline relative to its vruntime;
//! - yield: an eligible task's vruntime jumps to its deadline, then the deadline moves a slice;
//! - `check_preempt_wakeup_fair` returns early when the running task already has
//!   `need_resched`.
//!
//! Balancing: the scheduling domains of `sched_domains`, comparing each runqueue's PELT
//! load average (`pelt`: 32 ms half-life) as the modern balancer does; wakeups go through
//! `wake_affine` and `select_idle_sibling` over the last-level cache.
//!
//! Simplified, and said so: PELT is kept per runqueue, not per entity (a moved task's history
//! stays behind and decays; an idle CPU's average decays only when its runqueue next changes);
//! the balancer compares loads, not the utilisation and `group_type` classification of
//! today's `update_sd_lb_stats`; no `sched_idle_cpu` preference for CPUs running only
//! SCHED_IDLE tasks, no per-task slice (`sched_setattr`), no DELAY_DEQUEUE (6.12).
//! SCHED_IDLE tasks weigh 3 and follow `check_preempt_wakeup_fair`'s two rules.

use super::fair_lb::{self, Migration};
use super::pelt::Pelt;
use super::sched_domains::{self, IdleSiblings, PullBudget, SchedDomains};
use super::weight::{calc_delta, LoadWeight, IDLEPRIO_LATER, NICE_0_LOAD};
use crate::class::*;
use crate::ds::list::{Linked, TaskList};
use crate::ds::rbtree::{before, RbEntry, RbNode, RbTree};
use crate::ds::work::Work;
use crate::machine::Topology;
use crate::task::{CpuId, SchedPolicy, Task, TaskId, TaskView};
use std::collections::BTreeMap;

/// Per-task state (`struct sched_entity` of 6.6).
#[derive(Clone, Debug, Default)]
// `repr(C)`: the tree node and the keys the tree walk compares share the task's first line of
// policy data (see `Task`), so a walk costs one line per level.
#[repr(C)]
pub struct EevdfTask {
    node: RbNode,
    pub vruntime: u64,
    pub deadline: u64,
    /// `V - vruntime` saved at dequeue (clamped), restored by `place_entity`.
    pub vlag: i64,
    pub slice: u64,
    pub exec_start: u64,
    pub sum_exec: u64,
    pub prev_sum_exec: u64,
    pub load: LoadWeight,
    pub on_rq: bool,
    /// The deadline it was picked with (RUN_TO_PARITY: keep it until this changes).
    picked_deadline: Option<u64>,
    /// 6.18: still queued while asleep (DELAY_DEQUEUE), until picked or woken.
    pub sched_delayed: bool,
    /// 6.18: the vruntime up to which the running task is protected from preemption.
    pub vprot: u64,
    /// 6.18: the slice was set with `sched_attr.sched_runtime`.
    pub custom_slice: bool,
    /// 6.18 PLACE_REL_DEADLINE: `deadline` holds deadline − vruntime until placed again.
    pub rel_deadline: bool,
    /// 6.18.y: queued by `wake_up_new_task` and not yet run (the WF_FORK of its preemption
    /// check, which a forked task passes only through PREEMPT_SHORT).
    pub wf_fork: bool,
    /// `wakee_flips`, `last_wakee`, `wakee_flip_decay_ts` (what `wake_wide` reads). Written
    /// by the task itself when it wakes another (as the kernel writes `current`'s), read by
    /// wakeups of it: relaxed atomics, so a select path that holds no lock may touch them.
    pub wakee: WakeeFlips,
    /// 6.18: the task's place on its runqueue's `cfs_tasks` (most recently queued first),
    /// the order the balancer detaches in.
    pub group_node: crate::task::Link,
}

impl Linked for EevdfTask {
    fn link(&self) -> &crate::task::Link {
        &self.group_node
    }
    fn link_mut(&mut self) -> &mut crate::task::Link {
        &mut self.group_node
    }
}

/// `record_wakee`'s state of a task.
#[derive(Debug, Default)]
pub struct WakeeFlips {
    flips: std::sync::atomic::AtomicU32,
    /// The last wakee's task index + 1 (0: none).
    last_wakee: std::sync::atomic::AtomicU32,
    decay_ts: std::sync::atomic::AtomicU64,
}

impl Clone for WakeeFlips {
    fn clone(&self) -> Self {
        use std::sync::atomic::Ordering::Relaxed;
        WakeeFlips {
            flips: self.flips.load(Relaxed).into(),
            last_wakee: self.last_wakee.load(Relaxed).into(),
            decay_ts: self.decay_ts.load(Relaxed).into(),
        }
    }
}

impl WakeeFlips {
    /// `record_wakee` by the waker (`current`) of `wakee` at `now`: the flips halve once a
    /// second (`wakee_flip_decay_ts + HZ`), and count each change of wakee.
    pub fn record(&self, wakee: TaskId, now: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        if now > self.decay_ts.load(Relaxed).saturating_add(1_000_000_000) {
            self.flips.store(self.flips.load(Relaxed) >> 1, Relaxed);
            self.decay_ts.store(now, Relaxed);
        }
        let id = wakee.0.wrapping_add(1);
        if self.last_wakee.load(Relaxed) != id {
            self.last_wakee.store(id, Relaxed);
            self.flips
                .store(self.flips.load(Relaxed).saturating_add(1), Relaxed);
        }
    }

    pub fn flips(&self) -> u32 {
        self.flips.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// `wake_wide`: the waker and the wakee switch partners often enough (the fewer flips at
/// least `llc_size`, the more at least `llc_size` times the fewer) that pulling the wakee to
/// the waker would pile a many-to-many pattern onto one cache: no affine wakeup.
pub fn wake_wide(waker_flips: u32, wakee_flips: u32, llc_size: u32) -> bool {
    let (master, slave) = if waker_flips < wakee_flips {
        (wakee_flips, waker_flips)
    } else {
        (waker_flips, wakee_flips)
    };
    !(slave < llc_size || master < slave.saturating_mul(llc_size))
}

/// The tree: by deadline, each subtree's smallest vruntime kept.
#[derive(Debug)]
pub struct ByDeadline;
impl RbEntry<EevdfTask> for ByDeadline {
    fn node(t: &Task<EevdfTask>) -> &RbNode {
        &t.data.node
    }
    fn node_mut(t: &mut Task<EevdfTask>) -> &mut RbNode {
        &mut t.data.node
    }
    fn key(t: &Task<EevdfTask>) -> u64 {
        t.data.deadline
    }
    fn aug(t: &Task<EevdfTask>) -> u64 {
        t.data.vruntime
    }
}

/// The fair part of a runqueue under EEVDF.
#[derive(Debug, Default)]
pub struct EevdfRq {
    pub tree: RbTree<ByDeadline>,
    pub min_vruntime: u64,
    /// `Σ (v_i - min_vruntime) * w_i` over the queued tasks (not the running one).
    pub avg_vruntime: i128,
    /// `Σ w_i` over the queued tasks.
    pub avg_load: u64,
    pub load: LoadWeight,
    /// Entities queued: the tree and the running one (`cfs_rq->nr_queued`; 6.6 called it
    /// `nr_running`), sleeping-but-delayed ones included.
    pub nr_queued: usize,
    /// Of those, delayed (asleep; not counted in the core's `nr_running`).
    pub nr_delayed: usize,
    /// Slices of the entities in the tree, counted (`cfs_rq_min_slice`'s augmented minimum,
    /// kept as a multiset), where `track_slices` (6.18: only its rules read them, and 6.6's
    /// enqueue and pick pay nothing for them).
    pub slices: BTreeMap<u64, u32>,
    pub track_slices: bool,
    /// 6.18: `update_curr` asked to reschedule the running task (TIF_NEED_RESCHED), from a
    /// path whose caller does not hear it (an enqueue); the preemption check reports it.
    pub need_resched: bool,
    pub curr: Option<TaskId>,
    /// PELT average of the runqueue's runnable weight: the load it publishes for balancing.
    pub pelt: Pelt,
    /// This CPU's scheduling domains and their balancing state (6.6).
    pub domains: SchedDomains,
    /// 6.18: the domains of today's balancer (`fair_lb`) and `rq->cfs_tasks`.
    pub lb: fair_lb::Domains,
    pub cfs_tasks: TaskList,
}

/// Which kernel's EEVDF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EevdfEra {
    /// Linux 6.6, the design as first merged.
    V6_6,
    /// Linux 6.18.
    V6_18,
}

/// The `sched_features` of `features.h` that the 6.18 rules depend on (defaults of v6.18).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    pub place_rel_deadline: bool,
    pub preempt_short: bool,
    pub delay_dequeue: bool,
    pub delay_zero: bool,
    pub wakeup_preemption: bool,
}

impl Features {
    pub const V6_18: Features = Features {
        place_rel_deadline: true,
        preempt_short: true,
        delay_dequeue: true,
        delay_zero: true,
        wakeup_preemption: true,
    };
}

/// The EEVDF class.
#[derive(Clone, Debug)]
pub struct Eevdf {
    /// `sysctl_sched_base_slice`.
    pub base_slice: u64,
    /// `normalized_sysctl_sched_base_slice` (before the CPU-count factor).
    pub normalized_base_slice: u64,
    pub run_to_parity: bool,
    pub migration_cost: u64,
    pub era: EevdfEra,
    pub features: Features,
}

type T = Task<EevdfTask>;

impl Eevdf {
    /// `get_update_sysctl_factor` (SCHED_TUNABLESCALING_LOG): 1 + ilog2(min(ncpus, 8)).
    pub fn slice_factor(ncpus: usize) -> u64 {
        let cpus = ncpus.clamp(1, 8);
        1 + (usize::BITS - 1 - cpus.leading_zeros()) as u64
    }

    /// 6.6's defaults for `ncpus` CPUs (`sched_update_scaling`'s log factor).
    pub fn v6_6(ncpus: usize) -> Eevdf {
        Eevdf {
            base_slice: 750_000 * Self::slice_factor(ncpus),
            normalized_base_slice: 750_000,
            run_to_parity: true,
            migration_cost: 500_000,
            era: EevdfEra::V6_6,
            features: Features {
                place_rel_deadline: false,
                preempt_short: false,
                delay_dequeue: false,
                delay_zero: false,
                wakeup_preemption: true,
            },
        }
    }

    /// 6.18's defaults for `ncpus` CPUs: `sysctl_sched_base_slice` 0.70 ms (fair.c of v6.18,
    /// line 79), the features of its `features.h`.
    pub fn v6_18(ncpus: usize) -> Eevdf {
        Eevdf {
            base_slice: 700_000 * Self::slice_factor(ncpus),
            normalized_base_slice: 700_000,
            run_to_parity: true,
            migration_cost: 500_000,
            era: EevdfEra::V6_18,
            features: Features::V6_18,
        }
    }

    fn is_618(&self) -> bool {
        self.era == EevdfEra::V6_18
    }

    fn key(rq: &EevdfRq, v: u64) -> i128 {
        v.wrapping_sub(rq.min_vruntime) as i64 as i128
    }

    /// `calc_delta_fair`.
    fn delta_fair(delta: u64, se: &mut EevdfTask) -> u64 {
        if se.load.weight != NICE_0_LOAD {
            calc_delta(delta, NICE_0_LOAD, &mut se.load)
        } else {
            delta
        }
    }

    /// `avg_vruntime()`: V, with the running task counted, rounded towards negative.
    pub fn avg_vruntime(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> u64 {
        let (avg, load) = Self::sums(tasks, rq);
        let mut avg = avg;
        if load > 0 {
            if avg < 0 {
                avg -= load as i128 - 1;
            }
            avg /= load as i128;
        }
        rq.min_vruntime.wrapping_add(avg as i64 as u64)
    }

    fn sums(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> (i128, u64) {
        let (mut avg, mut load) = (rq.avg_vruntime, rq.avg_load);
        if let Some(c) = rq.curr {
            let se = &tasks[c].data;
            if se.on_rq {
                avg += Self::key(rq, se.vruntime) * se.load.weight as i128;
                load += se.load.weight;
            }
        }
        (avg, load)
    }

    /// `vruntime_eligible`: lag >= 0, i.e. `v <= V`, without dividing.
    pub fn vruntime_eligible(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq, v: u64) -> bool {
        let (avg, load) = Self::sums(tasks, rq);
        avg >= Self::key(rq, v) * load as i128
    }

    /// `avg_vruntime_add`: `se` joins the queued sums.
    fn avg_add(rq: &mut EevdfRq, se: &EevdfTask) {
        rq.avg_vruntime += Self::key(rq, se.vruntime) * se.load.weight as i128;
        rq.avg_load += se.load.weight;
    }

    /// `avg_vruntime_sub`: `se` leaves the queued sums.
    fn avg_sub(rq: &mut EevdfRq, se: &EevdfTask) {
        rq.avg_vruntime -= Self::key(rq, se.vruntime) * se.load.weight as i128;
        rq.avg_load -= se.load.weight;
    }

    /// `update_min_vruntime`, with `avg_vruntime_update` as the base moves.
    fn update_min_vruntime(tasks: &TaskView<'_, EevdfTask>, rq: &mut EevdfRq) {
        let mut v = rq.min_vruntime;
        let curr = rq.curr.filter(|&c| tasks[c].data.on_rq);
        if let Some(c) = curr {
            v = tasks[c].data.vruntime;
        }
        if !rq.tree.is_empty() {
            let m = rq.tree.min_aug(tasks);
            v = if curr.is_none() || before(m, v) { m } else { v };
        }
        if before(rq.min_vruntime, v) {
            let delta = v.wrapping_sub(rq.min_vruntime) as i64 as i128;
            rq.avg_vruntime -= rq.avg_load as i128 * delta;
            rq.min_vruntime = v;
        }
    }

    /// `update_curr` (+ `update_deadline`): returns whether to reschedule: the slice ran out
    /// with others queued, or (6.18) the protected slice is over (`!protect_slice(curr)`).
    fn update_curr(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq) -> bool {
        let Some(c) = rq.curr else { return false };
        let now = ctx.now;
        let mut resched = false;
        let mut ran = false;
        {
            let se = &mut ctx.tasks[c].data;
            let delta = now.saturating_sub(se.exec_start);
            if delta > 0 {
                ran = true;
                se.sum_exec += delta;
                se.vruntime = se.vruntime.wrapping_add(Self::delta_fair(delta, se));
                se.exec_start = now;
            }
            // update_deadline: past its deadline, a new slice.
            if !before(se.vruntime, se.deadline) {
                if !se.custom_slice {
                    se.slice = self.base_slice;
                }
                let vs = Self::delta_fair(se.slice, se);
                se.deadline = se.vruntime.wrapping_add(vs);
                resched = rq.nr_queued > 1;
            }
        }
        Self::update_min_vruntime(&ctx.tasks, rq);
        if self.is_618() {
            // 6.18 returns before any of this when delta_exec <= 0, and reschedules when
            // the deadline passed or the protected slice is over, if others are queued.
            if !ran {
                return false;
            }
            let se = &ctx.tasks[c].data;
            let ask = rq.nr_queued > 1 && (resched || !Self::protect_slice(se));
            // `resched_curr_lazy` from whichever path charged the runner (the tick, a
            // wakee's enqueue, the preemption check): kept until the CPU schedules.
            rq.need_resched |= ask;
            return ask;
        }
        resched
    }

    /// `protect_slice` (6.18): the running task is short of `vprot`.
    fn protect_slice(se: &EevdfTask) -> bool {
        (se.vprot.wrapping_sub(se.vruntime) as i64) > 0
    }

    /// `cfs_rq_min_slice`: the shortest slice among the running task and the queued ones.
    fn min_slice(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> u64 {
        let mut m = u64::MAX;
        if let Some(c) = rq.curr {
            if tasks[c].data.on_rq {
                m = tasks[c].data.slice;
            }
        }
        if let Some((&s, _)) = rq.slices.first_key_value() {
            m = m.min(s);
        }
        m
    }

    /// `set_protect_slice` (6.18): protected up to the deadline, or the end of the shortest
    /// slice queued (RUN_TO_PARITY), or of the unscaled base slice (without it).
    fn set_protect_slice(&self, tasks: &mut TaskView<'_, EevdfTask>, rq: &EevdfRq, t: TaskId) {
        let mut slice = self.normalized_base_slice;
        if self.run_to_parity {
            slice = Self::min_slice(tasks, rq);
        }
        let se = &mut tasks[t].data;
        slice = slice.min(se.slice);
        let mut vprot = se.deadline;
        if slice != se.slice {
            let end = se.vruntime.wrapping_add(Self::delta_fair(slice, se));
            if before(end, vprot) {
                vprot = end;
            }
        }
        se.vprot = vprot;
    }

    /// `update_protect_slice` (6.18): no further than the shortest slice queued from now.
    fn update_protect_slice(tasks: &mut TaskView<'_, EevdfTask>, rq: &EevdfRq, t: TaskId) {
        let slice = Self::min_slice(tasks, rq);
        let se = &mut tasks[t].data;
        let end = se.vruntime.wrapping_add(Self::delta_fair(slice, se));
        if before(end, se.vprot) {
            se.vprot = end;
        }
    }

    /// `cancel_protect_slice` (6.18).
    fn cancel_protect_slice(se: &mut EevdfTask) {
        if Self::protect_slice(se) {
            se.vprot = se.vruntime;
        }
    }

    /// `pick_eevdf`.
    pub fn pick_eevdf(&self, tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> Option<TaskId> {
        self.pick_eevdf_protect(tasks, rq, true)
    }

    /// `__pick_eevdf(cfs_rq, protect)`: with `protect`, the running task keeps the CPU while
    /// RUN_TO_PARITY protects it (6.6: until it has a new deadline; 6.18: up to `vprot`).
    fn pick_eevdf_protect(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        rq: &EevdfRq,
        protect: bool,
    ) -> Option<TaskId> {
        let curr = rq.curr.filter(|&c| tasks[c].data.on_rq);
        if rq.nr_queued == 1 {
            return curr.or(rq.tree.first());
        }
        let curr = curr.filter(|&c| Self::vruntime_eligible(tasks, rq, tasks[c].data.vruntime));
        if let Some(c) = curr {
            let se = &tasks[c].data;
            let protected = if self.is_618() {
                protect && Self::protect_slice(se)
            } else {
                self.run_to_parity && se.picked_deadline == Some(se.deadline)
            };
            if protected {
                return Some(c);
            }
        }
        // The leftmost (earliest deadline) if eligible; else the heap walk.
        let mut best = rq
            .tree
            .first()
            .filter(|&f| Self::vruntime_eligible(tasks, rq, tasks[f].data.vruntime));
        if best.is_none() {
            let mut node = rq.tree.root();
            while let Some(n) = node {
                if let Some(l) = rq.tree.left(tasks, n) {
                    if Self::vruntime_eligible(tasks, rq, rq.tree.subtree_min(tasks, l)) {
                        node = Some(l);
                        continue;
                    }
                }
                if Self::vruntime_eligible(tasks, rq, tasks[n].data.vruntime) {
                    best = Some(n);
                    break;
                }
                node = rq.tree.right(tasks, n);
            }
        }
        match (best, curr) {
            // V lies within the queued vruntimes, so one is always eligible; should rounding
            // ever say otherwise, 6.6 falls back to the leftmost rather than lose the queue.
            (None, None) => rq.tree.first(),
            (None, c) => c,
            (Some(b), Some(c)) if before(tasks[c].data.deadline, tasks[b].data.deadline) => Some(c),
            (b, _) => b,
        }
    }

    /// `place_entity` (PLACE_LAG, PLACE_DEADLINE_INITIAL; 6.18: PLACE_REL_DEADLINE and the
    /// custom slice).
    fn place_entity(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        rq: &EevdfRq,
        se: &mut EevdfTask,
        initial: bool,
    ) {
        if se.slice == 0 || (self.is_618() && !se.custom_slice) {
            se.slice = self.base_slice;
        }
        let mut vslice = Self::delta_fair(se.slice, se);
        let v = Self::avg_vruntime(tasks, rq);
        let mut lag: i128 = 0;
        if rq.nr_queued > 0 {
            let (_, mut load) = Self::sums(tasks, rq);
            lag = se.vlag as i128 * (load + se.load.weight) as i128;
            if load == 0 {
                load = 1;
            }
            lag /= load as i128;
        }
        se.vruntime = v.wrapping_sub(lag as i64 as u64);
        if se.rel_deadline {
            se.deadline = se.deadline.wrapping_add(se.vruntime);
            se.rel_deadline = false;
            return;
        }
        if initial {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice);
    }

    /// `update_entity_lag`: `vlag = V - v`, within `max(2 * slice, tick)` of virtual time
    /// (6.6); 6.18.y: within the longest slice queued plus a tick ("sched/fair: Fix lag
    /// clamp", v6.19, in 6.18.y stable).
    fn update_entity_lag(&self, ctx: &mut Ctx<EevdfTask>, rq: &EevdfRq, t: TaskId) {
        let tick_ns = 1_000_000_000 / ctx.hz.max(1) as u64;
        let v = Self::avg_vruntime(&ctx.tasks, rq);
        let max_slice = self.is_618().then(|| Self::max_slice(&ctx.tasks, rq));
        let se = &mut ctx.tasks[t].data;
        let lag = v.wrapping_sub(se.vruntime) as i64;
        let span = match max_slice {
            Some(m) => m.saturating_add(tick_ns),
            None => (2 * se.slice).max(tick_ns),
        };
        let limit = Self::delta_fair(span, se) as i64;
        se.vlag = lag.clamp(-limit, limit);
    }

    /// `cfs_rq_max_slice`: the longest slice among the running task and the queued ones.
    fn max_slice(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> u64 {
        let mut m = 0;
        if let Some(c) = rq.curr {
            if tasks[c].data.on_rq {
                m = tasks[c].data.slice;
            }
        }
        if let Some((&s, _)) = rq.slices.last_key_value() {
            m = m.max(s);
        }
        m
    }

    /// `__enqueue_entity`: into the tree and the sums behind V (and the slice multiset).
    fn tree_insert(ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq, t: TaskId) {
        Self::avg_add(rq, &ctx.tasks[t].data);
        if rq.track_slices {
            *rq.slices.entry(ctx.tasks[t].data.slice).or_insert(0) += 1;
        }
        rq.tree.insert(&mut ctx.tasks, t, ctx.ops);
    }

    /// `__dequeue_entity`.
    fn tree_remove(ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq, t: TaskId) {
        rq.tree.remove(&mut ctx.tasks, t, ctx.ops);
        Self::avg_sub(rq, &ctx.tasks[t].data);
        if rq.track_slices {
            // A slice changes only while its task is out of the tree, so it is counted here.
            let s = ctx.tasks[t].data.slice;
            let n = rq.slices.get_mut(&s);
            crate::check!(n.is_some(), "slice {s} of {t} not counted");
            if let Some(n) = n {
                *n -= 1;
                if *n == 0 {
                    rq.slices.remove(&s);
                }
            }
        }
    }

    fn enqueue_entity(ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, t: TaskId) {
        if !rq.class.lb.levels.is_empty() {
            // account_entity_enqueue: list_add(&se->group_node, &rq->cfs_tasks).
            rq.class.cfs_tasks.push_front(&mut ctx.tasks, t, ctx.ops);
        }
        let w = ctx.tasks[t].data.load.weight;
        // The runqueue's PELT signal up to now, at the weight it had until now.
        let weight_so_far = rq.class.load.weight;
        rq.class.pelt.update(ctx.now, weight_so_far);
        if rq.class.curr != Some(t) {
            Self::tree_insert(ctx, &mut rq.class, t);
        }
        ctx.tasks[t].data.on_rq = true;
        rq.class.load.add(w);
        rq.class.nr_queued += 1;
        rq.nr_running += 1;
    }

    /// The entity leaves the runqueue for good (`account_entity_dequeue`); a delayed one was
    /// already out of the core's count.
    fn dequeue_entity(ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, t: TaskId) {
        if !rq.class.lb.levels.is_empty() {
            rq.class.cfs_tasks.remove(&mut ctx.tasks, t, ctx.ops);
        }
        let w = ctx.tasks[t].data.load.weight;
        let weight_so_far = rq.class.load.weight;
        rq.class.pelt.update(ctx.now, weight_so_far);
        if rq.class.curr != Some(t) {
            Self::tree_remove(ctx, &mut rq.class, t);
        }
        let se = &mut ctx.tasks[t].data;
        se.on_rq = false;
        rq.class.load.sub(w);
        rq.class.nr_queued -= 1;
        if se.sched_delayed {
            se.sched_delayed = false;
            rq.class.nr_delayed -= 1;
        } else {
            rq.nr_running -= 1;
        }
    }

    /// The end of a delayed dequeue (`dequeue_entity` with DEQUEUE_DELAYED, then
    /// `finish_delayed_dequeue_entity`): the lag is taken, positive lag clipped to 0.
    fn finish_delayed_dequeue(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, t: TaskId) {
        self.update_curr(ctx, &mut rq.class);
        self.update_entity_lag(ctx, &rq.class, t);
        Eevdf::dequeue_entity(ctx, rq, t);
        Self::update_min_vruntime(&ctx.tasks, &mut rq.class);
        let se = &mut ctx.tasks[t].data;
        if self.features.delay_zero && se.vlag > 0 {
            se.vlag = 0;
        }
    }

    /// 6.18's `detach_tasks` + `can_migrate_task` + `attach_tasks`, moving what the pending
    /// `find_busiest` decided (`fair_lb`'s module doc has the rules).
    fn detach_tasks(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        this: &mut Rq<EevdfRq>,
        this_cpu: CpuId,
        src: &mut Rq<EevdfRq>,
        kind: CpuIdle,
    ) -> PullOutcome {
        let mut out = PullOutcome::default();
        let Some((m, failed, nice_tries, smt)) = this.class.lb.pending() else {
            return out;
        };
        let (mut left, by_load) = match m {
            Migration::Tasks(n) => (n, false),
            Migration::Load(w) => (w, true),
        };
        let now = ctx.now;
        let loop_max = fair_lb::NR_MIGRATE.min(src.class.nr_queued);
        let mut looked = 0;
        while left > 0 && looked < loop_max {
            if kind.is_idle() && src.nr_running <= 1 {
                break;
            }
            looked += 1;
            let Some(p) = src.class.cfs_tasks.back() else {
                break;
            };
            ctx.ops.remote_touches += 1;
            let task = &ctx.tasks[p];
            let se = &task.data;
            let ineligible = failed == 0
                && this.class.nr_queued > 0
                && !Self::vruntime_eligible(&ctx.tasks, &src.class, se.vruntime);
            // task_hot: never a SCHED_IDLE task, never between SMT siblings (they share the
            // cache); tolerated once balancing failed more than cache_nice_tries times.
            let hot = task.policy != SchedPolicy::Idle
                && !smt
                && self.task_hot(task, now)
                && failed <= nice_tries;
            let weight = se.load.weight.max(1);
            // A delayed task is asleep as far as the hosts know, and they move runnable
            // tasks only: it is never moved (the kernel moves one when migrating load).
            let ok = !se.sched_delayed
                && !ineligible
                && task.cpus_allowed.contains(this_cpu)
                && src.class.curr != Some(p)
                && !hot
                && (!by_load || (weight >> failed.min(63)) <= left);
            if !ok {
                // list_move(&p->se.group_node, tasks): to the head, look at the next.
                src.class.cfs_tasks.remove(&mut ctx.tasks, p, ctx.ops);
                src.class.cfs_tasks.push_front(&mut ctx.tasks, p, ctx.ops);
                continue;
            }
            left = if by_load {
                left.saturating_sub(weight)
            } else {
                left - 1
            };
            // Detach with its lag (deadline kept relative), attach placed by it.
            self.update_curr(ctx, &mut src.class);
            self.update_entity_lag(ctx, &src.class, p);
            if self.features.place_rel_deadline {
                let se = &mut ctx.tasks[p].data;
                se.deadline = se.deadline.wrapping_sub(se.vruntime);
                se.rel_deadline = true;
            }
            Eevdf::dequeue_entity(ctx, src, p);
            Self::update_min_vruntime(&ctx.tasks, &mut src.class);
            ctx.tasks[p].cpu = this_cpu;
            self.update_curr(ctx, &mut this.class);
            let mut se = std::mem::take(&mut ctx.tasks[p].data);
            self.place_entity(&ctx.tasks, &this.class, &mut se, false);
            ctx.tasks[p].data = se;
            Eevdf::enqueue_entity(ctx, this, p);
            // ENQUEUE_MIGRATED: "se->exec_start = 0", so a task just moved is never hot.
            ctx.tasks[p].data.exec_start = 0;
            out.moved += 1;
            // attach_task: wakeup_preempt(rq, p, 0) decides whether this CPU's runner yields
            // (a new-idle pass picks next anyway).
            if kind != CpuIdle::NewlyIdle
                && self.check_preempt_wakeup(ctx, this, this_cpu, p, false)
            {
                out.resched = true;
            }
            // CONFIG_PREEMPTION: a new-idle balance takes one task and runs it.
            if kind == CpuIdle::NewlyIdle {
                break;
            }
        }
        this.class.lb.balanced(out.moved, kind);
        out
    }

    fn task_hot(&self, p: &T, now: u64) -> bool {
        now.saturating_sub(p.data.exec_start) < self.migration_cost
    }
}

/// A dequeued entity takes the weight of its task's nice level and policy: as
/// `reweight_entity` does for an entity on no runqueue, its lag `w * vlag` is kept by scaling
/// `vlag` by old/new weight (div_s64 truncates towards zero), and a relative deadline with it.
fn reweight_dequeued(task: &mut crate::task::Task<EevdfTask>) {
    let (nice, policy) = (task.nice, task.policy);
    let se = &mut task.data;
    let (old, new) = (
        se.load.weight,
        LoadWeight::of_task(nice, policy, IDLEPRIO_LATER),
    );
    if old != new.weight {
        se.vlag = (se.vlag as i128 * old as i128 / new.weight as i128) as i64;
        if se.rel_deadline {
            let rel = se.deadline as i64 as i128;
            se.deadline = (rel * old as i128 / new.weight as i128) as i64 as u64;
        }
    }
    se.load = new;
}

impl SchedClass for Eevdf {
    type Rq = EevdfRq;
    type TaskData = EevdfTask;

    /// `yield_task_fair` pushes the deadline one slice later: another task with an earlier
    /// deadline may then win, but an only eligible task keeps the CPU.
    const YIELD_GIVES_WAY: bool = false;

    /// SCHED_IDLE: weight 3, and in `check_preempt_wakeup_fair` a non-idle wakee always
    /// preempts an idle runner while an idle (or batch) wakee never preempts.
    const HAS_SCHED_IDLE: bool = true;

    fn name(&self) -> &'static str {
        match self.era {
            EevdfEra::V6_6 => "eevdf",
            EevdfEra::V6_18 => "eevdf:era=6.18",
        }
    }

    fn lock_layout(&self) -> LockLayout {
        LockLayout::PerCpu
    }

    fn delays_dequeue(&self) -> bool {
        self.is_618() && self.features.delay_dequeue
    }

    /// `ttwu_runnable` → `enqueue_task(ENQUEUE_DELAYED)` → `requeue_delayed_entity`: a task
    /// still queued as delayed is requeued where it is.
    fn requeue_delayed(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        t: TaskId,
    ) -> bool {
        if !ctx.tasks[t].data.sched_delayed {
            return false;
        }
        let is_curr = rq.class.curr == Some(t);
        if self.features.delay_zero {
            // No update_curr first: ttwu_runnable → enqueue_task_fair(ENQUEUE_DELAYED) →
            // requeue_delayed_entity (fair.c of v6.18 L6884, of 6.18.35 L6943) reads V with
            // the running task's vruntime as last charged; the preemption check charges it.
            self.update_entity_lag(ctx, &rq.class, t);
            if ctx.tasks[t].data.vlag > 0 {
                rq.class.nr_queued -= 1;
                if !is_curr {
                    Self::tree_remove(ctx, &mut rq.class, t);
                }
                let mut se = std::mem::take(&mut ctx.tasks[t].data);
                se.vlag = 0;
                self.place_entity(&ctx.tasks, &rq.class, &mut se, false);
                ctx.tasks[t].data = se;
                if !is_curr {
                    Self::tree_insert(ctx, &mut rq.class, t);
                }
                rq.class.nr_queued += 1;
            }
        }
        let weight = rq.class.load.weight;
        rq.class.pelt.update(ctx.now, weight);
        ctx.tasks[t].data.sched_delayed = false;
        rq.class.nr_delayed -= 1;
        rq.nr_running += 1;
        true
    }

    fn new_rq(&self, domain: usize, topology: &Topology) -> EevdfRq {
        // Per-CPU layout: the lock domain is the CPU.
        if self.is_618() {
            return EevdfRq {
                lb: fair_lb::Domains::build(domain, topology, self.migration_cost),
                track_slices: true,
                ..EevdfRq::default()
            };
        }
        EevdfRq {
            domains: SchedDomains::build(domain, topology),
            ..EevdfRq::default()
        }
    }

    fn task_fork(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        _rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        _parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        let c = &mut ctx.tasks[child];
        let (nice, policy, custom) = (c.nice, c.policy, c.slice_ns);
        c.data = EevdfTask {
            load: LoadWeight::of_task(nice, policy, IDLEPRIO_LATER),
            slice: self.base_slice,
            ..EevdfTask::default()
        };
        if self.is_618() {
            // __setparam_fair: sched_attr.sched_runtime, clamped to 0.1..100 ms.
            if let Some(ns) = custom {
                c.data.custom_slice = true;
                c.data.slice = ns.get().clamp(100_000, 100_000_000);
            }
        }
        false
    }

    fn task_exit(
        &self,
        _ctx: &mut Ctx<EevdfTask>,
        _rq: &mut Rq<EevdfRq>,
        _child: TaskId,
        _parent: Option<TaskId>,
    ) {
    }

    fn attr_changed_asleep(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        t: TaskId,
    ) {
        if ctx.tasks[t].data.sched_delayed {
            // Still queued, delayed: the dequeue is finished first, as 6.12+
            // `__sched_setscheduler` does when a delayed task changes class. (For a nice
            // change the kernel reweights the delayed entity where it is; it would leave the
            // tree at its next pick anyway, being ineligible: a simplification.)
            self.finish_delayed_dequeue(ctx, rq, t);
        }
        reweight_dequeued(&mut ctx.tasks[t]);
    }

    fn enqueue(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    ) {
        if kind == EnqueueKind::Restore {
            // A nice change (dequeue SAVE, set_load_weight, enqueue RESTORE).
            reweight_dequeued(&mut ctx.tasks[t]);
        }
        if matches!(kind, EnqueueKind::Wakeup { .. }) && self.is_618() {
            // ttwu_do_activate: the idle time since the last new-idle entry ends here.
            rq.class.lb.newidle.woken(ctx.now);
        }
        let is_curr = rq.class.curr == Some(t);
        let mut se = std::mem::take(&mut ctx.tasks[t].data);
        let initial = kind == EnqueueKind::New;
        se.wf_fork = initial && self.is_618();
        if is_curr {
            self.place_entity(&ctx.tasks, &rq.class, &mut se, initial);
        }
        ctx.tasks[t].data = se;
        self.update_curr(ctx, &mut rq.class);
        if !is_curr {
            let mut se = std::mem::take(&mut ctx.tasks[t].data);
            self.place_entity(&ctx.tasks, &rq.class, &mut se, initial);
            ctx.tasks[t].data = se;
        }
        Eevdf::enqueue_entity(ctx, rq, t);
    }

    fn dequeue(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        t: TaskId,
        kind: DequeueKind,
    ) {
        if !ctx.tasks[t].data.on_rq {
            return;
        }
        self.update_curr(ctx, &mut rq.class);
        if self.delays_dequeue()
            && kind == DequeueKind::Sleep
            && !ctx.tasks[t].data.sched_delayed
            && !Self::vruntime_eligible(&ctx.tasks, &rq.class, ctx.tasks[t].data.vruntime)
        {
            // DELAY_DEQUEUE: not eligible, it stays in the competition until it is picked
            // (and dequeued then) or woken (and requeued where it is).
            let weight = rq.class.load.weight;
            rq.class.pelt.update(ctx.now, weight);
            ctx.tasks[t].data.sched_delayed = true;
            rq.class.nr_delayed += 1;
            rq.nr_running -= 1;
            return;
        }
        self.update_entity_lag(ctx, &rq.class, t);
        let sleep = matches!(kind, DequeueKind::Sleep | DequeueKind::Exit);
        if self.features.place_rel_deadline && !sleep {
            let se = &mut ctx.tasks[t].data;
            se.deadline = se.deadline.wrapping_sub(se.vruntime);
            se.rel_deadline = true;
        }
        Eevdf::dequeue_entity(ctx, rq, t);
        Self::update_min_vruntime(&ctx.tasks, &mut rq.class);
    }

    fn put_prev(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, _cpu: CpuId, prev: TaskId) {
        if rq.class.curr != Some(prev) {
            return;
        }
        if ctx.tasks[prev].data.on_rq {
            self.update_curr(ctx, &mut rq.class);
            rq.class.curr = None;
            Self::tree_insert(ctx, &mut rq.class, prev);
        } else {
            rq.class.curr = None;
        }
    }

    /// The earliest deadline: the pick whenever that task is eligible.
    fn next_in_line(&self, rq: &Rq<EevdfRq>) -> Option<TaskId> {
        rq.class.tree.first()
    }

    fn pick_next(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        cpu: CpuId,
    ) -> Option<TaskId> {
        // The core's current task is still prev while the class picks: picking it again is
        // no fresh pick (the kernel's `put_prev_set_next_task` does nothing when next ==
        // prev, so `set_next_entity` does not renew its protection).
        let prev = rq.curr_on(cpu);
        rq.class.need_resched = false;
        let next = loop {
            let next = self.pick_eevdf(&ctx.tasks, &rq.class)?;
            if ctx.tasks[next].data.sched_delayed {
                // pick_next_entity: a delayed task picked is dequeued now; pick again.
                self.finish_delayed_dequeue(ctx, rq, next);
                continue;
            }
            break next;
        };
        // set_next_entity: out of the tree while it runs.
        if rq.class.curr != Some(next) {
            Self::tree_remove(ctx, &mut rq.class, next);
            rq.class.curr = Some(next);
        }
        let now = ctx.now;
        let fresh = prev != Some(next);
        {
            let se = &mut ctx.tasks[next].data;
            se.exec_start = now;
            if fresh || !self.is_618() {
                se.prev_sum_exec = se.sum_exec;
            }
            se.picked_deadline = Some(se.deadline);
            se.wf_fork = false;
        }
        if self.is_618() && fresh {
            self.set_protect_slice(&mut ctx.tasks, &rq.class, next);
            // __set_next_task_fair: list_move(&p->se.group_node, &rq->cfs_tasks), so the
            // balancer detaches the task that least recently ran first.
            if !rq.class.lb.levels.is_empty() {
                rq.class.cfs_tasks.remove(&mut ctx.tasks, next, ctx.ops);
                rq.class.cfs_tasks.push_front(&mut ctx.tasks, next, ctx.ops);
            }
        }
        Some(next)
    }

    fn task_tick(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        _curr: TaskId,
    ) -> bool {
        let weight_so_far = rq.class.load.weight;
        rq.class.pelt.update(ctx.now, weight_so_far);
        self.update_curr(ctx, &mut rq.class)
    }

    fn yield_task(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        if rq.class.nr_queued <= 1 {
            return true;
        }
        self.update_curr(ctx, &mut rq.class);
        if self.is_618() {
            // 6.18: only an eligible task forfeits; its vruntime jumps to its deadline.
            if Self::vruntime_eligible(&ctx.tasks, &rq.class, ctx.tasks[curr].data.vruntime) {
                let se = &mut ctx.tasks[curr].data;
                se.vruntime = se.deadline;
                let vs = Self::delta_fair(se.slice, se);
                se.deadline = se.deadline.wrapping_add(vs);
                Self::update_min_vruntime(&ctx.tasks, &mut rq.class);
            }
            return true;
        }
        let se = &mut ctx.tasks[curr].data;
        let vs = Self::delta_fair(se.slice, se);
        se.deadline = se.deadline.wrapping_add(vs);
        true
    }

    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        cpu: CpuId,
        woken: TaskId,
        _sync: bool,
    ) -> bool {
        let Some(curr) = rq.curr_on(cpu) else {
            return false;
        };
        if curr == woken {
            return false;
        }
        // 6.18: "We can come here with TIF_NEED_RESCHED already set" (an enqueue's
        // update_curr found the runner past its protected slice): it is preempted anyway.
        if self.is_618() && rq.class.need_resched {
            return true;
        }
        // "Idle tasks are by definition preempted by non-idle tasks"; "Batch and idle tasks
        // do not preempt non-idle tasks" (check_preempt_wakeup_fair).
        let woken_policy = ctx.tasks[woken].policy;
        let curr_idle = ctx.tasks[curr].policy == SchedPolicy::Idle;
        if curr_idle && woken_policy != SchedPolicy::Idle {
            if self.is_618() {
                // "don't give idle entity slice protection".
                Self::cancel_protect_slice(&mut ctx.tasks[curr].data);
            }
            return true;
        }
        if self.is_618() && curr_idle != (woken_policy == SchedPolicy::Idle) {
            return false;
        }
        if woken_policy != SchedPolicy::Normal {
            return false;
        }
        if self.update_curr(ctx, &mut rq.class) && self.is_618() {
            return true;
        }
        if !self.is_618() {
            // RUN_TO_PARITY holds here too: "sched/eevdf: Curb wakeup-preemption" (Aug 2023,
            // in 6.6) added it precisely so that a woken task placed left of the running one
            // waits until that one has used the slice it was picked with.
            return self.pick_eevdf(&ctx.tasks, &rq.class) == Some(woken);
        }
        // 6.18: PREEMPT_SHORT lets a woken task with a shorter slice ignore the running
        // task's protection; if it wins, the protection is cancelled. 6.18.y ("sched/fair:
        // Reimplement NEXT_BUDDY to align with EEVDF goals", v6.19, in 6.18.y stable): a
        // forked task (WF_FORK) preempts only that way, and a wakee that does not win
        // shortens the running task's protection to the shortest slice queued.
        let short =
            self.features.preempt_short && ctx.tasks[woken].data.slice < ctx.tasks[curr].data.slice;
        if !short && ctx.tasks[woken].data.wf_fork {
            return false;
        }
        // 6.18.y picks through pick_next_entity: a delayed task it picks is dequeued there
        // and the pick repeated (`if (!nse && cfs_rq->nr_queued) goto pick`).
        let picked = loop {
            match self.pick_eevdf_protect(&ctx.tasks, &rq.class, !short) {
                Some(p) if p != curr && ctx.tasks[p].data.sched_delayed => {
                    self.finish_delayed_dequeue(ctx, rq, p);
                }
                other => break other,
            }
        };
        if picked == Some(woken) {
            if short {
                Self::cancel_protect_slice(&mut ctx.tasks[curr].data);
            }
            return true;
        }
        if self.run_to_parity {
            Self::update_protect_slice(&mut ctx.tasks, &rq.class, curr);
        }
        false
    }

    fn select_cpu(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        view: &CpuView,
        _ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let w = tasks[t].data.load.weight;
        if self.is_618() {
            // select_task_rq_fair: record_wakee on the waker (the task current where the
            // wakeup runs), then wake_wide decides whether an affine wakeup is tried.
            let mut wide = false;
            let mut waker_load = NICE_0_LOAD;
            if let WakeKind::Wakeup { .. } = kind {
                if let Some(waker) = view.cpu(waker_cpu).curr.filter(|&c| c != t) {
                    waker_load = tasks[waker].data.load.weight;
                    let wf = &tasks[waker].data.wakee;
                    wf.record(t, view.now);
                    let topo = view.topology;
                    let llc = (0..view.ncpus())
                        .filter(|&c| topo.cache[c] == topo.cache[waker_cpu])
                        .count() as u32;
                    wide = wake_wide(wf.flips(), tasks[t].data.wakee.flips(), llc);
                }
            }
            return sched_domains::select_cpu_v6_18(
                tasks, view, t, waker_cpu, kind, w, waker_load, wide,
            );
        }
        sched_domains::select_cpu(tasks, view, t, waker_cpu, kind, w, IdleSiblings::Llc)
    }

    /// The PELT average of the runqueue's runnable weight (what the modern balancer
    /// compares), not its instantaneous weight.
    fn load(&self, rq: &Rq<EevdfRq>, _cpu: CpuId) -> u64 {
        rq.class.pelt.load_avg
    }

    /// Runnable tasks only: a delayed one is asleep as far as the hosts know.
    fn for_each_queued(
        &self,
        rq: &Rq<EevdfRq>,
        tasks: &TaskView<'_, EevdfTask>,
        f: &mut dyn FnMut(TaskId),
    ) {
        if let Some(c) = rq.class.curr {
            if tasks[c].data.on_rq && !tasks[c].data.sched_delayed {
                f(c);
            }
        }
        let mut x = rq.class.tree.first();
        while let Some(t) = x {
            if !tasks[t].data.sched_delayed {
                f(t);
            }
            x = rq.class.tree.next(tasks, t);
        }
    }

    fn balance_interval_ticks(&self, idle: bool, hz: u32) -> Option<u64> {
        if self.is_618() {
            // The soonest any 6.18 level can be due: the smallest span (2 CPUs) in ms,
            // x busy_factor 16 on a busy CPU; each level keeps its own interval.
            let ms: u64 = if idle { 2 } else { 2 * 16 };
            return Some((ms * hz as u64 / 1000).max(1));
        }
        sched_domains::balance_interval_ticks(idle, hz)
    }

    fn find_busiest(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        this: &mut Rq<EevdfRq>,
        this_cpu: CpuId,
        view: &CpuView,
        kind: CpuIdle,
    ) -> Option<Busiest> {
        let idle = kind.is_idle();
        if self.is_618() {
            return this
                .class
                .lb
                .find_busiest(ctx.ops, ctx.now, this_cpu, view, kind);
        }
        this.class
            .domains
            .find_busiest(ctx.ops, ctx.now, this_cpu, view, idle)
    }

    fn newidle_pass_open(&self, rq: &Rq<EevdfRq>) -> bool {
        rq.class.lb.newidle.pass.is_some()
    }

    fn newidle_done(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        pulled: bool,
    ) {
        rq.class.lb.newidle_done(ctx.now, pulled);
    }

    fn move_tasks(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        this: &mut Rq<EevdfRq>,
        this_cpu: CpuId,
        src: &mut Rq<EevdfRq>,
        _src_cpu: CpuId,
        kind: CpuIdle,
        imbalance: usize,
        _rt: &dyn PassiveRt<EevdfRq, EevdfTask>,
    ) -> PullOutcome {
        let idle = kind.is_idle();
        if self.is_618() {
            return self.detach_tasks(ctx, this, this_cpu, src, kind);
        }
        let now = ctx.now;
        let mut out = PullBudget::new(imbalance).drain(
            ctx,
            src,
            this_cpu,
            idle,
            |q| &q.tree,
            |_, _, p| {
                // can_migrate_task: a delayed task moves only when load is migrated; it is
                // asleep here, and the hosts move runnable tasks only (simplified: never).
                (!p.data.sched_delayed).then(|| (p.data.load.weight, self.task_hot(p, now)))
            },
            |ctx, src, t| {
                // Detach with its lag, attach placed by it: lag-preserving migration.
                self.update_curr(ctx, &mut src.class);
                self.update_entity_lag(ctx, &src.class, t);
                if self.features.place_rel_deadline {
                    let se = &mut ctx.tasks[t].data;
                    se.deadline = se.deadline.wrapping_sub(se.vruntime);
                    se.rel_deadline = true;
                }
                Eevdf::dequeue_entity(ctx, src, t);
                ctx.tasks[t].cpu = this_cpu;
                self.update_curr(ctx, &mut this.class);
                let mut se = std::mem::take(&mut ctx.tasks[t].data);
                self.place_entity(&ctx.tasks, &this.class, &mut se, false);
                ctx.tasks[t].data = se;
                Eevdf::enqueue_entity(ctx, this, t);
                false
            },
        );
        out.resched = out.moved > 0 && this.curr().is_some();
        out
    }
}

#[cfg(test)]
mod tests;

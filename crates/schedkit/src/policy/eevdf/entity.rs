//! `eevdf`'s core, as `kernel/sched/fair.c` (6.6, 6.18) has it: the load-weighted average
//! `V` and eligibility (`avg_vruntime`, `vruntime_eligible`, `update_min_vruntime`), charging
//! the runner (`update_curr`, `update_deadline`), 6.18's slice protection (`protect_slice`
//! and its setters), the pick (`pick_eevdf`), and the tree with the sums behind `V`
//! (`__enqueue_entity`, `account_entity_enqueue` and their inverses). Must never depend on
//! the balancer (`sched_domains`, `fair_lb`), CPU selection or another design.

use super::{Eevdf, EevdfRq, EevdfTask};
use crate::class::{Ctx, Rq};
use crate::ds::rbtree::before;
use crate::policy::weight::{calc_delta, NICE_0_LOAD};
use crate::task::{SchedPolicy, TaskId, TaskView};

impl Eevdf {
    pub(super) fn key(rq: &EevdfRq, v: u64) -> i128 {
        v.wrapping_sub(rq.min_vruntime) as i64 as i128
    }

    /// `calc_delta_fair`.
    pub(super) fn delta_fair(delta: u64, se: &mut EevdfTask) -> u64 {
        if se.load.weight != NICE_0_LOAD {
            calc_delta(delta, NICE_0_LOAD, &mut se.load)
        } else {
            delta
        }
    }

    /// `avg_vruntime()`: V, with the running task counted, rounded towards negative.
    pub fn avg_vruntime(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> u64 {
        let (avg, load) = Self::sums(tasks, rq);
        Self::avg_from_sums(rq, avg, load)
    }

    /// `V` from its sums.
    pub(super) fn avg_from_sums(rq: &EevdfRq, avg: i128, load: u64) -> u64 {
        let mut avg = avg;
        if load > 0 {
            if avg < 0 {
                avg -= load as i128 - 1;
            }
            avg = div_exact_width(avg, load as i128);
        }
        rq.min_vruntime.wrapping_add(avg as i64 as u64)
    }

    pub(super) fn sums(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> (i128, u64) {
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
    pub(super) fn avg_add(rq: &mut EevdfRq, se: &EevdfTask) {
        rq.avg_vruntime += Self::key(rq, se.vruntime) * se.load.weight as i128;
        rq.avg_load += se.load.weight;
    }

    /// `avg_vruntime_sub`: `se` leaves the queued sums.
    pub(super) fn avg_sub(rq: &mut EevdfRq, se: &EevdfTask) {
        rq.avg_vruntime -= Self::key(rq, se.vruntime) * se.load.weight as i128;
        rq.avg_load -= se.load.weight;
    }

    /// `update_min_vruntime`, with `avg_vruntime_update` as the base moves.
    pub(super) fn update_min_vruntime(tasks: &TaskView<'_, EevdfTask>, rq: &mut EevdfRq) {
        let mut v = rq.min_vruntime;
        let curr = rq.curr.filter(|&c| tasks[c].data.on_rq);
        if let Some(c) = curr {
            v = tasks[c].data.vruntime;
        }
        if !rq.tree.is_empty() {
            let m = rq.tree.root_aug(tasks).min_vruntime;
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
    ///
    /// Nothing happens when no time passed since the runner was last charged: both eras
    /// return before `update_deadline` and `update_min_vruntime` when `delta_exec <= 0`
    /// (6.6's `update_curr`; 6.18's, after `update_se`). That is every second call of a
    /// `schedule()` that charged the runner already at the same clock reading (a yield's
    /// `yield_task` then `put_prev`, a block's dequeue then `put_prev`), as the kernel's
    /// `rq_clock_skip_update` makes it for `yield_task_fair`.
    pub(super) fn update_curr(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq) -> bool {
        let Some(c) = rq.curr else { return false };
        let now = ctx.now;
        let mut resched = false;
        {
            let se = &mut ctx.tasks[c].data;
            let delta = now.saturating_sub(se.exec_start);
            if delta == 0 {
                return false;
            }
            se.sum_exec += delta;
            se.vruntime = se.vruntime.wrapping_add(Self::delta_fair(delta, se));
            se.exec_start = now;
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
            // 6.18 reschedules when the deadline passed or the protected slice is over, if
            // others are queued.
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
    pub(super) fn protect_slice(se: &EevdfTask) -> bool {
        (se.vprot.wrapping_sub(se.vruntime) as i64) > 0
    }

    /// `cfs_rq_min_slice`: the shortest slice among the running task and the queued ones.
    pub(super) fn min_slice(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> u64 {
        let mut m = u64::MAX;
        if let Some(c) = rq.curr {
            if tasks[c].data.on_rq {
                m = tasks[c].data.slice;
            }
        }
        // The root's `min_slice` (u64::MAX when the tree is empty).
        m.min(rq.tree.root_aug(tasks).min_slice)
    }

    /// `set_protect_slice` (6.18): protected up to the deadline, or the end of the shortest
    /// slice queued (RUN_TO_PARITY), or of the unscaled base slice (without it).
    pub(super) fn set_protect_slice(
        &self,
        tasks: &mut TaskView<'_, EevdfTask>,
        rq: &EevdfRq,
        t: TaskId,
    ) {
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
    pub(super) fn update_protect_slice(
        tasks: &mut TaskView<'_, EevdfTask>,
        rq: &EevdfRq,
        t: TaskId,
    ) {
        let slice = Self::min_slice(tasks, rq);
        let se = &mut tasks[t].data;
        let end = se.vruntime.wrapping_add(Self::delta_fair(slice, se));
        if before(end, se.vprot) {
            se.vprot = end;
        }
    }

    /// `cancel_protect_slice` (6.18).
    pub(super) fn cancel_protect_slice(se: &mut EevdfTask) {
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
    pub(super) fn pick_eevdf_protect(
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
                    if Self::vruntime_eligible(
                        tasks,
                        rq,
                        rq.tree.subtree_aug(tasks, l).min_vruntime,
                    ) {
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

    /// `__enqueue_entity`: into the tree (whose nodes keep their subtrees' smallest vruntime
    /// and slice range, `min_vruntime_cb`) and the sums behind V.
    pub(super) fn tree_insert(ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq, t: TaskId) {
        Self::avg_add(rq, &ctx.tasks[t].data);
        rq.tree.insert(&mut ctx.tasks, t, ctx.ops);
    }

    /// `__dequeue_entity`.
    pub(super) fn tree_remove(ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq, t: TaskId) {
        rq.tree.remove(&mut ctx.tasks, t, ctx.ops);
        Self::avg_sub(rq, &ctx.tasks[t].data);
    }

    pub(super) fn enqueue_entity(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, t: TaskId) {
        if !rq.class.lb.levels.is_empty() {
            // account_entity_enqueue: list_add(&se->group_node, &rq->cfs_tasks).
            rq.class.cfs_tasks.push_front(&mut ctx.tasks, t, ctx.ops);
        }
        let w = ctx.tasks[t].data.load.weight;
        self.update_rq_load_avg(ctx, &mut rq.class);
        self.enqueue_load_avg(ctx, &mut rq.class, t);
        if rq.class.curr != Some(t) {
            Self::tree_insert(ctx, &mut rq.class, t);
        }
        ctx.tasks[t].data.on_rq = true;
        rq.class.load.add(w);
        rq.class.nr_queued += 1;
        let idle = ctx.tasks[t].policy == SchedPolicy::Idle;
        ctx.tasks[t].data.idle_counted = idle;
        rq.class.nr_idle_policy += usize::from(idle);
        rq.nr_running += 1;
    }

    /// The entity leaves the runqueue for good (`account_entity_dequeue`); a delayed one was
    /// already out of the core's count.
    pub(super) fn dequeue_entity(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, t: TaskId) {
        if !rq.class.lb.levels.is_empty() {
            rq.class.cfs_tasks.remove(&mut ctx.tasks, t, ctx.ops);
        }
        let w = ctx.tasks[t].data.load.weight;
        self.update_rq_load_avg(ctx, &mut rq.class);
        Self::update_se_load_avg(ctx, &rq.class, t);
        if rq.class.curr != Some(t) {
            Self::tree_remove(ctx, &mut rq.class, t);
        }
        let se = &mut ctx.tasks[t].data;
        rq.class.nr_idle_policy -= usize::from(std::mem::take(&mut se.idle_counted));
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
}

/// `a / b` (truncating, as Rust's and C's `/`), in 64 bits when both fit: the kernel keeps
/// these sums in an `s64` (`div_s64`); the 128-bit sums here only guard against overflow, and
/// a 128-bit division is a library call (`__divti3`) several times slower than `idiv`. The
/// quotient is the same either way, so every figure is unchanged.
#[inline]
pub(super) fn div_exact_width(a: i128, b: i128) -> i128 {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(x), Ok(y)) if y > 0 => (x / y) as i128,
        _ => a / b,
    }
}

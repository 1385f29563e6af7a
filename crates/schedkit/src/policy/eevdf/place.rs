//! `eevdf`'s placement and lag, as `kernel/sched/fair.c` (6.6, 6.18) has them: where an
//! entity joins the runqueue (`place_entity`: PLACE_LAG, PLACE_DEADLINE_INITIAL, 6.18's
//! PLACE_REL_DEADLINE), the lag it keeps when it leaves (`update_entity_lag`), 6.18's
//! DELAY_DEQUEUE ends (`requeue_delayed_entity` on a wakeup, the finish at a pick), and the
//! lag of a dequeued entity reweighted (`reweight_entity`). Must never depend on the balancer
//! (`sched_domains`, `fair_lb`), CPU selection or another design.

use super::{Eevdf, EevdfRq, EevdfTask};
use crate::class::{Ctx, Rq};
use crate::policy::weight::{LoadWeight, IDLEPRIO_LATER};
use crate::task::{TaskId, TaskView};

impl Eevdf {
    /// `place_entity` (PLACE_LAG, PLACE_DEADLINE_INITIAL; 6.18: PLACE_REL_DEADLINE and the
    /// custom slice) of task `t`, where it lies in the table. `V` is read as if `t`'s entity
    /// were out of the table while it is placed (the running task's term counted only when
    /// that is another task), as it was when the entity was taken out, placed and put back:
    /// two copies of a few hundred bytes at every wakeup, which placing in place saves.
    pub(super) fn place_entity(
        &self,
        tasks: &mut TaskView<'_, EevdfTask>,
        rq: &EevdfRq,
        t: TaskId,
        initial: bool,
    ) {
        let sums = if rq.curr == Some(t) {
            (rq.avg_vruntime, rq.avg_load)
        } else {
            Self::sums(tasks, rq)
        };
        self.place_with_sums(sums, rq, &mut tasks[t].data, initial)
    }

    /// [`Self::place_entity`] given `V`'s sums (`avg_vruntime`'s numerator and load).
    fn place_with_sums(
        &self,
        (avg, sum_load): (i128, u64),
        rq: &EevdfRq,
        se: &mut EevdfTask,
        initial: bool,
    ) {
        if se.slice == 0 || (self.is_618() && !se.custom_slice) {
            se.slice = self.base_slice;
        }
        let mut vslice = Self::delta_fair(se.slice, se);
        let v = Self::avg_from_sums(rq, avg, sum_load);
        let mut lag: i128 = 0;
        if rq.nr_queued > 0 {
            let mut load = sum_load;
            lag = se.vlag as i128 * (load + se.load.weight) as i128;
            if load == 0 {
                load = 1;
            }
            lag = super::entity::div_exact_width(lag, load as i128);
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
    pub(super) fn update_entity_lag(&self, ctx: &mut Ctx<EevdfTask>, rq: &EevdfRq, t: TaskId) {
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
    pub(super) fn max_slice(tasks: &TaskView<'_, EevdfTask>, rq: &EevdfRq) -> u64 {
        let mut m = 0;
        if let Some(c) = rq.curr {
            if tasks[c].data.on_rq {
                m = tasks[c].data.slice;
            }
        }
        // The root's `max_slice` (0 when the tree is empty).
        m.max(rq.tree.root_aug(tasks).max_slice)
    }

    /// The end of a delayed dequeue (`dequeue_entity` with DEQUEUE_DELAYED, then
    /// `finish_delayed_dequeue_entity`): the lag is taken, positive lag clipped to 0.
    pub(super) fn finish_delayed_dequeue(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        t: TaskId,
    ) {
        self.update_curr(ctx, &mut rq.class);
        self.update_entity_lag(ctx, &rq.class, t);
        self.dequeue_entity(ctx, rq, t);
        Self::update_min_vruntime(&ctx.tasks, &mut rq.class);
        let se = &mut ctx.tasks[t].data;
        if self.features.delay_zero && se.vlag > 0 {
            se.vlag = 0;
        }
    }

    /// `ttwu_runnable` → `enqueue_task(ENQUEUE_DELAYED)` → `requeue_delayed_entity`: a task
    /// still queued as delayed is requeued where it is (whether it was delayed).
    pub(super) fn requeue_delayed_entity(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
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
                ctx.tasks[t].data.vlag = 0;
                self.place_entity(&mut ctx.tasks, &rq.class, t, false);
                if !is_curr {
                    Self::tree_insert(ctx, &mut rq.class, t);
                }
                rq.class.nr_queued += 1;
            }
        }
        self.update_rq_load_avg(ctx, &mut rq.class);
        Self::update_se_load_avg(ctx, &rq.class, t);
        ctx.tasks[t].data.sched_delayed = false;
        rq.class.nr_delayed -= 1;
        rq.nr_running += 1;
        true
    }
}

/// A dequeued entity takes the weight of its task's nice level and policy: as
/// `reweight_entity` does for an entity on no runqueue, its lag `w * vlag` is kept by scaling
/// `vlag` by old/new weight (div_s64 truncates towards zero), and a relative deadline with it.
pub(super) fn reweight_dequeued(task: &mut crate::task::Task<EevdfTask>) {
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
    // reweight_entity: the average at the new weight (6.18's signal; unused in 6.6).
    se.avg.reweight_entity(new.weight);
}

//! `eevdf`'s wakeup preemption, `check_preempt_wakeup_fair` of `kernel/sched/fair.c` (6.6;
//! 6.18 and 6.18.y with PREEMPT_SHORT, WF_FORK and the protection it shortens). Must never
//! depend on the balancer (`sched_domains`, `fair_lb`), CPU selection or another design.

use super::{Eevdf, EevdfRq, EevdfTask};
use crate::class::{Ctx, Rq};
use crate::task::{CpuId, SchedPolicy, TaskId};

impl Eevdf {
    /// Whether `woken`, just enqueued on `cpu`, preempts the task running there.
    pub(super) fn check_preempt_wakeup_fair(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        cpu: CpuId,
        woken: TaskId,
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
}

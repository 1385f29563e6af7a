//! The fair class's load signals (`kernel/sched/fair.c`: `update_load_avg` and its helpers):
//! each runqueue's PELT sum of its queued weight, and, in 6.18, each task's own signal, which
//! moves with the task. The balancer and `wake_affine_weight` weigh a task by its signal
//! (`task_h_load`: with one level of groups, `se->avg.load_avg`), so a task queued 5 % of the
//! time weighs about 5 % of its weight; 6.6 here still weighs it by its weight.
//!
//! When a task moves (fair.c of v6.18):
//! - under both runqueues' locks (the balancer's `detach_task`, an affinity change): its
//!   dequeue detaches its average from the old runqueue (`DO_DETACH`,
//!   `detach_entity_load_avg` 4764) and its enqueue attaches it to the new one (`DO_ATTACH`,
//!   `attach_entity_load_avg` 4709);
//! - at a wakeup on another CPU, without the old runqueue's lock: `migrate_task_rq_fair`
//!   (8699) → `remove_entity_load_avg` (4854) adds the average to the old runqueue's
//!   `removed`, which that runqueue takes off at its next update (`update_cfs_rq_load_avg`,
//!   4638); the new runqueue attaches it.
//!
//! Before a wakeup moves a task, its average is brought to the old runqueue's last update
//! (`sync_entity_load_avg`, read without the lock), so what comes off that runqueue is on its
//! own time base. Simplified, and said so: the kernel then estimates the idle time the old
//! runqueue's clock missed (`migrate_se_pelt_lag`); here the average is brought on to now, the
//! whole sleep, before it is attached. One signal stands for the kernel's three (load,
//! runnable, util).
//!
//! Must never depend on the balancer, CPU selection, a host or another design.

use super::{Eevdf, EevdfRq, EevdfTask};
use crate::class::Ctx;
use crate::task::{CpuId, TaskId};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// Every CPU's `cfs_rq->removed.load_avg` (what wakeups elsewhere took away from that CPU's
/// signal since its last update) and `cfs_rq->avg.last_update_time`. Atomics, as the kernel's
/// are read and written without the runqueue's lock by a CPU waking a task away from it.
/// Sized at first use; a copy of the class starts empty.
#[derive(Debug, Default)]
pub struct RemovedLoad(OnceLock<Box<[RemovedSlot]>>);

#[derive(Debug, Default)]
struct RemovedSlot {
    load_avg: AtomicU64,
    last_update_ns: AtomicU64,
}

impl Clone for RemovedLoad {
    fn clone(&self) -> Self {
        RemovedLoad::default()
    }
}

impl RemovedLoad {
    /// One slot per CPU of the machine (from the first runqueue built, or else the first use).
    pub(super) fn size(&self, ncpus: usize) {
        self.0
            .get_or_init(|| (0..ncpus).map(|_| RemovedSlot::default()).collect());
    }

    fn slot(&self, ncpus: usize, cpu: CpuId) -> Option<&RemovedSlot> {
        let slots = self
            .0
            .get_or_init(|| (0..ncpus).map(|_| RemovedSlot::default()).collect());
        crate::check!(
            cpu < slots.len(),
            "cpu{cpu} beyond the {} sized",
            slots.len()
        );
        slots.get(cpu)
    }

    fn add(&self, ncpus: usize, cpu: CpuId, load_avg: u64) {
        if let Some(s) = self.slot(ncpus, cpu) {
            s.load_avg.fetch_add(load_avg, Relaxed);
        }
    }

    /// What left since the last update, and that update's time set to `now`.
    fn take(&self, ncpus: usize, cpu: CpuId, now: u64) -> u64 {
        self.slot(ncpus, cpu).map_or(0, |s| {
            s.last_update_ns.store(now, Relaxed);
            // As the kernel tests `removed.nr` first: no locked operation on the common path,
            // where nothing left (each runqueue update of 6.18 comes here).
            if s.load_avg.load(Relaxed) == 0 {
                0
            } else {
                s.load_avg.swap(0, Relaxed)
            }
        })
    }

    /// `cfs_rq_last_update_time` of `cpu`'s runqueue.
    fn last_update(&self, ncpus: usize, cpu: CpuId) -> u64 {
        self.slot(ncpus, cpu)
            .map_or(0, |s| s.last_update_ns.load(Relaxed))
    }
}

impl Eevdf {
    /// `update_cfs_rq_load_avg`: what left without the lock comes off (6.18), then the
    /// runqueue's signal runs up to now at the weight it had until now.
    pub(super) fn update_rq_load_avg(&self, ctx: &Ctx<EevdfTask>, rq: &mut EevdfRq) {
        if rq.entity_pelt {
            let removed = self.removed.take(ctx.ncpus, rq.cpu, ctx.now);
            if removed > 0 {
                rq.pelt.remove(removed);
            }
        }
        let weight = rq.load.weight;
        rq.pelt.update(ctx.now, weight);
        self.hy_rq_update(ctx, rq);
    }

    /// `__update_load_avg_se` of a task while it is queued (6.18).
    pub(super) fn update_se_load_avg(ctx: &mut Ctx<EevdfTask>, rq: &EevdfRq, t: TaskId) {
        if rq.entity_pelt {
            let se = &mut ctx.tasks[t].data;
            se.avg.update_entity(ctx.now, true, se.load.weight);
        }
        Self::hy_se_update(ctx, rq, t);
    }

    /// The enqueue's `update_load_avg(DO_ATTACH)` (6.18): a task that slept here has its
    /// signal decayed over the sleep; one that comes from elsewhere is attached here, after a
    /// wakeup leaving its average in the old runqueue's `removed`.
    pub(super) fn enqueue_load_avg(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq, t: TaskId) {
        if !rq.entity_pelt {
            return;
        }
        let (now, cpu) = (ctx.now, rq.cpu);
        let from = ctx.tasks[t].data.pelt_cpu;
        self.hy_attach(ctx, rq, t, from);
        let se = &mut ctx.tasks[t].data;
        let weight = se.load.weight;
        match se.pelt_cpu {
            Some(c) if c == cpu => se.avg.update_entity(now, false, weight),
            Some(old) => {
                // migrate_task_rq_fair → remove_entity_load_avg → sync_entity_load_avg.
                let then = self.removed.last_update(ctx.ncpus, old);
                se.avg.update_entity(then, false, weight);
                self.removed.add(ctx.ncpus, old, se.avg.load_avg);
                se.avg.update_entity(now, false, weight);
                rq.pelt.attach(&mut se.avg, weight);
            }
            None => rq.pelt.attach(&mut se.avg, weight),
        }
        se.pelt_cpu = Some(cpu);
    }

    /// `DO_DETACH` (6.18): a task dequeued to move under both locks, or exiting, takes its
    /// average out of this runqueue's signal now.
    pub(super) fn detach_load_avg(ctx: &mut Ctx<EevdfTask>, rq: &mut EevdfRq, t: TaskId) {
        if !rq.entity_pelt {
            return;
        }
        Self::hy_detach(ctx, rq, t);
        let se = &mut ctx.tasks[t].data;
        rq.pelt.detach(&se.avg, se.load.weight);
        se.pelt_cpu = None;
    }

    /// `task_h_load`: what a task weighs in 6.18's balancing (its signal), its weight in 6.6's.
    pub(super) fn task_h_load(&self, se: &EevdfTask) -> u64 {
        if self.is_618() {
            se.avg.load_avg
        } else {
            se.load.weight
        }
    }
}

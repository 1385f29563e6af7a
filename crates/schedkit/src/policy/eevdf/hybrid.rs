//! `eevdf:era=6.18` on a machine whose CPUs differ (`machine/hybrid.rs`): the per-entity and
//! per-runqueue utilisation the capacity rules read, misfit tasks, the energy-aware wakeup,
//! the capacity-aware idle search and active balancing, as Linux v6.18's `fair.c` has them.
//! Nothing here runs on a machine of one kind of CPU (`EevdfRq::hy` is `None` there), so those
//! behave exactly as before.
//!
//! - Utilisation (`util_avg`, `___update_load_avg` with `accumulate_sum`'s scaling): a task's
//!   signal accumulates its CPU's capacity while it runs and nothing otherwise, so it is
//!   capacity-invariant (a task that keeps an A7 of capacity 377 busy has 377); a runqueue's
//!   accumulates its capacity while a fair task runs there, and a task that moves takes its
//!   utilisation along (attached and detached with its load; a wakeup elsewhere leaves it in
//!   the old runqueue's `removed`). Simplified: not frequency-invariant (the class is not
//!   told frequencies; the kernel scales by `arch_scale_freq_capacity`), no UTIL_EST. A new
//!   task starts as `post_init_entity_util_avg` (1189) starts it, on the CPU it forked on:
//!   the runqueue's utilisation per unit of load times its weight, at most half the spare
//!   capacity (all of that half on an idle runqueue).
//! - `update_misfit_status` (5161) at each tick and pick: the running task is misfit where
//!   the machine has asymmetric capacity, it may run elsewhere, this is not the biggest CPU,
//!   and it does not fit (`task_fits_cpu`, 5149); `misfit_task_load` is then its load
//!   (at least 1). Simplified: "elsewhere" is any bigger CPU of the machine
//!   (`p->max_allowed_capacity` is that of its allowed CPUs).
//! - `select_task_rq_fair` (8625): a wakeup first tries `find_energy_efficient_cpu` unless the
//!   root domain is overutilized; `select_idle_sibling` then takes the idle target or previous
//!   CPU only if the task fits it (`asym_fits_cpu`), and otherwise searches by capacity
//!   (`select_idle_capacity`) instead of by cache.
//! - Active balance: the balancer asks the source CPU's stopper to push its running task
//!   (`fair_lb::Domains::active_ok`); here the source CPU's next tick preempts it and the core
//!   moves it (`SchedClass::push_running`) to the CPU that asked. The kernel's stopper runs at
//!   once (an IPI); here up to a tick later.
//! - uclamp: a task's own `uclamp_min`/`uclamp_max` (a workload group's `uclamp = [MIN, MAX]`
//!   in percent, as cgroup v2 writes them), used by `util_fits_cpu`, misfit and the energy
//!   estimate (`policy/asym.rs` says what is modelled).

use super::{Eevdf, EevdfRq, EevdfTask, T};
use crate::class::{CpuView, Ctx, WakeKind};
use crate::machine::Topology;
use crate::policy::asym::{self, Published, Uclamp};
use crate::policy::pelt::Pelt;
use crate::task::{CpuId, TaskId, TaskView};
use std::sync::Arc;

/// A runqueue's part on a hybrid machine.
#[derive(Clone, Debug, Default)]
pub struct HybridRq {
    /// `capacity_of(cpu)` (no pressure: `arch_scale_cpu_capacity`).
    pub cap: u64,
    /// The machine's largest capacity.
    pub max_cap: u64,
    /// `sched_asym_cpucap_active()`.
    pub asym_capacity: bool,
    /// `cfs_rq->avg.util_avg`'s signal.
    pub util: Pelt,
    /// `rq->misfit_task_load`.
    pub misfit_task_load: u64,
}

impl Eevdf {
    /// The hybrid part of `cpu`'s runqueue (`None` on a machine of one kind of CPU), with
    /// the balancer's access to what every CPU publishes.
    pub(super) fn hybrid_rq(&self, cpu: CpuId, t: &Topology) -> Option<HybridRq> {
        if !(t.asym_capacity || t.asym_packing) {
            return None;
        }
        self.asym.get_or_init(|| Published::new(t.ncpus));
        Some(HybridRq {
            cap: t.capacity_of(cpu),
            max_cap: t.max_capacity(),
            asym_capacity: t.asym_capacity,
            ..HybridRq::default()
        })
    }

    pub(super) fn published(&self) -> Option<Arc<Published>> {
        self.asym.get().cloned()
    }

    /// The runqueue's utilisation up to now (at its capacity while a fair task ran), what left
    /// by wakeups elsewhere taken off, published.
    pub(super) fn hy_rq_update(&self, ctx: &Ctx<EevdfTask>, rq: &mut EevdfRq) {
        let running = rq.curr.is_some();
        let Some(h) = rq.hy.as_mut() else {
            return;
        };
        let Some(p) = self.asym.get() else {
            return;
        };
        let removed = p.take_removed_util(rq.cpu);
        if removed > 0 {
            h.util.remove(removed);
        }
        h.util.update(ctx.now, if running { h.cap } else { 0 });
        p.set_util(rq.cpu, h.util.load_avg);
    }

    /// The task's utilisation up to now: its CPU's capacity while it ran.
    pub(super) fn hy_se_update(ctx: &mut Ctx<EevdfTask>, rq: &EevdfRq, t: TaskId) {
        if let Some(h) = &rq.hy {
            let running = rq.curr == Some(t);
            ctx.tasks[t]
                .data
                .util
                .update(ctx.now, if running { h.cap } else { 0 });
        }
    }

    /// The enqueue's attach: a task coming from `from` (its last runqueue, `None`: attached
    /// nowhere) brings its utilisation here, leaving it in the old runqueue's `removed`.
    pub(super) fn hy_attach(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut EevdfRq,
        t: TaskId,
        from: Option<CpuId>,
    ) {
        let Some(h) = rq.hy.as_mut() else {
            return;
        };
        let running = if rq.curr == Some(t) { h.cap } else { 0 };
        let se = &mut ctx.tasks[t].data;
        se.util.update(ctx.now, running);
        match from {
            Some(c) if c == rq.cpu => {}
            Some(old) => {
                if let Some(p) = self.asym.get() {
                    p.add_removed_util(old, se.util.load_avg);
                }
                h.util.add_avg(se.util.load_avg);
            }
            None => h.util.add_avg(se.util.load_avg),
        }
    }

    /// `detach_entity_load_avg`'s utilisation part.
    pub(super) fn hy_detach(ctx: &Ctx<EevdfTask>, rq: &mut EevdfRq, t: TaskId) {
        if let Some(h) = rq.hy.as_mut() {
            h.util.remove(ctx.tasks[t].data.util.load_avg);
        }
    }

    /// `post_init_entity_util_avg` at fork.
    pub(super) fn hy_new_task(ctx: &mut Ctx<EevdfTask>, rq: &EevdfRq, t: TaskId) {
        if let Some(h) = &rq.hy {
            let cap = h.cap.saturating_sub(h.util.load_avg) / 2;
            let util = if h.util.load_avg != 0 {
                (h.util.load_avg * ctx.tasks[t].data.load.weight / (rq.pelt.load_avg + 1)).min(cap)
            } else {
                cap
            };
            ctx.tasks[t].data.util = Pelt::util_at(ctx.now, util);
        }
    }

    /// A task's clamps (`uclamp_eff_value`: its own), from percent as
    /// `capacity_from_percent` (core.c 9396) converts them: `round(pct * 100 * 1024 / 10000)`.
    pub(super) fn uclamp_of(t: &T) -> Uclamp {
        let util = |pct: u8| (u64::from(pct) * 100 * 1024 + 5000) / 10000;
        Uclamp {
            min: util(t.uclamp_pct[0]),
            max: util(t.uclamp_pct[1]),
        }
    }

    /// `task_fits_cpu(p, cpu)` on a CPU of capacity `cap`.
    pub(super) fn task_fits(t: &T, cap: u64) -> bool {
        let clamp = Self::uclamp_of(t);
        asym::util_fits_cpu(t.data.util.load_avg, clamp, cap, !clamp.is_default()) > 0
    }

    /// `update_misfit_status(p, rq)` (`p` None: the CPU goes idle). Its first test, whether
    /// CPU capacities differ at all, is the kernel's static key (`sched_asym_cpucap_active`),
    /// free on a machine whose CPUs are alike: inlined here at every pick and tick, with the
    /// rest out of line.
    #[inline]
    pub(super) fn update_misfit_status(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        rq: &mut EevdfRq,
        p: Option<TaskId>,
    ) {
        if rq.hy.as_ref().is_some_and(|h| h.asym_capacity) {
            self.update_misfit_status_asym(tasks, rq, p);
        }
    }

    #[inline(never)]
    fn update_misfit_status_asym(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        rq: &mut EevdfRq,
        p: Option<TaskId>,
    ) {
        let cpu = rq.cpu;
        let Some(h) = rq.hy.as_mut() else {
            return;
        };
        h.misfit_task_load = match p {
            Some(t)
                if tasks[t].cpus_allowed.count() > 1
                    && h.cap < h.max_cap
                    && !Self::task_fits(&tasks[t], h.cap) =>
            {
                self.task_h_load(&tasks[t].data).max(1)
            }
            _ => 0,
        };
        if let Some(pb) = self.asym.get() {
            pb.set_misfit(cpu, h.misfit_task_load);
            // The runqueue's clamps, as `uclamp_rq_get` would give them (its running task's).
            pb.set_clamp(
                cpu,
                p.map_or_else(Uclamp::default, |t| Self::uclamp_of(&tasks[t])),
            );
        }
    }

    /// At the tick: a stopper request for this CPU preempts the running task.
    pub(super) fn push_requested(&self, rq: &EevdfRq) -> bool {
        rq.hy.is_some()
            && self
                .asym
                .get()
                .is_some_and(|p| p.push_pending(rq.cpu).is_some())
    }

    /// `push_running`: the running task leaves for the CPU whose stopper request is pending.
    pub(super) fn hy_push_running(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        rq: &EevdfRq,
        curr: TaskId,
    ) -> bool {
        if rq.hy.is_none() {
            return false;
        }
        let Some(p) = self.asym.get() else {
            return false;
        };
        match p.take_push(rq.cpu) {
            Some(dst) if tasks[curr].cpus_allowed.contains(dst) && dst != rq.cpu => {
                p.set_pushed(rq.cpu, curr.0, dst);
                true
            }
            _ => false,
        }
    }

    /// A pick: a stopper request still pending was for a task that has left the CPU by now
    /// (the kernel's stopper runs before any other pick); it is dropped.
    pub(super) fn drop_stale_push(&self, rq: &EevdfRq) {
        if rq.hy.is_some() {
            if let Some(p) = self.asym.get() {
                p.take_push(rq.cpu);
            }
        }
    }

    /// The balancer found nothing to detach from `src` and may push its running task here.
    pub(super) fn request_active(&self, src: CpuId, dst: CpuId) {
        if let Some(p) = self.asym.get() {
            p.request_push(src, dst);
        }
    }

    /// The hybrid part of `select_task_rq_fair` for a wakeup: the stopper's destination of a
    /// pushed task, or `find_energy_efficient_cpu` where the machine has an Energy Model and
    /// no CPU is overutilized. `None`: the usual path.
    pub(super) fn hy_select(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        view: &CpuView,
        t: TaskId,
        prev: CpuId,
        kind: WakeKind,
    ) -> Option<CpuId> {
        let topo = view.topology;
        if !(topo.asym_capacity || topo.asym_packing) {
            return None;
        }
        let p = self.asym.get()?;
        let task = &tasks[t];
        let allowed = |c: CpuId| c < view.ncpus() && task.cpus_allowed.contains(c);
        // active_load_balance_cpu_stop: the pushed task goes to the CPU that asked.
        if let Some(dst) = p.take_pushed(task.cpu, t.0) {
            if allowed(dst) {
                return Some(dst);
            }
        }
        if !matches!(kind, WakeKind::Wakeup { .. }) || topo.em.is_empty() {
            return None;
        }
        let mut util = p.utils();
        if asym::overutilized(topo, &util, &p.clamps()) {
            return None;
        }
        let se = &task.data;
        let clamp = Self::uclamp_of(task);
        // cpu_util(cpu, p, -1, 0): the task's utilisation off the CPU it last ran on.
        if let Some(c) = se.pelt_cpu {
            util[c] = util[c].saturating_sub(se.util.load_avg);
        }
        let env = asym::EnergyEnv {
            topology: topo,
            util: &util,
            task_util: se.util.load_avg,
            clamp,
            uclamp_used: !clamp.is_default(),
        };
        env.find_energy_efficient_cpu(prev, &allowed)
    }

    /// What `select_idle_sibling` needs of the waking task on an asymmetric machine.
    pub(super) fn fit_check(t: &T, topo: &Topology) -> Option<(u64, Uclamp, bool)> {
        let clamp = Self::uclamp_of(t);
        topo.asym_capacity
            .then(|| (t.data.util.load_avg, clamp, !clamp.is_default()))
    }
}

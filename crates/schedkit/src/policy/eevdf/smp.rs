//! `eevdf`'s multi-CPU part, as `kernel/sched/fair.c` (6.6, 6.18) has it: which CPU a
//! waking task goes to (`select_task_rq_fair`, 6.18's `record_wakee` and `wake_wide`), and
//! load balancing: 6.6 through the 2.6.2x-style domains of `sched_domains` (its
//! `PullBudget::drain` loop, with EEVDF's lag-preserving detach and attach), 6.18 through
//! today's balancer in `fair_lb` (`detach_tasks`). The pick, placement and preemption rules it
//! uses are the other parts'; must never depend on another design or on a host.

use super::{Eevdf, EevdfRq, EevdfTask, T};
use crate::class::{Busiest, CpuIdle, CpuView, Ctx, PullOutcome, Rq, WakeKind};
use crate::policy::fair_lb::{self, Migration};
use crate::policy::sched_domains::{self, IdleSiblings, PullBudget};
use crate::policy::weight::NICE_0_LOAD;
use crate::task::{CpuId, SchedPolicy, TaskId, TaskView};

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

impl Eevdf {
    /// `select_task_rq_fair`.
    pub(super) fn select_task_rq_fair(
        &self,
        tasks: &TaskView<'_, EevdfTask>,
        view: &CpuView,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        if self.is_618() {
            // task_h_load(p): the wakee's own signal, as of its last update (its dequeue).
            let w = self.task_h_load(&tasks[t].data);
            // select_task_rq_fair: record_wakee on the waker (the task current where the
            // wakeup runs), then wake_wide decides whether an affine wakeup is tried.
            let mut wide = false;
            let mut waker_load = NICE_0_LOAD;
            if let WakeKind::Wakeup { .. } = kind {
                if let Some(waker) = view.cpu(waker_cpu).curr.filter(|&c| c != t) {
                    waker_load = self.task_h_load(&tasks[waker].data);
                    let wf = &tasks[waker].data.wakee;
                    wf.record(t, view.now);
                    // sd_llc_size, kept per LLC where SIS_UTIL made the LLCs' shared state;
                    // counted from the topology otherwise (a hybrid machine, SIS_UTIL off).
                    let llc = match self.llc_shared.get() {
                        Some(shared) => shared.llc_size(waker_cpu),
                        None => {
                            let topo = view.topology;
                            (0..view.ncpus())
                                .filter(|&c| topo.cache[c] == topo.cache[waker_cpu])
                                .count() as u32
                        }
                    };
                    wide = wake_wide(wf.flips(), tasks[t].data.wakee.flips(), llc);
                }
            }
            // A hybrid machine: a pushed task's destination, or the energy-aware wakeup.
            let p = &tasks[t];
            let prev = if p.cpus_allowed.contains(p.cpu) && p.cpu < view.ncpus() {
                p.cpu
            } else {
                p.cpus_allowed.iter(view.ncpus()).next().unwrap_or(0)
            };
            if let Some(c) = self.hy_select(tasks, view, t, prev, kind) {
                return c;
            }
            if kind == WakeKind::Fork {
                // The slow path: sched_balance_find_dst_cpu from the parent's CPU.
                if let Some(d) = self.dst_domains.get() {
                    let n = view.ncpus();
                    let allowed = |c: CpuId| c < n && p.cpus_allowed.contains(c);
                    let this = if waker_cpu < n { waker_cpu } else { prev };
                    return d.find_dst_cpu(view, &allowed, this);
                }
            }
            let fit = Self::fit_check(&tasks[t], view.topology);
            return sched_domains::select_cpu_v6_18(
                tasks,
                view,
                t,
                waker_cpu,
                kind,
                w,
                waker_load,
                wide,
                fit,
                self.llc_shared.get().map(|a| &**a),
            );
        }
        let w = tasks[t].data.load.weight;
        sched_domains::select_cpu(tasks, view, t, waker_cpu, kind, w, IdleSiblings::Llc)
    }

    /// How often the core runs this CPU's balancer (`SchedClass::balance_interval_ticks`).
    pub(super) fn next_balance_ticks(&self, idle: bool, hz: u32) -> Option<u64> {
        if self.is_618() {
            // The soonest any 6.18 level can be due: the smallest span (2 CPUs) in ms,
            // x busy_factor 16 on a busy CPU; each level keeps its own interval.
            let ms: u64 = if idle { 2 } else { 2 * 16 };
            return Some((ms * hz as u64 / 1000).max(1));
        }
        sched_domains::balance_interval_ticks(idle, hz)
    }

    pub(super) fn find_busiest_fair(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        this: &mut Rq<EevdfRq>,
        this_cpu: CpuId,
        view: &CpuView,
        kind: CpuIdle,
    ) -> Option<Busiest> {
        if self.is_618() {
            let sched_idle = crate::class::SchedClass::sched_idle_cpu(self, this, this_cpu);
            return this
                .class
                .lb
                .find_busiest(ctx.ops, ctx.now, this_cpu, view, kind, sched_idle);
        }
        this.class
            .domains
            .find_busiest(ctx.ops, ctx.now, this_cpu, view, kind)
    }

    /// `load_balance`'s pull: 6.18's `detach_tasks`, or 6.6's through `PullBudget::drain`.
    pub(super) fn move_tasks_fair(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        this: &mut Rq<EevdfRq>,
        this_cpu: CpuId,
        src: &mut Rq<EevdfRq>,
        kind: CpuIdle,
        imbalance: usize,
    ) -> PullOutcome {
        if self.is_618() {
            return self.detach_tasks(ctx, this, this_cpu, src, kind);
        }
        let now = ctx.now;
        let mut out = PullBudget::new(imbalance).drain(
            ctx,
            src,
            this_cpu,
            kind.is_idle(),
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
                self.dequeue_entity(ctx, src, t);
                ctx.tasks[t].cpu = this_cpu;
                self.update_curr(ctx, &mut this.class);
                self.place_entity(&mut ctx.tasks, &this.class, t, false);
                self.enqueue_entity(ctx, this, t);
                false
            },
        );
        out.resched = out.moved > 0 && this.curr().is_some();
        out
    }

    /// 6.18's `detach_tasks` + `can_migrate_task` + `attach_tasks`, moving what the pending
    /// `find_busiest` decided (`fair_lb`'s module doc has the rules).
    pub(super) fn detach_tasks(
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
            Migration::Misfit => (1, false),
        };
        let misfit = m == Migration::Misfit;
        let src_cap = src.class.hy.as_ref().map_or(fair_lb::CAPACITY, |h| h.cap);
        let now = ctx.now;
        // The kernel's `src_rq->nr_running`: its delayed tasks are still counted.
        let src_nr_running = |src: &Rq<EevdfRq>| src.nr_running + src.class.nr_delayed;
        // "Source run queue has been emptied by another CPU": nothing is looked at, and the
        // pass still ends as one that moved nothing (`balanced` below).
        let loop_max = if src_nr_running(src) <= 1 {
            0
        } else {
            fair_lb::NR_MIGRATE.min(src.class.nr_queued)
        };
        let mut looked = 0;
        while left > 0 && looked < loop_max {
            // "We don't want to steal all, otherwise we may be treated likewise".
            if kind.is_idle() && src_nr_running(src) <= 1 {
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
            // migrate_load: "load = max_t(unsigned long, task_h_load(p), 1)".
            let weight = self.task_h_load(se).max(1);
            // A delayed task is asleep as far as the hosts know, and they move runnable
            // tasks only: it is never moved (the kernel moves one when migrating load).
            let ok = !se.sched_delayed
                && !ineligible
                && task.cpus_allowed.contains(this_cpu)
                && src.class.curr != Some(p)
                && !hot
                && (!by_load || (weight >> failed.min(63)) <= left)
                // migrate_misfit: "This is not a misfit task" when it fits the source.
                && !(misfit && Self::task_fits(task, src_cap));
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
            self.dequeue_entity(ctx, src, p);
            Self::detach_load_avg(ctx, &mut src.class, p);
            Self::update_min_vruntime(&ctx.tasks, &mut src.class);
            ctx.tasks[p].cpu = this_cpu;
            self.update_curr(ctx, &mut this.class);
            self.place_entity(&mut ctx.tasks, &this.class, p, false);
            self.enqueue_entity(ctx, this, p);
            // ENQUEUE_MIGRATED: "se->exec_start = 0", so a task just moved is never hot.
            ctx.tasks[p].data.exec_start = 0;
            out.moved += 1;
            // attach_task: wakeup_preempt(rq, p, 0) decides whether this CPU's runner yields
            // (a new-idle pass picks next anyway).
            if kind != CpuIdle::NewlyIdle && self.check_preempt_wakeup_fair(ctx, this, this_cpu, p)
            {
                out.resched = true;
            }
            // CONFIG_PREEMPTION: a new-idle balance takes one task and runs it.
            if kind == CpuIdle::NewlyIdle {
                break;
            }
        }
        // need_active_balance: nothing moved, and a misfit or asym-packing pass asks the
        // source's stopper to push its running task here.
        if out.moved == 0 && this.class.lb.active_ok && src.class.curr.is_some() {
            self.request_active(src.class.cpu, this_cpu);
        }
        this.class.lb.balanced(out.moved, kind);
        out
    }

    pub(super) fn task_hot(&self, p: &T, now: u64) -> bool {
        now.saturating_sub(p.data.exec_start) < self.migration_cost
    }
}

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
//! SCHED_IDLE tasks (6.18's class has it: `SchedClass::sched_idle_cpu`), no per-task slice (`sched_setattr`), no DELAY_DEQUEUE (6.12).
//! SCHED_IDLE tasks weigh 3 and follow `check_preempt_wakeup_fair`'s two rules.
//!
//! The class in parts, as `fair.c`'s concerns split (each part's header says what it must never
//! depend on; none names another design, the stacked RT class, a host, the core or the
//! registry):
//! - `mod.rs` (this file): the per-task and per-runqueue state, and the `SchedClass` hooks;
//! - `features`: the eras and their `sched_features` (6.6, 6.18);
//! - `entity`: V and eligibility, `update_curr`, slice protection, `pick_eevdf`, and
//!   the tree and its sums (`__enqueue_entity`, `account_entity_enqueue`);
//! - `place`: placement and lag (`place_entity`, `update_entity_lag`, DELAY_DEQUEUE's
//!   requeue and finish, reweighting a dequeued entity);
//! - `preempt`: wakeup preemption (`check_preempt_wakeup_fair`);
//! - `smp`: wakeup CPU selection (`select_task_rq_fair`, `wake_wide`) and balancing, 6.6's
//!   through `sched_domains`, 6.18's through `fair_lb` (`detach_tasks`).

use super::fair_lb;
use super::pelt::Pelt;
use super::sched_domains::SchedDomains;
use super::weight::{LoadWeight, IDLEPRIO_LATER};
use crate::class::*;
use crate::ds::list::{Linked, TaskList};
use crate::ds::rbtree::{Augment, MinWrapping, RbEntry, RbNode, RbTree};
use crate::ds::work::Work;
use crate::machine::Topology;
use crate::task::{CpuId, Task, TaskId, TaskView};
use std::sync::Arc;

mod entity;
mod features;
mod hybrid;
mod load_avg;
mod place;
mod preempt;
mod smp;

use features::fair_server_suffix;
pub use features::{EevdfEra, FairServerOpts, Features};
pub use load_avg::RemovedLoad;
use place::reweight_dequeued;
pub use smp::{wake_wide, WakeeFlips};

/// Per-task state (`struct sched_entity` of 6.6).
#[derive(Clone, Debug, Default)]
// `repr(C)`: the tree node and the keys the tree walk compares share the task's first line of
// policy data (see `Task`), so a walk costs one line per level.
#[repr(C)]
pub struct EevdfTask {
    node: RbNode<EevdfAug>,
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
    /// Counted in its runqueue's `nr_idle_policy` (SCHED_IDLE when it was queued): what the
    /// dequeue takes back, whatever the policy became meanwhile (a sleeping delayed task's
    /// policy changes before its dequeue is finished).
    pub idle_counted: bool,
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
    /// 6.18: the task's own PELT signal (`se->avg`): how much of the time it was queued, at
    /// its weight. What the balancer and `wake_affine_weight` weigh a task by
    /// (`task_h_load`).
    pub avg: Pelt,
    /// 6.18: the CPU whose runqueue signal holds `avg` (None: attached nowhere yet, or
    /// detached by a migration: the kernel's `se->avg.last_update_time == 0`).
    pub pelt_cpu: Option<CpuId>,
    /// 6.18 on a hybrid machine: the task's utilisation (`se->avg.util_avg`, `hybrid.rs`).
    pub util: Pelt,
}

impl Linked for EevdfTask {
    fn link(&self) -> &crate::task::Link {
        &self.group_node
    }
    fn link_mut(&mut self) -> &mut crate::task::Link {
        &mut self.group_node
    }
}

/// What each node of the deadline tree keeps of its subtree: `min_vruntime_update`'s fields
/// (fair.c; `se->min_vruntime` since 6.6, `se->min_slice` since 6.12 for `cfs_rq_min_slice`,
/// `se->max_slice` for `cfs_rq_max_slice`'s lag limit). 6.6's rules read only the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EevdfAug {
    /// The smallest vruntime (compared by wrapping difference); `u64::MAX` for none.
    pub min_vruntime: u64,
    /// The shortest slice; `u64::MAX` for none.
    pub min_slice: u64,
    /// The longest slice; 0 for none.
    pub max_slice: u64,
}

impl Augment for EevdfAug {
    const NONE: EevdfAug = EevdfAug {
        min_vruntime: u64::MAX,
        min_slice: u64::MAX,
        max_slice: 0,
    };
    #[inline]
    fn combine(self, o: EevdfAug) -> EevdfAug {
        EevdfAug {
            min_vruntime: MinWrapping(self.min_vruntime)
                .combine(MinWrapping(o.min_vruntime))
                .0,
            min_slice: self.min_slice.min(o.min_slice),
            max_slice: self.max_slice.max(o.max_slice),
        }
    }
}

/// The tree: by deadline, each subtree's smallest vruntime and its slices' range kept.
#[derive(Debug)]
pub struct ByDeadline;
impl RbEntry<EevdfTask> for ByDeadline {
    type Aug = EevdfAug;
    fn node(t: &Task<EevdfTask>) -> &RbNode<EevdfAug> {
        &t.data.node
    }
    fn node_mut(t: &mut Task<EevdfTask>) -> &mut RbNode<EevdfAug> {
        &mut t.data.node
    }
    fn key(t: &Task<EevdfTask>) -> u64 {
        t.data.deadline
    }
    fn aug(t: &Task<EevdfTask>) -> EevdfAug {
        EevdfAug {
            min_vruntime: t.data.vruntime,
            min_slice: t.data.slice,
            max_slice: t.data.slice,
        }
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
    /// Of those, delayed (asleep; not counted in the core's `nr_running`, which is
    /// `h_nr_runnable`'s count, but published for the kernel's `rq->nr_running`).
    pub nr_delayed: usize,
    /// Of the entities queued, SCHED_IDLE tasks (`cfs_rq->h_nr_idle`), for `sched_idle_cpu`.
    pub nr_idle_policy: usize,
    /// 6.18: `update_curr` asked to reschedule the running task (TIF_NEED_RESCHED), from a
    /// path whose caller does not hear it (an enqueue); the preemption check reports it.
    pub need_resched: bool,
    pub curr: Option<TaskId>,
    /// PELT average of the runqueue's runnable weight: the load it publishes for balancing.
    pub pelt: Pelt,
    /// 6.18: tasks carry their own signal into and out of `pelt` ([`EevdfTask::avg`]).
    pub entity_pelt: bool,
    /// The CPU of this runqueue (per-CPU layout).
    pub cpu: CpuId,
    /// This CPU's scheduling domains and their balancing state (6.6).
    pub domains: SchedDomains,
    /// 6.18: the domains of today's balancer (`fair_lb`) and `rq->cfs_tasks`.
    pub lb: fair_lb::Domains,
    pub cfs_tasks: TaskList,
    /// 6.18 on a hybrid machine: capacity, utilisation, misfit load (`None` elsewhere).
    pub hy: Option<hybrid::HybridRq>,
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
    /// 6.18: each runqueue's `cfs_rq->removed`, written by wakeups that move a task away
    /// without that runqueue's lock.
    pub removed: RemovedLoad,
    /// 6.18 on a hybrid machine: what every CPU publishes for the capacity rules.
    pub asym: FirstRqShared<crate::policy::asym::Published>,
    /// 6.18, SIS_UTIL: each LLC's `nr_idle_scan` (`fair_lb::LlcShared`; made only on a
    /// machine of one kind of CPU, with SIS_UTIL on).
    pub llc_shared: FirstRqShared<fair_lb::LlcShared>,
    /// 6.18: every CPU's domains for the fork walk (`fair_lb::DstDomains`).
    pub dst_domains: FirstRqShared<fair_lb::DstDomains>,
    pub era: EevdfEra,
    pub features: Features,
    /// 6.12+: each CPU's fair server (`fair_server_init`, `sched_init_dl_servers`; run by the
    /// core's deadline class, `policy::deadline::server`); `None` for 6.6, which had RT
    /// throttling instead (not modelled).
    pub fair_server: Option<crate::ds::dl_rq::DlServerParams>,
}

type T = Task<EevdfTask>;

/// State the class's runqueues share, made at the first runqueue (`new_rq`); a copy of the
/// class starts empty, as [`RemovedLoad`] does, so that two runs never share it.
#[derive(Debug)]
pub struct FirstRqShared<S>(std::sync::OnceLock<Arc<S>>);

impl<S> Default for FirstRqShared<S> {
    fn default() -> Self {
        FirstRqShared(std::sync::OnceLock::new())
    }
}

impl<S> Clone for FirstRqShared<S> {
    fn clone(&self) -> Self {
        FirstRqShared::default()
    }
}

impl<S> FirstRqShared<S> {
    /// The shared state, once a runqueue made it.
    pub fn get(&self) -> Option<&Arc<S>> {
        self.0.get()
    }

    /// The shared state, made by `make` if no runqueue made it yet.
    pub fn get_or_init(&self, make: impl FnOnce() -> S) -> &Arc<S> {
        self.0.get_or_init(|| Arc::new(make()))
    }
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

    /// 6.18 with a fair server other than the kernel's default says so
    /// (`eevdf:era=6.18,fair_server_runtime=20000000`).
    fn label(&self) -> String {
        match (self.era, self.fair_server) {
            (EevdfEra::V6_18, fs) => {
                let suffix = fair_server_suffix(fs);
                if suffix.is_empty() {
                    self.name().to_string()
                } else {
                    format!("{},{suffix}", self.name())
                }
            }
            _ => self.name().to_string(),
        }
    }

    fn fair_server(&self) -> Option<crate::ds::dl_rq::DlServerParams> {
        self.fair_server
    }

    fn pick_rule(&self) -> &'static str {
        "EEVDF: among the eligible tasks (vruntime at or before V, the load-weighted average), \
         the earliest virtual deadline (pick_eevdf); RUN_TO_PARITY lets the current task run on \
         while it is protected (to its deadline in 6.6, to vprot in 6.18)"
    }

    fn describe_task(&self, _rq: &Rq<EevdfRq>, task: &Task<EevdfTask>) -> String {
        let d = &task.data;
        format!(
            "vruntime {}, deadline {}, slice {} ns{}",
            d.vruntime,
            d.deadline,
            d.slice,
            if d.sched_delayed { ", delayed" } else { "" }
        )
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
        self.requeue_delayed_entity(ctx, rq, t)
    }

    /// `sched_delayed`: set when `dequeue` kept the sleeping task queued, cleared by
    /// `finish_delayed_dequeue` (the pick's DEQUEUE_DELAYED, a class change) and by
    /// `requeue_delayed_entity`, as `p->on_rq` is (`__block_task`, `ttwu_runnable`).
    fn queued_asleep(&self, task: &Task<EevdfTask>) -> bool {
        task.data.sched_delayed
    }

    fn new_rq(&self, domain: usize, topology: &Topology) -> EevdfRq {
        // Per-CPU layout: the lock domain is the CPU.
        if self.is_618() {
            self.removed.size(topology.ncpus);
            let hy = self.hybrid_rq(domain, topology);
            let mut lb = fair_lb::Domains::build(domain, topology, self.migration_cost);
            self.dst_domains
                .get_or_init(|| fair_lb::DstDomains::new(topology));
            if hy.is_some() {
                lb.asym = self.published();
            } else if self.features.sis_util {
                lb.llc_shared = Some(
                    self.llc_shared
                        .get_or_init(|| fair_lb::LlcShared::new(topology))
                        .clone(),
                );
            }
            return EevdfRq {
                lb,
                hy,
                entity_pelt: true,
                cpu: domain,
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
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        // dup_task_struct copies the whole task_struct, and neither sched_fork nor
        // __sched_fork resets `wakee_flips`, `wakee_flip_decay_ts` or `last_wakee`: a child
        // starts with its parent's record_wakee state (6.18's wake_wide reads it).
        let inherited = parent
            .filter(|_| self.is_618())
            .map(|p| ctx.tasks[p].data.wakee.clone());
        let c = &mut ctx.tasks[child];
        let (nice, policy, custom) = (c.nice, c.policy, c.slice_ns);
        c.data = EevdfTask {
            load: LoadWeight::of_task(nice, policy, IDLEPRIO_LATER),
            slice: self.base_slice,
            ..EevdfTask::default()
        };
        if self.is_618() {
            if let Some(w) = inherited {
                c.data.wakee = w;
            }
            // init_entity_runnable_average: a new task's signal starts at its weight.
            c.data.avg = Pelt::new_task(c.data.load.weight);
            // __setparam_fair: sched_attr.sched_runtime, clamped to 0.1..100 ms.
            if let Some(ns) = custom {
                c.data.custom_slice = true;
                c.data.slice = ns.get().clamp(100_000, 100_000_000);
            }
            Self::hy_new_task(ctx, &rq.class, child);
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
        let initial = kind == EnqueueKind::New;
        ctx.tasks[t].data.wf_fork = initial && self.is_618();
        if is_curr {
            self.place_entity(&mut ctx.tasks, &rq.class, t, initial);
        }
        self.update_curr(ctx, &mut rq.class);
        if !is_curr {
            self.place_entity(&mut ctx.tasks, &rq.class, t, initial);
        }
        self.enqueue_entity(ctx, rq, t);
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
            self.update_rq_load_avg(ctx, &mut rq.class);
            Self::update_se_load_avg(ctx, &rq.class, t);
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
        self.dequeue_entity(ctx, rq, t);
        if matches!(kind, DequeueKind::Migrate | DequeueKind::Exit) {
            // DO_DETACH on a migration; `task_dead_fair` → `remove_entity_load_avg` at exit.
            Self::detach_load_avg(ctx, &mut rq.class, t);
        }
        Self::update_min_vruntime(&ctx.tasks, &mut rq.class);
    }

    fn put_prev(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, _cpu: CpuId, prev: TaskId) {
        if rq.class.curr != Some(prev) {
            return;
        }
        if rq.class.hy.is_some() {
            // Its running time counts into both signals before it stops being current.
            self.hy_rq_update(ctx, &mut rq.class);
            Self::hy_se_update(ctx, &rq.class, prev);
        }
        if ctx.tasks[prev].data.on_rq {
            self.update_curr(ctx, &mut rq.class);
            // put_prev_entity: update_load_avg(cfs_rq, prev, 0).
            Self::update_se_load_avg(ctx, &rq.class, prev);
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

    /// `pick_task_fair` on a runqueue with no runnable task: each pick is a delayed task,
    /// which `pick_next_entity` dequeues (DEQUEUE_DELAYED) before it picks again, until
    /// `nr_queued` is 0; only then does `pick_next_task_fair` balance new-idle (fair.c of
    /// 6.18.35: `pick_next_entity` 5582, `pick_task_fair` 8996, `pick_next_task_fair` 9033). A delayed prev, still current, is among them.
    fn drain_before_newidle(&self, ctx: &mut Ctx<EevdfTask>, rq: &mut Rq<EevdfRq>, _cpu: CpuId) {
        while rq.class.nr_delayed > 0 && rq.nr_running == 0 {
            let Some(t) = self.pick_eevdf(&ctx.tasks, &rq.class) else {
                break;
            };
            if !ctx.tasks[t].data.sched_delayed {
                break;
            }
            self.finish_delayed_dequeue(ctx, rq, t);
        }
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
            let Some(next) = self.pick_eevdf(&ctx.tasks, &rq.class) else {
                // pick_next_task_fair's idle path: update_misfit_status(NULL, rq).
                self.update_misfit_status(&ctx.tasks, &mut rq.class, None);
                self.drop_stale_push(&rq.class);
                return None;
            };
            if ctx.tasks[next].data.sched_delayed {
                // pick_next_entity: a delayed task picked is dequeued now; pick again.
                self.finish_delayed_dequeue(ctx, rq, next);
                continue;
            }
            break next;
        };
        // set_next_entity: out of the tree while it runs.
        if rq.class.curr != Some(next) {
            if rq.class.hy.is_some() {
                // set_next_entity: update_load_avg (it waited until now).
                self.hy_rq_update(ctx, &mut rq.class);
                Self::hy_se_update(ctx, &rq.class, next);
            }
            Self::tree_remove(ctx, &mut rq.class, next);
            rq.class.curr = Some(next);
        }
        self.update_misfit_status(&ctx.tasks, &mut rq.class, Some(next));
        self.drop_stale_push(&rq.class);
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
        curr: TaskId,
    ) -> bool {
        self.update_rq_load_avg(ctx, &mut rq.class);
        // entity_tick: update_load_avg(cfs_rq, curr, UPDATE_TG).
        if rq.class.curr == Some(curr) {
            Self::update_se_load_avg(ctx, &rq.class, curr);
        }
        let resched = self.update_curr(ctx, &mut rq.class);
        // task_tick_fair: update_misfit_status(curr, rq); a pending stopper request preempts.
        self.update_misfit_status(&ctx.tasks, &mut rq.class, Some(curr));
        resched || self.push_requested(&rq.class)
    }

    fn push_running(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        rq: &mut Rq<EevdfRq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        self.hy_push_running(&ctx.tasks, &rq.class, curr)
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
        self.check_preempt_wakeup_fair(ctx, rq, cpu, woken)
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
        // select_task_rq (kernel/sched/core.c, 6.6 and 6.18): a task allowed on one CPU is not
        // handed to its class (`p->nr_cpus_allowed > 1` fails): it goes to that CPU
        // (`cpumask_any`), and select_task_rq_fair's work and side effects (record_wakee,
        // wake_wide) do not happen for it.
        if let Some(only) = tasks[t].cpus_allowed.only_cpu(view.ncpus()) {
            return only;
        }
        self.select_task_rq_fair(tasks, view, t, waker_cpu, kind)
    }

    /// Asleep but still queued (DELAY_DEQUEUE): out of the core's count, in the kernel's
    /// `rq->nr_running`, which the 6.18 balancer reads.
    fn nr_delayed(&self, rq: &Rq<EevdfRq>, _cpu: CpuId) -> usize {
        rq.class.nr_delayed
    }

    /// 6.18's `sched_idle_cpu` (`sched_idle_rq`, fair.c: `rq->nr_running ==
    /// rq->cfs.h_nr_idle`, and not 0), which `select_idle_sibling` takes for an idle CPU and
    /// `sched_balance_domains` for a CPU that is not busy (its balance interval is not
    /// stretched by `busy_factor`). The 6.6 era's balancer model leaves it out (below).
    fn sched_idle_cpu(&self, rq: &Rq<EevdfRq>, _cpu: CpuId) -> bool {
        let queued = rq.nr_running + rq.class.nr_delayed;
        self.is_618() && queued > 0 && queued == rq.class.nr_idle_policy
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
        self.next_balance_ticks(idle, hz)
    }

    fn find_busiest(
        &self,
        ctx: &mut Ctx<EevdfTask>,
        this: &mut Rq<EevdfRq>,
        this_cpu: CpuId,
        view: &CpuView,
        kind: CpuIdle,
    ) -> Option<Busiest> {
        self.find_busiest_fair(ctx, this, this_cpu, view, kind)
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
        self.move_tasks_fair(ctx, this, this_cpu, src, kind, imbalance)
    }
}

#[cfg(test)]
mod tests;

//! `bfs`: Con Kolivas' Brain Fuck Scheduler, v0.404 (Linux 2.6.38, April 2011;
//! designs.md §6, tag BFS404, and the author's blog of September 2010 to April 2011).
//!
//! One global runqueue (`grq`) under one lock: 103 FIFO lists (RT 0..99, `ISO_PRIO` 100,
//! `NORMAL_PRIO` 101, `IDLE_PRIO` 102) with a bitmap. All nice levels share the one NORMAL
//! list; nice acts only through a *virtual deadline*, `niffies + prio_ratios[nice] *
//! rr_interval`, given when a task's slice (`rr_interval`, 6 ms) runs out and kept across
//! sleeps. A CPU picks by `earliest_deadline_task`: the first allowed task of the best RT
//! list, else the earliest deadline among the best non-empty list (a linear scan, O(n) in
//! queued tasks as the design is). Running tasks are off the lists, so at most (runnable −
//! CPUs) tasks are scanned. There is no balancer: the global queue is the balance.
//!
//! 0.372–0.376 added the *sticky* flag: a task descheduled while still runnable is softly
//! affined to its CPU; another CPU skips it when that CPU is throttled by cpufreq
//! (`cpu_scaling`, told by the host's governor through [`SchedClass::cpu_scaling`]) and
//! otherwise sees its deadline pushed back by the longest deadline offset (nice 19's). Waking
//! tasks go to the best idle CPU by a locality ranking (SMT sibling, shared cache, node), or
//! preempt the CPU running the worst task (`try_preempt`).
//!
//! Mechanisms and where they come from (designs.md §6):
//! - `prio_ratios` (+10% per nice level from 128), `prio_deadline_diff` with BFS's shift
//!   arithmetic (`MS_TO_NS(1)` as `1 << 20`, `NS_TO_US` as `>> 10`, `MS_TO_US` as `<< 10`),
//!   `time_slice_expired`, `check_deadline` (SCHED_BATCH always expires): §6.2.
//! - `earliest_deadline_task` with affinity and the sticky bias/skip: §6.3.
//! - `schedule` (dither, rerun of prev when nothing is queued, `swap_sticky`, unstick before an
//!   RT task), `can_preempt`, `try_preempt`, `best_mask_cpu`'s ranking bits, fork (slice
//!   halved, child-runs-first without CLONE_VM), `sched_yield`: §6.4.
//! - The tick (FIFO exempt, expiry below `RESCHED_US` or, with dither, at or below half a
//!   jiffy), SCHED_ISO's rolling window (`ISO_PERIOD = 5*HZ*noc + 1`, `iso_cpu` 70%) with its
//!   refractory hysteresis (115/128), IDLEPRIO: §6.5.
//!
//! Simplifications, all stated: `niffies` is the host clock (BFS builds it from per-CPU clock
//! deltas, clamped by jiffies; in one simulated clock they agree); the tick runs under the
//! runqueue lock the host gives every hook (BFS's tick takes `grq.lock` only to requeue and
//! the ISO counters under their own `iso_lock`); `idleprio_suitable` is always true (no
//! signals or freezing to model); priority inheritance is not modelled; unprivileged RT
//! requests are not turned into ISO (every simulated task may use RT). `bfs:sticky=off`
//! removes the sticky flag and its bias — the behaviour of 0.363's pick *without* its
//! `cache_distance` bias, which the reference does not document and which is not modelled.
//!
//! The class in two parts, as the design's concerns split:
//! - `mod.rs` (this file): the global queue and its deadlines (`prio_ratios`,
//!   `prio_deadline_diff`, `time_slice_expired`, enqueue and dequeue on `grq`), the tunables,
//!   the `SchedClass` hooks and SCHED_ISO's window;
//! - `select`: where tasks and CPUs meet: `earliest_deadline_task` with the sticky bias and
//!   skip, `swap_sticky`, `can_preempt`, and the waking task's CPU (`resched_best_idle` through
//!   `best_mask_cpu`'s locality ranking, else `try_preempt`'s victim).
//!
//! Must never depend on another design, the stacked RT class, a host, the core or the
//! registry (ARCHITECTURE.md); neither part depends on `sched_domains` (BFS has no balancer).

use crate::class::*;
use crate::ds::list::{Link, Linked};
use crate::ds::prio_array::PrioArray;
use crate::ds::work::{OpCounter, Work};
use crate::machine::Topology;
use crate::task::{CpuId, SchedPolicy, TaskId, TaskState, TaskView};
use std::sync::atomic::{AtomicBool, Ordering};

mod select;

pub use select::{
    best_mask_cpu, busy_groups, cpu_locality, CPUIDLE_CACHE_BUSY, CPUIDLE_DIFF_CORE,
    CPUIDLE_DIFF_CPU, CPUIDLE_DIFF_NODE, CPUIDLE_DIFF_THREAD, CPUIDLE_THREAD_BUSY,
};

/// `ISO_PRIO`, `NORMAL_PRIO`, `IDLE_PRIO`, `PRIO_LIMIT` (`MAX_RT_PRIO` + 0..3).
pub const ISO_PRIO: usize = 100;
pub const NORMAL_PRIO: usize = 101;
pub const IDLE_PRIO: usize = 102;
pub const PRIO_LIMIT: usize = 103;
/// `RESCHED_US`: a slice with less than this left is expired rather than run.
pub const RESCHED_US: i64 = 100;
/// The default `rr_interval`, ms (fixed since 0.372; before, it scaled with CPUs).
pub const RR_INTERVAL_MS: u32 = 6;
/// The default `iso_cpu`, percent of one CPU's ticks (over all CPUs) ISO tasks may take.
pub const ISO_CPU: u32 = 70;

/// `prio_ratios[40]`: 128, then +10% per nice level (integer arithmetic, as `sched_init`).
pub const PRIO_RATIOS: [u64; 40] = prio_ratios();

const fn prio_ratios() -> [u64; 40] {
    let mut r = [0u64; 40];
    r[0] = 128;
    let mut i = 1;
    while i < 40 {
        r[i] = r[i - 1] * 11 / 10;
        i += 1;
    }
    r
}

/// `MS_TO_NS`/`MS_TO_US`/`NS_TO_US` as BFS writes them: shifts standing in for 10^6 and 10^3.
#[inline]
fn ms_to_us(ms: u64) -> i64 {
    (ms << 10) as i64
}
#[inline]
fn ns_to_us(ns: u64) -> i64 {
    (ns >> 10) as i64
}

/// The tunables of the experiments: the two sysctls BFS has, and the sticky flag on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BfsTunables {
    /// The sticky flag of 0.372+ (off: the pick of 0.363 without its cache-distance bias).
    pub sticky: bool,
    /// `/proc/sys/kernel/rr_interval`, ms (1..=1000).
    pub rr_interval_ms: u32,
    /// `/proc/sys/kernel/iso_cpu`, percent (0..=100).
    pub iso_cpu: u32,
}

impl BfsTunables {
    pub const DEFAULT: BfsTunables = BfsTunables {
        sticky: true,
        rr_interval_ms: RR_INTERVAL_MS,
        iso_cpu: ISO_CPU,
    };

    /// Parses `sticky=off,rr_interval=3,iso_cpu=50` (any subset, comma-separated).
    pub fn parse(spec: &str) -> Result<BfsTunables, String> {
        let mut t = BfsTunables::DEFAULT;
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| format!("bfs option '{item}': expected key=value"))?;
            let num = |lo: u32, hi: u32| {
                v.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (lo..=hi).contains(n))
                    .ok_or_else(|| format!("bfs option {k}: expected {lo}..={hi}, got '{v}'"))
            };
            match k.trim() {
                "sticky" => {
                    t.sticky = match v.trim() {
                        "on" | "1" | "true" => true,
                        "off" | "0" | "false" => false,
                        _ => return Err(format!("bfs option sticky: expected on or off, got '{v}'")),
                    }
                }
                "rr_interval" => t.rr_interval_ms = num(1, 1000)?,
                "iso_cpu" => t.iso_cpu = num(0, 100)?,
                other => {
                    return Err(format!(
                        "unknown bfs option '{other}' (known: sticky=on|off, rr_interval=1..1000 ms, iso_cpu=0..100 %)"
                    ))
                }
            }
        }
        Ok(t)
    }

    /// The options that differ from 0.404's defaults, as `parse` reads them (empty if none).
    pub fn suffix(&self) -> String {
        let mut parts = Vec::new();
        if !self.sticky {
            parts.push("sticky=off".to_string());
        }
        if self.rr_interval_ms != RR_INTERVAL_MS {
            parts.push(format!("rr_interval={}", self.rr_interval_ms));
        }
        if self.iso_cpu != ISO_CPU {
            parts.push(format!("iso_cpu={}", self.iso_cpu));
        }
        parts.join(",")
    }
}

impl Default for BfsTunables {
    fn default() -> Self {
        BfsTunables::DEFAULT
    }
}

/// Per-task state of BFS (the fields 0.404 adds to `task_struct`).
#[derive(Clone, Debug, Default)]
pub struct BfsTask {
    /// `p->prio`: the list it is (or would be) queued on; set by `enqueue_task`.
    pub prio: u8,
    /// `p->deadline`, in niffies (ns).
    pub deadline: u64,
    /// `p->time_slice`, µs (BFS's µs: ns >> 10). May go negative while it runs.
    pub time_slice: i64,
    /// `p->sticky`: soft affinity to the CPU it last ran on.
    pub sticky: bool,
    /// On a `grq.queue` list (queued and not running: counted in `qnr`).
    pub queued: bool,
    /// Where its running time was last charged to its slice (`update_cpu_clock`).
    run_start_ns: u64,
    /// A child just forked into a new address space, to run before its parent.
    fork_runs_first: bool,
    run_list: Link,
}

impl Linked for BfsTask {
    fn link(&self) -> &Link {
        &self.run_list
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.run_list
    }
}

/// `grq` plus the per-CPU fields BFS keeps on each `rq` (one lock domain covers them all).
#[derive(Debug)]
pub struct BfsRq {
    /// `grq.queue[103]` and `grq.prio_bitmap` (the 140-level array with 103 levels used).
    pub queue: PrioArray,
    /// `grq.qnr`: tasks queued and not running.
    pub qnr: usize,
    /// `grq.iso_ticks`, `grq.iso_refractory`.
    pub iso_ticks: u64,
    pub iso_refractory: bool,
    /// `rq->sticky_task` of each CPU.
    pub sticky_task: Vec<Option<TaskId>>,
    /// `rq->dither` of each CPU: the task started in the first half of a jiffy.
    pub dither: Vec<bool>,
    /// `rq->last_tick` of each CPU.
    pub last_tick: Vec<u64>,
}

/// The class: its tunables, the topology's locality table, and the per-CPU `scaling` flags
/// the governors set without any lock (`cpu_scaling`/`cpu_nonscaling`).
pub struct Bfs {
    pub tunables: BfsTunables,
    label: String,
    scaling: Box<[AtomicBool]>,
}

impl Bfs {
    /// The class for a machine of `ncpus` CPUs (the locality of CPUs is read from the
    /// topology each wakeup is given, as BFS reads `rq->cpu_locality`).
    pub fn new(ncpus: usize, tunables: BfsTunables) -> Bfs {
        let suffix = tunables.suffix();
        Bfs {
            tunables,
            label: if suffix.is_empty() {
                "bfs".to_string()
            } else {
                format!("bfs:{suffix}")
            },
            scaling: (0..ncpus.max(1)).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// `prio_deadline_diff(user_prio)`: `prio_ratios[user_prio] * rr_interval * (2^20/128)` ns.
    pub fn prio_deadline_diff(&self, user_prio: usize) -> u64 {
        PRIO_RATIOS[user_prio] * self.tunables.rr_interval_ms as u64 * ((1 << 20) / 128)
    }

    /// `longest_deadline_diff()`: nice 19's offset, the sticky bias.
    pub fn longest_deadline_diff(&self) -> u64 {
        self.prio_deadline_diff(39)
    }

    /// `timeslice()`: `rr_interval` in BFS µs.
    pub fn timeslice(&self) -> i64 {
        ms_to_us(self.tunables.rr_interval_ms as u64)
    }

    /// `ISO_PERIOD`: five seconds of ticks on every CPU, plus one.
    pub fn iso_period(hz: u32, ncpus: usize) -> u64 {
        5 * hz as u64 * ncpus as u64 + 1
    }

    /// `time_slice_expired(p)`: a fresh slice and a deadline `prio_deadline_diff` from now.
    fn time_slice_expired(&self, p: &mut crate::task::Task<BfsTask>, now: u64) {
        p.data.time_slice = self.timeslice();
        p.data.deadline = now + self.prio_deadline_diff(user_prio(p.nice));
    }

    /// `update_cpu_clock`: the time `p` ran since last charged comes off its slice.
    fn account(&self, p: &mut crate::task::Task<BfsTask>, now: u64) {
        let ran = now.saturating_sub(p.data.run_start_ns);
        p.data.time_slice -= ns_to_us(ran);
        p.data.run_start_ns = now;
    }

    /// `enqueue_task`: the list by policy (ISO demoted while refractory), at its tail.
    fn enqueue_task(&self, ctx: &mut Ctx<BfsTask>, rq: &mut Rq<BfsRq>, t: TaskId) {
        let p = &ctx.tasks[t];
        let prio = match p.policy {
            SchedPolicy::Fifo | SchedPolicy::Rr => 99 - p.rt_priority.min(99) as usize,
            SchedPolicy::Iso if !rq.iso_refractory => ISO_PRIO,
            SchedPolicy::Idle => IDLE_PRIO,
            _ => NORMAL_PRIO,
        };
        ctx.tasks[t].data.prio = prio as u8;
        ctx.tasks[t].data.queued = true;
        rq.class.queue.enqueue(&mut ctx.tasks, t, prio, ctx.ops);
        rq.class.qnr += 1;
    }

    fn dequeue_task(&self, ctx: &mut Ctx<BfsTask>, rq: &mut Rq<BfsRq>, t: TaskId) {
        let prio = ctx.tasks[t].data.prio as usize;
        rq.class.queue.dequeue(&mut ctx.tasks, t, prio, ctx.ops);
        ctx.tasks[t].data.queued = false;
        rq.class.qnr -= 1;
    }
}

/// `TASK_USER_PRIO`: nice −20..19 as 0..39.
#[inline]
pub fn user_prio(nice: i32) -> usize {
    (nice.clamp(-20, 19) + 20) as usize
}

/// The queue priority a running or queued task is judged by (`rq_prio` of a CPU running it).
#[inline]
fn task_prio(p: &crate::task::Task<BfsTask>) -> usize {
    p.data.prio as usize
}

impl SchedClass for Bfs {
    type Rq = BfsRq;
    type TaskData = BfsTask;

    /// RT tasks live on the same 103 lists (0..99).
    const OWNS_RT: bool = true;
    /// `sched_yield` requeues and reschedules with the deadline unchanged: the earliest
    /// deadline may still be the yielder's.
    const YIELD_GIVES_WAY: bool = false;
    /// SCHED_IDLEPRIO is SCHED_IDLE's number.
    const HAS_SCHED_IDLE: bool = true;
    const HAS_SCHED_ISO: bool = true;
    const TICKS_WHEN_IDLE: bool = true;

    fn name(&self) -> &'static str {
        "bfs"
    }

    fn label(&self) -> String {
        self.label.clone()
    }

    fn pick_rule(&self) -> &'static str {
        "BFS 0.404: from the one global queue's best priority level, the earliest virtual \
         deadline, each offset by its cache distance from this CPU (earliest_deadline_task)"
    }

    fn describe_task(&self, _rq: &Rq<BfsRq>, task: &crate::task::Task<BfsTask>) -> String {
        let d = &task.data;
        format!(
            "prio {}, deadline {}{}",
            d.prio,
            d.deadline,
            if d.sticky { ", sticky" } else { "" }
        )
    }

    fn lock_layout(&self) -> LockLayout {
        LockLayout::Global
    }

    fn new_rq(&self, _domain: usize, topology: &Topology) -> BfsRq {
        let n = topology.ncpus;
        BfsRq {
            queue: PrioArray::default(),
            qnr: 0,
            iso_ticks: 0,
            iso_refractory: false,
            sticky_task: vec![None; n],
            dither: vec![false; n],
            last_tick: vec![0; n],
        }
    }

    fn cpu_scaling(&self, cpu: CpuId, scaling: bool) {
        if let Some(f) = self.scaling.get(cpu) {
            f.store(scaling, Ordering::Relaxed);
        }
    }

    fn task_fork(
        &self,
        ctx: &mut Ctx<BfsTask>,
        _rq: &mut Rq<BfsRq>,
        _cpu: CpuId,
        parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        let now = ctx.now;
        let Some(parent) = parent else {
            let c = &mut ctx.tasks[child];
            c.data = BfsTask::default();
            self.time_slice_expired(c, now);
            return false;
        };
        let (pt, ct) = ctx.tasks.pair_mut(parent, child);
        self.account(pt, now);
        ct.data = BfsTask {
            deadline: pt.data.deadline,
            fork_runs_first: ct.mm != pt.mm,
            ..BfsTask::default()
        };
        if pt.data.time_slice >= RESCHED_US * 2 {
            // Share the slice: the total pending in the system does not change.
            pt.data.time_slice /= 2;
            ct.data.time_slice = pt.data.time_slice;
            false
        } else {
            // The parent ran out: it reschedules, the child starts afresh.
            self.time_slice_expired(ct, now);
            true
        }
    }

    fn task_exit(
        &self,
        ctx: &mut Ctx<BfsTask>,
        rq: &mut Rq<BfsRq>,
        child: TaskId,
        _parent: Option<TaskId>,
    ) {
        for s in rq.class.sticky_task.iter_mut() {
            if *s == Some(child) {
                *s = None;
            }
        }
        ctx.tasks[child].data.sticky = false;
    }

    fn enqueue(
        &self,
        ctx: &mut Ctx<BfsTask>,
        rq: &mut Rq<BfsRq>,
        _cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    ) {
        crate::check!(!ctx.tasks[t].data.queued);
        if kind == EnqueueKind::Restore && matches!(ctx.tasks[t].state, TaskState::Running(_)) {
            // An attribute change of the running task (set_user_nice, sched_setscheduler):
            // BFS's `task_queued` is false for it — a running task is on no list — so the
            // change neither dequeued nor requeues it; it is requeued when it stops running.
            return;
        }
        if matches!(kind, EnqueueKind::Wakeup { .. } | EnqueueKind::New) {
            // try_preempt clears the flag: a waking task goes wherever it is best placed.
            ctx.tasks[t].data.sticky = false;
        }
        self.enqueue_task(ctx, rq, t);
    }

    fn dequeue(
        &self,
        ctx: &mut Ctx<BfsTask>,
        rq: &mut Rq<BfsRq>,
        _cpu: CpuId,
        t: TaskId,
        _kind: DequeueKind,
    ) {
        // A running task is on no list (deactivate_task of curr only counts).
        if ctx.tasks[t].data.queued {
            self.dequeue_task(ctx, rq, t);
        }
    }

    fn put_prev(&self, ctx: &mut Ctx<BfsTask>, rq: &mut Rq<BfsRq>, cpu: CpuId, prev: TaskId) {
        let now = ctx.now;
        let p = &mut ctx.tasks[prev];
        self.account(p, now);
        // check_deadline: expire a spent slice, and every SCHED_BATCH descheduling.
        if p.data.time_slice < RESCHED_US || p.policy == SchedPolicy::Batch {
            self.time_slice_expired(p, now);
        }
        if p.state != TaskState::Running(cpu) || p.data.queued {
            return; // deactivated (asleep, exiting, evicted): it is on no list
        }
        if rq.class.qnr == 0 {
            return; // nothing else waits: pick_next runs prev again without a lookup
        }
        if self.tunables.sticky {
            self.swap_sticky(ctx, rq, cpu, prev);
        }
        self.enqueue_task(ctx, rq, prev);
    }

    fn pick_next(&self, ctx: &mut Ctx<BfsTask>, rq: &mut Rq<BfsRq>, cpu: CpuId) -> Option<TaskId> {
        // dither: did this schedule() come within half a jiffy of the last tick?
        let half_jiffy_ns = ctx.tick_ns() / 2;
        rq.class.dither[cpu] = ctx.now.saturating_sub(rq.class.last_tick[cpu]) <= half_jiffy_ns;
        let prev = rq.curr_on(cpu);
        if let Some(p) = prev {
            let pt = &ctx.tasks[p];
            if pt.state == TaskState::Running(cpu) && !pt.data.queued {
                // The rerun of prev: it was the only task wanting a CPU.
                ctx.tasks[p].data.run_start_ns = ctx.now;
                return Some(p);
            }
        }
        if rq.class.qnr == 0 {
            return None;
        }
        let next = self.earliest_deadline_task(ctx, rq, cpu)?;
        if ctx.tasks[next].is_rt() {
            // Tasks are not stuck when an RT task runs next: they may literally get stuck.
            if let Some(p) = prev {
                if rq.class.sticky_task[cpu] == Some(p) {
                    rq.class.sticky_task[cpu] = None;
                }
                ctx.tasks[p].data.sticky = false;
            }
        }
        let d = &mut ctx.tasks[next].data;
        d.run_start_ns = ctx.now;
        d.fork_runs_first = false;
        Some(next)
    }

    fn task_tick(
        &self,
        ctx: &mut Ctx<BfsTask>,
        rq: &mut Rq<BfsRq>,
        cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        let now = ctx.now;
        rq.class.last_tick[cpu] = now;
        let period = Bfs::iso_period(ctx.hz, ctx.ncpus);
        let (policy, prio) = {
            let p = &mut ctx.tasks[curr];
            self.account(p, now);
            (p.policy, task_prio(p))
        };
        // SCHED_ISO accounting: RT ticks count too, so ISO cannot starve true RT tasks.
        if policy.is_rt() || (prio == ISO_PRIO && !rq.class.iso_refractory) {
            self.iso_tick(rq, period);
        } else {
            self.no_iso_tick(rq, period);
        }
        if prio == ISO_PRIO && rq.class.iso_refractory {
            // Running as ISO past its limit: zero the slice so it requeues as NORMAL.
            ctx.tasks[curr].data.time_slice = 0;
        }
        if policy == SchedPolicy::Fifo {
            return false;
        }
        let p = &mut ctx.tasks[curr];
        if rq.class.dither[cpu] {
            let half_jiffy_us = (1_000_000 / ctx.hz as i64) / 2;
            if p.data.time_slice > half_jiffy_us {
                return false;
            }
            p.data.time_slice = 0;
        } else if p.data.time_slice >= RESCHED_US {
            return false;
        }
        true
    }

    fn idle_tick(&self, ctx: &mut Ctx<BfsTask>, rq: &mut Rq<BfsRq>, cpu: CpuId) {
        rq.class.last_tick[cpu] = ctx.now;
        let period = Bfs::iso_period(ctx.hz, ctx.ncpus);
        self.no_iso_tick(rq, period);
    }

    fn yield_task(
        &self,
        _ctx: &mut Ctx<BfsTask>,
        _rq: &mut Rq<BfsRq>,
        _cpu: CpuId,
        _curr: TaskId,
    ) -> bool {
        // requeue_task + schedule(): put_prev requeues it (if anything else waits) with its
        // deadline unchanged.
        true
    }

    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<BfsTask>,
        rq: &mut Rq<BfsRq>,
        cpu: CpuId,
        woken: TaskId,
        sync: bool,
    ) -> bool {
        let Some(curr) = rq.curr_on(cpu) else {
            return false;
        };
        if std::mem::take(&mut ctx.tasks[woken].data.fork_runs_first)
            && ctx.tasks[woken].parent == Some(curr)
        {
            // wake_up_new_task without CLONE_VM and no idle CPU: child runs first (it will
            // likely exec, sparing copy-on-write faults).
            return true;
        }
        let w = &ctx.tasks[woken];
        if sync || w.policy == SchedPolicy::Idle {
            // A sync wakeup preempts only through an idle CPU; IDLEPRIO never preempts.
            return false;
        }
        ctx.ops.scanned += 1;
        let c = &ctx.tasks[curr];
        Bfs::can_preempt(task_prio(w), w.data.deadline, task_prio(c), c.data.deadline)
    }

    fn select_cpu(
        &self,
        tasks: &TaskView<'_, BfsTask>,
        view: &CpuView,
        ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        self.select_task_rq(tasks, view, ops, t, waker_cpu, kind)
    }

    fn nr_running(&self, rq: &Rq<BfsRq>, _cpu: CpuId) -> usize {
        rq.class.qnr + rq.currs().iter().filter(|c| c.is_some()).count()
    }

    fn for_each_queued(
        &self,
        rq: &Rq<BfsRq>,
        tasks: &TaskView<'_, BfsTask>,
        f: &mut dyn FnMut(TaskId),
    ) {
        for &c in rq.currs().iter().flatten() {
            if tasks[c].is_running() && !tasks[c].data.queued {
                f(c);
            }
        }
        let mut idx = 0;
        let mut ops = OpCounter::default();
        loop {
            idx = rq.class.queue.find_next_bit(idx, &mut ops);
            if idx >= PRIO_LIMIT {
                break;
            }
            for t in rq.class.queue.queue(idx).iter(tasks) {
                f(t);
            }
            idx += 1;
        }
    }
}

impl Bfs {
    /// A tick on which RT or (non-refractory) ISO ran: `iso_ticks += 100` up to its cap;
    /// past `ISO_PERIOD * iso_cpu` the refractory period starts.
    fn iso_tick(&self, rq: &mut Rq<BfsRq>, period: u64) {
        let r = &mut rq.class;
        if r.iso_ticks <= period * 100 - 100 {
            r.iso_ticks += 100;
        }
        if r.iso_ticks > period * self.tunables.iso_cpu as u64 {
            r.iso_refractory = true;
        }
    }

    /// Any other tick: `iso_ticks -= iso_ticks / ISO_PERIOD + 1`; refractory ends below
    /// 115/128 of the limit (about 10% hysteresis).
    fn no_iso_tick(&self, rq: &mut Rq<BfsRq>, period: u64) {
        let r = &mut rq.class;
        if r.iso_ticks > 0 {
            r.iso_ticks = r.iso_ticks.saturating_sub(r.iso_ticks / period + 1);
            if r.iso_refractory && r.iso_ticks < period * (self.tunables.iso_cpu as u64 * 115 / 128)
            {
                r.iso_refractory = false;
            }
        }
    }
}

#[cfg(test)]
mod tests;

//! `bfs`'s meeting of tasks and CPUs, as 0.404's `kernel/sched_bfs.c` has it: which queued
//! task a CPU takes (`earliest_deadline_task`, with the sticky flag's bias and skip on a
//! throttled CPU; `swap_sticky`; `can_preempt`), and which CPU a waking task goes to: the best
//! idle one by `best_mask_cpu`'s locality ranking (`resched_best_idle`), else the one running
//! the worst task (`try_preempt`). The queue and its deadlines are the class's `mod.rs`; must
//! never depend on another design, the stacked RT class, a host or the core.

use super::{task_prio, Bfs, BfsRq, BfsTask, ISO_PRIO, PRIO_LIMIT};
use crate::class::{CpuView, Ctx, Rq, WakeKind};
use crate::ds::work::{Line, OpCounter, Work};
use crate::machine::Topology;
use crate::task::{CpuId, CpuMask, SchedPolicy, TaskId, TaskView};
use std::sync::atomic::Ordering;

impl Bfs {
    /// Whether `cpu` is flagged as throttled by its governor (`scaling_rq`).
    pub fn is_scaling(&self, cpu: CpuId) -> bool {
        self.scaling[cpu].load(Ordering::Relaxed)
    }
    /// `earliest_deadline_task(rq)`, then `take_task`.
    pub(super) fn earliest_deadline_task(
        &self,
        ctx: &mut Ctx<BfsTask>,
        rq: &mut Rq<BfsRq>,
        cpu: CpuId,
    ) -> Option<TaskId> {
        let scaling = self.is_scaling(cpu);
        let bias = self.longest_deadline_diff();
        let mut idx = 0;
        let found = loop {
            idx = rq.class.queue.find_next_bit(idx, ctx.ops);
            if idx >= PRIO_LIMIT {
                break None;
            }
            let list = rq.class.queue.queue(idx);
            let mut cur = list.front();
            let mut edt: Option<(TaskId, u64)> = None;
            while let Some(t) = cur {
                ctx.ops.scanned += 1;
                // The deadline scan reads each queued task's line, wherever it was written.
                ctx.read_line(Line::Task(t));
                let p = &ctx.tasks[t];
                cur = list.next(&ctx.tasks, t);
                if !p.cpus_allowed.contains(cpu) {
                    continue;
                }
                if idx < ISO_PRIO {
                    // An RT list: FIFO order, the first that may run here.
                    edt = Some((t, 0));
                    break;
                }
                let dl = if p.data.sticky && p.cpu != cpu {
                    if scaling {
                        continue;
                    }
                    p.data.deadline.wrapping_add(bias)
                } else {
                    p.data.deadline
                };
                // `deadline_before`: a signed comparison, as niffies may wrap.
                if edt.is_none_or(|(_, best)| (dl.wrapping_sub(best) as i64) < 0) {
                    edt = Some((t, dl));
                }
            }
            if let Some((t, _)) = edt {
                break Some(t);
            }
            idx += 1;
        };
        if let Some(t) = found {
            // take_task: off the list, unstuck.
            self.dequeue_task(ctx, rq, t);
            ctx.tasks[t].data.sticky = false;
        }
        found
    }

    /// `swap_sticky`: prev, descheduled while runnable, becomes this CPU's sticky task.
    pub(super) fn swap_sticky(
        &self,
        ctx: &mut Ctx<BfsTask>,
        rq: &mut Rq<BfsRq>,
        cpu: CpuId,
        p: TaskId,
    ) {
        if let Some(old) = rq.class.sticky_task[cpu] {
            if old == p {
                ctx.tasks[p].data.sticky = true;
                return;
            }
            // The old sticky task is released (BFS also tries `resched_closest_idle` for it;
            // here an idle CPU finds it on the global queue when it next schedules).
            ctx.tasks[old].data.sticky = false;
        }
        if !ctx.tasks[p].is_rt() {
            ctx.tasks[p].data.sticky = true;
            rq.class.sticky_task[cpu] = Some(p);
        } else {
            rq.class.sticky_task[cpu] = None;
        }
    }

    /// `can_preempt(p, prio, deadline)`.
    pub(super) fn can_preempt(p_prio: usize, p_deadline: u64, prio: usize, deadline: u64) -> bool {
        if p_prio < prio {
            return true;
        }
        if p_prio > prio {
            return false;
        }
        (p_deadline.wrapping_sub(deadline) as i64) < 0
    }

    /// `select_task_rq`: the best idle CPU allowed, else `try_preempt`'s victim.
    pub(super) fn select_task_rq(
        &self,
        tasks: &TaskView<'_, BfsTask>,
        view: &CpuView,
        ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        let p = &tasks[t];
        let n = view.ncpus();
        let allowed = p.cpus_allowed.and(&CpuMask::first_n(n));
        let mut idle = CpuMask::empty();
        for c in allowed.iter(n) {
            ops.scanned += 1;
            // Each CPU's rq_prio / rq_deadline / idle state: a line that CPU writes.
            ops.read_line(Line::Cpu(c));
            if view.is_idle(c) {
                idle.set(c);
            }
        }
        let here = if allowed.contains(waker_cpu) {
            waker_cpu
        } else {
            allowed.iter(n).next().unwrap_or(0)
        };
        if !idle.is_empty() {
            // resched_best_idle: the idle CPU closest to where it last ran.
            let busy = busy_groups(view.topology, |c| view.is_idle(c));
            let last = p.cpu.min(n.saturating_sub(1));
            return best_mask_cpu(view.topology, last, &idle, &busy, ops);
        }
        match kind {
            // Child-runs-first (a new address space) or try_preempt of the parent's CPU.
            WakeKind::Fork if p.data.fork_runs_first => return here,
            // A sync wakeup with no idle CPU does not preempt: it queues where the waker runs.
            WakeKind::Wakeup { sync: true } => return here,
            _ => {}
        }
        if p.policy == SchedPolicy::Idle {
            return here;
        }
        // try_preempt: the allowed CPU running the worst task, highest rq_prio then latest
        // deadline.
        let mut target = here;
        let mut highest_prio: i64 = -1;
        let mut latest_deadline = 0u64;
        for c in allowed.iter(n) {
            let Some(curr) = view.cpu(c).curr else {
                continue;
            };
            let q = &tasks[curr];
            let rq_prio = task_prio(q) as i64;
            if rq_prio < highest_prio {
                continue;
            }
            if rq_prio > highest_prio || (q.data.deadline.wrapping_sub(latest_deadline) as i64) > 0
            {
                latest_deadline = q.data.deadline;
                highest_prio = rq_prio;
                target = c;
            }
        }
        target
    }
}

/// The ranking bits of `best_mask_cpu` (lowest total wins).
pub const CPUIDLE_DIFF_THREAD: u32 = 1;
pub const CPUIDLE_DIFF_CORE: u32 = 2;
pub const CPUIDLE_CACHE_BUSY: u32 = 4;
pub const CPUIDLE_DIFF_CPU: u32 = 8;
pub const CPUIDLE_THREAD_BUSY: u32 = 16;
pub const CPUIDLE_DIFF_NODE: u32 = 32;

/// `rq->cpu_locality[b]` on CPU `a` (built from the sched-domain levels in BFS).
pub fn cpu_locality(t: &Topology, a: CpuId, b: CpuId) -> u8 {
    if a == b {
        0
    } else if t.core[a] == t.core[b] {
        1
    } else if t.cache[a] == t.cache[b] {
        2
    } else if t.node[a] == t.node[b] {
        3
    } else {
        4
    }
}

/// Which cores and which caches have a busy CPU (`!siblings_idle`, `!cache_idle` of
/// 0.404, which test whether all of a CPU's SMT siblings / cache sharers are in
/// `grq.cpu_idle_map`); one pass over the CPUs.
pub fn busy_groups(t: &Topology, is_idle: impl Fn(CpuId) -> bool) -> (CpuMask, CpuMask) {
    let mut cores = CpuMask::empty();
    let mut caches = CpuMask::empty();
    for c in 0..t.ncpus {
        if !is_idle(c) {
            cores.set(t.core[c]);
            caches.set(t.cache[c]);
        }
    }
    (cores, caches)
}

/// `best_mask_cpu(best_cpu, mask)`: `best_cpu` if it is in `mask`, else the CPU of `mask` with
/// the lowest ranking as seen from `best_cpu` (the first of equals; a ranking of 0 stops the
/// search). `busy` is [`busy_groups`]'s answer.
pub fn best_mask_cpu(
    t: &Topology,
    best_cpu: CpuId,
    mask: &CpuMask,
    busy: &(CpuMask, CpuMask),
    ops: &mut OpCounter,
) -> CpuId {
    if mask.contains(best_cpu) {
        return best_cpu;
    }
    let mut best = best_cpu;
    let mut best_ranking = CPUIDLE_DIFF_NODE
        | CPUIDLE_THREAD_BUSY
        | CPUIDLE_DIFF_CPU
        | CPUIDLE_CACHE_BUSY
        | CPUIDLE_DIFF_CORE
        | CPUIDLE_DIFF_THREAD;
    for c in mask.iter(t.ncpus) {
        ops.scanned += 1;
        let loc = cpu_locality(t, best_cpu, c);
        let mut ranking = 0;
        if loc > 3 {
            ranking |= CPUIDLE_DIFF_NODE;
        } else if loc > 2 {
            ranking |= CPUIDLE_DIFF_CPU;
        }
        if loc == 2 {
            ranking |= CPUIDLE_DIFF_CORE;
        }
        if busy.1.contains(t.cache[c]) {
            ranking |= CPUIDLE_CACHE_BUSY;
        }
        if loc == 1 {
            ranking |= CPUIDLE_DIFF_THREAD;
        }
        if busy.0.contains(t.core[c]) {
            ranking |= CPUIDLE_THREAD_BUSY;
        }
        if ranking < best_ranking {
            best = c;
            if ranking == 0 {
                break;
            }
            best_ranking = ranking;
        }
    }
    best
}

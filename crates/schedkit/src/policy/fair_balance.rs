//! The SMP side both fair classes share today: one balancing domain spanning the machine,
//! weighted load, and wakeup placement reduced to its usual outcomes. A simplification of
//! 2.6.24's `sched_domain` hierarchy (and of 6.6's, with PELT), stated in `cfs` and `eevdf`;
//! kept in one place so that the two classes differ only where their designs do (how a moved
//! task keeps its place: `vruntime` renormalised vs lag preserved).

use crate::class::{Busiest, CpuView, OpCounter, WakeKind};
use crate::task::{CpuId, Task, TaskId, TaskView};

/// `select_task_rq_fair`, reduced: fork balancing (SD_BALANCE_FORK) to the least loaded
/// allowed CPU, the parent's on a tie; on wakeup, `wake_affine`'s sync pull to the waker
/// (it is about to sleep, the pair shares a cache), else the previous CPU unless it is busy
/// and an idle allowed CPU exists (`wake_idle` / `select_idle_sibling`).
pub fn select_cpu<D>(
    tasks: &TaskView<'_, D>,
    view: &CpuView,
    t: TaskId,
    waker_cpu: CpuId,
    kind: WakeKind,
) -> CpuId {
    let p = &tasks[t];
    let n = view.ncpus();
    let allowed = |c: CpuId| c < n && p.cpus_allowed.contains(c);
    let first = p.cpus_allowed.iter(n).next().unwrap_or(0);
    match kind {
        WakeKind::Fork => {
            let mut best = if allowed(waker_cpu) { waker_cpu } else { first };
            for c in p.cpus_allowed.iter(n) {
                if view.cpus[c].load < view.cpus[best].load {
                    best = c;
                }
            }
            best
        }
        WakeKind::Wakeup { sync } => {
            if sync && allowed(waker_cpu) {
                return waker_cpu;
            }
            let prev = if allowed(p.cpu) { p.cpu } else { first };
            if !view.is_idle(prev) {
                if let Some(idle) = p
                    .cpus_allowed
                    .iter(n)
                    .find(|&c| view.is_idle(c) && view.cpus[c].nr_running == 0)
                {
                    return idle;
                }
            }
            prev
        }
    }
}

/// SD_CPU_INIT of 2.6.24: a 1 ms interval, times busy_factor 64 when busy.
pub fn balance_interval_ticks(idle: bool, hz: u32) -> Option<u64> {
    let ms = |m: u64| (m * hz as u64 / 1000).max(1);
    Some(if idle { ms(1) } else { ms(64) })
}

/// `find_busiest_group`/`find_busiest_queue` over the one domain: the CPU with the most
/// weighted load among those with two or more tasks; nothing unless it carries 25 % more
/// than this one (imbalance_pct 125); move half the difference.
pub fn find_busiest(ops: &mut OpCounter, this_cpu: CpuId, view: &CpuView) -> Option<Busiest> {
    let this_load = view.cpus[this_cpu].load;
    let mut busiest = None;
    let mut max_load = 0;
    for c in 0..view.ncpus() {
        ops.remote_touches += 1;
        let s = &view.cpus[c];
        if c != this_cpu && s.nr_running >= 2 && s.load > max_load {
            max_load = s.load;
            busiest = Some(c);
        }
    }
    let cpu = busiest?;
    if max_load * 100 <= this_load * 125 {
        return None;
    }
    Some(Busiest {
        cpu,
        imbalance: ((max_load - this_load) / 2) as usize,
    })
}

/// `can_migrate_task` + `balance_tasks`' weight test: `p` (of load weight `weight`) may be
/// pulled to `this_cpu` if allowed there, not cache-hot (unless this CPU is idle: then a
/// hot task is better than nothing), and not heavier than twice what is left to move.
pub fn may_pull<D>(
    p: &Task<D>,
    weight: u64,
    this_cpu: CpuId,
    idle: bool,
    hot: bool,
    left_to_move: u64,
) -> bool {
    p.cpus_allowed.contains(this_cpu) && (idle || !hot) && weight / 2 <= left_to_move
}

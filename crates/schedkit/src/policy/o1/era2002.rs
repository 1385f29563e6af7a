//! `o1:era=2002`: what the O(1) announcement of 4 January 2002 (designs.md §2.1, ANN) says
//! differs from the 2.6 code the default `o1` follows, and the 2.5.2-era constants (O1-25).
//!
//! - **Timeslices** of the 2.5.2 era (O1-25): `MIN_TIMESLICE + (MAX_TIMESLICE -
//!   MIN_TIMESLICE) * (MAX_PRIO - 1 - static_prio) / (MAX_USER_PRIO - 1)`, 10 to 300 ms:
//!   300 / 151 / 17 ms at nice -20 / 0 / +18 (in whole jiffies at HZ=100: 300 / 150 / 10 ms).
//!   nice +19 is batch (below).
//! - **The load estimator**, as the announcement describes it: "a 4-entry 'history'
//!   ringbuffer of the task's activities during the last 4 seconds" (4 x 1 s); it "punishes"
//!   tasks "that want to use more CPU time than there is available" with "a priority
//!   decrease", of which "there is a maximum amount ... relative to their static priority".
//!   The ring-buffer code was never found (designs.md: "not verified"), so this is a
//!   reconstruction, and says so: each slot counts the ticks the task ran in one second of
//!   wall time; the penalty is the share of the last 4 seconds it ran, scaled to at most
//!   [`MAX_PENALTY`] levels (the size of 2.6's bonus range, `MAX_BONUS`), added to the static
//!   priority and clamped at the lowest priority (139). Sleeping earns nothing: a task that
//!   ran little simply carries no penalty (punish, don't boost).
//! - **No interactive reinsertion**: "the active array contains all tasks that ... have
//!   timeslices left. The expired array contains all tasks which have used up their
//!   timeslices" - an expired task always goes to the expired array (no `TASK_INTERACTIVE`,
//!   no `EXPIRED_STARVING`, no timeslice-granularity requeue; those came with `sleep_avg`).
//! - **nice +19 is batch-scheduled**: "timeslices are long and processes are roundrobin
//!   scheduled ... nice +19 jobs are in essence SCHED_IDLE, from an interactiveness point of
//!   view". Reconstructed as: a nice +19 task gets `MAX_TIMESLICE` (the design's longest, as
//!   "long" is not quantified). Its wakeups need no rule of their own: its priority is 139,
//!   the lowest, so it preempts nothing and anything else preempts it.
//! - **sched_yield** (O1-25): a temporary `prio++` (at most 139), requeued at the tail of its
//!   array.
//! - **RT** in the announcement is "a global runqueue (and global spinlock)" with "a
//!   broadcast-reschedule message". Not modelled as such: RT tasks go to the stacked RT class
//!   with active push/pull balancing, which makes the same decisions a global queue makes
//!   (the highest-priority RT tasks run, wherever they woke), at per-CPU locking costs. The
//!   global lock's contention and the broadcast's IPIs are not charged.
//!
//! Everything else (arrays, bitmap, balancer, wakeup placement, child-runs-first, the slice
//! split at fork) is shared with the default `o1`.

use super::{static_prio, Jiffies, O1Task, MAX_PRIO, MAX_USER_PRIO};
use crate::task::Task;

/// Slots of the load history ring (seconds of history).
pub const LOAD_HISTORY: usize = 4;
/// The largest penalty, in priority levels (reconstruction: 2.6's `MAX_BONUS`).
pub const MAX_PENALTY: i64 = 10;
/// `MIN_TIMESLICE` and `MAX_TIMESLICE` of the 2.5.2 era, ms.
const MIN_TIMESLICE_MS: u64 = 10;
const MAX_TIMESLICE_MS: u64 = 300;

/// The static priority of nice +19, batch-scheduled.
pub const BATCH_PRIO: usize = MAX_PRIO - 1;

/// The 2.5.2-era `task_timeslice(p)` in jiffies (nice +19: the batch slice, `MAX_TIMESLICE`).
pub fn task_timeslice(j: &Jiffies, static_prio: usize) -> i64 {
    let min = (MIN_TIMESLICE_MS * j.hz / 1000).max(1) as i64;
    let max = (MAX_TIMESLICE_MS * j.hz / 1000).max(1) as i64;
    if static_prio >= BATCH_PRIO {
        return max;
    }
    let sp = static_prio as i64;
    min + (max - min) * (MAX_PRIO as i64 - 1 - sp) / (MAX_USER_PRIO - 1)
}

/// Moves the ring to the second `now` falls in, clearing the slots of the seconds passed.
fn roll(d: &mut O1Task, now: u64) {
    let second = now / 1_000_000_000;
    if second <= d.hist_second {
        return;
    }
    let gap = (second - d.hist_second).min(LOAD_HISTORY as u64);
    for k in 1..=gap {
        d.load_hist[((d.hist_second + k) % LOAD_HISTORY as u64) as usize] = 0;
    }
    d.hist_second = second;
}

/// A timer tick found the task running: one more tick in this second's slot.
pub fn charge_tick(d: &mut O1Task, now: u64) {
    roll(d, now);
    let slot = &mut d.load_hist[(d.hist_second % LOAD_HISTORY as u64) as usize];
    *slot = slot.saturating_add(1);
}

/// The penalty for the load of the last [`LOAD_HISTORY`] seconds: the share of them the
/// task ran, times [`MAX_PENALTY`], rounded down.
pub fn penalty(d: &mut O1Task, now: u64, j: &Jiffies) -> i64 {
    roll(d, now);
    let ran: i64 = d.load_hist.iter().map(|&n| n as i64).sum();
    let window = LOAD_HISTORY as i64 * j.hz as i64;
    ran.min(window) * MAX_PENALTY / window
}

/// The dynamic priority: static priority plus the load penalty, clamped at 139.
pub fn effective_prio(p: &mut Task<O1Task>, now: u64, j: &Jiffies) -> usize {
    let pen = penalty(&mut p.data, now, j);
    (static_prio(p.nice) as i64 + pen).min(MAX_PRIO as i64 - 1) as usize
}

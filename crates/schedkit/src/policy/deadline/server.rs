//! The deadline server (`dl_server`, `kernel/sched/deadline.c` of 6.18) as the fair server
//! uses it (`fair_server_init`, `fair_server_pick_task` of `fair.c`; `sched_init_dl_servers`):
//! a per-CPU deadline entity that, while normal tasks are runnable, holds a CBS reservation
//! (50 ms every 1 s by default) and, when EDF picks it, runs the fair class's pick. It is what
//! keeps RT tasks from starving normal ones since 6.12, where it replaced the default RT
//! throttling (`sched/rt: Remove default bandwidth control`: without `CONFIG_RT_GROUP_SCHED`,
//! 6.18's `rt.c` no longer throttles RT tasks at `sched_rt_runtime_us`).
//!
//! Each function here is the kernel function it names, on the server's state
//! ([`DlServer`], the flags of 6.18's state diagram above `dl_server_start`):
//!
//! - **Start and stop.** `dl_server_start` (from `enqueue_task_fair` when the first normal
//!   task is queued on an empty fair runqueue) queues it with the CBS wakeup rule
//!   (`update_dl_entity`); `dl_server_stop` (from `__pick_task_dl`, when the fair pick it
//!   made found nothing) takes it off and cancels its timer. 6.18 no longer stops it when the
//!   last normal task leaves (6.12's `dequeue_entities` did); it stops at its next pick.
//! - **Deferral** (`dl_defer`, merged with the fair server in 6.12): the server does not run
//!   at once. It waits throttled (`dl_defer_armed`) for its zero-laxity instant, `deadline -
//!   runtime`; meanwhile every nanosecond a normal task runs is charged to it
//!   (`update_curr` → `dl_server_update`), and so is idle time (`dl_server_update_idle_time`),
//!   and if its runtime runs out that way the normal tasks were not starved: a new period
//!   begins and the wait starts over (`update_curr_dl_se`'s `dl_defer && dl_throttled`
//!   branch). Only if the instant comes with runtime left does the timer queue it
//!   (`dl_server_timer`: `dl_defer_running`), with a new period if keeping the old deadline
//!   would overflow its bandwidth (`replenish_dl_entity`'s deferred case). From then on it
//!   throttles and replenishes as a plain CBS task (it does not defer again until a new
//!   period starts from the wakeup rule or from background consumption).
//! - **Charging.** What it charges is the running normal task's time, whether that task was
//!   picked through the server or not (fair.c `update_curr`); RT and deadline tasks' time is
//!   not charged. The server's own runtime is not GRUB-scaled (`dl_scaled_delta_exec` is
//!   skipped for servers).
//! - **Admission.** `dl_server_apply_params` adds its bandwidth to the root domain's
//!   `total_bw` at boot (`__dl_add`), so SCHED_DEADLINE tasks may reserve only what is left:
//!   0.95 − 0.05 of each CPU by default (the core's `Sched::new` does it).
//!
//! Simplifications (said again in `docs/deadline.md`): the timer is the class's, firing at the
//! first tick or pick of the CPU at or after its instant (the kernel's is an hrtimer; one due
//! while the CPU idled is replayed at its instant by [`idle_timers`]), and a
//! forwarded deferral timer (`hrtimer_forward_now`) is set to the new zero-laxity instant;
//! the running normal task is charged at the tick and when it stops (the kernel also charges
//! at every `update_curr`, which changes no total); the server is not in the cpudl heap's
//! view of RT balancing (`cpupri` `CPUPRI_HIGHER`), as the deadline tasks are not either.

use crate::ds::dl_rq::DlServer;
use crate::task::{BW_SHIFT, DL_SCALE};

/// `dl_server_min_res` (6.18): a deferral timer is not forwarded by less than 1 ms.
pub const DL_SERVER_MIN_RES_NS: u64 = 1_000_000;

/// `dl_time_before(a, b)`.
#[inline]
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// The zero-laxity instant `deadline - runtime` (`start_dl_timer`'s armed case).
#[inline]
fn zero_laxity(s: &DlServer) -> u64 {
    (s.deadline as i64).wrapping_sub(s.runtime) as u64
}

/// Sets a server up as `sched_init_dl_servers` does at boot (`now`): its parameters applied
/// (`dl_server_apply_params`), `dl_server` and `dl_defer` set, and `setup_new_dl_entity` →
/// `replenish_dl_new_period`. Does nothing for `None`.
pub fn init(s: &mut DlServer, params: Option<crate::ds::dl_rq::DlServerParams>, now: u64) {
    *s = DlServer::default();
    let Some(p) = params.filter(|p| p.runtime_ns > 0) else {
        return;
    };
    s.params = Some(p);
    replenish_new_period(s, now);
}

/// `replenish_dl_new_period`: a new deadline from now and a full runtime; a deferring server
/// not handling a starvation case waits (`dl_throttled`, `dl_defer_armed`).
pub fn replenish_new_period(s: &mut DlServer, now: u64) {
    let Some(p) = s.params else { return };
    s.deadline = now + p.period_ns;
    s.runtime = p.runtime_ns as i64;
    if p.defer && !s.defer_running {
        s.throttled = true;
        s.defer_armed = true;
    }
}

/// `dl_entity_overflow`: `runtime / (deadline - t) > dl_runtime / dl_deadline`, in the
/// kernel's 1 µs-grained cross multiplication (its relative deadline is its period).
pub fn overflow(s: &DlServer, t: u64) -> bool {
    let Some(p) = s.params else { return false };
    let runtime = s.runtime.max(0) as u64;
    let left = (p.period_ns >> DL_SCALE) as u128 * (runtime >> DL_SCALE) as u128;
    let right =
        (s.deadline.wrapping_sub(t) >> DL_SCALE) as u128 * (p.runtime_ns >> DL_SCALE) as u128;
    right < left
}

/// `start_dl_timer`: armed for the zero-laxity instant if deferring, else for the next
/// period (`dl_next_period`, the deadline here). Returns false, starting nothing, if the
/// instant has passed (`ktime_us_delta(act, now) < 0`).
pub fn start_timer(s: &mut DlServer, now: u64) -> bool {
    let Some(p) = s.params else { return false };
    let act = if s.defer_armed {
        zero_laxity(s)
    } else {
        s.deadline - p.period_ns + p.period_ns
    };
    if (act.wrapping_sub(now) as i64) / 1000 < 0 {
        return false;
    }
    if s.timer.is_none() {
        s.timer = Some(act);
    }
    true
}

/// `update_dl_entity` for the server (`ENQUEUE_WAKEUP`): a passed deadline or an overflow
/// starts a new period, except that a deferring server whose deadline has not passed keeps
/// it with its runtime cut to its density times the laxity (`update_dl_revised_wakeup`);
/// with no overflow, a deferring server not yet running waits armed.
fn update_dl_entity(s: &mut DlServer, now: u64) {
    let Some(p) = s.params else { return };
    if before(s.deadline, now) || overflow(s, now) {
        if p.defer && !before(s.deadline, now) {
            let density = crate::task::to_ratio(p.period_ns, p.runtime_ns);
            let laxity = s.deadline - now;
            s.runtime = ((density as u128 * laxity as u128) >> BW_SHIFT) as i64;
            return;
        }
        s.defer_running = false;
        replenish_new_period(s, now);
    } else if p.defer && !s.defer_running {
        s.defer_armed = true;
        s.throttled = true;
    }
}

/// `replenish_dl_entity` for the server.
fn replenish(s: &mut DlServer, now: u64) {
    let Some(p) = s.params else { return };
    // A deferred reservation that could not consume its runtime in background and would now
    // overflow: a new period.
    if s.defer_armed && overflow(s, now) {
        s.deadline = now + p.period_ns;
        s.runtime = p.runtime_ns as i64;
    }
    while s.runtime <= 0 {
        s.deadline += p.period_ns;
        s.runtime += p.runtime_ns as i64;
    }
    if before(s.deadline, now) {
        // "DL replenish lagged too much".
        replenish_new_period(s, now);
    }
    s.throttled = false;
    if s.defer_armed {
        s.defer_armed = false;
        return;
    }
    if p.defer && !s.defer_running && before(now, zero_laxity(s)) {
        s.defer_armed = true;
        s.throttled = true;
        if !start_timer(s, now) {
            s.timer = None;
            s.defer_armed = false;
            s.throttled = false;
        }
    }
}

/// How `enqueue_dl_entity` is asked to queue the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Enqueue {
    Wakeup,
    Replenish,
}

/// `enqueue_dl_entity` for the server. Returns whether it is now queued.
fn enqueue(s: &mut DlServer, now: u64, how: Enqueue) -> bool {
    let Some(p) = s.params else { return false };
    if !p.defer && s.throttled && how != Enqueue::Replenish {
        return false;
    }
    match how {
        Enqueue::Wakeup => update_dl_entity(s, now),
        Enqueue::Replenish => replenish(s, now),
    }
    if s.throttled && start_timer(s, now) {
        return false;
    }
    if s.throttled {
        s.timer = None;
        s.defer_armed = false;
        s.throttled = false;
    }
    s.queued = true;
    s.activations += 1;
    true
}

/// `dl_server_start`: from a normal task's enqueue. Returns whether the server is now queued
/// (the caller reschedules if it beats the current task: `!dl_task(curr) ||
/// dl_entity_preempt`).
pub fn start(s: &mut DlServer, now: u64) -> bool {
    if s.params.is_none() || s.active {
        return false;
    }
    s.active = true;
    // Time a normal task ran before the server was active is not its to charge.
    s.exec_start = now;
    enqueue(s, now, Enqueue::Wakeup)
}

/// `dl_server_stop`: off the runqueue, its timer cancelled, inactive.
pub fn stop(s: &mut DlServer) {
    if s.params.is_none() || !s.active {
        return;
    }
    s.queued = false;
    s.timer = None;
    s.defer_armed = false;
    s.throttled = false;
    s.active = false;
    s.serving = false;
}

/// `dl_server_update` → `update_curr_dl_se`: `delta` ns of a normal task's run charged to the
/// active server. Returns whether the server was throttled off the runqueue (the CPU must
/// reschedule, `!is_leftmost`).
pub fn update(s: &mut DlServer, now: u64, delta: u64) -> bool {
    let Some(p) = s.params else { return false };
    if !s.active || delta == 0 {
        return false;
    }
    if s.throttled && !p.defer {
        return false;
    }
    if s.serving {
        s.served_ns += delta;
    }
    s.runtime -= delta as i64;
    if p.defer && s.throttled && s.runtime <= 0 {
        // Consumed in background: the normal tasks were not starved this period. Start over.
        s.defer_running = false;
        s.timer = None;
        replenish_new_period(s, now);
        start_timer(s, now);
        return false;
    }
    if s.runtime <= 0 {
        s.throttled = true;
        let was = s.queued;
        s.queued = false;
        if !start_timer(s, now) {
            replenish_new_period(s, now);
            start_timer(s, now);
        }
        return was;
    }
    false
}

/// `dl_server_update_idle_time`: in defer mode, the time the CPU was idle since `since`
/// counts as consumed (the RT tasks did not use it); a runtime driven below 0 ends the
/// starvation case at 0.
pub fn update_idle(s: &mut DlServer, now: u64, since: u64) {
    let Some(p) = s.params else { return };
    if !p.defer || s.runtime < 0 || now < since {
        return;
    }
    s.runtime -= (now - since) as i64;
    if s.runtime < 0 {
        s.defer_running = false;
        s.runtime = 0;
    }
}

/// `dl_server_timer`, if the timer is due at `now`: a deferral timer reached early (runtime
/// was consumed meanwhile, moving the zero-laxity instant more than `dl_server_min_res`
/// later) is forwarded; otherwise the server enters its starvation case
/// (`dl_defer_running`) or is replenished, and is queued. Returns whether it was queued.
pub fn timer_due(s: &mut DlServer, now: u64) -> bool {
    let Some(at) = s.timer else { return false };
    if before(now, at) {
        return false;
    }
    s.timer = None;
    if !s.throttled || s.params.is_none() {
        return false;
    }
    if s.defer_armed {
        if before(now, zero_laxity(s).wrapping_sub(DL_SERVER_MIN_RES_NS)) {
            s.timer = Some(zero_laxity(s));
            return false;
        }
        s.defer_running = true;
    }
    enqueue(s, now, Enqueue::Replenish)
}

/// Timers that came due while the CPU was idle (since `idle_since`, up to `now`), replayed
/// in the kernel's order at their instant: `dl_server_timer` queues the server and
/// reschedules the idle CPU, `put_prev_task_idle` charges the idle time so far
/// (`dl_server_update_idle_time`), and the server's pick finds no normal task, so it stops.
/// (Here timers fire at the CPU's ticks and picks, and an idle CPU takes neither.)
///
/// Inlined up to its first test (a CPU that was not idle, the usual pick, returns at once).
#[inline]
pub fn idle_timers(s: &mut DlServer, now: u64) {
    if s.idle_since.is_some() {
        idle_timers_replay(s, now);
    }
}

#[inline(never)]
fn idle_timers_replay(s: &mut DlServer, now: u64) {
    for _ in 0..4 {
        let (Some(since), Some(at)) = (s.idle_since, s.timer) else {
            return;
        };
        if before(now, at) || before(at, since) {
            return;
        }
        // A forwarded deferral timer reschedules nothing: the idle time is charged only
        // when the server was queued (and the idle CPU rescheduled for it).
        if timer_due(s, at) {
            update_idle(s, at, since);
            s.idle_since = Some(at);
            stop(s);
        }
    }
}

#[cfg(test)]
mod tests;

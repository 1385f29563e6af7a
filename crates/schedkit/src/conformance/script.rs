//! The fixed script of the conformance suite: two flat CPUs, eight tasks of every policy, 300
//! jiffies of ticks, yields, sleeps and wakeups, a nice change, an affinity change that evicts
//! the running task, an exit, a fork; every decision logged and the invariants audited after
//! every step.

use super::audit::{audit, curr_of, schedule_on, settle, sleep, spec};
use crate::sched_core::scripted::Scripted;
use crate::sched_core::{attr, tick, CoreError, Leave, Wakee};
use crate::task::{CpuMask, SchedPolicy, TaskId};

/// One scripted sequence on two CPUs: creation, ticks, yields, sleeps and wakeups, a nice
/// change, an affinity change that evicts the running task, an exit, a fork. Returns the log
/// of every decision (picks and where tasks are), checking conformance after every step.
pub(crate) fn run_script<H: Scripted>(h: &mut H) -> Result<Vec<String>, CoreError> {
    let mut log = Vec::new();
    let all = CpuMask::first_n(2);
    let specs = [
        spec(SchedPolicy::Normal, 0, 0, all),
        spec(SchedPolicy::Normal, 5, 0, all),
        spec(SchedPolicy::Normal, -5, 0, all),
        spec(SchedPolicy::Fifo, 0, 10, CpuMask::single(1)),
        spec(SchedPolicy::Normal, 0, 0, CpuMask::single(0)),
        spec(SchedPolicy::Rr, 0, 20, all),
        spec(SchedPolicy::Batch, 10, 0, all),
        spec(SchedPolicy::Normal, 19, 0, all),
    ];
    let tick_ns = 1_000_000_000 / h.hz() as u64;
    let mut now = 5 * tick_ns;
    h.at(now);
    for (i, sp) in specs.iter().enumerate() {
        let t = h.add_task(sp, None);
        let cpu = sp.allowed.iter(2).nth(i % sp.allowed.count()).unwrap_or(0);
        attr::fork(h, cpu, None, t, None)?;
        log.push(format!("new {t} on cpu{}", h.task_cpu(t)));
    }
    settle(h, &mut log)
        .and_then(|()| audit(h))
        .map_err(|e| CoreError::new(format!("once the tasks are created: {}", e.what())))?;
    let mut sleepers: Vec<TaskId> = Vec::new();
    let mut jiffies = now / tick_ns;
    for step in 1..=300u64 {
        let mut one_step = || -> Result<(), CoreError> {
            now += tick_ns;
            jiffies += 1;
            h.at(now);
            for cpu in 0..2 {
                let curr = curr_of(h, cpu);
                tick::scheduler_tick(h, cpu, curr, curr.is_none(), 1, jiffies)?;
            }
            let c0 = curr_of(h, 0);
            let c1 = curr_of(h, 1);
            if step % 7 == 3 {
                if let Some(t) = c0 {
                    let sw = schedule_on(h, 0, Some(t), Leave::Yield)?;
                    log.push(format!("{step}: {t} yields on cpu0 -> {:?}", sw.next));
                }
            }
            if step % 11 == 5 {
                if let Some(t) = c1.filter(|_| sleepers.len() < 3) {
                    let sw = sleep(h, 1, t)?;
                    sleepers.push(t);
                    log.push(format!("{step}: {t} sleeps on cpu1 -> {:?}", sw.next));
                }
            }
            if step % 17 == 8 {
                if let Some(t) = curr_of(h, 0).filter(|_| sleepers.len() < 4) {
                    let sw = sleep(h, 0, t)?;
                    sleepers.push(t);
                    log.push(format!("{step}: {t} sleeps on cpu0 -> {:?}", sw.next));
                }
            }
            if step % 13 == 0 && !sleepers.is_empty() {
                let t = sleepers.remove(0);
                expect_woken(h.wake(t, 0)?, Wakee::Asleep, t)?;
                log.push(format!(
                    "{step}: {t} woken from cpu0, queued on cpu{}",
                    h.task_cpu(t)
                ));
            }
            if step == 50 {
                if let Some(t) = curr_of(h, 0) {
                    attr::change_attr(h, 0, t, |p| p.nice = 10)?;
                    log.push(format!("{step}: {t} nice 10"));
                }
            }
            if step == 90 {
                if let Some(t) = curr_of(h, 1).filter(|_| true) {
                    attr::change_attr(h, 1, t, |p| p.cpus_allowed = CpuMask::single(0))?;
                    log.push(format!("{step}: {t} bound to cpu0"));
                }
            }
            if step == 120 {
                if let Some(t) = curr_of(h, 0) {
                    let sw = schedule_on(h, 0, Some(t), Leave::Exit)?;
                    log.push(format!("{step}: {t} exits -> {:?}", sw.next));
                }
            }
            if step == 200 {
                // A change that changes nothing: dequeue SAVE and enqueue RESTORE are symmetric
                // (the audit after this step checks the runqueues hold what they held).
                for cpu in 0..2 {
                    if let Some(t) = curr_of(h, cpu) {
                        attr::change_attr(h, cpu, t, |_| ())?;
                    }
                }
            }
            if step == 140 {
                if let Some(p) = curr_of(h, 1) {
                    let child = h.add_task(&spec(SchedPolicy::Normal, 0, 0, all), Some(p));
                    attr::fork(h, 1, Some(p), child, Some(1))?;
                    log.push(format!(
                        "{step}: {p} forks {child} onto cpu{}",
                        h.task_cpu(child)
                    ));
                }
            }
            settle(h, &mut log)?;
            audit(h)?;
            log.push(format!(
                "{step}: running {:?} {:?}",
                curr_of(h, 0),
                curr_of(h, 1)
            ));
            Ok(())
        };
        one_step().map_err(|e| CoreError::new(format!("at step {step}: {}", e.what())))?;
    }
    Ok(log)
}

/// Wakeups must find what the sequence knows the task to be.
pub(crate) fn expect_woken(found: Wakee, expected: Wakee, t: TaskId) -> Result<(), CoreError> {
    if found == expected {
        Ok(())
    } else {
        Err(CoreError::new(format!(
            "the host found {t}, to be woken, {found:?} (expected {expected:?})"
        )))
    }
}

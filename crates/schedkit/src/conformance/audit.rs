//! The kit every scripted run uses: the task specification, the CPUs settled after each step
//! as CPUs returning to user space would, `schedule()` with the pick's RT-before-normal check,
//! and the invariant [`audit`] after every event. The messages name tasks and CPUs as the
//! class sees them.

use crate::class::LockLayout;
use crate::sched_core::scripted::{Scripted, TaskSpecT};
use crate::sched_core::{schedule, with_rq, CoreError, Host, Leave, Switch};
use crate::task::{CpuId, CpuMask, SchedPolicy, TaskId, TaskState};

pub(crate) fn spec(policy: SchedPolicy, nice: i32, rt_priority: u8, allowed: CpuMask) -> TaskSpecT {
    TaskSpecT {
        policy,
        nice,
        rt_priority,
        allowed,
    }
}

/// The task `cpu`'s runqueue names as its current one.
pub(crate) fn curr_of<H: Host>(h: &mut H, cpu: CpuId) -> Option<TaskId> {
    with_rq(h, cpu, |_, _, rq, _| rq.curr_on(cpu))
}

/// The running `t` blocks on `cpu`: it asks to, then switches out.
pub(crate) fn sleep<H: Scripted>(h: &mut H, cpu: CpuId, t: TaskId) -> Result<Switch, CoreError> {
    let leave = h.begin_sleep(t);
    schedule_on(h, cpu, Some(t), leave)
}

/// `schedule()` on `cpu`, then the pick's RT-before-normal check: no RT task that may run on
/// `cpu` is left queued on its runqueue behind the task picked (of lower RT priority or of
/// the normal class) or behind the idle task.
pub(crate) fn schedule_on<H: Scripted>(
    h: &mut H,
    cpu: CpuId,
    prev: Option<TaskId>,
    leave: Leave,
) -> Result<Switch, CoreError> {
    let sw = schedule::schedule(h, cpu, prev, leave)?;
    let next = sw.next;
    let passed_over = with_rq(h, cpu, |s, ctx, rq, _| {
        let rank = |t: TaskId| {
            let p = &ctx.tasks[t];
            if p.is_rt() {
                p.rt_priority as i32
            } else {
                0
            }
        };
        // A normal task the fair server picked runs as the deadline class's (6.12+).
        let picked = next.map_or(-1, |n| if s.served(rq, n) { 100 } else { rank(n) });
        let mut passed_over = None;
        s.for_each_queued(rq, &ctx.tasks, &mut |t| {
            let p = &ctx.tasks[t];
            let waits = p.state == TaskState::Queued && p.cpus_allowed.contains(cpu);
            if p.is_rt() && waits && rank(t) > picked {
                passed_over = Some(t);
            }
        });
        passed_over
    });
    match passed_over {
        Some(t) => Err(CoreError::new(format!(
            "cpu{cpu} picked {next:?}, passing over the queued RT {t}"
        ))),
        None => Ok(sw),
    }
}

/// Reschedules every CPU that was asked to, as a CPU returning to user space would.
pub(crate) fn settle<H: Scripted>(h: &mut H, log: &mut Vec<String>) -> Result<(), CoreError> {
    for _ in 0..8 {
        let mut any = false;
        for cpu in 0..h.ncpus() {
            if h.take_need_resched(cpu) {
                any = true;
                let prev = curr_of(h, cpu);
                let sw = schedule_on(h, cpu, prev, Leave::Runnable)?;
                log.push(format!("cpu{cpu}: {prev:?} -> {:?}", sw.next));
            }
        }
        if !any {
            return Ok(());
        }
    }
    Err(CoreError::new("need_resched never settles"))
}

/// The conformance checks, after the CPUs have settled:
/// - every task is in exactly one place (queued once on one runqueue, running on the CPU
///   whose `curr` names it, or on no runqueue when asleep, new or dead);
/// - `nr_running` of each runqueue matches what it holds;
/// - affinity: a running task runs on an allowed CPU; a queued task of a per-CPU layout is
///   queued on an allowed CPU;
/// - RT before normal, per-CPU layouts: a queued RT task allowed on its runqueue's CPU never
///   waits there behind a task of lower RT priority or of the normal class. (A global
///   runqueue keeps it only at each pick, [`schedule_on`]: 2.4's `reschedule_idle` and BFS's
///   `try_preempt` ask one CPU, chosen from what the CPUs last published, so two RT wakeups
///   before that CPU reschedules both ask it, and the second waits while another CPU runs
///   normal work until that CPU next schedules. The generated sequences reach this at once;
///   the fixed script never did.)
pub(crate) fn audit<H: Scripted>(h: &mut H) -> Result<(), CoreError> {
    let n = h.ntasks();
    let ncpus = h.ncpus();
    let layout = h.sched().layout();
    let mut seen = vec![0u32; n];
    // Where each task was found queued (the first runqueue that holds it).
    let mut queued_on: Vec<Option<usize>> = vec![None; n];
    let mut currs = vec![None; ncpus];
    let mut bad = None;
    for d in 0..layout.domains(ncpus) {
        let cpu = d; // the first CPU of domain d in both layouts
        with_rq(h, cpu, |s, ctx, rq, _| {
            let mut count = 0;
            s.for_each_queued(rq, &ctx.tasks, &mut |t| {
                if t.index() >= seen.len() {
                    bad = Some(format!(
                        "runqueue {d} holds {t}, a task that was never created"
                    ));
                    return;
                }
                seen[t.index()] += 1;
                queued_on[t.index()].get_or_insert(d);
                count += 1;
            });
            let covered: Vec<CpuId> = match layout {
                LockLayout::Global => (0..ncpus).collect(),
                LockLayout::PerCpu => vec![cpu],
            };
            if s.nr_running(rq, cpu) != count {
                bad = Some(format!(
                    "runqueue {d} says {} runnable (nr_running) but holds {count}",
                    s.nr_running(rq, cpu)
                ));
            }
            for &c in &covered {
                currs[c] = rq.curr_on(c);
            }
            // RT before normal.
            let rank = |t: Option<TaskId>| {
                t.map_or(-1, |t| {
                    let p = &ctx.tasks[t];
                    if s.served(rq, t) {
                        // Picked by the fair server: the deadline class's (6.12+).
                        100
                    } else if p.is_rt() {
                        p.rt_priority as i32
                    } else {
                        0
                    }
                })
            };
            s.for_each_queued(rq, &ctx.tasks, &mut |t| {
                if t.index() >= n {
                    return;
                }
                let p = &ctx.tasks[t];
                if !p.is_rt() || p.state != TaskState::Queued {
                    return;
                }
                let starved = covered
                    .iter()
                    .filter(|&&c| p.cpus_allowed.contains(c))
                    .any(|&c| rank(rq.curr_on(c)) < p.rt_priority as i32);
                if layout == LockLayout::PerCpu && starved {
                    bad = Some(format!("RT {t} waits behind less important work"));
                }
            });
        });
    }
    if let Some(b) = bad {
        return Err(CoreError::new(b));
    }
    for (i, &times) in seen.iter().enumerate() {
        let t = TaskId(i as u32);
        let st = h.task_state(t);
        let allowed = h.task_allowed(t);
        let on = |d: Option<usize>| match (d, layout) {
            (Some(_), LockLayout::Global) => "the global runqueue".to_string(),
            (Some(d), LockLayout::PerCpu) => format!("cpu{d}'s runqueue"),
            (None, _) => "no runqueue".to_string(),
        };
        let wrong = match st {
            TaskState::Queued if times == 0 => Some(format!(
                "{t} is runnable but on no runqueue (the class lost it)"
            )),
            TaskState::Queued
                if layout == LockLayout::PerCpu && !allowed.contains(h.task_cpu(t)) =>
            {
                Some(format!(
                    "{t} is queued on cpu{}, outside its allowed CPUs {allowed:?}",
                    h.task_cpu(t)
                ))
            }
            TaskState::Running(c) if currs.get(c).copied().flatten() != Some(t) => Some(format!(
                "{t} is running on cpu{c} by its state, but cpu{c} runs {:?}",
                currs.get(c).copied().flatten()
            )),
            TaskState::Running(c) if times == 0 => Some(format!(
                "{t} runs on cpu{c} but the class does not hold it (the running task stays \
                 counted in its runqueue)"
            )),
            TaskState::Running(c) if !allowed.contains(c) => Some(format!(
                "{t} runs on cpu{c}, outside its allowed CPUs {allowed:?}"
            )),
            TaskState::Sleeping { .. } | TaskState::Dead | TaskState::New if times > 0 => Some(
                format!("{t} is {st:?} but still queued on {}", on(queued_on[i])),
            ),
            TaskState::Sleeping { .. } | TaskState::Dead | TaskState::New
                if currs.contains(&Some(t)) =>
            {
                let c = currs.iter().position(|&c| c == Some(t)).unwrap_or(0);
                Some(format!("{t} is {st:?} but cpu{c} runs it"))
            }
            _ if times > 1 => Some(format!(
                "{t} is {st:?} and queued {times} times (first on {})",
                on(queued_on[i])
            )),
            _ => None,
        };
        if let Some(w) = wrong {
            return Err(CoreError::new(format!("{w}; the CPUs run {currs:?}")));
        }
    }
    Ok(())
}

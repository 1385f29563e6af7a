//! The simulator's side of `--trace`: what it tells a [`TraceRecorder`] at each switch,
//! wakeup, fork, exit and sleeping-lock wait. Nothing here runs unless a recorder was given
//! (`SimConfig::trace`); the run's figures never depend on it.
//!
//! Time stamps are the simulated instants where the kernel's tracepoints fire: a switch at
//! the point of the path where `schedule()` switches (before the context switch's cost), a
//! wakeup where `try_to_wake_up` runs in the waker's path. `sched_migrate_task` is written
//! when a task starts running on a CPU other than the one it last ran on (the simulator's
//! migration count), not where `set_task_cpu` moved it.

use super::*;
use crate::trace::{kernel_prio, EventKind, PrevState, TaskIdx, TraceRecorder};

/// The recorder's task for `t` (registering it with its program's name and priority).
fn idx<D>(
    rec: &mut TraceRecorder,
    tasks: &Tasks<D>,
    procs: &[Proc],
    workload: &Workload,
    t: TaskId,
) -> TaskIdx {
    let task = &tasks[t];
    let pr = &procs[t.index()];
    let prio = kernel_prio(task.policy, task.nice, task.rt_priority);
    rec.task(pr.pid, &workload.programs[pr.prog as usize].name, prio)
}

impl<P: SchedClass> Sim<'_, '_, P> {
    pub(super) fn trace_begin(&mut self) {
        let khz = (self.machine.profile.clock.mhz * 1000.0) as u64;
        let n = self.ncpus;
        if let Some(rec) = self.cfg.trace.as_mut() {
            rec.begin(n, khz);
        }
    }

    pub(super) fn trace_end(&mut self) {
        let end = self.end_time.unwrap_or(self.now);
        if let Some(rec) = self.cfg.trace.as_mut() {
            rec.end(end);
        }
    }

    /// `cpu` switches from `prev` to `next` (a different task, or idle) at the cursor.
    pub(super) fn trace_switch(&mut self, cpu: CpuId, prev: Option<TaskId>, next: Option<TaskId>) {
        let ts = self.cursor;
        let Some(rec) = self.cfg.trace.as_mut() else {
            return;
        };
        if !rec.wants(ts) {
            return;
        }
        let p = prev.map(|p| idx(rec, &self.tasks, &self.procs, self.workload, p));
        let n = next.map(|n| idx(rec, &self.tasks, &self.procs, self.workload, n));
        let prev_state = match prev.map(|p| (self.tasks[p].state, self.procs[p.index()].block)) {
            Some((_, Block::Exiting)) | Some((TaskState::Dead, _)) => PrevState::Dead,
            Some((
                TaskState::Sleeping {
                    uninterruptible: true,
                },
                _,
            )) => PrevState::DiskSleep,
            Some((TaskState::Sleeping { .. }, _)) => PrevState::Sleep,
            _ => PrevState::Runnable,
        };
        if prev.is_none() {
            rec.push(ts, cpu, EventKind::CpuIdle { state: None });
        }
        if let (Some(nt), Some(ni)) = (next, n) {
            let last = self.procs[nt.index()].last_cpu;
            if last != super::NO_CPU && last as CpuId != cpu {
                rec.push(
                    ts,
                    cpu,
                    EventKind::Migrate {
                        task: ni,
                        orig_cpu: last,
                        dest_cpu: cpu as u32,
                    },
                );
            }
        }
        rec.push(
            ts,
            cpu,
            EventKind::Switch {
                prev: p,
                prev_state,
                next: n,
            },
        );
        if next.is_none() {
            rec.push(ts, cpu, EventKind::CpuIdle { state: Some(1) });
        }
    }

    /// `t` was woken from `waker_cpu` (by the task running there, or by an interrupt).
    pub(super) fn trace_waking(&mut self, t: TaskId, waker_cpu: CpuId, irq: bool, ts: u64) {
        let Some(rec) = self.cfg.trace.as_mut() else {
            return;
        };
        if !rec.wants(ts) {
            return;
        }
        let task = idx(rec, &self.tasks, &self.procs, self.workload, t);
        let waker = self.cpus[waker_cpu]
            .curr
            .filter(|&w| w != t)
            .map(|w| idx(rec, &self.tasks, &self.procs, self.workload, w));
        rec.push(
            ts,
            waker_cpu,
            EventKind::Waking {
                waker,
                task,
                target_cpu: self.tasks[t].cpu as u32,
                irq,
                depth: None,
            },
        );
    }

    pub(super) fn trace_fork(&mut self, cpu: CpuId, parent: TaskId, child: TaskId) {
        let ts = self.now;
        let Some(rec) = self.cfg.trace.as_mut() else {
            return;
        };
        if !rec.wants(ts) {
            return;
        }
        let p = idx(rec, &self.tasks, &self.procs, self.workload, parent);
        let c = idx(rec, &self.tasks, &self.procs, self.workload, child);
        rec.push(
            ts,
            cpu,
            EventKind::Fork {
                parent: p,
                child: c,
            },
        );
        rec.push(
            ts,
            cpu,
            EventKind::WakeupNew {
                task: c,
                target_cpu: self.tasks[child].cpu as u32,
            },
        );
    }

    /// A task of the workload is runnable at the start (as if forked just before).
    pub(super) fn trace_wakeup_new(&mut self, t: TaskId, cpu: CpuId) {
        let ts = self.now;
        let Some(rec) = self.cfg.trace.as_mut() else {
            return;
        };
        if rec.wants(ts) {
            let task = idx(rec, &self.tasks, &self.procs, self.workload, t);
            rec.push(
                ts,
                cpu,
                EventKind::WakeupNew {
                    task,
                    target_cpu: cpu as u32,
                },
            );
        }
    }

    pub(super) fn trace_exit(&mut self, cpu: CpuId, t: TaskId) {
        let ts = self.now;
        let Some(rec) = self.cfg.trace.as_mut() else {
            return;
        };
        if rec.wants(ts) {
            let task = idx(rec, &self.tasks, &self.procs, self.workload, t);
            rec.push(ts, cpu, EventKind::Exit { task });
        }
    }

    /// `t` waited for sleeping lock `l` from `since` until now.
    pub(super) fn trace_lock_wait(&mut self, cpu: CpuId, t: TaskId, l: u32, since: u64) {
        let now = self.now;
        let Some(rec) = self.cfg.trace.as_mut() else {
            return;
        };
        if since >= now || !rec.wants(since) || !rec.wants(now) {
            return;
        }
        let task = idx(rec, &self.tasks, &self.procs, self.workload, t);
        let lock = format!("lock {}", self.workload.locks[l as usize].0);
        rec.push(
            since,
            cpu,
            EventKind::LockWait {
                task,
                lock,
                begin: true,
            },
        );
        rec.push(
            now,
            cpu,
            EventKind::LockWait {
                task,
                lock: String::new(),
                begin: false,
            },
        );
    }
}

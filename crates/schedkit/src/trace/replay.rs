//! A recorded trace → a schedkit workload, with the atom model of `perf sched replay`
//! (`tools/perf/builtin-sched.c`): each task becomes a list of *run X ns*, *sleep*, *wake
//! task Y*, *fork*, *exit* atoms rebuilt from its switches and wakeups, and the atoms become
//! the statements of a workload built directly as data ([`Replay::build`]); [`Replay::toml`]
//! writes the same statements as the workload file (TOML) `--emit-workload` saves, which reads
//! back into the same workload. Depends on the trace model, the workload types and the
//! machine's prices, never on the simulator.
//!
//! - Run: the CPU time between a switch-in and the switch-out that ends it; preemptions do
//!   not split a run (the scheduler under test decides those).
//! - Sleep: a switch-out in S/D. If a task woke it (`sched_waking` in task context) the
//!   sleeper waits on its own wake semaphore (`recv wake.K`) and the waker posts it at that
//!   point of its own run (`send wake.K`), as perf's replay threads do with semaphores; who
//!   woke whom is kept. If an interrupt woke it (the `h`/`s` flag: a timer, I/O) or the idle
//!   task did, it is a timed sleep of the recorded length (`sleep`, or `io` for D) whose
//!   interrupt runs on the CPU of the recorded `sched_waking` (`irq-on N`), where the kernel's
//!   ran: `select_task_rq` chooses from that CPU.
//! - Fork: the parent forks the child's group at that point (`thread` where the trace shows
//!   the same thread group); exit ends the program.
//! - An exiting task's wakeup of its parent blocked in `wait()` is sync (`send wake.K sync`),
//!   told from the SIGCHLD signal's by the recorded preemption depth
//!   (`EXIT_NOTIFY_SYNC_DEPTH`).
//! - A task's own `sched_setscheduler()` that returned 0 (the syscall tracepoints) is
//!   `policy P` at that point of its program.
//!
//! A recorded run already contains the kernel work of the system calls around it (the real
//! pipe read before a sleep, the real `exit()`), the switch that began it, and, for a waker,
//! the IPI its wakeup of a task on another CPU sent; the simulator charges its own price for
//! the statements that stand for the calls (`recv`, `send`, `sleep`, `fork`, `exit`), for each
//! switch and for each IPI its schedule sends. As `perf sched replay` subtracts its measured
//! overheads from each burn, the target machine's price ([`OpPrices`]) of each such statement
//! is taken off the run before it, and those of the recorded switch and IPI off the run that
//! holds them (what a run is too short to pay comes off the next one), so that the replay's
//! CPU time is the recorded one, not the recorded one plus the model's costs twice.
//!
//! Simplifications, counted in [`ReplayStats`]: a task's CPU affinity is not in the trace
//! events, so every task may run anywhere (per-CPU kernel threads included); a wakeup of a
//! task that is not asleep (woken before it switched out) is dropped, as perf drops
//! "target-less" ones; time a task spent in the kernel is replayed as user computation;
//! a sleep still open when the trace ends ends the task there.

use super::*;
use std::fmt::Write as _;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ReplayStats {
    pub tasks: u64,
    /// Tasks running or runnable at the start, and ones forked inside the trace.
    pub initial_tasks: u64,
    pub forked_tasks: u64,
    pub run_atoms: u64,
    pub run_ns: u64,
    /// Sleeps ended by another task's wakeup (wait on a semaphore the waker posts).
    pub task_wakeups: u64,
    /// Of those, wakeups the waker makes with WF_SYNC (`send wake.K sync`): an exiting
    /// task's wakeup of its parent blocked in `wait()` (`EXIT_NOTIFY_SYNC_DEPTH`).
    pub sync_wakeups: u64,
    /// Sleeps ended by an interrupt or the idle task (timed sleeps).
    pub timed_sleeps: u64,
    /// Sleeps with no recorded wakeup before the task ran again (timed sleeps too).
    pub sleeps_without_wakeup: u64,
    /// Wakeups of a task that was not asleep: dropped.
    pub dropped_wakeups: u64,
    /// Of those, wakeups of a task on its way to sleep (`Trace::wakings_of_blocking`) that
    /// could not be kept as a task's (from interrupt context): the sleep that follows
    /// replays as a timed one.
    pub dropped_wakeups_of_blocking: u64,
    /// Of the task wakeups, those of a task on its way to sleep: the waker's `wake` at its
    /// `sched_waking`, the wakee's wait at its switch to sleep, which follows.
    pub task_wakeups_of_blocking: u64,
    pub forks: u64,
    pub exits: u64,
    /// A task's own `sched_setscheduler()` (the trace's syscall events), replayed as
    /// `policy P` where it was made.
    pub policy_changes: u64,
    /// Policy changes not replayed: of another task (`chrt -p`), or to a policy the replay
    /// does not set (SCHED_DEADLINE needs its reservation).
    pub policy_changes_dropped: u64,
    /// Prices of the replay's system calls taken off the recorded runs, and what no run was
    /// long enough to pay.
    pub deducted_ns: u64,
    pub undeducted_ns: u64,
    /// Timer interrupts' entries (and exits from idle) taken off timed sleeps.
    pub sleep_deducted_ns: u64,
}

/// What the target machine charges for the statements a replay inserts, and for the
/// mechanisms it models itself that the recorded runs already paid for, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpPrices {
    /// `send`/`recv` on a semaphore, `sleep`, `io`.
    pub syscall_ns: u64,
    pub fork_ns: u64,
    pub exit_ns: u64,
    /// The switch itself, which the simulator charges at each switch-in and which each
    /// recorded run that began with a switch-in already holds.
    pub switch_ns: u64,
    /// Sending the IPI of a wakeup on another CPU, which the simulator charges the waker and
    /// which a recorded wakeup of a task on another CPU already cost its waker.
    pub ipi_send_ns: u64,
    /// The share of a busy CPU's time its tick interrupts take, in parts per million
    /// (`timer_irq_ns` × HZ): a recorded run holds its ticks, and the simulator charges its own.
    pub tick_ppm: u64,
    /// On a machine whose timed sleeps end with an interrupt of their own
    /// (`costs.timer_wake_exit_ns`), the part of that interrupt before its wakeup, and the
    /// exit from idle before it where the CPU was idle: a recorded sleep ends at the wakeup
    /// (`sched_waking`), after both, and the simulator adds them again.
    pub timer_entry_ns: u64,
    pub idle_exit_ns: u64,
    /// The whole of such an interrupt, which a recorded run it interrupted holds.
    pub timer_irq_ns: u64,
    /// The target machine's CPU count (0: unknown): a recorded interrupt's CPU beyond it is
    /// taken modulo it.
    pub cpus: u32,
}

impl OpPrices {
    pub fn of_machine(m: &crate::machine::Machine) -> OpPrices {
        let mut p = OpPrices {
            syscall_ns: m.profile.costs.syscall_ns as u64,
            fork_ns: m.profile.kernel.fork_ns as u64,
            exit_ns: m.profile.kernel.exit_ns as u64,
            switch_ns: m.profile.costs.context_switch_ns as u64,
            ipi_send_ns: m.profile.costs.ipi_send_ns as u64,
            tick_ppm: (m.profile.costs.timer_irq_ns * m.profile.clock.hz as f64 / 1e3) as u64,
            cpus: m.ncpus() as u32,
            ..OpPrices::default()
        };
        if let Some(after) = m.profile.costs.timer_wake_exit_ns {
            p.timer_entry_ns = (m.profile.costs.timer_irq_ns - after).max(0.0) as u64;
            p.idle_exit_ns = m.profile.costs.idle_exit_ns as u64;
            p.timer_irq_ns = m.profile.costs.timer_irq_ns as u64;
        }
        p
    }

    fn of(&self, a: &Atom) -> u64 {
        match a {
            Atom::Run(_) | Atom::Paid(_) => 0,
            Atom::WaitWake | Atom::Sleep { .. } | Atom::Wake { ipi: false, .. } => self.syscall_ns,
            Atom::Wake { ipi: true, .. } => self.syscall_ns + self.ipi_send_ns,
            Atom::Fork(_) => self.fork_ns,
            Atom::SetPolicy(..) => self.syscall_ns,
            Atom::Exit => self.exit_ns,
        }
    }
}

/// Takes each statement's price off the run before it (a deficit carries to the next run),
/// and each `Paid` cost off the run after it.
fn deduct(atoms: &mut [Atom], prices: &OpPrices, st: &mut ReplayStats) {
    let mut last_run: Option<usize> = None;
    let mut deficit = 0u64;
    for i in 0..atoms.len() {
        if let Atom::Run(ns) = &mut atoms[i] {
            // The ticks the recorded run holds.
            let ticks = (*ns as u128 * prices.tick_ppm as u128 / 1_000_000) as u64;
            *ns -= ticks.min(*ns);
            st.deducted_ns = st.deducted_ns.saturating_add(ticks);
            let take = deficit.min(*ns);
            *ns -= take;
            deficit -= take;
            st.deducted_ns = st.deducted_ns.saturating_add(take);
            last_run = Some(i);
            continue;
        }
        if let Atom::Paid(ns) = atoms[i] {
            deficit = deficit.saturating_add(ns);
            continue;
        }
        let mut price = prices.of(&atoms[i]);
        if let Some(r) = last_run {
            if let Atom::Run(ns) = &mut atoms[r] {
                let take = price.min(*ns);
                *ns -= take;
                price -= take;
                st.deducted_ns = st.deducted_ns.saturating_add(take);
            }
        }
        deficit = deficit.saturating_add(price);
    }
    st.undeducted_ns = st.undeducted_ns.saturating_add(deficit);
}

/// The preemption depth at which `exit_notify` wakes a parent blocked in `wait()`: with
/// WF_SYNC, through `__wake_up_parent` → `__wake_up_sync_key(&parent->signal->wait_chldexit)`
/// (kernel/exit.c of v6.18). The path holds `tasklist_lock` (`write_lock_irq` in
/// `exit_notify`), the parent's `siglock` (`do_notify_parent`, kernel/signal.c), the wait
/// queue's lock (`__wake_up_common_lock`, kernel/sched/wait.c), `try_to_wake_up`'s
/// `guard(preempt)` and the wakee's `pi_lock` (kernel/sched/core.c) when `sched_waking` fires:
/// five. The other wakeup an exiting child makes of its parent, the SIGCHLD signal's
/// (`__send_signal_locked` → `signal_wake_up`, for a parent with a handler, such as a
/// parallel `make`), holds no wait queue's lock and fires at four, and is not sync. The
/// suite's recordings show both: `make -j2` woken at 4 by its children, `cc` and
/// `hackbench` at 5 (`docs/validation.md`). A trace without depths (perf's text, or the
/// simulator's own) gives no sync wakeup.
const EXIT_NOTIFY_SYNC_DEPTH: u8 = 5;

/// Whether an exiting task's wakeup recorded at `depth` is `exit_notify`'s sync one.
fn exit_wakeup_is_sync(depth: Option<u8>) -> bool {
    depth == Some(EXIT_NOTIFY_SYNC_DEPTH)
}

#[derive(Clone, Debug, PartialEq)]
enum Atom {
    Run(u64),
    WaitWake,
    /// A timed sleep; `irq_cpu`: the CPU whose interrupt ended it in the recording (the
    /// `sched_waking`'s), where one did.
    Sleep {
        ns: u64,
        io: bool,
        irq_cpu: Option<u32>,
    },
    /// Wake a task; `ipi` where the recorded wakeup was of a task on another CPU (its waker
    /// paid an IPI), `sync` where it was `exit_notify`'s wakeup of the parent
    /// ([`exit_wakeup_is_sync`]).
    Wake {
        task: TaskIdx,
        ipi: bool,
        sync: bool,
    },
    /// A cost the recorded run that follows already holds and the simulator charges itself
    /// (the switch that began it): taken off that run, never written out.
    Paid(u64),
    Fork(TaskIdx),
    Exit,
    /// The task's own `sched_setscheduler()`: the policy and, for FIFO and RR, the priority.
    SetPolicy(crate::task::SchedPolicy, u8),
}

/// The replay's policy for a Linux policy number (`include/uapi/linux/sched.h`), or `None`
/// for one it does not set (SCHED_DEADLINE, 6, needs the reservation `sched_setattr` passes).
fn policy_of(linux: u32) -> Option<crate::task::SchedPolicy> {
    use crate::task::SchedPolicy::*;
    match linux {
        0 => Some(Normal),
        1 => Some(Fifo),
        2 => Some(Rr),
        3 => Some(Batch),
        5 => Some(Idle),
        _ => None,
    }
}

#[derive(Clone, Default)]
struct T {
    atoms: Vec<Atom>,
    run_acc: u64,
    clock: RunClock,
    /// Asleep since, and whether uninterruptibly.
    blocked: Option<(u64, bool)>,
    forked: bool,
    exiting: bool,
    exited: bool,
    woken_by_task: bool,
    /// Woken on its way to sleep (`Trace::wakings_of_blocking`): the waker and the index of
    /// its `Wake` atom, for the sleep the task's next switch-out begins.
    prewoken: Option<(usize, usize)>,
}

impl T {
    /// Adds the run up to `ts` (it goes on running) and closes it into an atom.
    fn flush(&mut self, ts: u64, start: u64) {
        self.run_acc = self.run_acc.saturating_add(self.clock.split(ts, start));
        self.close_run();
    }

    /// The run so far becomes an atom.
    fn close_run(&mut self) {
        if self.run_acc > 0 {
            self.atoms.push(Atom::Run(self.run_acc));
            self.run_acc = 0;
        }
    }
}

/// One statement of a rebuilt task's program: what a file's `compute`, `recv wake.K`,
/// `sleep`/`io`, `send wake.K`, `fork`/`thread` and `exit` say.
#[derive(Clone, Debug, PartialEq)]
enum Stmt {
    Compute(u64),
    Recv(u32),
    Sleep {
        ns: u64,
        io: bool,
        irq_cpu: Option<u32>,
    },
    /// `sync`: the waker's wakeup carries WF_SYNC (`send wake.K sync`).
    Send {
        chan: u32,
        sync: bool,
    },
    Fork {
        child: TaskIdx,
        thread: bool,
    },
    Exit,
    /// `policy P [PRIO]`: the task's own `sched_setscheduler()`.
    Policy {
        policy: crate::task::SchedPolicy,
        rt_priority: u8,
    },
}

/// How a rebuilt task is scheduled, from its recorded priority.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sched {
    Normal,
    Nice(i32),
    Fifo(u8),
}

/// One recorded task, rebuilt: a group of its own (one task, or a template its parent forks).
struct Rebuilt {
    group: String,
    forked: bool,
    sched: Sched,
    pid: u32,
    comm: String,
    stmts: Vec<Stmt>,
}

/// The workload of a trace, as data (what [`Replay::build`] makes a [`Workload`] of and
/// [`Replay::toml`] writes out for `--emit-workload`), and what the conversion did.
///
/// [`Workload`]: crate::workload::Workload
pub struct Replay {
    pub stats: ReplayStats,
    name: String,
    /// The comment that opens the exported file (the trace and the prices taken off).
    header: String,
    /// Wake semaphores, `wake.0` .. `wake.{nchan-1}`.
    nchan: u32,
    tasks: Vec<Rebuilt>,
}

/// Rebuilds the tasks of `trace` as a workload named `name`, for a machine with `prices`.
pub fn to_workload(trace: &Trace, name: &str, prices: &OpPrices) -> Replay {
    let start = trace.start_ns;
    let mut ts_: Vec<T> = vec![T::default(); trace.tasks.len()];
    let mut st = ReplayStats::default();
    for e in &trace.events {
        let ts = e.ts;
        match e.kind {
            EventKind::Switch {
                prev,
                prev_state,
                next,
            } => {
                if let Some(p) = prev {
                    let t = &mut ts_[p];
                    t.run_acc = t.run_acc.saturating_add(t.clock.stop(ts, start));
                    if prev_state == PrevState::Dead {
                        t.close_run();
                        if !t.exited {
                            t.atoms.push(Atom::Exit);
                            t.exited = true;
                        }
                    } else if prev_state.is_sleep() {
                        t.close_run();
                        if t.prewoken.take().is_some() {
                            // Woken on its way here: it waits for the post its waker made
                            // at the recorded waking (whether it then sleeps is the replay's
                            // timing, as for every other wakeup).
                            t.atoms.push(Atom::WaitWake);
                            t.woken_by_task = true;
                        } else {
                            t.blocked = Some((ts, prev_state == PrevState::DiskSleep));
                        }
                    }
                    if let Some((w, i)) = ts_[p].prewoken.take() {
                        // Not a sleep after all (the importer's mark says it would be): the
                        // waker's post is undone and the wakeup dropped.
                        ts_[w].atoms[i] = Atom::Paid(0);
                        st.task_wakeups -= 1;
                        st.task_wakeups_of_blocking -= 1;
                        st.dropped_wakeups += 1;
                    }
                }
                if let Some(n) = next {
                    let t = &mut ts_[n];
                    if let Some((since, io)) = t.blocked.take() {
                        // Ran again with no wakeup recorded (lost event, or a wakeup
                        // outside the traced events): a timed sleep.
                        t.atoms.push(Atom::Sleep {
                            ns: ts.saturating_sub(since),
                            io,
                            irq_cpu: None,
                        });
                        st.sleeps_without_wakeup += 1;
                    }
                    // The recorded run starting here holds the switch's own cost.
                    t.atoms.push(Atom::Paid(prices.switch_ns));
                    t.clock.start(ts);
                }
            }
            EventKind::Waking {
                waker,
                task,
                irq,
                target_cpu,
                depth,
            } => {
                // A waker past its `sched_process_exit` at `exit_notify`'s depth: its wakeup
                // of its parent in `wait()`, made with WF_SYNC.
                let sync = waker.is_some_and(|w| ts_[w].exiting) && exit_wakeup_is_sync(depth);
                {
                    let t = &mut ts_[task];
                    if !t.clock.seen() {
                        // First seen being woken: asleep since the trace began.
                        t.clock.mark_seen();
                        t.blocked = Some((start, false));
                    }
                }
                let Some((since, io)) = ts_[task].blocked.take() else {
                    let blocking = trace.wakings_of_blocking.contains(&(ts, task))
                        && ts_[task].prewoken.is_none();
                    match waker {
                        Some(w) if blocking && !irq && w != task && !ts_[w].exited => {
                            // The wakee is on its way to sleep (the kernel waits for it to
                            // leave its CPU and queues it): the waker posts now, and the
                            // wakee's switch to sleep, next, becomes its wait.
                            let wt = &mut ts_[w];
                            wt.flush(ts, start);
                            wt.atoms.push(Atom::Wake {
                                task,
                                ipi: target_cpu != e.cpu,
                                sync,
                            });
                            let i = wt.atoms.len() - 1;
                            ts_[task].prewoken = Some((w, i));
                            st.task_wakeups += 1;
                            st.task_wakeups_of_blocking += 1;
                        }
                        _ => {
                            st.dropped_wakeups += 1;
                            if blocking {
                                st.dropped_wakeups_of_blocking += 1;
                            }
                        }
                    }
                    continue;
                };
                match waker {
                    Some(w) if !irq && w != task && !ts_[w].exited => {
                        let wt = &mut ts_[w];
                        wt.flush(ts, start);
                        wt.atoms.push(Atom::Wake {
                            task,
                            ipi: target_cpu != e.cpu,
                            sync,
                        });
                        let t = &mut ts_[task];
                        t.atoms.push(Atom::WaitWake);
                        t.woken_by_task = true;
                        st.task_wakeups += 1;
                    }
                    _ => {
                        // Ended in an interrupt (or by the idle task): the simulator's own
                        // interrupt, and exit from idle where the recorded CPU was idle, come
                        // before its wakeup.
                        let ns = ts.saturating_sub(since);
                        let entry = prices.timer_entry_ns
                            + if waker.is_none() {
                                prices.idle_exit_ns
                            } else {
                                0
                            };
                        let take = entry.min(ns);
                        st.sleep_deducted_ns = st.sleep_deducted_ns.saturating_add(take);
                        // The interrupt ran on the CPU of the recorded waking (on a machine
                        // with fewer CPUs, that number modulo its count).
                        let irq_cpu = match prices.cpus {
                            0 => e.cpu,
                            n => e.cpu % n,
                        };
                        ts_[task].atoms.push(Atom::Sleep {
                            ns: ns - take,
                            io,
                            irq_cpu: Some(irq_cpu),
                        });
                        st.timed_sleeps += 1;
                        // The task the interrupt came in on holds it in its recorded run.
                        if let Some(w) = waker.filter(|&w| w != task && prices.timer_irq_ns > 0) {
                            let wt = &mut ts_[w];
                            if wt.clock.running() {
                                wt.flush(ts, start);
                                wt.atoms.push(Atom::Paid(prices.timer_irq_ns));
                            }
                        }
                    }
                }
            }
            EventKind::Fork { parent, child } => {
                let p = &mut ts_[parent];
                p.flush(ts, start);
                p.atoms.push(Atom::Fork(child));
                let c = &mut ts_[child];
                c.forked = true;
                c.clock.mark_seen();
                st.forks += 1;
            }
            EventKind::Exit { task } => ts_[task].exiting = true,
            EventKind::SetPolicy { task, policy, by } => {
                // A task's own call is replayed where it made it. Another task's (`chrt -p`)
                // is not: the replay has no statement for changing someone else's policy at a
                // point of the caller's program.
                let t = &mut ts_[task];
                match policy_of(policy) {
                    Some(p) if by == task => {
                        // FIFO and RR: the task's recorded priority (a trace's `prio` is 99 -
                        // rt_priority for them), the last one the trace shows, as for the
                        // group's starting policy: a simplification where a task changes its
                        // RT priority more than once.
                        let prio = trace.tasks[task].prio;
                        let rt = if p.is_rt() && prio < 100 {
                            (99 - prio).clamp(1, 99) as u8
                        } else if p.is_rt() {
                            1
                        } else {
                            0
                        };
                        t.flush(ts, start);
                        t.atoms.push(Atom::SetPolicy(p, rt));
                        st.policy_changes += 1;
                    }
                    _ => st.policy_changes_dropped += 1,
                }
            }
            _ => {}
        }
    }
    let end = trace.end_ns.max(start);
    for t in ts_.iter_mut() {
        if t.clock.running() {
            t.run_acc = t.run_acc.saturating_add(t.clock.stop(end, start));
        }
        t.close_run();
        if t.exiting && !t.exited {
            t.atoms.push(Atom::Exit);
            t.exited = true;
        }
    }

    for t in ts_.iter_mut() {
        deduct(&mut t.atoms, prices, &mut st);
    }

    // Wake semaphores, numbered in task order, for the tasks some task wakes.
    let mut wake_chan = vec![None; ts_.len()];
    let mut nchan = 0u32;
    for (i, t) in ts_.iter().enumerate() {
        if t.woken_by_task {
            wake_chan[i] = Some(nchan);
            nchan += 1;
        }
    }
    let header = format!(
        "# Rebuilt by `schedkit replay` from a trace of {} CPUs, {:.6} s, {} tasks\n\
         # (perf sched replay's atoms: run, sleep, wake a task, fork, exit; see docs/traces.md).\n\
         # Runs are net of the target machine's prices of the statements after them\n\
         # (system call {} ns, fork {} ns, exit {} ns), of the switch that began them ({} ns)\n\
         # and of the IPI of a recorded wakeup on another CPU ({} ns), and of their ticks\n\
         # ({} ppm); timed sleeps are net of their interrupt's entry ({} ns) and, where the\n\
         # CPU was idle, of the exit from idle ({} ns): the simulator charges its own.\n",
        trace.ncpus,
        (end - start) as f64 / 1e9,
        trace.tasks.len(),
        prices.syscall_ns,
        prices.fork_ns,
        prices.exit_ns,
        prices.switch_ns,
        prices.ipi_send_ns,
        prices.tick_ppm,
        prices.timer_entry_ns,
        prices.idle_exit_ns,
    );
    let mut tasks = Vec::with_capacity(ts_.len());
    for (i, t) in ts_.iter().enumerate() {
        let task = &trace.tasks[i];
        st.tasks += 1;
        if t.forked {
            st.forked_tasks += 1;
        } else {
            st.initial_tasks += 1;
        }
        let sched = if task.prio < 100 {
            Sched::Fifo((99 - task.prio).clamp(1, 99) as u8)
        } else if task.prio != 120 {
            Sched::Nice((task.prio - 120).clamp(-20, 19))
        } else {
            Sched::Normal
        };
        let mut stmts = Vec::with_capacity(t.atoms.len());
        for a in &t.atoms {
            stmts.push(match a {
                Atom::Run(0) | Atom::Paid(_) => continue,
                Atom::Run(ns) => {
                    st.run_atoms += 1;
                    st.run_ns = st.run_ns.saturating_add(*ns);
                    Stmt::Compute(*ns)
                }
                Atom::WaitWake => Stmt::Recv(wake_chan[i].unwrap_or(0)),
                Atom::Sleep { ns, io, irq_cpu } => Stmt::Sleep {
                    ns: *ns,
                    io: *io,
                    irq_cpu: *irq_cpu,
                },
                Atom::Wake { task: y, sync, .. } => match wake_chan[*y] {
                    Some(chan) => {
                        st.sync_wakeups += u64::from(*sync);
                        Stmt::Send { chan, sync: *sync }
                    }
                    None => continue,
                },
                Atom::SetPolicy(policy, rt_priority) => Stmt::Policy {
                    policy: *policy,
                    rt_priority: *rt_priority,
                },
                Atom::Fork(c) => Stmt::Fork {
                    child: *c,
                    thread: task.tgid.is_some() && trace.tasks[*c].tgid == task.tgid,
                },
                Atom::Exit => {
                    st.exits += 1;
                    Stmt::Exit
                }
            });
        }
        if t.atoms.is_empty() {
            stmts.push(Stmt::Exit);
        }
        tasks.push(Rebuilt {
            group: group_name(trace, i),
            forked: t.forked,
            sched,
            pid: task.pid,
            comm: task.comm.clone(),
            stmts,
        });
    }
    Replay {
        stats: st,
        name: name.to_string(),
        header,
        nchan,
        tasks,
    }
}

impl Stmt {
    /// The statement as the workload file writes it.
    fn text(&self, tasks: &[Rebuilt]) -> String {
        match self {
            Stmt::Compute(ns) => format!("compute {ns}ns"),
            Stmt::Recv(c) => format!("recv wake.{c}"),
            Stmt::Sleep { ns, io, irq_cpu } => {
                let verb = if *io { "io" } else { "sleep" };
                match irq_cpu {
                    Some(c) => format!("{verb} {ns}ns irq-on {c}"),
                    None => format!("{verb} {ns}ns"),
                }
            }
            Stmt::Send { chan, sync: false } => format!("send wake.{chan}"),
            Stmt::Send { chan, sync: true } => format!("send wake.{chan} sync"),
            Stmt::Fork { child, thread } => format!(
                "{} {}",
                if *thread { "thread" } else { "fork" },
                tasks[*child].group
            ),
            Stmt::Exit => "exit".to_string(),
            Stmt::Policy {
                policy,
                rt_priority,
            } if policy.is_rt() => format!("policy {} {rt_priority}", policy.name()),
            Stmt::Policy { policy, .. } => format!("policy {}", policy.name()),
        }
    }
}

impl Replay {
    /// The workload file (TOML) of the replay, for `--emit-workload`: read back with
    /// [`crate::workload::file`], it is the workload [`Replay::build`] makes, but for where
    /// each statement came from (a line of the file there, the trace task here).
    pub fn toml(&self) -> String {
        let mut out = self.header.clone();
        let _ = writeln!(
            out,
            "name = {}\nthroughput = \"tasks/s\"\n",
            toml_str(&self.name)
        );
        if self.nchan > 0 {
            let _ = writeln!(
                out,
                "[[channel]]\nname = \"wake\"\ncount = {}\nkind = \"semaphore\"\n",
                self.nchan
            );
        }
        for t in &self.tasks {
            let _ = writeln!(out, "[[group]]\nname = \"{}\"", t.group);
            let _ = writeln!(out, "count = {}", if t.forked { 0 } else { 1 });
            match t.sched {
                Sched::Fifo(prio) => {
                    let _ = writeln!(out, "policy = \"fifo\"\nrt_priority = {prio}");
                }
                Sched::Nice(n) => {
                    let _ = writeln!(out, "nice = {n}");
                }
                Sched::Normal => {}
            }
            let _ = writeln!(out, "# pid {} comm {}", t.pid, t.comm.escape_default());
            out.push_str("program = [\n");
            for s in &t.stmts {
                let _ = writeln!(out, "  \"{}\",", s.text(&self.tasks));
            }
            out.push_str("]\n\n");
        }
        out
    }

    /// The workload itself, built from the rebuilt tasks as data: one program per recorded
    /// task (its group), run by one task unless the task was forked inside the trace, and one
    /// wake semaphore per task that another task wakes. Errors name the trace task;
    /// [`Workload::validate`] is the last check.
    ///
    /// [`Workload::validate`]: crate::workload::Workload::validate
    pub fn build(&self) -> Result<crate::workload::Workload, String> {
        use crate::task::SchedPolicy;
        use crate::workload::limits::{MAX_PROGRAM_OPS, MAX_TASKS, MAX_TOTAL_OPS};
        use crate::workload::program::MAX_SAMPLE_NS;
        use crate::workload::{ChanKind, ChannelSpec, Dist, Op, Program, TaskSpec, Workload};
        let mut w = Workload {
            name: self.name.clone(),
            programs: Vec::with_capacity(self.tasks.len()),
            channels: vec![
                ChannelSpec {
                    kind: ChanKind::Semaphore,
                    capacity: None,
                };
                self.nchan as usize
            ],
            tasks: Vec::new(),
            throughput_unit: "tasks/s".into(),
            per_op_label: None,
            rtmigrate: None,
            locks: Vec::new(),
            throughput_scale: 1.0,
            changes: Vec::new(),
        };
        let mut total_ops = 0u64;
        for (i, t) in self.tasks.iter().enumerate() {
            let what = || format!("trace task {i} (pid {}, {})", t.pid, t.group);
            if t.stmts.len() as u64 > MAX_PROGRAM_OPS {
                return Err(format!(
                    "{}: {} statements, more than the limit of {MAX_PROGRAM_OPS} in one program",
                    what(),
                    t.stmts.len()
                ));
            }
            total_ops += t.stmts.len() as u64;
            if total_ops > MAX_TOTAL_OPS {
                return Err(format!(
                    "{}: the programs have more than {MAX_TOTAL_OPS} statements together",
                    what()
                ));
            }
            let dur = |ns: u64| {
                if ns > MAX_SAMPLE_NS {
                    Err(format!(
                        "{}: {ns} ns is longer than the simulator's limit of 1e6 s",
                        what()
                    ))
                } else {
                    Ok(Dist::Const(ns))
                }
            };
            let mut ops = Vec::with_capacity(t.stmts.len());
            for s in &t.stmts {
                ops.push(match *s {
                    Stmt::Compute(ns) => Op::Compute(dur(ns)?),
                    Stmt::Recv(c) => Op::Recv(c),
                    Stmt::Sleep { ns, io, irq_cpu } => Op::Sleep {
                        dur: dur(ns)?,
                        uninterruptible: io,
                        irq_cpu,
                    },
                    Stmt::Send { chan, sync: false } => Op::Send(chan),
                    Stmt::Send { chan, sync: true } => Op::SendSync(chan),
                    Stmt::Fork { child, thread } => Op::Fork {
                        prog: child as u32,
                        thread,
                    },
                    Stmt::Exit => Op::Exit,
                    Stmt::Policy {
                        policy,
                        rt_priority,
                    } => Op::SetPolicy(policy, rt_priority),
                });
            }
            let prog = i as u32;
            w.programs.push(Program::new(t.group.clone(), ops));
            if !t.forked {
                if w.tasks.len() as u64 >= MAX_TASKS {
                    return Err(format!(
                        "{}: more than the limit of {MAX_TASKS} tasks",
                        what()
                    ));
                }
                let mut ts = TaskSpec::new(prog);
                match t.sched {
                    Sched::Fifo(prio) => {
                        ts.policy = SchedPolicy::Fifo;
                        ts.rt_priority = prio;
                    }
                    Sched::Nice(n) => ts.nice = n,
                    Sched::Normal => {}
                }
                // Each group its own address space, as a file's groups are numbered.
                ts.mm = prog;
                ts.origin = Some(what());
                w.tasks.push(ts);
            }
        }
        if w.tasks.is_empty() {
            return Err(
                "every task of the trace was forked inside it: nothing starts the replay".into(),
            );
        }
        w.validate()?;
        Ok(w)
    }
}

/// The workload group (and program, and simulated task name) that stands for task `i`:
/// `t<index>_<pid>_<comm>`.
pub fn group_name(trace: &Trace, i: TaskIdx) -> String {
    let comm: String = trace.tasks[i]
        .comm
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("t{}_{}_{comm}", i, trace.tasks[i].pid)
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The workload of `trace`, built as data (see [`Replay::build`]), and the replay it was
/// built from (its statistics, and the TOML `--emit-workload` writes: [`Replay::toml`]).
pub fn workload(
    trace: &Trace,
    name: &str,
    prices: &OpPrices,
) -> Result<(crate::workload::Workload, Replay), String> {
    let span = trace.end_ns.saturating_sub(trace.start_ns);
    if span > crate::workload::program::MAX_SAMPLE_NS {
        return Err(format!(
            "the trace spans {:.0} s, more than the simulator's limit of {:.0} s (a time stamp far from the others?)",
            span as f64 / 1e9,
            crate::workload::program::MAX_SAMPLE_NS as f64 / 1e9
        ));
    }
    let r = to_workload(trace, name, prices);
    let w = r.build()?;
    Ok((w, r))
}

#[cfg(test)]
mod tests;

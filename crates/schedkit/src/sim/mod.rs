//! The simulated SMP machine: a deterministic discrete-event host of a [`SchedClass`].
//!
//! The simulator owns CPUs, tasks, the clock, the runqueue locks and the workload's channels.
//! Each CPU is always in one *segment*: running a task in user space, in the kernel (a system
//! call, `schedule()`, an interrupt), or idle. Events are segment ends, timer ticks, sleep
//! timers and IPIs, ordered by (time, sequence number), so a run is a pure function of
//! (policy, machine, workload, seed).
//!
//! Costs come from the machine profile: system calls and kernel work from `[kernel]`, context
//! switches, interrupts and IPIs from `[costs]`, the policy's own work from the ops it reports
//! (priced in [`cost`]), runqueue locks from [`lock`], cache refills from [`cache`].
//! The kernel is not preemptible (as in 2.4 and the 2.5 series the O(1) scheduler entered):
//! a reschedule request takes effect when the CPU returns to user space, at once if it is in
//! user space (the tick or IPI interrupts it), or when it idles.
//!
//! This file holds a run's knobs and errors, `simulate`, and the `Sim` state with its
//! construction. The rest is one job per file: `engine` (the event loop and the entries into
//! the core), `cpu` (segments and their accounting), `program` and `syscall` (a task's
//! statements and their kernel side), `lifecycle` (tasks created, placed and retired),
//! `process` (the host's side of a task), `host` (the `sched_core::Host` face), `speed` (the
//! speed model's events), `audit` (the checks), `stats` and `result` (what the run counts and
//! the result made of it), `trace`, `watchdog` (the starvation watchdog); and the models `cache`, `cost`, `freq`, `interconnect`,
//! `lock` and `mm`.

pub mod cache;
pub mod cost;
pub mod decisions;
pub mod freq;
pub mod interconnect;
pub mod lock;
pub mod mm;
pub mod watchdog;
pub use crate::sleeplock;

use crate::class::*;
use crate::ds::work::{Line, LineSink, OpCounter, Work};
use crate::machine::Machine;
use crate::metrics::*;
use crate::sched_core::{self as core, Sched};
use crate::task::{CpuId, TaskId, TaskState, Tasks};
use crate::workload::{ChanKind, KernelWork, Op, Workload};
use cache::{CacheModel, L2Spec, Refill, Warmth};
use cost::LineCosts;
use cost::OpCosts;
use hdrhistogram::Histogram;
use interconnect::Interconnect;
use lock::LockModel;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use cpu::{Cpu, SegKind};
use engine::Ev;
use process::{AudioStream, Block, LoopFrame, Proc, SpinState, NO_CPU, PROC_HOT_BYTES};
use program::Step;
use stats::{CpuAccount, PhaseTally, RunTally, SpinRecord};
use syscall::Chan;

/// Knobs of one run.
pub struct SimConfig<'a> {
    /// Simulated time limit, ns.
    pub duration_ns: u64,
    pub seed: u64,
    /// Run the full invariant audit every this many events (0: only at the end).
    pub audit_every: u64,
    /// Called now and then with the fraction of `duration_ns` simulated so far.
    pub progress: Option<&'a mut dyn FnMut(f64)>,
    /// How the workload's semaphores that follow the run (the big kernel lock) hand over.
    pub lock_mode: crate::workload::LockMode,
    /// Tasks that may be alive at once before a fork is refused (a fork bomb's stop).
    pub max_live_tasks: u64,
    /// Record the run's scheduler events here (switches, wakeups with their waker, forks,
    /// exits, migrations, idle transitions, lock waits), for `--trace` and `replay`.
    pub trace: Option<&'a mut crate::trace::TraceRecorder>,
    /// The cpufreq governor (`None`: the profile's default; ignored by a profile without
    /// frequency scaling).
    pub governor: Option<crate::machine::Governor>,
    /// Where the run's phases begin, ns (after 0, before the duration, increasing): the
    /// result then also gives each phase's own figures.
    pub phases: Vec<u64>,
    /// The starvation watchdog (`None`: none, and the result has no `starved` report).
    pub starve: Option<watchdog::Starve>,
}

impl Default for SimConfig<'_> {
    fn default() -> Self {
        SimConfig {
            duration_ns: 10_000_000_000,
            seed: 1,
            audit_every: 0,
            progress: None,
            lock_mode: crate::workload::LockMode::Handoff,
            max_live_tasks: crate::workload::limits::MAX_TASKS,
            trace: None,
            governor: None,
            phases: Vec::new(),
            starve: None,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SimError {
    #[error("the run is impossible: {0}")]
    Impossible(String),
    #[error("simulator invariant violated at t={at_ns} ns: {what}")]
    Invariant { at_ns: u64, what: String },
}

/// Why a run stopped.
#[derive(Clone, Debug, PartialEq)]
enum StopReason {
    /// Every foreground task ended.
    Completed,
    /// The duration ran out.
    TimeLimit,
    /// No task could ever run again: what each was waiting for.
    Deadlock(Vec<String>),
    /// A task waited runnable for the watchdog's threshold (`Starve::stop`).
    Starved,
}

/// Runs `workload` under the class stack `sched` on `machine`.
pub fn simulate<P: SchedClass>(
    sched: Sched<P>,
    machine: &Machine,
    workload: &Workload,
    config: SimConfig<'_>,
) -> Result<RunResult, SimError> {
    simulate_logged(sched, machine, workload, config, None)
}

/// [`simulate`], telling `log` each scheduling decision as it is made (`schedkit diff`).
pub fn simulate_logged<'c, P: SchedClass>(
    sched: Sched<P>,
    machine: &Machine,
    workload: &Workload,
    config: SimConfig<'c>,
    log: Option<&'c mut decisions::DecisionLog>,
) -> Result<RunResult, SimError> {
    check_policies(&sched, workload)?;
    let started = std::time::Instant::now();
    let mut sim = Sim::new(sched, machine, workload, config)?;
    sim.decisions = log;
    sim.run()?;
    Ok(sim.result(started.elapsed().as_secs_f64()))
}

/// Refuses, before anything runs, a task or a `policy` statement the class stack cannot
/// schedule (SCHED_IDLE under a design that predates it), naming where it was written.
fn check_policies<P: SchedClass>(sched: &Sched<P>, w: &Workload) -> Result<(), SimError> {
    for (i, t) in w.tasks.iter().enumerate() {
        if let Err(e) = sched.check_policy(t.policy) {
            let at = t.origin.clone().unwrap_or_else(|| format!("task {i}"));
            return Err(SimError::Impossible(format!("{at}: {e}")));
        }
    }
    for c in &w.changes {
        if let crate::workload::AttrTo::Policy(p, _) = c.change.to {
            if let Err(e) = sched.check_policy(p) {
                let names: Vec<&str> = c
                    .progs
                    .iter()
                    .map(|&p| w.programs[p as usize].name.as_str())
                    .collect();
                return Err(SimError::Impossible(format!(
                    "the change to {} at {}: {e}",
                    names.join(", "),
                    c.change.spec()
                )));
            }
        }
    }
    for p in &w.programs {
        for (k, op) in p.ops.iter().enumerate() {
            if let crate::workload::Op::SetPolicy(pol, _) = op {
                if let Err(e) = sched.check_policy(*pol) {
                    let at = match &p.source {
                        Some(src) => format!(
                            "{} line {}",
                            src.path,
                            src.lines.get(k).copied().unwrap_or(0)
                        ),
                        None => format!("program '{}'", p.name),
                    };
                    return Err(SimError::Impossible(format!("{at}: {e}")));
                }
            }
        }
    }
    Ok(())
}

impl crate::registry::PolicyKind {
    /// Simulates `workload` on `machine` under this policy (RT balancing passive).
    pub fn simulate(
        self,
        machine: &Machine,
        workload: &Workload,
        config: SimConfig,
    ) -> Result<RunResult, SimError> {
        self.simulate_with(crate::class::RtBalance::Passive, machine, workload, config)
    }

    /// Simulates with a chosen RT balancing mode. The mode applies to policies behind the
    /// stacked RT class; a class that keeps its RT tasks itself (2.4) has nothing to balance
    /// and ignores it.
    pub fn simulate_with(
        self,
        rt_balance: crate::class::RtBalance,
        machine: &Machine,
        workload: &Workload,
        config: SimConfig,
    ) -> Result<RunResult, SimError> {
        self.simulate_logged(rt_balance, machine, workload, config, None)
    }

    /// [`Self::simulate_with`], telling `log` each scheduling decision as it is made
    /// (`schedkit diff`); the figures are the same as without it.
    pub fn simulate_logged<'c>(
        self,
        rt_balance: crate::class::RtBalance,
        machine: &Machine,
        workload: &Workload,
        config: SimConfig<'c>,
        log: Option<&'c mut decisions::DecisionLog>,
    ) -> Result<RunResult, SimError> {
        let env = crate::registry::BuildEnv::of_machine(machine, rt_balance);
        self.build(
            &env,
            Run {
                machine,
                workload,
                config,
                log,
            },
        )
    }
}

/// Simulates under a class value the caller built rather than a policy's name (the Python
/// package's adapter, which holds a Python object and so cannot be a `static`
/// `ExternalPolicy`): its stack is built as [`crate::external`]'s entry builds a registered
/// class's (`Sched::new`: the RT class in front of it unless it owns its RT tasks) and run by
/// the same visitor, so its result is what the same class registered would give.
pub fn simulate_class<C: SchedClass>(
    class: C,
    rt_balance: crate::class::RtBalance,
    machine: &Machine,
    workload: &Workload,
    config: SimConfig,
) -> Result<RunResult, SimError> {
    use crate::registry::WithSched;
    let sched = Sched::new(class, rt_balance, machine.ncpus());
    Run {
        machine,
        workload,
        config,
        log: None,
    }
    .run(sched)
}

/// `PolicyKind::simulate_with`'s visitor: one run of whatever class stack it is handed.
pub(crate) struct Run<'a, 'c> {
    machine: &'a Machine,
    workload: &'a Workload,
    config: SimConfig<'c>,
    log: Option<&'c mut decisions::DecisionLog>,
}

impl crate::registry::WithSched for Run<'_, '_> {
    type Out = Result<RunResult, SimError>;
    fn run<C: SchedClass>(self, sched: Sched<C>) -> Result<RunResult, SimError> {
        let stacked = sched.rt_stacked().then_some(sched.rt.balance);
        let mut r = simulate_logged(sched, self.machine, self.workload, self.config, self.log)?;
        r.rt_balance = stacked.map(|b| b.name().to_string());
        Ok(r)
    }
    fn run_external(
        self,
        policy: &'static crate::external::ExternalPolicy,
        env: &crate::registry::BuildEnv,
    ) -> Result<RunResult, SimError> {
        policy.simulate(env, self)
    }
}

/// One run: the simulated machine with its tasks, clock and events, the workload's kernel
/// objects, and what the run has counted. Its methods are spread over this module's files, one
/// job each (see the module's header).
pub(crate) struct Sim<'a, 'c, P: SchedClass> {
    // --- The run's inputs, and the prices taken from them once. ---
    sched: Sched<P>,
    machine: &'a Machine,
    workload: &'a Workload,
    cfg: SimConfig<'c>,
    /// Where each scheduling decision is told (`None` but for `schedkit diff`: the run then
    /// pays one test per decision).
    decisions: Option<&'c mut decisions::DecisionLog>,
    layout: LockLayout,
    ncpus: usize,
    tick_ns: u64,
    costs: OpCosts,
    atomic_ns: u64,
    transfer_ns: u64,
    /// A runqueue lock's line moving between two CPUs, by how far apart they are.
    lines: LineCosts,
    /// How many CPUs `status` shows with two or more tasks queued (`rq_nr_running`, delayed
    /// ones included; kept by `publish`).
    overloaded: usize,

    // --- The clock and the event queues. ---
    now: u64,
    seq: u64,
    /// CPU events (segment ends, ticks, IPIs): a handful per CPU at any time.
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    /// Sleep timers, one per sleeping task, kept apart so that the CPU events above never
    /// pay for the number of sleepers.
    timers: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    /// Timer ticks, in (time, sequence) order as posted: (time, sequence, CPU).
    ticks: VecDeque<(u64, u64, u32)>,
    nevents: u64,

    // --- The machine: tasks, runqueues, CPUs, and the models of its hardware. ---
    tasks: Tasks<P::TaskData>,
    procs: Vec<Proc>,
    rqs: Vec<Rq<P::Rq>>,
    locks: Vec<LockModel>,
    status: Vec<CpuStatus>,
    cpus: Vec<Cpu>,
    cache: CacheModel,
    /// SMT sharing, frequency and energy (`None`: a machine without them).
    freq: Option<freq::FreqModel>,
    /// Coherence of kernel data and bus queueing (`None`: a machine without an interconnect
    /// section, whose kernel lines are free).
    ic: Option<Interconnect>,
    /// Address spaces at fork, exec and exit (`None`: a profile without the model).
    mm: Option<mm::MmModel>,
    /// The next address-space id to hand out (fork of a process, exec).
    next_mm_id: u32,
    /// The work the class stack has reported so far (each lock section is priced by its
    /// difference; `metrics.sched_ops`).
    ops_total: OpCounter,

    // --- The kernel path under way on a CPU (`host.rs`). ---
    /// Where the kernel path being run on a CPU has got to: each lock section starts here
    /// and moves it past its spin, lock and priced work (see `host.rs`).
    cursor: u64,
    cursor_spin: u64,
    /// The CPU running the core path under way (set by `core_path`).
    path_cpu: CpuId,
    /// Lock spin inside the schedule() just computed.
    pending_spin: u64,

    // --- The workload's kernel objects: channels, timers, sleeping locks, its time stamp. ---
    chans: Vec<Chan>,
    /// Next expiry of each task's own timers (`TaskTimer` channels), by (pid, channel).
    task_timers: std::collections::BTreeMap<(u32, u32), u64>,
    /// The workload's sleeping locks.
    sleeplocks: Vec<sleeplock::SleepLock>,
    /// Who holds each sleeping lock now (a semaphore may have several holders).
    lock_holders: Vec<Vec<TaskId>>,
    /// The workload's time stamp (`Stamp`) and how many have been taken.
    mark: u64,
    iteration: u32,

    // --- Tasks alive, and the run's end. ---
    /// Foreground tasks alive (or waiting to start): the run completes when none is left.
    foreground_alive: usize,
    /// Workload tasks whose start is still to come (`start=`): the run is not stuck while
    /// one is pending.
    pending_starts: usize,
    /// Slots of dead tasks, reused by forks (the kernel reuses PIDs too): memory follows the
    /// tasks alive, not how many ever were.
    free_slots: Vec<TaskId>,
    /// The last pid handed out (traces number tasks 1, 2, …; 0 is the idle task).
    last_pid: u32,
    /// When the run stopped before the duration ran out (every foreground task ended, or
    /// none could ever run again).
    end_time: Option<u64>,
    /// Why the run stopped.
    stop: StopReason,

    /// What the run has counted, for its result.
    tally: RunTally,
    /// The starvation watchdog, where asked for (`watchdog.rs`).
    watchdog: Option<Box<watchdog::Watchdog>>,
}

impl<'a, 'c, P: SchedClass> Sim<'a, 'c, P> {
    fn new(
        sched: Sched<P>,
        machine: &'a Machine,
        workload: &'a Workload,
        cfg: SimConfig<'c>,
    ) -> Result<Self, SimError> {
        workload.validate().map_err(SimError::Impossible)?;
        workload
            .check_has_foreground()
            .map_err(SimError::Impossible)?;
        // A start or a change after the run's end would never happen: the run would idle to
        // its time limit (or never be found stuck) for nothing.
        let end = cfg.duration_ns;
        if let Some((i, t)) = workload
            .tasks
            .iter()
            .enumerate()
            .find(|(_, t)| t.start_ns >= end)
        {
            let at = t.origin.clone().unwrap_or_else(|| format!("task {i}"));
            return Err(SimError::Impossible(format!(
                "{at} starts at {} s, not before the run ends ({} s)",
                t.start_ns as f64 / 1e9,
                end as f64 / 1e9
            )));
        }
        if let Some(c) = workload.changes.iter().find(|c| c.change.at_ns >= end) {
            return Err(SimError::Impossible(format!(
                "the change {} comes at or after the run's end ({} s)",
                c.change.spec(),
                end as f64 / 1e9
            )));
        }
        Self::check_memory(workload)?;
        if cfg.starve.is_some_and(|s| s.threshold_ns == 0) {
            return Err(SimError::Impossible(
                "the starvation watchdog's threshold is 0: give a time longer than 0".into(),
            ));
        }
        Self::assemble(sched, machine, workload, cfg)
    }

    /// The machine with `workload`'s tasks placed, from a workload already validated (or,
    /// for the core's step-by-step tests, one with no tasks at all).
    fn assemble(
        sched: Sched<P>,
        machine: &'a Machine,
        workload: &'a Workload,
        cfg: SimConfig<'c>,
    ) -> Result<Self, SimError> {
        let ncpus = machine.ncpus();
        let layout = sched.layout();
        let topo = &machine.topology;
        let rqs = (0..layout.domains(ncpus))
            .map(|d| sched.new_rq(d, topo))
            .collect();
        let c = &machine.profile.costs;
        let idle_cpu = Cpu {
            curr: None,
            need_resched: false,
            seg: SegKind::Idle,
            seg_start: 0,
            seg_end: 0,
            seg_irq: 0,
            seg_spin: 0,
            refill_due: Refill::default(),
            gen: 0,
            ipi_pending: false,
            seg_speed: freq::SPEED_ONE,
            acct: CpuAccount::default(),
            switch_in_refill: None,
        };
        let governor = cfg.governor;
        let parts = workload.tasks.iter().map(|t| t.part).max().unwrap_or(0) + 1;
        let lock_mode = cfg.lock_mode;
        let cfg_starve = cfg.starve;
        let mut sim = Sim {
            costs: OpCosts::new(machine),
            atomic_ns: c.atomic_ns as u64,
            transfer_ns: c.mem_latency_ns as u64,
            lines: LineCosts::new(machine),
            overloaded: 0,
            layout,
            ncpus,
            tick_ns: 1_000_000_000 / machine.hz() as u64,
            sched,
            machine,
            workload,
            cfg,
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            timers: BinaryHeap::new(),
            ticks: VecDeque::new(),
            nevents: 0,
            tasks: Tasks::new(),
            procs: Vec::new(),
            rqs,
            locks: vec![LockModel::default(); layout.domains(ncpus)],
            status: vec![CpuStatus::default(); ncpus],
            cpus: vec![idle_cpu; ncpus],
            chans: workload
                .channels
                .iter()
                .map(|c| Chan {
                    kind: c.kind,
                    capacity: c.capacity,
                    msgs: 0,
                    timer_next: None,
                    recv_waiters: VecDeque::new(),
                    send_waiters: VecDeque::new(),
                })
                .collect(),
            task_timers: Default::default(),
            cache: CacheModel::with_remote(
                topo.ncaches(),
                machine.profile.cache.size_kb,
                c.mem_read_mb_s,
                machine
                    .profile
                    .numa
                    .as_ref()
                    .map_or(c.mem_read_mb_s, |n| n.remote_mem_read_mb_s),
                machine
                    .profile
                    .cache
                    .l2_kb
                    .zip(c.llc_read_mb_s)
                    .map(|(size_kb, llc_read_mb_s)| L2Spec {
                        count: topo.l2.iter().copied().max().map_or(1, |m| m + 1),
                        size_kb,
                        llc_read_mb_s,
                    }),
            ),
            ops_total: OpCounter::default(),
            foreground_alive: 0,
            pending_starts: 0,
            end_time: None,
            free_slots: Vec::new(),
            lock_holders: vec![Vec::new(); workload.locks.len()],
            stop: StopReason::TimeLimit,
            last_pid: 0,
            sleeplocks: workload
                .locks
                .iter()
                .map(|(_, spec)| match *spec {
                    crate::workload::LockSpec::Semaphore { count, mode } => {
                        sleeplock::SleepLock::semaphore(count as u64, mode.unwrap_or(lock_mode))
                    }
                    crate::workload::LockSpec::Mutex { spin } => sleeplock::SleepLock::mutex(spin),
                })
                .collect(),
            mark: 0,
            iteration: 0,
            pending_spin: 0,
            cursor: 0,
            cursor_spin: 0,
            freq: freq::FreqModel::new(machine, governor),
            ic: Interconnect::new(machine),
            mm: machine.profile.kernel.cow_fault_ns.map(|f| {
                let line = machine
                    .profile
                    .interconnect
                    .as_ref()
                    .map_or(64, |i| i.line_bytes as u64);
                // One line streamed alone at the memory bandwidth (MB/s = bytes/µs).
                let line_ns = 1000.0 * line as f64 / c.mem_read_mb_s;
                mm::MmModel::new(f, line_ns, line)
            }),
            next_mm_id: workload.tasks.iter().map(|t| t.mm).max().unwrap_or(0) + 1,
            path_cpu: 0,
            tally: RunTally::new(parts, workload.locks.len()),
            watchdog: cfg_starve.map(|s| Box::new(watchdog::Watchdog::new(s, ncpus))),
            decisions: None,
        };
        sim.start_freq();
        sim.start_tasks()?;
        Ok(sim)
    }
}

pub(crate) fn diff(a: &OpCounter, b: &OpCounter) -> OpCounter {
    OpCounter {
        scanned: a.scanned - b.scanned,
        recalc: a.recalc - b.recalc,
        bitmap_searches: a.bitmap_searches - b.bitmap_searches,
        list_ops: a.list_ops - b.list_ops,
        tree_steps: a.tree_steps - b.tree_steps,
        remote_touches: a.remote_touches - b.remote_touches,
    }
}

mod audit;
mod cpu;
mod engine;
mod host;
mod lifecycle;
mod process;
mod program;
mod result;
mod speed;
mod stats;
mod syscall;
mod trace;
pub(crate) use host::scripted;

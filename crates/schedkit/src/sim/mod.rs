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

pub mod cache;
pub mod cost;
pub mod freq;
pub mod interconnect;
pub mod lock;
pub mod mm;
pub use crate::sleeplock;

use crate::class::*;
use crate::ds::work::{Line, LineSink, OpCounter, Work};
use crate::machine::Machine;
use crate::metrics::*;
use crate::sched_core::{self as core, Sched};
use crate::task::{CpuId, TaskId, TaskState, Tasks};
use crate::workload::{ChanKind, KernelWork, Op, Workload};
use cache::{CacheModel, L2Spec, Refill, Warmth};
use cost::OpCosts;
use hdrhistogram::Histogram;
use interconnect::Interconnect;
use lock::LockModel;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

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
}

/// Event kinds; the heap orders by (time, seq), the kind only breaks no ties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The CPU's current segment ends (valid if `gen` matches).
    SegEnd {
        cpu: u32,
        gen: u64,
    },
    Tick {
        cpu: u32,
    },
    /// A sleep timer fires (valid if `gen` matches the task's sleep generation); `handler`:
    /// its interrupt's handler runs now, on a CPU that has left its idle state for it.
    Timer {
        task: u32,
        gen: u32,
        handler: bool,
    },
    /// A reschedule IPI arrives.
    Ipi {
        cpu: u32,
    },
    /// The ondemand governor samples frequency domain `domain`.
    Governor {
        domain: u32,
    },
    /// A governor's request for `domain` takes effect.
    FreqApply {
        domain: u32,
        pstate: u32,
    },
    /// The CPU's speed changed (frequency, turbo, SMT sibling): re-time its user segment.
    Respeed {
        cpu: u32,
    },
    /// Workload task `spec` (its index in the workload) starts now (`start=`).
    Start {
        spec: u32,
    },
    /// The workload's change `i` is made now (`renice=`, `chpolicy=`).
    Change {
        i: u32,
    },
    /// A phase of the run begins (`SimConfig::phases`).
    Phase,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SegKind {
    Idle,
    /// Task computing in user space; progress is the segment length less interrupts.
    User,
    /// System call on behalf of the current task.
    Sys,
    /// schedule() and the context switch.
    Sched,
    /// The task just switched in runs in user space stalled on the misses that bring its
    /// working set back (the cache model's refill): user time as far as preemption goes —
    /// an interrupt that asks for a reschedule stops it at once — accounted as cache refill.
    /// A refill cut short is not resumed later (the task's data counts as loaded).
    Refill,
    /// Interrupt work that is not inside another segment (a tick that preempts, an idle CPU
    /// woken by an IPI).
    Irq,
}

#[derive(Clone, Debug)]
struct Cpu {
    curr: Option<TaskId>,
    need_resched: bool,
    seg: SegKind,
    seg_start: u64,
    seg_end: u64,
    /// Interrupt time inserted into the current segment.
    seg_irq: u64,
    /// Of a Sched segment: the part spent spinning on runqueue locks.
    seg_spin: u64,
    /// The refill the task just switched in owes before its first operation (the cache
    /// model's, run as a `Refill` segment once the switch is done).
    refill_due: Refill,
    gen: u64,
    ipi_pending: bool,
    /// Of a User segment: the speed it was timed at (`freq::SPEED_ONE` without a model).
    seg_speed: u32,
    acct: [u64; 7],
    /// The task just switched in and the working-set refill charged for it, until the CPU
    /// starts anything but the Sched segment of that switch: a probe measuring right after
    /// it leaves out the refill, which the model charges up front but the task pays in its
    /// work after measuring.
    switch_in_refill: Option<(TaskId, u64)>,
}

impl Cpu {
    /// Running a task in user space (its own work or the refill of its working set), where an
    /// interrupt that asks for a reschedule preempts at once.
    fn in_user(&self) -> bool {
        matches!(self.seg, SegKind::User | SegKind::Refill)
    }
}

// acct indices
const A_USER: usize = 0;
const A_SYS: usize = 1;
const A_SCHED: usize = 2;
const A_SPIN: usize = 3;
const A_REFILL: usize = 4;
const A_IRQ: usize = 5;
const A_IDLE: usize = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    None,
    Timer,
    Send(u32),
    Recv(u32),
    Child,
    Exiting,
    /// Asleep on sleeping lock `n`.
    Lock(u32),
}

/// The host's side of a task: where it is in its program. Laid out by hand (`repr(C)`,
/// aligned to a cache line): the fields every switch and segment end reads come first and fill
/// exactly the first two cache lines, so that a task evicted since it last ran (the common case
/// with thousands of runnable tasks) costs two misses there, not one per field. That is why
/// the innermost loop frame lives inline, the busy-loop state is boxed behind one pointer, and
/// the hot integers are 32-bit.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Proc {
    // --- hot (128 bytes): read at each switch-in, segment end and wakeup ---
    /// ns of the current Compute/Touch op still to run (valid when `computing`).
    compute_left: u64,
    /// When it became runnable after a wakeup or fork, for the latency histogram.
    runnable_since: Option<u64>,
    /// When it last started waiting for a CPU while runnable (woken, forked or preempted),
    /// for the starvation figure.
    waiting_since: Option<u64>,
    warmth: Warmth,
    /// The innermost open loop (valid when `loop_depth > 0`); the outer ones are in
    /// `outer_loops`.
    loop_top: LoopFrame,
    /// A `SpinUntil` in progress.
    spin: Option<Box<SpinState>>,
    block: Block,
    /// The CPU it last ran on (`NO_CPU`: none yet).
    last_cpu: u32,
    prog: u32,
    pc: u32,
    sleep_gen: u32,
    /// Its workload part (the counter its completed iterations go to).
    part: u32,
    wss_kb: u32,
    loop_depth: u16,
    computing: bool,
    /// The current system call has done its kernel work and takes effect next.
    entered: bool,
    interactive: bool,
    background: bool,
    // --- colder ---
    /// The open loops around `loop_top`, outermost first.
    outer_loops: Vec<LoopFrame>,
    /// Its index in its group (`{i}` of a shared program); 0 for a forked task.
    member: u32,
    /// Bumped each time its slot is reused; a child remembers its parent's.
    incarnation: u32,
    /// Its process id in traces: never reused within a run (slots are).
    pid: u32,
    parent_incarnation: u32,
    children: u32,
    zombies: u32,
    lock_waited: bool,
    /// When it blocked (for the report of a deadlock).
    block_since: u64,
    /// When the current lock attempt began, and whether it has slept or spun yet.
    lock_since: Option<u64>,
    born: u64,
    died: Option<u64>,
    /// Its sound device, once it has written to one (`AudioWrite`).
    audio: Option<Box<AudioStream>>,
    /// Its own random draws (see `TaskRng`: the same whatever the schedule).
    rng: crate::workload::TaskRng,
    /// The address space a fork in progress has copied for the child (the fork's kernel
    /// work done, the child not yet created).
    fork_mm: Option<u32>,
}

/// One open loop of a program: its body is ops `start..end`; `left` iterations remain,
/// `FOREVER` for a loop without a count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LoopFrame {
    start: u32,
    end: u32,
    left: u64,
}

impl LoopFrame {
    const FOREVER: u64 = u64::MAX;
}

impl Proc {
    fn innermost_loop(&self) -> Option<LoopFrame> {
        (self.loop_depth > 0).then_some(self.loop_top)
    }

    fn push_loop(&mut self, f: LoopFrame) {
        if self.loop_depth > 0 {
            self.outer_loops.push(self.loop_top);
        }
        self.loop_top = f;
        self.loop_depth += 1;
    }

    fn pop_loop(&mut self) {
        self.loop_depth -= 1;
        if self.loop_depth > 0 {
            self.loop_top = self
                .outer_loops
                .pop()
                .expect("loop_depth counts the outer frames");
        }
    }
}

/// `Proc::last_cpu` of a task that has not run yet.
const NO_CPU: u32 = u32::MAX;

/// Bytes of `Proc`'s hot part (what the simulator prefetches for a task about to run).
const PROC_HOT_BYTES: usize = std::mem::offset_of!(Proc, outer_loops);
// The hot part must stay within two cache lines: a field added there has to pay its way.
const _: () = assert!(PROC_HOT_BYTES <= 128);

/// A task's sound device: when its chunk 0 would have started playing (moved on an underrun,
/// as a restarted stream), chunks written, and when the ring had room for the next one.
#[derive(Clone, Copy, Debug)]
struct AudioStream {
    t0: u64,
    written: u64,
    released: u64,
}

/// What a phase of the run has counted since it began (`SimConfig::phases`): the run's
/// counters where it began, and its own latency histograms.
pub(crate) struct PhaseTally {
    pub start_ns: u64,
    pub switches: u64,
    pub migrations: u64,
    pub count0: u64,
    pub rq_len: (u64, u64),
    pub audio: (u64, u64, u64),
    pub lat_interactive: Histogram<u64>,
    pub probe: Histogram<u64>,
    pub audio_lateness: Histogram<u64>,
}

/// What the audio players of a run achieved.
pub(crate) struct AudioTally {
    pub chunks: u64,
    pub underruns: u64,
    pub deadline_misses: u64,
    /// Per chunk after the first: how late past its deadline it was written (1 ns floor).
    pub lateness: Histogram<u64>,
}

/// A busy loop until an absolute time (rt-migrate-test), and what it got.
#[derive(Clone, Copy, Debug)]
struct SpinState {
    deadline: u64,
    id: u32,
    iteration: u32,
    started: u64,
    cpu_ns: u64,
}

/// One finished `SpinUntil`: times relative to the iteration's stamp.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpinRecord {
    pub iteration: u32,
    pub id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub cpu_ns: u64,
}

struct Chan {
    kind: ChanKind,
    capacity: Option<u32>,
    msgs: u64,
    /// A shared timer's next expiry (None until its first use).
    timer_next: Option<u64>,
    recv_waiters: VecDeque<TaskId>,
    send_waiters: VecDeque<TaskId>,
}

/// What executing one operation did.
enum Step {
    /// Continue with the next operation at once.
    Continue,
    /// The CPU computes in user space this much work (ns at the profile's clock).
    User(u64),
    /// The CPU busy-loops in user space for this long, whatever its speed.
    Spin(u64),
    /// The CPU is in a system call for this long.
    Sys(u64),
}

impl Step {
    /// Kernel work of `ns` (none: go on at once).
    fn sys_or_continue(ns: u64) -> Step {
        match ns {
            0 => Step::Continue,
            ns => Step::Sys(ns),
        }
    }
}

/// Runs `workload` under the class stack `sched` on `machine`.
pub fn simulate<P: SchedClass>(
    sched: Sched<P>,
    machine: &Machine,
    workload: &Workload,
    config: SimConfig<'_>,
) -> Result<RunResult, SimError> {
    check_policies(&sched, workload)?;
    let started = std::time::Instant::now();
    let mut sim = Sim::new(sched, machine, workload, config)?;
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
        struct Run<'a, 'c> {
            machine: &'a Machine,
            workload: &'a Workload,
            config: SimConfig<'c>,
        }
        impl crate::registry::WithSched for Run<'_, '_> {
            type Out = Result<RunResult, SimError>;
            fn run<C: SchedClass>(self, sched: Sched<C>) -> Result<RunResult, SimError> {
                let stacked = sched.rt_stacked().then_some(sched.rt.balance);
                let mut r = simulate(sched, self.machine, self.workload, self.config)?;
                r.rt_balance = stacked.map(|b| b.name().to_string());
                Ok(r)
            }
        }
        let env = crate::registry::BuildEnv::of_machine(machine, rt_balance);
        self.build(
            &env,
            Run {
                machine,
                workload,
                config,
            },
        )
    }
}

pub(crate) struct Sim<'a, 'c, P: SchedClass> {
    sched: Sched<P>,
    machine: &'a Machine,
    workload: &'a Workload,
    cfg: SimConfig<'c>,
    layout: LockLayout,
    ncpus: usize,
    tick_ns: u64,
    costs: OpCosts,
    atomic_ns: u64,
    transfer_ns: u64,

    now: u64,
    seq: u64,
    /// CPU events (segment ends, ticks, IPIs): a handful per CPU at any time.
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    /// Sleep timers, one per sleeping task, kept apart so that the CPU events above never
    /// pay for the number of sleepers.
    timers: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    nevents: u64,

    tasks: Tasks<P::TaskData>,
    procs: Vec<Proc>,
    rqs: Vec<Rq<P::Rq>>,
    locks: Vec<LockModel>,
    status: Vec<CpuStatus>,
    cpus: Vec<Cpu>,
    chans: Vec<Chan>,
    /// Next expiry of each task's own timers (`TaskTimer` channels), by (pid, channel).
    task_timers: std::collections::BTreeMap<(u32, u32), u64>,
    cache: CacheModel,
    ops_total: OpCounter,

    foreground_alive: usize,
    /// Workload tasks whose start is still to come (`start=`): the run is not stuck while
    /// one is pending.
    pending_starts: usize,
    /// When the run stopped before the duration ran out (every foreground task ended, or
    /// none could ever run again).
    end_time: Option<u64>,
    switches: u64,
    migrations: u64,
    counts: Vec<u64>,
    lat_all: Histogram<u64>,
    lat_interactive: Histogram<u64>,
    /// cyclictest-style probes (`Op::Lateness`): how late each ran after its timer's expiry.
    probe: Histogram<u64>,
    audio: AudioTally,
    /// The phase now running and the phases already over (`SimConfig::phases`).
    phase: Option<Box<PhaseTally>>,
    phases_done: Vec<crate::metrics::PhaseMetrics>,
    /// The longest a runnable task waited for a CPU, ns.
    max_runnable_wait: u64,
    /// Runnable tasks machine-wide (running ones included), sampled at CPU 0's ticks: sum,
    /// samples, maximum.
    rq_len: (u64, u64, u64),
    /// The workload's sleeping locks, their wait times (total, max) and stranded audits.
    sleeplocks: Vec<sleeplock::SleepLock>,
    lock_waits: Vec<(u64, u64)>,
    stranded: Vec<u64>,
    /// The workload's time stamp (`Stamp`) and how many have been taken.
    mark: u64,
    iteration: u32,
    spins: Vec<SpinRecord>,
    /// RT tasks moved by push and by pull.
    rt_pushes: u64,
    rt_pulls: u64,
    /// Audits that found a runnable RT task waiting while a CPU it may use ran less important
    /// work with no reschedule pending.
    rt_inversions: u64,
    audits: u64,
    /// Lock spin inside the schedule() just computed.
    pending_spin: u64,
    /// Slots of dead tasks, reused by forks (the kernel reuses PIDs too): memory follows the
    /// tasks alive, not how many ever were.
    free_slots: Vec<TaskId>,
    /// Tasks ever created (`metrics.tasks_created`; also numbers new address spaces).
    tasks_created: u64,
    /// Fairness sums (count, sum and sum of squares of CPU time per weight per ns alive) and
    /// CPU time of the tasks that died, folded in as each dies.
    dead_shares: (u64, f64, f64),
    dead_exec_ns: u64,
    /// Who holds each sleeping lock now (a semaphore may have several holders).
    lock_holders: Vec<Vec<TaskId>>,
    /// Why the run stopped.
    stop: StopReason,
    /// The last pid handed out (traces number tasks 1, 2, …; 0 is the idle task).
    last_pid: u32,
    /// Where the kernel path being run on a CPU has got to: each lock section starts here
    /// and moves it past its spin, lock and priced work (see `host.rs`).
    cursor: u64,
    cursor_spin: u64,
    /// SMT sharing, frequency and energy (`None`: a machine without them).
    freq: Option<freq::FreqModel>,
    /// Coherence of kernel data and bus queueing (`None`: a machine without an interconnect
    /// section, whose kernel lines are free).
    ic: Option<Interconnect>,
    /// Address spaces at fork, exec and exit (`None`: a profile without the model).
    mm: Option<mm::MmModel>,
    /// The next address-space id to hand out (fork of a process, exec).
    next_mm_id: u32,
    /// The CPU running the core path under way (set by `core_path`).
    path_cpu: CpuId,
}

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 1_000_000_000_000, 3).expect("valid histogram bounds")
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
            acct: [0; 7],
            switch_in_refill: None,
        };
        let governor = cfg.governor;
        let parts = workload.tasks.iter().map(|t| t.part).max().unwrap_or(0) + 1;
        let lock_mode = cfg.lock_mode;
        let mut sim = Sim {
            costs: OpCosts::new(machine),
            atomic_ns: c.atomic_ns as u64,
            transfer_ns: c.mem_latency_ns as u64,
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
            cache: CacheModel::new(
                topo.ncaches(),
                machine.profile.cache.size_kb,
                c.mem_read_mb_s,
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
            tasks_created: 0,
            dead_shares: (0, 0.0, 0.0),
            dead_exec_ns: 0,
            lock_holders: vec![Vec::new(); workload.locks.len()],
            stop: StopReason::TimeLimit,
            last_pid: 0,
            switches: 0,
            migrations: 0,
            counts: vec![0; parts],
            lat_all: hist(),
            lat_interactive: hist(),
            probe: hist(),
            max_runnable_wait: 0,
            audio: AudioTally {
                chunks: 0,
                underruns: 0,
                deadline_misses: 0,
                lateness: hist(),
            },
            phase: None,
            phases_done: Vec::new(),
            rq_len: (0, 0, 0),
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
            lock_waits: vec![(0, 0); workload.locks.len()],
            stranded: vec![0; workload.locks.len()],
            mark: 0,
            iteration: 0,
            spins: Vec::new(),
            rt_pushes: 0,
            rt_pulls: 0,
            rt_inversions: 0,
            audits: 0,
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
        };
        sim.start_freq();
        sim.start_tasks()?;
        Ok(sim)
    }

    // ----- events -----

    fn post(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        match ev {
            Ev::Timer { .. } => self.timers.push(Reverse((at, self.seq, ev))),
            _ => self.events.push(Reverse((at, self.seq, ev))),
        }
    }

    /// The earliest pending event of either queue, by (time, sequence).
    fn pop_event(&mut self) -> Option<(u64, Ev)> {
        let from_timers = match (self.events.peek(), self.timers.peek()) {
            (Some(Reverse(e)), Some(Reverse(t))) => (t.0, t.1) < (e.0, e.1),
            (None, Some(_)) => true,
            (_, None) => false,
        };
        let q = if from_timers {
            &mut self.timers
        } else {
            &mut self.events
        };
        q.pop().map(|Reverse((at, _, ev))| (at, ev))
    }

    // ----- setup -----

    fn start_tasks(&mut self) -> Result<(), SimError> {
        self.trace_begin();
        let w = self.workload;
        for i in 0..w.tasks.len() {
            let spec = &w.tasks[i];
            if spec.start_ns > 0 {
                // It starts later: the run waits for it as for a task alive.
                self.check_affinity(i)?;
                if !spec.background {
                    self.foreground_alive += 1;
                }
                self.pending_starts += 1;
                self.post(spec.start_ns, Ev::Start { spec: i as u32 });
                continue;
            }
            let (t, cpu) = self.create_spec_task(i)?;
            let d = self.layout.domain_of(cpu);
            let mut ctx = Ctx::new(
                0,
                self.machine.hz(),
                self.ncpus,
                self.tasks.view(),
                &mut self.ops_total,
            );
            core::attr::place_initial(&self.sched, &mut ctx, &mut self.rqs[d], cpu, t);
            self.procs[t.index()].runnable_since = Some(0);
            self.procs[t.index()].waiting_since = Some(0);
            self.trace_wakeup_new(t, cpu);
            self.publish(cpu);
        }
        // After the starts, so that a change made when its group starts finds the group there
        // (events of one time run in the order posted).
        for (i, c) in w.changes.iter().enumerate() {
            self.post(c.change.at_ns, Ev::Change { i: i as u32 });
        }
        for c in 0..self.ncpus {
            self.cpus[c].need_resched = true;
            self.post(0, Ev::Ipi { cpu: c as u32 });
            self.post(self.tick_ns, Ev::Tick { cpu: c as u32 });
        }
        if !self.cfg.phases.is_empty() {
            self.phase = Some(Box::new(self.phase_tally(0)));
            for i in 0..self.cfg.phases.len() {
                let at = self.cfg.phases[i];
                self.post(at, Ev::Phase);
            }
        }
        Ok(())
    }

    fn new_proc(&mut self, prog: u32, part: u32, interactive: bool, background: bool) -> Proc {
        if !background {
            self.foreground_alive += 1;
        }
        self.last_pid += 1;
        Proc {
            pid: self.last_pid,
            prog,
            pc: 0,
            loop_top: LoopFrame::default(),
            loop_depth: 0,
            outer_loops: Vec::new(),
            compute_left: 0,
            computing: false,
            entered: false,
            spin: None,
            audio: None,
            lock_since: None,
            lock_waited: false,
            part,
            member: 0,
            interactive,
            background,
            wss_kb: self.workload.programs[prog as usize].working_set_kb,
            block: Block::None,
            block_since: 0,
            incarnation: 0,
            parent_incarnation: 0,
            sleep_gen: 0,
            runnable_since: None,
            waiting_since: None,
            last_cpu: NO_CPU,
            warmth: Warmth::default(),
            children: 0,
            zombies: 0,
            born: self.now,
            died: None,
            // Start tasks and forked children replace it with their own stream.
            rng: crate::workload::TaskRng::root(self.cfg.seed, u64::MAX),
            fork_mm: None,
        }
    }

    /// The CPUs workload task `i` may run on here, or the error naming it when there are none.
    fn check_affinity(&self, i: usize) -> Result<crate::task::CpuMask, SimError> {
        let all = self.machine.topology.all_cpus();
        let spec = &self.workload.tasks[i];
        let allowed = spec.affinity.map_or(all, |a| a.and(&all));
        if !allowed.is_empty() {
            return Ok(allowed);
        }
        let cpus = spec
            .affinity
            .map(|a| {
                a.iter(crate::task::CpuMask::MAX_CPUS)
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        let what = match &spec.origin {
            Some(o) => format!(
                "{o}: group '{}'",
                self.workload.programs[spec.prog as usize].name
            ),
            None => format!(
                "task {i} ({})",
                self.workload.programs[spec.prog as usize].name
            ),
        };
        Err(SimError::Impossible(format!(
            "{what} may only run on CPU(s) {cpus}, none of which {} has (CPUs 0 to {})",
            self.machine.name(),
            self.ncpus - 1
        )))
    }

    /// Creates the task of workload task `i` (not yet queued) and the CPU it starts from:
    /// round robin over its allowed CPUs, as if already balanced. Tasks present from the
    /// start take consecutive slots; one started later takes a free slot as a fork would.
    fn create_spec_task(&mut self, i: usize) -> Result<(TaskId, CpuId), SimError> {
        let allowed = self.check_affinity(i)?;
        let w = self.workload;
        let spec = &w.tasks[i];
        let later = spec.start_ns > 0;
        let t = if later {
            self.take_slot().map_err(|(live, limit)| {
                SimError::Impossible(format!(
                    "task {i} ({}) starts at {:.3} ms with {live} tasks alive: past the limit of {limit} live tasks",
                    w.programs[spec.prog as usize].name,
                    self.now as f64 / 1e6
                ))
            })?
        } else {
            self.tasks_created += 1;
            self.tasks.spawn()
        };
        {
            let task = &mut self.tasks[t];
            task.nice = spec.nice;
            task.policy = spec.policy;
            task.rt_priority = spec.rt_priority;
            task.slice_ns = spec.slice_ns.and_then(std::num::NonZeroU64::new);
            task.cpus_allowed = allowed;
            task.mm = spec.mm;
        }
        let allowed_cpus: Vec<CpuId> = allowed.iter(self.ncpus).collect();
        let cpu = allowed_cpus[i % allowed_cpus.len()];
        if let Some(mm) = self.mm.as_mut() {
            let pages = w.programs[spec.prog as usize].mm_pages;
            if mm.size(spec.mm) == 0 && mm.would_exceed(pages as u64) {
                return Err(SimError::Impossible(format!(
                    "task {i} ({}): the workload's address spaces pass {} pages",
                    w.programs[spec.prog as usize].name,
                    mm::MAX_LIVE_PAGES
                )));
            }
            mm.attach(spec.mm, pages, if later { cpu } else { 0 });
        }
        let mut pr = self.new_proc(
            spec.prog,
            spec.part as u32,
            spec.interactive,
            spec.background,
        );
        pr.member = spec.member;
        pr.rng = crate::workload::TaskRng::root(self.cfg.seed, i as u64);
        if later {
            self.put_proc(t, pr);
        } else {
            self.procs.push(pr);
        }
        self.tasks[t].cpu = cpu;
        self.tasks[t].timestamp_ns = self.now;
        Ok((t, cpu))
    }

    /// A fresh phase beginning at `at`: the run's counters now, empty histograms.
    fn phase_tally(&self, at: u64) -> PhaseTally {
        PhaseTally {
            start_ns: at,
            switches: self.switches,
            migrations: self.migrations,
            count0: self.counts.first().copied().unwrap_or(0),
            rq_len: (self.rq_len.0, self.rq_len.1),
            audio: (
                self.audio.chunks,
                self.audio.underruns,
                self.audio.deadline_misses,
            ),
            lat_interactive: hist(),
            probe: hist(),
            audio_lateness: hist(),
        }
    }

    /// The phase now running ends and the next begins.
    fn next_phase(&mut self) {
        let now = self.now;
        if let Some(p) = self.phase.as_deref() {
            let done = self.phase_metrics(p, now);
            self.phases_done.push(done);
        }
        self.phase = Some(Box::new(self.phase_tally(now)));
    }

    // ----- main loop -----

    fn run(&mut self) -> Result<(), SimError> {
        let duration = self.cfg.duration_ns;
        let mut next_progress = duration / 100;
        while let Some((at, ev)) = self.pop_event() {
            if at > duration {
                self.now = duration;
                break;
            }
            self.now = at;
            self.nevents += 1;
            match ev {
                Ev::SegEnd { cpu, gen } => {
                    if self.cpus[cpu as usize].gen == gen {
                        self.seg_end(cpu as usize)?;
                    }
                }
                Ev::Tick { cpu } => self.tick(cpu as usize)?,
                Ev::Timer { task, gen, handler } => {
                    let t = TaskId(task);
                    if self.procs[t.index()].sleep_gen == gen
                        && self.procs[t.index()].block == Block::Timer
                    {
                        self.sleep_timer(t, gen, handler)?;
                    }
                }
                Ev::Ipi { cpu } => self.ipi(cpu as usize)?,
                Ev::Governor { domain } => self.governor_sample(domain as usize),
                Ev::FreqApply { domain, pstate } => {
                    self.freq_apply(domain as usize, pstate as usize)
                }
                Ev::Respeed { cpu } => self.respeed(cpu as usize)?,
                Ev::Start { spec } => self.start_later(spec as usize)?,
                Ev::Change { i } => self.change_group(i as usize)?,
                Ev::Phase => self.next_phase(),
            }
            if self.foreground_alive == 0 {
                self.end_time = Some(self.now);
                self.stop = StopReason::Completed;
                break;
            }
            if matches!(ev, Ev::Tick { cpu: 0 }) && self.stuck() {
                self.end_time = Some(self.now);
                self.stop = StopReason::Deadlock(self.waits());
                break;
            }
            if self.cfg.audit_every > 0 && self.nevents.is_multiple_of(self.cfg.audit_every) {
                self.audit()?;
                self.audits += 1;
                self.rt_inversions += u64::from(self.rt_inversion());
                self.count_stranded();
            }
            if self.now >= next_progress {
                if let Some(p) = self.cfg.progress.as_mut() {
                    p(self.now as f64 / duration as f64);
                }
                next_progress = self.now + duration / 100;
            }
        }
        let end = self.end_time.unwrap_or(duration);
        self.now = end;
        self.trace_end();
        for c in 0..self.ncpus {
            self.close_segment(c, end);
        }
        self.audit()?;
        self.check_conservation(end)?;
        Ok(())
    }

    // ----- segments and accounting -----

    fn start_segment(&mut self, cpu: CpuId, kind: SegKind, len: u64) {
        let c = &mut self.cpus[cpu];
        c.gen += 1;
        c.seg = kind;
        c.seg_start = self.now;
        c.seg_end = self.now + len;
        c.seg_irq = 0;
        c.seg_spin = 0;
        if kind != SegKind::Sched && kind != SegKind::Refill {
            c.switch_in_refill = None;
        }
        if kind != SegKind::Idle {
            let gen = c.gen;
            self.post(
                self.now + len,
                Ev::SegEnd {
                    cpu: cpu as u32,
                    gen,
                },
            );
        }
    }

    /// Accounts the current segment up to `at` and returns the task progress it made (for
    /// User segments). The segment is then void.
    fn close_segment(&mut self, cpu: CpuId, at: u64) -> u64 {
        let c = &mut self.cpus[cpu];
        let len = at.saturating_sub(c.seg_start);
        let irq = c.seg_irq.min(len);
        let body = len - irq;
        c.acct[A_IRQ] += irq;
        let mut progress = 0;
        // Task CPU time: user, system and cache-refill time of the task that is current.
        let mut charged = 0;
        match c.seg {
            SegKind::Idle => c.acct[A_IDLE] += body,
            SegKind::User => {
                c.acct[A_USER] += body;
                progress = freq::ns_to_work(body, c.seg_speed);
                charged = body;
            }
            SegKind::Sys => {
                c.acct[A_SYS] += body;
                charged = body;
            }
            SegKind::Sched => {
                let spin = c.seg_spin.min(body);
                c.acct[A_SPIN] += spin;
                c.acct[A_SCHED] += body - spin;
            }
            SegKind::Refill => {
                c.acct[A_REFILL] += body;
                charged = body;
                if let Some(ic) = self.ic.as_mut() {
                    ic.set_streaming(cpu, false);
                }
            }
            SegKind::Irq => c.acct[A_IRQ] += body,
        }
        if let Some(t) = c.curr {
            self.tasks[t].sum_exec_ns += charged;
        }
        let c = &mut self.cpus[cpu];
        c.gen += 1;
        c.seg_start = at;
        c.seg_end = at;
        c.seg_irq = 0;
        c.seg_spin = 0;
        c.seg = SegKind::Idle;
        progress
    }

    /// Interrupt work on `cpu` now: inserted into whatever runs there.
    fn charge_irq(&mut self, cpu: CpuId, cost: u64) {
        if cost == 0 {
            return;
        }
        let c = &mut self.cpus[cpu];
        match c.seg {
            SegKind::Idle => {
                // Time taken out of idle: accounted as irq by the idle segment's close.
                c.seg_irq += cost;
            }
            _ => {
                c.seg_irq += cost;
                c.seg_end += cost;
                c.gen += 1;
                let (gen, end) = (c.gen, c.seg_end);
                self.post(
                    end,
                    Ev::SegEnd {
                        cpu: cpu as u32,
                        gen,
                    },
                );
            }
        }
    }

    fn seg_end(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let kind = self.cpus[cpu].seg;
        let progress = self.close_segment(cpu, self.now);
        if kind == SegKind::User {
            let t = self.cpus[cpu].curr.expect("user segment without a task");
            self.user_progress(t, progress);
        }
        self.resume(cpu)
    }

    /// The CPU is free to do its next thing at `self.now`.
    fn resume(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let mut zero_cost_steps = 0u32;
        loop {
            if self.cpus[cpu].need_resched {
                let cost = self.schedule(cpu)?;
                if cost > 0 || self.cpus[cpu].curr.is_some() {
                    self.start_segment(cpu, SegKind::Sched, cost);
                    // Spin was recorded by schedule() in the pending field.
                    self.cpus[cpu].seg_spin = self.pending_spin;
                    return Ok(());
                }
            }
            let Some(t) = self.cpus[cpu].curr else {
                self.start_segment(cpu, SegKind::Idle, 0);
                return Ok(());
            };
            if self.tasks[t].state != TaskState::Running(cpu) {
                // Blocked or exiting: switch away.
                self.cpus[cpu].need_resched = true;
                continue;
            }
            // A task just switched in first brings its working set back.
            let refill = std::mem::take(&mut self.cpus[cpu].refill_due);
            if !refill.is_empty() {
                let ns = match self.ic.as_mut() {
                    // Over a bus other CPUs may be streaming on too.
                    Some(ic) => {
                        let alone = self.cache.mem_line_ns(ic.line_bytes());
                        let mem = ic.stream_ns(cpu, refill.mem_kb as f64, alone);
                        ic.set_streaming(cpu, true);
                        (mem as f64 + self.cache.llc_ns(refill)) as u64
                    }
                    None => self.cache.price(refill),
                };
                if ns > 0 {
                    self.start_segment(cpu, SegKind::Refill, ns);
                    self.cpus[cpu].switch_in_refill = Some((t, ns));
                    return Ok(());
                }
            }
            match self.step(cpu, t)? {
                Step::Continue => {
                    zero_cost_steps += 1;
                    if zero_cost_steps > 1_000_000 {
                        return Err(SimError::Impossible(format!(
                            "program '{}' loops without spending any time (add compute, sleep or a system call to its loop)",
                            self.workload.programs[self.procs[t.index()].prog as usize].name
                        )));
                    }
                }
                Step::User(work) => {
                    let speed = self.freq.as_ref().map_or(freq::SPEED_ONE, |f| f.speed(cpu));
                    self.start_segment(cpu, SegKind::User, freq::work_to_ns(work, speed));
                    self.cpus[cpu].seg_speed = speed;
                    return Ok(());
                }
                Step::Spin(ns) => {
                    self.start_segment(cpu, SegKind::User, ns);
                    self.cpus[cpu].seg_speed = freq::SPEED_ONE;
                    return Ok(());
                }
                Step::Sys(ns) => {
                    self.start_segment(cpu, SegKind::Sys, ns.max(1));
                    return Ok(());
                }
            }
        }
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

mod engine;
mod host;
mod lifecycle;
mod trace;
#[cfg(test)]
pub(crate) use host::scripted;

//! The schedkit runtime: the user's own tasks, scheduled on worker threads by the same policy
//! code the simulator runs.
//!
//! ```no_run
//! use schedkit::runtime::{Policy, Runtime, TaskSpec};
//! let rt = Runtime::builder().policy(Policy::O1).cpus(2).build()?;
//! let h = rt.spawn(TaskSpec::new().nice(-5), || (0..1000u64).sum::<u64>());
//! assert_eq!(h.join()?, 499_500);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each policy CPU is a worker OS thread (pinned to a core when there are enough); tasks are
//! stackful user-level threads switched in user space (`arch`). The host (`host`) calls the
//! policy's `SchedClass` hooks under real locks: one per CPU for O(1), one global for 2.4.
//! A worker's tick is a per-thread POSIX timer; a task still running when its slice ends, or
//! when a better task wakes, is preempted by a signal (`worker`), as Go has done since 1.14.
//!
//! # What task code must not do
//! A task can be preempted at any instruction of this program's own code (never inside libc
//! or another shared library, never inside the runtime). So a task must not hold a
//! `std::sync::Mutex` (or any OS-level lock, spin lock, or `RefCell` borrow of a
//! thread-local) across a point where another task of the same runtime may need it: if the
//! holder is preempted and the waiter blocks the worker thread, a 1-CPU runtime deadlocks.
//! Use this module's [`Mutex`], [`Semaphore`],
//! [`Condvar`] and [`channel`], which park the task, not the
//! worker. A task may resume on another worker thread after any switch, so thread-locals are
//! per worker, not per task. Task stacks have a guard page; overflowing one aborts the
//! process with a message naming the task, as overflowing a thread's stack does.

mod arch;
mod clock;
mod core_host;
mod future;
pub mod handshake;
mod host;
pub mod io;
mod resched;
pub(crate) mod scripted;
pub mod sync;
mod task_ops;
mod task_side;
mod timers;
mod worker;

pub use crate::class::RtBalance;
pub use crate::registry::PolicyKind as Policy;
use crate::registry::{BuildEnv, WithSched};
use crate::task::{CpuMask, SchedPolicy, TaskId};
use host::{Config, Shared};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use task_ops::WorkerOps;

pub use crate::sleeplock::LockMode;
pub use future::yield_now as yield_now_async;
pub use sync::{channel, Condvar, Disconnected, Mutex, MutexGuard, Receiver, Semaphore, Sender};

/// How a task is scheduled: nice level or RT class, and affinity.
#[derive(Clone, Debug, Default)]
pub struct TaskSpec {
    pub(crate) policy: SchedPolicy,
    pub(crate) nice: i32,
    pub(crate) rt_priority: u8,
    pub(crate) affinity: Option<CpuMask>,
    pub(crate) name: Option<String>,
    pub(crate) slice_ns: Option<u64>,
}

impl TaskSpec {
    /// `SCHED_OTHER` at nice 0, any CPU.
    pub fn new() -> TaskSpec {
        TaskSpec::default()
    }
    /// Nice level, -20 (most favoured) to 19.
    pub fn nice(mut self, nice: i32) -> TaskSpec {
        self.nice = nice;
        self
    }
    /// `SCHED_FIFO` at `priority` (1..=99).
    pub fn rt_fifo(mut self, priority: u8) -> TaskSpec {
        self.policy = SchedPolicy::Fifo;
        self.rt_priority = priority;
        self
    }
    /// `SCHED_RR` at `priority` (1..=99).
    pub fn rt_rr(mut self, priority: u8) -> TaskSpec {
        self.policy = SchedPolicy::Rr;
        self.rt_priority = priority;
        self
    }
    /// `SCHED_BATCH`.
    pub fn batch(mut self) -> TaskSpec {
        self.policy = SchedPolicy::Batch;
        self
    }
    /// `SCHED_IDLE`: runs when nothing else wants the CPU. Only the fair policies (`Cfs`,
    /// `Eevdf`) have it; spawning such a task under another policy fails.
    pub fn idle(mut self) -> TaskSpec {
        self.policy = SchedPolicy::Idle;
        self
    }
    /// The slice it asks for (`sched_attr.sched_runtime`, 0.1 to 100 ms), which EEVDF of
    /// 6.12+ (`eevdf:era=6.18`) honours: a shorter slice wakes up sooner (PREEMPT_SHORT).
    pub fn slice(mut self, slice: std::time::Duration) -> TaskSpec {
        self.slice_ns = Some(slice.as_nanos().min(u64::MAX as u128) as u64);
        self
    }
    /// The runtime CPUs this task may run on.
    pub fn affinity(mut self, cpus: impl IntoIterator<Item = usize>) -> TaskSpec {
        self.affinity = Some(mask_of(cpus));
        self
    }
    /// A name for error messages.
    pub fn name(mut self, name: impl Into<String>) -> TaskSpec {
        self.name = Some(name.into());
        self
    }

    pub(crate) fn validate(&self, ncpus: usize) -> Result<(), String> {
        let who = self.name.as_deref().unwrap_or("task");
        check_nice(self.nice).map_err(|e| format!("{who}: {e}"))?;
        check_rt(self.policy, self.rt_priority).map_err(|e| format!("{who}: {e}"))?;
        if let Some(ns) = self.slice_ns {
            if !(100_000..=100_000_000).contains(&ns) {
                return Err(format!(
                    "{who}: slice {ns} ns is outside 0.1..=100 ms (the kernel's clamp of sched_runtime)"
                ));
            }
        }
        if let Some(m) = self.affinity {
            if m.and(&CpuMask::first_n(ncpus)).is_empty() {
                return Err(format!(
                    "{who}: affinity {m:?} names none of this runtime's {ncpus} CPUs"
                ));
            }
        }
        Ok(())
    }
}

/// The CPUs named, as a mask (numbers past `CpuMask::MAX_CPUS` name no CPU of any runtime;
/// the affinity checks then report the mask as naming none of the runtime's CPUs).
fn mask_of(cpus: impl IntoIterator<Item = usize>) -> CpuMask {
    let mut m = CpuMask::empty();
    for c in cpus.into_iter().filter(|&c| c < CpuMask::MAX_CPUS) {
        m.set(c);
    }
    m
}

pub(crate) fn check_nice(nice: i32) -> Result<(), String> {
    if !(crate::task::NICE_MIN..=crate::task::NICE_MAX).contains(&nice) {
        return Err(format!("nice {nice} is outside -20..=19"));
    }
    Ok(())
}

pub(crate) fn check_rt(policy: SchedPolicy, prio: u8) -> Result<(), String> {
    if policy.is_dl() {
        // Its replenishment timer fires at the tick of the task's CPU (`policy::deadline`),
        // and the runtime's idle workers take no ticks: a throttled task could wait forever.
        return Err(
            "SCHED_DEADLINE is not available in the runtime yet (its replenishment timer needs \
             ticks on idle workers); the simulator has it"
                .into(),
        );
    }
    if policy.is_rt() && !(crate::task::RT_PRIO_MIN..=crate::task::RT_PRIO_MAX).contains(&prio) {
        return Err(format!("RT priority {prio} is outside 1..=99"));
    }
    Ok(())
}

/// Why a runtime could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cpus must be between 1 and {max} (got {got})")]
    Cpus { got: usize, max: usize },
    #[error("hz must be between 10 and 10000 (got {0}); 100 µs is the finest tick signals deliver reliably")]
    Hz(u32),
    #[error("max_tasks must be between 1 and {max} (got {got})")]
    MaxTasks { got: usize, max: usize },
    #[error("stack_size must be between 16 KiB and 1 GiB (got {0} bytes)")]
    StackSize(usize),
    #[error("cannot start worker thread {cpu}: {source}")]
    Thread { cpu: usize, source: std::io::Error },
}

/// Configures a [`Runtime`].
#[derive(Clone, Debug)]
pub struct Builder {
    policy: Policy,
    cpus: Option<usize>,
    hz: Option<u32>,
    max_tasks: usize,
    stack_size: usize,
    preempt: bool,
    pin: bool,
    rt_balance: RtBalance,
    idle_spin: std::time::Duration,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            policy: Policy::O1,
            cpus: None,
            hz: None,
            max_tasks: 16_384,
            stack_size: 256 * 1024,
            preempt: true,
            pin: true,
            rt_balance: RtBalance::PushPull,
            idle_spin: std::time::Duration::from_micros(50),
        }
    }
}

impl Builder {
    pub fn policy(mut self, p: Policy) -> Self {
        self.policy = p;
        self
    }
    /// Policy CPUs (worker threads). Default: the cores this process may use.
    pub fn cpus(mut self, n: usize) -> Self {
        self.cpus = Some(n);
        self
    }
    /// Timer ticks per second. Default: the design's HZ (100 for 2.4, 1000 for 2.6's O(1)).
    pub fn hz(mut self, hz: u32) -> Self {
        self.hz = Some(hz);
        self
    }
    /// Capacity of the task table (live tasks at once). Default 16 384.
    pub fn max_tasks(mut self, n: usize) -> Self {
        self.max_tasks = n;
        self
    }
    /// Usable bytes of each task stack for the task's own frames. Default 256 KiB. With
    /// preemption on, each stack also holds what one preemption takes below the task's
    /// deepest frame (the register save area, sized from CPUID, and the scheduler's frames:
    /// [`SaveArea::stack_cost`]), mapped on top of this, so a task that fits its stack without
    /// preemption fits it with preemption on any CPU (20.3 KiB more on an AVX-512 machine,
    /// 28.3 KiB with AMX, in virtual memory: pages no task reaches are never touched). A guard
    /// page lies below.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }
    /// Signal-based preemption and the tick (default on). Off: tasks switch only when they
    /// yield, block or call into the runtime, and timeslices are not enforced.
    pub fn preemption(mut self, on: bool) -> Self {
        self.preempt = on;
        self
    }
    /// Pin worker `i` to the i-th allowed core when there are at least as many cores as
    /// workers (default on).
    pub fn pin_workers(mut self, on: bool) -> Self {
        self.pin = on;
        self
    }
    /// How long an idle worker polls for work before sleeping in the kernel (default 50 µs;
    /// 0: sleep at once). The guest kernel's cpuidle-haltpoll polls up to 200 µs
    /// (`guest_halt_poll_ns`) for the same reason: waking a sleeping thread costs tens of µs
    /// in a VM, and a wakeup that lands within the window costs almost nothing. The price is
    /// up to this much CPU burnt each time a worker runs out of work.
    pub fn idle_spin(mut self, d: std::time::Duration) -> Self {
        self.idle_spin = d;
        self
    }
    /// RT balancing of per-CPU designs (default push/pull, as 2.6.25+).
    pub fn rt_balance(mut self, b: RtBalance) -> Self {
        self.rt_balance = b;
        self
    }

    pub fn build(self) -> Result<Runtime, BuildError> {
        let cores = worker::allowed_cores();
        let ncpus = self.cpus.unwrap_or(cores.len().max(1));
        if ncpus == 0 || ncpus > host::MAX_CPUS {
            return Err(BuildError::Cpus {
                got: ncpus,
                max: host::MAX_CPUS,
            });
        }
        let hz = self.hz.unwrap_or(self.policy.native_hz());
        if !(10..=10_000).contains(&hz) {
            return Err(BuildError::Hz(hz));
        }
        const MAX_TASKS: usize = 1 << 22;
        if self.max_tasks == 0 || self.max_tasks > MAX_TASKS {
            return Err(BuildError::MaxTasks {
                got: self.max_tasks,
                max: MAX_TASKS,
            });
        }
        if !(16 * 1024..=1 << 30).contains(&self.stack_size) {
            return Err(BuildError::StackSize(self.stack_size));
        }
        // Preemption: asked for, not turned off from the environment (CI runs the suite once
        // that way), a save area this CPU's state fits in and that still covers every state
        // component the process may use, and the signal handlers installed (the room a
        // preemption takes is added to each task stack). Otherwise the runtime runs
        // cooperatively and says why (`Runtime::preemption`); no signal is ever sent without
        // its handler.
        let preemption = if !self.preempt {
            Err("turned off by Builder::preemption(false)".to_string())
        } else if std::env::var(PREEMPT_ENV).is_ok_and(|v| v == "0" || v == "off") {
            Err(format!("turned off by {PREEMPT_ENV}"))
        } else {
            arch::SaveArea::get().and_then(|a| a.covers_permitted().map(|()| a))
        };
        // A task stack overflow names itself (`worker::install_fault_handler`); without the
        // handler it is still caught by the guard page, as a bare SIGSEGV.
        let _ = worker::install_fault_handler();
        let preemption = preemption.and_then(|area| {
            worker::install_handler()
                .map(|()| area)
                .map_err(|e| format!("cannot install the preemption signal handlers: {e}"))
        });
        let preempt = preemption.is_ok();
        let cfg = Config {
            ncpus,
            hz,
            max_tasks: self.max_tasks,
            stack_size: self.stack_size,
            preempt_stack: preemption.as_ref().map_or(0, |a| a.stack_cost()),
            preempt,
            idle_spin_ns: self.idle_spin.as_nanos().min(u64::MAX as u128) as u64,
        };
        static NEXT_ID: AtomicUsize = AtomicUsize::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        // Boot-time facts of this machine for the class (O(1)'s cache_decay_ticks), with
        // generic ones where the host profile cannot be read.
        let mut env = crate::machine::Machine::load("host")
            .map(|m| BuildEnv::of_machine(&m, self.rt_balance))
            .unwrap_or(BuildEnv {
                ncpus,
                mhz: 1000.0,
                cache_kb: 512,
                rt_balance: self.rt_balance,
            });
        env.ncpus = ncpus;
        let inner = self.policy.build(&env, Start { cfg, id });
        let pin = self.pin && cores.len() >= ncpus;
        let mut threads = Vec::with_capacity(ncpus);
        for (cpu, &c) in cores.iter().cycle().take(ncpus).enumerate() {
            let h = inner.clone();
            let core = pin.then_some(c);
            let spawned = std::thread::Builder::new()
                .name(format!("schedkit-cpu{cpu}"))
                .stack_size(256 * 1024)
                .spawn(move || {
                    let me: *const dyn WorkerOps = Arc::as_ptr(&h);
                    h.run_worker(cpu, core, me);
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(source) => {
                    inner.begin_shutdown();
                    for t in threads {
                        let _ = t.join();
                    }
                    return Err(BuildError::Thread { cpu, source });
                }
            }
        }
        Ok(Runtime {
            inner,
            threads,
            policy: self.policy,
            ncpus,
            hz,
            preemption,
        })
    }
}

/// A running set of worker threads scheduling tasks under one policy.
///
/// Dropping it waits for every task to finish, then stops the workers. Use
/// [`Runtime::shutdown_timeout`] to bound that wait.
pub struct Runtime {
    inner: Arc<dyn WorkerOps>,
    threads: Vec<std::thread::JoinHandle<()>>,
    policy: Policy,
    ncpus: usize,
    hz: u32,
    preemption: Result<arch::SaveArea, String>,
}

/// Environment switch for tests and CI: `0` or `off` builds every runtime without preemption.
pub const PREEMPT_ENV: &str = "SCHEDKIT_RUNTIME_PREEMPT";
pub use arch::{SaveArea, SAVE_AREA_ENV};

/// `Builder::build`'s visitor: the runtime's shared state on whatever class stack it is handed.
pub(crate) struct Start {
    cfg: Config,
    id: usize,
}

impl WithSched for Start {
    type Out = Arc<dyn WorkerOps>;
    fn run<C: crate::class::SchedClass>(self, sched: crate::sched_core::Sched<C>) -> Self::Out {
        Arc::new(Shared::new(sched, self.cfg, self.id))
    }
    fn run_external(
        self,
        policy: &'static crate::external::ExternalPolicy,
        env: &BuildEnv,
    ) -> Self::Out {
        policy.start(env, self)
    }
}

/// Counters of a runtime's scheduling activity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RuntimeStats {
    pub context_switches: u64,
    pub migrations: u64,
    /// Switches forced by the tick or a wakeup (signal or need_resched at a runtime call).
    pub preemptions: u64,
    pub wakeups: u64,
    /// Reschedule signals sent to busy workers (the "IPIs").
    pub resched_signals: u64,
    pub spawned: u64,
    /// Sleepers woken by their worker's high-resolution timer (rather than by a tick or a
    /// switch that happened to look at the timer queue).
    pub timer_wakeups: u64,
}

impl Runtime {
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }
    pub fn cpus(&self) -> usize {
        self.ncpus
    }
    pub fn hz(&self) -> u32 {
        self.hz
    }
    /// Whether signal preemption is active. Off when asked (builder or [`PREEMPT_ENV`]), or
    /// when it cannot work here; [`Runtime::preemption`] says which.
    pub fn preemptive(&self) -> bool {
        self.preemption.is_ok()
    }
    /// How preemption saves registers on this machine, or why it is off.
    pub fn preemption(&self) -> Result<arch::SaveArea, &str> {
        self.preemption.as_ref().map(|a| *a).map_err(|e| e.as_str())
    }
    /// One line for reports: "on (XSAVE mask 0xe7: 2432 B of state, 4096 B reserved per
    /// preemption)", "on (FXSAVE: …)" or "off (`reason`)".
    pub fn preemption_summary(&self) -> String {
        match &self.preemption {
            Ok(a) => match a.xsave_mask {
                Some(m) => format!(
                    "on (XSAVE mask {m:#x}: {} B of state, {} B reserved per preemption)",
                    a.needed, a.reserve
                ),
                None => format!("on (FXSAVE: {} B reserved per preemption)", a.reserve),
            },
            Err(why) => format!("off ({why})"),
        }
    }

    /// Spawns a task that runs the future `fut` to completion under `spec`: polled on the
    /// task's own stack, woken through the policy's wakeup path, preempted like any task. See
    /// `runtime::future` for what that gives async code (nice levels, RT priorities,
    /// preemption of a future that never awaits).
    pub fn spawn_future<F>(&self, spec: TaskSpec, fut: F) -> JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        spawn_on(&*self.inner, spec, move || future::run_on_task(fut))
    }

    /// Spawns a task running `f` under `spec`.
    pub fn spawn<F, T>(&self, spec: TaskSpec, f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        spawn_on(&*self.inner, spec, f)
    }

    pub fn stats(&self) -> RuntimeStats {
        self.inner.runtime_stats()
    }

    /// Tasks not yet reaped (a task whose join has returned may still be switching out).
    pub fn live_tasks(&self) -> usize {
        self.inner.wait_idle_for(Some(Instant::now()))
    }

    /// Waits up to `timeout` for every task to finish, then stops the workers. On timeout the
    /// tasks still alive are abandoned (never run again, their memory leaked) and their count
    /// is returned as the error; workers still running a task are detached.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Result<(), usize> {
        let left = self.inner.wait_idle_for(Some(Instant::now() + timeout));
        self.inner.begin_shutdown();
        if left == 0 {
            for t in self.threads.drain(..) {
                let _ = t.join();
            }
            self.inner.wait_foreign_wakers();
            Ok(())
        } else {
            // Workers busy with abandoned tasks would never return: detach them. The host
            // is leaked on purpose: an abandoned task's stack holds wait-queue nodes that a
            // later `send` or `up` may still touch.
            self.threads.clear();
            std::mem::forget(self.inner.clone());
            Err(left)
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        self.inner.wait_idle_for(None);
        self.inner.begin_shutdown();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // A thread that is no worker may still be inside a wakeup of this runtime, or hold a
        // kick of it (`task_ops::defer_kicks`).
        self.inner.wait_foreign_wakers();
    }
}

/// Why a join failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JoinError {
    /// The task panicked; the payload's message.
    #[error("task panicked: {0}")]
    Panicked(String),
    /// The task could not be created.
    #[error("task not spawned: {0}")]
    Spawn(String),
}

/// Owns the result of a spawned task.
pub struct JoinHandle<T> {
    slot: Arc<sync::Once<Result<T, JoinError>>>,
    id: Option<TaskId>,
}

impl<T> JoinHandle<T> {
    /// Waits for the task (parking the caller if it is a task) and returns its result.
    pub fn join(self) -> Result<T, JoinError> {
        self.slot.wait_take()
    }
    /// The task's id in its runtime (None if it was never spawned).
    pub fn id(&self) -> Option<TaskId> {
        self.id
    }
    pub fn is_finished(&self) -> bool {
        self.slot.is_set()
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}

fn spawn_on<F, T>(host: &dyn WorkerOps, spec: TaskSpec, f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let slot = Arc::new(sync::Once::new());
    let s2 = slot.clone();
    let entry: Box<dyn FnOnce() + Send> = Box::new(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .map_err(|p| JoinError::Panicked(panic_message(&*p)));
        s2.set(r);
    });
    match host.spawn_erased(&spec, entry) {
        Ok(id) => JoinHandle { slot, id: Some(id) },
        Err(e) => {
            slot.set(Err(JoinError::Spawn(e)));
            JoinHandle { slot, id: None }
        }
    }
}

/// The host of the task running this code, if any.
fn current_ops() -> Option<(&'static dyn WorkerOps, usize)> {
    worker::in_task().map(|w| {
        // SAFETY: the host outlives its tasks.
        (unsafe { ops_of(w) }, w.cpu)
    })
}

/// # Safety
/// `w` must be the current worker's identity (its host outlives every task).
pub(crate) unsafe fn ops_of(w: &worker::WorkerTls) -> &'static dyn WorkerOps {
    &*w.host
}

/// Keeps the current task from being preempted (runtime code running on a task's behalf);
/// on release, runs a reschedule that came due meanwhile.
pub(crate) struct NoPreempt(bool);

impl NoPreempt {
    pub(crate) fn new() -> NoPreempt {
        // Reading the worker and entering on it are one step: the task may be preempted and
        // move to another worker between two separate ones (`worker::enter_runtime_here`).
        NoPreempt(worker::enter_runtime_here().is_some())
    }
}

impl Drop for NoPreempt {
    fn drop(&mut self) {
        if !self.0 {
            return;
        }
        // (It re-reads the worker: the task may have moved while it was switched out.)
        worker::leave_runtime();
    }
}

/// Spawns a task on the runtime of the calling task.
///
/// # Panics
/// When called outside a task (use [`Runtime::spawn`] there).
pub fn spawn<F, T>(spec: TaskSpec, f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let _g = NoPreempt::new();
    let (ops, _) = current_ops().expect("runtime::spawn called outside a schedkit task");
    spawn_on(ops, spec, f)
}

/// `sched_yield()`: lets the policy pick again. Outside a task, yields the OS thread.
pub fn yield_now() {
    let _g = NoPreempt::new();
    match current_ops() {
        Some((ops, cpu)) => ops.yield_now(cpu),
        None => std::thread::yield_now(),
    }
}

/// Sleeps for `d` (the task parks; its worker runs others). Outside a task, sleeps the thread.
pub fn sleep(d: Duration) {
    let _g = NoPreempt::new();
    match current_ops() {
        Some((ops, cpu)) => {
            let deadline = ops
                .now_ns()
                .saturating_add(d.as_nanos().min(u64::MAX as u128) as u64);
            ops.sleep_until(cpu, deadline);
        }
        None => std::thread::sleep(d),
    }
}

fn with_current<R>(
    f: impl FnOnce(&dyn WorkerOps, usize) -> Result<R, String>,
) -> Result<R, String> {
    let _g = NoPreempt::new();
    let (ops, cpu) = current_ops().ok_or("not called from a schedkit task")?;
    f(ops, cpu)
}

/// Changes the calling task's nice level (-20..=19), as `setpriority()`/`set_user_nice`.
pub fn set_nice(nice: i32) -> Result<(), String> {
    with_current(|ops, cpu| ops.set_nice(cpu, nice))
}

/// Changes the calling task's scheduling policy (and RT priority for FIFO/RR), as
/// `sched_setscheduler()`.
pub fn set_scheduler(policy: SchedPolicy, rt_priority: u8) -> Result<(), String> {
    with_current(|ops, cpu| ops.set_sched(cpu, policy, rt_priority))
}

/// Changes the calling task's CPU affinity, as `sched_setaffinity()`.
pub fn set_affinity(cpus: impl IntoIterator<Item = usize>) -> Result<(), String> {
    let m = mask_of(cpus);
    with_current(|ops, cpu| ops.set_affinity(cpu, m))
}

/// Nanoseconds per bare context-switch round trip (there and back, registers only, no
/// scheduling), measured over `iters` round trips: the floor under a yield.
pub fn raw_switch_round_trip_ns(iters: u64) -> f64 {
    arch::raw_round_trip_ns(iters)
}

/// The calling task's id and current CPU (None outside a task).
pub fn current() -> Option<(TaskId, usize)> {
    let _g = NoPreempt::new();
    current_ops().and_then(|(ops, cpu)| ops.current_task(cpu).map(|t| (t, cpu)))
}

/// The calling task's nice level, policy, RT priority, and CPU time consumed up to its last
/// switch in ns (None outside a task).
pub fn current_info() -> Option<(i32, SchedPolicy, u8, u64)> {
    let _g = NoPreempt::new();
    current_ops().and_then(|(ops, cpu)| ops.task_info(cpu))
}

#[cfg(test)]
mod tests;

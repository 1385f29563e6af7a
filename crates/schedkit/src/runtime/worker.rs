//! Worker threads: one OS thread per policy CPU, its thread-local identity, the tick timer,
//! the preemption signal, and idle parking.
//!
//! Everything here that a signal handler reads is an atomic of the worker's own slot, reached
//! through a `const`-initialised thread-local (a plain `#[thread_local]` load, safe in a
//! handler). Code that runs on a task stack reaches the worker through [`current`], which is
//! never inlined: a task may resume on another worker thread after a switch, and an inlined
//! thread-local address could be kept by the compiler from before the switch.
//!
//! It reaches its runtime only through `task_ops::WorkerOps` and must never depend on `host`,
//! `core_host` or `task_side` (`host` stands on this file). Its one circle is with `arch`: the
//! preemption trampoline there calls [`preempt_entry`] here.

use super::arch;
use super::task_ops::{Reason, WorkerOps};
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

/// What a worker owns and what others (and its signal handler) may poke. The first cache-line
/// pair holds what the worker (and its handler) writes on every switch; what other threads
/// read or write (a waker's `need_resched`, the idle and parking words, the thread id) starts
/// on the next pair, so that a waker or an idle-balancer kick reading them does not pull the
/// line the worker is writing at every switch, and the worker's switches do not invalidate
/// the line the others read (seen in `perf annotate`: the load of a neighbour's `idle` was
/// 95 % of the idle-balancer kick, itself 9 % of a yield, before they were split).
#[repr(C, align(128))]
pub(crate) struct WorkerSlot {
    // ----- the worker's own: written at every switch -----
    /// The scheduler context's stack pointer, saved while a task runs on this worker.
    pub sched_sp: UnsafeCell<*mut u8>,
    /// The task running here (u32::MAX: none), read by the signal handler.
    pub running: AtomicU32,
    /// 0 exactly while task code (not runtime code) runs on this worker.
    pub preempt_count: AtomicU32,
    /// Ticks the handler has seen and the scheduler not yet accounted.
    pub ticks_pending: AtomicU32,
    /// Why the current task switched out (written on the task side, read by the worker).
    pub reason: UnsafeCell<Reason>,
    /// This worker's high-resolution timer expired and its timers were not yet looked at.
    pub timer_pending: AtomicBool,
    /// The worker's one-shot timer (set up by the worker thread when it can take signals)
    /// and the time of this runtime's clock it is armed for (u64::MAX: not armed). Touched
    /// only on the worker's own thread (by the worker or the task running on it).
    pub hrtimer: UnsafeCell<Option<HrTimer>>,
    pub hrtimer_at: UnsafeCell<u64>,
    /// Ticks this worker has taken, for the balancing interval.
    pub jiffies: UnsafeCell<u64>,
    pub switched_in_ns: UnsafeCell<u64>,
    /// This worker's last reading of the runtime's clock (at its last `schedule()` or tick):
    /// the runtime's `jiffies`, the time a wakeup from this worker hands its policy's CPU
    /// selection (the kernel's `record_wakee` reads `jiffies`, not a clock), so a wakeup
    /// reads the clock only under the runqueue lock, where it charges time. Written by this
    /// worker only; an atomic because a task that reads it may be moved to another worker.
    pub clock_ns: AtomicU64,
    /// This worker's context switches, migrations in and preemptions (summed by `stats`;
    /// per worker so that counting a switch never bounces a shared cache line).
    pub switches: AtomicU64,
    pub migrations: AtomicU64,
    pub preemptions: AtomicU64,
    /// Wakeups, reschedule signals and spawns done by code running on this worker.
    pub wakeups: AtomicU64,
    pub ipis: AtomicU64,
    pub spawned: AtomicU64,

    // ----- touched by other threads -----
    _remote: CacheLines,
    /// Set by wakers (and the tick); cleared by the worker only when set, so that in steady
    /// state this line stays shared.
    pub need_resched: AtomicBool,
    /// A reschedule signal is in flight (the simulator's `ipi_pending`).
    pub ipi_pending: AtomicBool,
    /// Parked in [`park`], or about to be.
    pub idle: AtomicBool,
    /// Idle and polling `park_word` (not yet asleep in the kernel): an unpark needs no futex
    /// wake.
    pub spinning: AtomicBool,
    /// The worker runs on its alternate signal stack with the handlers installed, so the
    /// reschedule signal may be sent to it and its handler may redirect a task.
    pub preemptible: AtomicBool,
    pub park_word: AtomicU32,
    /// Kernel thread id, for `tgkill`.
    pub tid: AtomicI32,
}

/// A zero-sized field that starts the fields after it on a new pair of cache lines (Intel's
/// spatial prefetcher fetches lines in pairs, so 128 bytes, as crossbeam's `CachePadded`).
#[repr(align(128))]
pub(crate) struct CacheLines;

/// `T` alone on its pair of cache lines.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

const _: () = assert!(std::mem::offset_of!(WorkerSlot, need_resched) == 128);
const _: () = assert!(std::mem::size_of::<WorkerSlot>() == 256);

// SAFETY: the UnsafeCell fields are touched only by the worker's own thread (and by task code
// running on that thread); everything shared is atomic.
unsafe impl Sync for WorkerSlot {}

impl WorkerSlot {
    /// Enters a level of runtime code (`preempt_count`), on the worker's own thread. A plain
    /// increment: only this thread and its signal handler write the count, the handler only
    /// when it is 0, after which this code resumes only once the count is 0 again. No barrier:
    /// a waker that reads the old 0 sends a signal the handler ignores. (Leaving is
    /// [`leave_runtime`].)
    ///
    /// Task code must not call it on a slot it read earlier: at count 0 the task may be
    /// preempted and resume on another worker between the read and the increment, which then
    /// lands on the old worker's slot. It enters through [`enter_runtime_here`].
    #[inline(always)]
    pub(crate) fn enter_runtime(&self) {
        let c = &self.preempt_count;
        c.store(c.load(Relaxed) + 1, Relaxed);
    }
}

/// The two words `resched`'s request runs on.
impl super::resched::Words for WorkerSlot {
    fn set_need_resched(&self) {
        self.need_resched
            .store(true, std::sync::atomic::Ordering::SeqCst)
    }
    fn need_resched(&self) -> bool {
        self.need_resched.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn preempt_count(&self) -> u32 {
        self.preempt_count.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn preempt_dec(&self) -> u32 {
        use std::sync::atomic::Ordering::{Relaxed, SeqCst};
        // Only this worker's thread (and its own signal handler, which writes the count only
        // when it is 0) writes the count: a nested level drops with a plain store, and only
        // the last, which the waker's read races, pays for the locked instruction.
        let before = self.preempt_count.load(Relaxed);
        if before > 1 {
            self.preempt_count.store(before - 1, Relaxed);
            before
        } else {
            self.preempt_count.fetch_sub(1, SeqCst)
        }
    }
}

/// Counts one on a counter of a worker's own slot, which only that worker's thread writes
/// (others only read it, for statistics): a load and a store, not a locked increment, which
/// costs a switch or a wakeup as much as a runqueue lock's release.
#[inline(always)]
pub(crate) fn bump(c: &AtomicU64) {
    c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
}

impl WorkerSlot {
    pub fn new() -> WorkerSlot {
        WorkerSlot {
            sched_sp: UnsafeCell::new(std::ptr::null_mut()),
            running: AtomicU32::new(u32::MAX),
            reason: UnsafeCell::new(Reason::Yield),
            _remote: CacheLines,
            preempt_count: AtomicU32::new(1),
            need_resched: AtomicBool::new(false),
            ticks_pending: AtomicU32::new(0),
            ipi_pending: AtomicBool::new(false),
            idle: AtomicBool::new(false),
            preemptible: AtomicBool::new(false),
            timer_pending: AtomicBool::new(false),
            hrtimer: UnsafeCell::new(None),
            hrtimer_at: UnsafeCell::new(u64::MAX),
            park_word: AtomicU32::new(0),
            spinning: AtomicBool::new(false),
            tid: AtomicI32::new(0),
            jiffies: UnsafeCell::new(0),
            switched_in_ns: UnsafeCell::new(0),
            clock_ns: AtomicU64::new(0),
            switches: AtomicU64::new(0),
            migrations: AtomicU64::new(0),
            preemptions: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            ipis: AtomicU64::new(0),
            spawned: AtomicU64::new(0),
        }
    }
}

/// A worker thread's identity, as its thread-local.
pub(crate) struct WorkerTls {
    pub host: *const dyn WorkerOps,
    pub cpu: usize,
    pub slot: *const WorkerSlot,
    /// Identifies the runtime (two runtimes may coexist).
    pub runtime_id: usize,
}

thread_local! {
    static CURRENT: Cell<*const WorkerTls> = const { Cell::new(std::ptr::null()) };
}

/// The worker this code runs on, or `None` on a thread that is not a worker.
#[inline(never)]
pub(crate) fn current() -> Option<&'static WorkerTls> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: set by `enter` to a WorkerTls that lives for the worker thread's whole life.
    unsafe { p.as_ref() }
}

/// Enters a level of runtime code on the worker this code runs on *now*, and returns that
/// worker (None, and nothing entered, on a thread that is not a worker).
///
/// At preempt_count 0 the signal handler may preempt the task anywhere in our text, and the
/// task may resume on another worker thread: a worker read by [`current`] and *then*
/// entered would be the old one, whose count gets the increment (racing that thread's own
/// plain stores), while the new worker's stays 0 and the matching [`leave_runtime`] takes it
/// below zero (u32::MAX: seen as "attempt to add with overflow" at the next entry). As the
/// kernel's single-instruction per-CPU `preempt_disable()`, the read and the increment must
/// be one step for preemption: this function lives in its own section, inside which the
/// handler never redirects a task (a request it declines is acted on when the level is left,
/// or at the next tick). Everything it runs is inlined into it (the thread-local read is a
/// `%fs`-relative load), so no instruction of the step runs outside the section.
#[inline(never)]
#[link_section = "schedkit_nopreempt"]
pub(crate) fn enter_runtime_here() -> Option<&'static WorkerTls> {
    let p = CURRENT.with(|c| c.get());
    // SAFETY: set by `enter` to a WorkerTls that lives for the worker thread's whole life.
    let w = unsafe { p.as_ref() }?;
    // SAFETY: the slot outlives the worker thread.
    unsafe { (*w.slot).enter_runtime() };
    Some(w)
}

/// True when `pc` lies in [`enter_runtime_here`]'s section.
#[inline(always)]
fn in_nopreempt_section(pc: usize) -> bool {
    extern "C" {
        // Defined by the linker for a section whose name is a C identifier.
        static __start_schedkit_nopreempt: u8;
        static __stop_schedkit_nopreempt: u8;
    }
    // Linker-defined symbols; only their addresses are taken (as in `arch::text_range`).
    let lo = std::ptr::addr_of!(__start_schedkit_nopreempt) as usize;
    let hi = std::ptr::addr_of!(__stop_schedkit_nopreempt) as usize;
    (lo..hi).contains(&pc)
}

/// Installs the worker identity on this thread.
pub(crate) fn enter(tls: &WorkerTls) {
    CURRENT.with(|c| c.set(tls as *const WorkerTls));
}

pub(crate) fn leave() {
    CURRENT.with(|c| c.set(std::ptr::null()));
}

/// True when task code (not runtime code) of a runtime is running on this thread.
pub(crate) fn in_task() -> Option<&'static WorkerTls> {
    current().filter(|w| {
        // SAFETY: the slot outlives the worker thread.
        unsafe { (*w.slot).running.load(Relaxed) != u32::MAX }
    })
}

// ----- preemption -----

pub(crate) static TEXT_LO: AtomicUsize = AtomicUsize::new(0);
pub(crate) static TEXT_HI: AtomicUsize = AtomicUsize::new(0);

/// Signal numbers: the tick, the reschedule "IPI" and the high-resolution timer. RT signals,
/// above glibc's reserved ones.
pub(crate) fn tick_signal() -> i32 {
    libc::SIGRTMIN() + 6
}
pub(crate) fn resched_signal() -> i32 {
    libc::SIGRTMIN() + 7
}
pub(crate) fn timer_signal() -> i32 {
    libc::SIGRTMIN() + 8
}
pub(crate) fn signals() -> [i32; 3] {
    [tick_signal(), resched_signal(), timer_signal()]
}

/// The SIGSEGV and SIGBUS dispositions found when [`install_fault_handler`] put its own in
/// place (std's stack-overflow handler, usually), to pass other faults on to.
static OLD_FAULT: std::sync::OnceLock<[libc::sigaction; 2]> = std::sync::OnceLock::new();

/// Installs, once per process, a SIGSEGV/SIGBUS handler that names a task stack overflow: a
/// fault in the guard page of the stack of the task running on this worker is reported on
/// stderr (the task, its stack's two parts, the builder setting to raise) and the process
/// aborts, instead of dying of a bare "Segmentation fault". Any other fault goes to the
/// handler that was there before (std prints its own thread stack overflows), or to the
/// default action. `Err` says why it could not be installed (the runtime works without).
pub(crate) fn install_fault_handler() -> Result<(), String> {
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let mut old = [unsafe { std::mem::zeroed::<libc::sigaction>() }; 2];
            for (i, sig) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
                // SAFETY: reading the current disposition into a zeroed struct.
                if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old[i]) } != 0 {
                    return Err(format!(
                        "sigaction({sig}): {}",
                        std::io::Error::last_os_error()
                    ));
                }
            }
            OLD_FAULT.get_or_init(|| old);
            for sig in [libc::SIGSEGV, libc::SIGBUS] {
                // On the alternate stack: the faulting stack has no room left.
                set_handler(sig, on_fault, libc::SA_ONSTACK, &[])?;
            }
            Ok(())
        })
        .clone()
}

extern "C" fn on_fault(sig: i32, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let tls = CURRENT.with(|c| c.get());
    // SAFETY: set by `enter` to a WorkerTls that lives for the worker thread's whole life; the
    // host outlives its workers.
    let stack = unsafe { tls.as_ref() }.and_then(|w| unsafe { &*w.host }.running_stack(w.cpu));
    if let Some(st) = stack.filter(|st| (st.guard.0..st.guard.1).contains(&addr)) {
        // Formatted into a buffer on this (alternate) stack: no allocation in a handler that
        // may have interrupted malloc.
        let mut buf = [0u8; 512];
        let mut w = &mut buf[..];
        use std::io::Write;
        let _ = write!(
            w,
            "schedkit runtime: task {} overflowed its stack (fault at {addr:#x}, in the guard \
             page): {} B for its frames (Builder::stack_size) + {} B for a preemption \
             (SaveArea::stack_cost); raise Builder::stack_size\n",
            st.task.0, st.own, st.preempt
        );
        let n = 512 - w.len();
        // SAFETY: writing our buffer to file descriptor 2, then aborting.
        unsafe {
            libc::write(2, buf.as_ptr() as *const libc::c_void, n);
            libc::abort();
        }
    }
    // Not ours: hand it to the previous handler, or restore the default action and return,
    // so that the faulting instruction runs again and the default action (a core dump) takes
    // the process as it would have without us.
    let Some(old) = OLD_FAULT.get() else { return };
    let old = &old[usize::from(sig == libc::SIGBUS)];
    let h = old.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        // SAFETY: putting back the disposition we found.
        unsafe { libc::sigaction(sig, old, std::ptr::null_mut()) };
    } else if old.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed for exactly this call.
        let f: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, uctx);
    } else {
        // SAFETY: as above, a one-argument handler.
        let f: extern "C" fn(i32) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

/// `sigaction(sig)` with the three-argument `handler`, `flags` besides SA_SIGINFO, and `blocked`
/// masked while it runs; `Err` names the signal and the OS error.
fn set_handler(
    sig: i32,
    handler: extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void),
    flags: i32,
    blocked: &[i32],
) -> Result<(), String> {
    // SAFETY: a zeroed sigaction filled in here; `handler` has the SA_SIGINFO signature.
    let r = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | flags;
        libc::sigemptyset(&mut sa.sa_mask);
        for &b in blocked {
            libc::sigaddset(&mut sa.sa_mask, b);
        }
        libc::sigaction(sig, &sa, std::ptr::null_mut())
    };
    if r != 0 {
        return Err(format!(
            "sigaction({sig}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Installs the process-wide handlers once; every later call returns the first one's outcome.
pub(crate) fn install_handler() -> Result<(), String> {
    static INSTALLED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let (lo, hi) = arch::text_range();
            TEXT_LO.store(lo, Relaxed);
            TEXT_HI.store(hi, Relaxed);
            for sig in signals() {
                // SA_ONSTACK because the handler writes below the interrupted stack pointer
                // and must not run on that stack. All three signals blocked while any handler
                // runs: a reschedule signal landing in the tick's handler would otherwise see
                // the handler's own context (our text, preempt_count 0) and redirect *it* to
                // the trampoline, on the alternate stack.
                set_handler(
                    sig,
                    on_signal,
                    libc::SA_ONSTACK | libc::SA_RESTART,
                    &signals(),
                )?;
            }
            Ok(())
        })
        .clone()
}

/// Whether the handler may redirect code interrupted at `pc` into the trampoline: only in this
/// executable's text, never in libc, the vDSO or another library, nor in the
/// `schedkit_nopreempt` section (between reading the worker and entering runtime code on it,
/// `enter_runtime_here`, and the trampoline itself, whose area is live until it returns).
pub(crate) fn redirectable_pc(pc: usize) -> bool {
    (TEXT_LO.load(Relaxed)..TEXT_HI.load(Relaxed)).contains(&pc) && !in_nopreempt_section(pc)
}

extern "C" fn on_signal(sig: i32, _info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    let tls = CURRENT.with(|c| c.get());
    if tls.is_null() {
        return;
    }
    // SAFETY: set by `enter`; the slot outlives the thread.
    let slot = unsafe { &*(*tls).slot };
    if sig == tick_signal() {
        slot.ticks_pending.fetch_add(1, Relaxed);
    } else if sig == timer_signal() {
        slot.timer_pending.store(true, Relaxed);
    } else {
        slot.ipi_pending.store(false, Relaxed);
    }
    if slot.preempt_count.load(Relaxed) != 0
        || slot.running.load(Relaxed) == u32::MAX
        || !slot.preemptible.load(Relaxed)
    {
        return; // runtime code or idle: the scheduler looks at the flags itself
    }
    // SAFETY: the kernel passes a valid ucontext_t to an SA_SIGINFO handler.
    let uc = unsafe { &mut *(uctx as *mut libc::ucontext_t) };
    let rip = uc.uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
    if !redirectable_pc(rip) {
        // Not a safe point; the next tick or runtime call handles the request.
        return;
    }
    let rsp = uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize;
    // Below the red zone, push the interrupted pc; the trampoline's `ret 128` returns to it
    // with rsp restored exactly.
    let frame = rsp - 128 - 8;
    // SAFETY: the task stack below its red zone is free (this handler runs on the
    // sigaltstack), and the guard page would fault on a stack that has no room.
    unsafe { (frame as *mut usize).write(rip) };
    uc.uc_mcontext.gregs[libc::REG_RSP as usize] = frame as i64;
    uc.uc_mcontext.gregs[libc::REG_RIP as usize] = arch::trampoline_addr() as i64;
    // From here the task runs runtime code: the trampoline's prologue (pushes, the page-by-
    // page probe of the save area — page faults on a fresh stack — and XSAVE) must not be
    // redirected again by the next signal, or trampolines nest, each reserving the area anew,
    // until the stack overflows. With a 12 KiB area this crashed 1 run in 3 of the runtime
    // suite. The trampoline itself drops it to 0 once its area is released, in a section this
    // handler never redirects.
    slot.preempt_count.store(1, Relaxed);
}

/// What [`preempt_entry`] hands back to the trampoline (in rax and rdx): the two words of
/// `resched`'s request on the worker the task ends up on.
#[repr(C)]
pub(crate) struct PreemptExit {
    preempt_count: *const AtomicU32,
    need_resched: *const AtomicBool,
}

/// Called by the trampoline on the task's stack, in normal (not signal) context, with every
/// register of the interrupted code saved. Runs the scheduler, and again while ticks, an
/// expired timer or a reschedule came due meanwhile, all at preempt_count 1, so that no signal
/// redirects the task while the trampoline's save area is on its stack. It returns with the
/// count still 1: the trampoline drops it once it has released the area (see
/// `schedkit_preempt_trampoline`), where a signal cannot redirect it either.
pub(crate) extern "C" fn preempt_entry() -> PreemptExit {
    fatal_on_panic("preemption", || {
        let mut w = current().expect("the trampoline runs only on a worker");
        // SAFETY: the slot outlives the worker thread.
        unsafe { (*w.slot).preempt_count.store(1, Relaxed) };
        loop {
            // SAFETY: the host outlives its workers.
            unsafe { &*w.host }.preempt_point(w.cpu);
            // We may be on another worker now; at count 1 we stay on it until the trampoline
            // returns to task code.
            w = current().expect("the trampoline runs only on a worker");
            // SAFETY: the slot outlives the worker thread.
            let slot = unsafe { &*w.slot };
            debug_assert_eq!(slot.preempt_count.load(Relaxed), 1);
            let due = slot.need_resched.load(Relaxed)
                || slot.ticks_pending.load(Relaxed) > 0
                || slot.timer_pending.load(Relaxed);
            if !due {
                return PreemptExit {
                    preempt_count: &slot.preempt_count,
                    need_resched: &slot.need_resched,
                };
            }
        }
    })
}

/// Leaves a level of runtime code (`preempt_count`); back at task code, runs what came due
/// meanwhile (a reschedule, ticks, an expired timer) before the task goes on. A waker that
/// found this worker in runtime code sent no signal and counts on this check
/// ([`super::resched`]).
pub(crate) fn leave_runtime() {
    loop {
        let w = current().expect("runtime code of a task runs on a worker");
        // SAFETY: the slot outlives the worker thread.
        let slot = unsafe { &*w.slot };
        // A reschedule already asked for (most often by a wakeup this very code made on its
        // own worker) is acted on at this level, as the kernel's `preempt_enable()` calls
        // `preempt_schedule()` on the decrement that finds NEED_RESCHED: leaving to task code
        // would cost the locked decrement and an entry again only to switch out. At level 1
        // nothing moves this task, so `slot` is current here; the test after the decrement
        // below still catches a request that comes later.
        if slot.preempt_count.load(Relaxed) == 1
            && slot.need_resched.load(Relaxed)
            && slot.running.load(Relaxed) != u32::MAX
        {
            // SAFETY: the host outlives its workers.
            unsafe { &*w.host }.preempt_point(w.cpu);
            continue;
        }
        let due = match super::resched::leave(slot) {
            super::resched::Leave::Nested => return,
            super::resched::Leave::Reschedule => true,
            super::resched::Leave::Run => {
                slot.ticks_pending.load(Relaxed) > 0 || slot.timer_pending.load(Relaxed)
            }
        };
        // From the decrement to 0 on, the task may be preempted and resume on another
        // worker: `slot` may be stale. The reads above are hints only (a stale one enters
        // for nothing or leaves a tick for the next check); entering again reads the worker
        // anew, in one step with the increment.
        if !due || slot.running.load(Relaxed) == u32::MAX {
            return;
        }
        // Back into runtime code to act on it; the task may resume on another worker, so
        // the loop re-reads which one.
        let w = enter_runtime_here().expect("runtime code of a task runs on a worker");
        // SAFETY: the host outlives its workers.
        unsafe { &*w.host }.preempt_point(w.cpu);
    }
}

/// Runs scheduler code on a task's stack where a panic cannot unwind (the preemption
/// trampoline and a task's exit sit below it): a panic there is a bug in the scheduler, so
/// its message goes straight to stderr (not to a test harness's captured output, which an
/// abort would lose) and the process aborts with it, instead of the bare "failed to initiate
/// panic" of an unwind that runs off the task stack.
pub(crate) fn fatal_on_panic<R>(what: &str, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(non-string panic payload)".into());
            let line = format!("schedkit runtime: panic in the scheduler during {what}: {msg}\n");
            // SAFETY: writing a byte buffer to file descriptor 2.
            unsafe { libc::write(2, line.as_ptr() as *const libc::c_void, line.len()) };
            std::process::abort();
        }
    }
}

/// Alternate signal stack for this thread (the handler must not run on a task stack).
pub(crate) fn setup_sigaltstack() -> Option<Vec<u8>> {
    // The kernel's signal frame holds the whole enabled register state (11 KiB and more with
    // AMX); AT_MINSIGSTKSZ (Linux 5.14+) says how large it is on this machine. Our handler
    // itself needs little.
    const AT_MINSIGSTKSZ: libc::c_ulong = 51;
    // SAFETY: getauxval reads the process's auxiliary vector.
    let frame = unsafe { libc::getauxval(AT_MINSIGSTKSZ) } as usize;
    let size = (64 * 1024).max(4 * frame);
    let mut mem = vec![0u8; size];
    let ss = libc::stack_t {
        ss_sp: mem.as_mut_ptr() as *mut libc::c_void,
        ss_flags: 0,
        ss_size: size,
    };
    // SAFETY: `mem` lives as long as the returned Vec, which the worker keeps until it exits
    // (and disables the alternate stack before dropping it).
    let r = unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
    (r == 0).then_some(mem)
}

pub(crate) fn teardown_sigaltstack() {
    let ss = libc::stack_t {
        ss_sp: std::ptr::null_mut(),
        ss_flags: libc::SS_DISABLE,
        ss_size: 0,
    };
    // SAFETY: disabling the alternate stack.
    unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) };
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    }
}

/// A CLOCK_MONOTONIC POSIX timer that delivers its signal to the thread that created it.
struct ThreadTimer(libc::timer_t);

impl ThreadTimer {
    fn new(signo: i32) -> Option<ThreadTimer> {
        // SAFETY: plain syscalls on our own thread id, into zeroed structs.
        unsafe {
            let mut sev: libc::sigevent = std::mem::zeroed();
            sev.sigev_notify = libc::SIGEV_THREAD_ID;
            sev.sigev_signo = signo;
            sev.sigev_notify_thread_id = libc::gettid();
            let mut timer: libc::timer_t = std::mem::zeroed();
            (libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut timer) == 0)
                .then_some(ThreadTimer(timer))
        }
    }

    /// `timer_settime`: first expiry `value_ns` (absolute with `TIMER_ABSTIME`, 0 disarms),
    /// then every `interval_ns` (0: once).
    fn set(&self, flags: i32, value_ns: u64, interval_ns: u64) {
        let spec = libc::itimerspec {
            it_interval: timespec(interval_ns),
            it_value: timespec(value_ns),
        };
        // SAFETY: our own timer.
        unsafe { libc::timer_settime(self.0, flags, &spec, std::ptr::null_mut()) };
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: our own timer.
        unsafe { libc::timer_delete(self.0) };
    }
}

/// The worker's periodic tick: a POSIX timer that signals this thread only.
pub(crate) struct Tick {
    timer: ThreadTimer,
    period_ns: u64,
    armed: Cell<bool>,
}

impl Tick {
    pub fn new(period_ns: u64) -> Option<Tick> {
        Some(Tick {
            timer: ThreadTimer::new(tick_signal())?,
            period_ns,
            armed: Cell::new(false),
        })
    }

    fn set(&self, on: bool) {
        if self.armed.get() == on {
            return;
        }
        self.armed.set(on);
        let ns = if on { self.period_ns } else { 0 };
        self.timer.set(0, ns, ns);
    }

    /// Runs while tasks run; stopped while idle (an idle worker takes no interrupts).
    pub fn arm(&self) {
        self.set(true)
    }
    pub fn disarm(&self) {
        self.set(false)
    }
}

/// A worker's high-resolution one-shot timer: a POSIX timer on CLOCK_MONOTONIC that signals
/// this thread only, armed at an absolute time (the kernel's hrtimer behind it expires at that
/// time, not at the next jiffy).
pub(crate) struct HrTimer(ThreadTimer);

impl HrTimer {
    pub fn new() -> Option<HrTimer> {
        ThreadTimer::new(timer_signal()).map(HrTimer)
    }

    /// Arms the timer to expire once at CLOCK_MONOTONIC time `mono_ns` (replacing any earlier
    /// setting; a time already past expires at once).
    pub fn arm_at(&self, mono_ns: u64) {
        // A zero value would disarm it; the epoch is never a deadline.
        self.0.set(libc::TIMER_ABSTIME, mono_ns.max(1), 0);
    }
}

/// Sends the reschedule signal to worker `slot` unless one is already in flight; true when
/// a signal was sent. Never signals a worker that has no handler and alternate stack ready (the signal's default
/// action would kill the process): such a worker notices `need_resched` at its next runtime
/// call instead.
pub(crate) fn kick_running(slot: &WorkerSlot) -> bool {
    if !slot.preemptible.load(Acquire) || slot.ipi_pending.swap(true, AcqRel) {
        return false;
    }
    let tid = slot.tid.load(Acquire);
    if tid == 0 {
        return false;
    }
    // SAFETY: tgkill to a thread of this process.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, resched_signal()) == 0 }
}

// ----- idle parking (futex) -----

/// Wakes worker `slot` if it is parked.
pub(crate) fn unpark(slot: &WorkerSlot) {
    slot.park_word.store(1, SeqCst);
    // A worker seen spinning will read park_word (SeqCst) after it stops spinning, before it
    // can sleep in the futex: it sees the 1 and needs no wake.
    if slot.idle.load(SeqCst) && !slot.spinning.load(SeqCst) {
        futex_wake(&slot.park_word);
    }
}

/// Polls `park_word` for up to `ns`; true if an [`unpark`] came.
pub(crate) fn spin_for_unpark(slot: &WorkerSlot, ns: u64) -> bool {
    if ns == 0 {
        return slot.park_word.load(SeqCst) != 0;
    }
    slot.spinning.store(true, SeqCst);
    let t0 = std::time::Instant::now();
    let limit = std::time::Duration::from_nanos(ns);
    'poll: loop {
        for _ in 0..64 {
            if slot.park_word.load(SeqCst) != 0 {
                break 'poll;
            }
            std::hint::spin_loop();
        }
        if t0.elapsed() >= limit {
            break;
        }
    }
    slot.spinning.store(false, SeqCst);
    slot.park_word.load(SeqCst) != 0
}

/// Sleeps until [`unpark`] or `timeout_ns` (None: no timeout). The caller has set `idle` and
/// re-checked for work after clearing `park_word`.
pub(crate) fn park(slot: &WorkerSlot, timeout_ns: Option<u64>) {
    let ts = timeout_ns.map(timespec);
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT on an aligned u32 we own; returns on wake, mismatch, timeout, signal.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            slot.park_word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            0u32,
            tsp,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on an aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        )
    };
}

/// Pins the calling thread to `core` (best effort: a restricted cpuset may forbid it).
pub(crate) fn pin_to(core: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t with one bit set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Gives the calling thread the CPUs of the process's main thread. A thread started from a
/// task inherits its worker's pinning to one core; the I/O driver and the helper pool must
/// not stay on that core, where they would take turns with the worker they serve.
pub(crate) fn unpin_to_process_cpus() {
    // SAFETY: reading the main thread's affinity (its tid is the process id) into a zeroed
    // set and applying it to this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(libc::getpid(), size, &mut set) == 0 {
            libc::sched_setaffinity(0, size, &set);
        }
    }
}

/// The cores this process may run on.
pub(crate) fn allowed_cores() -> Vec<usize> {
    // SAFETY: querying our own affinity into a zeroed set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

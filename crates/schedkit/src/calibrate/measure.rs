//! Raw timings, no interpretation. Every function times the calling thread; callers pin
//! it first (`on_cpu`).

pub use super::memory::*;

use std::ffi::CString;
use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// CLOCK_MONOTONIC, ns (the vDSO's clock).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn cpu_set(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain bits; CPU_SET ignores CPUs beyond CPU_SETSIZE.
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        s
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin_self(cpu: usize) -> io::Result<()> {
    let s = cpu_set(cpu);
    // SAFETY: a valid cpu_set_t of the size given.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &s) } != 0 {
        return os_err(&format!("sched_setaffinity(CPU {cpu})"));
    }
    Ok(())
}

/// The CPUs this thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t filled in by the kernel; CPU_ISSET reads within it.
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s) != 0 {
            return vec![];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &s))
            .collect()
    }
}

/// Runs `f` on a new thread pinned to `cpu` (the caller's affinity is left alone).
pub fn on_cpu<T: Send>(cpu: usize, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin_self(cpu)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("a measurement thread panicked")))
    })
}

/// Involuntary context switches of the calling thread so far.
fn preemptions() -> i64 {
    // SAFETY: a zeroed rusage for the kernel to fill in.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is valid.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return 0;
    }
    ru.ru_nivcsw as i64
}

/// The values of runs of a timed loop that no other task preempted.
pub struct Runs {
    pub kept: Vec<f64>,
    /// Runs left out because another task preempted them.
    pub preempted: usize,
    /// Every run was preempted: `kept` holds them all.
    pub all_preempted: bool,
}

/// Calls `f` (one timed run) until `reps` runs were not preempted by another task, at
/// most `4 reps` times: a run that lost the CPU measured the other task too.
pub fn unpreempted(reps: usize, mut f: impl FnMut() -> io::Result<f64>) -> io::Result<Runs> {
    let (mut all, mut preempted) = (vec![], vec![]);
    let mut kept = 0;
    for _ in 0..4 * reps.max(1) {
        let p = preemptions();
        all.push(f()?);
        let lost = preemptions() != p;
        preempted.push(lost);
        kept += usize::from(!lost);
        if !lost && kept >= reps {
            break;
        }
    }
    Ok(Runs::of(all, &preempted))
}

impl Runs {
    /// Of values each flagged whether its run lost the CPU: those that did not, or all of
    /// them where every one did.
    pub fn of(all: Vec<f64>, preempted: &[bool]) -> Runs {
        let kept: Vec<f64> = all
            .iter()
            .zip(preempted)
            .filter(|(_, &p)| !p)
            .map(|(&v, _)| v)
            .collect();
        let n_preempted = all.len() - kept.len();
        if kept.is_empty() {
            Runs {
                kept: all,
                preempted: n_preempted,
                all_preempted: true,
            }
        } else {
            Runs {
                kept,
                preempted: n_preempted,
                all_preempted: false,
            }
        }
    }
}

/// Runs `f(iters)`, `iters` chosen by pilot runs so that one run takes about
/// `budget_ns`, until `reps` runs were not preempted ([`unpreempted`]); returns the ns per
/// iteration of those runs and `iters`.
pub fn per_iter(
    reps: usize,
    budget_ns: u64,
    max_iters: u64,
    mut f: impl FnMut(u64) -> io::Result<()>,
) -> io::Result<(Runs, u64)> {
    let mut iters = 1u64;
    loop {
        let t0 = now_ns();
        f(iters)?;
        let t = now_ns() - t0;
        if t >= budget_ns / 8 || iters >= max_iters {
            iters =
                ((iters as f64 * budget_ns as f64 / t.max(1) as f64) as u64).clamp(1, max_iters);
            break;
        }
        iters = (iters * 4).min(max_iters);
    }
    let runs = unpreempted(reps, || {
        let t0 = now_ns();
        f(iters)?;
        Ok((now_ns() - t0) as f64 / iters as f64)
    })?;
    Ok((runs, iters))
}

/// Calls `op` (one timed operation, returning its ns) for about `total_ns`, at least
/// `min_ops` and at most `max_ops` times; returns each operation's time. Long operations
/// (fork, exec) are timed one by one, so that the median leaves out those another task
/// delayed.
pub fn per_op(
    total_ns: u64,
    min_ops: usize,
    max_ops: usize,
    mut op: impl FnMut() -> io::Result<u64>,
) -> io::Result<Vec<f64>> {
    let start = now_ns();
    let mut out = vec![];
    while out.len() < min_ops || (out.len() < max_ops && now_ns() - start < total_ns) {
        out.push(op()? as f64);
    }
    Ok(out)
}

/// A null system call: `syscall(SYS_getppid)`.
pub fn syscall(n: u64) -> io::Result<()> {
    for _ in 0..n {
        // SAFETY: getppid takes no arguments and cannot fail.
        black_box(unsafe { libc::syscall(libc::SYS_getppid) });
    }
    Ok(())
}

/// Uncontended `lock xadd` on a line this CPU owns.
pub fn atomic(n: u64) -> io::Result<()> {
    let a = AtomicU64::new(0);
    for _ in 0..n {
        black_box(&a).fetch_add(1, Ordering::SeqCst);
    }
    black_box(a.load(Ordering::Relaxed));
    Ok(())
}

/// Dependent register adds per `add_chain` iteration.
pub const ADDS_PER_ITER: f64 = 16.0;

/// `n` iterations of 16 dependent register-to-register adds (one cycle each on any x86-64
/// core): the core's clock is 16 n cycles over the time taken. The addend is a register, not
/// an immediate: Intel's Golden Cove cores (Alder Lake, Sapphire Rapids) fold chains of
/// `add reg, imm` at rename, several a cycle, and an immediate chain measured a 2.6 GHz
/// Sapphire Rapids guest at 19 GHz.
pub fn add_chain(n: u64) -> io::Result<()> {
    let mut x = 0u64;
    let mut n = n.max(1);
    let one = black_box(1u64);
    // SAFETY: register arithmetic only.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
            "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
            "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
            "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) x,
            n = inout(reg) n,
            one = in(reg) one,
            options(nomem, nostack),
        );
    }
    black_box((x, n));
    Ok(())
}

/// A file descriptor, closed on drop.
pub struct Fd(pub i32);
impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}

pub fn pipe() -> io::Result<(Fd, Fd)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return os_err("pipe2");
    }
    Ok((Fd(fds[0]), Fd(fds[1])))
}

fn write_all(fd: &Fd, buf: &[u8]) -> io::Result<()> {
    // SAFETY: buf is valid for its length.
    let n = unsafe { libc::write(fd.0, buf.as_ptr().cast(), buf.len()) };
    if n != buf.len() as isize {
        return os_err("write");
    }
    Ok(())
}

fn read_exact(fd: &Fd, buf: &mut [u8]) -> io::Result<()> {
    // SAFETY: buf is valid for its length.
    let n = unsafe { libc::read(fd.0, buf.as_mut_ptr().cast(), buf.len()) };
    if n != buf.len() as isize {
        return os_err("read");
    }
    Ok(())
}

/// Per-run ns of 1-byte pipe writes that wake nobody and reads that find data, in one
/// thread (no switch), in batches of 1024; and of the writes timed call by call.
pub struct PipeOps {
    pub write: Vec<f64>,
    pub read: Vec<f64>,
    pub write_timed: Vec<f64>,
}

pub const PIPE_BATCH: u64 = 1024; // 1 KB: far below a pipe's 64 KB

pub fn pipe_ops(reps: usize, batches: u64) -> io::Result<PipeOps> {
    let (r, w) = pipe()?;
    let mut b = [0u8; 1];
    let mut out = PipeOps {
        write: vec![],
        read: vec![],
        write_timed: vec![],
    };
    // Run 0 warms up.
    for rep in 0..=reps {
        let (mut tw, mut tr, mut tt) = (0u64, 0u64, 0u64);
        for _ in 0..batches {
            let t0 = now_ns();
            for _ in 0..PIPE_BATCH {
                write_all(&w, &b)?;
            }
            let t1 = now_ns();
            for _ in 0..PIPE_BATCH {
                read_exact(&r, &mut b)?;
            }
            let t2 = now_ns();
            for _ in 0..PIPE_BATCH {
                let t = now_ns();
                write_all(&w, &b)?;
                tt += now_ns() - t;
            }
            for _ in 0..PIPE_BATCH {
                read_exact(&r, &mut b)?;
            }
            tw += t1 - t0;
            tr += t2 - t1;
        }
        if rep > 0 {
            let n = (batches * PIPE_BATCH) as f64;
            out.write.push(tw as f64 / n);
            out.read.push(tr as f64 / n);
            out.write_timed.push(tt as f64 / n);
        }
    }
    Ok(out)
}

pub const SOCK_BATCH: u64 = 64;
pub const SOCK_BYTES: usize = 100;

/// Per-run ns of 100-byte sends and receives on an AF_UNIX stream socketpair in one
/// thread (hackbench's socket kind and message size), in batches of 64.
pub fn socket_ops(reps: usize, batches: u64) -> io::Result<(Vec<f64>, Vec<f64>)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return os_err("socketpair");
    }
    let (a, b) = (Fd(fds[0]), Fd(fds[1]));
    let mut buf = [7u8; SOCK_BYTES];
    let (mut send, mut recv) = (vec![], vec![]);
    for rep in 0..=reps {
        let (mut ts, mut tr) = (0u64, 0u64);
        for _ in 0..batches {
            let t0 = now_ns();
            for _ in 0..SOCK_BATCH {
                // SAFETY: buf is valid for its length.
                let n =
                    unsafe { libc::send(a.0, buf.as_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
                if n != buf.len() as isize {
                    return os_err("send");
                }
            }
            let t1 = now_ns();
            for _ in 0..SOCK_BATCH {
                // SAFETY: buf is valid for its length.
                let n = unsafe { libc::recv(b.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
                if n != buf.len() as isize {
                    return os_err("recv");
                }
            }
            ts += t1 - t0;
            tr += now_ns() - t1;
        }
        if rep > 0 {
            let n = (batches * SOCK_BATCH) as f64;
            send.push(ts as f64 / n);
            recv.push(tr as f64 / n);
        }
    }
    Ok((send, recv))
}

/// A forked child, killed and reaped on drop.
struct Child(libc::pid_t);
impl Drop for Child {
    fn drop(&mut self) {
        // SAFETY: our own child, not yet reaped.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }
}

/// Round trips of one byte between the calling thread and a child process pinned to
/// `child_cpu`: per run, the median round trip and the median time of the parent's
/// write() calls (each wakes the child); and the round trips of a run.
pub struct PingPong {
    pub round_trip: Vec<f64>,
    pub write: Vec<f64>,
    pub rounds: u64,
}

pub fn pingpong(child_cpu: usize, reps: usize, budget_ns: u64) -> io::Result<PingPong> {
    let (to_r, to_w) = pipe()?;
    let (from_r, from_w) = pipe()?;
    let set = cpu_set(child_cpu);
    // SAFETY: the child calls only async-signal-safe system calls (sched_setaffinity,
    // read, write, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return os_err("fork");
    }
    if pid == 0 {
        // SAFETY: see above.
        unsafe {
            let mut b = 0u8;
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                libc::_exit(3);
            }
            loop {
                if libc::read(to_r.0, (&mut b as *mut u8).cast(), 1) != 1 {
                    libc::_exit(0);
                }
                if libc::write(from_w.0, (&b as *const u8).cast(), 1) != 1 {
                    libc::_exit(1);
                }
            }
        }
    }
    let child = Child(pid);
    drop((to_r, from_w));
    let mut b = [0u8; 1];
    let mut rt = vec![];
    let mut wr = vec![];
    let mut run = |n: u64, rt: &mut Vec<u64>, wr: &mut Vec<u64>| -> io::Result<u64> {
        rt.clear();
        wr.clear();
        let start = now_ns();
        for _ in 0..n {
            let t0 = now_ns();
            write_all(&to_w, &b)?;
            let t1 = now_ns();
            read_exact(&from_r, &mut b)?;
            let t2 = now_ns();
            rt.push(t2 - t0);
            wr.push(t1 - t0);
        }
        Ok(now_ns() - start)
    };
    // Warm up (the child migrates to its CPU), and size the runs.
    run(20, &mut rt, &mut wr)?;
    let mut n = 20u64;
    let rounds = loop {
        let t = run(n, &mut rt, &mut wr)?;
        if t >= budget_ns / 8 || n >= 1 << 20 {
            break ((n as f64 * budget_ns as f64 / t.max(1) as f64) as u64).clamp(10, 1 << 22);
        }
        n *= 4;
    };
    let mut out = PingPong {
        round_trip: vec![],
        write: vec![],
        rounds,
    };
    let med = |v: &[u64]| super::median(&v.iter().map(|&x| x as f64).collect::<Vec<_>>());
    for _ in 0..reps {
        run(rounds, &mut rt, &mut wr)?;
        out.round_trip.push(med(&rt));
        out.write.push(med(&wr));
    }
    drop(to_w); // the child reads end-of-file and exits
    drop(child);
    Ok(out)
}

/// Busy loops at SCHED_IDLE (nice 19 where that is refused), one pinned to each CPU
/// given: they keep those CPUs out of their idle state and give way to any other task at
/// once. Stopped on drop.
pub struct Spinners {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    pub policy: &'static str,
}

impl Spinners {
    pub fn start(cpus: &[usize]) -> Spinners {
        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(AtomicUsize::new(0));
        let idle_ok = Arc::new(AtomicUsize::new(0));
        let mut s = Spinners {
            stop: stop.clone(),
            threads: vec![],
            policy: "SCHED_IDLE",
        };
        for &cpu in cpus {
            let (stop, ready, idle_ok) = (stop.clone(), ready.clone(), idle_ok.clone());
            s.threads.push(std::thread::spawn(move || {
                let _ = pin_self(cpu);
                let p = libc::sched_param { sched_priority: 0 };
                // SAFETY: this thread's own policy.
                if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) } == 0 {
                    idle_ok.fetch_add(1, Ordering::SeqCst);
                } else {
                    // SAFETY: this thread's own nice value.
                    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
                }
                ready.fetch_add(1, Ordering::SeqCst);
                // No PAUSE in the loop: in a VM, PAUSE loops can exit to the hypervisor.
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = black_box(x.wrapping_add(1));
                }
            }));
        }
        while ready.load(Ordering::SeqCst) < cpus.len() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if idle_ok.load(Ordering::SeqCst) < cpus.len() {
            s.policy = "nice 19";
        }
        // Let them settle on their CPUs.
        std::thread::sleep(std::time::Duration::from_millis(5));
        s
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The timer wakeups of a thread on `cpu` while a spinner keeps it busy, seen through
/// tracefs: for each wakeup in the timer's interrupt (`sched_waking` with the hardirq
/// flag, the spinner interrupted), the time to the switch to the woken thread. Needs a
/// tracefs this process may write and that is not in use (`tracing_on` 0); the settings
/// it changes are put back. Returns the intervals in ns (tracefs prints microseconds).
pub fn timer_wake_trace(cpu: usize, wakes: usize, period_ns: u64) -> io::Result<Vec<u64>> {
    let root = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .find(|r| std::path::Path::new(&format!("{r}/tracing_on")).exists())
        .ok_or_else(|| io::Error::other("no tracefs (/sys/kernel/tracing) to trace with"))?;
    let path = |f: &str| format!("{root}/{f}");
    let read = |f: &str| -> io::Result<String> {
        std::fs::read_to_string(path(f)).map(|s| s.trim().to_string())
    };
    let write = |f: &str, v: &str| -> io::Result<()> {
        std::fs::write(path(f), v)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path(f))))
    };
    if read("tracing_on")? != "0" {
        return Err(io::Error::other(format!(
            "tracefs is in use ({} is 1): left alone",
            path("tracing_on")
        )));
    }
    const EVENTS: [&str; 2] = [
        "events/sched/sched_waking/enable",
        "events/sched/sched_switch/enable",
    ];
    let saved: Vec<(&str, String)> = EVENTS
        .iter()
        .map(|&f| read(f).map(|v| (f, v)))
        .chain(std::iter::once(
            read("buffer_size_kb").map(|v| ("buffer_size_kb", v)),
        ))
        .collect::<io::Result<_>>()?;
    let restore = || {
        let _ = write("tracing_on", "0");
        for (f, v) in &saved {
            let _ = write(f, v);
        }
        let _ = write("trace", "");
    };
    let traced = (|| -> io::Result<(String, i32)> {
        write("trace", "")?;
        write("buffer_size_kb", "4096")?;
        for f in EVENTS {
            write(f, "1")?;
        }
        let spin = Spinners::start(&[cpu]);
        let tid = on_cpu(cpu, || {
            // SAFETY: this thread's own id and timer slack (1 ns: the expiry as asked).
            let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
            write("tracing_on", "1")?;
            let mut next = now_ns() + period_ns;
            for _ in 0..wakes {
                let ts = libc::timespec {
                    tv_sec: (next / 1_000_000_000) as libc::time_t,
                    tv_nsec: (next % 1_000_000_000) as libc::c_long,
                };
                // SAFETY: an absolute sleep on CLOCK_MONOTONIC, the clock now_ns reads.
                unsafe {
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &ts,
                        std::ptr::null_mut(),
                    )
                };
                next += period_ns;
            }
            write("tracing_on", "0")?;
            Ok(tid)
        });
        drop(spin);
        let tid = tid?;
        Ok((std::fs::read_to_string(path("trace"))?, tid))
    })();
    restore();
    let (text, tid) = traced?;
    let v = super::timer_wake_intervals(&text, tid);
    if v.len() < wakes / 4 {
        return Err(io::Error::other(format!(
                "the trace held {} timer wakeups of {wakes} on a busy CPU (events lost, or the spinner did not keep the CPU busy)",
                v.len()
            )));
    }
    Ok(v)
}

/// Reaps `pid`; returns its exit status (-1 if it did not exit normally).
fn reap(pid: libc::pid_t) -> io::Result<i32> {
    let mut st = 0;
    // SAFETY: our own child; st is valid.
    if unsafe { libc::waitpid(pid, &mut st, 0) } != pid {
        return os_err("waitpid");
    }
    Ok(if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else {
        -1
    })
}

fn fork_exiting() -> io::Result<libc::pid_t> {
    // SAFETY: the child only calls _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return os_err("fork");
    }
    if pid == 0 {
        // SAFETY: async-signal-safe.
        unsafe { libc::_exit(0) };
    }
    Ok(pid)
}

/// fork + the child's _exit + waitpid (lmbench's `lat_proc fork`): its ns.
pub fn fork_exit_wait() -> io::Result<u64> {
    let t = now_ns();
    reap(fork_exiting()?)?;
    Ok(now_ns() - t)
}

/// The parent's `fork()` alone: the ns from just before the call to its return in the
/// parent, and whether the parent lost the CPU meanwhile (an involuntary switch, in
/// `getrusage`).
///
/// The child can run before `fork()` returns in the parent: `wake_up_new_task` asks
/// whether the new task should preempt its parent (EEVDF does so when the child's
/// deadline, half a slice past the average vruntime, comes before the parent's, once the
/// parent's slice is no longer protected; CFS with `sched_child_runs_first`). Were the
/// child to `_exit` at once, such a sample would hold its whole life. So the child first
/// blocks reading a pipe: a child that runs first adds only its return from `fork`, a
/// `close` and a blocking `read` and two switches, and the parent's involuntary switch
/// says that it did (the caller leaves such samples out, as `unpreempted` does runs).
/// The parent closes the pipe and reaps the child after the timed span. The span holds
/// the parent's return to user space and the copy-on-write faults its first writes take
/// (glibc's fork wrapper, the clock read): the child still shares those pages, as in
/// lmbench's `lat_proc fork`.
pub fn fork_call() -> io::Result<(u64, bool)> {
    let (r, w) = pipe()?;
    let p = preemptions();
    let t = now_ns();
    // SAFETY: the child calls only close, read and _exit (async-signal-safe), on
    // descriptors opened before the fork.
    let pid = unsafe { libc::fork() };
    let dt = now_ns() - t;
    let preempted = preemptions() != p;
    if pid < 0 {
        return os_err("fork");
    }
    if pid == 0 {
        // SAFETY: see above. read returns 0 (end of file) once the parent closes its
        // write end, the child's own closed first.
        unsafe {
            let mut b = 0u8;
            libc::close(w.0);
            libc::read(r.0, (&mut b as *mut u8).cast(), 1);
            libc::_exit(0);
        }
    }
    drop((r, w));
    if reap(pid)? != 0 {
        return Err(io::Error::other("a forked child did not exit 0"));
    }
    Ok((dt, preempted))
}

/// The ns of a waitpid that reaps a child already a zombie (waited for first with
/// `waitid(WNOWAIT)`, which leaves it one).
pub fn wait_zombie() -> io::Result<u64> {
    let pid = fork_exiting()?;
    // SAFETY: a zeroed siginfo_t for the kernel to fill in.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: our own child; WNOWAIT leaves it a zombie.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        )
    };
    if r != 0 {
        let e = os_err("waitid");
        let _ = reap(pid);
        return e;
    }
    let t = now_ns();
    reap(pid)?;
    Ok(now_ns() - t)
}

/// A program and its arguments, ready to exec in a forked child.
pub struct Exec {
    path: CString,
    _args: Vec<CString>,
    argv: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into the owned CStrings, which are never changed or moved
// (their heap buffers stay put when the Vec moves).
unsafe impl Send for Exec {}
// SAFETY: as above; `run` only reads them.
unsafe impl Sync for Exec {}

impl Exec {
    pub fn new(path: &str, args: &[&str]) -> Option<Exec> {
        if !std::path::Path::new(path).exists() {
            return None;
        }
        let path = CString::new(path).ok()?;
        let args: Vec<CString> = args
            .iter()
            .map(|a| CString::new(*a).ok())
            .collect::<Option<_>>()?;
        let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        Some(Exec {
            path,
            _args: args,
            argv,
        })
    }

    /// fork + exec + the program's run and exit + waitpid (lmbench's `lat_proc exec`):
    /// its ns; fails unless the program exits 0.
    pub fn run(&self) -> io::Result<u64> {
        let t = now_ns();
        // SAFETY: the child calls only execv and _exit, on memory prepared before.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return os_err("fork");
        }
        if pid == 0 {
            // SAFETY: see above.
            unsafe {
                libc::execv(self.path.as_ptr(), self.argv.as_ptr());
                libc::_exit(127);
            }
        }
        let st = reap(pid)?;
        let dt = now_ns() - t;
        if st != 0 {
            return Err(io::Error::other(format!(
                "{} exited with status {st}",
                self.path.to_string_lossy()
            )));
        }
        Ok(dt)
    }
}

/// Mean ns of the write-protect faults on `pages` pages written before a fork whose child
/// has gone: each page is no longer shared, so `do_wp_page` reuses it with no copy.
pub fn wp_fault(pages: usize) -> io::Result<f64> {
    const PAGE: usize = 4096;
    let m = Map::new(pages * PAGE, false)?;
    for i in 0..pages {
        // SAFETY: within the mapping.
        unsafe { m.ptr.add(i * PAGE).write_volatile(1) };
    }
    fork_exit_wait()?;
    let t = now_ns();
    for i in 0..pages {
        // SAFETY: within the mapping.
        unsafe { m.ptr.add(i * PAGE).write_volatile(2) };
    }
    let dt = now_ns() - t;
    black_box(m.words()[0]);
    Ok(dt as f64 / pages as f64)
}

/// Busy-loops on the clock for `dur_ns`: a gap of more than `min_gap_ns` between two
/// clock reads is time the CPU spent elsewhere (an interrupt, another task, the
/// hypervisor). Returns the gaps as (start, length).
pub fn gaps(dur_ns: u64, min_gap_ns: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(4096);
    let start = now_ns();
    let mut last = start;
    loop {
        let t = now_ns();
        if t - last > min_gap_ns {
            out.push((last, t - last));
        }
        last = t;
        if t - start >= dur_ns {
            break;
        }
    }
    out
}

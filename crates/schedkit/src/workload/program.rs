//! The program a simulated task runs: a flat list of operations with counted loops.
//!
//! Programs are what workloads are made of. The simulator interprets them; every operation
//! maps to a system call or a stretch of user-space computing whose cost comes from the
//! machine profile.

use crate::task::{CpuMask, SchedPolicy};
use rand::{Rng, RngCore};

/// A channel (pipe, socket, or a counting semaphore) between tasks, by index.
pub type ChanId = u32;
/// A program in the workload's program table, by index.
pub type ProgId = u32;

/// A duration, fixed or drawn from a distribution with the simulation's seeded RNG.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    Const(u64),
    /// Uniform in [lo, hi] ns.
    Uniform(u64, u64),
    /// Exponential with this mean, ns.
    Exp(u64),
    /// Log-normal with this median (ns) and shape sigma.
    LogNormal(u64, f64),
}

/// The longest duration a distribution yields, ns (a million seconds, the simulator's limit
/// on a run): a log-normal's far tail is cut there instead of overflowing the clock.
pub const MAX_SAMPLE_NS: u64 = 1_000_000_000_000_000;

impl Dist {
    pub fn sample<R: RngCore>(&self, rng: &mut R) -> u64 {
        self.sample_uncapped(rng).min(MAX_SAMPLE_NS)
    }

    fn sample_uncapped<R: RngCore>(&self, rng: &mut R) -> u64 {
        match *self {
            Dist::Const(v) => v,
            Dist::Uniform(lo, hi) => {
                if hi <= lo {
                    lo
                } else {
                    rng.gen_range(lo..=hi)
                }
            }
            Dist::Exp(mean) => {
                let u: f64 = rng.gen_range(f64::EPSILON..1.0);
                (-(u.ln()) * mean as f64) as u64
            }
            Dist::LogNormal(median, sigma) => {
                // Box-Muller from two uniforms: deterministic for a given RNG stream.
                let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
                let u2: f64 = rng.gen_range(0.0..1.0);
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                (median as f64 * (sigma * z).exp()) as u64
            }
        }
    }
}

/// A task's own stream of random draws: SplitMix64 (Steele, Lea and Flood, "Fast Splittable
/// Pseudorandom Number Generators", OOPSLA 2014), seeded per task. A task's draws depend only
/// on the run's seed and the task's place in the task tree — a start task by its index in the
/// workload, a forked child by a draw from its parent's stream at the fork — never on how the
/// tasks were scheduled. So every policy run on a workload sees the same job sizes, sleep and
/// think times (common random numbers), and a difference between two policies' figures comes
/// from the scheduling, not from different draws. Pure integer arithmetic: the same stream on
/// every platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskRng(u64);

const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function (a variant of MurmurHash3's finaliser).
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl TaskRng {
    /// The stream of the workload's start task number `index` in a run seeded with `seed`.
    pub fn root(seed: u64, index: u64) -> TaskRng {
        TaskRng(mix64(
            seed ^ mix64(index.wrapping_add(1).wrapping_mul(GOLDEN_GAMMA)),
        ))
    }

    /// A new, independent stream for a child, drawn from this one.
    pub fn split(&mut self) -> TaskRng {
        TaskRng(mix64(self.next_u64()))
    }
}

impl RngCore for TaskRng {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        mix64(self.0)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

/// Kernel work priced by the machine profile's `[kernel]` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelWork {
    Exec,
    ShellStartup,
}

/// One operation of a program.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Run in user space for this long (at the profile's clock).
    Compute(Dist),
    /// Run in user space for this many CPU cycles (at the profile's `clock.mhz`, its top
    /// non-turbo frequency, this is `cycles / mhz` µs; faster or slower as the CPU's speed is).
    ComputeCycles(u64),
    /// Read the task's whole working set once (lat_ctx's array walk): costs one cache-latency
    /// load per 32-byte line, plus the refill the cache model charges if it went cold.
    Touch,
    /// Sleep (interruptible) or wait for I/O (uninterruptible) for this long. The interrupt
    /// that ends it runs on `irq_cpu` where given (a replayed trace's recorded CPU: the
    /// CPU of the `sched_waking`, which need not be the sleeper's), otherwise on the CPU the
    /// task slept on, as an hrtimer is armed on the CPU that sleeps.
    Sleep {
        dur: Dist,
        uninterruptible: bool,
        irq_cpu: Option<u32>,
    },
    /// `sched_yield()`.
    Yield,
    /// Write one message into a channel; blocks while the channel is full.
    Send(ChanId),
    /// `Send`, waking a waiting reader with WF_SYNC whatever the channel's kind wakes with:
    /// a replayed wakeup the recording shows was sync (an exiting child's wakeup of its
    /// parent in `wait()`, `trace::replay`).
    SendSync(ChanId),
    /// Read one message from a channel; blocks while it is empty.
    Recv(ChanId),
    /// `Send` to member `(i + offset) mod count` of the channel array starting at `base`, where
    /// `i` is the running task's index in its group: one program serves a whole group.
    SendMember {
        base: ChanId,
        count: u32,
        offset: i64,
    },
    /// `Recv` from a member of a channel array, as `SendMember` picks it.
    RecvMember {
        base: ChanId,
        count: u32,
        offset: i64,
    },
    /// `fork()` a child that runs the given program; `thread` shares the address space
    /// (clone with CLONE_VM).
    Fork { prog: ProgId, thread: bool },
    /// Kernel work priced by the machine (exec, shell start-up).
    Kernel(KernelWork),
    /// `wait()` for any child to exit.
    Wait,
    /// `exit()`.
    Exit,
    /// `nice()` to an absolute level.
    SetNice(i32),
    /// `sched_setscheduler()`.
    SetPolicy(SchedPolicy, u8),
    /// `sched_setaffinity()` on itself: bind to these CPUs.
    SetAffinity(CpuMask),
    /// `sched_setaffinity()` to the single CPU after the one it is bound to (or runs on),
    /// round robin over the machine (rt-migrate-test's highest-priority thread).
    AffinityNextCpu,
    /// Take the workload's time stamp: start a new iteration (rt-migrate-test's parent
    /// `now = gettimeofday()` before the start barrier).
    Stamp,
    /// Busy-loop until the last stamp plus this long, recording (as thread `id`) when the loop
    /// started, when it ended and how much CPU it got (rt-migrate-test's `busy_loop`).
    SpinUntil { ns: u64, id: u32 },
    /// Take a sleeping lock (semaphore `down()`, `mutex_lock()`), sleeping uninterruptibly while
    /// it is held elsewhere.
    Lock(u32),
    /// Release it (`up()`, `mutex_unlock()`).
    Unlock(u32),
    /// Work inside the kernel that is not preemptible (a system call's body, a section under
    /// the big kernel lock).
    KernelCompute(Dist),
    /// Count one unit of the workload's throughput figure.
    Count,
    /// Write the first `n` pages of the task's address space (stack and data first): after a
    /// fork each still write-protected one takes a protection fault, and a copy where the
    /// page is still shared (on profiles with the fork/exec/exit model; nothing elsewhere).
    Dirty(u32),
    /// `pthread_cond_wait(cond, lock)`: join the condition variable's waiters and release
    /// `lock` atomically (a signal sent after the release finds the waiter), sleep until
    /// signalled. The file parser follows it with `Lock(lock)`: pthread_cond_wait takes the
    /// mutex again before it returns.
    CondWait { cond: ChanId, lock: u32 },
    /// `pthread_cond_signal` (one waiter, the longest waiting) or `pthread_cond_broadcast`
    /// (`all`); with no waiter the signal is lost.
    CondSignal { cond: ChanId, all: bool },
    /// rt-app's `timer` event: sleep until the timer's next expiry, `period` ns after the
    /// last (the first use starts it). Late (already expired): no sleep; in relative mode
    /// (`absolute: false`, rt-app's default) the next period then counts from now, in
    /// absolute mode from the missed expiry.
    Timer {
        timer: ChanId,
        period: u64,
        absolute: bool,
    },
    /// cyclictest's measurement after its `clock_nanosleep(TIMER_ABSTIME)` on `timer` (an
    /// absolute `Timer` of the same `period` just before): record how late the task runs
    /// after the expiry it slept until (now − expiry, the run's probe latency), then skip
    /// the expiries already missed (`while next < now: next += period`), so that the next
    /// `Timer` sleeps until the first one still ahead, as cyclictest does.
    Lateness { timer: ChanId, period: u64 },
    /// `write()` one `period` of decoded audio to a sound device whose ring buffer holds
    /// `buffer` periods (an mpg123-like player). The device plays one period per `period` of
    /// time from the first write on; the write returns once the ring has room for the next
    /// period. A period written after the device needed it is an underrun (an audible skip,
    /// after which the stream restarts); one written more than `period` after the ring had
    /// room for it missed its deadline.
    AudioWrite { period: u64, buffer: u32 },
    /// Repeat the next `len` operations `times` times (`None`: forever).
    Loop { times: Option<u64>, len: u32 },
}

/// A program: its operations and the working set of the tasks that run it.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub name: String,
    pub ops: Vec<Op>,
    /// Memory the task touches while it runs, KB: what the cache model must keep warm.
    pub working_set_kb: u32,
    /// Resident pages of the program's address space (its image after `exec`, or of a task
    /// started with it), for the fork/exec/exit model of profiles that have one (0: not
    /// sized; fork and exit cost only the profile's fixed times).
    pub mm_pages: u32,
    /// Where each op came from, for errors found while running (`ops.len()` entries, or none
    /// for a program built in code): the file and its line.
    pub source: Option<ProgramSource>,
}

/// The workload file a program was read from, and the line of each of its ops.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramSource {
    pub path: String,
    pub lines: Vec<u32>,
}

impl Program {
    pub fn new(name: impl Into<String>, ops: Vec<Op>) -> Program {
        Program {
            name: name.into(),
            ops,
            working_set_kb: 0,
            mm_pages: 0,
            source: None,
        }
    }

    /// "file.toml line 12" for op `pc`, or the program's name for one built in code.
    pub fn where_is(&self, pc: usize) -> String {
        match &self.source {
            Some(src) => match src.lines.get(pc) {
                Some(l) => format!("{} line {l}", src.path),
                None => src.path.clone(),
            },
            None => format!("program '{}'", self.name),
        }
    }

    pub fn with_working_set(mut self, kb: u32) -> Program {
        self.working_set_kb = kb;
        self
    }

    pub fn with_mm_pages(mut self, pages: u32) -> Program {
        self.mm_pages = pages;
        self
    }

    /// Checks loop extents and nesting (used after building or parsing a program). Iterative:
    /// a program nested a hundred thousand loops deep must not overflow the stack here.
    pub fn validate(&self) -> Result<(), String> {
        use super::limits::MAX_LOOP_DEPTH;
        // Ends of the loops open at the current op, innermost last.
        let mut open: Vec<usize> = Vec::new();
        for (i, op) in self.ops.iter().enumerate() {
            while open.last() == Some(&i) {
                open.pop();
            }
            if let Op::Loop { len, .. } = *op {
                let end = i + 1 + len as usize;
                if end > open.last().copied().unwrap_or(self.ops.len()) {
                    return Err(format!("loop at op {i} runs past the end of its block"));
                }
                open.push(end);
                if open.len() > MAX_LOOP_DEPTH {
                    return Err(format!(
                        "loops nested more than {MAX_LOOP_DEPTH} deep (at op {i})"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The deepest loop nesting.
    pub fn loop_depth(&self) -> usize {
        let mut open: Vec<usize> = Vec::new();
        let mut deepest = 0;
        for (i, op) in self.ops.iter().enumerate() {
            while open.last() == Some(&i) {
                open.pop();
            }
            if let Op::Loop { len, .. } = *op {
                open.push(i + 1 + len as usize);
                deepest = deepest.max(open.len());
            }
        }
        deepest
    }
}

/// Builds programs with nested loops without counting lengths by hand.
#[derive(Default)]
pub struct ProgramBuilder {
    ops: Vec<Op>,
    open: Vec<usize>,
}

impl ProgramBuilder {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn op(mut self, op: Op) -> Self {
        self.ops.push(op);
        self
    }
    pub fn push(&mut self, op: Op) {
        self.ops.push(op);
    }
    /// Opens a loop; close it with [`ProgramBuilder::end`].
    pub fn repeat(mut self, times: Option<u64>) -> Self {
        self.begin(times);
        self
    }
    pub fn begin(&mut self, times: Option<u64>) {
        self.open.push(self.ops.len());
        self.ops.push(Op::Loop { times, len: 0 });
    }
    pub fn end(mut self) -> Self {
        self.close();
        self
    }
    pub fn close(&mut self) {
        let at = self.open.pop().expect("end without loop");
        let len = (self.ops.len() - at - 1) as u32;
        if let Op::Loop { len: l, .. } = &mut self.ops[at] {
            *l = len;
        }
    }
    pub fn open_loops(&self) -> usize {
        self.open.len()
    }
    /// Ops so far.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    /// Is the innermost open loop still without a body?
    pub fn innermost_loop_is_empty(&self) -> bool {
        self.open.last().is_some_and(|&at| at + 1 == self.ops.len())
    }
    pub fn build(self, name: impl Into<String>) -> Program {
        assert!(self.open.is_empty(), "unclosed loop");
        Program::new(name, self.ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_closes_nested_loops() {
        let p = ProgramBuilder::new()
            .repeat(Some(3))
            .op(Op::Yield)
            .repeat(None)
            .op(Op::Count)
            .end()
            .end()
            .op(Op::Exit)
            .build("t");
        assert_eq!(
            p.ops[0],
            Op::Loop {
                times: Some(3),
                len: 3
            }
        );
        assert_eq!(
            p.ops[2],
            Op::Loop {
                times: None,
                len: 1
            }
        );
        p.validate().unwrap();
    }

    #[test]
    fn the_task_stream_is_splitmix64() {
        // SplitMix64's published outputs from state 0.
        let mut r = TaskRng(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
        // Start tasks and children get different streams; the same place, the same stream.
        let (a, b) = (TaskRng::root(1, 0), TaskRng::root(1, 1));
        assert_ne!(a, b);
        assert_eq!(a, TaskRng::root(1, 0));
        assert_ne!(a, TaskRng::root(2, 0));
        let mut parent = a;
        let (c1, c2) = (parent.split(), parent.split());
        assert_ne!(c1, c2);
        let mut again = a;
        assert_eq!(again.split(), c1);
    }

    #[test]
    fn distributions_are_seeded() {
        let mut a = TaskRng::root(7, 0);
        let mut b = TaskRng::root(7, 0);
        for d in [
            Dist::Exp(1000),
            Dist::Uniform(5, 10),
            Dist::LogNormal(1000, 0.5),
        ] {
            assert_eq!(d.sample(&mut a), d.sample(&mut b));
        }
        let mut r = TaskRng::root(1, 0);
        let mean: f64 = (0..20_000)
            .map(|_| Dist::Exp(1000).sample(&mut r) as f64)
            .sum::<f64>()
            / 20_000.0;
        assert!((mean - 1000.0).abs() < 50.0, "exp mean {mean}");
    }
}

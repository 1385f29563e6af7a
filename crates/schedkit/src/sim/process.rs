//! The host's side of a task (`Proc`): where it is in its program (pc, open loops, a compute
//! or busy loop under way), what it is blocked on, its timing for the latency figures, its
//! cache warmth, its family (parent, children, zombies), its sound device and its random
//! stream. The scheduler's side of the task is `crate::task::Task`; the two share a slot
//! index.
//!
//! Plain data: must never reach the core or a class.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Block {
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
pub(super) struct Proc {
    // --- hot (128 bytes): read at each switch-in, segment end and wakeup ---
    /// ns of the current Compute/Touch op still to run (valid when `computing`).
    pub(super) compute_left: u64,
    /// When it became runnable after a wakeup or fork, for the latency histogram.
    pub(super) runnable_since: Option<u64>,
    /// When it last started waiting for a CPU while runnable (woken, forked or preempted),
    /// for the starvation figure.
    pub(super) waiting_since: Option<u64>,
    pub(super) warmth: Warmth,
    /// The innermost open loop (valid when `loop_depth > 0`); the outer ones are in
    /// `outer_loops`.
    pub(super) loop_top: LoopFrame,
    /// A `SpinUntil` in progress.
    pub(super) spin: Option<Box<SpinState>>,
    pub(super) block: Block,
    /// The CPU it last ran on (`NO_CPU`: none yet).
    pub(super) last_cpu: u32,
    pub(super) prog: u32,
    pub(super) pc: u32,
    pub(super) sleep_gen: u32,
    /// Its workload part (the counter its completed iterations go to).
    pub(super) part: u32,
    pub(super) wss_kb: u32,
    pub(super) loop_depth: u16,
    pub(super) computing: bool,
    /// The current system call has done its kernel work and takes effect next.
    pub(super) entered: bool,
    pub(super) interactive: bool,
    pub(super) background: bool,
    // --- colder ---
    /// The open loops around `loop_top`, outermost first.
    pub(super) outer_loops: Vec<LoopFrame>,
    /// Its index in its group (`{i}` of a shared program); 0 for a forked task.
    pub(super) member: u32,
    /// Bumped each time its slot is reused; a child remembers its parent's.
    pub(super) incarnation: u32,
    /// Its process id in traces: never reused within a run (slots are).
    pub(super) pid: u32,
    pub(super) parent_incarnation: u32,
    pub(super) children: u32,
    pub(super) zombies: u32,
    /// The CPU whose interrupt ends its timed sleep (`Op::Sleep`'s `irq_cpu`; `NO_CPU`: the
    /// CPU it slept on). Cold: read once per timer expiry.
    pub(super) timer_cpu: u32,
    pub(super) lock_waited: bool,
    /// When it blocked (for the report of a deadlock).
    pub(super) block_since: u64,
    /// When the current lock attempt began, and whether it has slept or spun yet.
    pub(super) lock_since: Option<u64>,
    pub(super) born: u64,
    pub(super) died: Option<u64>,
    /// Its sound device, once it has written to one (`AudioWrite`).
    pub(super) audio: Option<Box<AudioStream>>,
    /// Its own random draws (see `TaskRng`: the same whatever the schedule).
    pub(super) rng: crate::workload::TaskRng,
    /// The address space a fork in progress has copied for the child (the fork's kernel
    /// work done, the child not yet created).
    pub(super) fork_mm: Option<u32>,
}

/// One open loop of a program: its body is ops `start..end`; `left` iterations remain,
/// `FOREVER` for a loop without a count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct LoopFrame {
    pub(super) start: u32,
    pub(super) end: u32,
    pub(super) left: u64,
}

impl LoopFrame {
    pub(super) const FOREVER: u64 = u64::MAX;
}

impl Proc {
    pub(super) fn innermost_loop(&self) -> Option<LoopFrame> {
        (self.loop_depth > 0).then_some(self.loop_top)
    }

    pub(super) fn push_loop(&mut self, f: LoopFrame) {
        if self.loop_depth > 0 {
            self.outer_loops.push(self.loop_top);
        }
        self.loop_top = f;
        self.loop_depth += 1;
    }

    pub(super) fn pop_loop(&mut self) {
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
pub(super) const NO_CPU: u32 = u32::MAX;

/// Bytes of `Proc`'s hot part (what the simulator prefetches for a task about to run).
pub(super) const PROC_HOT_BYTES: usize = std::mem::offset_of!(Proc, outer_loops);
// The hot part must stay within two cache lines: a field added there has to pay its way.
const _: () = assert!(PROC_HOT_BYTES <= 128);

/// A task's sound device: when its chunk 0 would have started playing (moved on an underrun,
/// as a restarted stream), chunks written, and when the ring had room for the next one.
#[derive(Clone, Copy, Debug)]
pub(super) struct AudioStream {
    pub(super) t0: u64,
    pub(super) written: u64,
    pub(super) released: u64,
}

/// A busy loop until an absolute time (rt-migrate-test), and what it got.
#[derive(Clone, Copy, Debug)]
pub(super) struct SpinState {
    pub(super) deadline: u64,
    pub(super) id: u32,
    pub(super) iteration: u32,
    pub(super) started: u64,
    pub(super) cpu_ns: u64,
}

//! Work accounting: what a scheduler path reports having done, in units a host prices.
//!
//! [`OpCounter`] counts a hook's work (tasks scanned, bitmap searches, list operations,
//! recalculation visits, tree steps, remote cache lines); [`Line`] names a cache line of
//! kernel scheduler data and [`LineSink`] is where a path reports the lines it reads and
//! writes, for a host that prices coherence (the simulator's `sim/interconnect.rs`); [`Work`]
//! bundles both for a lock-free decision. The shared structures of `ds` report into these
//! themselves, so no path can forget its work.
//!
//! The bottom of the crate with `task`: it must never depend on `class`, `policy`,
//! `sched_core`, a host (`sim`, `runtime`), `workload` or `metrics`.

use crate::task::{CpuId, TaskId};

/// A cache line of kernel scheduler data, as the coherence model of a shared-bus machine
/// tracks it (`sim/interconnect.rs`). Which CPU last wrote a line decides what reading or
/// writing it costs another CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// A task's scheduling fields. 2.4 kept everything `goodness()` reads in one line of
    /// `task_struct` ("offset 32 begins here on 32-bit platforms. We keep all fields in a
    /// single cacheline that are needed for the goodness() loop in schedule()": counter, nice,
    /// policy, mm, processor, cpus_runnable, cpus_allowed, run_list.next; 2.4.16
    /// `include/linux/sched.h`); O(1)'s patch kept its own (cpu, prio, run_list, array) there.
    Task(TaskId),
    /// What a CPU publishes of itself: 2.4's `aligned_data[cpu]` (`curr`, `last_schedule`, one
    /// line per CPU), a runqueue's `curr` for the per-CPU designs.
    Cpu(CpuId),
    /// The header of a runqueue (a lock domain): its lock word and what shares that line
    /// (2.4's `runqueue_lock`, cache-line aligned; O(1)'s `rq->lock`, `nr_running`).
    Rq(usize),
    /// A runqueue's list head where it is not in the lock's line (2.4's `runqueue_head`).
    RqList(usize),
    /// Bytes of a task's kernel structure, for a class that lays out its `task_struct` field
    /// by field (a class's `task_struct_layout`): every line of the machine's line size
    /// that the span covers. The structure begins a line.
    TaskBytes(TaskId, Span),
    /// Bytes of a CPU's idle task's `task_struct` (2.4's `init_tasks[cpu]`: a task to the
    /// kernel, not one the host schedules).
    IdleBytes(CpuId, Span),
    /// Bytes of an address space's `mm_struct` (by the host's mm id; [`INIT_MM`] is the
    /// kernel's own, which idle tasks borrow at boot). The structure begins a line.
    MmBytes(u32, Span),
    /// A kernel global of its own line.
    Global(GlobalLine),
}

/// A byte range of a kernel structure: `len` bytes from offset `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub off: u16,
    pub len: u16,
}

impl Span {
    pub const fn new(off: u16, len: u16) -> Span {
        Span { off, len }
    }
}

/// The mm id of `init_mm`, the address space idle tasks run on until they borrow one.
pub const INIT_MM: u32 = u32::MAX;

/// Kernel globals a scheduler path writes, each taken as a line of its own (where the linker
/// put them, and what shares their lines, is not known).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobalLine {
    /// 2.4's `nr_running` (`kernel/fork.c`): `add_to_runqueue` and `del_from_runqueue` write
    /// it, `sys_sched_yield` reads it.
    NrRunning,
    /// `kstat.context_swtch`: `schedule()` increments it at every switch, on every CPU.
    ContextSwitches,
}

/// Where a hook reports the kernel lines it touches, for hosts that price coherence.
pub trait LineSink {
    fn read(&mut self, line: Line);
    fn write(&mut self, line: Line);
}

/// What a lock-free decision (`select_cpu`) reports: its work and the lines it read.
pub struct Work<'a> {
    pub ops: &'a mut OpCounter,
    pub lines: Option<&'a mut dyn LineSink>,
}

impl<'a> Work<'a> {
    pub fn new(ops: &'a mut OpCounter) -> Self {
        Work { ops, lines: None }
    }

    #[inline]
    pub fn read_line(&mut self, l: Line) {
        if let Some(s) = self.lines.as_deref_mut() {
            s.read(l);
        }
    }

    /// Reports a write of kernel line `l` (a lock-free store, as 2.4's `reschedule_idle`
    /// setting the chosen CPU's idle task's `need_resched`).
    #[inline]
    pub fn write_line(&mut self, l: Line) {
        if let Some(s) = self.lines.as_deref_mut() {
            s.write(l);
        }
    }
}

impl std::ops::Deref for Work<'_> {
    type Target = OpCounter;
    fn deref(&self) -> &OpCounter {
        self.ops
    }
}

impl std::ops::DerefMut for Work<'_> {
    fn deref_mut(&mut self) -> &mut OpCounter {
        self.ops
    }
}

/// Work a hook did, in units the host prices (see `sim::cost`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounter {
    /// Runnable tasks examined by a selection loop (2.4 `goodness()` calls, BFS deadline scan).
    pub scanned: u64,
    /// Tasks visited by a whole-system loop over cold task structures (2.4 recalculation).
    pub recalc: u64,
    /// Find-first-bit searches of a priority bitmap.
    pub bitmap_searches: u64,
    /// Insertions into / removals from a list or array slot.
    pub list_ops: u64,
    /// Balanced-tree steps (CFS/EEVDF rbtree levels).
    pub tree_steps: u64,
    /// Cache lines read from another CPU's runqueue (balancer scans, migrations).
    pub remote_touches: u64,
}

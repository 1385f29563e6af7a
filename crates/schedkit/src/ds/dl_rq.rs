//! The deadline class's runqueue data (`struct dl_rq`, `kernel/sched/sched.h`) and the part of
//! its root domain every CPU reads without locks (`struct dl_bw` and `struct cpudl`,
//! `kernel/sched/cpudeadline.c`).
//!
//! Simplifications, said here once:
//! - The kernel's `dl_rq` is an `rb_root_cached` ordered by absolute deadline; here a
//!   `BTreeSet` keyed by (deadline, enqueue sequence, task), with the same O(log n) insert and
//!   remove and its first element the leftmost (earliest deadline). Ties go to the earlier
//!   enqueue, as the kernel's `rb_add_cached` puts an equal key after those present.
//! - The kernel's cpudl is a max-heap of each CPU's earliest deadline plus a free-CPU mask,
//!   O(1) to find the latest deadline and O(log n) to update; here each CPU publishes its
//!   earliest deadline in an atomic and `find_later_rq` scans them, O(n) in CPUs.
//! - Throttled tasks wait in a per-runqueue list for the replenishment timer.

use crate::ds::work::OpCounter;
use crate::task::{CpuId, CpuMask, TaskId};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// `struct dl_rq` of one runqueue.
#[derive(Debug, Default)]
pub struct DlRq {
    /// The runnable deadline tasks, the running one included (it stays queued, as in the
    /// kernel): (absolute deadline, enqueue sequence, task).
    tree: BTreeSet<(u64, u64, TaskId)>,
    /// Throttled tasks of this runqueue, waiting for their replenishment (`dl_timer`), each
    /// with the instant it is due.
    pub throttled: Vec<(u64, TaskId)>,
    seq: u64,
    /// Tasks queued in the tree and able to run elsewhere (`dl_nr_migratory`).
    pub nr_migratory: usize,
}

impl DlRq {
    /// `dl_nr_running`: the tasks in the tree.
    #[inline]
    pub fn nr_running(&self) -> usize {
        self.tree.len()
    }

    /// `__enqueue_dl_entity`: inserts `t` at `deadline`; returns the sequence it got (the
    /// key's tie-break, to remove it again).
    pub fn insert(
        &mut self,
        t: TaskId,
        deadline: u64,
        migratory: bool,
        ops: &mut OpCounter,
    ) -> u64 {
        self.seq += 1;
        let seq = self.seq;
        ops.tree_steps += depth(self.tree.len());
        self.tree.insert((deadline, seq, t));
        self.nr_migratory += usize::from(migratory);
        seq
    }

    /// `__dequeue_dl_entity`: removes `t` queued at (`deadline`, `seq`). Returns whether it
    /// was there.
    pub fn remove(
        &mut self,
        t: TaskId,
        deadline: u64,
        seq: u64,
        migratory: bool,
        ops: &mut OpCounter,
    ) -> bool {
        ops.tree_steps += depth(self.tree.len());
        let was = self.tree.remove(&(deadline, seq, t));
        if was {
            self.nr_migratory = self.nr_migratory.saturating_sub(usize::from(migratory));
        }
        was
    }

    /// `pick_next_dl_entity`: the leftmost (earliest deadline).
    #[inline]
    pub fn leftmost(&self) -> Option<(u64, TaskId)> {
        self.tree.first().map(|&(d, _, t)| (d, t))
    }

    /// The queued tasks in deadline order (earliest first).
    pub fn iter(&self) -> impl Iterator<Item = (u64, TaskId)> + '_ {
        self.tree.iter().map(|&(d, _, t)| (d, t))
    }

    /// Is a task throttled here?
    #[inline]
    pub fn has_throttled(&self) -> bool {
        !self.throttled.is_empty()
    }
}

/// Tree levels a search walks, for the work report (`log2(n) + 1`).
fn depth(n: usize) -> u64 {
    (usize::BITS - n.leading_zeros()) as u64 + 1
}

/// "No deadline task here" in the published earliest deadline (cpudl's free CPU).
pub const NO_DL: u64 = u64::MAX;

trait StoreIfChanged {
    type V;
    fn store_if_changed(&self, v: Self::V);
}

impl StoreIfChanged for AtomicU64 {
    type V = u64;
    fn store_if_changed(&self, v: u64) {
        if self.load(Relaxed) != v {
            self.store(v, Relaxed);
        }
    }
}

impl StoreIfChanged for AtomicUsize {
    type V = usize;
    fn store_if_changed(&self, v: usize) {
        if self.load(Relaxed) != v {
            self.store(v, Relaxed);
        }
    }
}

/// What every CPU reads of the others without locks: each CPU's earliest deadline (cpudl),
/// its deadline task count (the overload mask `dlo_mask` is `nr >= 2` with one migratory),
/// and the root domain's admitted bandwidth (`struct dl_bw`'s `total_bw`).
#[derive(Debug)]
pub struct DlRootDomain {
    earliest: Box<[AtomicU64]>,
    overloaded: Box<[AtomicUsize]>,
    throttled: Box<[AtomicUsize]>,
    total_bw: AtomicU64,
    /// Tasks ever queued under this class: zero means the class costs nothing anywhere.
    pub active: AtomicUsize,
}

impl DlRootDomain {
    pub fn new(ncpus: usize) -> DlRootDomain {
        DlRootDomain {
            earliest: (0..ncpus).map(|_| AtomicU64::new(NO_DL)).collect(),
            overloaded: (0..ncpus).map(|_| AtomicUsize::new(0)).collect(),
            throttled: (0..ncpus).map(|_| AtomicUsize::new(0)).collect(),
            total_bw: AtomicU64::new(0),
            active: AtomicUsize::new(0),
        }
    }

    /// `cpudl_set`/`cpudl_clear` and `dl_set_overload`/`dl_clear_overload` of `cpu`.
    pub fn publish(&self, cpu: CpuId, earliest: u64, overloaded: bool, throttled: usize) {
        // Stored only when changed (the kernel updates cpudl and the overload mask on
        // changes): the CPUs' slots share cache lines, and a store takes the line.
        fn set<A: StoreIfChanged>(a: &A, v: A::V) {
            a.store_if_changed(v)
        }
        set(&self.earliest[cpu], earliest);
        set(&self.overloaded[cpu], usize::from(overloaded));
        set(&self.throttled[cpu], throttled);
    }

    #[inline]
    pub fn earliest(&self, cpu: CpuId) -> u64 {
        self.earliest[cpu].load(Relaxed)
    }

    #[inline]
    pub fn is_overloaded(&self, cpu: CpuId) -> bool {
        self.overloaded[cpu].load(Relaxed) != 0
    }

    #[inline]
    pub fn throttled_on(&self, cpu: CpuId) -> usize {
        self.throttled.get(cpu).map_or(0, |a| a.load(Relaxed))
    }

    /// The overloaded CPUs (`dlo_mask`), in CPU order.
    pub fn overloaded_cpus(&self) -> impl Iterator<Item = CpuId> + '_ {
        (0..self.overloaded.len()).filter(|&c| self.is_overloaded(c))
    }

    /// `cpudl_find` in `find_later_rq`: a CPU of `allowed` running no deadline task (the free
    /// mask; `prefer` first if it is one), else the CPU whose earliest deadline is the latest
    /// and later than `deadline`. Returns it and the CPUs read. O(n) in CPUs where the
    /// kernel's heap answers in O(1) (see the module's note).
    pub fn find_later(
        &self,
        deadline: u64,
        allowed: &CpuMask,
        prefer: CpuId,
    ) -> (Option<CpuId>, u64) {
        let n = self.earliest.len();
        if prefer < n && allowed.contains(prefer) && self.earliest(prefer) == NO_DL {
            return (Some(prefer), 1);
        }
        let mut best: Option<(u64, CpuId)> = None;
        let mut reads = 0;
        for c in allowed.iter(n) {
            reads += 1;
            let e = self.earliest(c);
            if e == NO_DL {
                return (Some(c), reads);
            }
            if e > deadline && best.is_none_or(|(b, _)| e > b) {
                best = Some((e, c));
            }
        }
        (best.map(|(_, c)| c), reads)
    }

    /// `dl_b->total_bw`.
    #[inline]
    pub fn total_bw(&self) -> u64 {
        self.total_bw.load(Relaxed)
    }

    /// `__dl_overflow` then `__dl_add`: admits `new_bw` if the total stays within `cap`
    /// (`cap_scale(dl_b->bw, capacity)`); returns the total it would have reached if not.
    pub fn try_add(&self, new_bw: u64, cap: u64) -> Result<u64, u64> {
        self.total_bw
            .fetch_update(Relaxed, Relaxed, |t| {
                let n = t.saturating_add(new_bw);
                (n <= cap).then_some(n)
            })
            .map_err(|t| t.saturating_add(new_bw))
    }

    /// `__dl_sub`.
    pub fn sub(&self, bw: u64) {
        let _ = self
            .total_bw
            .fetch_update(Relaxed, Relaxed, |t| Some(t.saturating_sub(bw)));
    }
}

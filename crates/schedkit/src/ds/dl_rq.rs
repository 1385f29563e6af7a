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
//! - The fair server (`rq->fair_server`, a `sched_dl_entity` with `dl_server` set, 6.12+) is
//!   kept beside the tree rather than in it ([`DlServer`]): the pick compares its deadline
//!   with the leftmost task's, which is what the tree's order would give.

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
    /// This runqueue's fair server (`rq->fair_server`), if the class stack has one.
    pub server: DlServer,
}

/// A deadline server's reservation: `dl_runtime` every `dl_period` (its relative deadline is
/// its period, as `dl_server_apply_params` sets it), and whether it defers (`dl_defer`, which
/// `sched_init_dl_servers` sets for the fair server). The kernel's fair server:
/// [`DlServerParams::FAIR_DEFAULT`], settable per CPU in
/// `/sys/kernel/debug/sched/fair_server/cpuN/{runtime,period}` (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DlServerParams {
    pub runtime_ns: u64,
    pub period_ns: u64,
    pub defer: bool,
}

impl DlServerParams {
    /// `sched_init_dl_servers` (6.18 `deadline.c`; `dl_server_start` of 6.12): 50 ms every
    /// 1000 ms, deferred.
    pub const FAIR_DEFAULT: DlServerParams = DlServerParams {
        runtime_ns: 50_000_000,
        period_ns: 1_000_000_000,
        defer: true,
    };
    /// `fair_server_period_min` / `_max` of `kernel/sched/debug.c` (100 µs, 2^22 µs).
    pub const PERIOD_MIN_NS: u64 = 100_000;
    pub const PERIOD_MAX_NS: u64 = (1 << 22) * 1_000;

    /// `dl_bw`: `to_ratio(period, runtime)`.
    pub fn bw(&self) -> u64 {
        crate::task::to_ratio(self.period_ns, self.runtime_ns)
    }

    /// What `sched_fair_server_write` refuses (`-EINVAL`: runtime over period, period outside
    /// 100 µs..=2^22 µs) and what `dl_server_apply_params` refuses (`-EBUSY`: a bandwidth over
    /// `sched_rt_runtime_us / sched_rt_period_us` of the CPU, `__dl_overflow` with nothing
    /// else admitted), in words naming `who`. A runtime of 0 is allowed: the kernel then says
    /// "Fair server disabled".
    pub fn check(&self, who: &str, rt_runtime_us: u64, rt_period_us: u64) -> Result<(), String> {
        if self.runtime_ns > self.period_ns {
            return Err(format!(
                "{who}: fair server runtime {} ns is over its period {} ns (debugfs \
                 fair_server/cpuN/runtime > period: -EINVAL)",
                self.runtime_ns, self.period_ns
            ));
        }
        if !(Self::PERIOD_MIN_NS..=Self::PERIOD_MAX_NS).contains(&self.period_ns) {
            return Err(format!(
                "{who}: fair server period {} ns is outside {}..={} ns (fair_server_period_min \
                 and _max of kernel/sched/debug.c: -EINVAL)",
                self.period_ns,
                Self::PERIOD_MIN_NS,
                Self::PERIOD_MAX_NS
            ));
        }
        let cap = crate::task::to_ratio(rt_period_us, rt_runtime_us);
        if self.bw() > cap {
            return Err(format!(
                "{who}: fair server runtime {} ns every {} ns is more bandwidth than a CPU \
                 lends SCHED_DEADLINE ({rt_runtime_us} / {rt_period_us}; \
                 dl_server_apply_params: -EBUSY)",
                self.runtime_ns, self.period_ns
            ));
        }
        Ok(())
    }
}

/// The state of one runqueue's deadline server (`struct sched_dl_entity` with `dl_server`;
/// the flags of 6.18's state diagram above `dl_server_start`). `params` is `None` where the
/// class stack has no server (a class of an era before 6.12) or its runtime is 0.
#[derive(Clone, Debug, Default)]
pub struct DlServer {
    pub params: Option<DlServerParams>,
    /// `runtime`: what is left of this period's budget (negative after an overrun).
    pub runtime: i64,
    /// `deadline`: the absolute deadline (ns).
    pub deadline: u64,
    /// `dl_server_active`: started by a fair enqueue, stopped when its pick finds nothing.
    pub active: bool,
    /// `on_dl_rq`: queued, competing with the deadline tasks by deadline.
    pub queued: bool,
    /// `dl_throttled`.
    pub throttled: bool,
    /// `dl_defer_armed`: throttled until its zero-laxity instant (`deadline - runtime`).
    pub defer_armed: bool,
    /// `dl_defer_running`: it reached that instant this period and now runs as a plain CBS.
    pub defer_running: bool,
    /// The armed `dl_timer` (absolute ns), if any.
    pub timer: Option<u64>,
    /// `rq->dl_server` / `p->dl_server`: the current task was picked through the server.
    pub serving: bool,
    /// When the fair class's running task was last charged (`se.exec_start`).
    pub exec_start: u64,
    /// When this CPU went idle (`exec_start` of the idle task), for
    /// `dl_server_update_idle_time`.
    pub idle_since: Option<u64>,
    /// Statistics: times the server was queued (an activation), and the time it served.
    pub activations: u64,
    pub served_ns: u64,
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

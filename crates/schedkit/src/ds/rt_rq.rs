//! The RT class's per-runqueue and per-machine data, below the class interface as the
//! kernel's `struct rt_rq` sits in `struct rq` and `struct root_domain` in `sched.h`: the
//! 100-level priority array of queued RT tasks with its counts ([`RtRq`]), and the state every
//! CPU reads without a runqueue lock ([`RootDomain`]: the overload mask and count, cpupri's
//! per-CPU levels). The RT class (`policy::rt`) decides what to do with them; the interface
//! (`class::Rq`) embeds an [`RtRq`] in every runqueue.
//!
//! Priorities here are the kernel's `prio`: 0 is the best, `99 - rt_priority` for RT tasks.
//!
//! Must never depend on `class`, `policy`, `sched_core`, a host (`sim`, `runtime`),
//! `workload` or `metrics`.

use super::list::{LinkOf, RtLink};
use super::prio_array::PrioArray;
use super::prio_array::MAX_RT_PRIO;
use super::work::OpCounter;
use crate::task::{CpuId, CpuMask, TaskId, TaskIndex};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// cpupri levels: 0 idle, 1 normal, 2..=101 RT (higher is more important).
pub const CPUPRI_IDLE: u8 = 0;
pub const CPUPRI_NORMAL: u8 = 1;

/// `convert_prio`: a task or runqueue `prio` to its cpupri level.
#[inline]
pub fn cpupri_level(prio: usize) -> u8 {
    if prio < MAX_RT_PRIO {
        (MAX_RT_PRIO - prio + 1) as u8
    } else {
        CPUPRI_NORMAL
    }
}

/// The root domain: state every CPU reads and writes without a runqueue lock (atomics, as in
/// the kernel), so it works the same under real concurrency.
#[derive(Debug)]
pub struct RootDomain {
    rto_mask: [AtomicU64; 4],
    rto_count: AtomicUsize,
    /// cpupri's `cpu_to_pri`: the level of what each CPU's runqueue holds at its best.
    cpu_to_pri: Vec<AtomicU8>,
}

impl RootDomain {
    pub fn new(ncpus: usize) -> RootDomain {
        RootDomain {
            rto_mask: Default::default(),
            rto_count: AtomicUsize::new(0),
            cpu_to_pri: (0..ncpus).map(|_| AtomicU8::new(CPUPRI_IDLE)).collect(),
        }
    }

    pub fn ncpus(&self) -> usize {
        self.cpu_to_pri.len()
    }

    /// `rt_set_overload`: the mask bit first, then the count, so a reader that sees the count
    /// finds the bit.
    pub fn set_overload(&self, cpu: CpuId) {
        self.rto_mask[cpu / 64].fetch_or(1 << (cpu % 64), Ordering::SeqCst);
        self.rto_count.fetch_add(1, Ordering::SeqCst);
    }

    /// `rt_clear_overload`: the count first, then the bit.
    pub fn clear_overload(&self, cpu: CpuId) {
        self.rto_count.fetch_sub(1, Ordering::SeqCst);
        self.rto_mask[cpu / 64].fetch_and(!(1 << (cpu % 64)), Ordering::SeqCst);
    }

    #[inline]
    pub fn is_overloaded(&self, cpu: CpuId) -> bool {
        self.rto_mask[cpu / 64].load(Ordering::SeqCst) & (1 << (cpu % 64)) != 0
    }

    pub fn rto_count(&self) -> usize {
        self.rto_count.load(Ordering::SeqCst)
    }

    pub fn overloaded_cpus(&self) -> impl Iterator<Item = CpuId> + '_ {
        (0..self.ncpus())
            .filter(|c| self.rto_mask[c / 64].load(Ordering::SeqCst) & (1 << (c % 64)) != 0)
    }

    /// `cpupri_set`.
    #[inline]
    pub fn set_cpupri(&self, cpu: CpuId, level: u8) {
        // cpupri.c's `if (newpri == oldpri) return;`: the core publishes after every enqueue
        // and dequeue, and every CPU's level shares a cache line here, so a store of an
        // unchanged level would take the line from every other CPU for nothing (on 16 runtime
        // workers, a same-worker message round trip grew 0.5 -> 2.2 µs from that).
        if self.cpu_to_pri[cpu].load(Ordering::Relaxed) != level {
            self.cpu_to_pri[cpu].store(level, Ordering::Relaxed);
        }
    }

    pub fn cpupri(&self, cpu: CpuId) -> u8 {
        self.cpu_to_pri[cpu].load(Ordering::Relaxed)
    }

    /// `cpupri_find`: the CPUs of the lowest level below `prio`'s that intersects `allowed`.
    /// Returns the mask and the number of CPUs read.
    pub fn cpupri_find(&self, prio: usize, allowed: &CpuMask) -> (Option<CpuMask>, u64) {
        let limit = cpupri_level(prio);
        let mut best = u8::MAX;
        let mut mask = CpuMask::empty();
        let mut reads = 0;
        for cpu in allowed.iter(self.ncpus()) {
            reads += 1;
            let l = self.cpupri(cpu);
            if l >= limit {
                continue;
            }
            if l < best {
                best = l;
                mask = CpuMask::empty();
            }
            if l == best {
                mask.set(cpu);
            }
        }
        ((best != u8::MAX).then_some(mask), reads)
    }

    /// `find_lowest_rq`: the CPU to place an RT task of `prio`, preferring its own CPU, then
    /// the waker's (the first `SD_WAKE_AFFINE` domain spans the machine here), then the first.
    pub fn find_lowest_rq(
        &self,
        prio: usize,
        allowed: &CpuMask,
        task_cpu: CpuId,
        this_cpu: CpuId,
    ) -> (Option<CpuId>, u64) {
        let (mask, reads) = self.cpupri_find(prio, allowed);
        let Some(mask) = mask else {
            return (None, reads);
        };
        let cpu = if mask.contains(task_cpu) {
            task_cpu
        } else if mask.contains(this_cpu) {
            this_cpu
        } else {
            mask.iter(self.ncpus()).next().expect("non-empty mask")
        };
        (Some(cpu), reads)
    }
}

/// `struct rt_rq`. Its lists thread through each task's [`crate::task::RtEntity`].
#[derive(Debug)]
pub struct RtRq {
    pub active: PrioArray<RtLink>,
    pub rt_nr_running: usize,
    /// Queued RT tasks allowed on more than one CPU.
    pub rt_nr_migratory: usize,
    /// Best `prio` queued (running task included); `MAX_RT_PRIO` when empty.
    pub highest_prio: usize,
    pub overloaded: bool,
}

impl Default for RtRq {
    fn default() -> Self {
        RtRq {
            active: PrioArray::default(),
            rt_nr_running: 0,
            rt_nr_migratory: 0,
            highest_prio: MAX_RT_PRIO,
            overloaded: false,
        }
    }
}

impl RtRq {
    #[inline]
    pub fn enqueue<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        prio: usize,
        migratory: bool,
        ops: &mut OpCounter,
    ) where
        RtLink: LinkOf<D>,
    {
        self.active.enqueue(tasks, t, prio, ops);
        self.rt_nr_running += 1;
        self.rt_nr_migratory += usize::from(migratory);
        self.highest_prio = self.highest_prio.min(prio);
    }

    #[inline]
    pub fn dequeue<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        prio: usize,
        migratory: bool,
        ops: &mut OpCounter,
    ) where
        RtLink: LinkOf<D>,
    {
        self.active.dequeue(tasks, t, prio, ops);
        self.rt_nr_running -= 1;
        self.rt_nr_migratory -= usize::from(migratory);
        // dec_rt_prio: the next best level, by a bitmap search.
        self.highest_prio = self.active.find_first_bit(ops).min(MAX_RT_PRIO);
    }

    /// `requeue_task_rt`: to the tail of its priority (RR expiry, yield).
    pub fn requeue<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        prio: usize,
        ops: &mut OpCounter,
    ) where
        RtLink: LinkOf<D>,
    {
        self.active.requeue(tasks, t, prio, ops);
    }

    /// `pick_next_task_rt`'s search.
    #[inline]
    pub fn pick(&self, ops: &mut OpCounter) -> Option<TaskId> {
        let idx = self.active.find_first_bit(ops);
        (idx < MAX_RT_PRIO).then(|| {
            self.active
                .queue(idx)
                .front()
                .expect("bit set on empty list")
        })
    }

    /// Updates the overload state in `rd`; call after every enqueue/dequeue.
    #[inline]
    pub fn update_overload(&mut self, rd: &RootDomain, cpu: CpuId) {
        let over = self.rt_nr_migratory > 0 && self.rt_nr_running > 1;
        if over != self.overloaded {
            self.overloaded = over;
            if over {
                rd.set_overload(cpu);
            } else {
                rd.clear_overload(cpu);
            }
        }
    }

    /// `pick_next_highest_task_rt(rq, cpu)`: the best queued task that is not `running`, may
    /// migrate, and (with `cpu`) may run there. Returns it and the tasks examined.
    pub fn next_highest<D, T: TaskIndex<D> + ?Sized>(
        &self,
        tasks: &T,
        running: Option<TaskId>,
        cpu: Option<CpuId>,
        ncpus: usize,
        allowed: impl Fn(TaskId) -> CpuMask,
        ops: &mut OpCounter,
    ) -> (Option<TaskId>, u64)
    where
        RtLink: LinkOf<D>,
    {
        let mut seen = 0;
        let mut idx = self.active.find_first_bit(ops);
        while idx < MAX_RT_PRIO {
            for t in self.active.queue(idx).iter(tasks) {
                seen += 1;
                let m = allowed(t);
                if Some(t) != running
                    && m.iter(ncpus).nth(1).is_some()
                    && cpu.is_none_or(|c| m.contains(c))
                {
                    return (Some(t), seen);
                }
            }
            idx = self.active.find_next_bit(idx + 1, ops);
        }
        (None, seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpupri_levels_order_idle_normal_rt() {
        assert_eq!(cpupri_level(120), CPUPRI_NORMAL);
        assert_eq!(cpupri_level(99), 2); // rt_priority 0 is not a real RT level; prio 99 is the worst RT
        assert_eq!(cpupri_level(0), 101);
        assert!(cpupri_level(10) > cpupri_level(20));
    }

    #[test]
    fn find_lowest_prefers_idle_then_normal_then_lower_rt() {
        let rd = RootDomain::new(4);
        rd.set_cpupri(0, cpupri_level(10)); // RT prio 10
        rd.set_cpupri(1, cpupri_level(50)); // RT prio 50
        rd.set_cpupri(2, CPUPRI_NORMAL);
        rd.set_cpupri(3, CPUPRI_NORMAL);
        let all = CpuMask::first_n(4);
        // A prio-40 task: the normal CPUs are the lowest; its own CPU 3 wins among them.
        assert_eq!(rd.find_lowest_rq(40, &all, 3, 0).0, Some(3));
        assert_eq!(
            rd.find_lowest_rq(40, &all, 0, 2).0,
            Some(2),
            "the waker's CPU among equals"
        );
        // Only CPUs 0 and 1 allowed: CPU 1 runs prio 50, lower than 40.
        let m = CpuMask::first_n(2);
        assert_eq!(rd.find_lowest_rq(40, &m, 0, 0).0, Some(1));
        // A prio-60 task beats nothing on CPUs 0..1.
        assert_eq!(rd.find_lowest_rq(60, &m, 0, 0).0, None);
        rd.set_cpupri(2, CPUPRI_IDLE);
        assert_eq!(
            rd.find_lowest_rq(40, &all, 3, 0).0,
            Some(2),
            "idle beats normal"
        );
    }

    #[test]
    fn overload_mask_and_count_move_together() {
        let rd = RootDomain::new(8);
        rd.set_overload(5);
        rd.set_overload(2);
        assert_eq!(rd.rto_count(), 2);
        assert_eq!(rd.overloaded_cpus().collect::<Vec<_>>(), vec![2, 5]);
        rd.clear_overload(5);
        assert_eq!(rd.overloaded_cpus().collect::<Vec<_>>(), vec![2]);
        assert_eq!(rd.rto_count(), 1);
    }
}

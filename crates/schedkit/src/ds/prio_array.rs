//! `struct prio_array`: 140 FIFO lists, one per priority, and a bitmap of the non-empty ones.
//! Picking the best task is a find-first-bit over the bitmap (the announcement's "two BSFL
//! instructions" on a 64-bit bitmap; 2.6 uses a 141-bit one with bit 140 as a delimiter).
//!
//! Part of `ds`: depends on `task`, `ds::list` and `ds::work` only, and must never depend on `class`,
//! `policy`, `sched_core`, a host, `workload` or `metrics`.

use super::list::{DataLink, LinkOf, TaskList};
use super::work::OpCounter;
#[cfg(test)]
use crate::task::Tasks;
use crate::task::{TaskId, TaskIndex};

/// `MAX_RT_PRIO`: priorities 0..99 are real time.
pub const MAX_RT_PRIO: usize = 100;
/// `MAX_PRIO`: 100..139 are nice -20..19.
pub const MAX_PRIO: usize = 140;
const WORDS: usize = MAX_PRIO.div_ceil(64) + 1;

/// `L` says which link of a task the lists thread through (see [`LinkOf`]).
#[derive(Clone, Debug)]
pub struct PrioArray<L = DataLink> {
    pub nr_active: usize,
    /// Bit `p` set iff `queue[p]` is non-empty; bit 140 is always set (`sched_init`).
    bitmap: [u64; WORDS],
    queue: Box<[TaskList<L>; MAX_PRIO]>,
}

impl<L: Copy> Default for PrioArray<L> {
    fn default() -> Self {
        let mut bitmap = [0u64; WORDS];
        bitmap[MAX_PRIO / 64] |= 1 << (MAX_PRIO % 64);
        PrioArray {
            nr_active: 0,
            bitmap,
            queue: Box::new([TaskList::default(); MAX_PRIO]),
        }
    }
}

impl<L> PrioArray<L> {
    /// `sched_find_first_bit`: the best non-empty priority, or `MAX_PRIO` when empty.
    /// Reported as one bitmap search.
    #[inline]
    pub fn find_first_bit(&self, ops: &mut OpCounter) -> usize {
        self.find_next_bit(0, ops)
    }

    /// `find_next_bit(bitmap, MAX_PRIO, from)`, reported as one bitmap search.
    #[inline]
    pub fn find_next_bit(&self, from: usize, ops: &mut OpCounter) -> usize {
        ops.bitmap_searches += 1;
        let mut w = from / 64;
        if w >= WORDS {
            return MAX_PRIO;
        }
        let mut word = self.bitmap[w] & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                return (w * 64 + word.trailing_zeros() as usize).min(MAX_PRIO);
            }
            w += 1;
            if w >= WORDS {
                return MAX_PRIO;
            }
            word = self.bitmap[w];
        }
    }

    #[inline]
    pub fn queue(&self, prio: usize) -> &TaskList<L> {
        &self.queue[prio]
    }

    /// `enqueue_task`: at the tail of its priority's list.
    #[inline]
    pub fn enqueue<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        prio: usize,
        ops: &mut OpCounter,
    ) where
        L: LinkOf<D>,
    {
        self.queue[prio].push_back(tasks, t, ops);
        self.bitmap[prio / 64] |= 1 << (prio % 64);
        self.nr_active += 1;
    }

    /// Inserts `t` at `prio` just before `before` (child-runs-first).
    pub fn enqueue_before<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        prio: usize,
        before: TaskId,
        ops: &mut OpCounter,
    ) where
        L: LinkOf<D>,
    {
        self.queue[prio].insert_before(tasks, t, before, ops);
        self.bitmap[prio / 64] |= 1 << (prio % 64);
        self.nr_active += 1;
    }

    /// `dequeue_task`: clears the bit when the list empties.
    #[inline]
    pub fn dequeue<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        prio: usize,
        ops: &mut OpCounter,
    ) where
        L: LinkOf<D>,
    {
        self.queue[prio].remove(tasks, t, ops);
        if self.queue[prio].is_empty() {
            self.bitmap[prio / 64] &= !(1 << (prio % 64));
        }
        self.nr_active -= 1;
    }

    /// `requeue_task`: to the tail of the same list.
    #[inline]
    pub fn requeue<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        prio: usize,
        ops: &mut OpCounter,
    ) where
        L: LinkOf<D>,
    {
        self.queue[prio].remove(tasks, t, ops);
        self.queue[prio].push_back(tasks, t, ops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::ds::list::test_links::D;

    #[test]
    fn empty_array_finds_the_delimiter() {
        assert_eq!(
            PrioArray::<DataLink>::default().find_first_bit(&mut OpCounter::default()),
            MAX_PRIO
        );
    }

    #[test]
    fn bitmap_tracks_lists() {
        let mut tasks: Tasks<D> = Tasks::new();
        let mut o = OpCounter::default();
        let a = tasks.spawn();
        let b = tasks.spawn();
        let mut arr: PrioArray = PrioArray::default();
        arr.enqueue(&mut tasks, a, 120, &mut o);
        arr.enqueue(&mut tasks, b, 65, &mut o);
        assert_eq!(arr.find_first_bit(&mut o), 65);
        assert_eq!(arr.find_next_bit(66, &mut o), 120);
        arr.dequeue(&mut tasks, b, 65, &mut o);
        assert_eq!(arr.find_first_bit(&mut o), 120);
        arr.dequeue(&mut tasks, a, 120, &mut o);
        assert_eq!(arr.find_first_bit(&mut o), MAX_PRIO);
        assert_eq!(arr.nr_active, 0);
        // The array reported its own work: 4 list operations, 4 bitmap searches.
        assert_eq!((o.list_ops, o.bitmap_searches), (4, 4));
    }

    proptest! {
        /// The bitmap search always agrees with a scan of the lists.
        #[test]
        fn find_first_bit_is_the_minimum_priority(prios in proptest::collection::vec(0usize..MAX_PRIO, 1..60), removals in 0usize..60) {
            let mut tasks: Tasks<D> = Tasks::new();
            let mut o = OpCounter::default();
            let mut arr: PrioArray = PrioArray::default();
            let mut live = Vec::new();
            for &p in &prios {
                let t = tasks.spawn();
                arr.enqueue(&mut tasks, t, p, &mut o);
                live.push((t, p));
            }
            for _ in 0..removals.min(live.len() - 1) {
                let (t, p) = live.remove(live.len() / 2);
                arr.dequeue(&mut tasks, t, p, &mut o);
            }
            let min = live.iter().map(|(_, p)| *p).min().unwrap();
            prop_assert_eq!(arr.find_first_bit(&mut o), min);
            prop_assert_eq!(arr.nr_active, live.len());
        }
    }
}

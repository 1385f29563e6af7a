//! An intrusive doubly-linked list of tasks, the kernel's `list_head` as used by `run_list`:
//! the links live in each task's policy data, so insertion and removal are O(1) and allocate
//! nothing, and a task knows its neighbours without a search.
//!
//! Part of `ds`: depends on `task` and `ds::work` only, and must never depend on `class`,
//! `policy`, `sched_core`, a host, `workload` or `metrics`.

use super::work::OpCounter;
#[cfg(test)]
use crate::task::Tasks;
use crate::task::{Task, TaskId, TaskIndex};
use std::marker::PhantomData;

const NIL: u32 = u32::MAX;

pub use crate::task::Link;

/// Policy task data that embeds a [`Link`].
pub trait Linked {
    fn link(&self) -> &Link;
    fn link_mut(&mut self) -> &mut Link;
}

/// Which of a task's links a list threads through: the policy's own (`p->run_list` in its
/// private block, [`DataLink`]) or the RT class's (`p->rt.run_list`, [`RtLink`]), as a task
/// of the kernel has one list node per class it can be queued in.
pub trait LinkOf<D> {
    fn link(t: &Task<D>) -> &Link;
    fn link_mut(t: &mut Task<D>) -> &mut Link;
}

/// The link in the policy's private block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DataLink;
impl<D: Linked> LinkOf<D> for DataLink {
    fn link(t: &Task<D>) -> &Link {
        t.data.link()
    }
    fn link_mut(t: &mut Task<D>) -> &mut Link {
        t.data.link_mut()
    }
}

/// The RT class's link (`Task::rt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RtLink;
impl<D> LinkOf<D> for RtLink {
    fn link(t: &Task<D>) -> &Link {
        &t.rt.run_list
    }
    fn link_mut(t: &mut Task<D>) -> &mut Link {
        &mut t.rt.run_list
    }
}

/// A list head. Which list a task is on is the policy's business (it records it beside the
/// link); the list only keeps order. `L` says which link of the task it threads through.
/// Every insertion and removal reports itself as one `list_ops` to the caller's
/// [`OpCounter`], so a path cannot forget to report the list work it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskList<L = DataLink> {
    head: u32,
    tail: u32,
    len: usize,
    _link: PhantomData<L>,
}

impl<L> Default for TaskList<L> {
    fn default() -> Self {
        TaskList {
            head: NIL,
            tail: NIL,
            len: 0,
            _link: PhantomData,
        }
    }
}

#[inline]
fn id(x: u32) -> Option<TaskId> {
    (x != NIL).then_some(TaskId(x))
}

impl<L> TaskList<L> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn front(&self) -> Option<TaskId> {
        id(self.head)
    }

    #[inline]
    pub fn back(&self) -> Option<TaskId> {
        id(self.tail)
    }

    #[inline]
    pub fn next<D, T: TaskIndex<D> + ?Sized>(&self, tasks: &T, t: TaskId) -> Option<TaskId>
    where
        L: LinkOf<D>,
    {
        id(L::link(&tasks[t]).next)
    }

    #[inline]
    pub fn prev<D, T: TaskIndex<D> + ?Sized>(&self, tasks: &T, t: TaskId) -> Option<TaskId>
    where
        L: LinkOf<D>,
    {
        id(L::link(&tasks[t]).prev)
    }

    /// `list_add_tail`.
    #[inline]
    pub fn push_back<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        ops: &mut OpCounter,
    ) where
        L: LinkOf<D>,
    {
        let old_tail = self.tail;
        *L::link_mut(&mut tasks[t]) = Link {
            prev: old_tail,
            next: NIL,
        };
        match id(old_tail) {
            Some(o) => L::link_mut(&mut tasks[o]).next = t.0,
            None => self.head = t.0,
        }
        self.tail = t.0;
        self.len += 1;
        ops.list_ops += 1;
    }

    /// `list_add` (at the head).
    #[inline]
    pub fn push_front<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        ops: &mut OpCounter,
    ) where
        L: LinkOf<D>,
    {
        let old_head = self.head;
        *L::link_mut(&mut tasks[t]) = Link {
            prev: NIL,
            next: old_head,
        };
        match id(old_head) {
            Some(o) => L::link_mut(&mut tasks[o]).prev = t.0,
            None => self.tail = t.0,
        }
        self.head = t.0;
        self.len += 1;
        ops.list_ops += 1;
    }

    /// Inserts `t` just before `before` (which must be on this list): O(1) child-runs-first's
    /// `list_add_tail(&p->run_list, &current->run_list)`.
    #[inline]
    pub fn insert_before<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        before: TaskId,
        ops: &mut OpCounter,
    ) where
        L: LinkOf<D>,
    {
        let prev = L::link(&tasks[before]).prev;
        *L::link_mut(&mut tasks[t]) = Link {
            prev,
            next: before.0,
        };
        L::link_mut(&mut tasks[before]).prev = t.0;
        match id(prev) {
            Some(p) => L::link_mut(&mut tasks[p]).next = t.0,
            None => self.head = t.0,
        }
        self.len += 1;
        ops.list_ops += 1;
    }

    /// `list_del`. `t` must be on this list.
    #[inline]
    pub fn remove<D, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        ops: &mut OpCounter,
    ) where
        L: LinkOf<D>,
    {
        let Link { prev, next } = *L::link(&tasks[t]);
        match id(prev) {
            Some(p) => L::link_mut(&mut tasks[p]).next = next,
            None => self.head = next,
        }
        match id(next) {
            Some(n) => L::link_mut(&mut tasks[n]).prev = prev,
            None => self.tail = prev,
        }
        *L::link_mut(&mut tasks[t]) = Link::default();
        self.len -= 1;
        ops.list_ops += 1;
    }

    /// Front-to-back walk.
    pub fn iter<'a, D: 'a, T: TaskIndex<D> + ?Sized>(
        &self,
        tasks: &'a T,
    ) -> impl Iterator<Item = TaskId> + 'a
    where
        L: LinkOf<D>,
    {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            let t = id(cur)?;
            cur = L::link(&tasks[t]).next;
            Some(t)
        })
    }

    /// Back-to-front walk (the O(1) balancer walks a list from its tail).
    pub fn iter_rev<'a, D: 'a, T: TaskIndex<D> + ?Sized>(
        &self,
        tasks: &'a T,
    ) -> impl Iterator<Item = TaskId> + 'a
    where
        L: LinkOf<D>,
    {
        let mut cur = self.tail;
        std::iter::from_fn(move || {
            let t = id(cur)?;
            cur = L::link(&tasks[t]).prev;
            Some(t)
        })
    }
}

/// Policy data that is nothing but a link, for the tests of the structures built on lists.
#[cfg(test)]
pub(crate) mod test_links {
    use super::{Link, Linked};

    #[derive(Default, Clone, Debug)]
    pub struct D(Link);
    impl Linked for D {
        fn link(&self) -> &Link {
            &self.0
        }
        fn link_mut(&mut self) -> &mut Link {
            &mut self.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::test_links::D;

    fn ids(l: &TaskList, t: &Tasks<D>) -> Vec<u32> {
        l.iter(t).map(|x| x.0).collect()
    }

    #[test]
    fn list_operations_keep_order() {
        let mut t: Tasks<D> = Tasks::new();
        let v: Vec<TaskId> = (0..5).map(|_| t.spawn()).collect();
        let mut l = TaskList::default();
        let mut o = OpCounter::default();
        l.push_back(&mut t, v[0], &mut o);
        l.push_back(&mut t, v[1], &mut o);
        l.push_front(&mut t, v[2], &mut o);
        assert_eq!(ids(&l, &t), vec![2, 0, 1]);
        l.insert_before(&mut t, v[3], v[2], &mut o);
        l.insert_before(&mut t, v[4], v[1], &mut o);
        assert_eq!(ids(&l, &t), vec![3, 2, 0, 4, 1]);
        l.remove(&mut t, v[3], &mut o);
        l.remove(&mut t, v[1], &mut o);
        assert_eq!(ids(&l, &t), vec![2, 0, 4]);
        assert_eq!(
            l.iter_rev(&t).map(|x| x.0).collect::<Vec<_>>(),
            vec![4, 0, 2]
        );
        assert_eq!(l.len(), 3);
        l.remove(&mut t, v[0], &mut o);
        l.remove(&mut t, v[2], &mut o);
        l.remove(&mut t, v[4], &mut o);
        assert!(l.is_empty() && l.front().is_none() && l.back().is_none());
        assert_eq!(
            o.list_ops, 10,
            "every insertion and removal reported itself"
        );
    }
}

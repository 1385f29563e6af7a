//! An intrusive doubly-linked list of tasks, the kernel's `list_head` as used by `run_list`:
//! the links live in each task's policy data, so insertion and removal are O(1) and allocate
//! nothing, and a task knows its neighbours without a search.

#[cfg(test)]
use crate::task::Tasks;
use crate::task::{TaskId, TaskIndex};

const NIL: u32 = u32::MAX;

/// The `run_list` links of one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    prev: u32,
    next: u32,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            prev: NIL,
            next: NIL,
        }
    }
}

/// Policy task data that embeds a [`Link`].
pub trait Linked {
    fn link(&self) -> &Link;
    fn link_mut(&mut self) -> &mut Link;
}

/// A list head. Which list a task is on is the policy's business (it records it beside the
/// link); the list only keeps order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskList {
    head: u32,
    tail: u32,
    len: usize,
}

impl Default for TaskList {
    fn default() -> Self {
        TaskList {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

fn id(x: u32) -> Option<TaskId> {
    (x != NIL).then_some(TaskId(x))
}

impl TaskList {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn front(&self) -> Option<TaskId> {
        id(self.head)
    }

    pub fn back(&self) -> Option<TaskId> {
        id(self.tail)
    }

    pub fn next<D: Linked, T: TaskIndex<D> + ?Sized>(
        &self,
        tasks: &T,
        t: TaskId,
    ) -> Option<TaskId> {
        id(tasks[t].data.link().next)
    }

    pub fn prev<D: Linked, T: TaskIndex<D> + ?Sized>(
        &self,
        tasks: &T,
        t: TaskId,
    ) -> Option<TaskId> {
        id(tasks[t].data.link().prev)
    }

    /// `list_add_tail`.
    pub fn push_back<D: Linked, T: TaskIndex<D> + ?Sized>(&mut self, tasks: &mut T, t: TaskId) {
        let old_tail = self.tail;
        *tasks[t].data.link_mut() = Link {
            prev: old_tail,
            next: NIL,
        };
        match id(old_tail) {
            Some(o) => tasks[o].data.link_mut().next = t.0,
            None => self.head = t.0,
        }
        self.tail = t.0;
        self.len += 1;
    }

    /// `list_add` (at the head).
    pub fn push_front<D: Linked, T: TaskIndex<D> + ?Sized>(&mut self, tasks: &mut T, t: TaskId) {
        let old_head = self.head;
        *tasks[t].data.link_mut() = Link {
            prev: NIL,
            next: old_head,
        };
        match id(old_head) {
            Some(o) => tasks[o].data.link_mut().prev = t.0,
            None => self.tail = t.0,
        }
        self.head = t.0;
        self.len += 1;
    }

    /// Inserts `t` just before `before` (which must be on this list): O(1) child-runs-first's
    /// `list_add_tail(&p->run_list, &current->run_list)`.
    pub fn insert_before<D: Linked, T: TaskIndex<D> + ?Sized>(
        &mut self,
        tasks: &mut T,
        t: TaskId,
        before: TaskId,
    ) {
        let prev = tasks[before].data.link().prev;
        *tasks[t].data.link_mut() = Link {
            prev,
            next: before.0,
        };
        tasks[before].data.link_mut().prev = t.0;
        match id(prev) {
            Some(p) => tasks[p].data.link_mut().next = t.0,
            None => self.head = t.0,
        }
        self.len += 1;
    }

    /// `list_del`. `t` must be on this list.
    pub fn remove<D: Linked, T: TaskIndex<D> + ?Sized>(&mut self, tasks: &mut T, t: TaskId) {
        let Link { prev, next } = *tasks[t].data.link();
        match id(prev) {
            Some(p) => tasks[p].data.link_mut().next = next,
            None => self.head = next,
        }
        match id(next) {
            Some(n) => tasks[n].data.link_mut().prev = prev,
            None => self.tail = prev,
        }
        *tasks[t].data.link_mut() = Link::default();
        self.len -= 1;
    }

    /// Front-to-back walk.
    pub fn iter<'a, D: Linked + 'a, T: TaskIndex<D> + ?Sized>(
        &self,
        tasks: &'a T,
    ) -> impl Iterator<Item = TaskId> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            let t = id(cur)?;
            cur = tasks[t].data.link().next;
            Some(t)
        })
    }

    /// Back-to-front walk (the O(1) balancer walks a list from its tail).
    pub fn iter_rev<'a, D: Linked + 'a, T: TaskIndex<D> + ?Sized>(
        &self,
        tasks: &'a T,
    ) -> impl Iterator<Item = TaskId> + 'a {
        let mut cur = self.tail;
        std::iter::from_fn(move || {
            let t = id(cur)?;
            cur = tasks[t].data.link().prev;
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
        l.push_back(&mut t, v[0]);
        l.push_back(&mut t, v[1]);
        l.push_front(&mut t, v[2]);
        assert_eq!(ids(&l, &t), vec![2, 0, 1]);
        l.insert_before(&mut t, v[3], v[2]);
        l.insert_before(&mut t, v[4], v[1]);
        assert_eq!(ids(&l, &t), vec![3, 2, 0, 4, 1]);
        l.remove(&mut t, v[3]);
        l.remove(&mut t, v[1]);
        assert_eq!(ids(&l, &t), vec![2, 0, 4]);
        assert_eq!(
            l.iter_rev(&t).map(|x| x.0).collect::<Vec<_>>(),
            vec![4, 0, 2]
        );
        assert_eq!(l.len(), 3);
        l.remove(&mut t, v[0]);
        l.remove(&mut t, v[2]);
        l.remove(&mut t, v[4]);
        assert!(l.is_empty() && l.front().is_none() && l.back().is_none());
    }
}

//! Blocking primitives that park the *task*, never the worker: a one-shot slot (join), a
//! sleeping mutex, a counting semaphore with the two `up()` disciplines of 2.6.26 (the
//! `sleeplock` state machine the simulator also drives), a condition variable and a channel.
//!
//! Each primitive keeps its state behind a short internal `std::sync::Mutex`, taken with
//! preemption disabled (so a task is never preempted while holding it). A waiter is a node on
//! the waiting task's (or thread's) own stack; it is linked into the primitive while the
//! waiter sleeps and unlinked by the waker, which copies out who to wake, marks the node
//! notified, and only then wakes it. Callers that are not tasks (e.g. `main`) block their OS
//! thread instead, so the same objects connect tasks and threads.

use super::task_ops::{Reason, WorkerOps};
use super::{current_ops, NoPreempt};
use crate::sleeplock::{Attempt, LockCounters, LockKind, LockMode, SleepLock};
use crate::task::TaskId;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::MutexGuard as StdGuard;

fn lock<T>(m: &std::sync::Mutex<T>) -> StdGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A spin lock for a primitive's few-instruction sections, always taken with preemption
/// disabled (`NoPreempt`), so its holder never yields to a task of its own worker. Its release
/// is a plain store, where `std::sync::Mutex`'s is a locked exchange (it must learn whether a
/// waiter sleeps): on a message round trip the channel's lock is taken four times. A waiter
/// that spins long (the holder's thread was descheduled by the kernel) yields its thread.
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, which the lock makes exclusive.
unsafe impl<T: Send> Sync for SpinLock<T> {}
unsafe impl<T: Send> Send for SpinLock<T> {}

pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        while self
            .locked
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            while self.locked.load(Relaxed) {
                spins += 1;
                if spins < 128 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        SpinGuard { lock: self }
    }
}

impl<T> std::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Release);
    }
}

/// Who waits: a task of some runtime, or an OS thread.
#[derive(Clone)]
enum Who {
    Task {
        host: *const dyn WorkerOps,
        id: TaskId,
    },
    Thread(std::thread::Thread),
}

/// A waiter, on its own stack.
pub(crate) struct WaitNode {
    who: Who,
    pub(crate) notified: AtomicBool,
}

/// A pointer to a waiting node; equality is identity.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct NodeRef(*const WaitNode);
// SAFETY: a node is only dereferenced under its primitive's lock or by its owner.
unsafe impl Send for NodeRef {}

impl WaitNode {
    pub(crate) fn current() -> WaitNode {
        let who = match current_ops() {
            Some((ops, cpu)) => Who::Task {
                host: ops as *const dyn WorkerOps,
                id: ops.current_task(cpu).expect("in a task"),
            },
            None => Who::Thread(std::thread::current()),
        };
        WaitNode {
            who,
            notified: AtomicBool::new(false),
        }
    }

    pub(crate) fn as_ref(&self) -> NodeRef {
        NodeRef(self as *const WaitNode)
    }

    /// Called with the primitive's lock held, after linking the node: sleeps until notified.
    /// The guard is released inside.
    pub(crate) fn sleep<G>(&self, guard: G) {
        match &self.who {
            Who::Task { host, id } => {
                // SAFETY: the host outlives its tasks; we are that task.
                let host = unsafe { &**host };
                // Still under the primitive's lock, so no waker can see the node before the
                // task is marked as going to sleep.
                host.prepare_block(*id);
                drop(guard);
                let w = super::worker::current().expect("a task runs on a worker");
                host.switch_out(w.cpu, Reason::Block);
                debug_assert!(self.notified.load(Acquire), "woken without notification");
            }
            Who::Thread(_) => {
                drop(guard);
                while !self.notified.load(Acquire) {
                    std::thread::park();
                }
            }
        }
    }
}

/// Wakes the waiter `n`, already unlinked by the caller under the primitive's lock.
///
/// # Safety
/// `n` must point to a live node that is waiting (or about to) and was just unlinked.
pub(crate) unsafe fn notify(n: NodeRef) {
    let who = (*n.0).who.clone();
    (*n.0).notified.store(true, Release);
    // From here the node may be gone; use only the copy.
    match who {
        Who::Task { host, id } => (*host).wake_task(id, false),
        Who::Thread(t) => t.unpark(),
    }
}

// ----- one-shot slot (join) -----

/// A value set once and taken once, with waiters.
pub(crate) struct Once<T> {
    inner: std::sync::Mutex<(Option<T>, bool, VecDeque<NodeRef>)>,
}

impl<T> Once<T> {
    pub(crate) fn new() -> Self {
        Once {
            inner: std::sync::Mutex::new((None, false, VecDeque::new())),
        }
    }
    pub(crate) fn set(&self, v: T) {
        let _np = NoPreempt::new();
        let waiters: Vec<NodeRef> = {
            let mut g = lock(&self.inner);
            g.0 = Some(v);
            g.1 = true;
            g.2.drain(..).collect()
        };
        for n in waiters {
            // SAFETY: unlinked under the lock just now; waiters stay until notified.
            unsafe { notify(n) };
        }
    }
    pub(crate) fn is_set(&self) -> bool {
        lock(&self.inner).1
    }
    pub(crate) fn wait_take(&self) -> T {
        let _np = NoPreempt::new();
        loop {
            let mut g = lock(&self.inner);
            if let Some(v) = g.0.take() {
                return v;
            }
            let node = WaitNode::current();
            g.2.push_back(node.as_ref());
            node.sleep(g);
        }
    }
}

// ----- sleeping locks -----

/// A counting semaphore in either of 2.6.26's disciplines (see [`crate::sleeplock`]):
/// `Handoff` gives the unit to the first waiter at `up()`, before it runs; `Opportunistic`
/// raises the count and wakes the first waiter, and whoever runs first takes it.
pub struct Semaphore {
    inner: std::sync::Mutex<SleepLock<NodeRef>>,
}

// SAFETY: NodeRefs inside are only dereferenced under the lock or by their owners.
unsafe impl Sync for Semaphore {}
unsafe impl Send for Semaphore {}

impl Semaphore {
    pub fn new(count: u64, mode: LockMode) -> Semaphore {
        Semaphore {
            inner: std::sync::Mutex::new(SleepLock::semaphore(count, mode)),
        }
    }

    /// `down()`: takes a unit, sleeping while none is free.
    pub fn down(&self) {
        let _np = NoPreempt::new();
        let node = WaitNode::current();
        let me = node.as_ref();
        let mut waited = false;
        loop {
            let mut g = lock(&self.inner);
            match g.lock(me, waited, false) {
                Attempt::Acquired => return,
                Attempt::Spin | Attempt::Sleep => {
                    node.notified.store(false, Relaxed);
                    waited = true;
                    node.sleep(g);
                }
            }
        }
    }

    /// Takes a unit if one is free now.
    pub fn try_down(&self) -> bool {
        let _np = NoPreempt::new();
        let node = WaitNode::current();
        let mut g = lock(&self.inner);
        if g.is_free() {
            matches!(g.lock(node.as_ref(), false, false), Attempt::Acquired)
        } else {
            false
        }
    }

    /// `up()`: releases a unit.
    pub fn up(&self) {
        let _np = NoPreempt::new();
        let mut g = lock(&self.inner);
        // The state machine ignores who releases a semaphore.
        if let Some(n) = g.unlock(NodeRef(std::ptr::null())) {
            // SAFETY: see notify_linked; the lock is still held.
            unsafe { notify_linked(n) };
        }
    }

    pub fn counters(&self) -> LockCounters {
        lock(&self.inner).counters.clone()
    }

    pub fn mode(&self) -> LockMode {
        match lock(&self.inner).kind {
            LockKind::Semaphore(m) => m,
            LockKind::Mutex { .. } => unreachable!("a Semaphore is built as a semaphore"),
        }
    }
}

/// Wakes a waiter that may remain linked (opportunistic semaphore, mutex). Must be called with
/// the primitive's lock held: a linked waiter that is already awake can only unlink itself and
/// return (freeing its node) under that lock, so the node is alive for the whole call.
unsafe fn notify_linked(n: NodeRef) {
    // A node woken twice (two up()s before it ran) is notified twice; the handshake makes the
    // second wake a no-op.
    notify(n)
}

/// A sleeping mutex (2.6.16 `kernel/mutex.c`): FIFO waiters, no hand-off: unlock frees the
/// lock and wakes the first waiter, and a running task may take it first.
pub struct Mutex<T: ?Sized> {
    lock: std::sync::Mutex<SleepLock<NodeRef>>,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard, one at a time.
unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}
unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}

pub struct MutexGuard<'a, T: ?Sized> {
    m: &'a Mutex<T>,
}

impl<T> Mutex<T> {
    pub fn new(v: T) -> Mutex<T> {
        Mutex {
            lock: std::sync::Mutex::new(SleepLock::mutex(false)),
            data: UnsafeCell::new(v),
        }
    }
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    pub fn lock(&self) -> MutexGuard<'_, T> {
        let _np = NoPreempt::new();
        let node = WaitNode::current();
        let me = node.as_ref();
        let mut waited = false;
        loop {
            let mut g = lock(&self.lock);
            match g.lock(me, waited, false) {
                Attempt::Acquired => {
                    // The state machine records the node as owner; it is only an identity.
                    return MutexGuard { m: self };
                }
                _ => {
                    node.notified.store(false, Relaxed);
                    waited = true;
                    node.sleep(g);
                }
            }
        }
    }

    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        let _np = NoPreempt::new();
        let mut g = lock(&self.lock);
        if !g.is_free() {
            return None;
        }
        let node = WaitNode::current();
        matches!(g.lock(node.as_ref(), false, false), Attempt::Acquired)
            .then_some(MutexGuard { m: self })
    }

    fn unlock(&self) {
        let _np = NoPreempt::new();
        let mut g = lock(&self.lock);
        if let Some(n) = g.unlock(NodeRef(std::ptr::null())) {
            // SAFETY: see notify_linked; the lock is still held.
            unsafe { notify_linked(n) };
        }
    }

    pub fn counters(&self) -> LockCounters {
        lock(&self.lock).counters.clone()
    }
}

impl<T: ?Sized> std::ops::Deref for MutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves we hold the lock.
        unsafe { &*self.m.data.get() }
    }
}

impl<T: ?Sized> std::ops::DerefMut for MutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above.
        unsafe { &mut *self.m.data.get() }
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    fn drop(&mut self) {
        self.m.unlock();
    }
}

/// A condition variable for [`Mutex`].
#[derive(Default)]
pub struct Condvar {
    waiters: std::sync::Mutex<VecDeque<NodeRef>>,
}

// SAFETY: NodeRefs are only dereferenced under the lock or by their owners.
unsafe impl Sync for Condvar {}
unsafe impl Send for Condvar {}

impl Condvar {
    pub fn new() -> Condvar {
        Condvar::default()
    }

    /// Releases `guard`, sleeps until notified, and re-acquires the mutex.
    pub fn wait<'a, T: ?Sized>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        let _np = NoPreempt::new();
        let m = guard.m;
        let node = WaitNode::current();
        let mut g = lock(&self.waiters);
        // Linked before the mutex is released, so a notify after our unlock finds us.
        g.push_back(node.as_ref());
        drop(guard);
        node.sleep(g);
        m.lock()
    }

    pub fn notify_one(&self) {
        let _np = NoPreempt::new();
        let n = lock(&self.waiters).pop_front();
        if let Some(n) = n {
            // SAFETY: unlinked under the lock; the waiter sleeps until notified.
            unsafe { notify(n) };
        }
    }

    pub fn notify_all(&self) {
        let _np = NoPreempt::new();
        let all: Vec<NodeRef> = lock(&self.waiters).drain(..).collect();
        for n in all {
            // SAFETY: as above.
            unsafe { notify(n) };
        }
    }
}

// ----- channel -----

struct Chan<T> {
    queue: VecDeque<T>,
    cap: usize,
    senders: usize,
    receiver_alive: bool,
    recv_waiters: VecDeque<NodeRef>,
    send_waiters: VecDeque<NodeRef>,
}

struct ChanShared<T> {
    inner: SpinLock<Chan<T>>,
}

// SAFETY: NodeRefs are only dereferenced under the lock or by their owners; T moves across.
unsafe impl<T: Send> Sync for ChanShared<T> {}
unsafe impl<T: Send> Send for ChanShared<T> {}

/// The sending half of a [`channel`]; clone it for more senders.
pub struct Sender<T> {
    ch: std::sync::Arc<ChanShared<T>>,
}

/// The receiving half of a [`channel`].
pub struct Receiver<T> {
    ch: std::sync::Arc<ChanShared<T>>,
}

/// The other side hung up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the other side of the channel is gone")]
pub struct Disconnected;

/// A bounded multi-producer channel holding up to `capacity` (≥ 1) messages: `send` parks
/// while it is full, `recv` while it is empty (a pipe, in the lat_ctx and chat sense).
pub fn channel<T: Send>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let ch = std::sync::Arc::new(ChanShared {
        inner: SpinLock::new(Chan {
            queue: VecDeque::new(),
            cap: capacity.max(1),
            senders: 1,
            receiver_alive: true,
            recv_waiters: VecDeque::new(),
            send_waiters: VecDeque::new(),
        }),
    });
    (Sender { ch: ch.clone() }, Receiver { ch })
}

impl<T: Send> Sender<T> {
    pub fn send(&self, v: T) -> Result<(), Disconnected> {
        let _np = NoPreempt::new();
        let mut v = Some(v);
        loop {
            let mut g = self.ch.inner.lock();
            if !g.receiver_alive {
                return Err(Disconnected);
            }
            if g.queue.len() < g.cap {
                g.queue.push_back(v.take().expect("sent once"));
                let w = g.recv_waiters.pop_front();
                drop(g);
                if let Some(n) = w {
                    // SAFETY: unlinked under the lock; the waiter sleeps until notified.
                    unsafe { notify(n) };
                }
                return Ok(());
            }
            let node = WaitNode::current();
            g.send_waiters.push_back(node.as_ref());
            node.sleep(g);
        }
    }
}

impl<T: Send> Receiver<T> {
    pub fn recv(&self) -> Result<T, Disconnected> {
        let _np = NoPreempt::new();
        loop {
            let mut g = self.ch.inner.lock();
            if let Some(v) = g.queue.pop_front() {
                let w = g.send_waiters.pop_front();
                drop(g);
                if let Some(n) = w {
                    // SAFETY: as in send.
                    unsafe { notify(n) };
                }
                return Ok(v);
            }
            if g.senders == 0 {
                return Err(Disconnected);
            }
            let node = WaitNode::current();
            g.recv_waiters.push_back(node.as_ref());
            node.sleep(g);
        }
    }

    pub fn try_recv(&self) -> Option<T> {
        let _np = NoPreempt::new();
        let mut g = self.ch.inner.lock();
        let v = g.queue.pop_front();
        let w = if v.is_some() {
            g.send_waiters.pop_front()
        } else {
            None
        };
        drop(g);
        if let Some(n) = w {
            // SAFETY: as in send.
            unsafe { notify(n) };
        }
        v
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        let _np = NoPreempt::new();
        self.ch.inner.lock().senders += 1;
        Sender {
            ch: self.ch.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let _np = NoPreempt::new();
        let all: Vec<NodeRef> = {
            let mut g = self.ch.inner.lock();
            g.senders -= 1;
            if g.senders == 0 {
                g.recv_waiters.drain(..).collect()
            } else {
                Vec::new()
            }
        };
        for n in all {
            // SAFETY: as in send.
            unsafe { notify(n) };
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let _np = NoPreempt::new();
        let all: Vec<NodeRef> = {
            let mut g = self.ch.inner.lock();
            g.receiver_alive = false;
            g.send_waiters.drain(..).collect()
        };
        for n in all {
            // SAFETY: as in send.
            unsafe { notify(n) };
        }
    }
}

//! The readiness driver: one epoll instance watched by one thread, which plays the part of
//! the network interrupt. When the kernel reports a descriptor ready, the driver wakes the
//! tasks parked on it through their runtime's wakeup path (`try_to_wake_up`), as a NIC's
//! interrupt wakes the sockets' sleepers: the policy then decides who of the woken runs first.
//!
//! Descriptors are registered once, edge-triggered, for reading and writing. Per direction a
//! source counts the readiness events seen (`seq`); an operation reads the count, tries the
//! non-blocking system call, and on `EAGAIN` parks only if no event came in since it read the
//! count, so an event between the failed call and the park is never lost (the role of
//! Tokio's readiness tick). Timeouts are kept here too, in deadline order, and fired by the
//! same thread from a `timerfd`.
//!
//! One driver serves the whole process, as `async-io`'s does: I/O objects may be created
//! outside any runtime, moved between runtimes and threads, and outlive a runtime; each
//! waiter is woken through its own runtime (or unparked, if it is an OS thread), so runtimes
//! stay independent. The thread lives as long as the process.

use crate::runtime::sync::{notify, NodeRef, WaitNode};
use crate::runtime::NoPreempt;
use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Directions a task waits in.
pub(crate) const READ: usize = 0;
pub(crate) const WRITE: usize = 1;

const WAKE_TOKEN: u64 = u64::MAX;
const TIMER_TOKEN: u64 = u64::MAX - 1;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A registered descriptor (owned elsewhere) and who waits on it.
pub(crate) struct Source {
    fd: RawFd,
    token: u64,
    state: Mutex<SourceState>,
}

struct SourceState {
    /// Readiness events seen per direction since registration.
    seq: [u64; 2],
    waiters: [VecDeque<NodeRef>; 2],
    /// Futures polled by an executor (`futures_io` traits): woken by the next event.
    wakers: [Vec<std::task::Waker>; 2],
}

impl Source {
    /// The count of readiness events in `dir`, read before an attempt.
    pub(crate) fn seq(&self, dir: usize) -> u64 {
        lock(&self.state).seq[dir]
    }

    /// A future's poll found `dir` not ready: keep `waker` for the next event, unless one
    /// came in since `seen` (then false: poll again).
    pub(crate) fn register_waker(&self, dir: usize, seen: u64, waker: &std::task::Waker) -> bool {
        let mut g = lock(&self.state);
        if g.seq[dir] != seen {
            return false;
        }
        if !g.wakers[dir].iter().any(|w| w.will_wake(waker)) {
            g.wakers[dir].push(waker.clone());
        }
        true
    }

    /// Parks the caller until an event in `dir` newer than `seen` or `deadline`: `Ok` for the
    /// event (try again), `TimedOut` for the deadline.
    pub(crate) fn wait(
        self: &Arc<Self>,
        dir: usize,
        seen: u64,
        deadline: Option<Instant>,
    ) -> io::Result<()> {
        let _np = NoPreempt::new();
        let r = reactor()?;
        let node = WaitNode::current();
        let mut timeout_key = None;
        let out = loop {
            let mut g = lock(&self.state);
            if g.seq[dir] != seen {
                break Ok(());
            }
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    break Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the operation's timeout passed",
                    ));
                }
                // Under the source's lock, so that the driver cannot fire the entry before
                // the node is linked (it takes this lock to unlink).
                if timeout_key.is_none() {
                    timeout_key = Some(r.add_timeout(d, self.clone(), node.as_ref(), dir));
                }
            }
            node.notified
                .store(false, std::sync::atomic::Ordering::Relaxed);
            g.waiters[dir].push_back(node.as_ref());
            // Woken only by whoever unlinked the node: the driver, for an event or for the
            // deadline. Either way, look again.
            node.sleep(g);
            if !node.notified.load(std::sync::atomic::Ordering::Acquire) {
                // Not by the driver (nothing does that today): the node may still be
                // linked, and must not be linked twice.
                let mut g = lock(&self.state);
                g.waiters[dir].retain(|&n| n != node.as_ref());
            }
        };
        if let Some(k) = timeout_key {
            lock(&r.timeouts).entries.remove(&k);
        }
        out
    }
}

/// The registered sources, indexed by the low half of their token; the high half is a
/// generation, so an event still in flight for a descriptor just deregistered cannot reach
/// the source that reuses its slot.
#[derive(Default)]
struct Slab {
    slots: Vec<(u32, Option<Arc<Source>>)>,
    free: Vec<u32>,
}

type TimeoutKey = (Instant, u64);

#[derive(Default)]
struct Timeouts {
    entries: BTreeMap<TimeoutKey, (Arc<Source>, NodeRef, usize)>,
    next_id: u64,
    /// The deadline the timerfd is armed for.
    armed: Option<Instant>,
}

pub(crate) struct Reactor {
    epoll: OwnedFd,
    /// An eventfd that makes the driver look at its timeouts again.
    poke: OwnedFd,
    timer: OwnedFd,
    sources: Mutex<Slab>,
    timeouts: Mutex<Timeouts>,
}

/// The driver once started: read without a lock on every park and every drop of an I/O
/// object. Starting it is serialised by `STARTING` (a failed start may be retried).
static REACTOR: std::sync::OnceLock<&'static Reactor> = std::sync::OnceLock::new();
static STARTING: Mutex<()> = Mutex::new(());

/// The process's driver, started on first use.
pub(crate) fn reactor() -> io::Result<&'static Reactor> {
    if let Some(r) = REACTOR.get() {
        return Ok(r);
    }
    let _g = lock(&STARTING);
    if let Some(r) = REACTOR.get() {
        return Ok(r);
    }
    let raw: *mut Reactor = Box::into_raw(Box::new(Reactor::new()?));
    // SAFETY: `raw` is a live allocation that is never freed once the thread has it.
    let r: &'static Reactor = unsafe { &*raw };
    if let Err(e) = std::thread::Builder::new()
        .name("schedkit-io".into())
        .spawn(move || r.drive())
    {
        // SAFETY: no thread got `r`; closing its descriptors frees them for a retry.
        drop(unsafe { Box::from_raw(raw) });
        return Err(io::Error::new(
            e.kind(),
            format!("starting the I/O driver thread: {e}"),
        ));
    }
    let _ = REACTOR.set(r);
    Ok(r)
}

impl Reactor {
    fn new() -> io::Result<Reactor> {
        // SAFETY: plain system calls; each result is checked before it is owned.
        unsafe {
            let epoll = OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?);
            let poke = OwnedFd::from_raw_fd(cvt(libc::eventfd(
                0,
                libc::EFD_CLOEXEC | libc::EFD_NONBLOCK,
            ))?);
            let timer = OwnedFd::from_raw_fd(cvt(libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
            ))?);
            for (fd, token) in [(&poke, WAKE_TOKEN), (&timer, TIMER_TOKEN)] {
                let mut ev = libc::epoll_event {
                    events: libc::EPOLLIN as u32,
                    u64: token,
                };
                cvt(libc::epoll_ctl(
                    epoll.as_raw_fd(),
                    libc::EPOLL_CTL_ADD,
                    fd.as_raw_fd(),
                    &mut ev,
                ))?;
            }
            Ok(Reactor {
                epoll,
                poke,
                timer,
                sources: Mutex::new(Slab::default()),
                timeouts: Mutex::new(Timeouts::default()),
            })
        }
    }

    /// Watches `fd` (non-blocking, owned by the caller until [`Reactor::deregister`]).
    pub(crate) fn register(&self, fd: RawFd) -> io::Result<Arc<Source>> {
        let mut slab = lock(&self.sources);
        let idx = match slab.free.pop() {
            Some(i) => i,
            None => {
                slab.slots.push((0, None));
                (slab.slots.len() - 1) as u32
            }
        };
        let generation = slab.slots[idx as usize].0.wrapping_add(1);
        let token = (u64::from(generation) << 32) | u64::from(idx);
        let src = Arc::new(Source {
            fd,
            token,
            state: Mutex::new(SourceState {
                seq: [0; 2],
                waiters: [VecDeque::new(), VecDeque::new()],
                wakers: [Vec::new(), Vec::new()],
            }),
        });
        slab.slots[idx as usize] = (generation, Some(src.clone()));
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token,
        };
        // SAFETY: `fd` is open (the caller owns it) and `ev` lives across the call.
        let added = cvt(unsafe {
            libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev)
        });
        if let Err(e) = added {
            slab.slots[idx as usize].1 = None;
            slab.free.push(idx);
            return Err(e);
        }
        Ok(src)
    }

    /// Stops watching `src`'s descriptor, before its owner closes it.
    pub(crate) fn deregister(&self, src: &Source) {
        // SAFETY: the descriptor is still open; a failure (it was never added) is harmless.
        unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                src.fd,
                std::ptr::null_mut(),
            );
        }
        let mut slab = lock(&self.sources);
        let idx = (src.token & 0xffff_ffff) as usize;
        if slab.slots.get(idx).is_some_and(|s| {
            s.1.as_ref()
                .is_some_and(|x| std::ptr::eq(Arc::as_ptr(x), src))
        }) {
            slab.slots[idx].1 = None;
            slab.free.push(idx as u32);
        }
    }

    fn lookup(&self, token: u64) -> Option<Arc<Source>> {
        let slab = lock(&self.sources);
        let (generation, src) = slab.slots.get((token & 0xffff_ffff) as usize)?;
        (u64::from(*generation) == token >> 32)
            .then(|| src.clone())
            .flatten()
    }

    fn add_timeout(&self, at: Instant, src: Arc<Source>, node: NodeRef, dir: usize) -> TimeoutKey {
        let mut t = lock(&self.timeouts);
        let key = (at, t.next_id);
        t.next_id += 1;
        t.entries.insert(key, (src, node, dir));
        if t.armed.is_none_or(|a| at < a) {
            // Have the driver re-arm its timer for the earlier deadline.
            t.armed = Some(at);
            let one: u64 = 1;
            // SAFETY: writing 8 bytes to our eventfd; a full counter (EAGAIN) already pokes.
            unsafe {
                libc::write(
                    self.poke.as_raw_fd(),
                    (&one as *const u64).cast(),
                    std::mem::size_of::<u64>(),
                );
            }
        }
        key
    }

    /// The driver thread.
    fn drive(&self) {
        // Started from a task, it would inherit its worker's single core.
        crate::runtime::worker::unpin_to_process_cpus();
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let mut wake: Vec<NodeRef> = Vec::new();
        let mut wakers: Vec<std::task::Waker> = Vec::new();
        loop {
            // SAFETY: `events` holds 256 entries for the kernel to fill.
            let n = unsafe {
                libc::epoll_wait(
                    self.epoll.as_raw_fd(),
                    events.as_mut_ptr(),
                    events.len() as i32,
                    -1,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Every parked task would wait forever: say why and stop the process.
                eprintln!("schedkit: the I/O driver's epoll_wait failed: {e}");
                std::process::abort();
            }
            for ev in &events[..n as usize] {
                let (mask, token) = (ev.events, ev.u64);
                match token {
                    WAKE_TOKEN | TIMER_TOKEN => {
                        let fd = if token == WAKE_TOKEN {
                            &self.poke
                        } else {
                            &self.timer
                        };
                        let mut buf = 0u64;
                        // SAFETY: reading the 8-byte counter of our own eventfd/timerfd.
                        unsafe {
                            libc::read(fd.as_raw_fd(), (&mut buf as *mut u64).cast(), 8);
                        }
                    }
                    _ => {
                        let Some(src) = self.lookup(token) else {
                            continue;
                        };
                        let readable = (libc::EPOLLIN
                            | libc::EPOLLPRI
                            | libc::EPOLLRDHUP
                            | libc::EPOLLHUP
                            | libc::EPOLLERR) as u32;
                        let writable = (libc::EPOLLOUT | libc::EPOLLHUP | libc::EPOLLERR) as u32;
                        let mut g = lock(&src.state);
                        for (dir, bits) in [(READ, readable), (WRITE, writable)] {
                            if mask & bits != 0 {
                                g.seq[dir] += 1;
                                wake.extend(g.waiters[dir].drain(..));
                                wakers.append(&mut g.wakers[dir]);
                            }
                        }
                    }
                }
            }
            self.expire(&mut wake);
            // The whole batch is woken before any worker is kicked, so the policy chooses
            // among all the tasks it made ready.
            crate::runtime::task_ops::defer_kicks(|| {
                for node in wake.drain(..) {
                    // SAFETY: each node was unlinked under its source's lock just now; a
                    // waiter stays parked until notified.
                    unsafe { notify(node) };
                }
                for w in wakers.drain(..) {
                    // Another executor's waker runs here: one that panics must not take
                    // the driver, and every task parked on I/O, down with it.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake())).is_err()
                    {
                        eprintln!("schedkit: a waker panicked in the I/O driver; ignored");
                    }
                }
            });
        }
    }

    /// Unlinks the waiters whose deadline passed into `wake`, and arms the timer for the
    /// next deadline.
    fn expire(&self, wake: &mut Vec<NodeRef>) {
        let now = Instant::now();
        let due: Vec<(Arc<Source>, NodeRef, usize)> = {
            let mut t = lock(&self.timeouts);
            let later = t.entries.split_off(&(now, u64::MAX));
            let due = std::mem::replace(&mut t.entries, later);
            let next = t.entries.keys().next().map(|k| k.0);
            t.armed = next;
            let rel = next.map(|at| at.saturating_duration_since(now));
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: match rel {
                    // A zero value would disarm: a deadline due now fires in 1 ns.
                    Some(d) => libc::timespec {
                        tv_sec: d.as_secs() as libc::time_t,
                        tv_nsec: d.subsec_nanos().max(u32::from(d.as_secs() == 0)) as libc::c_long,
                    },
                    None => libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 0,
                    },
                },
            };
            // SAFETY: arming our own timerfd with a valid itimerspec.
            unsafe {
                libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, std::ptr::null_mut());
            }
            due.into_values().collect()
        };
        for (src, node, dir) in due {
            let mut g = lock(&src.state);
            // Only a node still parked here: one woken by an event has gone.
            if let Some(i) = g.waiters[dir].iter().position(|&n| n == node) {
                g.waiters[dir].remove(i);
                wake.push(node);
            }
        }
    }
}

//! I/O that parks the task, not the worker: TCP, UDP, Unix sockets and pipes whose
//! operations look like `std`'s (blocking calls, `Read`/`Write`, per-object timeouts) but,
//! called from a schedkit task, park that task and let its worker run others. A readiness
//! driver (`reactor`) wakes a parked task through its runtime's policy when the descriptor
//! becomes ready, so when many tasks become ready at once the policy decides who runs first:
//! an RT task before a nice 19 one, as the kernel's wakeup path does after an interrupt.
//!
//! Called from a thread that is not a task (`main`, a helper thread), the same objects block
//! that thread, so a task and a plain thread can talk over them.
//!
//! An `async fn` task of this runtime has a stack of its own (`runtime::future`), so it may
//! call these operations directly: the task parks, which is what it would do on `Pending`.
//! To wait on several sockets within one task, or to drive them from another executor, the
//! streams and pipes implement `futures-io`'s `AsyncRead` and `AsyncWrite` (the traits of
//! the `futures` crate, which `async-std`, `smol` and the crates written against them use,
//! and which `tokio-util`'s `compat` converts to Tokio's), and the listeners have
//! `accept_async`. These are readiness-driven and have no timeouts of their own: wrap them
//! in the executor's.
//!
//! Regular files and other calls that cannot be made non-blocking go to a helper pool with
//! [`spawn_blocking`], as Tokio's `spawn_blocking` does.
//!
//! Why epoll and not io_uring: readiness keeps the user's buffers in the user's hands (a
//! task's stack may be dropped or reused while a completion-based read still targets it),
//! needs no kernel newer than 2.6.27's `epoll_create1`, and works where io_uring is
//! disabled (containers with the default seccomp profile, `kernel.io_uring_disabled`).

mod blocking;
mod net;
mod pipe;
pub(crate) mod reactor;

pub use blocking::spawn_blocking;
pub use net::{TcpListener, TcpStream, UdpSocket, UnixListener, UnixStream};
pub use pipe::{pipe, PipeReader, PipeWriter};

use reactor::{reactor, Source, READ, WRITE};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NO_TIMEOUT: u64 = u64::MAX;

/// A descriptor registered with the driver, and its read and write timeouts. Dropped before
/// the object that owns the descriptor closes it (it is declared first in each type).
struct Registration {
    src: Arc<Source>,
    timeouts: [AtomicU64; 2],
}

impl Registration {
    fn new(fd: RawFd) -> io::Result<Registration> {
        Ok(Registration {
            src: reactor()?.register(fd)?,
            timeouts: [AtomicU64::new(NO_TIMEOUT), AtomicU64::new(NO_TIMEOUT)],
        })
    }

    fn set_timeout(&self, dir: usize, t: Option<Duration>) -> io::Result<()> {
        let ns = match t {
            Some(d) if d.is_zero() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a zero timeout (use None for no timeout)",
                ))
            }
            Some(d) => d.as_nanos().min(u128::from(NO_TIMEOUT - 1)) as u64,
            None => NO_TIMEOUT,
        };
        self.timeouts[dir].store(ns, Relaxed);
        Ok(())
    }

    fn timeout(&self, dir: usize) -> Option<Duration> {
        match self.timeouts[dir].load(Relaxed) {
            NO_TIMEOUT => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// Runs the non-blocking `attempt` until it does not report `WouldBlock`, parking between
    /// tries until the descriptor is ready in `dir`, up to `timeout` (or the object's).
    fn op<R>(
        &self,
        dir: usize,
        timeout: Option<Duration>,
        mut attempt: impl FnMut() -> io::Result<R>,
    ) -> io::Result<R> {
        // A timeout too long to add to the clock is no timeout.
        let deadline = timeout
            .or_else(|| self.timeout(dir))
            .and_then(|t| Instant::now().checked_add(t));
        loop {
            let seen = self.src.seq(dir);
            match attempt() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
            self.src.wait(dir, seen, deadline)?;
        }
    }
}

impl Registration {
    /// The `poll` form of [`Registration::op`], for futures: `Pending` with the waker kept
    /// for the next readiness event in `dir`.
    fn poll_op<R>(
        &self,
        dir: usize,
        cx: &mut std::task::Context<'_>,
        mut attempt: impl FnMut() -> io::Result<R>,
    ) -> std::task::Poll<io::Result<R>> {
        loop {
            let seen = self.src.seq(dir);
            match attempt() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return std::task::Poll::Ready(r),
            }
            if self.src.register_waker(dir, seen, cx.waker()) {
                return std::task::Poll::Pending;
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(r) = reactor() {
            r.deregister(&self.src);
        }
    }
}

#[cfg(test)]
mod tests;

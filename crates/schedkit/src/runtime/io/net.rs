//! Sockets whose blocking calls park the calling task: `std`'s types, non-blocking and
//! registered with the driver.

use super::{Registration, READ, WRITE};
use socket2::{Domain, SockAddr, Socket, Type};
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::SocketAddr as UnixAddr;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Resolves `addr` and tries each address. A name lookup runs on the calling task's worker
/// (use [`super::spawn_blocking`] for one that may block long).
fn each_addr<A: ToSocketAddrs, T>(
    addr: A,
    mut f: impl FnMut(SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
    let mut last = None;
    for a in addrs {
        match f(a) {
            Ok(t) => return Ok(t),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the address resolved to nothing",
        )
    }))
}

/// `connect()` on a non-blocking socket: `EINPROGRESS`, then writable, then `SO_ERROR`.
fn connect_socket(
    sock: &Socket,
    reg: &Registration,
    addr: &SockAddr,
    timeout: Option<Duration>,
) -> io::Result<()> {
    match sock.connect(addr) {
        Ok(()) => return Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    reg.op(WRITE, timeout, || {
        // Writable means the handshake ended, well or not; not yet: still in progress.
        match sock.peer_addr() {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => match sock.take_error()? {
                Some(err) => Err(err),
                None => Err(io::ErrorKind::WouldBlock.into()),
            },
            Err(e) => Err(e),
        }
    })
}

macro_rules! timeouts_and_fd {
    ($t:ty) => {
        impl $t {
            /// The timeout of reads (or accepts, or receives), as `std`'s
            /// `set_read_timeout`; past it an operation fails with `TimedOut`.
            pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                self.reg.set_timeout(READ, t)
            }
            /// The timeout of writes (and sends).
            pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
                self.reg.set_timeout(WRITE, t)
            }
            pub fn read_timeout(&self) -> Option<Duration> {
                self.reg.timeout(READ)
            }
            pub fn write_timeout(&self) -> Option<Duration> {
                self.reg.timeout(WRITE)
            }
        }
        impl AsRawFd for $t {
            fn as_raw_fd(&self) -> RawFd {
                self.inner.as_raw_fd()
            }
        }
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("inner", &self.inner)
                    .finish()
            }
        }
        impl AsFd for $t {
            fn as_fd(&self) -> BorrowedFd<'_> {
                self.inner.as_fd()
            }
        }
    };
}

macro_rules! stream_io {
    ($t:ty) => {
        impl futures_io::AsyncRead for $t {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut [u8],
            ) -> Poll<io::Result<usize>> {
                let me = &*self;
                me.reg.poll_op(READ, cx, || (&me.inner).read(buf))
            }
        }
        impl futures_io::AsyncWrite for $t {
            fn poll_write(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                let me = &*self;
                me.reg.poll_op(WRITE, cx, || (&me.inner).write(buf))
            }
            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }
            fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(self.inner.shutdown(Shutdown::Write))
            }
        }
        impl Read for &$t {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.reg.op(READ, None, || (&self.inner).read(buf))
            }
            fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
                self.reg
                    .op(READ, None, || (&self.inner).read_vectored(bufs))
            }
        }
        impl Write for &$t {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                self.reg.op(WRITE, None, || (&self.inner).write(buf))
            }
            fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
                self.reg
                    .op(WRITE, None, || (&self.inner).write_vectored(bufs))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        impl Read for $t {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                (&*self).read(buf)
            }
            fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
                (&*self).read_vectored(bufs)
            }
        }
        impl Write for $t {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                (&*self).write(buf)
            }
            fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
                (&*self).write_vectored(bufs)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
    };
}

// ----- TCP -----

/// A TCP listening socket whose `accept` parks the task.
pub struct TcpListener {
    reg: Registration,
    inner: std::net::TcpListener,
}

impl TcpListener {
    /// Binds (with `SO_REUSEADDR`, so a restarted server can bind again at once) and
    /// listens with a backlog of 1 024 connections, Tokio's default: `std`'s 128 overflows
    /// when a burst of connections arrives while the accepting task waits for a CPU, and a
    /// client whose SYN is dropped retries only after a second.
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        each_addr(addr, |a| {
            let sock = Socket::new(Domain::for_address(a), Type::STREAM, None)?;
            sock.set_reuse_address(true)?;
            sock.bind(&a.into())?;
            sock.listen(1024)?;
            TcpListener::from_std(sock.into())
        })
    }

    /// Takes over a listener made elsewhere (it is made non-blocking).
    pub fn from_std(inner: std::net::TcpListener) -> io::Result<TcpListener> {
        inner.set_nonblocking(true)?;
        Ok(TcpListener {
            reg: Registration::new(inner.as_raw_fd())?,
            inner,
        })
    }

    /// The next connection. Out of descriptors (`EMFILE`, `ENFILE`), it returns that error at
    /// once: the listener and the runtime go on, and the caller decides whether to wait.
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, a) = self.reg.op(READ, None, || self.inner.accept())?;
        Ok((TcpStream::from_std(s)?, a))
    }

    /// [`TcpListener::accept`] as a future, for an executor's task.
    pub async fn accept_async(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, a) =
            std::future::poll_fn(|cx| self.reg.poll_op(READ, cx, || self.inner.accept())).await?;
        Ok((TcpStream::from_std(s)?, a))
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}
timeouts_and_fd!(TcpListener);

/// A TCP connection whose reads and writes park the task.
pub struct TcpStream {
    reg: Registration,
    inner: std::net::TcpStream,
}

impl TcpStream {
    /// Connects without blocking the worker: the task parks until the handshake ends.
    pub fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        each_addr(addr, |a| TcpStream::connect_addr(a, None))
    }

    /// As [`TcpStream::connect`], failing with `TimedOut` after `timeout` (a zero timeout is
    /// `InvalidInput`, as in `std`).
    pub fn connect_timeout(addr: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
        if timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a zero timeout for connect",
            ));
        }
        TcpStream::connect_addr(*addr, Some(timeout))
    }

    fn connect_addr(a: SocketAddr, timeout: Option<Duration>) -> io::Result<TcpStream> {
        let sock = Socket::new(Domain::for_address(a), Type::STREAM, None)?;
        sock.set_nonblocking(true)?;
        let reg = Registration::new(sock.as_raw_fd())?;
        connect_socket(&sock, &reg, &a.into(), timeout)?;
        Ok(TcpStream {
            reg,
            inner: sock.into(),
        })
    }

    /// Takes over a connected stream made elsewhere (it is made non-blocking).
    pub fn from_std(inner: std::net::TcpStream) -> io::Result<TcpStream> {
        inner.set_nonblocking(true)?;
        Ok(TcpStream {
            reg: Registration::new(inner.as_raw_fd())?,
            inner,
        })
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.shutdown(how)
    }
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.inner.set_nodelay(on)
    }
    /// Reads without consuming (`MSG_PEEK`), parking until something arrives.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.reg.op(READ, None, || self.inner.peek(buf))
    }
}
timeouts_and_fd!(TcpStream);
stream_io!(TcpStream);

// ----- UDP -----

/// A UDP socket whose receives (and sends, when the buffer is full) park the task.
pub struct UdpSocket {
    reg: Registration,
    inner: std::net::UdpSocket,
}

impl UdpSocket {
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        UdpSocket::from_std(std::net::UdpSocket::bind(addr)?)
    }
    pub fn from_std(inner: std::net::UdpSocket) -> io::Result<UdpSocket> {
        inner.set_nonblocking(true)?;
        Ok(UdpSocket {
            reg: Registration::new(inner.as_raw_fd())?,
            inner,
        })
    }
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.reg.op(READ, None, || self.inner.recv_from(buf))
    }
    pub fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], addr: A) -> io::Result<usize> {
        each_addr(addr, |a| {
            self.reg.op(WRITE, None, || self.inner.send_to(buf, a))
        })
    }
    /// Sets the default peer (`connect` on a datagram socket does not block).
    pub fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        self.inner.connect(addr)
    }
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.reg.op(READ, None, || self.inner.recv(buf))
    }
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.reg.op(WRITE, None, || self.inner.send(buf))
    }
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}
timeouts_and_fd!(UdpSocket);

// ----- Unix domain -----

/// A Unix stream listener whose `accept` parks the task.
pub struct UnixListener {
    reg: Registration,
    inner: std::os::unix::net::UnixListener,
}

impl UnixListener {
    pub fn bind<P: AsRef<Path>>(path: P) -> io::Result<UnixListener> {
        UnixListener::from_std(std::os::unix::net::UnixListener::bind(path)?)
    }
    pub fn from_std(inner: std::os::unix::net::UnixListener) -> io::Result<UnixListener> {
        inner.set_nonblocking(true)?;
        Ok(UnixListener {
            reg: Registration::new(inner.as_raw_fd())?,
            inner,
        })
    }
    pub fn accept(&self) -> io::Result<(UnixStream, UnixAddr)> {
        let (s, a) = self.reg.op(READ, None, || self.inner.accept())?;
        Ok((UnixStream::from_std(s)?, a))
    }

    /// [`UnixListener::accept`] as a future, for an executor's task.
    pub async fn accept_async(&self) -> io::Result<(UnixStream, UnixAddr)> {
        let (s, a) =
            std::future::poll_fn(|cx| self.reg.poll_op(READ, cx, || self.inner.accept())).await?;
        Ok((UnixStream::from_std(s)?, a))
    }
    pub fn local_addr(&self) -> io::Result<UnixAddr> {
        self.inner.local_addr()
    }
}
timeouts_and_fd!(UnixListener);

/// A Unix stream connection whose reads and writes park the task.
pub struct UnixStream {
    reg: Registration,
    inner: std::os::unix::net::UnixStream,
}

impl UnixStream {
    /// Connects. A full backlog (`EAGAIN` on a Unix socket) is waited out: the socket
    /// becomes writable when the server accepts.
    pub fn connect<P: AsRef<Path>>(path: P) -> io::Result<UnixStream> {
        let sock = Socket::new(Domain::UNIX, Type::STREAM, None)?;
        sock.set_nonblocking(true)?;
        let reg = Registration::new(sock.as_raw_fd())?;
        let addr = SockAddr::unix(path)?;
        reg.op(WRITE, None, || match sock.connect(&addr) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                // Nothing signals a free backlog slot to a socket not yet connected: try
                // again after a short sleep of the task.
                crate::runtime::sleep(Duration::from_micros(200));
                Err(io::ErrorKind::Interrupted.into())
            }
            r => r,
        })?;
        Ok(UnixStream {
            reg,
            inner: std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(sock)),
        })
    }
    /// A connected pair (`socketpair`).
    pub fn pair() -> io::Result<(UnixStream, UnixStream)> {
        let (a, b) = std::os::unix::net::UnixStream::pair()?;
        Ok((UnixStream::from_std(a)?, UnixStream::from_std(b)?))
    }
    pub fn from_std(inner: std::os::unix::net::UnixStream) -> io::Result<UnixStream> {
        inner.set_nonblocking(true)?;
        Ok(UnixStream {
            reg: Registration::new(inner.as_raw_fd())?,
            inner,
        })
    }
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.shutdown(how)
    }
    pub fn peer_addr(&self) -> io::Result<UnixAddr> {
        self.inner.peer_addr()
    }
}
timeouts_and_fd!(UnixStream);
stream_io!(UnixStream);

//! Pipes whose reads and writes park the task (`pipe2` with `O_NONBLOCK`).

use super::{Registration, READ, WRITE};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A new pipe: what is written to the writer is read from the reader.
pub fn pipe() -> io::Result<(PipeReader, PipeWriter)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded: both descriptors are new and ours.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((PipeReader::from_fd(r)?, PipeWriter::from_fd(w)?))
}

/// The read end of a pipe.
pub struct PipeReader {
    reg: Registration,
    inner: File,
}

/// The write end of a pipe.
pub struct PipeWriter {
    reg: Registration,
    inner: File,
}

impl PipeReader {
    /// Takes over a pipe's read end (or any descriptor that can be polled), made
    /// non-blocking: a child's stdout, say.
    pub fn from_fd(fd: OwnedFd) -> io::Result<PipeReader> {
        set_nonblocking(fd.as_raw_fd())?;
        Ok(PipeReader {
            reg: Registration::new(fd.as_raw_fd())?,
            inner: File::from(fd),
        })
    }
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.reg.set_timeout(READ, t)
    }
}

impl PipeWriter {
    /// Takes over a pipe's write end (a child's stdin, say), made non-blocking.
    pub fn from_fd(fd: OwnedFd) -> io::Result<PipeWriter> {
        set_nonblocking(fd.as_raw_fd())?;
        Ok(PipeWriter {
            reg: Registration::new(fd.as_raw_fd())?,
            inner: File::from(fd),
        })
    }
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.reg.set_timeout(WRITE, t)
    }
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Read for PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (reg, inner) = (&self.reg, &self.inner);
        reg.op(READ, None, || (&*inner).read(buf))
    }
}

impl Write for PipeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (reg, inner) = (&self.reg, &self.inner);
        reg.op(WRITE, None, || (&*inner).write(buf))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for PipeReader {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}
impl AsFd for PipeReader {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}
impl AsRawFd for PipeWriter {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}
impl AsFd for PipeWriter {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}

impl futures_io::AsyncRead for PipeReader {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut [u8],
    ) -> std::task::Poll<io::Result<usize>> {
        let (reg, inner) = (&self.reg, &self.inner);
        reg.poll_op(READ, cx, || (&*inner).read(buf))
    }
}

impl futures_io::AsyncWrite for PipeWriter {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        let (reg, inner) = (&self.reg, &self.inner);
        reg.poll_op(WRITE, cx, || (&*inner).write(buf))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_close(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

impl std::fmt::Debug for PipeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeReader")
            .field("fd", &self.inner.as_raw_fd())
            .finish()
    }
}

impl std::fmt::Debug for PipeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipeWriter")
            .field("fd", &self.inner.as_raw_fd())
            .finish()
    }
}

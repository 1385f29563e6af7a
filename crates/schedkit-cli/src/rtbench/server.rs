//! `bench runtime --workloads server`: what the runtime is for. The same small HTTP/1.1
//! server runs on each runner: a connection per task (goroutine, thread), `GET /short`
//! answered at once, `GET /heavy` after a fixed amount of CPU work (`HEAVY_MS` of this core's
//! time, calibrated per runner). A load generator on loopback (OS threads with blocking
//! sockets, in this process) measures the short requests' latency, first alone (unloaded),
//! then while `2 × cpus` connections send heavy requests back to back and keep every worker
//! busy (loaded).
//!
//! What each runner can do with the heavy work, and does:
//! - schedkit: a connection that asks for heavy work drops its task to nice 19 for good
//!   (`runtime::set_nice`), so the policy runs short requests first;
//! - OS threads: the same, with `setpriority` on the connection's thread (the kernel's
//!   policy, whatever the machine runs);
//! - Tokio: no priorities; the work runs on the async worker, as a handler's computation
//!   does unless moved to `spawn_blocking` (whose threads have no priority either);
//! - Go's net/http: no goroutine priorities; the work runs in the handler's goroutine,
//!   preempted every 10 ms.

use super::{row, Opts, Row};
use anyhow::Result;
use schedkit::runtime::{self as skrt, Policy, Runtime, TaskSpec};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// CPU time of one heavy request.
pub const HEAVY_MS: u64 = 20;
/// Connections sending short requests, one after another each.
const SHORT_CLIENTS: usize = 4;

const SHORT: &[u8] = b"GET /short HTTP/1.1\r\nHost: bench\r\n\r\n";
const HEAVY: &[u8] = b"GET /heavy HTTP/1.1\r\nHost: bench\r\n\r\n";
const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// The heavy request's work: `iters` rounds of an integer mix.
pub fn burn(iters: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..iters {
        x = (x ^ i).wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 29;
    }
    std::hint::black_box(x)
}

/// Rounds of [`burn`] that take `ms` on this core (the fastest of three measurements).
pub fn calibrate(ms: u64) -> u64 {
    let probe = 1u64 << 20;
    let best = (0..3)
        .map(|_| {
            let t = Instant::now();
            burn(probe);
            t.elapsed()
        })
        .min()
        .unwrap_or(Duration::from_millis(1));
    (probe as f64 * ms as f64 / 1e3 / best.as_secs_f64().max(1e-9)) as u64
}

/// Serves one keep-alive connection until the peer closes it: each request answered in order,
/// `on_heavy` called before a heavy request's work.
fn serve(mut s: impl Read + Write, iters: u64, mut on_heavy: impl FnMut()) {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        while let Some(end) = find(&buf, b"\r\n\r\n") {
            let heavy = buf.starts_with(b"GET /heavy");
            buf.drain(..end + 4);
            if heavy {
                on_heavy();
                burn(iters);
            }
            if s.write_all(REPLY).is_err() {
                return;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// Reads one response (headers and a `Content-Length` body) from `s`.
fn read_response(s: &mut std::net::TcpStream, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = find(buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                buf.drain(..end + 4 + len);
                return Ok(());
            }
        }
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A client sending `req` back to back until `stop`: the latency of each (ns).
fn client(addr: SocketAddr, req: &'static [u8], stop: Arc<AtomicBool>) -> Vec<f64> {
    let mut lat = Vec::new();
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return lat;
    };
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    while !stop.load(Relaxed) {
        let t = Instant::now();
        if s.write_all(req).is_err() || read_response(&mut s, &mut buf).is_err() {
            break;
        }
        lat.push(t.elapsed().as_nanos() as f64);
    }
    lat
}

/// The two phases against the server at `addr`: rows for `runner`/`policy`.
pub fn measure(addr: SocketAddr, runner: &str, policy: &str, o: &Opts) -> Vec<Row> {
    let mut out = Vec::new();
    for (phase, heavy) in [("unloaded", 0), ("loaded", 2 * o.cpus)] {
        let stop_heavy = Arc::new(AtomicBool::new(false));
        let heavies: Vec<_> = (0..heavy)
            .map(|_| {
                let s = stop_heavy.clone();
                std::thread::spawn(move || client(addr, HEAVY, s))
            })
            .collect();
        if heavy > 0 {
            // Every worker busy before the short requests are timed.
            std::thread::sleep(Duration::from_millis(3 * HEAVY_MS));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let shorts: Vec<_> = (0..SHORT_CLIENTS)
            .map(|_| {
                let s = stop.clone();
                std::thread::spawn(move || client(addr, SHORT, s))
            })
            .collect();
        std::thread::sleep(o.duration);
        stop.store(true, Relaxed);
        let mut lat: Vec<f64> = shorts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        stop_heavy.store(true, Relaxed);
        let heavy_done: usize = heavies
            .into_iter()
            .map(|h| h.join().unwrap_or_default().len())
            .sum();
        let n = lat.len();
        lat.sort_by(|a, b| a.total_cmp(b));
        let q = |p: f64| {
            lat.get(((n.max(1) - 1) as f64 * p) as usize)
                .copied()
                .unwrap_or(f64::NAN)
                / 1e3
        };
        let w = format!("server/{phase}");
        for (name, v) in [("p50", q(0.5)), ("p99", q(0.99)), ("p99.9", q(0.999))] {
            out.push(row(
                &format!("{w}/{name}"),
                runner,
                policy,
                v,
                "µs short",
                false,
            ));
        }
        out.push(row(
            &format!("{w}/short"),
            runner,
            policy,
            n as f64 / o.duration.as_secs_f64(),
            "short req/s",
            true,
        ));
        if heavy > 0 {
            out.push(row(
                &format!("{w}/heavy"),
                runner,
                policy,
                heavy_done as f64 / (o.duration.as_secs_f64() + 3.0 * HEAVY_MS as f64 / 1e3),
                "heavy req/s",
                true,
            ));
        }
    }
    out
}

/// Connects once to `addr` so that a listener parked in `accept` sees `stop`.
fn unblock(addr: SocketAddr) {
    let _ = std::net::TcpStream::connect(addr);
}

/// The server on a schedkit runtime: an acceptor task that gives each connection a task
/// running `conn`, until `stop` (and a connection to see it) ends the accept loop.
fn schedkit_server(
    rt: &Runtime,
    conn: impl Fn(skrt::io::TcpStream) + Send + Sync + Clone + 'static,
) -> Result<(SocketAddr, Arc<AtomicBool>, skrt::JoinHandle<()>)> {
    let l = skrt::io::TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let acceptor = rt.spawn(TaskSpec::new().name("acceptor"), move || {
        while let Ok((s, _)) = l.accept() {
            if st.load(Relaxed) {
                break;
            }
            let conn = conn.clone();
            skrt::spawn(TaskSpec::new().name("connection"), move || conn(s));
        }
    });
    Ok((addr, stop, acceptor))
}

pub fn schedkit(p: Policy, o: &Opts) -> Result<Vec<Row>> {
    let iters = calibrate(HEAVY_MS);
    let rt = Runtime::builder().policy(p).cpus(o.cpus).build()?;
    let (addr, stop, acceptor) = schedkit_server(&rt, move |s| {
        let _ = s.set_nodelay(true);
        let mut lowered = false;
        serve(s, iters, || {
            if !lowered {
                // A batch connection: nice 19 from here on.
                let _ = skrt::set_nice(19);
                lowered = true;
            }
        })
    })?;
    let rows = measure(addr, "schedkit", p.name(), o);
    stop.store(true, Relaxed);
    unblock(addr);
    let _ = acceptor.join();
    Ok(rows)
}

/// Confines the calling thread to the first `n` CPUs (the OS-thread server gets as many CPUs
/// as the other runners get workers).
fn pin_to_first(n: usize) {
    // SAFETY: a zeroed cpu_set_t filled with CPU_SET, applied to this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in 0..n {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

pub fn threads(o: &Opts) -> Vec<Row> {
    let iters = calibrate(HEAVY_MS);
    let n = o.cpus;
    let Ok(l) = std::net::TcpListener::bind("127.0.0.1:0") else {
        return Vec::new();
    };
    let Ok(addr) = l.local_addr() else {
        return Vec::new();
    };
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    let acceptor = std::thread::spawn(move || {
        pin_to_first(n);
        for s in l.incoming() {
            if st.load(Relaxed) {
                break;
            }
            let Ok(s) = s else { continue };
            let _ = s.set_nodelay(true);
            std::thread::spawn(move || {
                pin_to_first(n);
                let mut lowered = false;
                serve(s, iters, || {
                    if !lowered {
                        // SAFETY: setpriority on this thread (Linux: a tid is a process id
                        // for PRIO_PROCESS); raising nice needs no privilege.
                        unsafe {
                            libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as u32, 19);
                        }
                        lowered = true;
                    }
                })
            });
        }
    });
    let rows = measure(addr, "os-threads", "-", o);
    stop.store(true, Relaxed);
    unblock(addr);
    let _ = acceptor.join();
    rows
}

pub fn tokio(o: &Opts) -> Vec<Row> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let iters = calibrate(HEAVY_MS);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.cpus)
        .enable_io()
        .build()
        .expect("tokio runtime");
    let Ok(l) = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")) else {
        return Vec::new();
    };
    let Ok(addr) = l.local_addr() else {
        return Vec::new();
    };
    let acceptor = rt.spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = Vec::with_capacity(512);
                let mut chunk = [0u8; 512];
                loop {
                    while let Some(end) = find(&buf, b"\r\n\r\n") {
                        let heavy = buf.starts_with(b"GET /heavy");
                        buf.drain(..end + 4);
                        if heavy {
                            // On the worker: Tokio has no lower priority to give it.
                            burn(iters);
                        }
                        if s.write_all(REPLY).await.is_err() {
                            return;
                        }
                    }
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    let rows = measure(addr, "tokio", "-", o);
    acceptor.abort();
    rt.shutdown_timeout(Duration::from_secs(1));
    rows
}

/// This process's resident memory, MiB (`/proc/self/statm`).
fn rss_mib() -> f64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as f64;
    pages * page / (1024.0 * 1024.0)
}

/// `soak`: the server under connection churn for ten times `--duration`: clients open a
/// connection, send ten short requests, close, again; each connection is a task that is
/// spawned and exits. Resident memory after the first tenth and at the end: it must stay flat.
pub fn soak(p: Policy, o: &Opts) -> Result<Vec<Row>> {
    let rt = Runtime::builder().policy(p).cpus(o.cpus).build()?;
    let (addr, stop, acceptor) = schedkit_server(&rt, |s| serve(s, 0, || {}))?;
    let total = o.duration * 10;
    let clients_stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let stop = clients_stop.clone();
            std::thread::spawn(move || {
                let mut conns = 0u64;
                let mut buf = Vec::new();
                while !stop.load(Relaxed) {
                    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
                        continue;
                    };
                    for _ in 0..10 {
                        if s.write_all(SHORT).is_err() || read_response(&mut s, &mut buf).is_err() {
                            break;
                        }
                    }
                    buf.clear();
                    conns += 1;
                }
                conns
            })
        })
        .collect();
    std::thread::sleep(total / 10);
    let early = rss_mib();
    std::thread::sleep(total - total / 10);
    let late = rss_mib();
    clients_stop.store(true, Relaxed);
    let conns: u64 = clients.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    stop.store(true, Relaxed);
    unblock(addr);
    let _ = acceptor.join();
    let name = p.name();
    Ok(vec![
        row(
            "soak/connections",
            "schedkit",
            name,
            conns as f64,
            "connections",
            true,
        ),
        row(
            "soak/rss early",
            "schedkit",
            name,
            early,
            "MiB resident",
            false,
        ),
        row(
            "soak/rss end",
            "schedkit",
            name,
            late,
            "MiB resident",
            false,
        ),
    ])
}

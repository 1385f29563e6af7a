//! Every I/O type parks the task, not its worker: each test runs on a one-CPU runtime, where a
//! worker blocked in a system call would leave the peer task no CPU and the test would hang
//! (the watchdog fails it instead). Each runs under every policy.

use super::*;
use crate::runtime::tests::{in_forced_child, skipped, within};
use crate::runtime::{Policy, Runtime, TaskSpec};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;

/// In the runtime suite's child runs (a forced save area, preemption off), which exist for the
/// preemption paths: the heavy I/O tests are the parent run's, and say so.
fn checked_by_parent(test: &str) -> bool {
    let child = in_forced_child();
    if child {
        skipped(test, "checked by the parent run");
    }
    child
}

fn rt1(p: Policy) -> Runtime {
    Runtime::builder()
        .policy(p)
        .cpus(1)
        .build()
        .expect("runtime builds")
}

/// A task that spins on the CPU until `stop`, counting. Without preemption (the suite's
/// child run with it off) it yields at each turn, else nothing could take the CPU from it.
fn hog(
    rt: &Runtime,
    stop: Arc<AtomicBool>,
    spins: Arc<AtomicU64>,
) -> crate::runtime::JoinHandle<()> {
    let cooperative = !rt.preemptive();
    rt.spawn(TaskSpec::new().name("hog"), move || {
        while !stop.load(Relaxed) {
            spins.fetch_add(1, Relaxed);
            if cooperative {
                crate::runtime::yield_now();
            }
        }
    })
}

/// Reads exactly `n` bytes.
fn read_n(mut r: impl Read, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    r.read_exact(&mut buf).expect("read");
    buf
}

#[test]
fn tcp_accept_connect_read_write_park_the_task() {
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt1(p);
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            // The server is spawned first and parks in accept before the client can run.
            let server = rt.spawn(TaskSpec::new().name("server"), move || {
                let (s, _) = l.accept().unwrap();
                let got = read_n(&s, 5);
                (&s).write_all(&got).unwrap();
                got
            });
            let client = rt.spawn(TaskSpec::new().name("client"), move || {
                let s = TcpStream::connect(addr).unwrap();
                (&s).write_all(b"hello").unwrap();
                read_n(&s, 5)
            });
            assert_eq!(client.join().unwrap(), b"hello", "{}", p.name());
            assert_eq!(server.join().unwrap(), b"hello", "{}", p.name());
        }
    });
}

#[test]
fn unix_streams_pipes_and_udp_park_the_task() {
    within(60, || {
        let dir = std::env::temp_dir().join(format!("schedkit-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (i, &p) in Policy::ALL.iter().enumerate() {
            let rt = rt1(p);
            // Unix stream: listener, connect, echo.
            let path = dir.join(format!("s{i}"));
            let l = UnixListener::bind(&path).unwrap();
            let server = rt.spawn(TaskSpec::new(), move || {
                let (s, _) = l.accept().unwrap();
                let got = read_n(&s, 3);
                (&s).write_all(&got).unwrap();
            });
            let client = rt.spawn(TaskSpec::new(), move || {
                let s = UnixStream::connect(&path).unwrap();
                (&s).write_all(b"abc").unwrap();
                read_n(&s, 3)
            });
            assert_eq!(client.join().unwrap(), b"abc", "{}", p.name());
            server.join().unwrap();
            // A pipe: the reader parks first.
            let (r, mut w) = pipe().unwrap();
            let reader = rt.spawn(TaskSpec::new(), move || read_n(r, 4));
            let writer = rt.spawn(TaskSpec::new(), move || w.write_all(b"pipe").unwrap());
            writer.join().unwrap();
            assert_eq!(reader.join().unwrap(), b"pipe", "{}", p.name());
            // A socketpair.
            let (a, b) = UnixStream::pair().unwrap();
            let t = rt.spawn(TaskSpec::new(), move || read_n(&a, 2));
            rt.spawn(TaskSpec::new(), move || (&b).write_all(b"ok").unwrap())
                .join()
                .unwrap();
            assert_eq!(t.join().unwrap(), b"ok");
            // UDP: the receiver parks in recv_from.
            let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
            let to = rx.local_addr().unwrap();
            let recv = rt.spawn(TaskSpec::new(), move || {
                let mut buf = [0u8; 16];
                let (n, _) = rx.recv_from(&mut buf).unwrap();
                buf[..n].to_vec()
            });
            rt.spawn(TaskSpec::new(), move || {
                let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
                tx.send_to(b"dgram", to).unwrap();
            })
            .join()
            .unwrap();
            assert_eq!(recv.join().unwrap(), b"dgram", "{}", p.name());
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}

#[test]
fn a_timed_out_read_fails_with_timed_out_while_the_worker_runs_others() {
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt1(p);
            let (r, _w) = pipe().unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let spins = Arc::new(AtomicU64::new(0));
            let (stop2, spins2) = (stop.clone(), spins.clone());
            let waiter = rt.spawn(TaskSpec::new(), move || {
                r.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                let t0 = Instant::now();
                let mut r = r;
                let e = r.read(&mut [0u8; 1]).unwrap_err();
                stop2.store(true, Relaxed);
                (e.kind(), t0.elapsed())
            });
            // A hog on the same (only) CPU: it keeps running while the reader is parked.
            let hog = hog(&rt, stop, spins2);
            let (kind, took) = waiter.join().unwrap();
            hog.join().unwrap();
            assert_eq!(kind, std::io::ErrorKind::TimedOut, "{}", p.name());
            assert!(
                took >= Duration::from_millis(50) && took < Duration::from_secs(5),
                "{}: {took:?}",
                p.name()
            );
            assert!(spins.load(Relaxed) > 0, "{}", p.name());
        }
    });
}

#[test]
fn a_refused_connection_and_a_reset_peer_are_errors_not_hangs() {
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt1(p);
            // A port nobody listens on: bind, note it, close.
            let addr = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap();
            let e = rt
                .spawn(TaskSpec::new(), move || TcpStream::connect(addr).err())
                .join()
                .unwrap();
            assert_eq!(
                e.map(|e| e.kind()),
                Some(std::io::ErrorKind::ConnectionRefused),
                "{}",
                p.name()
            );
            // A peer that resets (SO_LINGER 0 then close) while the reader is parked.
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let reader = rt.spawn(TaskSpec::new(), move || {
                let s = TcpStream::connect(addr).unwrap();
                let mut buf = [0u8; 8];
                (&s).read(&mut buf).map_err(|e| e.kind())
            });
            rt.spawn(TaskSpec::new(), move || {
                let (s, _) = l.accept().unwrap();
                socket2::SockRef::from(&s)
                    .set_linger(Some(Duration::ZERO))
                    .unwrap();
                drop(s);
            })
            .join()
            .unwrap();
            assert_eq!(
                reader.join().unwrap(),
                Err(std::io::ErrorKind::ConnectionReset),
                "{}",
                p.name()
            );
        }
    });
}

/// When several tasks become ready together, the policy picks who runs first: four readers
/// parked on one socket (three at nice 19, parked first, and one SCHED_FIFO) are all woken by
/// one event while a hog has the only CPU; the first to run takes the one byte sent.
#[test]
fn the_policy_decides_who_of_the_ready_runs_first() {
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt1(p);
            if !rt.preemptive() {
                // Without preemption the hog must yield, and a yield in the middle of the
                // wakeup batch runs whoever is queued by then.
                skipped(
                    "the_policy_decides_who_of_the_ready_runs_first",
                    &format!("preemption {}", rt.preemption_summary()),
                );
                return;
            }
            // The setup assumes each reader is parked in the driver before the byte comes
            // (10 ms each); on a machine loaded enough that the worker thread does not run for
            // that long, a reader may still be in its first read and take the byte without a
            // wakeup. Such a run proves nothing either way, so it is tried again: a policy
            // that picks wrongly fails every attempt.
            let mut orders = Vec::new();
            for _attempt in 0..3 {
                let first = {
                    let (a, b) = UnixStream::pair().unwrap();
                    let a = Arc::new(a);
                    let order = Arc::new(Mutex::new(Vec::new()));
                    let parked = Arc::new(AtomicUsize::new(0));
                    let stop = Arc::new(AtomicBool::new(false));
                    let mut readers = Vec::new();
                    for i in 0..4 {
                        let spec = if i == 3 {
                            TaskSpec::new().rt_fifo(10)
                        } else {
                            TaskSpec::new().nice(19)
                        };
                        let (a, order, p2) = (a.clone(), order.clone(), parked.clone());
                        readers.push(rt.spawn(spec, move || {
                            p2.fetch_add(1, SeqCst);
                            read_n(&*a, 1);
                            order.lock().unwrap().push(i);
                        }));
                        // In this order: each reaches its read before the next starts.
                        while parked.load(SeqCst) <= i as usize {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    let hog = hog(&rt, stop.clone(), Arc::new(AtomicU64::new(0)));
                    std::thread::sleep(Duration::from_millis(5));
                    (&b).write_all(b"x").unwrap();
                    while order.lock().unwrap().is_empty() {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    // The others take one byte each.
                    (&b).write_all(b"yyy").unwrap();
                    for r in readers {
                        r.join().unwrap();
                    }
                    stop.store(true, Relaxed);
                    hog.join().unwrap();
                    let order = order.lock().unwrap().clone();
                    order
                };
                let done = first.first() == Some(&3);
                orders.push(first);
                if done {
                    break;
                }
            }
            assert_eq!(
                orders.last().and_then(|o| o.first()),
                Some(&3),
                "{}: the SCHED_FIFO reader (3) never ran first: {orders:?}",
                p.name()
            );
        }
    });
}

#[test]
fn spawn_blocking_runs_elsewhere_returns_and_resumes_panics() {
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt1(p);
            let stop = Arc::new(AtomicBool::new(false));
            let spins = Arc::new(AtomicU64::new(0));
            let hog = hog(&rt, stop.clone(), spins.clone());
            let r = rt
                .spawn(TaskSpec::new(), move || {
                    let before = spins.load(Relaxed);
                    let v = spawn_blocking(|| {
                        std::thread::sleep(Duration::from_millis(30));
                        std::fs::read_to_string("/proc/self/stat").map(|s| s.len())
                    });
                    stop.store(true, Relaxed);
                    (v.unwrap() > 0, spins.load(Relaxed) > before)
                })
                .join()
                .unwrap();
            hog.join().unwrap();
            // The hog ran on the only CPU while the caller waited for the helper.
            assert_eq!(r, (true, true), "{}", p.name());
            let e = rt
                .spawn(TaskSpec::new(), || {
                    spawn_blocking(|| -> u8 { panic!("helper") })
                })
                .join();
            assert!(
                matches!(e, Err(crate::runtime::JoinError::Panicked(ref m)) if m.contains("helper")),
                "{}: {e:?}",
                p.name()
            );
        }
    });
}

#[test]
fn an_async_task_and_a_plain_thread_use_the_same_objects() {
    within(60, || {
        let rt = rt1(Policy::Eevdf);
        let (a, b) = UnixStream::pair().unwrap();
        let t = rt.spawn_future(TaskSpec::new(), async move {
            let got = read_n(&a, 4);
            (&a).write_all(b"pong").unwrap();
            got
        });
        // This thread is no task: its calls block it.
        (&b).write_all(b"ping").unwrap();
        assert_eq!(read_n(&b, 4), b"pong");
        assert_eq!(t.join().unwrap(), b"ping");
    });
}

/// Raises this process's descriptor limit to its hard limit (upward only: harmless to the
/// other tests) and returns the soft limit now in force.
fn raise_nofile() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reading and raising this process's own limit through locals.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        if lim.rlim_cur < lim.rlim_max {
            let up = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &up) == 0 {
                lim = up;
            }
        }
    }
    lim.rlim_cur as usize
}

/// 10 000 idle connections (two descriptors each, on loopback), each with a task parked in
/// `read`: a short task still runs at once, and every reader sees its peer's close. Fewer when
/// the descriptor limit cannot be raised that far, said in the output.
#[test]
fn many_idle_connections_cost_no_worker() {
    if checked_by_parent("many_idle_connections_cost_no_worker") {
        return;
    }
    within(180, || {
        let rt = Runtime::builder()
            .policy(Policy::Cfs)
            .cpus(2)
            .build()
            .unwrap();
        let limit = raise_nofile();
        let n = 10_000usize.min(limit.saturating_sub(500) / 2);
        if n < 10_000 {
            eprintln!("many_idle_connections: {n} connections (descriptor limit {limit})");
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let served = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (s2, a2) = (served.clone(), accepted.clone());
        let acceptor = rt.spawn(TaskSpec::new(), move || {
            // Each connection gets a task that parks in read until its peer closes.
            let mut hs = Vec::new();
            for _ in 0..n {
                let (s, _) = l.accept().unwrap();
                a2.fetch_add(1, SeqCst);
                let s2 = s2.clone();
                hs.push(crate::runtime::spawn(TaskSpec::new(), move || {
                    let mut buf = [0u8; 1];
                    let n = (&s).read(&mut buf).unwrap();
                    s2.fetch_add(1, SeqCst);
                    n
                }));
            }
            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        });
        // Connections no faster than they are accepted, within the backlog: on two CPUs
        // this thread can take the acceptor's CPU for a slice, and a SYN dropped by a full
        // backlog is retried only after a second.
        let mut clients = Vec::with_capacity(n);
        for i in 0..n {
            while i - accepted.load(SeqCst) >= 512 {
                std::thread::sleep(Duration::from_micros(200));
            }
            clients.push(std::net::TcpStream::connect(addr).unwrap());
        }
        // All parked, none served: a short task still runs at once.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(served.load(SeqCst), 0);
        let t0 = Instant::now();
        rt.spawn(TaskSpec::new(), || ()).join().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(1));
        drop(clients);
        // Every reader sees its peer's close (a read of 0 bytes).
        assert_eq!(acceptor.join().unwrap(), 0);
        assert_eq!(served.load(SeqCst), n);
    });
}

const EMFILE_CHILD: &str = "SCHEDKIT_IO_EMFILE_CHILD";

/// Out of descriptors, `accept` returns `EMFILE` to its caller at once; once descriptors are
/// freed the same listener accepts again and the runtime runs on. In a child process, whose
/// descriptor limit is lowered for it alone.
#[test]
fn emfile_is_an_error_and_the_runtime_goes_on() {
    if checked_by_parent("emfile_is_an_error_and_the_runtime_goes_on") {
        return;
    }
    if std::env::var(EMFILE_CHILD).is_err() {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "runtime::io::tests::emfile_is_an_error_and_the_runtime_goes_on",
                "--exact",
                "--nocapture",
            ])
            .env(EMFILE_CHILD, "1")
            .output()
            .expect("the test binary re-runs itself");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
        return;
    }
    within(60, || {
        let rt = rt1(Policy::Eevdf);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        // The limit: what is open now and 40 more.
        let open = std::fs::read_dir("/proc/self/fd").unwrap().count();
        let lim = libc::rlimit {
            rlim_cur: (open + 40) as libc::rlim_t,
            rlim_max: (open + 40) as libc::rlim_t,
        };
        // SAFETY: lowering this (child) process's own limit.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let acceptor = rt.spawn(TaskSpec::new(), move || {
            let mut kept = Vec::new();
            let err = loop {
                match l.accept() {
                    Ok((s, _)) => kept.push(s),
                    Err(e) => break e,
                }
            };
            // Free the accepted ones; the listener goes on.
            let had = kept.len();
            drop(kept);
            rx.recv().unwrap();
            let again = l.accept().map(|_| ());
            (err.raw_os_error(), had, again.is_ok())
        });
        // Connections until the server runs out (the client side needs descriptors too:
        // std's connect fails first on this side when it does).
        let mut clients = Vec::new();
        for _ in 0..40 {
            match std::net::TcpStream::connect(addr) {
                Ok(c) => clients.push(c),
                Err(_) => break,
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(100));
        drop(clients);
        std::thread::sleep(Duration::from_millis(50));
        let _late = std::net::TcpStream::connect(addr).unwrap();
        tx.send(()).unwrap();
        let (errno, had, again) = acceptor.join().unwrap();
        assert!(
            errno == Some(libc::EMFILE) || errno == Some(libc::ENFILE),
            "{errno:?} after {had} connections"
        );
        assert!(had > 0 && again, "accepted {had}, then again: {again}");
        // The runtime runs on.
        assert_eq!(rt.spawn(TaskSpec::new(), || 7).join().unwrap(), 7);
    });
}

/// One async task waits on two sockets at once through the `futures_io` traits: the one that
/// becomes ready first is the one it reads.
#[test]
fn an_async_task_waits_on_two_sockets_at_once() {
    use futures_io::{AsyncRead, AsyncWrite};
    use std::pin::Pin;
    use std::task::Poll;
    within(60, || {
        for &p in Policy::ALL {
            let rt = rt1(p);
            let (mut a, a_peer) = UnixStream::pair().unwrap();
            let (mut b, b_peer) = UnixStream::pair().unwrap();
            let t = rt.spawn_future(TaskSpec::new(), async move {
                let (mut x, mut y) = ([0u8; 1], [0u8; 1]);
                let first = std::future::poll_fn(|cx| {
                    if let Poll::Ready(r) = Pin::new(&mut a).poll_read(cx, &mut x) {
                        return Poll::Ready(("a", r.unwrap(), x[0]));
                    }
                    if let Poll::Ready(r) = Pin::new(&mut b).poll_read(cx, &mut y) {
                        return Poll::Ready(("b", r.unwrap(), y[0]));
                    }
                    Poll::Pending
                })
                .await;
                let n = std::future::poll_fn(|cx| Pin::new(&mut b).poll_write(cx, b"!")).await;
                (first, n.unwrap())
            });
            std::thread::sleep(Duration::from_millis(20));
            // Only b's peer writes: the task wakes for b and answers on it.
            (&b_peer).write_all(b"B").unwrap();
            assert_eq!(read_n(&b_peer, 1), b"!");
            assert_eq!(t.join().unwrap(), (("b", 1, b'B'), 1), "{}", p.name());
            drop(a_peer);
        }
    });
}

/// The same objects under another executor: a minimal `block_on` whose waker unparks its
/// thread, woken by the driver.
#[test]
fn the_async_traits_work_under_another_executor() {
    use futures_io::AsyncRead;
    use std::pin::Pin;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    within(30, || {
        let (r, mut w) = pipe().unwrap();
        let mut r = r;
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            w.write_all(b"xyz").unwrap();
        });
        let mut buf = [0u8; 8];
        let mut pendings = 0;
        let n = loop {
            match Pin::new(&mut r).poll_read(&mut cx, &mut buf) {
                Poll::Ready(n) => break n.unwrap(),
                Poll::Pending => {
                    pendings += 1;
                    std::thread::park();
                }
            }
        };
        writer.join().unwrap();
        assert_eq!(&buf[..n], b"xyz");
        assert!(pendings >= 1, "the first poll found the pipe empty");
    });
}

/// Timeouts at the edges: zero is refused as `std` refuses it, one too long to add to the
/// clock is no timeout (no panic).
#[test]
fn timeouts_at_the_edges_are_refused_or_unbounded() {
    within(30, || {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let e = TcpStream::connect_timeout(&addr, Duration::ZERO).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        let s = TcpStream::connect_timeout(&addr, Duration::MAX).unwrap();
        let (peer, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::MAX)).unwrap();
        assert!(s.set_read_timeout(Some(Duration::ZERO)).is_err());
        let mut p = peer;
        p.write_all(b"z").unwrap();
        assert_eq!(read_n(&s, 1), b"z");
    });
}

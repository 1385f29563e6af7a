//! Every I/O type parks the task, not its worker: each test runs on a one-CPU runtime, where a
//! worker blocked in a system call would leave the peer task no CPU and the test would hang
//! (the watchdog fails it instead). Each runs under every policy.

use super::*;
use crate::runtime::{Policy, Runtime, TaskSpec};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Mutex;

fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("test did not finish within {secs} s (a worker blocked in I/O?)"),
    }
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
            assert_eq!(order.lock().unwrap()[0], 3, "{}: {:?}", p.name(), order);
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

#[test]
fn many_idle_connections_cost_no_worker() {
    within(120, || {
        let rt = Runtime::builder()
            .policy(Policy::Cfs)
            .cpus(2)
            .build()
            .unwrap();
        // Bounded by the descriptor limit: two descriptors per connection, some to spare.
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: reading this process's limit into a local.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
        let n = 1_000usize.min((lim.rlim_cur as usize).saturating_sub(200) / 2);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let served = Arc::new(AtomicUsize::new(0));
        let s2 = served.clone();
        let acceptor = rt.spawn(TaskSpec::new(), move || {
            let mut conns = Vec::new();
            for _ in 0..n {
                conns.push(l.accept().unwrap().0);
            }
            // Each connection gets a task that parks in read until its peer closes.
            let mut hs = Vec::new();
            for (s, _) in conns.into_iter().zip(0..) {
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
        let clients: Vec<_> = (0..n)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // All parked, none served: a short task still runs at once.
        std::thread::sleep(Duration::from_millis(50));
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

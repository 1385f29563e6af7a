//! OS threads, scheduled by the running Linux kernel (CFS or EEVDF), with std's channels and
//! std/parking_lot mutexes.

use super::super::{row, spin, wakeup_rows, Opts, Row};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn run(w: &str, o: &Opts) -> Vec<Row> {
    let (n, d) = (o.cpus, o.duration);
    let mut out = Vec::new();
    match w {
        "yield" => {
            let stop = Arc::new(AtomicBool::new(false));
            let hs: Vec<_> = (0..2 * n)
                .map(|_| {
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        let mut k = 0u64;
                        while !stop.load(Relaxed) {
                            std::thread::yield_now();
                            k += 1;
                        }
                        k
                    })
                })
                .collect();
            std::thread::sleep(d);
            stop.store(true, Relaxed);
            let total: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
            out.push(row(
                w,
                "os-threads",
                "-",
                total as f64 / d.as_secs_f64() / n as f64,
                "yields/s/core",
                true,
            ));
        }
        "pingpong" => {
            let stop = Arc::new(AtomicBool::new(false));
            let mut hs = Vec::new();
            for _ in 0..n {
                let (atx, arx) = std::sync::mpsc::sync_channel::<u64>(1);
                let (btx, brx) = std::sync::mpsc::sync_channel::<u64>(1);
                std::thread::spawn(move || {
                    while let Ok(v) = arx.recv() {
                        if btx.send(v + 1).is_err() {
                            break;
                        }
                    }
                });
                let stop = stop.clone();
                hs.push(std::thread::spawn(move || {
                    let mut k = 0u64;
                    while !stop.load(Relaxed) {
                        atx.send(k).unwrap();
                        brx.recv().unwrap();
                        k += 1;
                    }
                    k
                }));
            }
            std::thread::sleep(d);
            stop.store(true, Relaxed);
            let total: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
            out.push(row(
                w,
                "os-threads",
                "-",
                d.as_secs_f64() * n as f64 / total.max(1) as f64 * 1e9,
                "ns/round trip",
                false,
            ));
        }
        "chat" => {
            let (rooms, users, msgs) = (5 * n, 5usize, 200usize);
            let start = Instant::now();
            let mut hs = Vec::new();
            for _ in 0..rooms {
                let chans: Vec<_> = (0..users)
                    .map(|_| std::sync::mpsc::sync_channel::<usize>(64))
                    .collect();
                let senders: Vec<_> = chans.iter().map(|c| c.0.clone()).collect();
                for (me, (_, rx)) in chans.into_iter().enumerate() {
                    hs.push(std::thread::spawn(move || {
                        for _ in 0..msgs * (users - 1) {
                            rx.recv().unwrap();
                        }
                    }));
                    let senders = senders.clone();
                    hs.push(std::thread::spawn(move || {
                        for m in 0..msgs {
                            for (o, s) in senders.iter().enumerate() {
                                if o != me {
                                    s.send(m).unwrap();
                                }
                            }
                        }
                    }));
                }
            }
            for h in hs {
                h.join().unwrap();
            }
            let total = rooms * users * msgs * (users - 1);
            out.push(row(
                w,
                "os-threads",
                "-",
                total as f64 / start.elapsed().as_secs_f64(),
                "msgs/s",
                true,
            ));
        }
        "wakeup" => {
            for nice in [0, 19] {
                let stop = Arc::new(AtomicBool::new(false));
                let loaded = Arc::new(AtomicBool::new(false));
                let (s2, l2) = (stop.clone(), loaded.clone());
                let inter = std::thread::spawn(move || {
                    let mut lat = Vec::new();
                    while !s2.load(Relaxed) {
                        let due = Instant::now() + Duration::from_millis(2);
                        std::thread::sleep(Duration::from_millis(2));
                        if l2.load(Relaxed) {
                            lat.push(
                                Instant::now().saturating_duration_since(due).as_nanos() as f64
                            );
                        }
                    }
                    lat
                });
                std::thread::sleep(super::super::WARMUP);
                let hogs: Vec<_> = (0..2 * n)
                    .map(|_| {
                        let stop = stop.clone();
                        std::thread::spawn(move || {
                            // SAFETY: setpriority on this thread (Linux nice is per thread).
                            unsafe {
                                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as u32, nice)
                            };
                            let mut x = 0u64;
                            while !stop.load(Relaxed) {
                                x = std::hint::black_box(x + 1);
                            }
                        })
                    })
                    .collect();
                loaded.store(true, Relaxed);
                std::thread::sleep(d);
                stop.store(true, Relaxed);
                for h in hogs {
                    h.join().unwrap();
                }
                let mut lat = inter.join().unwrap();
                out.extend(wakeup_rows(
                    &format!("wakeup-nice{nice}"),
                    "os-threads",
                    "-",
                    &mut lat,
                ));
            }
        }
        "spawn" => {
            let k = 2000u32;
            let t = Instant::now();
            for i in 0..k {
                std::thread::spawn(move || i).join().unwrap();
            }
            out.push(row(
                w,
                "os-threads",
                "-",
                t.elapsed().as_nanos() as f64 / k as f64,
                "ns/spawn+join",
                false,
            ));
        }
        "lock" => {
            out.push(lock_bench(o, "std::Mutex", std::sync::Mutex::new(())));
            out.push(lock_bench(
                o,
                "parking_lot::Mutex",
                parking_lot::Mutex::new(()),
            ));
        }
        _ => {}
    }
    out
}

/// A mutex the lock benchmark can hold around a closure.
pub trait Held: Send + Sync + 'static {
    fn with(&self, f: impl FnOnce());
}
impl Held for std::sync::Mutex<()> {
    fn with(&self, f: impl FnOnce()) {
        let _g = self.lock().unwrap();
        f()
    }
}
impl Held for parking_lot::Mutex<()> {
    fn with(&self, f: impl FnOnce()) {
        let _g = self.lock();
        f()
    }
}

/// 4 threads per core, each: take the lock, ~100 iterations of work inside, ~200 outside
/// (the same loop the schedkit semaphores run).
fn lock_bench<L: Held>(o: &Opts, name: &str, lock: L) -> Row {
    let lock = Arc::new(lock);
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..4 * o.cpus)
        .map(|_| {
            let (lock, stop, count) = (lock.clone(), stop.clone(), count.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    lock.with(|| {
                        count.fetch_add(1, Relaxed);
                        spin(100);
                    });
                    spin(200);
                }
            })
        })
        .collect();
    std::thread::sleep(o.duration);
    stop.store(true, Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    row(
        "lock",
        "os-threads",
        name,
        count.load(Relaxed) as f64 / o.duration.as_secs_f64(),
        "acquisitions/s",
        true,
    )
}

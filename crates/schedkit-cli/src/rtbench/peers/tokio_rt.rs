//! Tokio's multi-threaded runtime (work stealing, LIFO slot, cooperative budget; no
//! priorities, no preemption), with its own channels and timers.

use super::super::{row, wakeup_rows, Opts, Row};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn runtime(n: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(n)
        .enable_time()
        .build()
        .expect("tokio runtime")
}

pub fn run(w: &str, o: &Opts) -> Vec<Row> {
    let (n, d) = (o.cpus, o.duration);
    let rt = runtime(n);
    let mut out = Vec::new();
    match w {
        "yield" => {
            let stop = Arc::new(AtomicBool::new(false));
            let hs: Vec<_> = (0..2 * n)
                .map(|_| {
                    let stop = stop.clone();
                    rt.spawn(async move {
                        let mut k = 0u64;
                        while !stop.load(Relaxed) {
                            tokio::task::yield_now().await;
                            k += 1;
                        }
                        k
                    })
                })
                .collect();
            std::thread::sleep(d);
            stop.store(true, Relaxed);
            let total: u64 = rt.block_on(async {
                let mut t = 0;
                for h in hs {
                    t += h.await.unwrap();
                }
                t
            });
            out.push(row(
                w,
                "tokio",
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
                let (atx, mut arx) = tokio::sync::mpsc::channel::<u64>(1);
                let (btx, mut brx) = tokio::sync::mpsc::channel::<u64>(1);
                rt.spawn(async move {
                    while let Some(v) = arx.recv().await {
                        if btx.send(v + 1).await.is_err() {
                            break;
                        }
                    }
                });
                let stop = stop.clone();
                hs.push(rt.spawn(async move {
                    let mut k = 0u64;
                    while !stop.load(Relaxed) {
                        atx.send(k).await.unwrap();
                        brx.recv().await.unwrap();
                        k += 1;
                    }
                    k
                }));
            }
            std::thread::sleep(d);
            stop.store(true, Relaxed);
            let total: u64 = rt.block_on(async {
                let mut t = 0;
                for h in hs {
                    t += h.await.unwrap();
                }
                t
            });
            out.push(row(
                w,
                "tokio",
                "-",
                d.as_secs_f64() * n as f64 / total.max(1) as f64 * 1e9,
                "ns/round trip",
                false,
            ));
        }
        "chat" => {
            let (rooms, users, msgs) = (5 * n, 5usize, 200usize);
            let start = Instant::now();
            rt.block_on(async {
                let mut hs = Vec::new();
                for _ in 0..rooms {
                    let chans: Vec<_> = (0..users)
                        .map(|_| tokio::sync::mpsc::channel::<usize>(64))
                        .collect();
                    let senders: Vec<_> = chans.iter().map(|c| c.0.clone()).collect();
                    for (me, (_, mut rx)) in chans.into_iter().enumerate() {
                        hs.push(tokio::spawn(async move {
                            for _ in 0..msgs * (users - 1) {
                                rx.recv().await.unwrap();
                            }
                        }));
                        let senders = senders.clone();
                        hs.push(tokio::spawn(async move {
                            for m in 0..msgs {
                                for (o, s) in senders.iter().enumerate() {
                                    if o != me {
                                        s.send(m).await.unwrap();
                                    }
                                }
                            }
                        }));
                    }
                }
                for h in hs {
                    h.await.unwrap();
                }
            });
            let total = rooms * users * msgs * (users - 1);
            out.push(row(
                w,
                "tokio",
                "-",
                total as f64 / start.elapsed().as_secs_f64(),
                "msgs/s",
                true,
            ));
        }
        "wakeup" => {
            // Tokio has no nice levels: one run, hogs that never yield (tokio#4730).
            let stop = Arc::new(AtomicBool::new(false));
            let loaded = Arc::new(AtomicBool::new(false));
            let (s2, l2) = (stop.clone(), loaded.clone());
            let inter = rt.spawn(async move {
                let mut lat = Vec::new();
                while !s2.load(Relaxed) {
                    let due = Instant::now() + Duration::from_millis(2);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    if l2.load(Relaxed) {
                        lat.push(Instant::now().saturating_duration_since(due).as_nanos() as f64);
                    }
                }
                lat
            });
            std::thread::sleep(super::super::WARMUP);
            let hogs: Vec<_> = (0..2 * n)
                .map(|_| {
                    let stop = stop.clone();
                    rt.spawn(async move {
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
            let mut lat = rt.block_on(async {
                for h in hogs {
                    h.await.unwrap();
                }
                inter.await.unwrap()
            });
            out.extend(wakeup_rows("wakeup-nice0", "tokio", "-", &mut lat));
        }
        "spawn" => {
            let k = 20_000u32;
            let per = rt.block_on(async move {
                tokio::spawn(async move {
                    let t = Instant::now();
                    for i in 0..k {
                        tokio::spawn(async move { i }).await.unwrap();
                    }
                    t.elapsed().as_nanos() as f64 / k as f64
                })
                .await
                .unwrap()
            });
            out.push(row(w, "tokio", "-", per, "ns/spawn+join", false));
        }
        _ => {}
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    out
}

//! Async code under a real scheduler policy: three CPU-bound futures on one worker, one at
//! nice -10 and two at nice 0, under EEVDF. Each future awaits now and then (as async code
//! does); between awaits the runtime's tick still preempts it. The nice -10 future gets its
//! weighted share: prio_to_weight gives 9548 : 1024 : 1024, i.e. 82 % / 9 % / 9 % of the CPU.
//!
//! Then a future at SCHED_FIFO priority 50 that waits for a message is woken in the middle of
//! those hogs and runs at once (wakeup preemption), which an executor that only switches at
//! `.await` cannot offer.
//!
//! Run with `cargo run --release -p schedkit --example async_nice`.

use schedkit::runtime::{current_info, yield_now_async, Policy, Runtime, TaskSpec};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

fn main() {
    let rt = Runtime::builder()
        .policy(Policy::Eevdf)
        .cpus(1)
        .build()
        .expect("runtime");
    println!(
        "policy {}, preemption {}",
        rt.policy().name(),
        rt.preemption_summary()
    );

    let stop = Arc::new(AtomicBool::new(false));
    let hogs: Vec<_> = [-10, 0, 0]
        .into_iter()
        .map(|nice| {
            let stop = stop.clone();
            let h = rt.spawn_future(TaskSpec::new().nice(nice), async move {
                let mut n = 0u64;
                while !stop.load(Relaxed) {
                    n = std::hint::black_box(n + 1);
                    if n.is_multiple_of(4096) {
                        yield_now_async().await;
                    }
                }
                current_info().expect("in a task").3
            });
            (nice, h)
        })
        .collect();

    // An RT future waiting for a message sent from this (OS) thread.
    let mailbox: Arc<Mutex<(Option<Instant>, Option<Waker>)>> = Arc::default();
    let mb = mailbox.clone();
    let rt_task = rt.spawn_future(TaskSpec::new().rt_fifo(50), async move {
        let sent = std::future::poll_fn(|cx| {
            let mut g = mb.lock().unwrap();
            match g.0 {
                Some(t) => Poll::Ready(t),
                None => {
                    g.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await;
        sent.elapsed()
    });
    std::thread::sleep(Duration::from_millis(500));
    let waker = {
        let mut g = mailbox.lock().unwrap();
        g.0 = Some(Instant::now());
        g.1.take()
    };
    if let Some(w) = waker {
        w.wake();
    }
    let latency = rt_task.join().expect("rt future");
    println!("SCHED_FIFO future ran {latency:?} after its message, with three hogs on the CPU");

    std::thread::sleep(Duration::from_millis(1000));
    stop.store(true, Relaxed);
    let cpu: Vec<(i32, u64)> = hogs
        .into_iter()
        .map(|(nice, h)| (nice, h.join().expect("hog")))
        .collect();
    let total: u64 = cpu.iter().map(|c| c.1).sum();
    for (nice, ns) in &cpu {
        println!(
            "nice {nice:>3}: {:>6.1} ms of CPU, {:>5.1} %",
            *ns as f64 / 1e6,
            100.0 * *ns as f64 / total as f64
        );
    }
}

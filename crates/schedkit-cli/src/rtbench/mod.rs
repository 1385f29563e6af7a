//! `schedkit bench runtime`: the same workloads on the schedkit runtime (under each policy)
//! and, in the same run, on the peers a user would pick instead: OS threads scheduled by the
//! Linux kernel, Tokio's multi-threaded runtime, and Go's goroutines when a Go toolchain is on
//! the PATH. Every figure is measured here, now; nothing is quoted.

mod peers;
pub mod rtmigrate;
pub mod server;

use anyhow::{bail, Result};
use schedkit::runtime::{self as skrt, LockMode, Policy, Runtime, TaskSpec};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One measured figure.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub workload: String,
    /// `schedkit`, `os-threads`, `tokio` or `go`.
    pub runner: String,
    /// The schedkit policy, the lock used, or `-`.
    pub policy: String,
    pub value: f64,
    pub unit: String,
    /// Whether a larger value is better.
    #[serde(skip)]
    pub higher_is_better: bool,
}

pub const WORKLOADS: &[&str] = &[
    "yield",
    "pingpong",
    "chat",
    "wakeup",
    "spawn",
    "lock",
    "rtmigrate",
    "server",
    "soak",
];
pub const RUNNERS: &[&str] = &["schedkit", "os-threads", "tokio", "go"];

pub struct Opts {
    pub cpus: usize,
    pub duration: Duration,
    pub workloads: Vec<String>,
    pub runners: Vec<String>,
    /// The schedkit runner's policies.
    pub policies: Vec<Policy>,
}

/// `--policies`: names as `schedkit policies` lists them; none given means every policy.
pub fn parse_policies(names: &[String]) -> Result<Vec<Policy>> {
    if names.is_empty() {
        return Ok(Policy::ALL.to_vec());
    }
    names
        .iter()
        .map(|n| Policy::parse(n).map_err(|e| anyhow::anyhow!("--policies: {e}")))
        .collect()
}

pub fn validate(o: &Opts) -> Result<()> {
    if o.cpus == 0 || o.cpus > 64 {
        bail!("--cpus: give 1 to 64 workers (got {})", o.cpus);
    }
    if o.duration < Duration::from_millis(50) || o.duration > Duration::from_secs(60) {
        bail!("--duration: give 50ms to 60s per measurement");
    }
    for w in &o.workloads {
        if !WORKLOADS.contains(&w.as_str()) {
            bail!(
                "--workloads: unknown workload '{w}' (known: {})",
                WORKLOADS.join(", ")
            );
        }
    }
    if let Some((policy, prio, ncpus)) = rt_starvation(o.cpus) {
        bail!(
            "--cpus {}: this process runs under {policy} (priority {prio}) and may use {ncpus} \
             CPU(s): {} busy workers of one RT priority would never leave a CPU to the thread \
             that ends each measurement (RT threads of one priority are not time-sliced), and \
             the run would not end. {}",
            o.cpus,
            o.cpus,
            if ncpus > 1 {
                format!("Give --cpus {} or fewer, or run without chrt", ncpus - 1)
            } else {
                "Run it without chrt".to_string()
            }
        );
    }
    for r in &o.runners {
        if !RUNNERS.contains(&r.as_str()) {
            bail!(
                "--runners: unknown runner '{r}' (known: {})",
                RUNNERS.join(", ")
            );
        }
    }
    Ok(())
}

/// Whether `cpus` busy workers would starve the benchmark's own threads: this process runs
/// under SCHED_FIFO or SCHED_RR (which the workers inherit) and may use no more than `cpus`
/// CPUs. Returns the policy's name, its priority and the CPUs the process may use.
fn rt_starvation(cpus: usize) -> Option<(&'static str, i32, usize)> {
    // SAFETY: plain queries of the calling thread's scheduling policy and affinity.
    let policy = unsafe { libc::sched_getscheduler(0) };
    let name = match policy {
        libc::SCHED_FIFO => "SCHED_FIFO",
        libc::SCHED_RR => "SCHED_RR",
        _ => return None,
    };
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: as above, into a local.
    unsafe { libc::sched_getparam(0, &mut param) };
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cpus >= ncpus).then_some((name, param.sched_priority, ncpus))
}

fn row(w: &str, runner: &str, policy: &str, value: f64, unit: &str, hib: bool) -> Row {
    Row {
        workload: w.into(),
        runner: runner.into(),
        policy: policy.into(),
        value,
        unit: unit.into(),
        higher_is_better: hib,
    }
}

pub fn run(o: &Opts, progress: &dyn Fn(&str)) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let go = if o.runners.iter().any(|r| r == "go") {
        progress("building the Go peer");
        peers::go::Peer::build()
    } else {
        None
    };
    for w in &o.workloads {
        for r in &o.runners {
            progress(&format!("{w} on {r}"));
            match r.as_str() {
                "schedkit" => {
                    if w == "yield" {
                        // The floor: two bare switches, no policy, no lock.
                        let ns = skrt::raw_switch_round_trip_ns(10_000_000);
                        rows.push(row(
                            w,
                            "schedkit",
                            "raw switch",
                            1e9 / ns,
                            "yields/s/core",
                            true,
                        ));
                    }
                    if w == "rtmigrate" {
                        rows.extend(rtmigrate_rows(o)?);
                        continue;
                    }
                    if w == "soak" {
                        for &p in &o.policies {
                            progress(&format!("soak on schedkit {}", p.name()));
                            rows.extend(server::soak(p, o)?);
                        }
                        continue;
                    }
                    if w == "server" {
                        for &p in &o.policies {
                            progress(&format!("server on schedkit {}", p.name()));
                            rows.extend(server::schedkit(p, o)?);
                        }
                        continue;
                    }
                    for &p in &o.policies {
                        rows.extend(schedkit_run(w, p, o)?);
                    }
                }
                // The soak test is the runtime's own.
                _ if w == "soak" => {}
                "os-threads" if w == "server" => rows.extend(server::threads(o)),
                "tokio" if w == "server" => rows.extend(server::tokio(o)),
                "go" if w == "server" => {
                    if let Some(g) = &go {
                        rows.extend(g.server(o));
                    }
                }
                "os-threads" => rows.extend(peers::threads::run(w, o)),
                "tokio" => rows.extend(peers::tokio_rt::run(w, o)),
                "go" => {
                    if let Some(g) = &go {
                        rows.extend(g.run(w, o));
                    }
                }
                _ => unreachable!("validated"),
            }
        }
    }
    Ok(rows)
}

/// rt-migrate-test on the runtime, under the per-CPU designs whose RT tasks sit in the stacked
/// RT class (O(1) and EEVDF), with each RT balancing mode.
fn rtmigrate_rows(o: &Opts) -> Result<Vec<Row>> {
    let loops = 20;
    let mut out = Vec::new();
    for p in [Policy::O1, Policy::Eevdf] {
        for (mode, label) in [
            (skrt::RtBalance::Passive, "passive"),
            (skrt::RtBalance::PushPull, "pushpull"),
        ] {
            let Some(r) = rtmigrate::run(p, mode, o.cpus, loops)? else {
                continue;
            };
            let policy = format!("{} {label}", p.name());
            out.push(row(
                "rtmigrate",
                "schedkit",
                &policy,
                r.failed_iterations as f64,
                &format!("failed of {}", r.iterations.len()),
                false,
            ));
            out.push(row(
                "rtmigrate/highest",
                "schedkit",
                &policy,
                r.worst_start_delay_highest_us,
                "µs worst start",
                false,
            ));
        }
    }
    Ok(out)
}

/// What the schedkit runtime's preemption does on this machine (how registers are saved, or
/// why it is off), from a runtime built as the benchmark builds them.
pub fn preemption_summary(cpus: usize) -> String {
    match Runtime::builder().policy(Policy::O1).cpus(cpus).build() {
        Ok(rt) => rt.preemption_summary(),
        Err(e) => format!("unknown (the runtime does not build: {e})"),
    }
}

/// Percentiles of latencies in ns.
pub fn pct(v: &mut [f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
    (q(0.5), q(0.99), v[v.len() - 1])
}

pub fn wakeup_rows(w: &str, runner: &str, policy: &str, lat: &mut [f64]) -> Vec<Row> {
    let (p50, p99, max) = pct(lat);
    vec![
        row(
            &format!("{w}/p50"),
            runner,
            policy,
            p50 / 1e3,
            "µs late",
            false,
        ),
        row(
            &format!("{w}/p99"),
            runner,
            policy,
            p99 / 1e3,
            "µs late",
            false,
        ),
        row(
            &format!("{w}/max"),
            runner,
            policy,
            max / 1e3,
            "µs late",
            false,
        ),
    ]
}

fn schedkit_run(w: &str, p: Policy, o: &Opts) -> Result<Vec<Row>> {
    let rt = Runtime::builder().policy(p).cpus(o.cpus).build()?;
    let name = p.name();
    let n = o.cpus;
    let d = o.duration;
    let mut out = Vec::new();
    match w {
        "yield" => {
            let stop = Arc::new(AtomicBool::new(false));
            let hs: Vec<_> = (0..2 * n)
                .map(|_| {
                    let stop = stop.clone();
                    rt.spawn(TaskSpec::new(), move || {
                        let mut k = 0u64;
                        while !stop.load(Relaxed) {
                            skrt::yield_now();
                            k += 1;
                        }
                        k
                    })
                })
                .collect();
            std::thread::sleep(d);
            stop.store(true, Relaxed);
            let total: u64 = hs.into_iter().map(|h| h.join().unwrap_or(0)).sum();
            out.push(row(
                w,
                "schedkit",
                name,
                total as f64 / d.as_secs_f64() / n as f64,
                "yields/s/core",
                true,
            ));
        }
        "pingpong" => {
            // Pair i on worker i (the message never leaves its CPU), then, with two or more
            // workers, the echo on worker i and the sender on worker i+1 (every message is a
            // cross-CPU wakeup). Affinity pins them, so balancing cannot turn one case into
            // the other.
            let layouts: &[(&str, usize)] = if n >= 2 {
                &[("same cpu", 0), ("cross cpu", 1)]
            } else {
                &[("same cpu", 0)]
            };
            for &(label, shift) in layouts {
                let stop = Arc::new(AtomicBool::new(false));
                let mut hs = Vec::new();
                for i in 0..n {
                    let (atx, arx) = skrt::channel::<u64>(1);
                    let (btx, brx) = skrt::channel::<u64>(1);
                    rt.spawn(TaskSpec::new().affinity([i]), move || {
                        while let Ok(v) = arx.recv() {
                            if btx.send(v + 1).is_err() {
                                break;
                            }
                        }
                    });
                    let stop = stop.clone();
                    hs.push(
                        rt.spawn(TaskSpec::new().affinity([(i + shift) % n]), move || {
                            let mut k = 0u64;
                            while !stop.load(Relaxed) {
                                atx.send(k).unwrap();
                                brx.recv().unwrap();
                                k += 1;
                            }
                            k
                        }),
                    );
                }
                std::thread::sleep(d);
                stop.store(true, Relaxed);
                let total: u64 = hs.into_iter().map(|h| h.join().unwrap_or(0)).sum();
                out.push(row(
                    w,
                    "schedkit",
                    &format!("{name} {label}"),
                    d.as_secs_f64() * n as f64 / total.max(1) as f64 * 1e9,
                    "ns/round trip",
                    false,
                ));
            }
        }
        "chat" => {
            let (rooms, users, msgs) = (5 * n, 5usize, 200usize);
            let start = Instant::now();
            let mut hs = Vec::new();
            for _ in 0..rooms {
                let chans: Vec<_> = (0..users).map(|_| skrt::channel::<usize>(64)).collect();
                let senders: Vec<_> = chans.iter().map(|c| c.0.clone()).collect();
                for (me, (_, rx)) in chans.into_iter().enumerate() {
                    hs.push(rt.spawn(TaskSpec::new(), move || {
                        for _ in 0..msgs * (users - 1) {
                            rx.recv().unwrap();
                        }
                    }));
                    let senders = senders.clone();
                    hs.push(rt.spawn(TaskSpec::new(), move || {
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
                h.join().map_err(|e| anyhow::anyhow!("{e}"))?;
            }
            let total = rooms * users * msgs * (users - 1);
            out.push(row(
                w,
                "schedkit",
                name,
                total as f64 / start.elapsed().as_secs_f64(),
                "msgs/s",
                true,
            ));
        }
        "wakeup" => {
            for nice in [0, 19] {
                let mut lat = wakeup_schedkit(&rt, nice, d);
                out.extend(wakeup_rows(
                    &format!("wakeup-nice{nice}"),
                    "schedkit",
                    name,
                    &mut lat,
                ));
            }
        }
        "spawn" => {
            let k = 20_000u32;
            let per = rt
                .spawn(TaskSpec::new(), move || {
                    let t = Instant::now();
                    for i in 0..k {
                        skrt::spawn(TaskSpec::new(), move || i).join().unwrap();
                    }
                    t.elapsed().as_nanos() as f64 / k as f64
                })
                .join()
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            out.push(row(w, "schedkit", name, per, "ns/spawn+join", false));
        }
        "lock" => {
            for mode in [LockMode::Handoff, LockMode::Opportunistic] {
                let sem = Arc::new(skrt::Semaphore::new(1, mode));
                let stop = Arc::new(AtomicBool::new(false));
                let count = Arc::new(AtomicU64::new(0));
                let hs: Vec<_> = (0..4 * n)
                    .map(|_| {
                        let (sem, stop, count) = (sem.clone(), stop.clone(), count.clone());
                        rt.spawn(TaskSpec::new(), move || {
                            while !stop.load(Relaxed) {
                                sem.down();
                                count.fetch_add(1, Relaxed);
                                spin(100);
                                sem.up();
                                spin(200);
                            }
                        })
                    })
                    .collect();
                std::thread::sleep(d);
                stop.store(true, Relaxed);
                for h in hs {
                    let _ = h.join();
                }
                out.push(row(
                    w,
                    "schedkit",
                    &format!("{name} sem-{}", mode.name()),
                    count.load(Relaxed) as f64 / d.as_secs_f64(),
                    "acquisitions/s",
                    true,
                ));
            }
        }
        _ => {}
    }
    drop(rt);
    Ok(out)
}

/// Busy work of about `iters` loop iterations (the lock benchmark's critical section).
#[inline(never)]
pub fn spin(iters: u64) {
    let mut x = 0u64;
    for i in 0..iters {
        x = std::hint::black_box(x.wrapping_add(i));
    }
}

fn wakeup_schedkit(rt: &Runtime, nice: i32, d: Duration) -> Vec<f64> {
    // The interactive task runs alone first (WARMUP), as an editor would have before the
    // compile starts: under O(1) that is how it earns its sleep_avg bonus. Only wakeups that
    // end after the hogs started are recorded.
    let stop = Arc::new(AtomicBool::new(false));
    let loaded = Arc::new(AtomicBool::new(false));
    let (s2, l2) = (stop.clone(), loaded.clone());
    let inter = rt.spawn(TaskSpec::new(), move || {
        let mut lat = Vec::new();
        while !s2.load(Relaxed) {
            let due = Instant::now() + Duration::from_millis(2);
            skrt::sleep(Duration::from_millis(2));
            if l2.load(Relaxed) {
                lat.push(Instant::now().saturating_duration_since(due).as_nanos() as f64);
            }
        }
        lat
    });
    std::thread::sleep(WARMUP);
    let hogs: Vec<_> = (0..2 * rt.cpus())
        .map(|_| {
            let stop = stop.clone();
            rt.spawn(TaskSpec::new().nice(nice), move || {
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
        let _ = h.join();
    }
    inter.join().unwrap_or_default()
}

/// How long the interactive task of `wakeup` runs alone before the hogs start.
pub const WARMUP: Duration = Duration::from_millis(300);

/// The table: each figure with its ratio to the OS-threads figure of the same row, oriented
/// so that > 1 means better than OS threads.
pub fn table(rows: &[Row], cpus: usize, preemption: &str) -> String {
    let mut s = format!(
        "{:<20} {:<11} {:<28} {:>14} {:<15} {:>9} {:>9}\n",
        "workload", "runner", "policy", "value", "unit", "vs os-thr", "vs tokio"
    );
    // The first row of `runner` for the same workload (for `lock`, std::Mutex), as the ratio
    // oriented so that > 1 means better than that runner.
    let ratio_to = |r: &Row, runner: &str| -> String {
        rows.iter()
            .find(|b| b.workload == r.workload && b.runner == runner)
            .map(|b| {
                if r.higher_is_better {
                    r.value / b.value
                } else {
                    b.value / r.value
                }
            })
            .filter(|x| x.is_finite())
            .map_or("-".into(), |x| format!("{x:.2}x"))
    };
    for r in rows {
        s += &format!(
            "{:<20} {:<11} {:<28} {:>14.1} {:<15} {:>9} {:>9}\n",
            r.workload,
            r.runner,
            r.policy,
            r.value,
            r.unit,
            ratio_to(r, "os-threads"),
            ratio_to(r, "tokio"),
        );
    }
    s += &format!(
        "\n{cpus} workers/threads/Ps; ratios > 1 are better than OS threads (Tokio). Tokio and OS \
         threads cannot pin a pingpong pair to one worker: their one figure is compared with both \
         of schedkit's.\n"
    );
    s += &format!("schedkit runtime preemption: {preemption}\n");
    s
}

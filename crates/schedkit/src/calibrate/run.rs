//! The calibration run: what is measured in which order, and how the raw timings are
//! described.

use super::measure::{self as m, now_ns, on_cpu};
use super::*;
use std::io;

/// How long each figure is measured.
struct Plan {
    reps: usize,
    /// Per run of a timed loop.
    budget_ns: u64,
    /// The busy loop that looks for the tick.
    gaps_ns: u64,
    /// Timer wakeups traced for `timer_wake_exit_ns`.
    timer_wakes: usize,
    /// Bounds of the buffer larger than the LLC.
    mem_min_mb: usize,
    mem_max_mb: usize,
    mem_llc_times: usize,
    /// Per run of a pipe ping-pong.
    pingpong_ns: u64,
    /// Per figure of process operations (fork, exec), timed one by one.
    proc_ns: u64,
    min_ops: usize,
    cow_pages: usize,
}

const DEFAULT: Plan = Plan {
    reps: 7,
    budget_ns: 3_000_000,
    gaps_ns: 600_000_000,
    timer_wakes: 400,
    mem_min_mb: 64,
    mem_max_mb: 256,
    mem_llc_times: 8,
    pingpong_ns: 40_000_000,
    proc_ns: 250_000_000,
    min_ops: 10,
    cow_pages: 1024,
};

const QUICK: Plan = Plan {
    reps: 3,
    budget_ns: 1_000_000,
    gaps_ns: 100_000_000,
    timer_wakes: 100,
    mem_min_mb: 32,
    mem_max_mb: 64,
    mem_llc_times: 2,
    pingpong_ns: 4_000_000,
    proc_ns: 25_000_000,
    min_ops: 3,
    cow_pages: 256,
};

fn read_file(p: &str) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn sys(p: &str) -> Option<String> {
    read_file(p).map(|s| s.trim().to_string())
}

fn count_text(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.1e}", n as f64)
    } else {
        n.to_string()
    }
}

/// "median of 7 runs of 1.2e5 calls".
fn runs(reps: usize, n: u64, what: &str) -> String {
    format!("median of {reps} runs of {} {what}", count_text(n))
}

/// "median of 7 runs of 1.2e5 calls; 2 runs preempted by another task left out".
fn describe(r: &m::Runs, n: u64, what: &str) -> String {
    let mut s = runs(r.kept.len(), n, what);
    if r.all_preempted {
        s.push_str("; every run was preempted by another task");
    } else if r.preempted > 0 {
        let _ = write!(
            s,
            "; {} run{} preempted by another task left out",
            r.preempted,
            if r.preempted == 1 { "" } else { "s" }
        );
    }
    s
}

fn to_fig(r: io::Result<f64>, how: impl FnOnce() -> String) -> Fig {
    match r {
        Ok(v) => fig(v, how()),
        Err(e) => Err(e.to_string()),
    }
}

fn show(progress: &mut dyn FnMut(&str), what: &str, f: &Fig, unit: &str) {
    match f {
        Ok(m) => progress(&format!("{what}: {} {unit}", fmt_float(m.v))),
        Err(e) => progress(&format!("{what}: not measured ({e})")),
    }
}

fn timed(
    plan: &Plan,
    cpu: usize,
    max: u64,
    what: &str,
    f: impl FnMut(u64) -> io::Result<()> + Send,
) -> Fig {
    let r = on_cpu(cpu, || m::per_iter(plan.reps, plan.budget_ns, max, f));
    match r {
        Ok((r, n)) => fig(median(&r.kept), describe(&r, n, what)),
        Err(e) => Err(e.to_string()),
    }
}

/// A process operation timed one by one: the median of all.
fn ops(plan: &Plan, cpu: usize, what: &str, op: impl FnMut() -> io::Result<u64> + Send) -> Fig {
    let r = on_cpu(cpu, || m::per_op(plan.proc_ns, plan.min_ops, 1_000_000, op));
    match r {
        Ok(v) => fig(median(&v), format!("median of {} {what}", v.len())),
        Err(e) => Err(e.to_string()),
    }
}

/// The parent's `fork()` timed call by call (`measure::fork_call`): the median of the
/// calls its child did not preempt, or of all where every one was preempted, as
/// `describe` says of runs.
fn fork_calls(plan: &Plan, cpu: usize, rss: &str) -> Fig {
    let mut preempted = vec![];
    let r = on_cpu(cpu, || {
        m::per_op(plan.proc_ns, plan.min_ops, 1_000_000, || {
            let (ns, p) = m::fork_call()?;
            preempted.push(p);
            Ok(ns)
        })
    });
    match r {
        Ok(v) => {
            let r = m::Runs::of(v, &preempted);
            let mut how = format!(
                "the parent's fork() call alone, median of {} calls each timed from just before it to its return in the parent (the child blocks on a pipe read until reaped after the timing), pinned to CPU {cpu}{rss}",
                r.kept.len()
            );
            if r.all_preempted {
                how.push_str(
                    "; every call lost the CPU before it returned (the child ran first), so each holds two switches and the child's run to its pipe read",
                );
            } else if r.preempted > 0 {
                let _ = write!(
                    how,
                    "; {} call{} that lost the CPU before returning (the child, or another task, ran first) left out",
                    r.preempted,
                    if r.preempted == 1 { "" } else { "s" }
                );
            }
            fig(median(&r.kept), how)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// (idle, total) jiffies of each CPU given, from /proc/stat.
fn cpu_times(cpus: &[usize]) -> Option<Vec<(u64, u64)>> {
    let text = read_file("/proc/stat")?;
    cpus.iter()
        .map(|&c| parse_proc_stat_cpu(&text, c))
        .collect()
}

/// How idle the CPUs were between two `cpu_times`, for a note: "CPU 0 idle 80%, CPU 1
/// idle 85%", and whether one was busy more than half the time.
fn idle_share(cpus: &[usize], t0: &[(u64, u64)], t1: &[(u64, u64)]) -> Option<(String, bool)> {
    let mut text = vec![];
    let mut busy = false;
    for ((c, a), b) in cpus.iter().zip(t0).zip(t1) {
        let total = b.1.saturating_sub(a.1);
        if total < 5 {
            return None;
        }
        let idle = b.0.saturating_sub(a.0) as f64 / total as f64;
        busy |= idle < 0.5;
        text.push(format!("CPU {c} idle {:.0}%", 100.0 * idle));
    }
    Some((text.join(", "), busy))
}

fn kernel_config_hz() -> Option<(u32, String)> {
    use std::io::Read;
    if let Ok(f) = std::fs::File::open("/proc/config.gz") {
        let mut text = String::new();
        if flate2::read::GzDecoder::new(f)
            .read_to_string(&mut text)
            .is_ok()
        {
            if let Some(hz) = parse_config_hz(&text) {
                return Some((hz, format!("/proc/config.gz: CONFIG_HZ={hz}")));
            }
        }
    }
    let release = sys("/proc/sys/kernel/osrelease")?;
    let p = format!("/boot/config-{release}");
    let hz = parse_config_hz(&read_file(&p)?)?;
    Some((hz, format!("{p}: CONFIG_HZ={hz}")))
}

fn jiffies() -> Option<(u64, u64)> {
    let t = now_ns();
    parse_timer_list_jiffies(&read_file("/proc/timer_list")?).map(|j| (j, t))
}

pub fn calibrate(opts: &Options, progress: &mut dyn FnMut(&str)) -> String {
    let plan = if opts.quick { QUICK } else { DEFAULT };
    let started = now_ns();
    let read = |p: &str| sys(p);
    let loadavg = sys("/proc/loadavg")
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_default();
    // How busy other work keeps the CPUs, over a short look before measuring anything.
    let look_ms = if opts.quick { 100 } else { 300 };
    let t0 = read_file("/proc/stat");
    std::thread::sleep(std::time::Duration::from_millis(look_ms));
    let t1 = read_file("/proc/stat");
    let busy = match (t0, t1) {
        (Some(a), Some(b)) => match (parse_proc_stat_cpu_all(&a), parse_proc_stat_cpu_all(&b)) {
            (Some(a), Some(b)) if b.1 > a.1 => Some(1.0 - (b.0 - a.0) as f64 / (b.1 - a.1) as f64),
            _ => None,
        },
        _ => None,
    };
    let busy_text = busy.map_or("?".to_string(), |b| format!("{:.0}%", 100.0 * b));
    let busy_warn = busy.is_some_and(|b| b > 0.2);

    // Topology.
    let online_text = sys("/sys/devices/system/cpu/online").unwrap_or_default();
    let online = parse_cpu_list(&online_text)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        });
    let topo = read_topology(&read, &online, &online_text);
    let allowed = m::allowed_cpus();
    let a = allowed.first().copied().unwrap_or(0);
    let sib_a = online
        .iter()
        .position(|&c| c == a)
        .map(|i| topo.siblings[i].clone())
        .unwrap_or_else(|| vec![a]);
    let b = allowed
        .iter()
        .copied()
        .find(|c| !sib_a.contains(c))
        .or_else(|| allowed.get(1).copied());
    progress(&format!(
        "{} CPUs, {} per core, {} per LLC ({} KB){}; measuring on CPU {a}{}",
        topo.cpus,
        topo.threads_per_core,
        topo.cpus_per_cache,
        topo.llc_kb.unwrap_or(0),
        topo.l2
            .as_ref()
            .map(|(n, kb, _)| format!(", L2 {kb} KB per {n}"))
            .unwrap_or_default(),
        b.map(|b| format!(" and {b}")).unwrap_or_default(),
    ));
    if busy_warn {
        progress(&format!(
                "warning: other work kept the CPUs {busy_text} busy just now (load average {loadavg}): it will show in the figures, the cross-CPU and idle ones most; calibrate on a quiet machine"
            ));
    }

    // Clock.
    let (model, cpuinfo_mhz) = read_file("/proc/cpuinfo")
        .map(|t| parse_cpuinfo(&t))
        .unwrap_or((None, None));
    let cpufreq = read_cpufreq(&read);
    // The fastest run: nothing makes a chain of adds faster than the clock.
    let chain = on_cpu(a, || {
        m::per_iter(2 * plan.reps, 1_000_000, 1 << 32, m::add_chain)
    });
    let measured_mhz = chain
        .as_ref()
        .ok()
        .map(|(r, _)| m::ADDS_PER_ITER * 1000.0 / r.kept.iter().copied().fold(f64::MAX, f64::min))
        // Within what a profile accepts: a chain that ran faster than that measured something
        // else, and /proc/cpuinfo's clock is taken instead.
        .filter(|x| (50.0..=crate::machine::check::MAX_MHZ).contains(x));
    let chain_runs = chain.as_ref().map_or(0, |(r, _)| r.kept.len());
    let cpuinfo_note = cpuinfo_mhz
        .map(|x| format!("/proc/cpuinfo says {x:.0} MHz"))
        .unwrap_or_else(|| "/proc/cpuinfo gives no clock".into());
    let mhz = match (&cpufreq, measured_mhz, cpuinfo_mhz) {
            (Some(f), _, _) => (
                *f.pstates_mhz.last().unwrap_or(&2500.0),
                format!(
                    "the highest P-state ([cpufreq]), at which work is measured, as host; a chain of dependent adds ran at {}",
                    measured_mhz.map_or("?".into(), |x| format!("{x:.0} MHz"))
                ),
            ),
            (None, Some(x), _) => (
                x.round(),
                format!(
                    "measured: a chain of dependent adds (1 cycle each), the fastest of {chain_runs} runs of 1 ms; {cpuinfo_note} (no cpufreq in /sys)"
                ),
            ),
            (None, None, Some(x)) => (
                x,
                "/proc/cpuinfo \"cpu MHz\" (no cpufreq in /sys; the add chain failed)".into(),
            ),
            (None, None, None) => (
                2500.0,
                "copied from profiles/host.toml (an estimate there): no cpufreq, no cpuinfo clock, the add chain failed".into(),
            ),
        };
    progress(&format!("clock: {:.0} MHz ({})", mhz.0, cuthead(&mhz.1)));

    // HZ, and the timer interrupt from the gaps a busy loop sees.
    let config_hz = kernel_config_hz();
    let j0 = jiffies();
    let gaps = on_cpu(a, || Ok(m::gaps(plan.gaps_ns, 300)));
    let j1 = jiffies();
    let jiffies_hz = match (j0, j1) {
        (Some((j0, t0)), Some((j1, t1))) if t1 > t0 && j1 > j0 => {
            Some((j1 - j0) as f64 * 1e9 / (t1 - t0) as f64)
        }
        _ => None,
    };
    let hz = match (config_hz, jiffies_hz) {
            (Some(c), _) => c,
            (None, Some(x)) => {
                let snap = [100u32, 250, 300, 1000]
                    .into_iter()
                    .min_by(|p, q| (*p as f64 - x).abs().total_cmp(&(*q as f64 - x).abs()))
                    .unwrap_or(250);
                if (snap as f64 - x).abs() <= 0.05 * snap as f64 {
                    (
                        snap,
                        format!("measured: jiffies advanced at {x:.1}/s (/proc/timer_list); no kernel config found"),
                    )
                } else {
                    (
                        x.round().clamp(10.0, 10_000.0) as u32,
                        format!("measured: jiffies advanced at {x:.1}/s (/proc/timer_list), not a usual HZ; no kernel config found"),
                    )
                }
            }
            (None, None) => (
                250,
                "estimate: no kernel config or /proc/timer_list to read; 250 is the common distribution default".into(),
            ),
        };
    progress(&format!("HZ: {} ({})", hz.0, hz.1));
    let timer_irq = match &gaps {
        Ok(g) => {
            let tick = tick_gaps(g, hz.0, 20_000, 1_000_000);
            let expected = plan.gaps_ns as f64 * hz.0 as f64 / 1e9;
            if tick.len() as f64 >= 0.3 * expected && !tick.is_empty() {
                let v: Vec<f64> = tick.iter().map(|&x| x as f64).collect();
                fig(
                        median(&v),
                        format!(
                            "a busy loop on CPU {a} for {} ms saw {} gaps over 300 ns; the median of the {} at the tick's phase (of {expected:.0} ticks); includes the tick's own work and, in a VM, the hypervisor's",
                            plan.gaps_ns / 1_000_000,
                            g.len(),
                            tick.len()
                        ),
                    )
            } else {
                Err(format!(
                        "a busy loop saw {} gaps at the tick's phase of {expected:.0} ticks (NO_HZ_FULL, or another task took the CPU)",
                        tick.len()
                    ))
            }
        }
        Err(e) => Err(e.to_string()),
    };
    show(progress, "timer interrupt", &timer_irq, "ns");
    // The part of a timer interrupt after its wakeup: 1.37 ms apart, off the tick's phase.
    let traced = if opts.no_trace {
        Err(std::io::Error::other("--no-trace: tracefs left alone"))
    } else {
        m::timer_wake_trace(a, plan.timer_wakes, 1_370_000)
    };
    let timer_wake_exit = match traced {
        Ok(v) => {
            let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
            fig(
                    median(&f),
                    format!(
                        "median of {} timer wakeups of a thread on CPU {a} kept busy by a SCHED_IDLE spinner, from sched_waking (in the interrupt) to sched_switch, traced through tracefs (to the microsecond)",
                        v.len()
                    ),
                )
        }
        Err(e) => Err(e.to_string()),
    };
    show(
        progress,
        "timer interrupt after its wakeup",
        &timer_wake_exit,
        "ns",
    );

    // Costs of single operations.
    let syscall = timed(&plan, a, 1 << 32, "calls", m::syscall);
    show(progress, "syscall(SYS_getppid)", &syscall, "ns");
    let atomic = timed(&plan, a, 1 << 34, "lock xadd", m::atomic);
    show(progress, "lock xadd", &atomic, "ns");
    let batches = (plan.budget_ns / 2 / (m::PIPE_BATCH * 600)).max(1);
    let pipe = on_cpu(a, || m::pipe_ops(plan.reps, batches));
    let pipe_how = |what: &str| {
        format!(
            "1-byte {what}, one process, {}",
            runs(plan.reps, batches * m::PIPE_BATCH, "in batches of 1024")
        )
    };
    let (pipe_write, pipe_read, pipe_write_timed) = match &pipe {
        Ok(p) => (
            fig(median(&p.write), pipe_how("writes that wake nobody")),
            fig(median(&p.read), pipe_how("reads that find data")),
            fig(median(&p.write_timed), pipe_how("writes timed one by one")),
        ),
        Err(e) => (Err(e.to_string()), Err(e.to_string()), Err(e.to_string())),
    };
    show(progress, "pipe write", &pipe_write, "ns");
    show(progress, "pipe read", &pipe_read, "ns");
    let sock = on_cpu(a, || {
        m::socket_ops(
            plan.reps,
            (plan.budget_ns / 2 / (m::SOCK_BATCH * 2000)).max(1),
        )
    });
    let sock_how = |what: &str| {
        format!(
                "{}-byte {what} on an AF_UNIX stream socketpair (hackbench's messages), one process, median of {} runs in batches of {}",
                m::SOCK_BYTES,
                plan.reps,
                m::SOCK_BATCH
            )
    };
    let (sock_send, sock_recv) = match &sock {
        Ok((s, r)) => (
            fig(median(s), sock_how("sends that wake nobody")),
            fig(median(r), sock_how("receives that find data")),
        ),
        Err(e) => (Err(e.to_string()), Err(e.to_string())),
    };
    show(progress, "socket send", &sock_send, "ns");
    show(progress, "socket recv", &sock_recv, "ns");

    // Pipe round trips: one CPU, two busy CPUs, two idle CPUs.
    let pp_how = |p: &m::PingPong, what: &str| {
        format!(
            "{what}median round trip of {} runs of {}",
            plan.reps, p.rounds
        )
    };
    let local = on_cpu(a, || m::pingpong(a, plan.reps, plan.pingpong_ns));
    let rt_local = match &local {
        Ok(p) => fig(median(&p.round_trip), pp_how(p, "")),
        Err(e) => Err(e.to_string()),
    };
    show(progress, "pipe round trip on one CPU", &rt_local, "ns");
    let (rt_busy, write_wake_busy, rt_idle) = match b {
        None => {
            let why = "only one CPU is available to this process".to_string();
            (Err(why.clone()), Err(why.clone()), Err(why))
        }
        Some(b) => {
            let spin = m::Spinners::start(&[a, b]);
            let busy = on_cpu(a, || m::pingpong(b, plan.reps, plan.pingpong_ns));
            let policy = spin.policy;
            drop(spin);
            let (rt_busy, ww) = match &busy {
                Ok(p) => (
                    fig(
                        median(&p.round_trip),
                        pp_how(p, &format!("CPUs {a} and {b}, spinners at {policy}: ")),
                    ),
                    fig(
                        median(&p.write),
                        format!("median of {} runs of {}", plan.reps, p.rounds),
                    ),
                ),
                Err(e) => (Err(e.to_string()), Err(e.to_string())),
            };
            show(progress, "pipe round trip, two busy CPUs", &rt_busy, "ns");
            // Let the CPUs go idle first.
            std::thread::sleep(std::time::Duration::from_millis(20));
            let t0 = cpu_times(&[a, b]);
            let idle = on_cpu(a, || m::pingpong(b, plan.reps, plan.pingpong_ns));
            let t1 = cpu_times(&[a, b]);
            let share = match (t0, t1) {
                (Some(t0), Some(t1)) => idle_share(&[a, b], &t0, &t1),
                _ => None,
            };
            let share_note = match &share {
                    Some((text, true)) => format!("; /proc/stat: {text} meanwhile: other work kept a CPU busy, so this is not an idle exit"),
                    Some((text, false)) => format!("; /proc/stat: {text} meanwhile"),
                    None => String::new(),
                };
            if let Some((text, true)) = &share {
                progress(&format!(
                    "warning: during the idle round trips {text}: other work ran there"
                ));
            }
            let rt_idle = match &idle {
                Ok(p) => fig(
                    median(&p.round_trip),
                    format!("{}{share_note}", pp_how(p, &format!("CPUs {a} and {b}: "))),
                ),
                Err(e) => Err(e.to_string()),
            };
            show(progress, "pipe round trip, two idle CPUs", &rt_idle, "ns");
            (rt_busy, ww, rt_idle)
        }
    };

    // Processes.
    let rss_mb = sys("/proc/self/statm")
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map(|pages| pages * 4096.0 / (1 << 20) as f64);
    let rss = rss_mb
        .map(|x| format!(" (this process: {x:.0} MB resident)"))
        .unwrap_or_default();
    let fork = ops(&plan, a, &format!("forks{rss}"), m::fork_exit_wait);
    show(progress, "fork + exit + wait", &fork, "ns");
    let fork_call = fork_calls(&plan, a, &rss);
    show(progress, "fork() in the parent", &fork_call, "ns");
    let wait = ops(
        &plan,
        a,
        "waitpid calls reaping a child already a zombie (waited for with waitid WNOWAIT)",
        m::wait_zombie,
    );
    show(progress, "wait on a zombie", &wait, "ns");
    let exec = match m::Exec::new("/bin/true", &["true"]) {
        Some(e) => ops(&plan, a, "execs", || e.run()),
        None => Err("no /bin/true".into()),
    };
    show(progress, "fork + exec + exit + wait", &exec, "ns");
    let shell = match m::Exec::new("/bin/sh", &["sh", "-c", "exit 0"]) {
        Some(e) => ops(&plan, a, "shells", || e.run()),
        None => Err("no /bin/sh".into()),
    };
    show(progress, "sh -c", &shell, "ns");
    let pages = plan.cow_pages;
    let cow = on_cpu(a, || {
        (0..plan.reps)
            .map(|_| m::wp_fault(pages))
            .collect::<io::Result<Vec<f64>>>()
    });
    let cow = to_fig(cow.map(|v| median(&v)), || {
        runs(plan.reps, pages as u64, "pages")
    });
    show(progress, "copy-on-write fault (no copy)", &cow, "ns");

    // Memory.
    let llc_kb = topo.llc_kb.unwrap_or(32 * 1024) as usize;
    let l2_kb = topo.l2.as_ref().map(|l| l.1 as usize);
    let (cache_latency, llc_read) = memory_within_llc(&plan, a, llc_kb, l2_kb, progress);
    let (mem_latency, mem_read) = memory_beyond_llc(&plan, a, llc_kb, progress);

    let raw = Raw {
        mhz: mhz.0,
        syscall,
        atomic,
        pipe_write,
        pipe_read,
        pipe_write_timed,
        rt_local,
        rt_busy,
        rt_idle,
        write_wake_busy,
        timer_irq,
        timer_wake_exit,
        fork,
        fork_call,
        wait,
        exec,
        shell,
        sock_send,
        sock_recv,
        cow,
        cache_latency,
        mem_latency,
        mem_read,
        llc_read: l2_kb.map(|_| llc_read),
    };
    let (costs, kernel) = derive(&raw, &host_profile());
    let llc_read_missing = match &raw.llc_read {
        Some(Err(e)) => Some(e.clone()),
        _ => None,
    };
    let secs = (now_ns() - started) as f64 / 1e9;
    progress(&format!("measured in {secs:.1} s"));

    let release = sys("/proc/sys/kernel/osrelease").unwrap_or_else(|| "?".into());
    let model = model.unwrap_or_else(|| "x86-64".into());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let date = civil_date((now / 86_400) as i64);
    let hhmm = format!("{:02}:{:02}", now % 86_400 / 3600, now % 3600 / 60);
    let mut header = vec![
            format!(
                "Machine profile measured by `schedkit calibrate{}` (schedkit {}) on {date} {hhmm} UTC, in {secs:.1} s.",
                if opts.quick { " --quick" } else { "" },
                env!("CARGO_PKG_VERSION")
            ),
            format!(
                "Machine: {model}, {} online CPUs, Linux {release}; measured on CPU {a}{}. At the start: CPUs {busy_text} busy, load average {loadavg}.",
                topo.cpus,
                b.map(|b| format!(" and {b}")).unwrap_or_default()
            ),
            String::new(),
            "Each value's comment says how it was measured (a timed value is the median of several runs),".into(),
            "or that it is an estimate or a value copied from profiles/host.toml, and why. The splits of".into(),
            "round trips into fields follow host.toml's derivations (crates/schedkit/src/calibrate/derive.rs).".into(),
            "Other work on the machine, and a VM's host, move every figure, the cross-CPU ones most:".into(),
            "calibrate on a quiet machine, and compare two calibrations before trusting one.".into(),
        ];
    if busy_warn {
        header.push(format!(
                "WARNING: other work kept the CPUs {busy_text} busy at the start: it ran during the measurement."
            ));
    }
    if opts.quick {
        header.push("--quick: few, short runs; the figures are rough.".into());
    }
    let parts = ProfileParts {
        name: &opts.name,
        description: format!(
            "{model}, {} CPUs, Linux {release}: measured by schedkit calibrate on {date}",
            topo.cpus
        ),
        header,
        topo: &topo,
        mhz,
        hz,
        cpufreq: cpufreq.as_ref(),
        costs,
        kernel,
        cow: raw.cow.clone(),
        llc_read_missing,
    };
    render(&parts)
}

/// The first clause of a note, for a progress line.
fn cuthead(s: &str) -> &str {
    s.split(';').next().unwrap_or(s)
}

/// How much of a mapping the kernel gave 2 MB pages, as words for a note.
fn huge_share(map: &m::Map, len: usize) -> String {
    let kb = read_file("/proc/self/smaps").and_then(|t| parse_smaps_huge_kb(&t, map.addr()));
    match kb {
        Some(kb) => format!(
            "{:.0}% in 2 MB pages",
            100.0 * (kb as f64 * 1024.0 / len as f64).min(1.0)
        ),
        None => "page size unknown".into(),
    }
}

/// A pointer chase over `map`'s cycle. `warm`: each run first goes once round the whole
/// buffer untimed (it fits the cache, and the run finds it there), then times a second
/// round; else each run times about `budget_ns` of loads, going on where the last run
/// stopped (every load to a line not touched for a long while).
fn chase_fig(plan: &Plan, cpu: usize, map: &m::Map, warm: bool, what: String) -> Fig {
    let buf = map.words();
    let lines = (buf.len() / m::LINE_WORDS) as u64;
    let loads = if warm {
        lines
    } else {
        (plan.budget_ns / 150).max(1000)
    };
    let mut p = 0usize;
    let r = on_cpu(cpu, || {
        m::unpreempted(plan.reps, || {
            if warm {
                p = m::chase(buf, p, lines);
            }
            let t = now_ns();
            p = m::chase(buf, p, loads);
            Ok((now_ns() - t) as f64 / loads as f64)
        })
    });
    match r {
        Ok(r) => fig(
            median(&r.kept),
            format!(
                "{what}, {}",
                describe(
                    &r,
                    loads,
                    if warm {
                        "loads (after a warming round)"
                    } else {
                        "loads"
                    }
                )
            ),
        ),
        Err(e) => Err(e.to_string()),
    }
}

fn stream_fig(plan: &Plan, cpu: usize, map: &m::Map, what: String) -> Fig {
    let buf = map.words();
    // Each run goes on where the last stopped, round the buffer.
    let mut at = 0usize;
    let f = timed(plan, cpu, 1 << 20, "MB", |n| {
        at = m::stream(buf, at, n);
        Ok(())
    });
    f.map(|x| Measured {
        v: (m::CHUNK_WORDS * std::mem::size_of::<usize>()) as f64 / (1 << 20) as f64 / (x.v / 1e9),
        how: format!("{what}, {}", x.how),
    })
}

fn setup(len: usize) -> io::Result<m::Map> {
    let mut map = m::Map::new(len, true)?;
    m::link_chase(map.words_mut(), &mut m::Rng::new(0x5eed));
    Ok(map)
}

/// The LLC's latency (a chase over a buffer well inside it but beyond the L2) and, with
/// a separate L2, its streaming bandwidth.
fn memory_within_llc(
    plan: &Plan,
    cpu: usize,
    llc_kb: usize,
    l2_kb: Option<usize>,
    progress: &mut dyn FnMut(&str),
) -> (Fig, Fig) {
    let kb = match l2_kb {
        Some(l2) => (8 * l2).min(llc_kb / 4).max(2 * l2),
        None => llc_kb / 4,
    }
    .max(64);
    let len = kb << 10;
    let map = match setup(len) {
        Ok(m) => m,
        Err(e) => return (Err(e.to_string()), Err(e.to_string())),
    };
    let share = huge_share(&map, len);
    let within = match l2_kb {
        Some(l2) => format!(
            "within the {} MB LLC, {:.0} x the {l2} KB L2",
            llc_kb >> 10,
            kb as f64 / l2 as f64
        ),
        None => format!("a quarter of the {} KB LLC", llc_kb),
    };
    let lat = chase_fig(
        plan,
        cpu,
        &map,
        true,
        format!(
            "pointer chase in random order over {} ({within}; {share})",
            size_text(kb)
        ),
    );
    show(progress, "LLC load latency", &lat, "ns");
    if l2_kb.is_none() {
        return (lat, Err("no separate L2".into()));
    }
    let bw = stream_fig(
        plan,
        cpu,
        &map,
        format!(
            "one thread summing {} ({within}) 1 MB at a time, round and round",
            size_text(kb)
        ),
    );
    show(progress, "LLC read bandwidth", &bw, "MB/s");
    (lat, bw)
}

/// Memory's latency and streaming bandwidth, over a buffer several times the LLC.
fn memory_beyond_llc(
    plan: &Plan,
    cpu: usize,
    llc_kb: usize,
    progress: &mut dyn FnMut(&str),
) -> (Fig, Fig) {
    let mb = (plan.mem_llc_times * llc_kb / 1024).clamp(plan.mem_min_mb, plan.mem_max_mb);
    let len = mb << 20;
    let map = match setup(len) {
        Ok(m) => m,
        Err(e) => return (Err(e.to_string()), Err(e.to_string())),
    };
    let share = huge_share(&map, len);
    let times = format!("{:.1} x the LLC", mb as f64 * 1024.0 / llc_kb as f64);
    let lat = chase_fig(
        plan,
        cpu,
        &map,
        false,
        format!("pointer chase in random order over {mb} MB ({times}; {share})"),
    );
    show(progress, "memory load latency", &lat, "ns");
    let bw = stream_fig(
        plan,
        cpu,
        &map,
        format!("one thread summing {mb} MB ({times}) 1 MB at a time, round and round"),
    );
    show(progress, "memory read bandwidth", &bw, "MB/s");
    (lat, bw)
}

fn size_text(kb: usize) -> String {
    if kb >= 1024 && kb.is_multiple_of(1024) {
        format!("{} MB", kb >> 10)
    } else {
        format!("{kb} KB")
    }
}

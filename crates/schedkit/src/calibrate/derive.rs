//! From raw timings to profile fields: the splits of round trips into costs follow the
//! derivations written in `profiles/host.toml`. Pure functions of their inputs.

use super::*;

/// A timed figure (ns, or MB/s for bandwidths) and how it was measured; `Err` says why it
/// was not.
pub type Fig = Result<Measured, String>;

#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub v: f64,
    pub how: String,
}

pub fn fig(v: f64, how: impl Into<String>) -> Fig {
    if v.is_finite() && v >= 0.0 {
        Ok(Measured { v, how: how.into() })
    } else {
        Err(format!("the measurement gave {v}"))
    }
}

/// The raw timings: what the microbenchmarks measured, before any split.
#[derive(Clone, Debug)]
pub struct Raw {
    /// The clock the profile gives (to price the scheduler work the simulator models).
    pub mhz: f64,
    /// Null system call.
    pub syscall: Fig,
    /// Uncontended locked add.
    pub atomic: Fig,
    /// 1-byte pipe write that wakes nobody, and read that finds data (one process).
    pub pipe_write: Fig,
    pub pipe_read: Fig,
    /// A pipe write that wakes nobody, timed call by call as `write_wake_busy` is.
    pub pipe_write_timed: Fig,
    /// Pipe round trip between two processes pinned to one CPU.
    pub rt_local: Fig,
    /// Round trip between two processes pinned to two CPUs kept busy by spinners.
    pub rt_busy: Fig,
    /// Round trip between two processes pinned to two idle CPUs.
    pub rt_idle: Fig,
    /// A pipe write that wakes a process blocked on the other, busy CPU (timed call by call).
    pub write_wake_busy: Fig,
    /// A timer interrupt, as the gaps a busy loop sees at the tick's phase.
    pub timer_irq: Fig,
    /// From a wakeup in a timer's interrupt on a busy CPU to the switch to the woken thread
    /// (tracefs).
    pub timer_wake_exit: Fig,
    /// fork + child's _exit + waitpid, pinned to one CPU.
    pub fork: Fig,
    /// The parent's fork() call alone, pinned to one CPU (its child blocks until reaped).
    pub fork_call: Fig,
    /// waitpid reaping a zombie.
    pub wait: Fig,
    /// fork + exec of /bin/true + exit + waitpid.
    pub exec: Fig,
    /// fork + exec of /bin/sh -c 'exit 0' (a shell that runs no program) + waitpid.
    pub shell: Fig,
    /// AF_UNIX stream send and receive of 100 bytes, one process.
    pub sock_send: Fig,
    pub sock_recv: Fig,
    /// Write-protect fault on a page no longer shared (no copy).
    pub cow: Fig,
    /// Pointer chase within the LLC, and far beyond it (ns per load).
    pub cache_latency: Fig,
    pub mem_latency: Fig,
    /// Streaming read from memory, and from the LLC (MB/s); the latter only with a separate L2.
    pub mem_read: Fig,
    pub llc_read: Option<Fig>,
}

/// One value of the profile: `key = value  # note`, with comment lines above it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key: &'static str,
    pub value: f64,
    pub note: String,
    pub above: Vec<String>,
}

/// Queue operations the simulator charges per wakeup-and-switch on a two-task runqueue (an
/// enqueue, a dequeue, a pick, the accounting), each ~10 instructions and a cache line: an
/// estimate of the scheduler work a measured switch already contains.
pub const SCHED_WORK_OPS: f64 = 4.0;

/// The cost fields of the profile, derived from the raw timings as `profiles/host.toml`
/// derives its own (the comments there): `host` is what a figure that could not be measured
/// falls back to.
///
/// - per pipe hop on one CPU: `rt_local / 2 = write + read + switch`, where the switch
///   includes the wakeup and the scheduler; `context_switch_ns` is that switch less the
///   scheduler work the simulator charges itself ([`SCHED_WORK_OPS`] queue operations);
/// - the IPI: `ipi_send_ns` is what a write that wakes a task on another, busy CPU costs more
///   than one that wakes nobody; `ipi_latency_ns` is the hop between busy CPUs less the local
///   hop, less the IPI's handling the simulator charges separately (`ipi_irq_ns`, priced as a
///   system call: no round trip tells the two apart);
///   `idle_exit_ns` is the hop to an idle CPU less the hop to a busy one;
/// - fork: the parent's `fork()` call timed alone; exit: fork + exit + wait less the wait,
///   the two switches it contains and that fork call (clamped at 0, and saying so, where
///   the fork call comes to all of it). Where the fork call was not measured, fork + exit +
///   wait less the wait and switches is split 2:1 between fork and exit (host's assumption,
///   from the 2002 profiles), and the note says why; exec is fork + exec less fork + exit; the shell's start-up is `sh -c 'exit 0'` (a shell that runs nothing) less
///   fork + exec of /bin/true. (host.toml takes lmbench's `sh -c hello` less two fork +
///   exec instead; but this process is larger to fork than a shell, and dash execs a last
///   command without forking, so that difference is not the shell's start-up.)
pub fn derive(raw: &Raw, host: &MachineProfile) -> (Vec<Entry>, Vec<Entry>) {
    let hc = &host.costs;
    let hk = &host.kernel;
    let copied = |v: f64, what: &str, why: &str| Entry {
        key: "",
        value: v,
        note: format!("copied from profiles/host.toml ({what}): not measured, {why}"),
        above: vec![],
    };
    let direct = |key: &'static str, f: &Fig, fallback: f64, unit: &str| match f {
        Ok(m) => Entry {
            key,
            value: m.v,
            note: format!("measured: {}", m.how),
            above: vec![],
        },
        Err(why) => Entry {
            key,
            ..copied(fallback, unit, why)
        },
    };
    // A figure outside what a profile may hold (`machine/check.rs`) is not a figure of the
    // machine but of what disturbed it (a chase whose every run was preempted on a busy
    // machine measured 3.7 us per load): it is refused, and the fallback says so.
    let within = |f: &Fig, lo: f64, hi: f64, unit: &str| -> Fig {
        match f {
            Ok(m) if !(lo..=hi).contains(&m.v) => Err(format!(
                "it measured {:.0} {unit}, outside what a profile may hold ({lo}..={hi} {unit}): {}",
                m.v, m.how
            )),
            other => other.clone(),
        }
    };
    let mut costs = vec![];
    let mut kernel = vec![];

    let cache = direct(
        "cache_latency_ns",
        &within(&raw.cache_latency, 0.0, 1_000.0, "ns"),
        hc.cache_latency_ns,
        "an estimate there",
    );
    let cache_ns = cache.value;
    costs.push(cache);
    costs.push(direct(
        "mem_latency_ns",
        &within(&raw.mem_latency, 0.0, 10_000.0, "ns"),
        hc.mem_latency_ns,
        "an estimate there",
    ));
    costs.push(direct(
        "mem_read_mb_s",
        &within(&raw.mem_read, 1.0, 10_000_000.0, "MB/s"),
        hc.mem_read_mb_s,
        "an estimate there",
    ));
    let llc_read = raw
        .llc_read
        .as_ref()
        .map(|f| within(f, 1.0, 10_000_000.0, "MB/s"));
    if let Some(Ok(m)) = &llc_read {
        costs.push(Entry {
            key: "llc_read_mb_s",
            value: m.v,
            note: format!("measured: {}", m.how),
            above: vec![],
        });
    }
    costs.push(direct(
        "atomic_ns",
        &within(&raw.atomic, 0.0, 10_000.0, "ns"),
        hc.atomic_ns,
        "an estimate there",
    ));
    let sys = direct(
        "syscall_ns",
        &raw.syscall,
        hc.syscall_ns,
        "an estimate there",
    );
    let syscall_ns = sys.value;
    costs.push(sys);

    // The switch: a pipe hop on one CPU less the pipe's own write and read.
    let sched_ns = SCHED_WORK_OPS * (10.0 * 1000.0 / raw.mhz.max(1.0) + cache_ns);
    let switch_full = match (&raw.rt_local, &raw.pipe_write, &raw.pipe_read) {
        (Ok(rt), Ok(w), Ok(r)) => {
            let s = (rt.v - 2.0 * (w.v + r.v)) / 2.0;
            if s > 0.0 {
                Ok((s, rt, w, r))
            } else {
                Err(format!(
                    "the round trip ({:.0} ns) is not more than its pipe operations (2 x {:.0} ns)",
                    rt.v,
                    w.v + r.v
                ))
            }
        }
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e.clone()),
    };
    let mut ctx_full = hc.context_switch_ns + sched_ns;
    match &switch_full {
        Ok((s, rt, w, r)) => {
            ctx_full = *s;
            let v = (s - sched_ns).max(0.0);
            costs.push(Entry {
                key: "context_switch_ns",
                value: v,
                note: format!(
                    "measured: ({:.0} - 2 x ({:.0} + {:.0})) / 2 = {:.0} per switch, less {:.0} of scheduler work the simulator charges itself (an estimate: {SCHED_WORK_OPS} queue operations of 10 cycles and a cache hit){}",
                    rt.v, w.v, r.v, s, sched_ns,
                    if v == 0.0 { "; clamped at 0" } else { "" }
                ),
                above: vec![
                    format!("Pipe round trip between two processes pinned to one CPU: {:.0} ns ({}). It holds", rt.v, rt.how),
                    "two switches (each with its wakeup and scheduler work) and two pipe writes and reads, timed".into(),
                    "alone below (pipe_write_ns, pipe_read_ns).".into(),
                ],
            });
        }
        Err(why) => costs.push(Entry {
            key: "context_switch_ns",
            ..copied(hc.context_switch_ns, "measured there", why)
        }),
    }
    let timer = direct(
        "timer_irq_ns",
        &raw.timer_irq,
        hc.timer_irq_ns,
        "an estimate there",
    );
    let timer_ns = timer.value;
    costs.push(timer);
    match (&raw.timer_wake_exit, hc.timer_wake_exit_ns) {
        (Ok(w), _) => {
            let clamped = w.v > timer_ns;
            costs.push(Entry {
                key: "timer_wake_exit_ns",
                value: w.v.min(timer_ns),
                note: format!(
                    "measured: {}; it holds the wakeup's own work and schedule()'s pick, which the simulator prices apart (tens of ns){}",
                    w.how,
                    if clamped {
                        format!("; clamped at timer_irq_ns ({timer_ns:.0} ns), the whole interrupt")
                    } else {
                        String::new()
                    }
                ),
                above: vec![
                    "The part of a timer interrupt after its handler wakes a task (the rest of the".into(),
                    "handler, reprogramming the timer, leaving the interrupt): with it, each timed sleep".into(),
                    "ends with an interrupt of its own (docs/validation.md).".into(),
                ],
            });
        }
        (Err(e), Some(v)) => costs.push(Entry {
            key: "timer_wake_exit_ns",
            ..copied(v.min(timer_ns), "measured there", e)
        }),
        (Err(_), None) => {}
    }

    // Cross-CPU wakeups.
    match (&raw.write_wake_busy, &raw.pipe_write_timed) {
        (Ok(ww), Ok(wt)) => costs.push(Entry {
            key: "ipi_send_ns",
            value: (ww.v - wt.v).max(0.0),
            note: format!(
                "measured: a pipe write that wakes a process blocked on the other, busy CPU took {:.0} ns ({}), one that wakes nobody {:.0} ns; the difference, which holds the remote wakeup too",
                ww.v, ww.how, wt.v
            ),
            above: vec![],
        }),
        (Err(e), _) | (_, Err(e)) => costs.push(Entry {
            key: "ipi_send_ns",
            ..copied(hc.ipi_send_ns, "measured there", e)
        }),
    }
    // The receiving CPU's handling of an IPI: no round trip tells it from the IPI's latency,
    // so it is priced as an entry to and exit from the kernel, a system call's.
    costs.push(Entry {
        key: "ipi_irq_ns",
        value: syscall_ns,
        note: format!(
            "estimate: an IPI's entry to and exit from the kernel on the receiving CPU, priced as a system call's ({syscall_ns:.0} ns); without it the simulator would charge timer_irq_ns ({timer_ns:.0} ns) for each IPI"
        ),
        above: vec![],
    });
    let busy_hop = match (&raw.rt_busy, &raw.rt_local) {
        (Ok(b), Ok(l)) => {
            let extra = b.v / 2.0 - l.v / 2.0;
            costs.push(Entry {
                key: "ipi_latency_ns",
                value: (extra - syscall_ns).max(0.0),
                note: format!(
                    "measured: round trip between two CPUs both kept busy by SCHED_IDLE spinners {:.0} ns ({}); per hop {:.0} - {:.0} (the local hop) - {:.0} (the IPI's handling, ipi_irq_ns){}",
                    b.v, b.how, b.v / 2.0, l.v / 2.0, syscall_ns,
                    if extra < syscall_ns { "; clamped at 0" } else { "" }
                ),
                above: vec![],
            });
            Some(b)
        }
        (Err(e), _) | (_, Err(e)) => {
            costs.push(Entry {
                key: "ipi_latency_ns",
                ..copied(hc.ipi_latency_ns, "measured there", e)
            });
            None
        }
    };
    match (&raw.rt_idle, busy_hop) {
        (Ok(i), Some(b)) => costs.push(Entry {
            key: "idle_exit_ns",
            value: ((i.v - b.v) / 2.0).max(0.0),
            note: format!(
                "measured: round trip between the same two CPUs left idle {:.0} ns ({}); per hop {:.0} - {:.0} (the busy hop){}",
                i.v, i.how, i.v / 2.0, b.v / 2.0,
                if i.v < b.v { "; clamped at 0" } else { "" }
            ),
            above: vec![],
        }),
        (Err(e), _) => costs.push(Entry {
            key: "idle_exit_ns",
            ..copied(hc.idle_exit_ns, "measured there", e)
        }),
        (Ok(_), None) => costs.push(Entry {
            key: "idle_exit_ns",
            ..copied(
                hc.idle_exit_ns,
                "measured there",
                "the busy round trip it is set against was not measured",
            )
        }),
    }

    // Kernel work.
    kernel.push(direct(
        "pipe_write_ns",
        &raw.pipe_write,
        hk.pipe_write_ns,
        "measured there",
    ));
    kernel.push(direct(
        "pipe_read_ns",
        &raw.pipe_read,
        hk.pipe_read_ns,
        "measured there",
    ));
    kernel.push(direct(
        "sock_send_ns",
        &raw.sock_send,
        hk.sock_send_ns,
        "an estimate there",
    ));
    kernel.push(direct(
        "sock_recv_ns",
        &raw.sock_recv,
        hk.sock_recv_ns,
        "an estimate there",
    ));
    let wait = direct("wait_ns", &raw.wait, hk.wait_ns, "an estimate there");
    let wait_ns = wait.value;
    match &raw.fork {
        Ok(f) => {
            let rest = f.v - wait_ns - 2.0 * ctx_full;
            let (base, clamp) = if rest > 0.0 {
                (rest, "")
            } else {
                (
                    f.v,
                    " (the wait and switches exceed it: the whole figure is taken)",
                )
            };
            let mut above = vec![format!(
                "fork + child's _exit + waitpid pinned to one CPU (lmbench's lat_proc fork): {:.0} ns ({}).",
                f.v, f.how
            )];
            match &raw.fork_call {
                Ok(c) => {
                    let exit = base - c.v;
                    // As the value is written (fmt_float rounds half away from zero).
                    let call = c.v.round();
                    above.push(format!(
                        "Less wait_ns ({wait_ns:.0}) and two switches (2 x {ctx_full:.0}): {base:.0}{clamp}; less the parent's fork()"
                    ));
                    above.push(format!(
                        "call timed alone ({call:.0}, fork_ns): {exit:.0}, the child's start and _exit and the wakeup of its waiting parent."
                    ));
                    kernel.push(Entry {
                        key: "fork_ns",
                        value: c.v,
                        note: format!("measured: {}", c.how),
                        above,
                    });
                    kernel.push(Entry {
                        key: "exit_ns",
                        value: exit.max(0.0),
                        note: if exit > 0.0 {
                            format!(
                                "measured: lat_proc fork less wait, switches and the fork() call ({base:.0} - {call:.0})"
                            )
                        } else {
                            format!(
                                "measured, clamped at 0: the fork() call alone ({call:.0} ns) came to the whole of lat_proc fork less wait and switches ({base:.0} ns) or more; the two are timed apart, and exit's share is within their noise"
                            )
                        },
                        above: vec![],
                    });
                }
                Err(e) => {
                    above.push(format!(
                        "Less wait_ns ({wait_ns:.0}) and two switches (2 x {ctx_full:.0}): {base:.0}{clamp}, split 2:1 between fork and"
                    ));
                    above.push(format!(
                        "exit as profiles/host.toml does (an assumption from the 2002 profiles): the parent's fork() call alone was not measured, {e}."
                    ));
                    kernel.push(Entry {
                        key: "fork_ns",
                        value: base * 2.0 / 3.0,
                        note: "measured, split by assumption: 2/3 of the above".into(),
                        above,
                    });
                    kernel.push(Entry {
                        key: "exit_ns",
                        value: base / 3.0,
                        note: "measured, split by assumption: 1/3 of the above".into(),
                        above: vec![],
                    });
                }
            }
        }
        Err(e) => {
            kernel.push(Entry {
                key: "fork_ns",
                ..copied(hk.fork_ns, "measured there", e)
            });
            kernel.push(Entry {
                key: "exit_ns",
                ..copied(hk.exit_ns, "measured there", e)
            });
        }
    }
    kernel.push(wait);
    match (&raw.exec, &raw.fork) {
        (Ok(e), Ok(f)) => kernel.push(Entry {
            key: "exec_ns",
            value: (e.v - f.v).max(0.0),
            note: format!(
                "measured: fork + execv(/bin/true) + exit + waitpid {:.0} ns ({}), less lat_proc fork ({:.0}){}",
                e.v, e.how, f.v,
                if e.v < f.v { "; clamped at 0" } else { "" }
            ),
            above: vec![],
        }),
        (Err(e), _) | (_, Err(e)) => kernel.push(Entry {
            key: "exec_ns",
            ..copied(hk.exec_ns, "measured there", e)
        }),
    }
    match (&raw.shell, &raw.exec) {
        (Ok(s), Ok(e)) => kernel.push(Entry {
            key: "shell_startup_ns",
            value: (s.v - e.v).max(0.0),
            note: format!(
                "measured: fork + exec of /bin/sh -c 'exit 0' (a shell that runs nothing) + waitpid {:.0} ns ({}), less fork + exec of /bin/true ({:.0}): the shell's own start-up{}",
                s.v, s.how, e.v,
                if s.v < e.v { "; clamped at 0" } else { "" }
            ),
            above: vec![],
        }),
        (Err(e), _) | (_, Err(e)) => kernel.push(Entry {
            key: "shell_startup_ns",
            ..copied(hk.shell_startup_ns, "measured there", e)
        }),
    }
    (costs, kernel)
}

//! Results as people read them: plain-text tables (here: one column per run, one row per
//! metric, so that policies read side by side) and the HTML page of `schedkit report`
//! ([`html`], drawing its plots with [`svg`]).

pub mod html;
pub mod svg;

use crate::metrics::{PhaseMetrics, RunResult};

fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}", v)
    } else if a >= 100.0 {
        format!("{:.1}", v)
    } else if a >= 1.0 {
        format!("{:.2}", v)
    } else {
        format!("{:.3}", v)
    }
}

/// Rows that count things: whole numbers, printed without decimals (`sim events 6232`, not
/// `6232.0`).
const COUNT_ROWS: &[&str] = &[
    "migrations",
    "audio underruns",
    "audio deadline misses",
    "audio periods",
    "coherence transfers",
    "  across buses",
    "COW faults",
    "  copies",
    "mm line transfers",
    "tasks scanned",
    "recalc visits",
    "lock acquisitions",
    "  contended",
    "  hand-offs",
    "  steals",
    "rt-migrate failed iterations",
    "rt-migrate iterations checked",
    "RT pushes",
    "RT pulls",
    "RT inversions seen by audit",
    "deadline jobs",
    "  past their deadline",
    "  throttles",
    "  DL pushes",
    "  DL pulls",
    "sim events",
];

fn fmt_count(v: f64) -> String {
    if v.abs() >= 1e7 {
        format!("{:.3}M", v / 1e6)
    } else {
        format!("{v:.0}")
    }
}

/// A figure summed over a run's sleeping locks (`None` when it has none).
fn sum_locks(r: &RunResult, f: fn(&crate::metrics::SleepLockStats) -> f64) -> Option<f64> {
    (!r.metrics.sleep_locks.is_empty()).then(|| r.metrics.sleep_locks.iter().map(f).sum())
}

/// A run's name in the ratio column header.
fn short(r: &RunResult, with_rt: bool, with_lock: bool) -> String {
    match (&r.rt_balance, &r.lock_mode) {
        (_, Some(l)) if with_lock => l.clone(),
        (Some(b), _) if with_rt => b.clone(),
        _ => r.policy.clone(),
    }
}

/// Renders runs as a table with a header per run (`policy`, plus the machine and the workload
/// when they differ between runs). With exactly two runs a ratio column (second / first) is
/// added.
pub fn table(runs: &[RunResult]) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let same_machine = runs.iter().all(|r| r.machine == runs[0].machine);
    let same_workload = runs.iter().all(|r| r.workload == runs[0].workload);
    let mut out = String::new();
    if same_machine {
        out.push_str(&format!("machine:  {}\n", runs[0].machine));
    }
    if same_workload {
        out.push_str(&format!("workload: {}\n", runs[0].workload));
    }
    let (headers, vary_rt, vary_lock) = column_headers(runs, same_machine, same_workload);
    type Getter = fn(&RunResult) -> Option<f64>;
    let rows: Vec<(String, Getter)> = vec![
        (
            format!("throughput ({})", runs[0].metrics.throughput.unit),
            |r| Some(r.metrics.throughput.value),
        ),
        ("simulated time (s)".into(), |r| {
            r.metrics.power.as_ref().map(|_| r.simulated_s)
        }),
        ("energy (J)".into(), |r| r.metrics.power.as_ref()?.energy_j),
        ("average power (W)".into(), |r| {
            r.metrics.power.as_ref()?.avg_w
        }),
        ("mean busy MHz".into(), |r| {
            let p = r.metrics.power.as_ref()?;
            (!p.busy_at_mhz.is_empty()).then(|| p.busy_at_mhz.iter().map(|f| f.mhz * f.share).sum())
        }),
        ("busy time on big/P cores".into(), |r| {
            let p = r.metrics.power.as_ref()?;
            (!p.by_core_type.is_empty()).then(|| {
                p.by_core_type
                    .iter()
                    .filter(|t| t.biggest)
                    .map(|t| t.busy_share)
                    .sum()
            })
        }),
        ("context switches/s".into(), |r| {
            Some(r.metrics.context_switches_per_s)
        }),
        ("migrations".into(), |r| Some(r.metrics.migrations as f64)),
        ("idle fraction".into(), |r| Some(r.metrics.idle_fraction)),
        ("wakeup latency p50 (us)".into(), |r| {
            Some(r.metrics.wakeup_latency_us.p50)
        }),
        ("wakeup latency p99 (us)".into(), |r| {
            Some(r.metrics.wakeup_latency_us.p99)
        }),
        ("wakeup latency max (us)".into(), |r| {
            Some(r.metrics.wakeup_latency_us.max)
        }),
        ("interactive p50 (us)".into(), |r| {
            r.metrics.interactive_wakeup_latency_us.map(|l| l.p50)
        }),
        ("interactive p99 (us)".into(), |r| {
            r.metrics.interactive_wakeup_latency_us.map(|l| l.p99)
        }),
        ("interactive max (us)".into(), |r| {
            r.metrics.interactive_wakeup_latency_us.map(|l| l.max)
        }),
        ("probe latency p50 (us)".into(), |r| {
            r.metrics.probe_latency_us.map(|l| l.p50)
        }),
        ("probe latency p99 (us)".into(), |r| {
            r.metrics.probe_latency_us.map(|l| l.p99)
        }),
        ("probe latency max (us)".into(), |r| {
            r.metrics.probe_latency_us.map(|l| l.max)
        }),
        ("fairness (Jain)".into(), |r| Some(r.metrics.fairness_jain)),
        ("longest runnable wait (ms)".into(), |r| {
            Some(r.metrics.longest_runnable_wait_us / 1e3)
        }),
        ("runqueue length avg".into(), |r| {
            Some(r.metrics.runqueue_length.avg)
        }),
        ("audio underruns".into(), |r| {
            r.metrics.audio.map(|a| a.underruns as f64)
        }),
        ("audio deadline misses".into(), |r| {
            r.metrics.audio.map(|a| a.deadline_misses as f64)
        }),
        ("audio lateness p99 (us)".into(), |r| {
            r.metrics.audio.map(|a| a.lateness_us.p99)
        }),
        ("audio lateness max (us)".into(), |r| {
            r.metrics.audio.map(|a| a.lateness_us.max)
        }),
        ("sched CPU time (s)".into(), |r| {
            Some(r.metrics.cpu_time_s.sched)
        }),
        ("  of which lock spin (s)".into(), |r| {
            Some(r.metrics.cpu_time_s.lock_spin)
        }),
        ("cache refill time (s)".into(), |r| {
            Some(r.metrics.cpu_time_s.cache_refill)
        }),
        ("coherence transfers".into(), |r| {
            r.metrics.interconnect.map(|i| i.transfers as f64)
        }),
        ("  across buses".into(), |r| {
            r.metrics
                .interconnect
                .and_then(|i| (i.cross_bus > 0).then_some(i.cross_bus as f64))
        }),
        ("bus wait (ms)".into(), |r| {
            r.metrics.interconnect.map(|i| i.bus_wait_us / 1e3)
        }),
        ("COW faults".into(), |r| {
            r.metrics.mm.map(|m| m.cow_faults as f64)
        }),
        ("  copies".into(), |r| {
            r.metrics.mm.map(|m| m.cow_copies as f64)
        }),
        ("mm line transfers".into(), |r| {
            r.metrics.mm.map(|m| m.line_transfers as f64)
        }),
        ("tasks scanned".into(), |r| {
            Some(r.metrics.sched_ops.tasks_scanned as f64)
        }),
        ("recalc visits".into(), |r| {
            Some(r.metrics.sched_ops.recalc_visits as f64)
        }),
        ("lock acquisitions".into(), |r| {
            sum_locks(r, |l| l.acquisitions as f64)
        }),
        ("  contended".into(), |r| {
            sum_locks(r, |l| l.contended as f64)
        }),
        ("  hand-offs".into(), |r| {
            sum_locks(r, |l| l.handoffs as f64)
        }),
        ("  steals".into(), |r| sum_locks(r, |l| l.steals as f64)),
        ("  wait total (ms)".into(), |r| {
            sum_locks(r, |l| l.wait_us_total / 1e3)
        }),
        ("  wait max (us)".into(), |r| {
            (!r.metrics.sleep_locks.is_empty()).then(|| {
                r.metrics
                    .sleep_locks
                    .iter()
                    .map(|l| l.wait_us_max)
                    .fold(0.0, f64::max)
            })
        }),
        ("rt-migrate failed iterations".into(), |r| {
            r.metrics
                .rtmigrate
                .as_ref()
                .map(|m| m.failed_iterations as f64)
        }),
        ("rt-migrate iterations checked".into(), |r| {
            r.metrics
                .rtmigrate
                .as_ref()
                .map(|m| m.iterations.len() as f64)
        }),
        ("worst start delay, highest (us)".into(), |r| {
            r.metrics
                .rtmigrate
                .as_ref()
                .map(|m| m.worst_start_delay_highest_us)
        }),
        ("RT pushes".into(), |r| {
            (r.metrics.rt.pushes + r.metrics.rt.pulls > 0).then_some(r.metrics.rt.pushes as f64)
        }),
        ("RT pulls".into(), |r| {
            (r.metrics.rt.pushes + r.metrics.rt.pulls > 0).then_some(r.metrics.rt.pulls as f64)
        }),
        ("RT inversions seen by audit".into(), |r| {
            (r.metrics.rt.audits > 0).then_some(r.metrics.rt.inversions as f64)
        }),
        ("deadline jobs".into(), |r| {
            r.metrics.deadline.as_ref().map(|d| d.jobs as f64)
        }),
        ("  past their deadline".into(), |r| {
            r.metrics
                .deadline
                .as_ref()
                .map(|d| d.deadline_misses as f64)
        }),
        ("  throttles".into(), |r| {
            r.metrics.deadline.as_ref().map(|d| d.throttles as f64)
        }),
        ("  DL pushes".into(), |r| {
            r.metrics.deadline.as_ref().map(|d| d.pushes as f64)
        }),
        ("  DL pulls".into(), |r| {
            r.metrics.deadline.as_ref().map(|d| d.pulls as f64)
        }),
        ("simulated (s)".into(), |r| Some(r.simulated_s)),
        ("sim events".into(), |r| Some(r.metrics.sim.events as f64)),
        ("sim wall (s)".into(), |r| Some(r.metrics.sim.wall_s)),
    ];
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["metric".to_string()];
    head.extend(headers);
    let ratio = runs.len() == 2;
    if ratio {
        // Named by what tells the two runs apart: the mode where one policy ran in two (a
        // policy that forces its mode, o1:era=2002, differs from o1 by its era, not its mode).
        let name = |r: &RunResult| {
            if runs[0].policy == runs[1].policy {
                short(r, vary_rt, vary_lock)
            } else {
                r.policy.clone()
            }
        };
        head.push(format!("{}/{}", name(&runs[1]), name(&runs[0])));
    }
    lines.push(head);
    // Per-op figures (lmbench style) come right after throughput.
    let mut extra: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for key in runs[0].metrics.per_op_us.keys() {
        extra.push((
            key.clone(),
            runs.iter()
                .map(|r| r.metrics.per_op_us.get(key).copied())
                .collect(),
        ));
    }
    let mut push = |name: &str, vals: Vec<Option<f64>>| {
        let Some(mut line) = value_row(name, &vals) else {
            return;
        };
        if ratio {
            line.push(match (vals[0], vals[1]) {
                (Some(a), Some(b)) if a != 0.0 => format!("{:.2}x", b / a),
                _ => "-".into(),
            });
        }
        lines.push(line);
    };
    for (i, (name, get)) in rows.iter().enumerate() {
        push(name, runs.iter().map(get).collect());
        if i == 0 {
            for (k, v) in &extra {
                push(k, v.clone());
            }
        }
    }
    out.push_str(&align(&lines));
    for r in runs {
        if let Some(waits) = &r.deadlock {
            out.push_str(&format!(
                "note: {} stopped at {:.3} s: no task could ever run again (deadlock)\n",
                r.policy, r.simulated_s
            ));
            for w in waits.iter().take(20) {
                out.push_str(&format!("  {w}\n"));
            }
            if waits.len() > 20 {
                out.push_str(&format!("  ... and {} more\n", waits.len() - 20));
            }
        }
        if r.stop_reason == "starved" {
            out.push_str(&format!(
                "note: {} stopped at {:.3} s: a task had waited runnable {} (--starve-stop)\n",
                r.policy,
                r.simulated_s,
                r.starve_threshold_s.map_or("too long".into(), fmt_secs)
            ));
        }
        if !r.metrics.context_switches_per_s.is_finite() {
            out.push_str(&format!(
                "note: {} ended after {:.0} ns, less than a timer tick: too short for rates\n",
                r.policy,
                r.simulated_s * 1e9
            ));
        }
    }
    let incomplete: Vec<&str> = runs
        .iter()
        .filter(|r| r.stop_reason == "time_limit")
        .map(|r| r.policy.as_str())
        .collect();
    if !incomplete.is_empty() && runs.iter().any(|r| r.completed) {
        out.push_str(&format!(
            "note: {} hit the duration limit before the workload finished; throughput is over the simulated time\n",
            incomplete.join(", ")
        ));
    }
    out
}

/// The column heading of each run in a table of `runs`: the policy, with what else varies.
fn column_headers(
    runs: &[RunResult],
    same_machine: bool,
    same_workload: bool,
) -> (Vec<String>, bool, bool) {
    // Label RT balancing modes only when runs differ in them (a policy without one is not a
    // difference).
    let modes: std::collections::BTreeSet<&String> =
        runs.iter().filter_map(|r| r.rt_balance.as_ref()).collect();
    let vary_rt = modes.len() > 1;
    let lock_modes: std::collections::BTreeSet<&String> =
        runs.iter().filter_map(|r| r.lock_mode.as_ref()).collect();
    let vary_lock = lock_modes.len() > 1;
    let governors: std::collections::BTreeSet<&String> = runs
        .iter()
        .filter_map(|r| r.metrics.power.as_ref()?.governor.as_ref())
        .collect();
    let vary_governor = governors.len() > 1;
    let headers: Vec<String> = runs
        .iter()
        .map(|r| {
            let mut h = r.policy.clone();
            if vary_rt {
                if let Some(b) = &r.rt_balance {
                    h.push_str(&format!(" [{b}]"));
                }
            }
            if vary_lock {
                if let Some(l) = &r.lock_mode {
                    h.push_str(&format!(" [{l}]"));
                }
            }
            if vary_governor {
                if let Some(g) = r.metrics.power.as_ref().and_then(|p| p.governor.as_ref()) {
                    h.push_str(&format!(" [{g}]"));
                }
            }
            if !same_machine {
                h.push_str(&format!(" @{}", r.machine));
            }
            if !same_workload {
                h.push_str(&format!(" {}", r.workload));
            }
            h
        })
        .collect();
    (headers, vary_rt, vary_lock)
}

/// The starvation watchdog's report of each of `runs` that asked for one (`--starve`): the
/// tasks that waited runnable the threshold or longer, longest wait first, each with what ran
/// meanwhile on each CPU it may use. Empty when no run asked.
pub fn starved_report(runs: &[RunResult]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for r in runs {
        let (Some(tasks), Some(thr)) = (&r.starved, r.starve_threshold_s) else {
            continue;
        };
        let total = r.starved_total.unwrap_or(tasks.len() as u64);
        let thr = fmt_secs(thr);
        let _ = write!(
            out,
            "\nstarvation watchdog ({}, --starve {thr}): ",
            r.policy
        );
        if tasks.is_empty() {
            let _ = writeln!(out, "no task waited runnable {thr} or longer");
            continue;
        }
        let _ = writeln!(
            out,
            "{total} task{} waited runnable {thr} or longer{}",
            if total == 1 { "" } else { "s" },
            if total > tasks.len() as u64 {
                format!("; the {} longest waits:", tasks.len())
            } else {
                ":".into()
            }
        );
        for t in tasks {
            let cpus: Vec<String> = t.cpus_allowed.iter().map(|c| c.to_string()).collect();
            let _ = writeln!(
                out,
                "  {}[{}] (pid {}): runnable since {}, waited {}{}; CPUs allowed {}",
                t.name,
                t.member,
                t.pid,
                fmt_secs(t.runnable_since_s),
                fmt_secs(t.waited_s),
                if t.still_waiting {
                    " (still waiting at the end)"
                } else {
                    " (then ran)"
                },
                cpus.join(",")
            );
            for c in &t.ran_meanwhile {
                let mut ran: Vec<String> = c
                    .top
                    .iter()
                    .map(|x| {
                        format!(
                            "{}[{}] (pid {}) {}",
                            x.name,
                            x.member,
                            x.pid,
                            fmt_secs(x.cpu_s)
                        )
                    })
                    .collect();
                if c.others > 0 {
                    ran.push(format!("{} others {}", c.others, fmt_secs(c.others_s)));
                }
                if ran.is_empty() {
                    ran.push("nothing (idle)".into());
                }
                let _ = writeln!(out, "    meanwhile on cpu{}: {}", c.cpu, ran.join(", "));
            }
        }
        if total > tasks.len() as u64 {
            let _ = writeln!(out, "  ...and {} more tasks", total - tasks.len() as u64);
        }
    }
    out
}

/// A time in s, as people read it: `1.5 s`, `230.1 ms`, `12.0 µs`.
fn fmt_secs(s: f64) -> String {
    if s == 0.0 {
        "0 s".into()
    } else if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// The figures of each phase of `runs` (`--phases`), one table per phase, the runs as
/// columns: what a workload's steps (a group started or changed at a time) did. Empty when
/// the runs have no phases.
pub fn phase_tables(runs: &[RunResult]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    if first.phases.is_empty() {
        return String::new();
    }
    let same_machine = runs.iter().all(|r| r.machine == first.machine);
    let same_workload = runs.iter().all(|r| r.workload == first.workload);
    let (headers, _, _) = column_headers(runs, same_machine, same_workload);
    type Getter = fn(&PhaseMetrics) -> Option<f64>;
    let rows: Vec<(String, Getter)> = vec![
        (
            format!("throughput ({})", first.metrics.throughput.unit),
            |p| Some(p.throughput),
        ),
        ("context switches/s".into(), |p| {
            Some(p.context_switches_per_s)
        }),
        ("migrations".into(), |p| Some(p.migrations as f64)),
        ("runqueue length avg".into(), |p| {
            Some(p.runqueue_length_avg)
        }),
        ("interactive p50 (us)".into(), |p| {
            p.interactive_wakeup_latency_us.map(|l| l.p50)
        }),
        ("interactive p99 (us)".into(), |p| {
            p.interactive_wakeup_latency_us.map(|l| l.p99)
        }),
        ("interactive max (us)".into(), |p| {
            p.interactive_wakeup_latency_us.map(|l| l.max)
        }),
        ("probe latency p50 (us)".into(), |p| {
            p.probe_latency_us.map(|l| l.p50)
        }),
        ("probe latency p99 (us)".into(), |p| {
            p.probe_latency_us.map(|l| l.p99)
        }),
        ("audio periods".into(), |p| p.audio.map(|a| a.chunks as f64)),
        ("audio underruns".into(), |p| {
            p.audio.map(|a| a.underruns as f64)
        }),
        ("audio deadline misses".into(), |p| {
            p.audio.map(|a| a.deadline_misses as f64)
        }),
        ("audio lateness p99 (us)".into(), |p| {
            p.audio.map(|a| a.lateness_us.p99)
        }),
        ("audio lateness max (us)".into(), |p| {
            p.audio.map(|a| a.lateness_us.max)
        }),
    ];
    let nphases = runs.iter().map(|r| r.phases.len()).max().unwrap_or(0);
    let mut out = String::new();
    for k in 0..nphases {
        let span = runs.iter().find_map(|r| r.phases.get(k)).expect("k < max");
        out.push_str(&format!(
            "phase {}: {} s to {} s\n",
            k + 1,
            fmt_num(span.from_s),
            fmt_num(span.to_s)
        ));
        let mut lines: Vec<Vec<String>> = Vec::new();
        let mut head = vec!["metric".to_string()];
        head.extend(headers.iter().cloned());
        lines.push(head);
        for (name, get) in &rows {
            // A run that ended before this phase has no column value.
            let vals: Vec<Option<f64>> =
                runs.iter().map(|r| r.phases.get(k).and_then(get)).collect();
            lines.extend(value_row(name, &vals));
        }
        out.push_str(&align(&lines));
    }
    out
}

/// A table row: the name, then each run's value (a count without decimals, `-` where there
/// is none); `None` when no run has a value.
fn value_row(name: &str, vals: &[Option<f64>]) -> Option<Vec<String>> {
    if vals.iter().all(|v| v.is_none()) {
        return None;
    }
    let fmt = if COUNT_ROWS.contains(&name) {
        fmt_count
    } else {
        fmt_num
    };
    let mut line = vec![name.to_string()];
    line.extend(
        vals.iter()
            .map(|v| v.filter(|x| x.is_finite()).map_or("-".into(), fmt)),
    );
    Some(line)
}

/// Columns padded to their widest cell (the first left-aligned, the rest right-aligned), a
/// rule under the first line.
fn align(lines: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|c| {
            lines
                .iter()
                .map(|l| l.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (n, l) in lines.iter().enumerate() {
        let mut s = String::new();
        for (c, cell) in l.iter().enumerate() {
            if c == 0 {
                s.push_str(&format!("{:<w$}", cell, w = widths[c]));
            } else {
                s.push_str(&format!("  {:>w$}", cell, w = widths[c]));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
        if n == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out
}

/// One column of a replay comparison: the recorded trace's figures or a policy's.
pub struct ReplayColumn<'a> {
    pub name: String,
    pub figures: &'a crate::trace::figures::Figures,
    /// The recorded task name each of this column's task names stands for.
    pub comm_of: &'a dyn Fn(&str) -> String,
}

/// The figures of a trace and of its replays side by side, then CPU time and runs per task
/// name for the `top` names with the most recorded CPU time.
pub fn replay_table(cols: &[ReplayColumn], top: usize) -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write;
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut row = |name: &str, f: &dyn Fn(&crate::trace::figures::Figures) -> String| {
        rows.push((
            name.to_string(),
            cols.iter().map(|c| f(c.figures)).collect(),
        ));
    };
    row("span (s)", &|f| fmt_num(f.span_s));
    row("CPUs", &|f| f.cpus.to_string());
    row("busy CPU time (s)", &|f| fmt_num(f.busy_cpu_s));
    row("idle fraction", &|f| format!("{:.3}", f.idle_fraction));
    row("context switches", &|f| f.context_switches.to_string());
    row("migrations", &|f| f.migrations.to_string());
    row("wakeups", &|f| f.wakeups.to_string());
    row("wakeup latency p50 (us)", &|f| {
        fmt_num(f.wakeup_latency_us.p50)
    });
    row("wakeup latency p99 (us)", &|f| {
        fmt_num(f.wakeup_latency_us.p99)
    });
    row("wakeup latency max (us)", &|f| {
        fmt_num(f.wakeup_latency_us.max)
    });
    row("runqueue wait total (ms)", &|f| {
        fmt_num(f.runqueue_wait_total_ms)
    });
    row("runqueue wait max (us)", &|f| {
        fmt_num(f.runqueue_wait_max_us)
    });
    row("forks / exits", &|f| format!("{} / {}", f.forks, f.exits));

    // Per task name: CPU ms and switch-ins, summed over the tasks of that name.
    let per: Vec<BTreeMap<String, (f64, u64)>> = cols
        .iter()
        .map(|c| {
            let mut m: BTreeMap<String, (f64, u64)> = BTreeMap::new();
            for t in &c.figures.tasks {
                let e = m.entry((c.comm_of)(&t.comm)).or_default();
                e.0 += t.cpu_ms;
                e.1 += t.runs;
            }
            m
        })
        .collect();
    let mut names: Vec<(&String, f64)> = per
        .first()
        .map(|m| m.iter().map(|(k, v)| (k, v.0)).collect())
        .unwrap_or_default();
    names.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let shown = names.len().min(top);
    for (name, _) in names.iter().take(shown) {
        let label = format!("{name}: CPU ms / runs");
        let vals = per
            .iter()
            .map(|m| match m.get(*name) {
                Some((ms, runs)) => format!("{} / {runs}", fmt_num(*ms)),
                None => "-".into(),
            })
            .collect();
        rows.push((label, vals));
    }

    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.1[i].len())
                .chain([cols[i].name.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let _ = write!(out, "{:<w0$}", "");
    for (c, w) in cols.iter().zip(&widths) {
        let _ = write!(out, "  {:>w$}", c.name);
    }
    out.push('\n');
    for (name, vals) in &rows {
        let _ = write!(out, "{name:<w0$}");
        for (v, w) in vals.iter().zip(&widths) {
            let _ = write!(out, "  {v:>w$}");
        }
        out.push('\n');
    }
    if names.len() > shown {
        let _ = writeln!(
            out,
            "({} more task names; --json has every task)",
            names.len() - shown
        );
    }
    out
}

/// A short run of two yielding tasks (O(1) on `up-2002`, 1 ms), for tests of what reads runs.
#[cfg(test)]
pub(crate) fn small_run() -> RunResult {
    let m = crate::machine::Machine::load("up-2002").unwrap();
    let w = crate::workload::Workload::parse("yield:instances=2").unwrap();
    let cfg = crate::sim::SimConfig {
        duration_ns: 1_000_000,
        ..Default::default()
    };
    crate::registry::PolicyKind::O1
        .simulate(&m, &w, cfg)
        .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_print_as_whole_numbers() {
        assert_eq!(fmt_count(6232.0), "6232");
        assert_eq!(fmt_count(0.0), "0");
        assert_eq!(fmt_count(12_345_678.0), "12.346M");
        // Measurements keep their decimals.
        assert_eq!(fmt_num(17.0), "17.00");
        // In the table: `sim events 6232`, not `6232.0`.
        let t = table(&[small_run()]);
        let line = t.lines().find(|l| l.starts_with("sim events")).unwrap();
        assert!(!line.contains('.'), "{line}");
    }

    #[test]
    fn the_ratio_column_is_named_by_what_tells_the_runs_apart() {
        let head = |runs: &[RunResult]| table(runs).lines().nth(2).unwrap().to_string();
        let mut a = small_run();
        a.rt_balance = Some("passive".into());
        let mut b = a.clone();
        b.rt_balance = Some("pushpull".into());
        // One policy in two modes: the modes.
        assert!(head(&[a.clone(), b.clone()]).ends_with("pushpull/passive"));
        // Two policies, one forcing its mode (o1 against o1:era=2002): the policies.
        b.policy = "o1:era=2002".into();
        let h = head(&[a, b]);
        assert!(
            h.ends_with(&format!("o1:era=2002/{}", small_run().policy)),
            "{h}"
        );
    }
}

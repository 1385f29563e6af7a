//! `--trace`, `--trace-format`, `--trace-window` of `sim`, `compare` and `replay`, and the
//! `replay` command itself.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use schedkit::machine::Machine;
use schedkit::registry::PolicyKind;
use schedkit::trace::timeline::{self, Timeline};
use schedkit::trace::{self, figures::Figures, Trace, TraceRecorder};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    /// Perfetto's protobuf (open in ui.perfetto.dev or trace_processor).
    Perfetto,
    /// ftrace text as /sys/kernel/tracing/trace prints it (Perfetto, traceshark and
    /// `schedkit replay` read it).
    Ftrace,
}

#[derive(Args, Clone, Default)]
pub struct TraceOpts {
    /// Write the run's scheduler trace to FILE: per-CPU switches, thread states, wakeups with
    /// their waker, migrations, frequency and idle, lock waits. With several runs, each
    /// gets FILE with its policy (and modes) before the extension.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Trace format; default: `ftrace` for a .txt/.ftrace/.trace file, else `perfetto`.
    #[arg(long, value_enum, requires = "trace")]
    pub trace_format: Option<TraceFormat>,
    /// Keep only the events inside this simulated time window, e.g. `2s..3s`, `0..500ms`
    /// (big runs stay practical).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_window, requires = "trace")]
    pub trace_window: Option<(u64, u64)>,
}

pub fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("'{s}': give FROM..TO, e.g. 2s..3s"))?;
    let from = if a.trim().is_empty() || a.trim() == "0" {
        0
    } else {
        schedkit::workload::parse_duration(a)?
    };
    let to = schedkit::workload::parse_duration(b)?;
    if to <= from {
        return Err(format!("'{s}': the window ends before it starts"));
    }
    Ok((from, to))
}

impl TraceOpts {
    pub fn recorder(&self) -> Option<TraceRecorder> {
        self.trace
            .as_ref()
            .map(|_| TraceRecorder::new(self.trace_window))
    }

    fn format(&self, path: &Path) -> TraceFormat {
        self.trace_format
            .unwrap_or_else(|| match path.extension().and_then(|e| e.to_str()) {
                Some("txt" | "ftrace" | "trace") => TraceFormat::Ftrace,
                _ => TraceFormat::Perfetto,
            })
    }

    /// Checks before any run that the trace file can be created (and leaves nothing).
    pub fn check(&self) -> Result<()> {
        match &self.trace {
            Some(p) => crate::check_creatable(p, "--trace"),
            None => Ok(()),
        }
    }

    /// Writes a run's trace; `label` names the run when there are several.
    pub fn write(&self, trace: &Trace, label: Option<&str>) -> Result<()> {
        let Some(base) = &self.trace else {
            return Ok(());
        };
        let path = match label {
            Some(l) => labelled(base, l),
            None => base.clone(),
        };
        let format = self.format(&path);
        let bytes = match format {
            TraceFormat::Perfetto => trace::perfetto::encode(trace),
            TraceFormat::Ftrace => trace::ftrace::to_string(trace).into_bytes(),
        };
        crate::write_out(&path, &bytes, "--trace")?;
        let window = match self.trace_window {
            Some((a, b)) => format!(" in {:.3}..{:.3} s", a as f64 / 1e9, b as f64 / 1e9),
            None => String::new(),
        };
        eprintln!(
            "trace: {} events{window}, {} tasks, {:.1} KiB written to {} ({})",
            trace.events.len(),
            trace.tasks.len(),
            bytes.len() as f64 / 1024.0,
            path.display(),
            match format {
                TraceFormat::Perfetto => "Perfetto protobuf: open it at ui.perfetto.dev",
                TraceFormat::Ftrace => "ftrace text",
            }
        );
        Ok(())
    }
}

/// `out.pftrace` + `eevdf` → `out.eevdf.pftrace`.
fn labelled(base: &Path, label: &str) -> PathBuf {
    let label: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = base
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match base.extension() {
        Some(e) => format!("{stem}.{label}.{}", e.to_string_lossy()),
        None => format!("{stem}.{label}"),
    };
    base.with_file_name(name)
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The trace: tracefs text (/sys/kernel/tracing/trace), `trace-cmd report` output (with or
    /// without -N/-R), or `perf sched script` text. scripts/record-trace.sh records one.
    pub file: PathBuf,
    /// Columns: `recorded` (the trace's own figures) and policies to replay it under.
    #[arg(long, value_delimiter = ',', default_value = "recorded,eevdf")]
    pub policies: Vec<String>,
    /// Machine to replay on: a shipped profile or a .toml path (`host` is this machine).
    #[arg(long, default_value = "host")]
    pub machine: String,
    /// Simulated time limit per replay (default: ten times the trace's span, at least 1 s).
    #[arg(long, value_parser = crate::parse_dur)]
    pub duration: Option<u64>,
    /// Seed of the simulation's random choices.
    #[arg(long, default_value = "1", value_parser = crate::parse_seed)]
    pub seed: u64,
    /// Also write the rebuilt workload as a TOML workload file.
    #[arg(long, value_name = "FILE")]
    pub emit_workload: Option<PathBuf>,
    /// Task names shown in the per-task rows.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Starvation watchdog: after the table, report each replayed task that waited runnable,
    /// not running, this long or longer, with what ran meanwhile on each CPU it may use (e.g.
    /// `--starve 100ms`; in --json as each replayed column's `starved`).
    #[arg(long, value_parser = crate::parse_dur, value_name = "DURATION", allow_hyphen_values = true)]
    pub starve: Option<u64>,
    /// Also write every column's figures (every task included) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub trace_out: TraceOpts,
}

#[derive(serde::Serialize)]
struct ReplayJson<'a> {
    trace: String,
    import: &'a trace::ImportStats,
    replay: &'a trace::replay::ReplayStats,
    machine: String,
    columns: Vec<ReplayColumnJson<'a>>,
}

#[derive(serde::Serialize)]
struct ReplayColumnJson<'a> {
    name: String,
    completed: Option<bool>,
    figures: &'a Figures,
    /// Who ran on each CPU in the last whole 50 ms window, for `schedkit report`.
    timeline: Timeline,
    /// The starvation watchdog's report of a replay (`--starve`).
    #[serde(skip_serializing_if = "Option::is_none")]
    starved: Option<Vec<schedkit::metrics::StarvedTask>>,
}

/// The report's timeline of a trace: its last whole default-width window.
fn timeline_of(t: &Trace) -> Timeline {
    let (a, b) = Timeline::last_window(t, timeline::DEFAULT_WIDTH_NS);
    Timeline::from_trace(&t.window(a, b), timeline::MAX_SLICES)
}

pub fn replay(a: ReplayArgs) -> Result<()> {
    let mut want_recorded = false;
    let mut policies = Vec::new();
    for p in &a.policies {
        if p.trim() == "recorded" {
            want_recorded = true;
        } else {
            policies.push(
                PolicyKind::parse(p)
                    .map_err(anyhow::Error::msg)
                    .context("--policies (or `recorded`)")?,
            );
        }
    }
    if !want_recorded && policies.is_empty() {
        bail!("--policies: name `recorded` or at least one policy");
    }
    let machine = Machine::load(&a.machine).context("--machine")?;
    // Every output can be made before the work (an existing file stays as it was until the
    // new one is whole).
    a.trace_out.check()?;
    if let Some(p) = &a.json {
        crate::check_creatable(p, "--json")?;
    }
    if let Some(p) = &a.emit_workload {
        crate::check_creatable(p, "--emit-workload")?;
    }
    let recorded = trace::input::load(&a.file).map_err(anyhow::Error::msg)?;
    let s = &recorded.stats;
    eprintln!(
        "read {}: {} lines, {} events, {} tasks, {} CPUs, {:.3} s",
        a.file.display(),
        s.lines,
        s.events,
        recorded.tasks.len(),
        recorded.ncpus,
        (recorded.end_ns - recorded.start_ns) as f64 / 1e9
    );
    let notes = import_notes(s);
    if !notes.is_empty() {
        eprintln!("  {}", notes.join("; "));
    }
    for ex in &s.malformed_examples {
        eprintln!("  malformed: {ex}");
    }
    let name = a
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    let (workload, rep) = trace::replay::workload(
        &recorded,
        &name,
        &trace::replay::OpPrices::of_machine(&machine),
    )
    .map_err(anyhow::Error::msg)
    .context("rebuilding the trace's tasks as a workload")?;
    let st = &rep.stats;
    eprintln!(
        "replay: {} tasks ({} forked), {} runs ({:.3} CPU s), {} task wakeups, {} timed sleeps, {} dropped wakeups of tasks not asleep",
        st.tasks,
        st.forked_tasks,
        st.run_atoms,
        st.run_ns as f64 / 1e9,
        st.task_wakeups,
        st.timed_sleeps + st.sleeps_without_wakeup,
        st.dropped_wakeups
    );
    if st.task_wakeups_of_blocking > 0 || st.dropped_wakeups_of_blocking > 0 {
        eprintln!(
            "  {} of the task wakeups woke a task on its way to sleep (its switch to sleep, then its sched_wakeup, came after the waking): kept as its waker's; {} such wakeups from interrupts dropped",
            st.task_wakeups_of_blocking, st.dropped_wakeups_of_blocking
        );
    }
    if st.policy_changes + st.policy_changes_dropped > 0 {
        eprintln!(
            "  {} sched_setscheduler() calls replayed where their task made them ({} not: another task's, or to a policy the replay does not set, such as SCHED_DEADLINE)",
            st.policy_changes, st.policy_changes_dropped
        );
    }
    if st.sync_wakeups > 0 {
        eprintln!(
            "  {} of the task wakeups are an exiting task's wakeup of its parent in wait(), made with WF_SYNC (recorded at exit_notify's preemption depth)",
            st.sync_wakeups
        );
    }
    eprintln!(
        "  {:.3} ms of {}'s system-call prices taken off the recorded runs ({:.3} ms left over)",
        st.deducted_ns as f64 / 1e6,
        machine.name(),
        st.undeducted_ns as f64 / 1e6
    );
    if let Some(p) = &a.emit_workload {
        crate::write_out(p, rep.toml().as_bytes(), "--emit-workload")?;
        eprintln!("workload written to {}", p.display());
    }
    let span = recorded.end_ns - recorded.start_ns;
    let duration = a
        .duration
        .unwrap_or_else(|| (span.saturating_mul(10)).max(1_000_000_000));

    // The recorded task each replayed task stands for: its group name → the comm.
    let by_group: std::collections::HashMap<String, String> = (0..recorded.tasks.len())
        .map(|i| {
            (
                trace::replay::group_name(&recorded, i),
                recorded.tasks[i].comm.clone(),
            )
        })
        .collect();
    let same = |c: &str| c.to_string();
    let via_group = |c: &str| by_group.get(c).cloned().unwrap_or_else(|| c.to_string());

    let recorded_figures = trace::figures::figures(&recorded);
    let mut runs: Vec<(String, Option<bool>, Figures, Timeline)> = Vec::new();
    // Each replay's result, for the watchdog's report (`--starve`).
    let mut results = Vec::new();
    for p in &policies {
        let pb = crate::progress_bar(
            false,
            format!("{} on {} / {name}", p.name(), machine.name()),
        );
        let mut on_progress = |f: f64| pb.set_position((f * 1000.0) as u64);
        let mut rec = TraceRecorder::new(None);
        let cfg = schedkit::sim::SimConfig {
            duration_ns: duration,
            seed: a.seed,
            progress: Some(&mut on_progress),
            trace: Some(&mut rec),
            starve: a
                .starve
                .map(|threshold_ns| schedkit::sim::watchdog::Starve {
                    threshold_ns,
                    stop: false,
                }),
            ..Default::default()
        };
        let r = p
            .simulate(&machine, &workload, cfg)
            .with_context(|| format!("replaying {} under {}", a.file.display(), p.name()))?;
        pb.finish_and_clear();
        if !r.completed {
            eprintln!(
                "note: under {} the replay did not finish within {:.3} s of simulated time ({}); its figures cover that time",
                p.label(),
                duration as f64 / 1e9,
                r.stop_reason
            );
        }
        let t = rec.finish();
        let window = a.trace_out.trace_window;
        let out = match window {
            Some((x, y)) => t.window(x, y),
            None => t.clone(),
        };
        let label = p.label();
        a.trace_out
            .write(&out, (policies.len() > 1).then_some(label.as_str()))?;
        runs.push((
            label.clone(),
            Some(r.completed),
            trace::figures::figures(&t),
            timeline_of(&t),
        ));
        results.push(r);
    }
    let mut cols = Vec::new();
    if want_recorded {
        cols.push(schedkit::report::ReplayColumn {
            name: "recorded".into(),
            figures: &recorded_figures,
            comm_of: &same,
        });
    }
    for (n, _, f, _) in &runs {
        cols.push(schedkit::report::ReplayColumn {
            name: n.clone(),
            figures: f,
            comm_of: &via_group,
        });
    }
    crate::out(&schedkit::report::replay_table(&cols, a.top));
    crate::out(&schedkit::report::starved_report(&results));
    if let Some(p) = &a.json {
        let mut columns = Vec::new();
        if want_recorded {
            columns.push(ReplayColumnJson {
                name: "recorded".into(),
                completed: None,
                figures: &recorded_figures,
                timeline: timeline_of(&recorded),
                starved: None,
            });
        }
        for ((n, c, f, tl), r) in runs.iter().zip(&results) {
            columns.push(ReplayColumnJson {
                name: n.clone(),
                completed: *c,
                figures: f,
                timeline: tl.clone(),
                starved: r.starved.clone(),
            });
        }
        crate::write_json(
            Some(p),
            &ReplayJson {
                trace: a.file.display().to_string(),
                import: &recorded.stats,
                replay: &rep.stats,
                machine: machine.name().to_string(),
                columns,
            },
        )?;
    }
    Ok(())
}

/// What the importer counted, in words (only what is not zero).
fn import_notes(s: &trace::ImportStats) -> Vec<String> {
    let mut v = Vec::new();
    let mut add = |n: u64, what: &str| {
        if n > 0 {
            v.push(format!("{n} {what}"));
        }
    };
    add(s.malformed, "malformed lines (skipped)");
    add(
        s.lost_events,
        "events lost by the ring buffer (pages flagged as missing events)",
    );
    add(s.truncated_edges, "cut first/last lines (skipped)");
    add(s.unknown_comms, "`<...>` names");
    add(s.pid_reuse, "reused PIDs (new tasks)");
    add(s.out_of_order, "events out of time order (sorted)");
    add(
        s.overlapping_runs,
        "runs overlapping across CPUs (clock skew)",
    );
    add(
        s.inconsistent_switches,
        "switches whose prev was not the CPU's task",
    );
    add(
        s.inferred_switches,
        "unrecorded switches put back (a CPU's events name another task than its last switch)",
    );
    if let Some(h) = s
        .header_cpus
        .filter(|&h| s.event_cpus > 0 && h > s.event_cpus)
    {
        v.push(format!(
            "the header gives {h} CPUs and the events use {} (the recorded idle time counts all {h})",
            s.event_cpus
        ));
    }
    let other: u64 = s.other_events.values().sum();
    if other > 0 {
        let names: Vec<String> = s
            .other_events
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        v.push(format!(
            "{other} other events not used ({})",
            names.join(", ")
        ));
    }
    v
}

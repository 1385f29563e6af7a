//! `schedkit report`: result files → one self-contained HTML page (inline CSS and SVG, no
//! script, nothing fetched), for a reader who wants to see the runs rather than read tables.
//!
//! It reads what `sim --json`, `compare --json` (one run or a list of runs) and
//! `replay --json` (columns of trace figures) write. A result file is user input: it is read
//! with serde into the few fields the page needs (others are ignored, so files of older and
//! newer versions load), and an error names the file, line and column.
//!
//! The page is well-formed XML as well as HTML (XHTML polyglot) so that a test can parse it
//! with an XML parser and check each plot.

use super::svg::{self, Bar, CdfLine, Stack};
use crate::trace::timeline::Timeline;
use serde::Deserialize;
use std::fmt::Write;

#[derive(Deserialize)]
struct RunIn {
    policy: String,
    machine: String,
    workload: String,
    seed: u64,
    #[serde(default)]
    rt_balance: Option<String>,
    #[serde(default)]
    lock_mode: Option<String>,
    simulated_s: Option<f64>,
    stop_reason: String,
    metrics: MetricsIn,
    #[serde(default)]
    timeline: Option<Timeline>,
}

#[derive(Deserialize)]
struct MetricsIn {
    context_switches: u64,
    context_switches_per_s: Option<f64>,
    migrations: u64,
    idle_fraction: Option<f64>,
    wakeup_latency_us: LatencyIn,
    #[serde(default)]
    wakeup_latency_cdf_us: Vec<[f64; 2]>,
    fairness_jain: Option<f64>,
    throughput: ThroughputIn,
    cpu_time_s: CpuTimeIn,
}

#[derive(Deserialize, Clone, Copy)]
struct LatencyIn {
    p50: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
    count: u64,
}

#[derive(Deserialize)]
struct ThroughputIn {
    unit: String,
    value: Option<f64>,
}

#[derive(Deserialize)]
struct CpuTimeIn {
    user: f64,
    sys: f64,
    /// Includes `lock_spin`.
    sched: f64,
    lock_spin: f64,
    cache_refill: f64,
    irq: f64,
    idle: f64,
}

#[derive(Deserialize)]
struct ReplayIn {
    trace: String,
    machine: String,
    columns: Vec<ReplayColumnIn>,
}

#[derive(Deserialize)]
struct ReplayColumnIn {
    name: String,
    figures: FiguresIn,
    #[serde(default)]
    timeline: Option<Timeline>,
}

#[derive(Deserialize)]
struct FiguresIn {
    span_s: f64,
    busy_cpu_s: f64,
    idle_fraction: f64,
    cpus: u32,
    context_switches: u64,
    migrations: u64,
    wakeup_latency_us: LatencyIn,
    #[serde(default)]
    wakeup_latency_cdf_us: Vec<[f64; 2]>,
}

/// One run as the page shows it.
struct Run {
    /// The policy, then the modes where runs differ in them (set by `render`).
    label: String,
    modes: [Option<String>; 2],
    /// Runs of one group share a machine and a workload (one CDF and one bar chart each).
    group: String,
    params: Vec<(&'static str, String)>,
    throughput: Option<(String, f64)>,
    switches: u64,
    switches_per_s: Option<f64>,
    migrations: u64,
    latency: LatencyIn,
    cdf: Vec<[f64; 2]>,
    fairness: Option<f64>,
    idle: Option<f64>,
    /// Seconds per `CPU_CATEGORIES` entry.
    cpu: Vec<f64>,
    timeline: Option<Timeline>,
}

const CPU_CATEGORIES: [&str; 7] = [
    "user",
    "sys",
    "scheduler",
    "lock spin",
    "cache refill",
    "irq",
    "idle",
];

/// The most runs one page shows (each brings its plots and tables: 1 000 files made a page
/// of 616 MB).
pub const MAX_RUNS: usize = 256;

/// A timeline as a result file gives it, within what the page can draw: CPUs no more than a
/// trace may have, slices no more than a timeline keeps, and every slice on a CPU and a task
/// the timeline has.
fn check_timeline(tl: &Timeline) -> Result<(), String> {
    let max_cpus = crate::trace::import::MAX_CPUS;
    if tl.cpus == 0 || tl.cpus > max_cpus {
        return Err(format!("{} CPUs: must be 1..={max_cpus}", tl.cpus));
    }
    // A timeline stops after MAX_SLICES, then closes what runs on each CPU.
    let max_slices = crate::trace::timeline::MAX_SLICES + 2 + tl.cpus as usize;
    if tl.slices.len() > max_slices {
        return Err(format!(
            "{} slices, more than the {max_slices} a timeline of {} CPUs keeps",
            tl.slices.len(),
            tl.cpus
        ));
    }
    // Tasks are those the slices name.
    if tl.tasks.len() > tl.slices.len() {
        return Err(format!(
            "{} tasks for {} slices",
            tl.tasks.len(),
            tl.slices.len()
        ));
    }
    if tl.to_ns < tl.from_ns {
        return Err(format!(
            "window {}..{} ns ends before it starts",
            tl.from_ns, tl.to_ns
        ));
    }
    for (k, sl) in tl.slices.iter().enumerate() {
        if sl.cpu >= tl.cpus || sl.task as usize >= tl.tasks.len() || sl.end_ns < sl.start_ns {
            return Err(format!(
                "slice {}: CPU {} task {} from {} to {} ns, outside the timeline's {} CPUs and {} tasks",
                k + 1,
                sl.cpu,
                sl.task,
                sl.start_ns,
                sl.end_ns,
                tl.cpus,
                tl.tasks.len()
            ));
        }
    }
    Ok(())
}

/// Result files, as they were read.
pub struct Input {
    runs: Vec<Run>,
    files: Vec<String>,
}

impl Input {
    pub fn new() -> Input {
        Input {
            runs: Vec::new(),
            files: Vec::new(),
        }
    }

    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Adds the runs of one result file (`name` is how errors and the page name it).
    pub fn add(&mut self, name: &str, text: &str) -> Result<(), String> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{name}: not JSON: {e}"))?;
        let typed = |e: serde_json::Error| format!("{name}: not a schedkit result file: {e}");
        let first = self.runs.len();
        match &value {
            serde_json::Value::Object(m) if m.contains_key("columns") => {
                let r: ReplayIn = serde_json::from_str(text).map_err(typed)?;
                for c in r.columns {
                    self.runs.push(from_replay(&r.trace, &r.machine, c));
                }
            }
            serde_json::Value::Array(_) => {
                let rs: Vec<RunIn> = serde_json::from_str(text).map_err(typed)?;
                self.runs.extend(rs.into_iter().map(from_run));
            }
            serde_json::Value::Object(_) => {
                let r: RunIn = serde_json::from_str(text).map_err(typed)?;
                self.runs.push(from_run(r));
            }
            _ => {
                return Err(format!(
                    "{name}: not a schedkit result file: expected an object or a list of runs"
                ))
            }
        }
        if self.runs.len() == first {
            return Err(format!("{name}: holds no runs"));
        }
        // What a page will draw, bounded before anything is drawn: a file that claims four
        // billion CPUs would otherwise allocate their rows.
        let bounded = (|| {
            for (i, r) in self.runs[first..].iter().enumerate() {
                if let Some(tl) = &r.timeline {
                    check_timeline(tl)
                        .map_err(|e| format!("{name}: run {}: timeline: {e}", i + 1))?;
                }
            }
            if self.runs.len() > MAX_RUNS {
                return Err(format!(
                    "{name}: {} runs in all, more than the {MAX_RUNS} one page shows; report fewer files (or fewer runs per file)",
                    self.runs.len()
                ));
            }
            Ok(())
        })();
        if let Err(e) = bounded {
            // A refused file adds nothing.
            self.runs.truncate(first);
            return Err(e);
        }
        for r in &mut self.runs[first..] {
            r.params.push(("file", name.to_string()));
        }
        self.files.push(name.to_string());
        Ok(())
    }

    /// The page, and each of its plots as a standalone SVG document named `<kind>-<n>`
    /// (`latency-cdf-1`, `throughput-1`, `cpu-time-1`, `timeline-3`, ...).
    pub fn render(&mut self) -> (String, Vec<(String, String)>) {
        // Name a run by its policy, and by a mode only where the runs differ in it.
        for m in 0..2 {
            // Runs without the mode (a policy that ignores it) do not count.
            let mut seen: Vec<&String> = self
                .runs
                .iter()
                .filter_map(|r| r.modes[m].as_ref())
                .collect();
            seen.sort();
            seen.dedup();
            if seen.len() > 1 {
                for r in &mut self.runs {
                    if let Some(x) = &r.modes[m] {
                        r.label = format!("{} {x}", r.label);
                    }
                }
            }
        }
        let mut plots = Vec::new();
        let page = render(&self.runs, &self.files, &mut plots);
        (page, plots)
    }
}

impl Default for Input {
    fn default() -> Self {
        Input::new()
    }
}

fn from_run(r: RunIn) -> Run {
    let m = &r.metrics;
    let c = &m.cpu_time_s;
    let mut params = vec![
        ("policy", r.policy.clone()),
        ("machine", r.machine.clone()),
        ("workload", r.workload.clone()),
        ("seed", r.seed.to_string()),
    ];
    if let Some(b) = &r.rt_balance {
        params.push(("RT balancing", b.clone()));
    }
    if let Some(l) = &r.lock_mode {
        params.push(("lock mode", l.clone()));
    }
    params.push((
        "simulated",
        r.simulated_s.map_or("?".into(), |s| format!("{s:.6} s")),
    ));
    params.push(("stopped", r.stop_reason.replace('_', " ")));
    Run {
        group: format!("{} on {}", r.workload, r.machine),
        label: r.policy.clone(),
        modes: [r.rt_balance.clone(), r.lock_mode.clone()],
        params,
        throughput: m
            .throughput
            .value
            .filter(|v| v.is_finite())
            .map(|v| (m.throughput.unit.clone(), v)),
        switches: m.context_switches,
        switches_per_s: m.context_switches_per_s,
        migrations: m.migrations,
        latency: m.wakeup_latency_us,
        cdf: m.wakeup_latency_cdf_us.clone(),
        fairness: m.fairness_jain,
        idle: m.idle_fraction,
        cpu: vec![
            c.user,
            c.sys,
            (c.sched - c.lock_spin).max(0.0),
            c.lock_spin,
            c.cache_refill,
            c.irq,
            c.idle,
        ],
        timeline: r.timeline,
    }
}

fn from_replay(trace: &str, machine: &str, c: ReplayColumnIn) -> Run {
    let f = &c.figures;
    let recorded = c.name == "recorded";
    let capacity = f.span_s * f.cpus as f64;
    // A trace says busy or idle, not what the busy time was spent on.
    let mut cpu = vec![0.0; CPU_CATEGORIES.len()];
    cpu[0] = f.busy_cpu_s;
    cpu[6] = (capacity - f.busy_cpu_s).max(0.0);
    Run {
        label: c.name.clone(),
        modes: [None, None],
        group: format!("replay of {trace}"),
        params: vec![
            (
                "policy",
                if recorded {
                    "recorded (the trace's own figures)".into()
                } else {
                    c.name.clone()
                },
            ),
            (
                "machine",
                if recorded {
                    "the traced machine".into()
                } else {
                    machine.to_string()
                },
            ),
            ("workload", format!("replay of {trace}")),
            ("span", format!("{:.6} s", f.span_s)),
        ],
        throughput: None,
        switches: f.context_switches,
        switches_per_s: (f.span_s > 0.0).then(|| f.context_switches as f64 / f.span_s),
        migrations: f.migrations,
        latency: f.wakeup_latency_us,
        cdf: f.wakeup_latency_cdf_us.clone(),
        fairness: None,
        idle: Some(f.idle_fraction),
        cpu,
        timeline: c.timeline,
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "–".into(),
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
.plot{display:block;margin:12px 0;border:1px solid #eee}.note{color:#555;font-size:13px}";

/// Puts a plot on the page and in the list of plots (`<kind>-<n>` names, n counting from 1 per
/// kind).
fn plot(o: &mut String, plots: &mut Vec<(String, String)>, kind: &str, svg: String) {
    let n = plots.iter().filter(|(k, _)| k.starts_with(kind)).count() + 1;
    o.push_str(&svg);
    plots.push((format!("{kind}-{n}"), svg));
}

fn render(runs: &[Run], files: &[String], plots: &mut Vec<(String, String)>) -> String {
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/>");
    let _ = write!(
        o,
        "<title>schedkit report</title><style>{STYLE}</style></head><body><h1>schedkit report</h1><p class=\"note\">{} runs from {} (schedkit {}). Simulated figures come from the modelled mechanisms; see the parameters at the end.</p>",
        runs.len(),
        svg::esc(&files.join(", ")),
        env!("CARGO_PKG_VERSION")
    );
    // Summary table.
    o.push_str("<h2 id=\"summary\">Summary</h2><table><tr><th>run</th><th>workload / machine</th><th>throughput</th><th>switches/s</th><th>migrations</th><th>wakeup p50 µs</th><th>p99 µs</th><th>max µs</th><th>fairness (Jain)</th><th>idle</th></tr>");
    for r in runs {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            svg::esc(&r.label),
            svg::esc(&r.group),
            r.throughput
                .as_ref()
                .map_or("–".into(), |(u, v)| format!("{} {}", svg::tick_label(*v), svg::esc(u))),
            opt(r.switches_per_s, 0),
            r.migrations,
            opt(r.latency.p50, 1),
            opt(r.latency.p99, 1),
            opt(r.latency.max, 1),
            opt(r.fairness, 3),
            r.idle.map_or("–".into(), |i| format!("{:.1} %", i * 100.0)),
        );
    }
    o.push_str("</table>");

    // Groups in order of first appearance.
    let mut groups: Vec<&str> = Vec::new();
    for r in runs {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    o.push_str("<h2 id=\"latency\">Wakeup latency</h2><p class=\"note\">From a wakeup (or fork) until the task runs; the fraction of wakeups at or under each latency (log axis).</p>");
    for g in &groups {
        let members: Vec<&Run> = runs.iter().filter(|r| r.group == *g).collect();
        let lines: Vec<CdfLine> = members
            .iter()
            .filter(|r| !r.cdf.is_empty())
            .map(|r| CdfLine {
                label: &r.label,
                points: &r.cdf,
            })
            .collect();
        if lines.is_empty() {
            let _ = write!(
                o,
                "<p class=\"note\">{}: no wakeups recorded (or files written before schedkit kept the distribution).</p>",
                svg::esc(g)
            );
            continue;
        }
        plot(
            &mut o,
            plots,
            "latency-cdf",
            svg::cdf(
                &format!("Wakeup latency CDF: {g}"),
                "wakeup latency, µs",
                &lines,
            ),
        );
    }
    o.push_str("<h2 id=\"throughput\">Throughput</h2><p class=\"note\">The workload's own figure per run, with its context switches and migrations under each bar.</p>");
    for g in &groups {
        let members: Vec<&Run> = runs.iter().filter(|r| r.group == *g).collect();
        // Bars share an axis only with the same unit.
        let mut units: Vec<&str> = Vec::new();
        for r in &members {
            if let Some((u, _)) = &r.throughput {
                if !units.contains(&u.as_str()) {
                    units.push(u);
                }
            }
        }
        let counters = |r: &Run| {
            format!(
                "{} switches/s\n{} migrations",
                r.switches_per_s
                    .filter(|v| v.is_finite())
                    .map_or(r.switches.to_string(), svg::tick_label),
                r.migrations
            )
        };
        if units.is_empty() {
            // Trace replays have no workload figure: show the switch rate itself.
            let bars: Vec<Bar> = members
                .iter()
                .map(|r| Bar {
                    label: &r.label,
                    value: r.switches_per_s.unwrap_or(f64::NAN),
                    note: format!("{} migrations", r.migrations),
                })
                .collect();
            plot(
                &mut o,
                plots,
                "switches",
                svg::bars(&format!("Context switches: {g}"), "switches/s", &bars),
            );
            continue;
        }
        for u in units {
            let bars: Vec<Bar> = members
                .iter()
                .filter(|r| r.throughput.as_ref().is_some_and(|(x, _)| x == u))
                .map(|r| Bar {
                    label: &r.label,
                    value: r.throughput.as_ref().map_or(f64::NAN, |t| t.1),
                    note: counters(r),
                })
                .collect();
            plot(
                &mut o,
                plots,
                "throughput",
                svg::bars(&format!("Throughput: {g}"), u, &bars),
            );
        }
    }
    o.push_str("<h2 id=\"cpu\">Where CPU time went</h2><p class=\"note\">Each run's CPU time (all CPUs) split by what it was spent on; hover for seconds. A replayed trace says only busy (shown as user) or idle.</p>");
    let rows: Vec<Stack> = runs
        .iter()
        .map(|r| Stack {
            label: &r.label,
            parts: r.cpu.clone(),
        })
        .collect();
    plot(
        &mut o,
        plots,
        "cpu-time",
        svg::stacked("CPU time breakdown", &CPU_CATEGORIES, &rows),
    );

    o.push_str("<h2 id=\"timelines\">Per-CPU timelines</h2><p class=\"note\">Who ran on each CPU in a short window (the last whole 50 ms before the run ended, shortened when it would hold more than 4000 slices); hover a slice for the task and its times.</p>");
    let mut any = false;
    for r in runs {
        if let Some(tl) = &r.timeline {
            any = true;
            let title = format!(
                "{} ({}): {:.1}–{:.1} ms{}",
                r.label,
                r.group,
                tl.from_ns as f64 / 1e6,
                tl.to_ns as f64 / 1e6,
                if tl.truncated {
                    ", cut at 4000 slices"
                } else {
                    ""
                }
            );
            plot(&mut o, plots, "timeline", svg::timeline(&title, tl));
        }
    }
    if !any {
        o.push_str(
            "<p class=\"note\">These result files hold no timeline (written without one).</p>",
        );
    }
    o.push_str("<h2 id=\"parameters\">Parameters</h2>");
    for r in runs {
        let _ = write!(o, "<h3>{}</h3><table>", svg::esc(&r.label));
        for (k, v) in &r.params {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td></tr>",
                svg::esc(k),
                svg::esc(v)
            );
        }
        let _ = write!(
            o,
            "<tr><td>context switches</td><td>{}</td></tr><tr><td>wakeups measured</td><td>{}</td></tr></table>",
            r.switches, r.latency.count
        );
    }
    o.push_str("</body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_place() {
        let mut i = Input::new();
        let e = i.add("r.json", "{\"policy\": 3}").unwrap_err();
        assert!(e.starts_with("r.json: not a schedkit result file"), "{e}");
        assert!(e.contains("line 1"), "{e}");
        let e = i.add("x.json", "[1,").unwrap_err();
        assert!(e.starts_with("x.json: not JSON"), "{e}");
        assert!(i.add("e.json", "[]").unwrap_err().contains("holds no runs"));
        assert!(i.add("n.json", "42").is_err());
    }

    /// A small run's JSON, as `sim --json` writes it, with a timeline of `cpus` CPUs.
    fn run_json(cpus: u64, slice_cpu: u64) -> String {
        let mut v = serde_json::to_value(super::super::small_run()).unwrap();
        v["timeline"] = serde_json::json!({
            "from_ns": 0, "to_ns": 1000, "cpus": cpus,
            "tasks": [{"pid": 1, "comm": "a"}],
            "slices": [{"cpu": slice_cpu, "start_ns": 0, "end_ns": 10, "task": 0}],
        });
        v.to_string()
    }

    #[test]
    fn what_a_page_would_draw_is_bounded_before_it_is_drawn() {
        let mut i = Input::new();
        i.add("ok.json", &run_json(1, 0)).unwrap();
        // Four billion CPUs used to allocate their rows (2.2 GB, then an abort).
        let e = i.add("big.json", &run_json(4_294_967_295, 0)).unwrap_err();
        assert!(
            e.contains("big.json: run 1: timeline: 4294967295 CPUs"),
            "{e}"
        );
        let e = i.add("bad.json", &run_json(2, 5)).unwrap_err();
        assert!(e.contains("slice 1: CPU 5"), "{e}");
        // More runs than a page shows.
        let one = run_json(1, 0);
        let many = format!("[{}]", vec![one.as_str(); MAX_RUNS].join(","));
        let e = i.add("many.json", &many).unwrap_err();
        assert!(e.contains(&format!("{} runs in all", MAX_RUNS + 1)), "{e}");
        // The refused files added nothing.
        assert_eq!(i.runs(), 1);
    }
}

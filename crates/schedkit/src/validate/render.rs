//! A validation's results written out: the text table `schedkit validate` prints, the
//! self-contained HTML page (`--report`) and the Markdown summary (`--markdown`, the shape of
//! `docs/validation.md`'s table). Formatting only: nothing here runs or judges.

use super::{Suite, Tolerance, WorkloadResult, FIGURES};
use crate::report::svg::esc;

fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The text table of a validation.
pub fn table(suite: &Suite, machine: &str, results: &[Result<WorkloadResult, String>]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "suite {} (kernel {}, recorded {}), machine {}",
        suite.dir.display(),
        suite.kernel,
        suite.recorded,
        machine
    );
    let ranges = results.iter().flatten().any(|w| w.repeats > 0);
    let _ = writeln!(
        s,
        "{:<16} {:<26} {:>11} {:>11} {:>8} {:>7}  {:<5}{}",
        "workload",
        "figure",
        "recorded",
        "replayed",
        "error",
        "target",
        "",
        if ranges {
            " kernel's range (runs), target of any"
        } else {
            ""
        }
    );
    let (mut ok, mut all) = (0, 0);
    let (mut in_range, mut ranged) = (0, 0);
    // Forks the recording kept on the parent's CPU beside an idle one, of those beside one.
    let mut kept_forks = (0u64, 0u64);
    let (mut selfs, mut self_judged) = (0, 0);
    for r in results {
        match r {
            Err(e) => {
                let _ = writeln!(s, "error: {e}");
            }
            Ok(w) => {
                let title = format!("{} ({})", w.name, w.policy);
                for (i, row) in w.rows.iter().chain(w.model.as_ref()).enumerate() {
                    let range = match (row.kernel_range, row.within_some_run) {
                        (Some((lo, hi)), Some(inside)) => format!(
                            " {}..{} ({}) {}",
                            num(lo),
                            num(hi),
                            w.recordings(),
                            match (inside, row.within.is_some()) {
                                (true, true) => "ok",
                                (false, true) => "MISS",
                                (true, false) => "in",
                                (false, false) => "out",
                            }
                        ),
                        _ => String::new(),
                    };
                    let _ = writeln!(
                        s,
                        "{:<16} {:<26} {:>11} {:>11} {:>8} {:>7}  {:<5}{}",
                        if i == 0 { w.name.as_str() } else { "" },
                        row.figure,
                        num(row.recorded),
                        num(row.replayed),
                        row.error
                            .map_or("-".into(), |e| format!("{:+.1}%", e * 100.0)),
                        row.target.describe(),
                        match row.within {
                            Some(true) => "ok",
                            Some(false) => "MISS",
                            None => "",
                        },
                        range
                    );
                }
                if w.replay_stats.task_wakeups > 0 {
                    let _ = writeln!(
                        s,
                        "{:<16} note: {} of {} recorded task wakeups found the sleeper not yet waiting (the waker's token posted first: no sleep, no wakeup, two switches fewer)",
                        "", w.tokens_posted_first, w.replay_stats.task_wakeups
                    );
                }
                let [rec, rep] = &w.fork_starts;
                kept_forks.0 += rec.beside_idle_cpu_on_parent_cpu;
                kept_forks.1 += rec.beside_idle_cpu;
                if rec.beside_idle_cpu_on_parent_cpu > 0 {
                    let _ = writeln!(
                        s,
                        "{:<16} note: of {} forks beside an idle CPU of the parent's core or cache, {} stayed on the parent's CPU in the recording (mainline 6.18 moves each, unless its affinity forbids: docs/validation.md, \"Where a forked task starts\"); in the replay {} of {}",
                        "",
                        rec.beside_idle_cpu,
                        rec.beside_idle_cpu_on_parent_cpu,
                        rep.beside_idle_cpu_on_parent_cpu,
                        rep.beside_idle_cpu
                    );
                }
                if let Some(e) = &w.model_error {
                    let _ = writeln!(s, "{:<16} model: {e}", "");
                }
                if !w.completed {
                    let _ = writeln!(s, "{:<16} note: {title}'s replay hit its time limit", "");
                }
                let (a, b) = w.score();
                ok += a;
                all += b;
                let (a, b) = w.score_range();
                in_range += a;
                ranged += b;
                selfs += w.kernel_self.0;
                self_judged += w.kernel_self.1;
            }
        }
    }
    let _ = writeln!(s, "{ok} of {all} figures within their targets");
    if kept_forks.0 > 0 {
        let _ = writeln!(
            s,
            "of {} forked tasks beside an idle CPU of the parent's core or cache, the recording kernel kept {} on their parent's busy CPU, which mainline 6.18 does only where affinity forbids the idle CPU: its fork placement is not the class's (docs/validation.md, \"Where a forked task starts\")",
            kept_forks.1, kept_forks.0
        );
    }
    if ranged > 0 {
        let _ = writeln!(
            s,
            "{in_range} of {ranged} within their targets of at least one of the kernel's recordings of the command"
        );
        let _ = writeln!(
            s,
            "the kernel against itself: {selfs} of {self_judged} figures of its repeated recordings within the same targets of the replayed recording ({:.0} %, the replay {:.0} %)",
            100.0 * selfs as f64 / self_judged.max(1) as f64,
            100.0 * ok as f64 / all.max(1) as f64
        );
    }
    s
}

/// The validation as one self-contained HTML page (no script, nothing fetched): what recorded
/// the suite, an error chart of every figure with a target (its band shaded), and each
/// workload's table.
pub fn html(
    suite: &Suite,
    policy: &str,
    machine: &str,
    results: &[Result<WorkloadResult, String>],
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>schedkit validate: {}</title>\
<style>body{{font:14px sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse;margin:.5em 0 1.5em}}\
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}td:nth-child(1),th:nth-child(1){{text-align:left}}\
.ok{{background:#e3f5e3}}.miss{{background:#fbe0e0}}pre{{background:#f6f6f6;padding:.5em;white-space:pre-wrap}}</style></head><body>",
        esc(&suite.kernel)
    );
    let _ = write!(
        s,
        "<h1>Replayed against recorded</h1><p>Suite <code>{}</code>, recorded {} on kernel <code>{}</code>; replayed under <b>{}</b> on machine <b>{}</b>. \
Each figure is measured the same way on the recorded trace and on the replay's own trace (<code>trace/figures.rs</code>).</p>\
<details><summary>Recording kernel</summary><pre>{}\nHZ {}\npreempt: {}\nautogroup: {}\nsched_features: {}\n{}</pre></details>",
        esc(&suite.dir.display().to_string()),
        esc(&suite.recorded),
        esc(&suite.kernel),
        esc(policy),
        esc(machine),
        esc(&suite.uname),
        suite.hz.map_or("?".into(), |h| h.to_string()),
        esc(&suite.preempt),
        suite.autogroup.map_or("?".into(), |a| a.to_string()),
        esc(&suite.sched_features),
        esc(&suite.config)
    );
    // The error chart: one line per workload, one marker per targeted figure.
    let ok: Vec<&WorkloadResult> = results.iter().flatten().collect();
    let judged: Vec<(usize, &str)> = FIGURES
        .iter()
        .enumerate()
        .filter(|(_, (_, t))| *t != Tolerance::None)
        .map(|(i, (n, _))| (i, *n))
        .collect();
    let (w, lh, left) = (760.0, 22.0, 150.0);
    let h = 40.0 + lh * ok.len() as f64;
    let x = |e: f64| left + (w - left - 20.0) * ((e.clamp(-1.0, 1.0) + 1.0) / 2.0);
    let _ = write!(
        s,
        "<h2>Errors</h2><p>replayed / recorded − 1, clipped to ±100 %; the shaded band is ±15 %, the counts' target (busy CPU time's is ±10 %, wakeup p50's a factor of 2: the tables below judge each).</p>\
<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-size=\"11\">\
<rect x=\"{:.1}\" y=\"20\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#e3f5e3\"/>\
<line x1=\"{:.1}\" y1=\"20\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#888\"/>",
        x(-0.15),
        x(0.15) - x(-0.15),
        h - 30.0,
        x(0.0),
        x(0.0),
        h - 10.0
    );
    let colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"];
    for (k, (_, name)) in judged.iter().enumerate() {
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"10\" r=\"4\" fill=\"{}\"/><text x=\"{:.1}\" y=\"14\">{}</text>",
            left + 120.0 * k as f64,
            colors[k % colors.len()],
            left + 120.0 * k as f64 + 7.0,
            esc(name)
        );
    }
    for (r, wr) in ok.iter().enumerate() {
        let y = 30.0 + lh * r as f64 + lh / 2.0;
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{:.1}\">{}</text>",
            y + 4.0,
            esc(&wr.name)
        );
        for (k, (i, _)) in judged.iter().enumerate() {
            if let Some(e) = wr.rows[*i].error {
                let _ = write!(
                    s,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{}\"><title>{} {}: {:+.1}%</title></circle>",
                    x(e),
                    y,
                    colors[k % colors.len()],
                    esc(&wr.name),
                    esc(&wr.rows[*i].figure),
                    e * 100.0
                );
            }
        }
    }
    s.push_str("</svg>");
    for r in results {
        match r {
            Err(e) => {
                let _ = write!(s, "<p class=\"miss\">error: {}</p>", esc(e));
            }
            Ok(wr) => {
                let _ = write!(
                    s,
                    "<h2>{}</h2><p><code>{}</code></p><table><tr><th>figure</th><th>recorded</th><th>replayed</th><th>error</th><th>target</th>{}</tr>",
                    esc(&wr.name),
                    esc(&wr.command),
                    if wr.repeats > 0 {
                        format!("<th>kernel's range ({} runs)</th>", wr.recordings())
                    } else {
                        String::new()
                    }
                );
                for row in wr.rows.iter().chain(wr.model.as_ref()) {
                    let class = match row.within {
                        Some(true) => " class=\"ok\"",
                        Some(false) => " class=\"miss\"",
                        None => "",
                    };
                    let range = match (row.kernel_range, row.within_some_run) {
                        (Some((lo, hi)), Some(inside)) => format!(
                            "<td class=\"{}\">{} – {}</td>",
                            if inside { "ok" } else { "miss" },
                            num(lo),
                            num(hi)
                        ),
                        _ if wr.repeats > 0 => "<td></td>".into(),
                        _ => String::new(),
                    };
                    let _ = write!(
                        s,
                        "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{range}</tr>",
                        esc(&row.figure),
                        num(row.recorded),
                        num(row.replayed),
                        row.error
                            .map_or("-".into(), |e| format!("{:+.1}%", e * 100.0)),
                        esc(&row.target.describe())
                    );
                }
                s.push_str("</table>");
                if let Some(e) = &wr.model_error {
                    let _ = write!(s, "<p>model: {}</p>", esc(e));
                }
            }
        }
    }
    let (a, b) = ok.iter().fold((0, 0), |(a, b), w| {
        let (x, y) = w.score();
        (a + x, b + y)
    });
    let (c, d) = ok.iter().fold((0, 0), |(a, b), w| {
        let (x, y) = w.score_range();
        (a + x, b + y)
    });
    let (e, f) = ok.iter().fold((0, 0), |(a, b), w| {
        (a + w.kernel_self.0, b + w.kernel_self.1)
    });
    let range = if d > 0 {
        format!(" <b>{c} of {d}</b> within their targets of at least one of the kernel's recordings of the command (the range column: green where so). \
The kernel against itself: {e} of {f} figures of its repeated recordings within the same targets of the replayed recording.")
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "<p><b>{a} of {b}</b> figures within their targets.{range}</p></body></html>"
    );
    s
}

/// The summary as a Markdown table (`validate --markdown`), one row per workload: the
/// shape of `docs/validation.md`'s table, so the docs print from the command.
pub fn markdown(results: &[Result<WorkloadResult, String>]) -> String {
    use std::fmt::Write as _;
    let ranges = results.iter().flatten().any(|w| w.repeats > 0);
    let mut s = if ranges {
        String::from(
            "| workload | switches | wakeups | migrations | busy CPU | wakeup p50 | model | within target of a recording |\n|---|---|---|---|---|---|---|---|\n",
        )
    } else {
        String::from(
            "| workload | switches | wakeups | migrations | busy CPU | wakeup p50 | model |\n|---|---|---|---|---|---|---|\n",
        )
    };
    let int = |v: f64| {
        let n = v.round() as i64;
        let digits = n.abs().to_string();
        let mut out = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push('\u{202f}');
            }
            out.push(ch);
        }
        if n < 0 {
            format!("−{out}")
        } else {
            out
        }
    };
    let pct = |e: Option<f64>| match e {
        Some(e) => {
            let p = (e * 100.0).round() as i64;
            if p < 0 {
                format!("−{} %", -p)
            } else {
                format!("+{p} %")
            }
        }
        None => "-".into(),
    };
    let us = |v: f64| {
        if v >= 100.0 {
            int(v)
        } else if v >= 1.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    };
    for r in results {
        let Ok(w) = r else {
            let _ = writeln!(
                s,
                "| error: {} | | | | | | |{}",
                // One cell: no column bar or line break may escape it.
                r.as_ref()
                    .err()
                    .map_or(String::new(), |e| e.replace('|', "\\|").replace('\n', " ")),
                if ranges { " |" } else { "" }
            );
            continue;
        };
        let row = |i: usize| &w.rows[i];
        let count = |i: usize| {
            format!(
                "{} → {} ({})",
                int(row(i).recorded),
                int(row(i).replayed),
                pct(row(i).error)
            )
        };
        let model = match &w.model {
            Some(m) => format!(
                "{} → {} ({})",
                m.recorded,
                (m.replayed * 1000.0).round() / 1000.0,
                pct(m.error)
            ),
            None => "—".into(),
        };
        let range = if ranges {
            let (a, b) = w.score_range();
            if b > 0 {
                format!(" {a} of {b} ({} runs) |", w.recordings())
            } else {
                " — |".into()
            }
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} → {} | {} | {} → {} µs | {} |{range}",
            w.name,
            count(0),
            count(1),
            int(row(2).recorded),
            int(row(2).replayed),
            pct(row(3).error),
            us(row(4).recorded),
            us(row(4).replayed),
            model
        );
    }
    s
}

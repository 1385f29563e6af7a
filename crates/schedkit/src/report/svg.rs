//! The report's plots, written as SVG text: a CDF on a log axis, labelled bars, stacked bars
//! and per-CPU timelines. Hand-written rather than drawn with `plotters`: plotters lays out
//! text with system fonts (its `ttf` feature, font-kit and fontconfig), which a CI machine
//! may lack, while here the browser lays out the text and each plot is a few dozen lines.
//!
//! Every plot is an `<svg class="plot" data-kind=… data-points=N>` where N counts the data
//! marks drawn (CDF points, bars, segments, slices), so that a test can check that no plot
//! came out empty.

use std::fmt::Write;

/// Colours of runs (the Okabe–Ito palette, readable by colour-blind readers), then of CPU-time
/// categories and timeline tasks.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
];

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Escapes text for XML (element content and attribute values alike).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0 text, nor are U+FFFE and U+FFFF
            // (XML 1.0 `Char`); surrogates cannot occur in a Rust string.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push('?'),
            '\u{fffe}' | '\u{ffff}' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// A number for a tick label: short, no trailing zeros.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// "Nice" linear ticks from 0 to at least `max` (1, 2 or 5 times a power of ten apart).
pub fn linear_ticks(max: f64) -> Vec<f64> {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| max / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let n = (max / step).ceil() as usize;
    (0..=n).map(|i| i as f64 * step).collect()
}

struct Frame {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Frame {
    fn plot_w(&self) -> f64 {
        self.w - self.left - self.right
    }
    fn plot_h(&self) -> f64 {
        self.h - self.top - self.bottom
    }
}

fn open(o: &mut String, kind: &str, title: &str, f: &Frame, points: usize) {
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-kind="{kind}" data-points="{points}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{w}" height="{h}" fill="white"/><text x="{x}" y="16" font-size="14" font-weight="bold">{t}</text>"#,
        w = f.w,
        h = f.h,
        t = esc(title),
        x = f.left,
    );
}

/// One line of a CDF plot.
pub struct CdfLine<'a> {
    pub label: &'a str,
    /// `[x, fraction]` pairs, x ascending.
    pub points: &'a [[f64; 2]],
}

/// Cumulative distributions on a log x axis (`x_label`), fraction 0..1 up the y axis, one
/// step line per run with a legend.
pub fn cdf(title: &str, x_label: &str, lines: &[CdfLine]) -> String {
    let f = Frame {
        w: 720.0,
        h: 360.0,
        left: 56.0,
        right: 170.0,
        top: 28.0,
        bottom: 44.0,
    };
    let xs = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p[0]))
        .filter(|x| x.is_finite() && *x > 0.0);
    let (mut lo, mut hi) = (f64::INFINITY, 0f64);
    for x in xs {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if !lo.is_finite() {
        (lo, hi) = (1.0, 10.0);
    }
    let (d0, d1) = (
        lo.log10().floor(),
        hi.log10().ceil().max(lo.log10().floor() + 1.0),
    );
    let sx = |x: f64| {
        let lx = x.max(10f64.powf(d0)).log10();
        f.left + (lx - d0) / (d1 - d0) * f.plot_w()
    };
    let sy = |q: f64| f.top + (1.0 - q) * f.plot_h();
    let n: usize = lines.iter().map(|l| l.points.len()).sum();
    let mut o = String::new();
    open(&mut o, "cdf", title, &f, n);
    // Grid and ticks: decades along x, tenths up y.
    for d in d0 as i32..=d1 as i32 {
        let x = sx(10f64.powi(d));
        let _ = write!(
            o,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            f.top,
            f.top + f.plot_h(),
            f.top + f.plot_h() + 16.0,
            tick_label(10f64.powi(d))
        );
    }
    for i in 0..=10 {
        let q = i as f64 / 10.0;
        let y = sy(q);
        let _ = write!(
            o,
            r##"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/>"##,
            f.left,
            f.left + f.plot_w()
        );
        if i % 2 == 0 {
            let _ = write!(
                o,
                r#"<text x="{}" y="{:.1}" text-anchor="end">{q:.1}</text>"#,
                f.left - 6.0,
                y + 4.0
            );
        }
    }
    axes(&mut o, &f, x_label, "fraction of wakeups ≤ x");
    for (i, l) in lines.iter().enumerate() {
        // A step function: each point holds until the next.
        let mut d = String::new();
        let mut prev_q = 0.0;
        for (j, p) in l.points.iter().enumerate() {
            let (x, y) = (sx(p[0]), sy(p[1]));
            if j == 0 {
                let _ = write!(d, "M{x:.1},{:.1}", sy(0.0));
            } else {
                let _ = write!(d, " L{x:.1},{:.1}", sy(prev_q));
            }
            let _ = write!(d, " L{x:.1},{y:.1}");
            prev_q = p[1];
        }
        let _ = write!(
            o,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="2" data-n="{}"><title>{}</title></path>"#,
            color(i),
            l.points.len(),
            esc(l.label)
        );
        legend(&mut o, &f, i, l.label, color(i));
    }
    o.push_str("</svg>");
    o
}

fn axes(o: &mut String, f: &Frame, x_label: &str, y_label: &str) {
    let _ = write!(
        o,
        r##"<rect x="{}" y="{}" width="{:.1}" height="{:.1}" fill="none" stroke="#444"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        f.left,
        f.top,
        f.plot_w(),
        f.plot_h(),
        f.left + f.plot_w() / 2.0,
        f.h - 8.0,
        esc(x_label),
        f.top + f.plot_h() / 2.0,
        esc(y_label)
    );
}

fn legend(o: &mut String, f: &Frame, i: usize, label: &str, color: &str) {
    let x = f.w - f.right + 12.0;
    let y = f.top + 8.0 + i as f64 * 18.0;
    let _ = write!(
        o,
        r#"<rect x="{x}" y="{:.1}" width="12" height="12" fill="{color}"/><text x="{}" y="{:.1}">{}</text>"#,
        y - 10.0,
        x + 18.0,
        y,
        esc(label)
    );
}

/// One bar: its label, value and the counters written under it.
pub struct Bar<'a> {
    pub label: &'a str,
    pub value: f64,
    pub note: String,
}

/// Vertical bars from zero, one per run, each with its value on top and its counters below.
pub fn bars(title: &str, unit: &str, bars: &[Bar]) -> String {
    let f = Frame {
        w: (140.0 * bars.len() as f64 + 90.0).max(360.0),
        h: 340.0,
        left: 64.0,
        right: 16.0,
        top: 34.0,
        bottom: 78.0,
    };
    let max = bars
        .iter()
        .map(|b| b.value)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let ticks = linear_ticks(max);
    let top = *ticks.last().unwrap_or(&1.0);
    let sy = |v: f64| f.top + (1.0 - v / top) * f.plot_h();
    let drawn = bars.iter().filter(|b| b.value.is_finite()).count();
    let mut o = String::new();
    open(&mut o, "bars", title, &f, drawn);
    for t in &ticks {
        let y = sy(*t);
        let _ = write!(
            o,
            r##"<line x1="{}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            f.left,
            f.left + f.plot_w(),
            f.left - 6.0,
            y + 4.0,
            tick_label(*t)
        );
    }
    axes(&mut o, &f, "", unit);
    let slot = f.plot_w() / bars.len().max(1) as f64;
    for (i, b) in bars.iter().enumerate() {
        let cx = f.left + slot * (i as f64 + 0.5);
        let bw = (slot * 0.6).min(80.0);
        if b.value.is_finite() {
            let y = sy(b.value);
            let _ = write!(
                o,
                r#"<rect class="bar" x="{:.1}" y="{y:.1}" width="{bw:.1}" height="{:.1}" fill="{}"><title>{}: {} {}</title></rect><text x="{cx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                cx - bw / 2.0,
                (f.top + f.plot_h() - y).max(0.0),
                color(i),
                esc(b.label),
                b.value,
                esc(unit),
                y - 4.0,
                tick_label(b.value)
            );
        } else {
            let _ = write!(
                o,
                r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle">no figure</text>"#,
                f.top + f.plot_h() - 6.0
            );
        }
        let base = f.top + f.plot_h();
        let _ = write!(
            o,
            r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{}</text>"#,
            base + 16.0,
            esc(b.label)
        );
        for (k, line) in b.note.lines().enumerate() {
            let _ = write!(
                o,
                r##"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" fill="#555" font-size="11">{}</text>"##,
                base + 32.0 + 14.0 * k as f64,
                esc(line)
            );
        }
    }
    o.push_str("</svg>");
    o
}

/// One row of a stacked bar: a label and its parts (category index, value).
pub struct Stack<'a> {
    pub label: &'a str,
    pub parts: Vec<f64>,
}

/// Horizontal bars, one per run, each split into `categories` as fractions of its total.
pub fn stacked(title: &str, categories: &[&str], rows: &[Stack]) -> String {
    let f = Frame {
        w: 760.0,
        h: 60.0 + 28.0 * rows.len() as f64 + 30.0,
        left: 150.0,
        right: 20.0,
        top: 30.0,
        bottom: 60.0,
    };
    let drawn = |v: f64| v.is_finite() && v > 0.0;
    let segments = rows
        .iter()
        .map(|r| r.parts.iter().filter(|v| drawn(**v)).count())
        .sum();
    let mut o = String::new();
    open(&mut o, "stacked", title, &f, segments);
    for (i, r) in rows.iter().enumerate() {
        let y = f.top + 8.0 + 28.0 * i as f64;
        let total: f64 = r.parts.iter().filter(|v| drawn(**v)).sum();
        let _ = write!(
            o,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            f.left - 8.0,
            y + 14.0,
            esc(r.label)
        );
        let mut x = f.left;
        for (c, v) in r.parts.iter().enumerate() {
            if !drawn(*v) || total <= 0.0 {
                continue;
            }
            let w = v / total * f.plot_w();
            let _ = write!(
                o,
                r#"<rect class="segment" x="{x:.1}" y="{y:.1}" width="{w:.2}" height="20" fill="{}"><title>{}: {}: {:.6} s ({:.1} %)</title></rect>"#,
                color(c),
                esc(r.label),
                esc(categories.get(c).copied().unwrap_or("?")),
                v,
                v / total * 100.0
            );
            x += w;
        }
    }
    // Legend along the bottom.
    let mut x = f.left;
    let y = f.h - 20.0;
    for (c, name) in categories.iter().enumerate() {
        let _ = write!(
            o,
            r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{y:.1}">{}</text>"#,
            y - 10.0,
            color(c),
            x + 16.0,
            esc(name)
        );
        x += 16.0 + 8.0 * name.len() as f64 + 18.0;
    }
    o.push_str("</svg>");
    o
}

/// Per-CPU timeline: a row per CPU, a rectangle per slice, coloured by task (the `legend`
/// most-running tasks get their own colour and a legend entry, the rest grey).
pub fn timeline(title: &str, tl: &crate::trace::timeline::Timeline) -> String {
    let rows = tl.cpus.max(1) as f64;
    // Tall enough for the CPU rows and for the legend (up to the palette, plus "others").
    let legend_rows = (tl.tasks.len().min(PALETTE.len()) + 1) as f64;
    let f = Frame {
        w: 900.0,
        h: (28.0 + 22.0 * rows + 46.0).max(28.0 + 18.0 * legend_rows + 12.0),
        left: 60.0,
        right: 190.0,
        top: 28.0,
        bottom: 46.0,
    };
    let span = tl.to_ns.saturating_sub(tl.from_ns).max(1) as f64;
    let sx = |t: u64| f.left + (t.saturating_sub(tl.from_ns)) as f64 / span * f.plot_w();
    // Tasks by CPU time in the window: the top ones get colours.
    let mut time = vec![0u64; tl.tasks.len()];
    for s in &tl.slices {
        if let Some(t) = time.get_mut(s.task as usize) {
            *t += s.end_ns.saturating_sub(s.start_ns);
        }
    }
    let mut order: Vec<usize> = (0..tl.tasks.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(time[i]));
    let shown = order.len().min(PALETTE.len());
    let mut rank = vec![usize::MAX; tl.tasks.len()];
    for (r, &i) in order.iter().take(shown).enumerate() {
        rank[i] = r;
    }
    let mut o = String::new();
    open(&mut o, "timeline", title, &f, tl.slices.len());
    for cpu in 0..tl.cpus {
        let y = f.top + 22.0 * cpu as f64;
        let _ = write!(
            o,
            r##"<text x="{}" y="{:.1}" text-anchor="end">CPU {cpu}</text><rect x="{}" y="{y:.1}" width="{:.1}" height="18" fill="#f4f4f4"/>"##,
            f.left - 6.0,
            y + 13.0,
            f.left,
            f.plot_w()
        );
    }
    for s in &tl.slices {
        let y = f.top + 22.0 * s.cpu as f64;
        let x0 = sx(s.start_ns);
        let w = (sx(s.end_ns) - x0).max(0.3);
        let task = tl.tasks.get(s.task as usize);
        let fill = match rank.get(s.task as usize) {
            Some(&r) if r < shown => color(r),
            _ => "#999",
        };
        let _ = write!(
            o,
            r#"<rect class="slice" x="{x0:.2}" y="{y:.1}" width="{w:.2}" height="18" fill="{fill}"><title>{} ({}) {:.3}–{:.3} ms</title></rect>"#,
            esc(task.map_or("?", |t| t.comm.as_str())),
            task.map_or(0, |t| t.pid),
            s.start_ns as f64 / 1e6,
            s.end_ns as f64 / 1e6
        );
    }
    // Time ticks in ms.
    let base = f.top + 22.0 * rows;
    for t in linear_ticks(span / 1e6) {
        let ns = tl.from_ns + (t * 1e6) as u64;
        if ns > tl.to_ns {
            break;
        }
        let x = sx(ns);
        let _ = write!(
            o,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#444"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            base,
            base + 4.0,
            base + 16.0,
            trim(ns as f64 / 1e6)
        );
    }
    let _ = write!(
        o,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">simulated time, ms</text>"#,
        f.left + f.plot_w() / 2.0,
        base + 34.0
    );
    for (r, &i) in order.iter().take(shown).enumerate() {
        let t = &tl.tasks[i];
        legend(&mut o, &f, r, &format!("{} ({})", t.comm, t.pid), color(r));
    }
    if tl.tasks.len() > shown {
        legend(
            &mut o,
            &f,
            shown,
            &format!("{} other tasks", tl.tasks.len() - shown),
            "#999",
        );
    }
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_outside_xml_is_replaced() {
        assert_eq!(esc("a\u{fffe}b\u{ffff}<\u{1}"), "a\u{fffd}b\u{fffd}&lt;?");
    }

    #[test]
    fn ticks_are_round_and_cover_the_maximum() {
        assert_eq!(linear_ticks(9.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(linear_ticks(1234.0).last(), Some(&1500.0));
        let empty = linear_ticks(0.0);
        assert_eq!(empty.len(), 6);
        assert!((empty[5] - 1.0).abs() < 1e-9);
        assert_eq!(tick_label(25000.0), "25k");
        assert_eq!(tick_label(0.5), "0.5");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let s = bars(
            "t",
            "ops/s",
            &[Bar {
                label: "<x>",
                value: 3.0,
                note: String::new(),
            }],
        );
        assert!(s.contains("&lt;x&gt;") && !s.contains("<x>"));
        assert!(s.contains(r#"data-points="1""#));
    }
}

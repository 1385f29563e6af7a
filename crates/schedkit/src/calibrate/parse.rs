//! Parsing what `/sys` and `/proc` say, and the small numeric and text helpers of the
//! profile writer. Pure functions of their inputs (unit-tested with hand-made ones).

use std::fmt::Write as _;

/// A Linux CPU list (`0-3,8,10-11`) as CPU numbers; `None` if malformed.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let s = s.trim();
    if s.is_empty() {
        return Some(vec![]);
    }
    let mut out = vec![];
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (
                    a.trim().parse::<usize>().ok()?,
                    b.trim().parse::<usize>().ok()?,
                );
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// A sysfs cache size (`32768K`, `1M`, `512`) in KB.
pub fn parse_size_kb(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1),
        'M' | 'm' => (&s[..s.len() - 1], 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// `CONFIG_HZ` of a kernel config's text.
pub fn parse_config_hz(config: &str) -> Option<u32> {
    config
        .lines()
        .find_map(|l| l.trim().strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

/// The first `jiffies: N` line of /proc/timer_list.
pub fn parse_timer_list_jiffies(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("jiffies:"))
        .and_then(|v| v.trim().parse().ok())
}

/// (model name, cpu MHz) of the first processor in /proc/cpuinfo.
pub fn parse_cpuinfo(text: &str) -> (Option<String>, Option<f64>) {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    (
        field("model name").filter(|s| !s.is_empty()),
        field("cpu MHz").and_then(|v| v.parse().ok()),
    )
}

/// The `AnonHugePages` KB of the mapping of /proc/self/smaps that contains `addr`.
pub fn parse_smaps_huge_kb(smaps: &str, addr: usize) -> Option<u64> {
    let mut inside = false;
    for l in smaps.lines() {
        let first = l.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = (a..b).contains(&addr);
                continue;
            }
        }
        if inside {
            if let Some(v) = l.strip_prefix("AnonHugePages:") {
                return v.trim().trim_end_matches("kB").trim().parse().ok();
            }
        }
    }
    None
}

/// (idle, total) jiffies of CPU `cpu` in /proc/stat's text: idle and iowait against the
/// first eight fields (user to steal; guest time is within user).
pub fn parse_proc_stat_cpu(text: &str, cpu: usize) -> Option<(u64, u64)> {
    let name = format!("cpu{cpu}");
    let l = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&name))?;
    proc_stat_fields(l)
}

/// (idle, total) jiffies of all CPUs together: /proc/stat's `cpu` line.
pub fn parse_proc_stat_cpu_all(text: &str) -> Option<(u64, u64)> {
    let l = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))?;
    proc_stat_fields(l)
}

fn proc_stat_fields(l: &str) -> Option<(u64, u64)> {
    let v: Vec<u64> = l
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 5 {
        return None;
    }
    Some((v[3] + v[4], v.iter().sum()))
}

/// The median (the mean of the two middle values of an even count); NaN for none.
/// From tracefs text (`/sys/kernel/tracing/trace`, read by the trace importer): for each
/// wakeup of thread `tid` in an interrupt that came while another task ran (`sched_waking`
/// with the interrupt flag, not from the idle task), the ns from it to the next switch to
/// `tid`.
pub fn timer_wake_intervals(trace: &str, tid: i32) -> Vec<u64> {
    use crate::trace::EventKind;
    let Ok(t) = crate::trace::import::parse(trace) else {
        return Vec::new();
    };
    let ours = |i: usize| t.tasks.get(i).is_some_and(|k| k.pid as i64 == tid as i64);
    let mut out = vec![];
    let mut waking: Option<u64> = None;
    for e in &t.events {
        match e.kind {
            EventKind::Waking {
                task, waker, irq, ..
            } if ours(task) => waking = (irq && waker.is_some()).then_some(e.ts),
            EventKind::Switch { next: Some(n), .. } if ours(n) => {
                if let Some(w) = waking.take() {
                    out.push(e.ts.saturating_sub(w));
                }
            }
            _ => {}
        }
    }
    out
}

pub fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The gaps (start, length) a busy loop saw that fall at the periodic tick's phase: the tick
/// fires every `1e9 / hz` ns at one phase of CLOCK_MONOTONIC, other interrupts at random
/// phases. Returns the lengths of the gaps within `window_ns` of the busiest phase, leaving
/// out gaps of `max_ns` or more (the CPU given to another task for a whole slice).
pub fn tick_gaps(gaps: &[(u64, u64)], hz: u32, window_ns: u64, max_ns: u64) -> Vec<u64> {
    let tick = 1_000_000_000 / hz.max(1) as u64;
    let bin = window_ns.clamp(1, tick);
    let nb = (tick / bin).max(1) as usize;
    let mut h = vec![0usize; nb];
    let short: Vec<(u64, u64)> = gaps.iter().copied().filter(|g| g.1 < max_ns).collect();
    for &(s, _) in &short {
        h[((s % tick) / bin) as usize % nb] += 1;
    }
    let Some(best) = (0..nb).max_by_key(|&i| (h[(i + nb - 1) % nb] + h[i] + h[(i + 1) % nb], h[i]))
    else {
        return vec![];
    };
    let center = best as u64 * bin + bin / 2;
    short
        .iter()
        .filter(|&&(s, _)| {
            let d = (s % tick).abs_diff(center);
            d.min(tick - d) <= bin + bin / 2
        })
        .map(|g| g.1)
        .collect()
}

/// The date (YYYY-MM-DD) of a count of days since 1970-01-01 (proleptic Gregorian).
pub fn civil_date(days: i64) -> String {
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A TOML basic string.
pub fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A float as the profile writes it: always a TOML float, with a precision fit for its size.
pub fn fmt_float(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{:.1}", v.round())
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

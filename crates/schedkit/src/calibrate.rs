//! `schedkit calibrate`: measures the Linux x86-64 machine it runs on with short
//! microbenchmarks and writes a machine profile (the TOML of `profiles/*.toml`) in which every
//! value carries a comment saying how it was measured, or that it is an estimate or a value
//! copied from `profiles/host.toml`, and why.
//!
//! What is measured, and how each figure becomes a profile field:
//! - **topology** and cache sizes from `/sys/devices/system/cpu` (and `/sys/devices/system/node`);
//! - **clock**: the cpufreq P-states where the kernel exposes them (as the `host` profile reads
//!   them), else the clock a chain of dependent adds runs at; **HZ** from `CONFIG_HZ` in
//!   `/proc/config.gz` or `/boot/config-*`, else from how fast `jiffies` advances;
//! - **costs** of a null system call, an uncontended locked add, a pointer chase within the
//!   last-level cache and far beyond it, streaming reads, and the timer interrupt (the gaps a
//!   busy loop sees at the tick's phase);
//! - **pipes** in one process (write, read) and between two processes pinned to one CPU (the
//!   round trip, whose remainder is two context switches); between two CPUs, kept busy by
//!   SCHED_IDLE spinners and left idle (the IPI and the idle exit);
//! - **processes**: fork + exit + wait, wait on a zombie, fork + exec, `sh -c`; copy-on-write
//!   faults; AF_UNIX socket sends and receives.
//!
//! The splits of round trips into profile fields follow the derivations in
//! `profiles/host.toml` (see [`derive`]). Each timed figure is the median of several runs.

use crate::machine::{Machine, MachineProfile, BUILTIN_PROFILES};
use std::fmt::Write as _;

/// What `calibrate` is asked for.
#[derive(Clone, Debug)]
pub struct Options {
    /// The profile's `name`.
    pub name: String,
    /// About one second of measurement instead of about ten: fewer, shorter runs.
    pub quick: bool,
    /// Leave tracefs alone: the part of a timer interrupt after its wakeup, which only a
    /// trace shows, is then copied from `host`.
    pub no_trace: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("schedkit calibrate measures a Linux x86-64 machine; this build is for {0}")]
    Unsupported(String),
    #[error("--name: {0}")]
    BadName(String),
    /// The profile written does not load: a bug in calibrate, reported with the text.
    #[error("the calibrated profile does not validate ({0}); this is a bug in schedkit calibrate. The profile:\n{1}")]
    Invalid(String, String),
}

/// A calibrated machine: the profile's text (with its comments) and the machine it loads as.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub toml: String,
    pub machine: Machine,
}

/// Measures this machine and returns its profile. `progress` gets a line per step.
pub fn calibrate(
    opts: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrateError> {
    check_name(&opts.name)?;
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let text = run::calibrate(opts, progress);
        match Machine::from_toml(&text, "calibrated profile") {
            Ok(machine) => Ok(Calibration {
                toml: text,
                machine,
            }),
            Err(e) => Err(CalibrateError::Invalid(e.to_string(), text)),
        }
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = progress;
        Err(CalibrateError::Unsupported(format!(
            "{}/{}",
            std::env::consts::OS,
            std::env::consts::ARCH
        )))
    }
}

fn check_name(name: &str) -> Result<(), CalibrateError> {
    if name.trim().is_empty() {
        return Err(CalibrateError::BadName("give a non-empty name".into()));
    }
    if name.chars().any(|c| c.is_control()) {
        return Err(CalibrateError::BadName(
            "control characters (newlines, tabs) are not allowed".into(),
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Pure parts: parsing what /sys and /proc say, deriving profile fields from timings, writing
// the TOML. Everything here is a function of its inputs (unit-tested with hand-made ones).
// ------------------------------------------------------------------------------------------

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

/// `/sys` and `/proc` as text files (a closure over the real files, or a map in tests).
pub type ReadFn<'a> = &'a dyn Fn(&str) -> Option<String>;

/// One cache level as /sys describes it for a CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheInfo {
    pub index: usize,
    pub level: u32,
    pub size_kb: u64,
    pub shared: Vec<usize>,
    pub shared_text: String,
}

/// The topology facts of the machine, each with how it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct TopoFacts {
    pub cpus: usize,
    pub cpus_note: String,
    pub threads_per_core: usize,
    pub threads_note: String,
    pub cpus_per_cache: usize,
    pub cache_note: String,
    pub llc_kb: Option<u64>,
    pub llc_note: String,
    /// A separate L2 under the LLC: (CPUs sharing one, its size KB, note).
    pub l2: Option<(usize, u64, String)>,
    pub l2_absent_note: String,
    pub cpus_per_package: usize,
    pub package_note: String,
    pub cpus_per_node: usize,
    pub node_note: String,
    /// SMT siblings of each online CPU (to pick two CPUs that are separate cores).
    pub siblings: Vec<Vec<usize>>,
}

/// The caches of `cpu` (data and unified ones), from `cache/index*/`.
fn caches_of(read: ReadFn, cpu: usize) -> Vec<CacheInfo> {
    let base = format!("/sys/devices/system/cpu/cpu{cpu}/cache");
    (0..16)
        .filter_map(|i| {
            let f = |n: &str| read(&format!("{base}/index{i}/{n}"));
            let level = f("level")?.trim().parse().ok()?;
            if f("type").is_some_and(|t| t.trim() == "Instruction") {
                return None;
            }
            let shared_text = f("shared_cpu_list")?.trim().to_string();
            Some(CacheInfo {
                index: i,
                level,
                size_kb: f("size").and_then(|s| parse_size_kb(&s)).unwrap_or(0),
                shared: parse_cpu_list(&shared_text)?,
                shared_text,
            })
        })
        .collect()
}

/// A count that must be the same on every CPU and divide `cpus`: cpu0's where it does (with a
/// note where CPUs differ), `fallback` where it does not.
fn uniform(counts: &[usize], cpus: usize, fallback: usize, what: &str) -> (usize, Option<String>) {
    let first = counts.first().copied().unwrap_or(fallback);
    let differ = counts.iter().any(|&c| c != first);
    if first == 0 || !cpus.is_multiple_of(first) {
        return (
            fallback,
            Some(format!(
                "{what}: cpu0's {first} does not divide {cpus} CPUs, so {fallback} (the profile format needs equal groups)"
            )),
        );
    }
    let note = differ.then(|| {
        let (lo, hi) = (
            counts.iter().min().unwrap_or(&first),
            counts.iter().max().unwrap_or(&first),
        );
        format!("{what} differs between CPUs ({lo}..{hi}): cpu0's is used")
    });
    (first, note)
}

/// Reads the topology from /sys: `online` are the online CPUs (from
/// /sys/devices/system/cpu/online).
pub fn read_topology(read: ReadFn, online: &[usize], online_text: &str) -> TopoFacts {
    let cpus = online.len().max(1);
    let cpu = |c: usize| format!("/sys/devices/system/cpu/cpu{c}");
    let siblings: Vec<Vec<usize>> = online
        .iter()
        .map(|&c| {
            read(&format!("{}/topology/thread_siblings_list", cpu(c)))
                .and_then(|s| parse_cpu_list(&s))
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| vec![c])
        })
        .collect();
    let c0 = online.first().copied().unwrap_or(0);
    let mut t = TopoFacts {
        cpus,
        cpus_note: format!("/sys/devices/system/cpu/online: {online_text}"),
        threads_per_core: 1,
        threads_note: String::new(),
        cpus_per_cache: cpus,
        cache_note: String::new(),
        llc_kb: None,
        llc_note: String::new(),
        l2: None,
        l2_absent_note: String::new(),
        cpus_per_package: cpus,
        package_note: String::new(),
        cpus_per_node: cpus,
        node_note: String::new(),
        siblings: siblings.clone(),
    };
    // SMT.
    let counts: Vec<usize> = siblings.iter().map(Vec::len).collect();
    let (n, differ) = uniform(&counts, cpus, 1, "threads per core");
    t.threads_per_core = n;
    t.threads_note = match read(&format!("{}/topology/thread_siblings_list", cpu(c0))) {
        Some(s) => format!("/sys: cpu{c0} topology/thread_siblings_list = {}", s.trim()),
        None => "no topology/thread_siblings_list in /sys: taken as 1".into(),
    };
    if let Some(d) = differ {
        let _ = write!(t.threads_note, "; {d}");
    }
    // Caches: the highest level is the last-level cache; level 2 below it a separate L2.
    let per_cpu: Vec<Vec<CacheInfo>> = online.iter().map(|&c| caches_of(read, c)).collect();
    let llc_of = |v: &Vec<CacheInfo>| v.iter().max_by_key(|c| c.level).cloned();
    match per_cpu.first().and_then(llc_of) {
        Some(llc) => {
            let counts: Vec<usize> = per_cpu
                .iter()
                .map(|v| llc_of(v).map_or(1, |c| c.shared.len()))
                .collect();
            let (n, differ) = uniform(&counts, cpus, cpus, "CPUs per last-level cache");
            t.cpus_per_cache = n;
            t.cache_note = format!(
                "/sys: cpu{c0} cache/index{} (L{}, {}K) shared_cpu_list = {}",
                llc.index, llc.level, llc.size_kb, llc.shared_text
            );
            if let Some(d) = differ {
                let _ = write!(t.cache_note, "; {d}");
            }
            if llc.size_kb > 0 {
                t.llc_kb = Some(llc.size_kb);
                t.llc_note = format!(
                    "/sys: cpu{c0} cache/index{} size (the last level, L{})",
                    llc.index, llc.level
                );
            }
            let l2 = per_cpu[0]
                .iter()
                .find(|c| c.level == 2 && c.level < llc.level)
                .cloned();
            match l2 {
                Some(l2) if l2.size_kb > 0 && l2.size_kb < llc.size_kb => {
                    let counts: Vec<usize> = per_cpu
                        .iter()
                        .map(|v| {
                            v.iter()
                                .find(|c| c.level == 2)
                                .map_or(1, |c| c.shared.len())
                        })
                        .collect();
                    let (n, differ) = uniform(&counts, cpus, 1, "CPUs per L2");
                    if n < t.cpus_per_cache && t.cpus_per_cache.is_multiple_of(n) {
                        let mut note = format!(
                            "/sys: cpu{c0} cache/index{} (L2, {}K) shared_cpu_list = {}",
                            l2.index, l2.size_kb, l2.shared_text
                        );
                        if let Some(d) = differ {
                            let _ = write!(note, "; {d}");
                        }
                        t.l2 = Some((n, l2.size_kb, note));
                    } else {
                        t.l2_absent_note = format!(
                            "the L2 ({}K, {n} CPUs each) is shared as widely as the last-level cache ({} CPUs): one level is modelled",
                            l2.size_kb, t.cpus_per_cache
                        );
                    }
                }
                _ => {
                    t.l2_absent_note = format!(
                        "no separate L2 under the L{} in /sys: one cache level is modelled",
                        llc.level
                    )
                }
            }
        }
        None => {
            t.cache_note =
                "no cache/index*/ in /sys: all CPUs taken to share one last-level cache".into();
            t.l2_absent_note = "no cache levels in /sys: one level is modelled".into();
        }
    }
    // Packages.
    let pkgs: Vec<Option<String>> = online
        .iter()
        .map(|&c| {
            read(&format!("{}/topology/physical_package_id", cpu(c))).map(|s| s.trim().into())
        })
        .collect();
    if pkgs.iter().all(Option::is_some) {
        let counts: Vec<usize> = pkgs
            .iter()
            .map(|p| pkgs.iter().filter(|q| *q == p).count())
            .collect();
        let npkg = {
            let mut v: Vec<&Option<String>> = pkgs.iter().collect();
            v.sort();
            v.dedup();
            v.len()
        };
        let (n, differ) = uniform(&counts, cpus, cpus, "CPUs per package");
        t.cpus_per_package = n;
        t.package_note = format!(
            "/sys: topology/physical_package_id, {npkg} package{}",
            if npkg == 1 { "" } else { "s" }
        );
        if let Some(d) = differ {
            let _ = write!(t.package_note, "; {d}");
        }
    } else {
        t.package_note = "no topology/physical_package_id in /sys: one package".into();
    }
    // NUMA nodes.
    let nodes: Vec<Vec<usize>> = (0..1024)
        .map_while(|n| {
            read(&format!("/sys/devices/system/node/node{n}/cpulist"))
                .and_then(|s| parse_cpu_list(&s))
        })
        .collect();
    let nodes: Vec<Vec<usize>> = nodes.into_iter().filter(|v| !v.is_empty()).collect();
    if nodes.is_empty() {
        t.node_note = "no /sys/devices/system/node: one node".into();
    } else {
        let counts: Vec<usize> = online
            .iter()
            .map(|c| {
                nodes
                    .iter()
                    .find(|v| v.contains(c))
                    .map_or(cpus, |v| v.iter().filter(|x| online.contains(x)).count())
            })
            .collect();
        let (n, differ) = uniform(&counts, cpus, cpus, "CPUs per node");
        t.cpus_per_node = n;
        t.node_note = format!(
            "/sys/devices/system/node: {} node{} with CPUs",
            nodes.len(),
            if nodes.len() == 1 { "" } else { "s" }
        );
        if let Some(d) = differ {
            let _ = write!(t.node_note, "; {d}");
        }
    }
    t
}

/// The cpufreq facts `host` reads (cpu0's policy), for a `[cpufreq]` section.
#[derive(Clone, Debug, PartialEq)]
pub struct CpufreqFacts {
    pub pstates_mhz: Vec<f64>,
    pub pstates_note: String,
    pub package: bool,
    pub related: String,
    pub governor: &'static str,
    pub governor_note: String,
    pub transition_ns: f64,
    pub transition_note: String,
}

/// cpufreq's sysfs as `Machine::load("host")` reads it: `scaling_available_frequencies`,
/// else `cpuinfo_min_freq`/`cpuinfo_max_freq`; `None` where there is no cpufreq (most VMs).
pub fn read_cpufreq(read: ReadFn) -> Option<CpufreqFacts> {
    let base = "/sys/devices/system/cpu/cpu0/cpufreq";
    let khz = |f: &str| read(&format!("{base}/{f}")).and_then(|s| s.trim().parse::<f64>().ok());
    let mut mhz: Vec<f64> = read(&format!("{base}/scaling_available_frequencies"))
        .map(|s| {
            s.split_whitespace()
                .filter_map(|x| x.parse::<f64>().ok())
                .map(|k| k / 1000.0)
                .collect()
        })
        .unwrap_or_default();
    let mut note = "/sys: cpu0 cpufreq/scaling_available_frequencies".to_string();
    if mhz.is_empty() {
        mhz = vec![
            khz("cpuinfo_min_freq")? / 1000.0,
            khz("cpuinfo_max_freq")? / 1000.0,
        ];
        note = "/sys: cpu0 cpufreq/cpuinfo_min_freq and cpuinfo_max_freq (the driver lists no others; the maximum may be a turbo clock)".into();
    }
    mhz.sort_by(f64::total_cmp);
    mhz.dedup();
    if mhz.is_empty() || mhz.iter().any(|m| !(1.0..=100_000.0).contains(m)) || mhz.len() > 64 {
        return None;
    }
    let related = read(&format!("{base}/related_cpus"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let gov_text = read(&format!("{base}/scaling_governor"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let (governor, governor_note) = match crate::machine::Governor::parse(&gov_text) {
        Ok(g) => (g.name(), format!("/sys: cpu0 cpufreq/scaling_governor = {gov_text}")),
        Err(_) => (
            "performance",
            format!("/sys: cpu0 cpufreq/scaling_governor = '{gov_text}', which schedkit does not model: performance, as host"),
        ),
    };
    let (transition_ns, transition_note) =
        match khz("cpuinfo_transition_latency").filter(|l| (0.0..=10_000_000.0).contains(l)) {
            Some(l) => (
                l,
                "/sys: cpu0 cpufreq/cpuinfo_transition_latency".to_string(),
            ),
            None => (
                10_000.0,
                "estimate: the driver gives no transition latency; 10 us, as host".to_string(),
            ),
        };
    Some(CpufreqFacts {
        pstates_mhz: mhz,
        pstates_note: note,
        package: related.split_whitespace().count() > 2,
        related,
        governor,
        governor_note,
        transition_ns,
        transition_note,
    })
}

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
/// - fork + exit + wait, less the wait and the two switches it contains, split 2:1 between
///   fork and exit (host's assumption, from the 2002 profiles); exec is fork + exec less
///   fork + exit; the shell's start-up is `sh -c 'exit 0'` (a shell that runs nothing) less
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
    let mut costs = vec![];
    let mut kernel = vec![];

    let cache = direct(
        "cache_latency_ns",
        &raw.cache_latency,
        hc.cache_latency_ns,
        "an estimate there",
    );
    let cache_ns = cache.value;
    costs.push(cache);
    costs.push(direct(
        "mem_latency_ns",
        &raw.mem_latency,
        hc.mem_latency_ns,
        "an estimate there",
    ));
    costs.push(direct(
        "mem_read_mb_s",
        &raw.mem_read,
        hc.mem_read_mb_s,
        "an estimate there",
    ));
    if let Some(Ok(m)) = &raw.llc_read {
        costs.push(Entry {
            key: "llc_read_mb_s",
            value: m.v,
            note: format!("measured: {}", m.how),
            above: vec![],
        });
    }
    costs.push(direct(
        "atomic_ns",
        &raw.atomic,
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
            let base = f.v - wait_ns - 2.0 * ctx_full;
            let (base, clamp) = if base > 0.0 {
                (base, "")
            } else {
                (
                    f.v,
                    " (the wait and switches exceed it: the whole figure is split)",
                )
            };
            let above = vec![
                format!(
                    "fork + child's _exit + waitpid pinned to one CPU (lmbench's lat_proc fork): {:.0} ns ({}).",
                    f.v, f.how
                ),
                format!(
                    "Less wait_ns ({wait_ns:.0}) and two switches (2 x {ctx_full:.0}): {base:.0}{clamp}, split 2:1 between fork and"
                ),
                "exit as profiles/host.toml does (an assumption from the 2002 profiles).".into(),
            ];
            kernel.push(Entry {
                key: "fork_ns",
                value: base * 2.0 / 3.0,
                note: "measured: 2/3 of the above".into(),
                above,
            });
            kernel.push(Entry {
                key: "exit_ns",
                value: base / 3.0,
                note: "measured: 1/3 of the above".into(),
                above: vec![],
            });
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

/// Writes one section's entries with their comments, values aligned.
fn render_entries(out: &mut String, entries: &[(String, String, String, Vec<String>)]) {
    let width = entries
        .iter()
        .map(|(k, v, _, _)| k.len() + v.len() + 3)
        .max()
        .unwrap_or(0)
        .max(24)
        + 2;
    for (k, v, note, above) in entries {
        for a in above {
            let _ = writeln!(out, "# {a}");
        }
        let kv = format!("{k} = {v}");
        if note.is_empty() {
            let _ = writeln!(out, "{kv}");
        } else {
            let _ = writeln!(out, "{kv:<width$}# {note}");
        }
    }
}

/// Everything the profile's text is made of.
pub struct ProfileParts<'a> {
    pub name: &'a str,
    pub description: String,
    pub header: Vec<String>,
    pub topo: &'a TopoFacts,
    pub mhz: (f64, String),
    pub hz: (u32, String),
    pub cpufreq: Option<&'a CpufreqFacts>,
    pub costs: Vec<Entry>,
    pub kernel: Vec<Entry>,
    /// A measured copy-on-write fault, written as a comment (see the text).
    pub cow: Fig,
    pub llc_read_missing: Option<String>,
}

/// The profile's TOML text.
pub fn render(p: &ProfileParts) -> String {
    let mut out = String::new();
    for h in &p.header {
        if h.is_empty() {
            out.push_str("#\n");
        } else {
            let _ = writeln!(out, "# {h}");
        }
    }
    let _ = writeln!(out, "\nname = {}", toml_string(p.name));
    let _ = writeln!(out, "description = {}", toml_string(&p.description));
    let t = p.topo;
    let row = |k: &str, v: String, n: &str| (k.to_string(), v, n.to_string(), vec![]);
    let mut topo = vec![
        row("cpus", t.cpus.to_string(), &t.cpus_note),
        row(
            "threads_per_core",
            t.threads_per_core.to_string(),
            &t.threads_note,
        ),
        row(
            "cpus_per_cache",
            t.cpus_per_cache.to_string(),
            &t.cache_note,
        ),
    ];
    if let Some((n, _, note)) = &t.l2 {
        topo.push(row("cpus_per_l2", n.to_string(), note));
    }
    topo.push(row(
        "cpus_per_package",
        t.cpus_per_package.to_string(),
        &t.package_note,
    ));
    topo.push(row(
        "cpus_per_node",
        t.cpus_per_node.to_string(),
        &t.node_note,
    ));
    out.push_str("\n[topology]\n");
    render_entries(&mut out, &topo);

    out.push_str("\n[clock]\n");
    render_entries(
        &mut out,
        &[
            row("mhz", fmt_float(p.mhz.0), &p.mhz.1),
            row("hz", p.hz.0.to_string(), &p.hz.1),
        ],
    );

    out.push_str("\n[cache]\n");
    let llc_kb = t.llc_kb.unwrap_or(32768);
    let mut cache = vec![row(
        "size_kb",
        llc_kb.to_string(),
        if t.llc_kb.is_some() {
            &t.llc_note
        } else {
            "copied from profiles/host.toml: /sys gives no cache size"
        },
    )];
    let with_l2 = t.l2.is_some() && p.costs.iter().any(|e| e.key == "llc_read_mb_s");
    if let (true, Some((_, kb, note))) = (with_l2, &t.l2) {
        cache.push(row(
            "l2_kb",
            kb.to_string(),
            &format!("{note}: a separate level under the last-level cache"),
        ));
    }
    render_entries(&mut out, &cache);
    if !with_l2 {
        let why = match (&t.l2, &p.llc_read_missing) {
            (Some(_), Some(why)) => {
                format!("l2_kb left out: the LLC's refill rate was not measured ({why})")
            }
            _ => format!("l2_kb left out: {}", t.l2_absent_note),
        };
        let _ = writeln!(out, "# {why}");
    }

    if let Some(f) = p.cpufreq {
        out.push_str("\n[cpufreq]\n");
        let list = f
            .pstates_mhz
            .iter()
            .map(|m| fmt_float(*m))
            .collect::<Vec<_>>()
            .join(", ");
        render_entries(
            &mut out,
            &[
                row(
                    "domain",
                    toml_string(if f.package { "package" } else { "core" }),
                    &format!(
                        "/sys: cpu0 cpufreq/related_cpus = {} (more than two CPUs: one P-state per package, as host reads it)",
                        f.related
                    ),
                ),
                row("pstates_mhz", format!("[{list}]"), &f.pstates_note),
                row(
                    "transition_latency_ns",
                    fmt_float(f.transition_ns),
                    &f.transition_note,
                ),
                row(
                    "default_governor",
                    toml_string(f.governor),
                    &f.governor_note,
                ),
            ],
        );
    }

    let entries = |v: &[Entry]| -> Vec<(String, String, String, Vec<String>)> {
        v.iter()
            .map(|e| {
                (
                    e.key.to_string(),
                    fmt_float(e.value),
                    e.note.clone(),
                    e.above.clone(),
                )
            })
            .collect()
    };
    out.push_str("\n[costs]\n");
    render_entries(&mut out, &entries(&p.costs));
    out.push_str("\n[kernel]\n");
    render_entries(&mut out, &entries(&p.kernel));
    match &p.cow {
        Ok(m) => {
            let _ = writeln!(
                out,
                "# cow_fault_ns = {}   # measured: {}: a write-protect fault on a page no longer shared (no copy).",
                fmt_float(m.v),
                m.how
            );
            out.push_str("# Left out: a profile with cow_fault_ns gets the address-space model of 2.4's fork/exec/exit\n# (sim/mm.rs), which the shipped modern profiles (host) do not use.\n");
        }
        Err(why) => {
            let _ = writeln!(
                out,
                "# cow_fault_ns not measured ({why}); left out, as host does."
            );
        }
    }
    out
}

/// The `host` profile's own values, the fallback of every figure not measured.
pub fn host_profile() -> MachineProfile {
    let text = BUILTIN_PROFILES
        .iter()
        .find(|(n, _)| *n == "host")
        .map(|(_, t)| *t)
        .unwrap_or_default();
    match Machine::from_toml(text, "host") {
        Ok(m) => m.profile,
        // The shipped profiles load (machine.rs tests it).
        Err(e) => panic!("the shipped host profile does not load: {e}"),
    }
}

// ------------------------------------------------------------------------------------------
// The microbenchmarks (Linux x86-64).
// ------------------------------------------------------------------------------------------

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod measure {
    //! Raw timings, no interpretation. Every function times the calling thread; callers pin
    //! it first (`on_cpu`).

    use std::ffi::CString;
    use std::hint::black_box;
    use std::io;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    use std::sync::Arc;

    fn os_err<T>(what: &str) -> io::Result<T> {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    }

    /// CLOCK_MONOTONIC, ns (the vDSO's clock).
    pub fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec to write into.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    fn cpu_set(cpu: usize) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is plain bits; CPU_SET ignores CPUs beyond CPU_SETSIZE.
        unsafe {
            let mut s: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut s);
            s
        }
    }

    /// Pins the calling thread to `cpu`.
    pub fn pin_self(cpu: usize) -> io::Result<()> {
        let s = cpu_set(cpu);
        // SAFETY: a valid cpu_set_t of the size given.
        if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &s) } != 0 {
            return os_err(&format!("sched_setaffinity(CPU {cpu})"));
        }
        Ok(())
    }

    /// The CPUs this thread may run on.
    pub fn allowed_cpus() -> Vec<usize> {
        // SAFETY: a zeroed cpu_set_t filled in by the kernel; CPU_ISSET reads within it.
        unsafe {
            let mut s: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s) != 0 {
                return vec![];
            }
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &s))
                .collect()
        }
    }

    /// Runs `f` on a new thread pinned to `cpu` (the caller's affinity is left alone).
    pub fn on_cpu<T: Send>(cpu: usize, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                pin_self(cpu)?;
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("a measurement thread panicked")))
        })
    }

    /// Involuntary context switches of the calling thread so far.
    fn preemptions() -> i64 {
        // SAFETY: a zeroed rusage for the kernel to fill in.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: ru is valid.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            return 0;
        }
        ru.ru_nivcsw as i64
    }

    /// The values of runs of a timed loop that no other task preempted.
    pub struct Runs {
        pub kept: Vec<f64>,
        /// Runs left out because another task preempted them.
        pub preempted: usize,
        /// Every run was preempted: `kept` holds them all.
        pub all_preempted: bool,
    }

    /// Calls `f` (one timed run) until `reps` runs were not preempted by another task, at
    /// most `4 reps` times: a run that lost the CPU measured the other task too.
    pub fn unpreempted(reps: usize, mut f: impl FnMut() -> io::Result<f64>) -> io::Result<Runs> {
        let (mut kept, mut all) = (vec![], vec![]);
        for _ in 0..4 * reps.max(1) {
            let p = preemptions();
            let v = f()?;
            all.push(v);
            if preemptions() == p {
                kept.push(v);
                if kept.len() >= reps {
                    break;
                }
            }
        }
        let preempted = all.len() - kept.len();
        Ok(if kept.is_empty() {
            Runs {
                kept: all,
                preempted,
                all_preempted: true,
            }
        } else {
            Runs {
                kept,
                preempted,
                all_preempted: false,
            }
        })
    }

    /// Runs `f(iters)`, `iters` chosen by pilot runs so that one run takes about
    /// `budget_ns`, until `reps` runs were not preempted ([`unpreempted`]); returns the ns per
    /// iteration of those runs and `iters`.
    pub fn per_iter(
        reps: usize,
        budget_ns: u64,
        max_iters: u64,
        mut f: impl FnMut(u64) -> io::Result<()>,
    ) -> io::Result<(Runs, u64)> {
        let mut iters = 1u64;
        loop {
            let t0 = now_ns();
            f(iters)?;
            let t = now_ns() - t0;
            if t >= budget_ns / 8 || iters >= max_iters {
                iters = ((iters as f64 * budget_ns as f64 / t.max(1) as f64) as u64)
                    .clamp(1, max_iters);
                break;
            }
            iters = (iters * 4).min(max_iters);
        }
        let runs = unpreempted(reps, || {
            let t0 = now_ns();
            f(iters)?;
            Ok((now_ns() - t0) as f64 / iters as f64)
        })?;
        Ok((runs, iters))
    }

    /// Calls `op` (one timed operation, returning its ns) for about `total_ns`, at least
    /// `min_ops` and at most `max_ops` times; returns each operation's time. Long operations
    /// (fork, exec) are timed one by one, so that the median leaves out those another task
    /// delayed.
    pub fn per_op(
        total_ns: u64,
        min_ops: usize,
        max_ops: usize,
        mut op: impl FnMut() -> io::Result<u64>,
    ) -> io::Result<Vec<f64>> {
        let start = now_ns();
        let mut out = vec![];
        while out.len() < min_ops || (out.len() < max_ops && now_ns() - start < total_ns) {
            out.push(op()? as f64);
        }
        Ok(out)
    }

    /// A null system call: `syscall(SYS_getppid)`.
    pub fn syscall(n: u64) -> io::Result<()> {
        for _ in 0..n {
            // SAFETY: getppid takes no arguments and cannot fail.
            black_box(unsafe { libc::syscall(libc::SYS_getppid) });
        }
        Ok(())
    }

    /// Uncontended `lock xadd` on a line this CPU owns.
    pub fn atomic(n: u64) -> io::Result<()> {
        let a = AtomicU64::new(0);
        for _ in 0..n {
            black_box(&a).fetch_add(1, Ordering::SeqCst);
        }
        black_box(a.load(Ordering::Relaxed));
        Ok(())
    }

    /// Dependent register adds per `add_chain` iteration.
    pub const ADDS_PER_ITER: f64 = 16.0;

    /// `n` iterations of 16 dependent register adds (one cycle each on any x86-64 core):
    /// the core's clock is 16 n cycles over the time taken.
    pub fn add_chain(n: u64) -> io::Result<()> {
        let mut x = 0u64;
        let mut n = n.max(1);
        // SAFETY: register arithmetic only.
        unsafe {
            std::arch::asm!(
                "2:",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
                "dec {n}",
                "jnz 2b",
                x = inout(reg) x,
                n = inout(reg) n,
                options(nomem, nostack),
            );
        }
        black_box((x, n));
        Ok(())
    }

    /// A file descriptor, closed on drop.
    pub struct Fd(pub i32);
    impl Drop for Fd {
        fn drop(&mut self) {
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(self.0) };
        }
    }

    pub fn pipe() -> io::Result<(Fd, Fd)> {
        let mut fds = [0i32; 2];
        // SAFETY: fds has room for the two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return os_err("pipe2");
        }
        Ok((Fd(fds[0]), Fd(fds[1])))
    }

    fn write_all(fd: &Fd, buf: &[u8]) -> io::Result<()> {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::write(fd.0, buf.as_ptr().cast(), buf.len()) };
        if n != buf.len() as isize {
            return os_err("write");
        }
        Ok(())
    }

    fn read_exact(fd: &Fd, buf: &mut [u8]) -> io::Result<()> {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::read(fd.0, buf.as_mut_ptr().cast(), buf.len()) };
        if n != buf.len() as isize {
            return os_err("read");
        }
        Ok(())
    }

    /// Per-run ns of 1-byte pipe writes that wake nobody and reads that find data, in one
    /// thread (no switch), in batches of 1024; and of the writes timed call by call.
    pub struct PipeOps {
        pub write: Vec<f64>,
        pub read: Vec<f64>,
        pub write_timed: Vec<f64>,
    }

    pub const PIPE_BATCH: u64 = 1024; // 1 KB: far below a pipe's 64 KB

    pub fn pipe_ops(reps: usize, batches: u64) -> io::Result<PipeOps> {
        let (r, w) = pipe()?;
        let mut b = [0u8; 1];
        let mut out = PipeOps {
            write: vec![],
            read: vec![],
            write_timed: vec![],
        };
        // Run 0 warms up.
        for rep in 0..=reps {
            let (mut tw, mut tr, mut tt) = (0u64, 0u64, 0u64);
            for _ in 0..batches {
                let t0 = now_ns();
                for _ in 0..PIPE_BATCH {
                    write_all(&w, &b)?;
                }
                let t1 = now_ns();
                for _ in 0..PIPE_BATCH {
                    read_exact(&r, &mut b)?;
                }
                let t2 = now_ns();
                for _ in 0..PIPE_BATCH {
                    let t = now_ns();
                    write_all(&w, &b)?;
                    tt += now_ns() - t;
                }
                for _ in 0..PIPE_BATCH {
                    read_exact(&r, &mut b)?;
                }
                tw += t1 - t0;
                tr += t2 - t1;
            }
            if rep > 0 {
                let n = (batches * PIPE_BATCH) as f64;
                out.write.push(tw as f64 / n);
                out.read.push(tr as f64 / n);
                out.write_timed.push(tt as f64 / n);
            }
        }
        Ok(out)
    }

    pub const SOCK_BATCH: u64 = 64;
    pub const SOCK_BYTES: usize = 100;

    /// Per-run ns of 100-byte sends and receives on an AF_UNIX stream socketpair in one
    /// thread (hackbench's socket kind and message size), in batches of 64.
    pub fn socket_ops(reps: usize, batches: u64) -> io::Result<(Vec<f64>, Vec<f64>)> {
        let mut fds = [0i32; 2];
        // SAFETY: fds has room for the two descriptors.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } != 0
        {
            return os_err("socketpair");
        }
        let (a, b) = (Fd(fds[0]), Fd(fds[1]));
        let mut buf = [7u8; SOCK_BYTES];
        let (mut send, mut recv) = (vec![], vec![]);
        for rep in 0..=reps {
            let (mut ts, mut tr) = (0u64, 0u64);
            for _ in 0..batches {
                let t0 = now_ns();
                for _ in 0..SOCK_BATCH {
                    // SAFETY: buf is valid for its length.
                    let n = unsafe {
                        libc::send(a.0, buf.as_ptr().cast(), buf.len(), libc::MSG_DONTWAIT)
                    };
                    if n != buf.len() as isize {
                        return os_err("send");
                    }
                }
                let t1 = now_ns();
                for _ in 0..SOCK_BATCH {
                    // SAFETY: buf is valid for its length.
                    let n = unsafe { libc::recv(b.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
                    if n != buf.len() as isize {
                        return os_err("recv");
                    }
                }
                ts += t1 - t0;
                tr += now_ns() - t1;
            }
            if rep > 0 {
                let n = (batches * SOCK_BATCH) as f64;
                send.push(ts as f64 / n);
                recv.push(tr as f64 / n);
            }
        }
        Ok((send, recv))
    }

    /// A forked child, killed and reaped on drop.
    struct Child(libc::pid_t);
    impl Drop for Child {
        fn drop(&mut self) {
            // SAFETY: our own child, not yet reaped.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                libc::waitpid(self.0, std::ptr::null_mut(), 0);
            }
        }
    }

    /// Round trips of one byte between the calling thread and a child process pinned to
    /// `child_cpu`: per run, the median round trip and the median time of the parent's
    /// write() calls (each wakes the child); and the round trips of a run.
    pub struct PingPong {
        pub round_trip: Vec<f64>,
        pub write: Vec<f64>,
        pub rounds: u64,
    }

    pub fn pingpong(child_cpu: usize, reps: usize, budget_ns: u64) -> io::Result<PingPong> {
        let (to_r, to_w) = pipe()?;
        let (from_r, from_w) = pipe()?;
        let set = cpu_set(child_cpu);
        // SAFETY: the child calls only async-signal-safe system calls (sched_setaffinity,
        // read, write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return os_err("fork");
        }
        if pid == 0 {
            // SAFETY: see above.
            unsafe {
                let mut b = 0u8;
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    libc::_exit(3);
                }
                loop {
                    if libc::read(to_r.0, (&mut b as *mut u8).cast(), 1) != 1 {
                        libc::_exit(0);
                    }
                    if libc::write(from_w.0, (&b as *const u8).cast(), 1) != 1 {
                        libc::_exit(1);
                    }
                }
            }
        }
        let child = Child(pid);
        drop((to_r, from_w));
        let mut b = [0u8; 1];
        let mut rt = vec![];
        let mut wr = vec![];
        let mut run = |n: u64, rt: &mut Vec<u64>, wr: &mut Vec<u64>| -> io::Result<u64> {
            rt.clear();
            wr.clear();
            let start = now_ns();
            for _ in 0..n {
                let t0 = now_ns();
                write_all(&to_w, &b)?;
                let t1 = now_ns();
                read_exact(&from_r, &mut b)?;
                let t2 = now_ns();
                rt.push(t2 - t0);
                wr.push(t1 - t0);
            }
            Ok(now_ns() - start)
        };
        // Warm up (the child migrates to its CPU), and size the runs.
        run(20, &mut rt, &mut wr)?;
        let mut n = 20u64;
        let rounds = loop {
            let t = run(n, &mut rt, &mut wr)?;
            if t >= budget_ns / 8 || n >= 1 << 20 {
                break ((n as f64 * budget_ns as f64 / t.max(1) as f64) as u64).clamp(10, 1 << 22);
            }
            n *= 4;
        };
        let mut out = PingPong {
            round_trip: vec![],
            write: vec![],
            rounds,
        };
        let med = |v: &[u64]| super::median(&v.iter().map(|&x| x as f64).collect::<Vec<_>>());
        for _ in 0..reps {
            run(rounds, &mut rt, &mut wr)?;
            out.round_trip.push(med(&rt));
            out.write.push(med(&wr));
        }
        drop(to_w); // the child reads end-of-file and exits
        drop(child);
        Ok(out)
    }

    /// Busy loops at SCHED_IDLE (nice 19 where that is refused), one pinned to each CPU
    /// given: they keep those CPUs out of their idle state and give way to any other task at
    /// once. Stopped on drop.
    pub struct Spinners {
        stop: Arc<AtomicBool>,
        threads: Vec<std::thread::JoinHandle<()>>,
        pub policy: &'static str,
    }

    impl Spinners {
        pub fn start(cpus: &[usize]) -> Spinners {
            let stop = Arc::new(AtomicBool::new(false));
            let ready = Arc::new(AtomicUsize::new(0));
            let idle_ok = Arc::new(AtomicUsize::new(0));
            let mut s = Spinners {
                stop: stop.clone(),
                threads: vec![],
                policy: "SCHED_IDLE",
            };
            for &cpu in cpus {
                let (stop, ready, idle_ok) = (stop.clone(), ready.clone(), idle_ok.clone());
                s.threads.push(std::thread::spawn(move || {
                    let _ = pin_self(cpu);
                    let p = libc::sched_param { sched_priority: 0 };
                    // SAFETY: this thread's own policy.
                    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) } == 0 {
                        idle_ok.fetch_add(1, Ordering::SeqCst);
                    } else {
                        // SAFETY: this thread's own nice value.
                        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
                    }
                    ready.fetch_add(1, Ordering::SeqCst);
                    // No PAUSE in the loop: in a VM, PAUSE loops can exit to the hypervisor.
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = black_box(x.wrapping_add(1));
                    }
                }));
            }
            while ready.load(Ordering::SeqCst) < cpus.len() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if idle_ok.load(Ordering::SeqCst) < cpus.len() {
                s.policy = "nice 19";
            }
            // Let them settle on their CPUs.
            std::thread::sleep(std::time::Duration::from_millis(5));
            s
        }
    }

    impl Drop for Spinners {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            for t in self.threads.drain(..) {
                let _ = t.join();
            }
        }
    }

    /// The timer wakeups of a thread on `cpu` while a spinner keeps it busy, seen through
    /// tracefs: for each wakeup in the timer's interrupt (`sched_waking` with the hardirq
    /// flag, the spinner interrupted), the time to the switch to the woken thread. Needs a
    /// tracefs this process may write and that is not in use (`tracing_on` 0); the settings
    /// it changes are put back. Returns the intervals in ns (tracefs prints microseconds).
    pub fn timer_wake_trace(cpu: usize, wakes: usize, period_ns: u64) -> io::Result<Vec<u64>> {
        let root = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
            .into_iter()
            .find(|r| std::path::Path::new(&format!("{r}/tracing_on")).exists())
            .ok_or_else(|| io::Error::other("no tracefs (/sys/kernel/tracing) to trace with"))?;
        let path = |f: &str| format!("{root}/{f}");
        let read = |f: &str| -> io::Result<String> {
            std::fs::read_to_string(path(f)).map(|s| s.trim().to_string())
        };
        let write = |f: &str, v: &str| -> io::Result<()> {
            std::fs::write(path(f), v)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path(f))))
        };
        if read("tracing_on")? != "0" {
            return Err(io::Error::other(format!(
                "tracefs is in use ({} is 1): left alone",
                path("tracing_on")
            )));
        }
        const EVENTS: [&str; 2] = [
            "events/sched/sched_waking/enable",
            "events/sched/sched_switch/enable",
        ];
        let saved: Vec<(&str, String)> = EVENTS
            .iter()
            .map(|&f| read(f).map(|v| (f, v)))
            .chain(std::iter::once(
                read("buffer_size_kb").map(|v| ("buffer_size_kb", v)),
            ))
            .collect::<io::Result<_>>()?;
        let restore = || {
            let _ = write("tracing_on", "0");
            for (f, v) in &saved {
                let _ = write(f, v);
            }
            let _ = write("trace", "");
        };
        let traced = (|| -> io::Result<(String, i32)> {
            write("trace", "")?;
            write("buffer_size_kb", "4096")?;
            for f in EVENTS {
                write(f, "1")?;
            }
            let spin = Spinners::start(&[cpu]);
            let tid = on_cpu(cpu, || {
                // SAFETY: this thread's own id and timer slack (1 ns: the expiry as asked).
                let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
                unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
                write("tracing_on", "1")?;
                let mut next = now_ns() + period_ns;
                for _ in 0..wakes {
                    let ts = libc::timespec {
                        tv_sec: (next / 1_000_000_000) as libc::time_t,
                        tv_nsec: (next % 1_000_000_000) as libc::c_long,
                    };
                    // SAFETY: an absolute sleep on CLOCK_MONOTONIC, the clock now_ns reads.
                    unsafe {
                        libc::clock_nanosleep(
                            libc::CLOCK_MONOTONIC,
                            libc::TIMER_ABSTIME,
                            &ts,
                            std::ptr::null_mut(),
                        )
                    };
                    next += period_ns;
                }
                write("tracing_on", "0")?;
                Ok(tid)
            });
            drop(spin);
            let tid = tid?;
            Ok((std::fs::read_to_string(path("trace"))?, tid))
        })();
        restore();
        let (text, tid) = traced?;
        let v = super::timer_wake_intervals(&text, tid);
        if v.len() < wakes / 4 {
            return Err(io::Error::other(format!(
                "the trace held {} timer wakeups of {wakes} on a busy CPU (events lost, or the spinner did not keep the CPU busy)",
                v.len()
            )));
        }
        Ok(v)
    }

    /// Reaps `pid`; returns its exit status (-1 if it did not exit normally).
    fn reap(pid: libc::pid_t) -> io::Result<i32> {
        let mut st = 0;
        // SAFETY: our own child; st is valid.
        if unsafe { libc::waitpid(pid, &mut st, 0) } != pid {
            return os_err("waitpid");
        }
        Ok(if libc::WIFEXITED(st) {
            libc::WEXITSTATUS(st)
        } else {
            -1
        })
    }

    fn fork_exiting() -> io::Result<libc::pid_t> {
        // SAFETY: the child only calls _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return os_err("fork");
        }
        if pid == 0 {
            // SAFETY: async-signal-safe.
            unsafe { libc::_exit(0) };
        }
        Ok(pid)
    }

    /// fork + the child's _exit + waitpid (lmbench's `lat_proc fork`): its ns.
    pub fn fork_exit_wait() -> io::Result<u64> {
        let t = now_ns();
        reap(fork_exiting()?)?;
        Ok(now_ns() - t)
    }

    /// The ns of a waitpid that reaps a child already a zombie (waited for first with
    /// `waitid(WNOWAIT)`, which leaves it one).
    pub fn wait_zombie() -> io::Result<u64> {
        let pid = fork_exiting()?;
        // SAFETY: a zeroed siginfo_t for the kernel to fill in.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: our own child; WNOWAIT leaves it a zombie.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r != 0 {
            let e = os_err("waitid");
            let _ = reap(pid);
            return e;
        }
        let t = now_ns();
        reap(pid)?;
        Ok(now_ns() - t)
    }

    /// A program and its arguments, ready to exec in a forked child.
    pub struct Exec {
        path: CString,
        _args: Vec<CString>,
        argv: Vec<*const libc::c_char>,
    }

    // SAFETY: the pointers point into the owned CStrings, which are never changed or moved
    // (their heap buffers stay put when the Vec moves).
    unsafe impl Send for Exec {}
    // SAFETY: as above; `run` only reads them.
    unsafe impl Sync for Exec {}

    impl Exec {
        pub fn new(path: &str, args: &[&str]) -> Option<Exec> {
            if !std::path::Path::new(path).exists() {
                return None;
            }
            let path = CString::new(path).ok()?;
            let args: Vec<CString> = args
                .iter()
                .map(|a| CString::new(*a).ok())
                .collect::<Option<_>>()?;
            let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
            argv.push(std::ptr::null());
            Some(Exec {
                path,
                _args: args,
                argv,
            })
        }

        /// fork + exec + the program's run and exit + waitpid (lmbench's `lat_proc exec`):
        /// its ns; fails unless the program exits 0.
        pub fn run(&self) -> io::Result<u64> {
            let t = now_ns();
            // SAFETY: the child calls only execv and _exit, on memory prepared before.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return os_err("fork");
            }
            if pid == 0 {
                // SAFETY: see above.
                unsafe {
                    libc::execv(self.path.as_ptr(), self.argv.as_ptr());
                    libc::_exit(127);
                }
            }
            let st = reap(pid)?;
            let dt = now_ns() - t;
            if st != 0 {
                return Err(io::Error::other(format!(
                    "{} exited with status {st}",
                    self.path.to_string_lossy()
                )));
            }
            Ok(dt)
        }
    }

    /// Anonymous memory, unmapped on drop.
    pub struct Map {
        ptr: *mut u8,
        len: usize,
    }

    impl Map {
        /// `len` bytes, in 2 MB pages where the kernel grants them (`huge`) or in 4 KB ones.
        pub fn new(len: usize, huge: bool) -> io::Result<Map> {
            // SAFETY: a fresh private anonymous mapping.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return os_err(&format!("mmap of {} MB", len >> 20));
            }
            let advice = if huge {
                libc::MADV_HUGEPAGE
            } else {
                libc::MADV_NOHUGEPAGE
            };
            // SAFETY: advice on our own mapping (ignored where unsupported).
            unsafe { libc::madvise(ptr, len, advice) };
            Ok(Map {
                ptr: ptr.cast(),
                len,
            })
        }

        pub fn addr(&self) -> usize {
            self.ptr as usize
        }

        pub fn words(&self) -> &[usize] {
            // SAFETY: the mapping is ours, zero-filled, page-aligned and len bytes long.
            unsafe {
                std::slice::from_raw_parts(self.ptr.cast(), self.len / std::mem::size_of::<usize>())
            }
        }

        pub fn words_mut(&mut self) -> &mut [usize] {
            // SAFETY: as `words`, borrowed mutably once.
            unsafe {
                std::slice::from_raw_parts_mut(
                    self.ptr.cast(),
                    self.len / std::mem::size_of::<usize>(),
                )
            }
        }
    }

    impl Drop for Map {
        fn drop(&mut self) {
            // SAFETY: our own mapping, unmapped once.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
    }

    // SAFETY: a Map is owned memory like a Box<[u8]>.
    unsafe impl Send for Map {}
    // SAFETY: shared access only reads (`words`).
    unsafe impl Sync for Map {}

    /// Mean ns of the write-protect faults on `pages` pages written before a fork whose child
    /// has gone: each page is no longer shared, so `do_wp_page` reuses it with no copy.
    pub fn wp_fault(pages: usize) -> io::Result<f64> {
        const PAGE: usize = 4096;
        let m = Map::new(pages * PAGE, false)?;
        for i in 0..pages {
            // SAFETY: within the mapping.
            unsafe { m.ptr.add(i * PAGE).write_volatile(1) };
        }
        fork_exit_wait()?;
        let t = now_ns();
        for i in 0..pages {
            // SAFETY: within the mapping.
            unsafe { m.ptr.add(i * PAGE).write_volatile(2) };
        }
        let dt = now_ns() - t;
        black_box(m.words()[0]);
        Ok(dt as f64 / pages as f64)
    }

    /// xorshift64*.
    pub struct Rng(u64);
    impl Rng {
        pub fn new(seed: u64) -> Rng {
            Rng(seed | 1)
        }
        pub fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// Words in a 64-byte line.
    pub const LINE_WORDS: usize = 64 / std::mem::size_of::<usize>();

    /// Links one word per 64-byte line of `buf` into one random cycle (Sattolo's
    /// algorithm): following `i = buf[i]` from 0 visits every line once, in an order no
    /// prefetcher can guess.
    pub fn link_chase(buf: &mut [usize], rng: &mut Rng) {
        let lines = buf.len() / LINE_WORDS;
        let mut perm: Vec<u32> = (0..lines as u32).collect();
        for i in (1..lines).rev() {
            let j = (rng.next_u64() % i as u64) as usize;
            perm.swap(i, j);
        }
        for (i, &next) in perm.iter().enumerate() {
            buf[i * LINE_WORDS] = next as usize * LINE_WORDS;
        }
    }

    /// `n` dependent loads around the cycle `link_chase` made, from word `p`; returns where
    /// it stopped.
    pub fn chase(buf: &[usize], mut p: usize, n: u64) -> usize {
        for _ in 0..n {
            p = buf[p];
        }
        black_box(p)
    }

    /// Words in a streamed chunk (1 MB).
    pub const CHUNK_WORDS: usize = (1 << 20) / std::mem::size_of::<usize>();

    /// Reads the `n` 1 MB chunks of `buf` that follow chunk `at`, round the buffer; returns
    /// the chunk after the last read.
    pub fn stream(buf: &[usize], mut at: usize, n: u64) -> usize {
        let chunks = (buf.len() / CHUNK_WORDS).max(1);
        let mut x = 0usize;
        for _ in 0..n {
            at %= chunks;
            let end = ((at + 1) * CHUNK_WORDS).min(buf.len());
            x ^= sum(&buf[at * CHUNK_WORDS..end]);
            at += 1;
        }
        black_box(x);
        at
    }

    fn sum(buf: &[usize]) -> usize {
        let mut acc = [0usize; 4];
        for c in buf.chunks_exact(4) {
            acc[0] = acc[0].wrapping_add(c[0]);
            acc[1] = acc[1].wrapping_add(c[1]);
            acc[2] = acc[2].wrapping_add(c[2]);
            acc[3] = acc[3].wrapping_add(c[3]);
        }
        black_box(acc[0] ^ acc[1] ^ acc[2] ^ acc[3])
    }

    /// Busy-loops on the clock for `dur_ns`: a gap of more than `min_gap_ns` between two
    /// clock reads is time the CPU spent elsewhere (an interrupt, another task, the
    /// hypervisor). Returns the gaps as (start, length).
    pub fn gaps(dur_ns: u64, min_gap_ns: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(4096);
        let start = now_ns();
        let mut last = start;
        loop {
            let t = now_ns();
            if t - last > min_gap_ns {
                out.push((last, t - last));
            }
            last = t;
            if t - start >= dur_ns {
                break;
            }
        }
        out
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod run {
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
            (Some(a), Some(b)) => {
                match (parse_proc_stat_cpu_all(&a), parse_proc_stat_cpu_all(&b)) {
                    (Some(a), Some(b)) if b.1 > a.1 => {
                        Some(1.0 - (b.0 - a.0) as f64 / (b.1 - a.1) as f64)
                    }
                    _ => None,
                }
            }
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
            .map(|(r, _)| {
                m::ADDS_PER_ITER * 1000.0 / r.kept.iter().copied().fold(f64::MAX, f64::min)
            })
            .filter(|x| (50.0..=20_000.0).contains(x));
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
            "round trips into fields follow host.toml's derivations (crates/schedkit/src/calibrate.rs).".into(),
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
            v: (m::CHUNK_WORDS * std::mem::size_of::<usize>()) as f64
                / (1 << 20) as f64
                / (x.v / 1e9),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn cpu_lists_and_sizes_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list(" 0,2 \n"), Some(vec![0, 2]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(parse_size_kb("32768K\n"), Some(32768));
        assert_eq!(parse_size_kb("1M"), Some(1024));
        assert_eq!(parse_size_kb("48K"), Some(48));
        assert_eq!(parse_size_kb("512"), Some(512));
        assert_eq!(parse_size_kb("K"), None);
    }

    #[test]
    fn proc_files_parse() {
        let config =
            "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_HZ_PERIODIC=n\n";
        assert_eq!(parse_config_hz(config), Some(250));
        assert_eq!(parse_config_hz("CONFIG_HZ_1000=y\n"), None);
        let tl = "Timer List Version: v0.10\nnow at 1244047809526 nsecs\n  .idle_jiffies   : 4295223016\njiffies: 4295224156\njiffies: 4295224157\n";
        assert_eq!(parse_timer_list_jiffies(tl), Some(4295224156));
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.120\n\nprocessor\t: 1\ncpu MHz\t\t: 1800.0\n";
        assert_eq!(
            parse_cpuinfo(cpuinfo),
            (Some("AMD EPYC".to_string()), Some(2596.12))
        );
        let smaps = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \nSize:               4096 kB\nAnonHugePages:      2048 kB\n7f0000400000-7f0000800000 rw-p 00000000 00:00 0 \nAnonHugePages:         0 kB\n";
        assert_eq!(parse_smaps_huge_kb(smaps, 0x7f00_0000_1000), Some(2048));
        assert_eq!(parse_smaps_huge_kb(smaps, 0x7f00_0040_0000), Some(0));
        assert_eq!(parse_smaps_huge_kb(smaps, 0x1000), None);
    }

    #[test]
    fn small_helpers() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_000), "2024-10-04");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(toml_string("a \"b\"\\\n"), "\"a \\\"b\\\"\\\\\\u000A\"");
        assert_eq!(fmt_float(4.814), "4.81");
        assert_eq!(fmt_float(13.54), "13.5");
        assert_eq!(fmt_float(2596.12), "2596.0");
        assert!(check_name("").is_err() && check_name("a\nb").is_err());
        assert!(check_name("my box").is_ok());
        let stat = "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 100 0 50 800 20 5 5 20 0 0\ncpu1 1 1 1 1 1\n";
        assert_eq!(parse_proc_stat_cpu(stat, 0), Some((820, 1000)));
        assert_eq!(parse_proc_stat_cpu(stat, 1), Some((2, 5)));
        assert_eq!(parse_proc_stat_cpu(stat, 2), None);
        assert_eq!(parse_proc_stat_cpu_all(stat), Some((9, 36)));
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_chase_visits_every_line_once() {
        use super::measure::{chase, link_chase, Rng, LINE_WORDS};
        let lines = 1000;
        let mut buf = vec![0usize; lines * LINE_WORDS];
        link_chase(&mut buf, &mut Rng::new(7));
        let mut seen = vec![false; lines];
        let mut p = 0;
        for _ in 0..lines {
            assert_eq!(p % LINE_WORDS, 0);
            assert!(!seen[p / LINE_WORDS], "line {} twice", p / LINE_WORDS);
            seen[p / LINE_WORDS] = true;
            p = chase(&buf, p, 1);
        }
        assert_eq!(p, 0, "one cycle through every line");
        assert_eq!(chase(&buf, 0, lines as u64), 0);
    }

    #[test]
    fn timer_wakeups_are_read_from_tracefs_text() {
        let text = "\
# tracer: nop
           probe-77      [000] d.h2.   100.000010: sched_waking: comm=sleeper pid=42 prio=120 target_cpu=000
           probe-77      [000] d..2.   100.000018: sched_switch: prev_comm=probe prev_pid=77 prev_prio=139 prev_state=R ==> next_comm=sleeper next_pid=42 next_prio=120
          <idle>-0       [000] d.h2.   100.001000: sched_waking: comm=sleeper pid=42 prio=120 target_cpu=000
          <idle>-0       [000] d..2.   100.001030: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sleeper next_pid=42 next_prio=120
           probe-77      [000] d..2.   100.002000: sched_waking: comm=sleeper pid=42 prio=120 target_cpu=000
           probe-77      [000] d..2.   100.002003: sched_switch: prev_comm=probe prev_pid=77 prev_prio=139 prev_state=R ==> next_comm=sleeper next_pid=42 next_prio=120
           probe-77      [000] d.h2.   100.003000: sched_waking: comm=other pid=420 prio=120 target_cpu=000
           probe-77      [000] d..2.   100.003004: sched_switch: prev_comm=probe prev_pid=77 prev_prio=139 prev_state=R ==> next_comm=other next_pid=420 next_prio=120
           probe-77      [000] dNh2.   100.004000: sched_waking: comm=sleeper pid=42 prio=120 target_cpu=000
           probe-77      [000] d..2.   100.0040075: sched_switch: prev_comm=probe prev_pid=77 prev_prio=139 prev_state=R ==> next_comm=sleeper next_pid=42 next_prio=120
";
        // The first: in a hardirq on a busy CPU. Not the idle CPU's, not the task-context
        // one, not another pid; the last has a fraction of 7 digits.
        assert_eq!(timer_wake_intervals(text, 42), vec![8_000, 7_500]);
    }

    #[test]
    fn tick_gaps_keep_the_ticks_phase() {
        // HZ=250: ticks every 4 ms at phase 1.2 ms, 3 us each; other interrupts at other
        // phases, 20 us each; one 4 ms gap (another task) at the tick's phase is left out.
        let mut g = vec![];
        for k in 0..50u64 {
            g.push((k * 4_000_000 + 1_200_000 + (k % 3) * 1000, 3_000));
            g.push((k * 4_000_000 + 2_000_000 + k * 30_000, 20_000));
        }
        g.push((60 * 4_000_000 + 1_200_500, 4_000_000));
        let t = tick_gaps(&g, 250, 20_000, 1_000_000);
        assert_eq!(t.len(), 50);
        assert!(t.iter().all(|&d| d == 3_000));
        // A phase near the wrap-around (3.99 ms and 0.005 ms) still counts as one.
        let g: Vec<(u64, u64)> = (0..40u64)
            .map(|k| {
                (
                    k * 4_000_000 + if k % 2 == 0 { 3_995_000 } else { 5_000 },
                    1_500,
                )
            })
            .collect();
        assert_eq!(tick_gaps(&g, 250, 20_000, 1_000_000).len(), 40);
        assert!(tick_gaps(&[], 250, 20_000, 1_000_000).is_empty());
    }

    /// A fake /sys of an i7-M620-like machine: 2 cores x 2 threads (siblings 0,2 and 1,3),
    /// an L2 per core, one 4 MB L3, one package, one node.
    fn i7_sys() -> HashMap<String, String> {
        let mut f = HashMap::new();
        let cpu = |c: usize| format!("/sys/devices/system/cpu/cpu{c}");
        for c in 0..4 {
            let sib = if c % 2 == 0 { "0,2" } else { "1,3" };
            f.insert(
                format!("{}/topology/thread_siblings_list", cpu(c)),
                sib.into(),
            );
            f.insert(
                format!("{}/topology/physical_package_id", cpu(c)),
                "0".into(),
            );
            for (i, (level, ty, size, shared)) in [
                (1, "Data", "32K", sib),
                (1, "Instruction", "32K", sib),
                (2, "Unified", "256K", sib),
                (3, "Unified", "4096K", "0-3"),
            ]
            .into_iter()
            .enumerate()
            {
                let b = format!("{}/cache/index{i}", cpu(c));
                f.insert(format!("{b}/level"), level.to_string());
                f.insert(format!("{b}/type"), ty.into());
                f.insert(format!("{b}/size"), size.into());
                f.insert(format!("{b}/shared_cpu_list"), shared.into());
            }
        }
        f.insert(
            "/sys/devices/system/node/node0/cpulist".into(),
            "0-3".into(),
        );
        f
    }

    #[test]
    fn topology_from_a_fake_sys() {
        let f = i7_sys();
        let read = |p: &str| f.get(p).cloned();
        let t = read_topology(&read, &[0, 1, 2, 3], "0-3");
        assert_eq!(
            (
                t.cpus,
                t.threads_per_core,
                t.cpus_per_cache,
                t.cpus_per_package,
                t.cpus_per_node
            ),
            (4, 2, 4, 4, 4)
        );
        assert_eq!(t.llc_kb, Some(4096));
        let (per_l2, l2_kb, note) = t.l2.clone().unwrap();
        assert_eq!((per_l2, l2_kb), (2, 256));
        assert!(note.contains("index2") && note.contains("0,2"), "{note}");
        assert!(t.cache_note.contains("index3") && t.cache_note.contains("0-3"));
        assert_eq!(t.siblings[1], vec![1, 3]);

        // Two packages of 2 CPUs, each with its own L3 (shared as widely as the L2 would be
        // left out), two nodes.
        let mut f = i7_sys();
        for c in 0..4 {
            let b = format!("/sys/devices/system/cpu/cpu{c}");
            let pk = if c < 2 { "0" } else { "1" };
            f.insert(format!("{b}/topology/physical_package_id"), pk.into());
            f.insert(format!("{b}/topology/thread_siblings_list"), c.to_string());
            let l3 = if c < 2 { "0-1" } else { "2-3" };
            f.insert(format!("{b}/cache/index3/shared_cpu_list"), l3.into());
            f.insert(format!("{b}/cache/index2/shared_cpu_list"), l3.into());
        }
        f.insert(
            "/sys/devices/system/node/node0/cpulist".into(),
            "0-1".into(),
        );
        f.insert(
            "/sys/devices/system/node/node1/cpulist".into(),
            "2-3".into(),
        );
        let read = |p: &str| f.get(p).cloned();
        let t = read_topology(&read, &[0, 1, 2, 3], "0-3");
        assert_eq!(
            (
                t.threads_per_core,
                t.cpus_per_cache,
                t.cpus_per_package,
                t.cpus_per_node
            ),
            (1, 2, 2, 2)
        );
        assert!(
            t.l2.is_none() && t.l2_absent_note.contains("as widely"),
            "{}",
            t.l2_absent_note
        );

        // Nothing in /sys: one CPU group of everything, notes say so.
        let read = |_: &str| -> Option<String> { None };
        let t = read_topology(&read, &[0, 1, 2], "0-2");
        assert_eq!((t.cpus, t.threads_per_core, t.cpus_per_cache), (3, 1, 3));
        assert_eq!(t.llc_kb, None);
        assert!(t.cache_note.contains("no cache"));

        // Uneven groups (3 CPUs, siblings of 2) fall back to counts that divide.
        let (n, note) = uniform(&[2, 2, 1], 3, 1, "threads per core");
        assert_eq!(n, 1);
        assert!(note.unwrap().contains("does not divide"));
        let (n, note) = uniform(&[2, 1, 2, 1], 4, 1, "threads per core");
        assert_eq!(n, 2);
        assert!(note.unwrap().contains("differs"));
    }

    #[test]
    fn cpufreq_as_host_reads_it() {
        let mut f = HashMap::new();
        let b = "/sys/devices/system/cpu/cpu0/cpufreq";
        f.insert(
            format!("{b}/scaling_available_frequencies"),
            "2667000 2400000 1200000".to_string(),
        );
        f.insert(format!("{b}/related_cpus"), "0".into());
        f.insert(format!("{b}/scaling_governor"), "ondemand".into());
        f.insert(format!("{b}/cpuinfo_transition_latency"), "10000".into());
        let read = |p: &str| f.get(p).cloned();
        let c = read_cpufreq(&read).unwrap();
        assert_eq!(c.pstates_mhz, vec![1200.0, 2400.0, 2667.0]);
        assert_eq!(
            (c.package, c.governor, c.transition_ns),
            (false, "ondemand", 10_000.0)
        );
        // intel_pstate: min and max only, a governor schedkit does not model.
        let mut f = HashMap::new();
        f.insert(format!("{b}/cpuinfo_min_freq"), "800000".to_string());
        f.insert(format!("{b}/cpuinfo_max_freq"), "4200000".to_string());
        f.insert(format!("{b}/related_cpus"), "0 1 2 3".into());
        f.insert(format!("{b}/scaling_governor"), "conservative".into());
        let read = |p: &str| f.get(p).cloned();
        let c = read_cpufreq(&read).unwrap();
        assert_eq!(c.pstates_mhz, vec![800.0, 4200.0]);
        assert_eq!((c.package, c.governor), (true, "performance"));
        assert!(c.transition_note.starts_with("estimate"));
        let read = |_: &str| -> Option<String> { None };
        assert!(read_cpufreq(&read).is_none());
    }

    fn ok(v: f64) -> Fig {
        fig(v, "test")
    }

    /// host.toml's own numbers ("M"): a 2.72 us pipe round trip on one CPU, 200 + 190 ns of
    /// pipe work per hop, lat_proc fork 220 us, exec 980 us, shell 2.7 ms.
    fn host_like_raw() -> Raw {
        Raw {
            mhz: 2500.0,
            syscall: ok(100.0),
            atomic: ok(8.0),
            pipe_write: ok(200.0),
            pipe_read: ok(190.0),
            pipe_write_timed: ok(261.0),
            rt_local: ok(2720.0),
            // local hop 1360 + 2500 more to a busy CPU; + 35 us more to an idle one.
            rt_busy: ok(7720.0),
            rt_idle: ok(77_720.0),
            write_wake_busy: ok(3261.0),
            timer_irq: ok(17_600.0),
            timer_wake_exit: ok(8_000.0),
            fork: ok(220_000.0),
            wait: ok(1000.0),
            exec: ok(980_000.0),
            // sh -c 'exit 0': fork + exec (980 us) and the shell's 740 us start-up.
            shell: ok(1_720_000.0),
            sock_send: ok(700.0),
            sock_recv: ok(690.0),
            cow: ok(700.0),
            cache_latency: ok(12.0),
            mem_latency: ok(90.0),
            mem_read: ok(10_000.0),
            llc_read: Some(ok(80_000.0)),
        }
    }

    fn get(v: &[Entry], key: &str) -> Entry {
        v.iter()
            .find(|e| e.key == key)
            .cloned()
            .unwrap_or_else(|| panic!("no {key}"))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn derivations_split_as_host_toml_does() {
        let host = host_profile();
        let (c, k) = derive(&host_like_raw(), &host);
        // Switch: (2720 - 2 x 390) / 2 = 970, less 4 x (10 cycles at 2.5 GHz + 12 ns) = 64.
        assert!(close(get(&c, "context_switch_ns").value, 906.0));
        assert!(close(get(&c, "ipi_send_ns").value, 3000.0));
        // (7720 - 2720) / 2 = 2500 more per hop, less the IPI's handling priced as the
        // 100 ns system call.
        assert!(close(get(&c, "ipi_irq_ns").value, 100.0));
        assert!(close(get(&c, "ipi_latency_ns").value, 2400.0));
        assert!(close(get(&c, "idle_exit_ns").value, 35_000.0));
        assert!(close(get(&c, "timer_irq_ns").value, 17_600.0));
        assert!(close(get(&c, "timer_wake_exit_ns").value, 8_000.0));
        assert!(close(get(&c, "llc_read_mb_s").value, 80_000.0));
        // Fork: 220 000 - 1000 (wait) - 2 x 970 = 217 060, split 2:1.
        assert!(close(get(&k, "fork_ns").value, 217_060.0 * 2.0 / 3.0));
        assert!(close(get(&k, "exit_ns").value, 217_060.0 / 3.0));
        assert!(close(get(&k, "wait_ns").value, 1000.0));
        assert!(close(get(&k, "exec_ns").value, 760_000.0));
        assert!(close(get(&k, "shell_startup_ns").value, 740_000.0));
        assert!(close(get(&k, "pipe_write_ns").value, 200.0));
        assert!(close(get(&k, "sock_recv_ns").value, 690.0));
        for e in c.iter().chain(&k) {
            // The IPI's handling alone is an estimate (no round trip separates it).
            let how = if e.key == "ipi_irq_ns" {
                "estimate"
            } else {
                "measured"
            };
            assert!(e.note.starts_with(how), "{}: {}", e.key, e.note);
        }
        // The part after the wakeup cannot exceed the whole interrupt.
        let mut raw = host_like_raw();
        raw.timer_wake_exit = ok(30_000.0);
        let (c, _) = derive(&raw, &host);
        let e = get(&c, "timer_wake_exit_ns");
        assert!(
            close(e.value, 17_600.0) && e.note.contains("clamped"),
            "{e:?}"
        );
    }

    #[test]
    fn what_is_not_measured_is_copied_from_host_and_says_why() {
        let host = host_profile();
        let mut raw = host_like_raw();
        let one = "only one CPU is available to this process".to_string();
        raw.rt_busy = Err(one.clone());
        raw.rt_idle = Err(one.clone());
        raw.write_wake_busy = Err(one);
        raw.exec = Err("no /bin/true".into());
        raw.llc_read = None;
        // A round trip shorter than its pipe work leaves the switch to host.
        raw.rt_local = ok(500.0);
        raw.timer_wake_exit = Err("tracefs is in use".into());
        let (c, k) = derive(&raw, &host);
        for (key, v) in [
            ("timer_wake_exit_ns", host.costs.timer_wake_exit_ns.unwrap()),
            ("ipi_send_ns", host.costs.ipi_send_ns),
            ("ipi_latency_ns", host.costs.ipi_latency_ns),
            ("idle_exit_ns", host.costs.idle_exit_ns),
            ("context_switch_ns", host.costs.context_switch_ns),
        ] {
            let e = get(&c, key);
            assert_eq!(e.value, v, "{key}");
            assert!(
                e.note.starts_with("copied from profiles/host.toml"),
                "{}",
                e.note
            );
        }
        assert!(get(&c, "ipi_send_ns").note.contains("only one CPU"));
        let e = get(&k, "exec_ns");
        assert!(e.value == host.kernel.exec_ns && e.note.contains("no /bin/true"));
        let e = get(&k, "shell_startup_ns");
        assert!(e.value == host.kernel.shell_startup_ns && e.note.contains("no /bin/true"));
        assert!(!c.iter().any(|e| e.key == "llc_read_mb_s"));
        // Costs that come out negative are clamped at 0 and say so.
        let mut raw = host_like_raw();
        // (2800 - 2720) / 2 = 40 ns more per hop, less the 100 ns handling: clamped.
        raw.rt_busy = ok(2800.0);
        raw.rt_idle = ok(2000.0);
        let (c, _) = derive(&raw, &host);
        let e = get(&c, "ipi_latency_ns");
        assert!(e.value == 0.0 && e.note.contains("clamped"), "{}", e.note);
        let e = get(&c, "idle_exit_ns");
        assert!(e.value == 0.0 && e.note.contains("clamped"), "{}", e.note);
    }

    #[test]
    fn a_rendered_profile_loads_and_every_value_has_a_comment() {
        let host = host_profile();
        let f = i7_sys();
        let read = |p: &str| f.get(p).cloned();
        let topo = read_topology(&read, &[0, 1, 2, 3], "0-3");
        let mut g = HashMap::new();
        let b = "/sys/devices/system/cpu/cpu0/cpufreq";
        g.insert(
            format!("{b}/scaling_available_frequencies"),
            "2667000 1200000".to_string(),
        );
        let read = |p: &str| g.get(p).cloned();
        let freq = read_cpufreq(&read).unwrap();
        for (with_freq, with_l2) in [(true, true), (false, false)] {
            let mut raw = host_like_raw();
            if !with_l2 {
                raw.llc_read = Some(Err("no time".into()));
            }
            let (costs, kernel) = derive(&raw, &host);
            let text = render(&ProfileParts {
                name: "my \"box\"",
                description: "test".into(),
                header: vec!["a header".into(), String::new(), "more".into()],
                topo: &topo,
                mhz: (2667.0, "test clock".into()),
                hz: (250, "test hz".into()),
                cpufreq: with_freq.then_some(&freq),
                costs,
                kernel,
                cow: ok(700.0),
                llc_read_missing: (!with_l2).then(|| "no time".to_string()),
            });
            let m = Machine::from_toml(&text, "rendered").unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(m.profile.name, "my \"box\"");
            assert_eq!(m.ncpus(), 4);
            assert_eq!(m.topology.core, vec![0, 0, 1, 1]);
            assert_eq!(m.profile.cache.l2_kb.is_some(), with_l2, "{text}");
            assert_eq!(m.profile.cpufreq.is_some(), with_freq);
            assert_eq!(m.profile.kernel.cow_fault_ns, None);
            assert!(text.contains("# cow_fault_ns = 700.0"));
            if !with_l2 {
                assert!(
                    text.contains(
                        "l2_kb left out: the LLC's refill rate was not measured (no time)"
                    ),
                    "{text}"
                );
            }
            // Every value line carries a comment.
            for l in text.lines() {
                if l.contains(" = ")
                    && !l.starts_with('#')
                    && !l.starts_with("name")
                    && !l.starts_with("description")
                {
                    assert!(l.contains(" # "), "no comment: {l}");
                }
            }
        }
    }
}

//! Writing the calibrated profile's TOML, every value with the comment that says how it was
//! measured.

use super::*;

/// Writes one section's entries with their comments, values aligned.
pub(super) fn render_entries(out: &mut String, entries: &[(String, String, String, Vec<String>)]) {
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

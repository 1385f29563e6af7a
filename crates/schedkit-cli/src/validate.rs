//! `schedkit validate`: replay a suite of recorded traces under the recording kernel's class
//! and set each figure beside the recorded one (the library's `validate` does the work).

use anyhow::{bail, Context, Result};
use clap::Args;
use schedkit::machine::Machine;
use schedkit::registry::PolicyKind;
use schedkit::validate::{self, Suite};
use std::path::PathBuf;

#[derive(Args)]
pub struct ValidateArgs {
    /// The suite: a folder with a suite.toml (or the file itself), as scripts/record-suite.sh
    /// writes it.
    #[arg(default_value = "traces/validation")]
    pub suite: PathBuf,
    /// Replay under this policy instead of the suite's class (the recording kernel's).
    #[arg(long)]
    pub policy: Option<String>,
    /// Replay on this machine instead of the suite's.
    #[arg(long)]
    pub machine: Option<String>,
    /// Only these workloads (comma-separated names from suite.toml).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Seed of the simulations.
    #[arg(long, default_value = "1", value_parser = crate::parse_seed)]
    pub seed: u64,
    /// Workloads replayed at once (default: every core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Exit with status 1 when a figure with a target misses it.
    #[arg(long)]
    pub check: bool,
    /// Also write every figure (and each side's full figures) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the validation as a self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Print the summary as a Markdown table (the shape of docs/validation.md) instead of
    /// the full table.
    #[arg(long)]
    pub markdown: bool,
    /// No progress line.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(serde::Serialize)]
struct Json<'a> {
    suite: &'a Suite,
    policy: String,
    machine: String,
    workloads: Vec<JsonWorkload<'a>>,
}

#[derive(serde::Serialize)]
struct JsonWorkload<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a validate::WorkloadResult>,
}

pub fn run(a: ValidateArgs) -> Result<()> {
    for (p, flag) in [(&a.json, "--json"), (&a.report, "--report")] {
        if let Some(p) = p {
            crate::check_creatable(p, flag)?;
        }
    }
    let suite = Suite::load(&a.suite).map_err(anyhow::Error::msg)?;
    let policy = match &a.policy {
        Some(p) => Some(
            PolicyKind::parse(p)
                .map_err(anyhow::Error::msg)
                .context("--policy")?,
        ),
        None => None,
    };
    let machine = match &a.machine {
        Some(m) => Machine::load(m).context("--machine")?,
        None => suite
            .machine()
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("the suite's machine '{}'", suite.machine))?,
    };
    let machine_name = machine.name().to_string();
    if let Some(hz) = suite.hz.filter(|&hz| hz != machine.hz()) {
        eprintln!(
            "note: the recording kernel ticked at HZ={hz}, machine {machine_name} at HZ={}: tick-driven figures (preemption at the tick, balancing intervals) will differ",
            machine.hz()
        );
    }
    let machine = Some(machine);
    let policy_name = match policy {
        Some(p) => p.label(),
        None => suite.class.clone(),
    };
    let opts = validate::Options {
        policy,
        machine,
        seed: a.seed,
        only: a.only.clone(),
    };
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 {
        bail!("--jobs: at least 1");
    }
    let total = if a.only.is_empty() {
        suite.workloads.len()
    } else {
        suite
            .workloads
            .iter()
            .filter(|w| a.only.contains(&w.name))
            .count()
    };
    let done = std::sync::atomic::AtomicUsize::new(0);
    let quiet = a.quiet;
    let on_done = |name: &str| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if !quiet {
            eprintln!("[{n}/{total}] {name} replayed under {policy_name}");
        }
    };
    let results = validate::run(&suite, &opts, jobs, &on_done).map_err(anyhow::Error::msg)?;
    if a.markdown {
        crate::out(&validate::markdown(&results));
    } else {
        crate::out(&validate::table(&suite, &machine_name, &results));
    }
    if let Some(p) = &a.json {
        let workloads = suite
            .workloads
            .iter()
            .filter(|w| a.only.is_empty() || a.only.contains(&w.name))
            .zip(&results)
            .map(|(w, r)| JsonWorkload {
                name: &w.name,
                error: r.as_ref().err().map(String::as_str),
                result: r.as_ref().ok(),
            })
            .collect();
        crate::write_json(
            Some(p),
            &Json {
                suite: &suite,
                policy: policy_name.clone(),
                machine: machine_name.clone(),
                workloads,
            },
        )?;
    }
    if let Some(p) = &a.report {
        let page = validate::html(&suite, &policy_name, &machine_name, &results);
        crate::write_out(p, page.as_bytes(), "--report")?;
        eprintln!(
            "report: {:.1} KiB written to {}",
            page.len() as f64 / 1024.0,
            p.display()
        );
    }
    let errors = results.iter().filter(|r| r.is_err()).count();
    if errors > 0 {
        bail!("{errors} workload(s) could not be validated");
    }
    if a.check {
        let misses: usize = results
            .iter()
            .flatten()
            .map(|w| {
                let (ok, all) = w.score();
                all - ok
            })
            .sum();
        if misses > 0 {
            eprintln!("{misses} figure(s) outside their targets");
            std::process::exit(1);
        }
    }
    Ok(())
}

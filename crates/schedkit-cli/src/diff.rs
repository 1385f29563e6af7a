//! `schedkit diff A B WORKLOAD|TRACE`: the first scheduling decision two policies make
//! differently on the same run (`schedkit::diff`), then both runs' figures.

use anyhow::{Context, Result};
use clap::Args;
use schedkit::class::RtBalance;
use schedkit::diff::{DiffConfig, DEFAULT_LIMIT};
use schedkit::machine::{Governor, Machine};
use schedkit::registry::PolicyKind;
use schedkit::trace;
use schedkit::workload::{LockMode, Workload};
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  schedkit diff o1 o1:era=2002 yield:instances=4\n  \
schedkit diff cfs eevdf hackbench:groups=2 --machine smp8-2002 --duration 1s\n  \
schedkit diff cfs cfs:era=2.6.32 traces/pipe-vm.txt --ignore-time\n\n\
A decision is each pick (schedule() on a CPU: the time, the CPU, the task that ran, the task \
chosen) and each placement of a woken or new task (the CPU chosen, whether it preempted), in the \
order the run makes them. The first that differs is shown on both sides, with the CPUs it \
involved and their runqueues just after it (each task's class key: O(1)'s priority and array, \
CFS's vruntime, EEVDF's vruntime and deadline, BFS's deadline) and the rule its class picks by; \
then both runs' figures side by side, as `schedkit compare` prints them."
)]
pub struct DiffArgs {
    /// The first policy, with its options (`o1`, `o1:era=2002`, `cfs:era=2.6.32`; see
    /// `schedkit list policies`).
    #[arg(value_name = "A")]
    a: String,
    /// The second policy, with its options.
    #[arg(value_name = "B")]
    b: String,
    /// The workload both run: a built-in spec (`yield:instances=4`), a .toml workload file,
    /// several joined with `+`, or a recorded trace file (ftrace, trace-cmd, perf; as
    /// `schedkit replay` reads them), replayed.
    #[arg(value_name = "WORKLOAD|TRACE")]
    workload: String,
    /// Machine: a shipped profile name or a path to a .toml profile.
    #[arg(long, default_value = "smp2-2002")]
    machine: String,
    /// Simulated time limit of each run (e.g. 10s, 500ms).
    #[arg(long, default_value = "10s", value_parser = crate::parse_dur, allow_hyphen_values = true)]
    duration: u64,
    /// Seed of the random choices, the same for both runs.
    #[arg(long, default_value = "1", value_parser = crate::parse_seed, allow_hyphen_values = true)]
    seed: u64,
    /// How a per-CPU policy balances RT tasks: `passive` or `pushpull`.
    #[arg(long, default_value = "passive", value_parser = RtBalance::parse)]
    rt_balance: RtBalance,
    /// How semaphores that follow the run pass on: `handoff` or `opportunistic`.
    #[arg(long, default_value = "handoff", value_parser = LockMode::parse)]
    lock_mode: LockMode,
    /// cpufreq governor on a machine with frequency scaling (default: the profile's).
    #[arg(long, value_parser = Governor::parse)]
    governor: Option<Governor>,
    /// Compare at most the first N decisions (the first run keeps them, 32 bytes each).
    #[arg(long, default_value_t = DEFAULT_LIMIT, value_name = "N", value_parser = parse_limit)]
    limit: u64,
    /// Compare what each decision chose, not when it was made (two classes whose paths cost
    /// differently then still compare decision by decision).
    #[arg(long)]
    ignore_time: bool,
    /// Also write the difference, both states and both runs' figures as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

fn parse_limit(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}': give a number of decisions, 1 or more")),
    }
}

/// A recorded trace (a file that is not a .toml workload) replayed as a workload, or a
/// workload spec.
fn workload(arg: &str, machine: &Machine) -> Result<Workload> {
    let path = Path::new(arg);
    let is_trace = path.is_file() && path.extension().is_none_or(|e| e != "toml");
    if !is_trace {
        return Workload::parse(arg).context("WORKLOAD");
    }
    let recorded = trace::input::load(path)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("TRACE {arg}"))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    let (w, _) = trace::replay::workload(
        &recorded,
        &name,
        &trace::replay::OpPrices::of_machine(machine),
    )
    .map_err(anyhow::Error::msg)
    .with_context(|| format!("TRACE {arg}: rebuilding its tasks as a workload"))?;
    Ok(w)
}

pub fn run(a: DiffArgs) -> Result<()> {
    if let Some(p) = &a.json {
        crate::check_creatable(p, "--json")?;
    }
    let pa = PolicyKind::parse(&a.a)
        .map_err(anyhow::Error::msg)
        .context("A (the first policy)")?;
    let pb = PolicyKind::parse(&a.b)
        .map_err(anyhow::Error::msg)
        .context("B (the second policy)")?;
    let machine = Machine::load(&a.machine).context("--machine")?;
    let w = workload(&a.workload, &machine)?;
    let cfg = DiffConfig {
        duration_ns: a.duration,
        seed: a.seed,
        rt_balance: a.rt_balance,
        lock_mode: a.lock_mode,
        governor: a.governor,
        limit: a.limit,
        ignore_time: a.ignore_time,
    };
    let d = schedkit::diff::diff(pa, pb, &machine, &w, cfg)?;
    crate::out(&format!(
        "{} against {} on {}, {}, {} s, seed {}\n",
        pa.label(),
        pb.label(),
        machine.name(),
        a.workload,
        a.duration as f64 / 1e9,
        a.seed
    ));
    crate::out(&d.render());
    crate::write_json(a.json.as_ref(), &d)
}

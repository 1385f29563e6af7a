//! `schedkit`: the command line over the schedkit library. Thin by design: parsing, progress
//! and output here; everything else in the library. A library so that a crate with its own
//! scheduler classes gets the whole command line with them: [`main_with`].

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use schedkit::class::RtBalance;
use schedkit::machine::Governor;
use schedkit::machine::{Machine, BUILTIN_PROFILES};
use schedkit::metrics::RunResult;
use schedkit::registry::{ExternalPolicy, PolicyKind};
use schedkit::sim::SimConfig;
use schedkit::trace::timeline::{self, Timeline};
use schedkit::trace::TraceRecorder;
use schedkit::workload::{builtin::BUILTINS, parse_duration, LockMode, Workload};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod calibrate;
mod diff;
mod rtbench;
mod sweep;
mod traceio;
mod validate;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "schedkit",
    version,
    about = "Historical Linux CPU schedulers on a deterministic simulated SMP machine",
    long_about = "Historical Linux CPU schedulers (the 2.4 goodness scheduler, Ingo Molnar's O(1), CFS of 2.6.23, 2.6.24 and 2.6.32, Con Kolivas' BFS 0.404, EEVDF of 6.6 and 6.18, the RT class with push/pull; `schedkit list policies`) \
run on a deterministic discrete-event model of an SMP machine, or on real threads (`schedkit bench runtime`). A run is a pure function of \
(policy, machine, workload, seed): the same inputs give the same figures, bit for bit \
(except the host wall time the simulation took).",
    after_help = "Examples:\n  schedkit sim --policy o1 --machine smp8-2002 --workload yield:instances=16 --duration 10s\n  \
schedkit compare --policies goodness,o1 --machine smp8-2002 --workload chat:rooms=10,messages=1000\n  \
schedkit list workloads\n  schedkit bench ops"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate one policy on one machine and print its figures.
    Sim(SimArgs),
    /// Simulate several policies (and machines, workloads) side by side.
    Compare(CompareArgs),
    /// Run two policies (or two eras or options of one) on the same workload or replayed
    /// trace and show the first scheduling decision they make differently: both decisions,
    /// the CPUs and runqueues of both runs there and the rule that chose, then both runs'
    /// figures side by side.
    Diff(diff::DiffArgs),
    /// Run a grid of simulations (policies x machines x workloads x parameters x seeds) on
    /// every core, one row per run to Parquet and CSV; resumes an interrupted sweep.
    Sweep(sweep::SweepArgs),
    /// Replay a trace recorded on a real machine (ftrace, trace-cmd, perf) under policies on a
    /// simulated machine, beside the trace's own figures.
    Replay(traceio::ReplayArgs),
    /// Check the simulator against the kernel that recorded a suite of traces: replay each
    /// under the recording kernel's class and print recorded against replayed figures
    /// (context switches, wakeups, migrations, busy CPU time, wakeup latency, CPU spread) with
    /// their errors and targets; where the suite has repeated recordings of each command, also
    /// the kernel's own range of each figure over them (`scripts/record-suite.sh --repeats N`
    /// records a suite on your machine).
    Validate(validate::ValidateArgs),
    /// Measure this machine (topology from /sys, clock and tick, system calls, pipes, context
    /// switches, wakeups across CPUs, fork/exec, memory) and write a machine profile whose every
    /// value says how it was measured; load it with `--machine FILE`.
    Calibrate(calibrate::CalibrateArgs),
    /// Turn result files (`--json` of sim, compare or replay) into one self-contained HTML
    /// page with plots: wakeup-latency CDFs, throughput bars, CPU-time breakdowns, per-CPU
    /// timelines and the runs' parameters.
    Report(ReportArgs),
    /// List the shipped policies, machines (grouped by era: `schedkit list machines`) or
    /// workloads.
    List {
        #[arg(value_enum)]
        what: ListWhat,
    },
    /// Measure real (wall-clock) speed: the policies' operations or the simulator.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ListWhat {
    Policies,
    Machines,
    Workloads,
}

#[derive(Args)]
struct RunOpts {
    /// Simulated time limit; a workload that ends sooner stops there (e.g. 10s, 500ms,
    /// 250µs, 1.5e3ms).
    #[arg(long, default_value = "10s", value_parser = parse_dur, allow_hyphen_values = true)]
    duration: u64,
    /// Seed of the random choices (sleep times, burst lengths): an unsigned 64-bit number.
    #[arg(long, default_value = "1", value_parser = parse_seed, allow_hyphen_values = true)]
    seed: u64,
    /// Also write the results as JSON to FILE (with a per-CPU timeline of a short window,
    /// for `schedkit report`).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write an HTML report of the runs to FILE (as `schedkit report` makes from
    /// `--json`).
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Check every invariant every N events (slow; 0 = only at the end of the run).
    #[arg(long, default_value = "0", value_name = "N", value_parser = parse_count, allow_hyphen_values = true)]
    audit_every: u64,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
    /// Also give the figures of each phase of the run, the phases beginning at these times
    /// (comma-separated, increasing, within the duration; e.g. `60s,120s` for 0–60 s, 60–120
    /// s and 120 s to the end): a workload's steps, when a group starts (`start=`) or is
    /// changed (`renice=`, `chpolicy=`) at a time.
    #[arg(long, value_delimiter = ',', value_parser = parse_dur, value_name = "TIMES")]
    phases: Vec<u64>,
    /// Starvation watchdog: report each task that waited runnable, not running, this long or
    /// longer (e.g. `--starve 1s`): when it became runnable, how long it waited, the CPUs it
    /// may use and what ran meanwhile on each (the 10 longest waits; printed after the figures,
    /// and in --json as `starved`). No watchdog without it.
    #[arg(long, value_parser = parse_dur, value_name = "DURATION", allow_hyphen_values = true)]
    starve: Option<u64>,
    /// With --starve: stop the run at the first task that has waited that long, with stop
    /// reason `starved` (e.g. `--starve 500ms --starve-stop`).
    #[arg(long, requires = "starve")]
    starve_stop: bool,
    #[command(flatten)]
    trace: traceio::TraceOpts,
}

impl RunOpts {
    /// The output files can be made and the phases make sense (before any run).
    fn check(&self) -> Result<()> {
        let mut last = 0;
        for &t in &self.phases {
            if t <= last {
                bail!(
                    "--phases: {} s does not come after {} s: give increasing times after 0",
                    t as f64 / 1e9,
                    last as f64 / 1e9
                );
            }
            if t >= self.duration {
                bail!(
                    "--phases: {} s is not within the run (--duration {} s)",
                    t as f64 / 1e9,
                    self.duration as f64 / 1e9
                );
            }
            last = t;
        }
        self.trace.check()?;
        match &self.report {
            Some(p) => check_creatable(p, "--report"),
            None => Ok(()),
        }
    }
}

#[derive(Args)]
struct SimArgs {
    /// Scheduling policy (see `schedkit list policies`).
    #[arg(long, default_value = "o1")]
    policy: String,
    /// Machine: a shipped profile name or a path to a .toml profile (see `schedkit list machines`).
    #[arg(long, default_value = "smp2-2002")]
    machine: String,
    /// Workload: a built-in spec such as `chat:rooms=10,messages=1000,nice=19`, a path to a
    /// .toml workload file, or several joined with `+` (`makej:jobs=8+interactive`).
    #[arg(long, default_value = "yield:instances=4")]
    workload: String,
    /// How a per-CPU policy balances RT tasks: `passive` (periodic balancer only, before
    /// 2.6.25) or `pushpull` (2.6.25 active push/pull). The 2.4 global queue ignores it.
    #[arg(long, default_value = "passive", value_parser = parse_rt_balance)]
    rt_balance: RtBalance,
    /// How semaphores that follow the run (the big kernel lock) pass on: `handoff` (2.6.26's
    /// generic semaphore) or `opportunistic` (the May 2008 fix).
    #[arg(long, default_value = "handoff", value_parser = parse_lock_mode)]
    lock_mode: LockMode,
    /// cpufreq governor on a machine with frequency scaling: `performance`, `powersave`,
    /// `ondemand` (2.6.38's) or `schedutil` (default: the profile's). Machines without
    /// scaling (the 2002 profiles) ignore it.
    #[arg(long, value_parser = parse_governor)]
    governor: Option<Governor>,
    #[command(flatten)]
    run: RunOpts,
}

#[derive(Args)]
struct CompareArgs {
    /// Policies to compare, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "goodness,o1")]
    policies: Vec<String>,
    /// Machines, comma-separated (each gets its own table).
    #[arg(long, value_delimiter = ',', default_value = "smp2-2002")]
    machine: Vec<String>,
    /// Workload spec or file; repeat the flag for several workloads (each gets its own table).
    #[arg(long, default_value = "yield:instances=4")]
    workload: Vec<String>,
    /// RT balancing modes to compare for per-CPU policies, comma-separated
    /// (`passive,pushpull`); each policy runs once per mode.
    #[arg(long, value_delimiter = ',', default_value = "passive", value_parser = parse_rt_balance)]
    rt_balance: Vec<RtBalance>,
    /// Semaphore modes to compare (`handoff,opportunistic`), for workloads with semaphores
    /// that follow the run (the big kernel lock); each run happens once per mode.
    #[arg(long, value_delimiter = ',', default_value = "handoff", value_parser = parse_lock_mode)]
    lock_mode: Vec<LockMode>,
    /// cpufreq governors to compare (`performance,ondemand`), on machines with frequency
    /// scaling; each run happens once per governor (default: the profile's).
    #[arg(long, value_delimiter = ',', value_parser = parse_governor)]
    governor: Vec<Governor>,
    #[command(flatten)]
    run: RunOpts,
}

#[derive(Args)]
struct ReportArgs {
    /// Result files written with --json by sim, compare or replay.
    #[arg(required = true, value_name = "RESULTS.json")]
    results: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    output: PathBuf,
    /// Also write each plot as its own SVG file into DIR (latency-cdf-1.svg, throughput-1.svg,
    /// cpu-time-1.svg, timeline-1.svg, ...), for papers and READMEs.
    #[arg(long, value_name = "DIR")]
    svg_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum BenchWhat {
    /// Per-operation cost of each policy at 10, 1 000 and 100 000 runnable tasks.
    Ops {
        /// Runnable-task counts to measure.
        #[arg(long, value_delimiter = ',', default_value = "10,1000,100000")]
        sizes: Vec<usize>,
        /// Time spent measuring each figure.
        #[arg(long, default_value = "200ms", value_parser = parse_dur)]
        budget: u64,
        /// Also write the rows as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// The runtime on real threads: each workload under each policy, and in the same run on
    /// OS threads, Tokio and (when `go` is on the PATH) goroutines; prints ratios.
    Runtime {
        /// Worker threads (policy CPUs), OS-thread pairs, Tokio workers, GOMAXPROCS.
        #[arg(long, default_value_t = 2)]
        cpus: usize,
        /// Time spent measuring each time-based figure.
        #[arg(long, default_value = "500ms", value_parser = parse_dur)]
        duration: u64,
        /// Workloads: yield, pingpong, chat, wakeup, spawn, lock; also rtmigrate, server (an
        /// HTTP/1.1 server on loopback: short requests' latency alone and beside CPU-heavy
        /// requests that saturate every worker) and soak (the schedkit server under connection
        /// churn for ten times --duration: resident memory early and at the end).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "yield,pingpong,chat,wakeup,spawn,lock"
        )]
        workloads: Vec<String>,
        /// Runners: schedkit, os-threads, tokio, go.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "schedkit,os-threads,tokio,go"
        )]
        runners: Vec<String>,
        /// The schedkit runner's policies (default: every policy), e.g. o1,cfs,eevdf.
        #[arg(long, value_delimiter = ',')]
        policies: Vec<String>,
        /// Also write the rows ({workload, runner, policy, value, unit}) as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Simulator events per second with 10, 1 000 and 100 000 tasks (4 busy, the rest asleep),
    /// and with 10 and 32 768 tasks all runnable under cfs and eevdf; or, with --cpus, by
    /// machine size (e.g. `schedkit bench sim --cpus 2,16,256`).
    Sim {
        /// Task counts of the mostly-asleep runs (under o1).
        #[arg(long, value_delimiter = ',', default_value = "10,1000,100000")]
        sizes: Vec<usize>,
        /// Simulated time per mostly-asleep run.
        #[arg(long, default_value = "2s", value_parser = parse_dur)]
        duration: u64,
        /// Task counts of the all-runnable runs (busy loops under cfs and eevdf).
        #[arg(long, value_delimiter = ',', default_value = "10,32768")]
        runnable_sizes: Vec<usize>,
        /// Simulated time per all-runnable run (busy loops make few events per second: one
        /// per tick and per switch).
        #[arg(long, default_value = "1000s", value_parser = parse_dur)]
        runnable_duration: u64,
        /// Instead of the runs above, time the simulator by machine size: on the first N CPUs
        /// of --machine for each N given, every CPU busy with N/2 pairs of processes passing a
        /// byte over pipes, under cfs and eevdf:era=6.18. Each N must be a multiple of the
        /// machine's sharing counts below it (on epyc-7763-2s: 2 = one core, 16 = one CCX,
        /// 128 = one socket, 256 = all). Example: `schedkit bench sim --cpus 2,16,256`.
        #[arg(long, value_delimiter = ',')]
        cpus: Vec<usize>,
        /// The machine --cpus cuts down (a shipped profile or a .toml path).
        #[arg(long, default_value = "epyc-7763-2s")]
        machine: String,
        /// Simulated time of the largest --cpus run (a machine of k times fewer CPUs runs k times
        /// longer, so that each times about as many events).
        #[arg(long, default_value = "200ms", value_parser = parse_dur)]
        cpus_duration: u64,
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
}

fn parse_governor(s: &str) -> Result<Governor, String> {
    Governor::parse(s)
}

fn parse_lock_mode(s: &str) -> Result<LockMode, String> {
    LockMode::parse(s)
}

fn parse_rt_balance(s: &str) -> Result<RtBalance, String> {
    RtBalance::parse(s)
}

pub(crate) fn parse_seed(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("'{s}': the seed is an unsigned number, 0 to {}", u64::MAX))
}

fn parse_count(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("'{s}': expected a whole number 0 or more"))
}

pub(crate) fn parse_dur(s: &str) -> Result<u64, String> {
    let ns = parse_duration(s)?;
    if ns == 0 {
        return Err("must be longer than 0".into());
    }
    Ok(ns)
}

/// Writes to stdout; a closed pipe (`schedkit ... | head`) ends the program quietly instead of
/// panicking.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}

/// The `schedkit` command with `classes`, scheduler classes defined outside schedkit, added to
/// the built-in policies: each is [registered](schedkit::registry::register) (a name taken
/// already is an error naming both), then the command line is read and run, and every
/// subcommand (`sim`, `compare`, `replay`, `sweep`, `validate`, `bench ops`, `list policies`
/// ...) knows them by name. The `schedkit` binary is `main_with(&[])`; a crate with its own
/// classes calls it from its own `main` (see `docs/own-class.md`). Errors are printed and give
/// exit status 2.
pub fn main_with(classes: &[&'static ExternalPolicy]) -> ExitCode {
    for c in classes {
        if let Err(e) = schedkit::registry::register(c) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Replay(a) => traceio::replay(a)?,
        Cmd::Diff(a) => diff::run(a)?,
        Cmd::Validate(a) => validate::run(a)?,
        Cmd::Calibrate(a) => calibrate::run(a)?,
        Cmd::Sweep(a) => sweep::run(a)?,
        Cmd::Report(a) => {
            let mut input = schedkit::report::html::Input::new();
            for p in &a.results {
                let text = schedkit::infile::read_to_string(
                    p,
                    schedkit::infile::MAX_RESULT_INPUT,
                    "result file",
                )
                .with_context(|| format!("cannot read {}", p.display()))?;
                input
                    .add(&p.display().to_string(), &text)
                    .map_err(anyhow::Error::msg)?;
            }
            write_report(&a.output, a.svg_dir.as_ref(), &mut input)?;
        }
        Cmd::Sim(a) => {
            let json = JsonOut::create(a.run.json.as_ref())?;
            a.run.check()?;
            let policy = PolicyKind::parse(&a.policy)
                .map_err(anyhow::Error::msg)
                .context("--policy")?;
            let machine = Machine::load(&a.machine).context("--machine")?;
            let workload = Workload::parse(&a.workload).context("--workload")?;
            let r = simulate(
                policy,
                Knobs {
                    rt_balance: a.rt_balance,
                    lock_mode: a.lock_mode,
                    governor: a.governor,
                },
                &machine,
                &workload,
                &a.run,
                None,
            )?;
            out(&schedkit::report::table(std::slice::from_ref(&r)));
            out(&schedkit::report::phase_tables(std::slice::from_ref(&r)));
            out(&schedkit::report::starved_report(std::slice::from_ref(&r)));
            json.write(&r)?;
            report_runs(
                a.run.report.as_ref(),
                a.run.json.as_ref(),
                std::slice::from_ref(&r),
            )?;
        }
        Cmd::Compare(a) => {
            let json = JsonOut::create(a.run.json.as_ref())?;
            a.run.check()?;
            let policies: Vec<PolicyKind> = a
                .policies
                .iter()
                .map(|p| PolicyKind::parse(p).map_err(anyhow::Error::msg))
                .collect::<Result<_>>()
                .context("--policies")?;
            if policies.is_empty() {
                bail!("--policies: name at least one policy");
            }
            // One policy named twice (or by two spellings) runs once: its two runs would be
            // the same and write the same trace file.
            let mut once: Vec<PolicyKind> = Vec::with_capacity(policies.len());
            for (p, text) in policies.into_iter().zip(&a.policies) {
                if once.contains(&p) {
                    eprintln!(
                        "note: --policies: '{}' names {} again; it runs once",
                        text.trim(),
                        p.label()
                    );
                } else {
                    once.push(p);
                }
            }
            let policies = once;
            let machines: Vec<Machine> = a
                .machine
                .iter()
                .map(|m| Machine::load(m))
                .collect::<Result<_, _>>()
                .context("--machine")?;
            let workloads: Vec<Workload> = a
                .workload
                .iter()
                .map(|w| Workload::parse(w))
                .collect::<Result<_, _>>()
                .context("--workload")?;
            let mut all = Vec::new();
            let several_mw = machines.len() * workloads.len() > 1;
            let multi = several_mw
                || policies.len() > 1
                || a.rt_balance.len() > 1
                || a.lock_mode.len() > 1
                || a.governor.len() > 1;
            for (mi, m) in machines.iter().enumerate() {
                for (wi, w) in workloads.iter().enumerate() {
                    let mut runs = Vec::new();
                    for &p in &policies {
                        // A class that queues its RT tasks itself (2.4's global queue) has no
                        // RT balancing to vary: run it once.
                        let modes: &[RtBalance] = if !p.has_rt_class() {
                            &a.rt_balance[..1]
                        } else {
                            &a.rt_balance
                        };
                        // Lock modes matter only to workloads with run-following semaphores.
                        let lock_modes: &[LockMode] = if w.follows_lock_mode() {
                            &a.lock_mode
                        } else {
                            &a.lock_mode[..1]
                        };
                        // Governors matter only on machines with frequency scaling.
                        let governors: Vec<Option<Governor>> =
                            if a.governor.is_empty() || m.profile.cpufreq.is_none() {
                                vec![None]
                            } else {
                                a.governor.iter().copied().map(Some).collect()
                            };
                        let mut knobs = Vec::new();
                        for &rt_balance in modes {
                            for &lock_mode in lock_modes {
                                for &governor in &governors {
                                    knobs.push(Knobs {
                                        rt_balance,
                                        lock_mode,
                                        governor,
                                    });
                                }
                            }
                        }
                        for k in knobs {
                            // Each run's trace file is named after what varies.
                            let mut label = p.label();
                            if modes.len() > 1 {
                                label += &format!("-{}", k.rt_balance.name());
                            }
                            if lock_modes.len() > 1 {
                                label += &format!("-{}", k.lock_mode.name());
                            }
                            if let (true, Some(g)) = (governors.len() > 1, k.governor) {
                                label += &format!("-{}", g.name());
                            }
                            if several_mw {
                                label += &format!("-m{mi}-w{wi}");
                            }
                            runs.push(simulate(
                                p,
                                k,
                                m,
                                w,
                                &a.run,
                                multi.then_some(label.as_str()),
                            )?);
                        }
                    }
                    out(&format!("{}\n", schedkit::report::table(&runs)));
                    let phases = schedkit::report::phase_tables(&runs);
                    if !phases.is_empty() {
                        out(&format!("{phases}\n"));
                    }
                    let starved = schedkit::report::starved_report(&runs);
                    if !starved.is_empty() {
                        out(&format!("{starved}\n"));
                    }
                    all.extend(runs);
                }
            }
            json.write(&all)?;
            report_runs(a.run.report.as_ref(), a.run.json.as_ref(), &all)?;
        }
        Cmd::List { what } => match what {
            ListWhat::Policies => {
                let all = PolicyKind::all();
                let w = all.iter().map(|k| k.name().len()).max().unwrap_or(0);
                for k in &all {
                    out(&format!("{:<w$} {}\n", k.name(), k.about()));
                }
            }
            ListWhat::Machines => {
                let w = BUILTIN_PROFILES
                    .iter()
                    .map(|(n, _)| n.len())
                    .max()
                    .unwrap_or(0);
                for (i, (era, names)) in schedkit::machine::builtin_by_era()?.iter().enumerate() {
                    out(&format!("{}{era}\n", if i > 0 { "\n" } else { "" }));
                    for n in names {
                        let m = Machine::load(n)?;
                        let t = &m.topology;
                        let nodes = if t.nnodes() > 1 {
                            format!(" in {} NUMA nodes", t.nnodes())
                        } else {
                            String::new()
                        };
                        out(&format!(
                            "  {n:<w$} {} CPUs{nodes}, HZ={}: {}\n",
                            m.ncpus(),
                            m.hz(),
                            m.profile.description
                        ));
                    }
                }
            }
            ListWhat::Workloads => {
                for b in BUILTINS {
                    let (n, d) = (b.name, b.about);
                    out(&format!(
                        "{n:<12} {n}:{},nice=0\n{:<12} {d}\n",
                        b.defaults(),
                        ""
                    ));
                }
                out("\nor a .toml workload file (see README, 'Workload files'); join several with '+'.\n");
            }
        },
        Cmd::Bench { what } => match what {
            BenchWhat::Ops {
                sizes,
                budget,
                json,
            } => {
                check_sizes(&sizes)?;
                let pb = spinner();
                let rows = schedkit::bench::ops(&sizes, Duration::from_nanos(budget), |m| {
                    pb.set_message(m.to_string())
                });
                pb.finish_and_clear();
                out(&schedkit::bench::ops_table(&rows));
                write_json(json.as_ref(), &rows)?;
            }
            BenchWhat::Runtime {
                cpus,
                duration,
                workloads,
                runners,
                policies,
                json,
            } => {
                let opts = rtbench::Opts {
                    cpus,
                    duration: Duration::from_nanos(duration),
                    workloads,
                    runners,
                    policies: rtbench::parse_policies(&policies)?,
                };
                rtbench::validate(&opts)?;
                let preemption = rtbench::preemption_summary(cpus);
                eprintln!("schedkit runtime preemption: {preemption}");
                let pb = spinner();
                let rows = rtbench::run(&opts, &|m| pb.set_message(m.to_string()))?;
                pb.finish_and_clear();
                out(&rtbench::table(&rows, cpus, &preemption));
                write_json(json.as_ref(), &rows)?;
            }
            BenchWhat::Sim {
                sizes,
                duration,
                runnable_sizes,
                runnable_duration,
                cpus,
                machine,
                cpus_duration,
                json,
            } => {
                let rows = if cpus.is_empty() {
                    check_sizes(&sizes)?;
                    check_sizes(&runnable_sizes)?;
                    let pb = spinner();
                    let mut rows =
                        schedkit::bench::sim(&sizes, duration, |m| pb.set_message(m.to_string()));
                    rows.extend(schedkit::bench::sim_runnable(
                        &runnable_sizes,
                        runnable_duration,
                        |m| pb.set_message(m.to_string()),
                    ));
                    pb.finish_and_clear();
                    rows
                } else {
                    let m =
                        Machine::load(&machine).map_err(|e| anyhow::anyhow!("--machine: {e}"))?;
                    if let Some(&n) = cpus.iter().find(|&&n| n == 0 || n > m.ncpus()) {
                        bail!(
                            "--cpus: {n} is not between 1 and {} (the CPUs of {})",
                            m.ncpus(),
                            m.name()
                        );
                    }
                    if cpus_duration < 4_000_000 {
                        bail!("--cpus-duration: give at least 4ms (the runs are timed at a quarter of it too)");
                    }
                    let pb = spinner();
                    let rows = schedkit::bench::sim_cpus(&m, &cpus, cpus_duration, |s| {
                        pb.set_message(s.to_string())
                    })
                    .map_err(|e| anyhow::anyhow!("--cpus: {e}"))?;
                    pb.finish_and_clear();
                    rows
                };
                out(&schedkit::bench::sim_table(&rows));
                write_json(json.as_ref(), &rows)?;
            }
        },
    }
    Ok(())
}

fn check_sizes(sizes: &[usize]) -> Result<()> {
    if sizes.is_empty() || sizes.iter().any(|&n| n == 0 || n > 1_000_000) {
        bail!("--sizes: give task counts between 1 and 1000000");
    }
    Ok(())
}

fn spinner() -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// The run-wide settings a run varies besides policy, machine and workload.
#[derive(Clone, Copy)]
struct Knobs {
    rt_balance: RtBalance,
    lock_mode: LockMode,
    governor: Option<Governor>,
}

fn simulate(
    policy: PolicyKind,
    knobs: Knobs,
    machine: &Machine,
    workload: &Workload,
    opts: &RunOpts,
    label: Option<&str>,
) -> Result<RunResult> {
    let Knobs {
        rt_balance,
        lock_mode,
        governor,
    } = knobs;
    let pb = progress_bar(
        opts.quiet,
        format!(
            "{} on {} / {}",
            policy.label(),
            machine.name(),
            workload.name
        ),
    );
    let mut on_progress = |f: f64| pb.set_position((f * 1000.0) as u64);
    // A timeline for the report comes from the --trace recording if there is one, else from
    // a recorder that keeps only the last whole window.
    let want_timeline = opts.json.is_some() || opts.report.is_some();
    let mut recorder = opts
        .trace
        .recorder()
        .or_else(|| want_timeline.then(|| TraceRecorder::rolling(timeline::DEFAULT_WIDTH_NS)));
    let cfg = SimConfig {
        trace: recorder.as_mut(),
        lock_mode,
        duration_ns: opts.duration,
        seed: opts.seed,
        audit_every: opts.audit_every,
        progress: Some(&mut on_progress),
        governor,
        phases: opts.phases.clone(),
        starve: opts
            .starve
            .map(|threshold_ns| schedkit::sim::watchdog::Starve {
                threshold_ns,
                stop: opts.starve_stop,
            }),
        ..Default::default()
    };
    let mut r = policy
        .simulate_with(rt_balance, machine, workload, cfg)
        .with_context(|| {
            format!(
                "{} on {} running {}",
                policy.label(),
                machine.name(),
                workload.name
            )
        })?;
    pb.finish_and_clear();
    if let Some(rec) = recorder {
        let trace = rec.finish();
        if opts.trace.trace.is_some() {
            opts.trace.write(&trace, label)?;
            if want_timeline {
                let (a, b) = Timeline::last_window(&trace, timeline::DEFAULT_WIDTH_NS);
                r.timeline = Some(Timeline::from_trace(
                    &trace.window(a, b),
                    timeline::MAX_SLICES,
                ));
            }
        } else {
            r.timeline = Some(Timeline::from_trace(&trace, timeline::MAX_SLICES));
        }
    }
    Ok(r)
}

/// The bar of one simulation (hidden with --quiet).
pub(crate) fn progress_bar(quiet: bool, msg: String) -> ProgressBar {
    let pb = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(1000)
    };
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {percent}% simulated, {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(msg);
    pb
}

/// A `--json` file, checked before a run so that an unwritable path is an error at once, not
/// after the whole simulation, and written whole at the end: an existing file is untouched
/// until then (a run that fails, or a typo in another flag, leaves it as it was).
struct JsonOut {
    path: Option<PathBuf>,
}

impl JsonOut {
    fn create(path: Option<&PathBuf>) -> Result<JsonOut> {
        if let Some(p) = path {
            check_creatable(p, "--json")?;
        }
        Ok(JsonOut {
            path: path.cloned(),
        })
    }

    fn write<T: serde::Serialize>(self, value: &T) -> Result<()> {
        write_json(self.path.as_ref(), value)
    }
}

/// Writes an output file whole or not at all (`schedkit::outfile`), naming the flag.
pub(crate) fn write_out(p: &Path, bytes: &[u8], flag: &str) -> Result<()> {
    schedkit::outfile::write(p, bytes)
        .with_context(|| format!("{flag}: cannot write {}", p.display()))
}

/// Checks before any run that `p` can be created, so that a bad path fails at once rather
/// than after the simulations (and leaves nothing behind, and an existing file as it was).
pub(crate) fn check_creatable(p: &Path, flag: &str) -> Result<()> {
    if p.is_dir() {
        bail!("{flag}: {} is a directory", p.display());
    }
    let existed = p.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .with_context(|| format!("{flag}: cannot create {}", p.display()))?;
    if !existed {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// `--report FILE`: the HTML page of these runs.
fn report_runs(path: Option<&PathBuf>, json: Option<&PathBuf>, runs: &[RunResult]) -> Result<()> {
    let Some(p) = path else {
        return Ok(());
    };
    let mut input = schedkit::report::html::Input::new();
    let name = json.map_or("this run (no --json)".to_string(), |j| {
        j.display().to_string()
    });
    input
        .add(&name, &serde_json::to_string(runs)?)
        .map_err(anyhow::Error::msg)?;
    write_report(p, None, &mut input)
}

pub(crate) fn write_report(
    p: &std::path::Path,
    svg_dir: Option<&PathBuf>,
    input: &mut schedkit::report::html::Input,
) -> Result<()> {
    let (page, plots) = input.render();
    write_out(p, page.as_bytes(), "--report")?;
    if let Some(dir) = svg_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--svg-dir: cannot create {}", dir.display()))?;
        for (name, svg) in &plots {
            let f = dir.join(format!("{name}.svg"));
            write_out(&f, svg.as_bytes(), "--svg-dir")?;
        }
        eprintln!("{} plots written to {}", plots.len(), dir.display());
    }
    eprintln!(
        "report: {} runs, {:.1} KiB written to {} (open it in a browser; it needs no network)",
        input.runs(),
        page.len() as f64 / 1024.0,
        p.display()
    );
    Ok(())
}

pub(crate) fn write_json<T: serde::Serialize>(path: Option<&PathBuf>, value: &T) -> Result<()> {
    if let Some(p) = path {
        let text = serde_json::to_string_pretty(value)?;
        write_out(p, (text + "\n").as_bytes(), "--json")?;
    }
    Ok(())
}

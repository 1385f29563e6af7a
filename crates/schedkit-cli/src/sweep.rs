//! `schedkit sweep`: a grid of runs on every core, one row per run to a journal as each
//! finishes, then the whole table to CSV and Parquet (`schedkit::sweep` has the grid and the
//! rows; this file has the files).

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use schedkit::sweep::{self, tables, Point};
use serde_json::{Map, Value};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The grid: a TOML file of axes (policies, machines, workloads with `{a,b}` choices,
    /// seeds, duration, rt_balance, lock_mode, governor) and what to record. See README
    /// "Sweeps".
    grid: PathBuf,
    /// Output table: `NAME.parquet` or `NAME.csv`; both are written, and `NAME.jsonl` holds one
    /// row per finished run as it finishes (a sweep run again with the same output resumes from
    /// it: no point is run twice).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Runs at once (default: one per core of this machine).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Where the runs go: `local` (this machine's cores) or `dask` (a Dask cluster through
    /// the Python package: `python -m schedkit.cluster`; see README "Python").
    #[arg(long, default_value = "local", value_parser = ["local", "dask"])]
    engine: String,
    /// The Dask scheduler's address (with `--engine dask`), e.g. tcp://10.0.0.5:8786.
    #[arg(long)]
    address: Option<String>,
    /// Points per Dask task (with `--engine dask`; default 8): several amortise the dispatch
    /// for short runs, one a task balances long ones.
    #[arg(long, value_name = "N")]
    batch_size: Option<usize>,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(a: SweepArgs) -> Result<()> {
    let out = tables::Outputs::of(&a.output).map_err(|e| anyhow::anyhow!("--output {e}"))?;
    // The tables can be written, checked before any run (the journal is opened below).
    crate::check_creatable(&out.csv, "--output")?;
    crate::check_creatable(&out.parquet, "--output")?;
    if a.batch_size == Some(0) {
        bail!("--batch-size must be at least 1");
    }
    if a.engine == "dask" {
        if a.jobs.is_some() {
            bail!(
                "--jobs is for --engine local: on Dask, the cluster's workers run the points \
                 (size the batches with --batch-size)"
            );
        }
        return run_on_dask(&a);
    }
    if a.address.is_some() {
        bail!("--address is for --engine dask");
    }
    if a.batch_size.is_some() {
        bail!("--batch-size is for --engine dask (locally, --jobs sets how many runs at once)");
    }
    let grid = sweep::load_grid(&a.grid)?;
    for n in &grid.notes {
        eprintln!("note: {}: {n}", a.grid.display());
    }
    let (mut journal, done, note) =
        sweep::Journal::recover(&out.journal).map_err(anyhow::Error::msg)?;
    if let Some(n) = note {
        eprintln!("note: {n}");
    }
    let (mut have, notes) = sweep::resumable(&grid.points, done);
    for n in notes {
        eprintln!("note: {}: {n}", out.journal.display());
    }
    let todo: Vec<Point> = grid
        .points
        .iter()
        .filter(|p| !have.contains_key(&p.key()))
        .cloned()
        .collect();
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    if !have.is_empty() {
        eprintln!(
            "resuming: {} of {} points already in {}",
            grid.points.len() - todo.len(),
            grid.points.len(),
            out.journal.display()
        );
    }
    let pb = if a.quiet {
        ProgressBar::hidden()
    } else {
        let pb = ProgressBar::new(todo.len() as u64);
        pb.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        pb.set_message(format!("sweep on {jobs} cores"));
        pb
    };
    let mut write_err = None;
    let mut failed = 0usize;
    sweep::run_points(&todo, grid.record.as_deref(), jobs, |_, row| {
        if !row["error"].is_null() {
            failed += 1;
        }
        let line = serde_json::to_string(&row).expect("a row serialises");
        if let Err(e) = journal.append(&line) {
            write_err.get_or_insert(e);
        }
        have.insert(row["key"].as_str().unwrap_or_default().to_string(), row);
        pb.inc(1);
    });
    pb.finish_and_clear();
    if let Some(e) = write_err {
        bail!(e);
    }
    let keys: std::collections::HashSet<String> = grid.points.iter().map(Point::key).collect();
    let stray = have.keys().filter(|k| !keys.contains(*k)).count();
    if stray > 0 {
        eprintln!(
            "note: {stray} rows of {} are not points of this grid (it changed since); they are left out of the table",
            out.journal.display()
        );
    }
    let mut rows: Vec<Map<String, Value>> = Vec::with_capacity(grid.points.len());
    for p in &grid.points {
        match have.get(&p.key()) {
            Some(r) => rows.push(r.clone()),
            None => bail!(
                "point {} has no row in {} (it did not run); run the sweep again to resume",
                p.key(),
                out.journal.display()
            ),
        }
    }
    for pre in grid.record.iter().flatten() {
        if !rows
            .iter()
            .any(|r| r.keys().any(|k| sweep::records(k, pre)))
        {
            eprintln!("note: record entry '{pre}' matches no column of any run");
        }
    }
    tables::write_tables(&rows, &out).map_err(anyhow::Error::msg)?;
    eprintln!(
        "{} runs ({} this time) -> {} and {}",
        rows.len(),
        todo.len(),
        out.parquet.display(),
        out.csv.display()
    );
    if failed > 0 {
        eprintln!("note: {failed} runs failed; their 'error' column says why");
    }
    Ok(())
}

/// `--engine dask`: the Python package drives the cluster (Dask is a Python engine).
fn run_on_dask(a: &SweepArgs) -> Result<()> {
    let Some(addr) = &a.address else {
        bail!("--engine dask needs --address (the Dask scheduler, e.g. tcp://127.0.0.1:8786)");
    };
    let python = std::env::var("SCHEDKIT_PYTHON").unwrap_or_else(|_| "python3".into());
    let status = std::process::Command::new(&python)
        .args(["-m", "schedkit.cluster"])
        .arg(&a.grid)
        .arg("-o")
        .arg(&a.output)
        .args(["--address", addr])
        .args(["--batch-size", &a.batch_size.unwrap_or(8).to_string()])
        .args(a.quiet.then_some("--quiet"))
        .status()
        .with_context(|| format!("cannot start {python} (set SCHEDKIT_PYTHON to the Python with the schedkit package)"))?;
    if !status.success() {
        bail!("the Dask sweep failed ({status}); is the schedkit Python package installed (README \"Python\")?");
    }
    Ok(())
}

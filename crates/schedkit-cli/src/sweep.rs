//! `schedkit sweep`: a grid of runs on every core, one row per run to a journal as each
//! finishes, then the whole table to CSV and Parquet (`schedkit::sweep` has the grid and the
//! rows; this file has the files).

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use schedkit::sweep::{self, Point};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
}

/// The three files of a sweep written to `output`.
pub struct Outputs {
    pub csv: PathBuf,
    pub parquet: PathBuf,
    pub journal: PathBuf,
}

pub fn outputs(output: &Path) -> Result<Outputs> {
    match output.extension().and_then(|e| e.to_str()) {
        Some("parquet") | Some("csv") => Ok(Outputs {
            csv: output.with_extension("csv"),
            parquet: output.with_extension("parquet"),
            journal: sweep::journal_path(output),
        }),
        _ => bail!(
            "--output {}: name a .parquet or .csv file (both are written)",
            output.display()
        ),
    }
}

pub fn run(a: SweepArgs) -> Result<()> {
    let out = outputs(&a.output)?;
    if a.engine == "dask" {
        return run_on_dask(&a);
    }
    if a.address.is_some() {
        bail!("--address is for --engine dask");
    }
    let grid = sweep::load_grid(&a.grid)?;
    let (done, note) = sweep::read_journal(&out.journal).map_err(anyhow::Error::msg)?;
    if let Some(n) = note {
        eprintln!("note: {n}");
        // Drop the cut line before appending after it.
        let text = std::fs::read(&out.journal)?;
        let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&out.journal)
            .and_then(|f| f.set_len(keep as u64))
            .with_context(|| format!("cannot repair {}", out.journal.display()))?;
    }
    let mut have: HashMap<String, Map<String, Value>> = HashMap::new();
    for r in done {
        let k = r["key"].as_str().unwrap_or_default().to_string();
        have.entry(k).or_insert(r);
    }
    let todo: Vec<(usize, Point)> = grid
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| !have.contains_key(&p.key()))
        .map(|(i, p)| (i, p.clone()))
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
    let mut journal = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out.journal)
        .with_context(|| format!("cannot write {}", out.journal.display()))?;
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
    let points: Vec<Point> = todo.iter().map(|(_, p)| p.clone()).collect();
    let mut write_err = None;
    let mut failed = 0usize;
    sweep::run_points(&points, grid.record.as_deref(), jobs, |_, row| {
        if !row["error"].is_null() {
            failed += 1;
        }
        let line = serde_json::to_string(&row).expect("a row serialises");
        // One line per run, flushed at once: a killed sweep loses only the runs in flight.
        if let Err(e) = writeln!(journal, "{line}").and_then(|_| journal.flush()) {
            write_err.get_or_insert(e);
        }
        have.insert(row["key"].as_str().unwrap_or_default().to_string(), row);
        pb.inc(1);
    });
    pb.finish_and_clear();
    if let Some(e) = write_err {
        return Err(e).with_context(|| format!("cannot write {}", out.journal.display()));
    }
    let keys: std::collections::HashSet<String> = grid.points.iter().map(Point::key).collect();
    let stray = have.keys().filter(|k| !keys.contains(*k)).count();
    if stray > 0 {
        eprintln!(
            "note: {stray} rows of {} are not points of this grid (it changed since); they are left out of the table",
            out.journal.display()
        );
    }
    let rows: Vec<Map<String, Value>> = grid
        .points
        .iter()
        .map(|p| have.remove(&p.key()).expect("every point ran"))
        .collect();
    write_tables(&rows, &out)?;
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
        .status()
        .with_context(|| format!("cannot start {python} (set SCHEDKIT_PYTHON to the Python with the schedkit package)"))?;
    if !status.success() {
        bail!("the Dask sweep failed ({status}); is the schedkit Python package installed (README \"Python\")?");
    }
    Ok(())
}

/// The columns of `rows`: the inputs first (in the order a row has them), then every other
/// column in name order.
fn columns(rows: &[Map<String, Value>]) -> Vec<String> {
    let first = [
        "key",
        "policy",
        "machine",
        "workload",
        "seed",
        "duration_s",
        "rt_balance",
        "lock_mode",
        "governor",
        "error",
    ];
    let mut rest: BTreeMap<&str, ()> = BTreeMap::new();
    for r in rows {
        for k in r.keys() {
            if !first.contains(&k.as_str()) {
                rest.insert(k, ());
            }
        }
    }
    first
        .iter()
        .map(|s| s.to_string())
        .chain(rest.keys().map(|s| s.to_string()))
        .collect()
}

pub fn write_tables(rows: &[Map<String, Value>], out: &Outputs) -> Result<()> {
    let cols = columns(rows);
    write_csv(rows, &cols, &out.csv)
        .with_context(|| format!("cannot write {}", out.csv.display()))?;
    write_parquet(rows, &cols, &out.parquet)
        .with_context(|| format!("cannot write {}", out.parquet.display()))
}

fn csv_field(v: Option<&Value>) -> String {
    let s = match v {
        None | Some(Value::Null) => return String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(x) => x.to_string(),
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn write_csv(rows: &[Map<String, Value>], cols: &[String], path: &Path) -> Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let header: Vec<String> = cols
        .iter()
        .map(|c| csv_field(Some(&Value::from(c.as_str()))))
        .collect();
    writeln!(f, "{}", header.join(","))?;
    for r in rows {
        let line: Vec<String> = cols.iter().map(|c| csv_field(r.get(c))).collect();
        writeln!(f, "{}", line.join(","))?;
    }
    f.flush()?;
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Bool,
    Int,
    Double,
    Text,
}

fn kind_of(rows: &[Map<String, Value>], c: &str) -> Kind {
    let mut k: Option<Kind> = None;
    for v in rows.iter().filter_map(|r| r.get(c)) {
        let this = match v {
            Value::Null => continue,
            Value::Bool(_) => Kind::Bool,
            Value::Number(n) if n.is_i64() => Kind::Int,
            Value::Number(_) => Kind::Double,
            _ => Kind::Text,
        };
        k = Some(match (k, this) {
            (None, t) => t,
            (Some(a), b) if a == b => a,
            (Some(Kind::Int), Kind::Double) | (Some(Kind::Double), Kind::Int) => Kind::Double,
            _ => Kind::Text,
        });
    }
    k.unwrap_or(Kind::Text)
}

fn write_parquet(rows: &[Map<String, Value>], cols: &[String], path: &Path) -> Result<()> {
    let kinds: Vec<Kind> = cols.iter().map(|c| kind_of(rows, c)).collect();
    let fields = cols
        .iter()
        .zip(&kinds)
        .map(|(c, k)| {
            let b = match k {
                Kind::Bool => Type::primitive_type_builder(c, PhysicalType::BOOLEAN),
                Kind::Int => Type::primitive_type_builder(c, PhysicalType::INT64),
                Kind::Double => Type::primitive_type_builder(c, PhysicalType::DOUBLE),
                Kind::Text => Type::primitive_type_builder(c, PhysicalType::BYTE_ARRAY)
                    .with_logical_type(Some(LogicalType::String)),
            };
            Ok(Arc::new(b.with_repetition(Repetition::OPTIONAL).build()?))
        })
        .collect::<Result<Vec<_>>>()?;
    let schema = Arc::new(
        Type::group_type_builder("schedkit_sweep")
            .with_fields(fields)
            .build()?,
    );
    let file = std::fs::File::create(path)?;
    let mut w =
        SerializedFileWriter::new(file, schema, Arc::new(WriterProperties::builder().build()))?;
    let mut rg = w.next_row_group()?;
    let mut i = 0;
    while let Some(mut col) = rg.next_column()? {
        let (c, k) = (&cols[i], kinds[i]);
        let vals: Vec<Option<&Value>> = rows
            .iter()
            .map(|r| r.get(c).filter(|v| !v.is_null()))
            .collect();
        let def: Vec<i16> = vals.iter().map(|v| i16::from(v.is_some())).collect();
        match k {
            Kind::Bool => {
                let d: Vec<bool> = vals
                    .iter()
                    .flatten()
                    .map(|v| v.as_bool().unwrap_or(false))
                    .collect();
                col.typed::<BoolType>().write_batch(&d, Some(&def), None)?;
            }
            Kind::Int => {
                let d: Vec<i64> = vals
                    .iter()
                    .flatten()
                    .map(|v| v.as_i64().unwrap_or(0))
                    .collect();
                col.typed::<Int64Type>().write_batch(&d, Some(&def), None)?;
            }
            Kind::Double => {
                let d: Vec<f64> = vals
                    .iter()
                    .flatten()
                    .map(|v| v.as_f64().unwrap_or(f64::NAN))
                    .collect();
                col.typed::<DoubleType>()
                    .write_batch(&d, Some(&def), None)?;
            }
            Kind::Text => {
                let d: Vec<ByteArray> = vals
                    .iter()
                    .flatten()
                    .map(|v| match v {
                        Value::String(s) => ByteArray::from(s.as_str()),
                        x => ByteArray::from(x.to_string().as_str()),
                    })
                    .collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&d, Some(&def), None)?;
            }
        }
        col.close()?;
        i += 1;
    }
    rg.close()?;
    w.close()?;
    Ok(())
}

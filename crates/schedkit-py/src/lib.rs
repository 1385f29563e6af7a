//! `schedkit._native`: the simulator and sweeps for Python. The Python package
//! (`python/schedkit/`) wraps these functions; values cross as JSON text so that a row is
//! the very bytes `schedkit sweep` writes. `simulate_class_json` runs a class written in
//! Python (`policy.rs`, the adapter); `rr.rs` is its Rust twin, registered as `rr-rust`.

use pyo3::exceptions::{PyIOError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use schedkit::machine::Machine;
use schedkit::sweep::{self, tables, Journal, Point, Row};
use schedkit::workload::{file, Workload};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, OnceLock};

mod policy;
mod rr;

use policy::PyPolicy;

fn value_err(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn parse_json(text: &str, what: &str) -> PyResult<Value> {
    serde_json::from_str(text).map_err(|e| value_err(format!("{what}: {e}")))
}

/// A JSON object (a Python dict, as JSON text) as TOML text.
#[pyfunction]
fn json_to_toml(text: &str) -> PyResult<String> {
    let v = parse_json(text, "dict")?;
    toml::to_string(&v).map_err(|e| value_err(format!("cannot be written as TOML: {e}")))
}

/// A run's point, machine and workload: the named ones, or `machine_toml` and
/// `workload_toml` (profile and workload-file text) in their place when given.
fn inputs(
    point_json: &str,
    machine_toml: Option<&str>,
    workload_toml: Option<&str>,
) -> PyResult<(Point, Machine, Workload)> {
    let p = Point::from_json(&parse_json(point_json, "point")?).map_err(value_err)?;
    let machine = match machine_toml {
        Some(t) => Machine::from_toml(t, "machine dict").map_err(value_err)?,
        None => Machine::load(&p.machine).map_err(value_err)?,
    };
    let workload = match workload_toml {
        Some(t) => file::parse_str(t, "workload dict", "workload").map_err(value_err)?,
        None => Workload::parse(&p.workload).map_err(value_err)?,
    };
    Ok((p, machine, workload))
}

/// One run, as `schedkit sim` runs it; returns the result as JSON text. `machine_toml` and
/// `workload_toml` (profile and workload-file text) replace the names when given.
#[pyfunction]
#[pyo3(signature = (point_json, machine_toml=None, workload_toml=None))]
fn simulate_json(
    py: Python<'_>,
    point_json: &str,
    machine_toml: Option<&str>,
    workload_toml: Option<&str>,
) -> PyResult<String> {
    let (p, machine, workload) = inputs(point_json, machine_toml, workload_toml)?;
    let r = py
        .allow_threads(|| sweep::run_on(&p, &machine, &workload))
        .map_err(value_err)?;
    serde_json::to_string(&r).map_err(value_err)
}

/// One run under a class written in Python: `obj`, an instance of a `schedkit.Policy`
/// subclass, named `name` in the result, in place of the point's policy (see `policy.rs`).
/// The run keeps the GIL (every hook needs it). A hook's failure (an exception, a refused
/// value) is raised as a RuntimeError naming the class, the hook and what went wrong.
#[pyfunction]
#[pyo3(signature = (obj, name, point_json, machine_toml=None, workload_toml=None))]
fn simulate_class_json(
    py: Python<'_>,
    obj: Py<PyAny>,
    name: &str,
    point_json: &str,
    machine_toml: Option<&str>,
    workload_toml: Option<&str>,
) -> PyResult<String> {
    let (p, machine, workload) = inputs(point_json, machine_toml, workload_toml)?;
    let failure = Arc::new(OnceLock::new());
    let class = PyPolicy::new(py, obj, name, machine.ncpus(), failure.clone())?;
    class.setup(py);
    let r = match failure.get() {
        Some(_) => None,
        None => Some(sweep::run_class_on(&p, &machine, &workload, class)),
    };
    if let Some(f) = failure.get() {
        return Err(PyRuntimeError::new_err(f.clone()));
    }
    let r = r.expect("ran").map_err(value_err)?;
    serde_json::to_string(&r).map_err(value_err)
}

/// The points of a grid (TOML text; machine paths resolved against `base_dir`), as JSON
/// objects, the grid's `record` list, and its notes (values given twice on an axis, kept once).
#[pyfunction]
#[pyo3(signature = (grid_toml, name, base_dir=None))]
fn grid_points(
    grid_toml: &str,
    name: &str,
    base_dir: Option<&str>,
) -> PyResult<(Vec<String>, Option<Vec<String>>, Vec<String>)> {
    let g = sweep::parse_grid(grid_toml, name, base_dir.map(Path::new)).map_err(value_err)?;
    let pts = g.points.iter().map(|p| p.to_json().to_string()).collect();
    Ok((pts, g.record, g.notes))
}

/// Runs points (JSON object texts) on `jobs` threads; returns their rows as JSON text, in the
/// order given. With `journal`, each row is also appended to that journal as soon as its point
/// finishes, as `schedkit sweep` does (call `recover_journal` on it first).
#[pyfunction]
#[pyo3(signature = (points_json, record=None, jobs=1, journal=None))]
fn run_rows(
    py: Python<'_>,
    points_json: Vec<String>,
    record: Option<Vec<String>>,
    jobs: usize,
    journal: Option<&str>,
) -> PyResult<Vec<String>> {
    let points = points_json
        .iter()
        .map(|t| Point::from_json(&parse_json(t, "point")?).map_err(value_err))
        .collect::<PyResult<Vec<Point>>>()?;
    let mut journal = match journal {
        Some(j) => Some(Journal::append_to(Path::new(j)).map_err(PyIOError::new_err)?),
        None => None,
    };
    let (rows, err) = py.allow_threads(|| {
        let mut rows: Vec<Option<String>> = vec![None; points.len()];
        let mut err = None;
        sweep::run_points(&points, record.as_deref(), jobs.max(1), |i, row| {
            let line = serde_json::to_string(&row).expect("a row serialises");
            if let Some(Err(e)) = journal.as_mut().map(|j| j.append(&line)) {
                err.get_or_insert(e);
            }
            rows[i] = Some(line);
        });
        (rows, err)
    });
    if let Some(e) = err {
        return Err(PyIOError::new_err(e));
    }
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| r.ok_or_else(|| PyRuntimeError::new_err(format!("point {i} did not run"))))
        .collect()
}

/// Reads a sweep's journal: its rows (JSON text) and a note when its last line was cut short
/// (that line is dropped from the file, ready to append to).
#[pyfunction]
fn recover_journal(path: &str) -> PyResult<(Vec<String>, Option<String>)> {
    let (_, rows, note) = Journal::recover(Path::new(path)).map_err(PyIOError::new_err)?;
    Ok((
        rows.into_iter()
            .map(|r| Value::Object(r).to_string())
            .collect(),
        note,
    ))
}

/// The journal rows (JSON text) that stand for these points (JSON text): a row whose inputs
/// do not match the point its key names is left out, its point to run again, with a note.
#[pyfunction]
fn resumable_rows(
    points_json: Vec<String>,
    rows_json: Vec<String>,
) -> PyResult<(Vec<String>, Vec<String>)> {
    let points = points_json
        .iter()
        .map(|t| Point::from_json(&parse_json(t, "point")?).map_err(value_err))
        .collect::<PyResult<Vec<Point>>>()?;
    let rows = rows_json
        .iter()
        .map(|t| match parse_json(t, "row")? {
            Value::Object(m) => Ok(m),
            _ => Err(value_err("row: not a JSON object")),
        })
        .collect::<PyResult<Vec<Row>>>()?;
    let (have, notes) = sweep::resumable(&points, rows);
    Ok((
        have.into_values()
            .map(|r| Value::Object(r).to_string())
            .collect(),
        notes,
    ))
}

/// Writes rows (JSON text, in table order) to `NAME.parquet` and `NAME.csv`, as
/// `schedkit sweep` does.
#[pyfunction]
fn write_tables(rows_json: Vec<String>, output: &str) -> PyResult<()> {
    let out = tables::Outputs::of(Path::new(output)).map_err(value_err)?;
    let rows = rows_json
        .iter()
        .map(|t| match parse_json(t, "row")? {
            Value::Object(m) => Ok(m),
            _ => Err(value_err("row: not a JSON object")),
        })
        .collect::<PyResult<Vec<Row>>>()?;
    tables::write_tables(&rows, &out).map_err(PyIOError::new_err)
}

/// The journal path of a sweep written to `output`.
#[pyfunction]
fn journal_path(output: &str) -> String {
    sweep::journal_path(Path::new(output)).display().to_string()
}

/// A duration as the CLI and workload files read it (`10ms`, `2m`, `1.5e3us`; a bare number is
/// seconds), in nanoseconds: Python uses this one parser rather than a copy of it.
#[pyfunction]
fn parse_duration(text: &str) -> PyResult<u64> {
    schedkit::workload::parse_duration(text).map_err(value_err)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_json, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_class_json, m)?)?;
    m.add_function(wrap_pyfunction!(grid_points, m)?)?;
    m.add_function(wrap_pyfunction!(resumable_rows, m)?)?;
    m.add_function(wrap_pyfunction!(run_rows, m)?)?;
    m.add_function(wrap_pyfunction!(recover_journal, m)?)?;
    m.add_function(wrap_pyfunction!(write_tables, m)?)?;
    m.add_function(wrap_pyfunction!(journal_path, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The Rust twin of examples/python_rr.py, by name (`policy="rr-rust"`): the reference of
    // the Python class's cost and of its tests. A module is initialised once a process.
    schedkit::registry::register(&rr::RR_RUST).map_err(PyRuntimeError::new_err)?;
    Ok(())
}

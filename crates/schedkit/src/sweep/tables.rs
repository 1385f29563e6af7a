//! The table files of a sweep: CSV (written by hand, RFC 4180 quoting) and Parquet (the
//! `parquet` crate's column writer: one row group, every column optional; integers as INT64,
//! other numbers as DOUBLE, booleans, the rest as UTF-8 strings). The same code writes the
//! tables of `schedkit sweep`, of the Python package's `sweep` and of a cluster sweep, so the
//! files are the same whichever ran the points.

use super::Row;
use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The three files of a sweep written to `NAME.parquet` or `NAME.csv`.
pub struct Outputs {
    pub csv: PathBuf,
    pub parquet: PathBuf,
    pub journal: PathBuf,
}

impl Outputs {
    pub fn of(output: &Path) -> Result<Outputs, String> {
        match output.extension().and_then(|e| e.to_str()) {
            Some("parquet") | Some("csv") => Ok(Outputs {
                csv: output.with_extension("csv"),
                parquet: output.with_extension("parquet"),
                journal: super::journal_path(output),
            }),
            _ => Err(format!(
                "{}: name a .parquet or .csv file (both are written)",
                output.display()
            )),
        }
    }
}

/// The columns of `rows`: the inputs first (in the order a row has them), then every other
/// column in name order.
fn columns(rows: &[Row]) -> Vec<String> {
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

/// Writes `rows` (in the order given) to the CSV and Parquet files of `out`.
pub fn write_tables(rows: &[Row], out: &Outputs) -> Result<(), String> {
    let cols = columns(rows);
    write_csv(rows, &cols, &out.csv)
        .map_err(|e| format!("cannot write {}: {e}", out.csv.display()))?;
    write_parquet(rows, &cols, &out.parquet)
        .map_err(|e| format!("cannot write {}: {e}", out.parquet.display()))
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

fn write_csv(rows: &[Row], cols: &[String], path: &Path) -> std::io::Result<()> {
    crate::outfile::write_with(path, |file| write_csv_to(rows, cols, file))
}

fn write_csv_to(rows: &[Row], cols: &[String], file: &mut std::fs::File) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(file);
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

fn kind_of(rows: &[Row], c: &str) -> Kind {
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

fn write_parquet(
    rows: &[Row],
    cols: &[String],
    path: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
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
        .collect::<Result<Vec<_>, parquet::errors::ParquetError>>()?;
    let schema = Arc::new(
        Type::group_type_builder("schedkit_sweep")
            .with_fields(fields)
            .build()?,
    );
    crate::outfile::write_with(path, |file| {
        write_parquet_to(rows, cols, &kinds, schema, file)
            .map_err(|e| std::io::Error::other(e.to_string()))
    })?;
    Ok(())
}

fn write_parquet_to(
    rows: &[Row],
    cols: &[String],
    kinds: &[Kind],
    schema: Arc<Type>,
    file: &mut std::fs::File,
) -> Result<(), parquet::errors::ParquetError> {
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

//! A sweep's journal: one JSON row per finished point, appended and flushed as each finishes;
//! read back to resume (a line cut short by a kill dropped, a whole last row that lost its
//! newline ended), and the rows that still match their key's point kept.

use super::{Point, Row};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Where a sweep written to `out` keeps its journal (one JSON row per finished point, appended
/// as each finishes: what a resumed sweep reads).
pub fn journal_path(out: &Path) -> PathBuf {
    out.with_extension("jsonl")
}

/// A sweep's journal, open for appending one row per finished point.
pub struct Journal {
    file: std::fs::File,
    path: PathBuf,
}

impl Journal {
    /// Opens the journal at `path` (made if absent) and reads the rows it holds. A last line
    /// cut short (the sweep was killed while writing it) is dropped from the file, so that the
    /// next row starts on a line of its own, and reported in the note; any other bad line is an
    /// error naming it.
    pub fn recover(path: &Path) -> Result<(Journal, Vec<Row>, Option<String>), String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut rows = Vec::new();
        let mut note = None;
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Row>(line) {
                Ok(r) if r.get("key").is_some_and(Value::is_string) => rows.push(r),
                Ok(_) => {
                    return Err(format!(
                        "{}: line {}: a row without its 'key'",
                        path.display(),
                        i + 1
                    ))
                }
                Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => {
                    note = Some(format!(
                        "{}: line {} was cut short (the sweep stopped while writing it); that point runs again",
                        path.display(),
                        i + 1
                    ));
                }
                Err(e) => return Err(format!("{}: line {}: {e}", path.display(), i + 1)),
            }
        }
        let mut j = Journal::append_to(path)?;
        if note.is_some() {
            let whole = text.rfind('\n').map_or(0, |i| i + 1);
            j.file
                .set_len(whole as u64)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        } else if !text.is_empty() && !text.ends_with('\n') {
            // A whole last row whose newline was not written (by a version that wrote it
            // apart): end its line, so that the next row starts on its own.
            use std::io::Write;
            j.file
                .write_all(b"\n")
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok((j, rows, note))
    }

    /// Opens the journal at `path` for appending without reading it (one already recovered).
    pub fn append_to(path: &Path) -> Result<Journal, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(Journal {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends one row (a JSON object's text) with its newline in one `write()`, and flushes
    /// it: a killed sweep loses only the runs in flight, and never leaves a whole row without
    /// its newline for the next row to run into.
    pub fn append(&mut self, row_json: &str) -> Result<(), String> {
        use std::io::Write;
        let mut line = String::with_capacity(row_json.len() + 1);
        line.push_str(row_json);
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.flush())
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// The journal's rows that stand for points of this grid: a row whose inputs (policy,
/// machine, workload, seed, duration, knobs) are not those of the point its key names was
/// edited or written by another version, and its point runs again. Returns the rows by key
/// (the first of each key), and a note for each row left out.
pub fn resumable(
    points: &[Point],
    rows: Vec<Row>,
) -> (std::collections::HashMap<String, Row>, Vec<String>) {
    let by_key: std::collections::HashMap<String, &Point> =
        points.iter().map(|p| (p.key(), p)).collect();
    let mut have = std::collections::HashMap::new();
    let mut notes = Vec::new();
    for r in rows {
        let Some(k) = r.get("key").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        if have.contains_key(&k) {
            continue;
        }
        if let Some(p) = by_key.get(&k) {
            let differ: Vec<String> = p
                .columns()
                .into_iter()
                .filter(|(c, v)| c != "key" && r.get(c) != Some(v))
                .map(|(c, v)| {
                    format!(
                        "{c} {} where the key says {v}",
                        r.get(&c).map_or("missing".to_string(), Value::to_string)
                    )
                })
                .collect();
            if !differ.is_empty() {
                notes.push(format!(
                    "the row of {k} does not match its key ({}): that point runs again",
                    differ.join(", ")
                ));
                continue;
            }
        }
        have.insert(k, r);
    }
    (have, notes)
}

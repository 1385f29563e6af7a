//! Reading scheduler traces recorded on real machines.
//!
//! Three text forms, detected line by line (a file holds one, but nothing depends on that):
//! - **tracefs** (`/sys/kernel/tracing/trace`): `comm-pid [cpu] flags ts: event: key=value…`,
//!   with the optional tgid column `(  77)` and 4- or 5-character flags (the line layout of
//!   Perfetto's `systrace_line_tokenizer.cc`).
//! - **`trace-cmd report`**: the same header without flags; with its default plugins the
//!   sched events are rewritten (`prev:pid [prio] S ==> next:pid [prio]`,
//!   `comm:pid [prio] CPU:003`, libtraceevent's `plugin_sched_switch.c`); `-N` prints the
//!   kernel's `key=value` form; `-R` prints raw fields (`prev_state` as a number).
//! - **`perf sched script` / `perf script`**: `comm pid[/tid] [cpu] ts: sched:event: key=value…`.
//!
//! Everything that is not turned into an event is counted in [`ImportStats`]: header lines,
//! events of other kinds, malformed lines (with the first few line numbers), cut first and
//! last lines, `<...>` names, PID reuse, time stamps out of order and the overlapping runs
//! that clock skew between CPUs produces. Nothing here panics on any input (fuzzed in
//! `tests/fuzz_traces.rs`).
//!
//! The lines become raw events that a `Builder` turns into the trace (tasks, PID reuse,
//! switches put back); trace-cmd's binary trace.dat ([`super::tracedat`]) feeds the same
//! builder. [`super::input`]'s `load` and `parse_bytes` take any of these forms, compressed or not.

mod builder;
mod lines;
#[cfg(test)]
mod tests;

pub(crate) use builder::*;
pub use lines::*;

use super::*;
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Which text form a line was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// tracefs or `trace-cmd report` (`comm-pid [cpu]`).
    Ftrace,
    /// `perf script` (`comm pid [cpu]`).
    Perf,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ImportError {
    #[error("{0}")]
    Empty(String),
}

/// The most lines a trace may have (a limit on memory: 100 million events is ~10 GB of text).
pub const MAX_LINES: usize = 100_000_000;

/// Parses a trace text. Fails only when it holds no scheduler event at all.
pub fn parse(text: &str) -> Result<Trace, ImportError> {
    let mut b = Builder::new();
    let mut failures: Vec<(usize, String)> = Vec::new();
    let mut first_data: Option<usize> = None;
    let mut last_line = 0;
    for (i, line) in text.lines().enumerate().take(MAX_LINES) {
        let no = i + 1;
        last_line = no;
        b.stats.lines += 1;
        match parse_line(line) {
            Ok(Line::Header(c)) => {
                b.stats.header_lines += 1;
                if let Some(c) = c {
                    b.cpus(c);
                }
            }
            Ok(Line::Lost(n)) => {
                b.stats.header_lines += 1;
                b.lost(n);
            }
            Ok(Line::Event(r)) => {
                first_data.get_or_insert(no);
                b.event(*r);
            }
            Ok(Line::Other(name)) => {
                first_data.get_or_insert(no);
                b.other(&name);
            }
            Err(e) => {
                first_data.get_or_insert(no);
                failures.push((no, e));
            }
        }
    }
    for (no, e) in failures {
        // A buffer dumped mid-line cuts the first or the last line.
        if Some(no) == first_data || no == last_line {
            b.stats.truncated_edges += 1;
            continue;
        }
        b.malformed(format!("line {no}: {e}"));
    }
    b.finish("lines")
}

/// The most bytes a compressed trace may unpack to (a gzip file, or the sections and CPU data
/// of a compressed trace.dat, all together): a limit on memory.
pub const MAX_DECOMPRESSED: u64 = 4 << 30;

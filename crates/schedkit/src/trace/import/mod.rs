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
//! builder. [`load`] and [`parse_bytes`] take any of these forms, gzip-compressed or not.

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

/// The gzip magic.
const GZIP: [u8; 2] = [0x1f, 0x8b];
/// The zstd frame magic (RFC 8878).
const ZSTD: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Reads a trace file, naming the file in errors: any of the text forms, trace-cmd's binary
/// trace.dat (see [`super::tracedat`]), or either of them gzip- or zstd-compressed.
pub fn load(path: &std::path::Path) -> Result<Trace, String> {
    let bytes = crate::infile::read(path, crate::infile::MAX_TRACE_INPUT, "trace")
        .map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
    parse_bytes(&bytes).map_err(|e| format!("trace {}: {e}", path.display()))
}

/// Reads a trace from its bytes, whatever its form: text, trace.dat, or a gzip or zstd of
/// either.
pub fn parse_bytes(bytes: &[u8]) -> Result<Trace, String> {
    let (inner, how) = if bytes.starts_with(&GZIP) {
        (gunzip(bytes, MAX_DECOMPRESSED)?, "gzip")
    } else if bytes.starts_with(&ZSTD) {
        (unzstd(bytes, MAX_DECOMPRESSED)?, "zstd")
    } else {
        return parse_plain(bytes);
    };
    if inner.starts_with(&GZIP) || inner.starts_with(&ZSTD) {
        return Err(format!(
            "compressed twice ({how}, then again inside); unpack it once"
        ));
    }
    parse_plain(&inner).map_err(|e| format!("({how}-compressed) {e}"))
}

fn parse_plain(bytes: &[u8]) -> Result<Trace, String> {
    if bytes.starts_with(&super::tracedat::MAGIC) {
        return super::tracedat::parse(bytes).map_err(|e| format!("trace.dat: {e}"));
    }
    if bytes.starts_with(b"PERFILE2") {
        return Err(
            "a binary perf.data; convert it with `perf sched script -i FILE > trace.txt`".into(),
        );
    }
    let text = String::from_utf8_lossy(bytes);
    parse(&text).map_err(|e| e.to_string())
}

/// A gzip stream (one member or several, as `cat a.gz b.gz` makes) unpacked, refused past
/// `limit` bytes.
pub fn gunzip(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("not a readable gzip stream: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!(
            "gzip stream unpacks to more than {} GiB, the limit on a trace",
            limit >> 30
        ));
    }
    Ok(out)
}

/// A zstd stream (one frame or several, as `cat a.zst b.zst` makes) unpacked, refused past
/// `limit` bytes.
pub fn unzstd(bytes: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut rest: &[u8] = bytes;
    while !rest.is_empty() {
        let room = limit.saturating_add(1).saturating_sub(out.len() as u64);
        let mut frame = ruzstd::decoding::StreamingDecoder::new(&mut rest)
            .map_err(|e| format!("not a readable zstd stream: {e}"))?;
        (&mut frame)
            .take(room)
            .read_to_end(&mut out)
            .map_err(|e| format!("not a readable zstd stream: {e}"))?;
        if out.len() as u64 > limit {
            return Err(format!(
                "zstd stream unpacks to more than {} GiB, the limit on a trace",
                limit >> 30
            ));
        }
    }
    Ok(out)
}

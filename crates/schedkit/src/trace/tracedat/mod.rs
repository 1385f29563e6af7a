//! trace-cmd's binary `trace.dat`, read directly: file versions 6 and 7 as the man pages
//! `trace-cmd.dat.v6(5)` and `trace-cmd.dat.v7(5)` describe them (and trace-cmd's
//! `lib/trace-cmd/trace-input.c` and libtraceevent's `kbuffer-parse.c` read them).
//!
//! - The file: either endianness; version 6 (the metadata in a fixed order, then the per-CPU
//!   offsets after `flyrecord`) or 7 (sections found through chains of options sections, any of
//!   them compressed with zlib or zstd, the CPU data in compressed chunks).
//! - The metadata used: the ring-buffer page header (`header_page`: where the time stamp, the
//!   commit word and the data are, and so the kernel's long size), every event's format (the
//!   fields of the sched events are found by name in their `format:` text, never at fixed
//!   offsets), the saved cmdlines (pid → comm), the CPU count, the trace clock, and the
//!   `DATE`/`OFFSET`/`TSC2NSEC` options that `trace-cmd report` applies to time stamps.
//! - The data: every buffer instance's per-CPU pages, each a page header and events with
//!   `type_len`/`time_delta` headers (`TIME_EXTEND`, absolute `TIME_STAMP`, `PADDING`, data
//!   events of up to 28 words or with a length word), merged across CPUs in time order as
//!   `trace-cmd report` merges them.
//!
//! The events become the text importer's raw events and go through the same builder
//! ([`super::import`]'s `Builder`), so that a trace.dat and its `trace-cmd report -t` text give
//! one trace: the header of each event names the running task with the comm `trace-cmd report`
//! prints (the saved cmdlines, then the names its sched plugin learns from `sched_switch` and
//! `sched_wakeup` events), `common_flags` gives the interrupt context of a wakeup (hardirq
//! 0x08, softirq 0x10, as ftrace's `h`/`s`), and `prev_state` is spelled with the letters of
//! the kernel's own `__print_flags` table (so older kernels' state bits read right).
//!
//! The input is untrusted: every length and offset is checked against the bytes there are
//! before it is used, unpacked sizes against [`MAX_DECOMPRESSED`], and nothing panics
//! (`tests/fuzz_traces.rs` mutates the shipped trace.dat files byte by byte). Errors name the
//! section and the byte offset. A page that does not parse is skipped and counted as malformed
//! (with where it is), as a text line would be.

use super::import::MAX_DECOMPRESSED;
use super::import::{self, parse_prev_state, Builder, Raw, RawKind, Ref, MAX_CPUS};
use super::Trace;
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fmt::Display;
use std::io::Read;

mod dat;
mod format;
mod stream;
#[cfg(test)]
mod tests;

use dat::*;
use format::*;
use stream::*;

/// The first bytes of a trace.dat (then `tracing`).
pub const MAGIC: [u8; 3] = [0x17, 0x08, 0x44];

type R<T> = Result<T, String>;

// Option ids (`trace-cmd.dat.v7(5)`).
const OPT_DONE: u16 = 0;
const OPT_DATE: u16 = 1;
const OPT_BUFFER: u16 = 3;
const OPT_TRACECLOCK: u16 = 4;
const OPT_OFFSET: u16 = 7;
const OPT_CPUCOUNT: u16 = 8;
const OPT_TSC2NSEC: u16 = 14;
const OPT_HEADER_INFO: u16 = 16;
const OPT_FTRACE_EVENTS: u16 = 17;
const OPT_EVENT_FORMATS: u16 = 18;
const OPT_KALLSYMS: u16 = 19;
const OPT_PRINTK: u16 = 20;
const OPT_CMDLINES: u16 = 21;
const OPT_BUFFER_TEXT: u16 = 22;

/// A section's flag: its data is compressed.
const SEC_COMPRESSED: u16 = 1;

// Ring buffer event types (`type_len` values above the data lengths).
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
/// An absolute time stamp lacks the top 5 bits; they are the previous time's.
const TS_MSB: u64 = 0xf8 << 56;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

// common_flags bits (`include/linux/trace_events.h`).
const TRACE_FLAG_HARDIRQ: u64 = 0x08;
const TRACE_FLAG_SOFTIRQ: u64 = 0x10;

/// The smallest ring-buffer page read (the kernel's are 4 KiB or more).
const MIN_PAGE_SIZE: u64 = 256;

/// Options sections a file may chain (a limit on a corrupt chain; real files have 2 or 3).
const MAX_OPTION_SECTIONS: usize = 1024;

/// Reads a trace.dat. Errors say which section and which byte.
pub fn parse(bytes: &[u8]) -> R<Trace> {
    let mut dat = Dat::read(bytes)?;
    if dat.buffers.is_empty() {
        if let Some(text) = dat.latency.take() {
            // A latency tracer's file holds the tracefs text of the trace.
            return import::parse(&String::from_utf8_lossy(&text))
                .map_err(|e| format!("its latency-trace text: {e}"));
        }
        return Err("no flyrecord buffer (no per-CPU trace data) in the file".into());
    }
    dat.events()
}

/// Reads `n` bytes (1, 2, 4 or 8) as an unsigned number.
fn rd(b: &[u8], big: bool) -> u64 {
    let mut v: u64 = 0;
    if big {
        for &x in b {
            v = (v << 8) | x as u64;
        }
    } else {
        for &x in b.iter().rev() {
            v = (v << 8) | x as u64;
        }
    }
    v
}

/// Where a cursor's bytes lie, for errors.
#[derive(Clone, Copy, Debug)]
enum Origin {
    /// In the file, from this offset.
    File(usize),
    /// Unpacked from compressed data at this file offset.
    Unpacked(usize),
}

/// A reader of one stretch of bytes that knows where they are.
#[derive(Clone)]
struct Cur<'a> {
    buf: &'a [u8],
    pos: usize,
    big: bool,
    what: String,
    origin: Origin,
}

impl<'a> Cur<'a> {
    fn new(buf: &'a [u8], big: bool, what: impl Into<String>, origin: Origin) -> Cur<'a> {
        Cur {
            buf,
            pos: 0,
            big,
            what: what.into(),
            origin,
        }
    }

    fn err(&self, msg: impl Display) -> String {
        match self.origin {
            Origin::File(base) => format!("{}, byte {}: {msg}", self.what, base + self.pos),
            Origin::Unpacked(at) => format!(
                "{} (compressed at byte {at}), byte {} of its unpacked data: {msg}",
                self.what, self.pos
            ),
        }
    }

    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn bytes(&mut self, n: u64, what: &str) -> R<&'a [u8]> {
        if n > self.left() as u64 {
            return Err(self.err(format!(
                "{what}: {n} bytes, but the {} has only {} left",
                match self.origin {
                    Origin::File(_) => "file",
                    Origin::Unpacked(_) => "unpacked data",
                },
                self.left()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn num(&mut self, n: u64, what: &str) -> R<u64> {
        let big = self.big;
        self.bytes(n, what).map(|b| rd(b, big))
    }

    fn u16(&mut self, what: &str) -> R<u16> {
        self.num(2, what).map(|v| v as u16)
    }

    fn u32(&mut self, what: &str) -> R<u32> {
        self.num(4, what).map(|v| v as u32)
    }

    fn u64(&mut self, what: &str) -> R<u64> {
        self.num(8, what)
    }

    /// A NUL-terminated string.
    fn cstr(&mut self, what: &str) -> R<String> {
        let rest = &self.buf[self.pos..];
        let Some(end) = rest.iter().position(|&b| b == 0) else {
            return Err(self.err(format!("{what}: no NUL ends the string")));
        };
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.pos += end + 1;
        Ok(s)
    }

    /// The next `n` bytes as a cursor of their own.
    fn sub(&mut self, n: u64, what: &str, name: impl Into<String>) -> R<Cur<'a>> {
        let origin = match self.origin {
            Origin::File(base) => Origin::File(base + self.pos),
            o => o,
        };
        let big = self.big;
        let b = self.bytes(n, what)?;
        Ok(Cur::new(b, big, name, origin))
    }

    fn file_pos(&self) -> Option<usize> {
        match self.origin {
            Origin::File(base) => Some(base + self.pos),
            Origin::Unpacked(_) => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Codec {
    Zlib,
    Zstd,
}

impl Codec {
    fn name(self) -> &'static str {
        match self {
            Codec::Zlib => "zlib",
            Codec::Zstd => "zstd",
        }
    }
}

/// Unpacks one compressed block that says it holds `size` bytes, within the file's budget.
fn unpack(codec: Codec, data: &[u8], size: u64, budget: &mut u64) -> Result<Vec<u8>, String> {
    if size > *budget {
        return Err(format!(
            "unpacks to {size} bytes, past the limit of {} GiB unpacked for a trace",
            MAX_DECOMPRESSED >> 30
        ));
    }
    let mut out = Vec::new();
    let r = match codec {
        Codec::Zlib => flate2::read::ZlibDecoder::new(data)
            .take(size)
            .read_to_end(&mut out),
        Codec::Zstd => match ruzstd::decoding::StreamingDecoder::new(data) {
            Ok(d) => d.take(size).read_to_end(&mut out),
            Err(e) => return Err(format!("not a zstd frame: {e}")),
        },
    };
    r.map_err(|e| format!("{} data does not unpack: {e}", codec.name()))?;
    if out.len() as u64 != size {
        return Err(format!(
            "{} data unpacks to {} bytes, not the {size} its header says",
            codec.name(),
            out.len()
        ));
    }
    *budget -= size;
    Ok(out)
}

/// `strtoll(s, NULL, 0)`: decimal, `0x` hex or `0` octal, with a sign; 0 if none.
fn strtoll(s: &str) -> i64 {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let v = i64::from_str_radix(&digits[..end], radix).unwrap_or(0);
    if neg {
        v.saturating_neg()
    } else {
        v
    }
}

/// The selected clock of a `trace_clock` file (`[local] global counter …`).
fn clock_of(s: &str) -> Option<String> {
    s.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(['[', ']']).to_string())
}

/// trace-input.c's conversion of TSC cycles to ns.
fn mul_u64_u32_shr(a: u64, mul: u32, shift: u32) -> u64 {
    ((a as u128 * mul as u128) >> shift).min(u64::MAX as u128) as u64
}

/// A version 7 section header: id, flags, string id (not used), size.
fn section_header(c: &mut Cur) -> R<(u16, u16, u64)> {
    let id = c.u16("section id")?;
    let flags = c.u16("section flags")?;
    let _desc = c.u32("section description")?;
    let size = c.u64("section size")?;
    Ok((id, flags, size))
}

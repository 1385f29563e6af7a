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

/// One field of an event's format.
#[derive(Clone, Debug)]
struct Field {
    offset: usize,
    size: usize,
    signed: bool,
    loc: Loc,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Loc {
    /// At its offset.
    Fixed,
    /// `__data_loc`: a word at the offset gives the data's offset (low 16 bits) and length.
    Data,
    /// `__rel_loc`: the same, the offset counted from the end of the word.
    Rel,
}

impl Field {
    /// The field as a number (sign-extended where the format says it is signed).
    fn int(&self, rec: &[u8], big: bool) -> Option<i128> {
        if self.loc != Loc::Fixed || !matches!(self.size, 1 | 2 | 4 | 8) {
            return None;
        }
        let b = rec.get(self.offset..self.offset.checked_add(self.size)?)?;
        let v = rd(b, big);
        Some(if self.signed {
            let shift = 64 - 8 * self.size as u32;
            (((v << shift) as i64) >> shift) as i128
        } else {
            v as i128
        })
    }

    /// The field as a string (to its first NUL).
    fn text(&self, rec: &[u8], big: bool) -> Option<String> {
        let b = match self.loc {
            Loc::Fixed if self.size == 0 => rec.get(self.offset..)?,
            Loc::Fixed => rec.get(self.offset..self.offset.checked_add(self.size)?)?,
            Loc::Data | Loc::Rel => {
                let w = rec.get(self.offset..self.offset.checked_add(4)?)?;
                let w = rd(w, big) as usize;
                let mut start = w & 0xffff;
                if self.loc == Loc::Rel {
                    start += self.offset + self.size;
                }
                rec.get(start..start.checked_add(w >> 16)?)?
            }
        };
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Some(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

/// An event's `format` file, as far as it is used.
struct Format {
    system: String,
    name: String,
    id: u32,
    fields: HashMap<String, Field>,
    /// Field lines that could not be read (left out, said where a field is missing).
    bad_fields: Vec<String>,
    print_fmt: String,
}

/// Parses a `format` file (`name:`, `ID:`, `field:…; offset:…; size:…; signed:…;` lines,
/// `print fmt:`).
fn parse_format(text: &str, system: &str) -> Result<Format, String> {
    let mut name = None;
    let mut id = None;
    let mut fields = HashMap::new();
    let mut bad_fields = Vec::new();
    let mut print_fmt = String::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            id = Some(
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("`ID:{v}` is not a number"))?,
            );
        } else if let Some(v) = t.strip_prefix("print fmt:") {
            print_fmt = v.trim().to_string();
        } else if t.starts_with("field:") {
            match parse_field(t) {
                Ok((n, f)) => {
                    fields.insert(n, f);
                }
                Err(e) => bad_fields.push(e),
            }
        }
    }
    let name = name.ok_or("no `name:` line")?;
    let id = id.ok_or_else(|| format!("{name}: no `ID:` line"))?;
    Ok(Format {
        system: system.to_string(),
        name,
        id,
        fields,
        bad_fields,
        print_fmt,
    })
}

/// `field:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;` → ("prev_comm", its place).
fn parse_field(line: &str) -> Result<(String, Field), String> {
    let mut decl = "";
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = v.trim();
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let (Some(offset), Some(size)) = (offset, size) else {
        return Err(format!("`{line}`: no offset or size"));
    };
    let loc = if decl.starts_with("__data_loc") {
        Loc::Data
    } else if decl.starts_with("__rel_loc") {
        Loc::Rel
    } else {
        Loc::Fixed
    };
    // The name is the declaration's last word, less an array length.
    let d = match decl.rfind('[') {
        Some(i) if decl.ends_with(']') && !decl[..i].trim_end().is_empty() => &decl[..i],
        _ => decl,
    };
    let name = d
        .split_whitespace()
        .last()
        .unwrap_or("")
        .trim_start_matches('*');
    if name.is_empty() {
        return Err(format!("`{line}`: no field name"));
    }
    Ok((
        name.to_string(),
        Field {
            offset,
            size,
            signed,
            loc,
        },
    ))
}

/// The letters `prev_state`'s bits print as: the `{ value, "letter" }` pairs of the
/// `__print_flags` in `sched_switch`'s print format, by bit, up to the first bit without one
/// (as libtraceevent's sched_switch plugin reads them); the 6.x kernels' table without one.
fn state_letters(print_fmt: &str) -> Vec<char> {
    let mut by_bit: [Option<char>; 32] = [None; 32];
    if let Some(i) = print_fmt.find("__print_flags(") {
        let mut rest = &print_fmt[i..];
        while let Some(open) = rest.find('{') {
            rest = &rest[open + 1..];
            let Some(close) = rest.find('}') else { break };
            let pair = &rest[..close];
            rest = &rest[close + 1..];
            let Some((v, s)) = pair.split_once(',') else {
                continue;
            };
            let v = v.trim();
            let value = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => v.parse().ok(),
            };
            let letter = s.trim().trim_matches('"').chars().next();
            if let (Some(value), Some(letter)) = (value, letter) {
                let bit = value.trailing_zeros() as usize;
                if value != 0 && bit < 32 {
                    by_bit[bit] = Some(letter);
                }
            }
        }
    }
    let letters: Vec<char> = by_bit.iter().map_while(|c| *c).collect();
    if letters.is_empty() {
        "SDTtXZPI".chars().collect()
    } else {
        letters
    }
}

/// How the records of one event id become raw events.
#[derive(Clone, Debug)]
enum Decoder {
    Switch {
        prev_comm: Option<Field>,
        prev_pid: Field,
        prev_prio: Option<Field>,
        prev_state: Field,
        next_comm: Option<Field>,
        next_pid: Field,
        next_prio: Option<Field>,
        letters: Vec<char>,
    },
    /// sched_waking (`waking`), sched_wakeup, or sched_wakeup_new (`new`).
    Wake {
        waking: bool,
        new: bool,
        comm: Option<Field>,
        pid: Field,
        prio: Option<Field>,
        target_cpu: Option<Field>,
    },
    Fork {
        parent_comm: Option<Field>,
        parent_pid: Field,
        child_comm: Option<Field>,
        child_pid: Field,
    },
    Exit {
        comm: Option<Field>,
        pid: Field,
        prio: Option<Field>,
    },
    Migrate {
        comm: Option<Field>,
        pid: Field,
        prio: Option<Field>,
        orig: Field,
        dest: Field,
    },
    Freq {
        state: Field,
        cpu: Field,
    },
    Idle {
        state: Field,
        cpu: Field,
    },
    Print {
        buf: Field,
    },
    /// An event the model does not use.
    Other,
    /// An event the model uses whose format lacks a field it needs.
    Broken(String),
}

struct EventType {
    name: String,
    decoder: Decoder,
    common_pid: Option<Field>,
    common_flags: Option<Field>,
}

impl EventType {
    fn new(f: &Format) -> EventType {
        let get = |n: &str| f.fields.get(n).cloned();
        let need = |n: &str| {
            f.fields
                .get(n)
                .cloned()
                .ok_or_else(|| match f.bad_fields.first() {
                    None => format!("its format has no `{n}` field"),
                    Some(b) => format!("its format has no readable `{n}` field (unreadable: {b})"),
                })
        };
        let decoder = (|| -> Result<Decoder, String> {
            Ok(match (f.system.as_str(), f.name.as_str()) {
                (_, "sched_switch") => Decoder::Switch {
                    prev_comm: get("prev_comm"),
                    prev_pid: need("prev_pid")?,
                    prev_prio: get("prev_prio"),
                    prev_state: need("prev_state")?,
                    next_comm: get("next_comm"),
                    next_pid: need("next_pid")?,
                    next_prio: get("next_prio"),
                    letters: state_letters(&f.print_fmt),
                },
                (_, n @ ("sched_waking" | "sched_wakeup" | "sched_wakeup_new")) => Decoder::Wake {
                    waking: n == "sched_waking",
                    new: n == "sched_wakeup_new",
                    comm: get("comm"),
                    pid: need("pid")?,
                    prio: get("prio"),
                    target_cpu: get("target_cpu"),
                },
                (_, "sched_process_fork") => Decoder::Fork {
                    parent_comm: get("parent_comm"),
                    parent_pid: need("parent_pid")?,
                    child_comm: get("child_comm"),
                    child_pid: need("child_pid")?,
                },
                (_, "sched_process_exit") => Decoder::Exit {
                    comm: get("comm"),
                    pid: need("pid")?,
                    prio: get("prio"),
                },
                (_, "sched_migrate_task") => Decoder::Migrate {
                    comm: get("comm"),
                    pid: need("pid")?,
                    prio: get("prio"),
                    orig: need("orig_cpu")?,
                    dest: need("dest_cpu")?,
                },
                (_, "cpu_frequency") => Decoder::Freq {
                    state: need("state")?,
                    cpu: need("cpu_id")?,
                },
                (_, "cpu_idle") => Decoder::Idle {
                    state: need("state")?,
                    cpu: need("cpu_id")?,
                },
                ("ftrace", "print") => Decoder::Print { buf: need("buf")? },
                _ => Decoder::Other,
            })
        })()
        .unwrap_or_else(Decoder::Broken);
        EventType {
            name: f.name.clone(),
            decoder,
            common_pid: get("common_pid"),
            common_flags: get("common_flags"),
        }
    }
}

/// Where a ring-buffer page keeps its time stamp, commit word and data (`header_page`).
#[derive(Clone, Copy, Debug)]
struct PageLayout {
    ts_offset: usize,
    commit_offset: usize,
    commit_size: usize,
    data_offset: usize,
}

fn parse_header_page(text: &str) -> Result<PageLayout, String> {
    let mut fields = HashMap::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("field:") {
            let (n, f) = parse_field(t)?;
            fields.insert(n, f);
        }
    }
    let get = |n: &str| {
        fields
            .get(n)
            .cloned()
            .ok_or_else(|| format!("header_page has no `{n}` field"))
    };
    let (ts, commit, data) = (get("timestamp")?, get("commit")?, get("data")?);
    if ts.size != 8 {
        return Err(format!(
            "header_page's timestamp is {} bytes; only 8 are known",
            ts.size
        ));
    }
    if !matches!(commit.size, 4 | 8) {
        return Err(format!(
            "header_page's commit is {} bytes (a kernel long is 4 or 8)",
            commit.size
        ));
    }
    let layout = PageLayout {
        ts_offset: ts.offset,
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
    };
    if layout.data_offset < layout.commit_offset + layout.commit_size
        || layout.data_offset < layout.ts_offset + 8
        || layout.data_offset > 4096
    {
        return Err(format!(
            "header_page puts the data at byte {}, not after the timestamp and commit",
            layout.data_offset
        ));
    }
    Ok(layout)
}

/// One CPU's data in a buffer: where it is in the file and how many bytes.
#[derive(Clone, Debug)]
struct CpuData {
    cpu: u32,
    offset: u64,
    size: u64,
}

/// A flyrecord buffer (the top instance, or another).
#[derive(Clone, Debug)]
struct Buffer {
    name: String,
    page_size: u64,
    /// Version 7: the offset of its BUFFER FLYRECORD section (whose flag says whether the CPU
    /// data is compressed); version 6: None.
    section: Option<u64>,
    cpus: Vec<CpuData>,
}

/// A file's metadata, read.
struct Dat<'a> {
    bytes: &'a [u8],
    big: bool,
    page_size: u64,
    codec: Option<Codec>,
    /// Unpacked bytes the file may still produce.
    budget: u64,
    page: Option<PageLayout>,
    formats: Vec<Format>,
    /// Formats that could not be read, with where they are.
    bad_formats: Vec<String>,
    cmdlines: String,
    cpus: Option<u32>,
    buffers: Vec<Buffer>,
    latency: Option<Vec<u8>>,
    clock: Option<String>,
    ts_offset: i128,
    tsc: Option<(u32, u32)>,
}

impl<'a> Dat<'a> {
    fn read(bytes: &'a [u8]) -> R<Dat<'a>> {
        let mut c = Cur::new(bytes, false, "file header", Origin::File(0));
        if c.bytes(3, "magic")? != MAGIC {
            return Err(c.err("not a trace.dat (no 17 08 44 magic)"));
        }
        if c.bytes(7, "`tracing`")? != b"tracing" {
            return Err(c.err("no `tracing` after the magic"));
        }
        let v = c.cstr("version")?;
        let version: u32 = v
            .parse()
            .map_err(|_| c.err(format!("version `{v}` is not a number")))?;
        if !(6..=7).contains(&version) {
            return Err(c.err(format!(
                "file version {version}; versions 6 and 7 are read (convert it with `trace-cmd convert --file-version 7`)"
            )));
        }
        let big = match c.bytes(1, "endianness")?[0] {
            0 => false,
            1 => true,
            e => return Err(c.err(format!("endianness byte {e} (0 little, 1 big)"))),
        };
        c.big = big;
        let _long_size = c.bytes(1, "long size")?[0];
        let page_size = c.u32("page size")? as u64;
        if page_size < MIN_PAGE_SIZE {
            return Err(c.err(format!("page size {page_size}")));
        }
        let mut dat = Dat {
            bytes,
            big,
            page_size,
            codec: None,
            budget: MAX_DECOMPRESSED,
            page: None,
            formats: Vec::new(),
            bad_formats: Vec::new(),
            cmdlines: String::new(),
            cpus: None,
            buffers: Vec::new(),
            latency: None,
            clock: None,
            ts_offset: 0,
            tsc: None,
        };
        if version == 6 {
            dat.read_v6(c)?;
        } else {
            dat.read_v7(c)?;
        }
        dat.check_clock()?;
        Ok(dat)
    }

    fn file_cur(&self, at: u64, what: impl Into<String>) -> R<Cur<'a>> {
        let what = what.into();
        if at > self.bytes.len() as u64 {
            return Err(format!(
                "{what}: its offset {at} is past the file's end ({} bytes): the file is cut short or corrupt",
                self.bytes.len()
            ));
        }
        let at = at as usize;
        Ok(Cur::new(
            &self.bytes[at..],
            self.big,
            what,
            Origin::File(at),
        ))
    }

    fn read_v6(&mut self, mut c: Cur<'a>) -> R<()> {
        c.what = "HEADER INFO".into();
        self.header_info(&mut c)?;
        c.what = "FTRACE EVENT FORMATS".into();
        self.ftrace_formats(&mut c)?;
        c.what = "EVENT FORMATS".into();
        self.event_formats(&mut c)?;
        c.what = "KALLSYMS".into();
        let n = c.u32("kallsyms size")?;
        c.bytes(n as u64, "kallsyms")?;
        c.what = "TRACE_PRINTK".into();
        let n = c.u32("printk formats size")?;
        c.bytes(n as u64, "printk formats")?;
        c.what = "SAVED COMMAND LINES".into();
        self.cmdlines(&mut c)?;
        c.what = "CPU count".into();
        let cpus = c.u32("CPU count")?;
        if cpus > MAX_CPUS {
            return Err(c.err(format!(
                "{cpus} CPUs, beyond any machine (limit {MAX_CPUS})"
            )));
        }
        self.cpus = Some(cpus);
        c.what = "options".into();
        let mut kind = c.bytes(10, "`options`, `latency` or `flyrecord`")?;
        let mut instances = Vec::new();
        if kind.starts_with(b"options") {
            instances = self.options_v6(&mut c)?;
            kind = c.bytes(10, "`latency` or `flyrecord`")?;
        }
        if kind.starts_with(b"latency") {
            self.latency = Some(c.buf[c.pos..].to_vec());
            return Ok(());
        }
        if !kind.starts_with(b"flyrecord") {
            return Err(c.err(format!(
                "`{}` where `latency` or `flyrecord` belongs",
                String::from_utf8_lossy(kind).trim_end_matches(['\0', ' '])
            )));
        }
        c.what = "flyrecord CPU offsets".into();
        let top = self.cpu_table_v6(&mut c, cpus, "")?;
        self.buffers.push(top);
        // A TRACECLOCK option says that the trace_clock file follows.
        if self.clock.is_some() {
            c.what = "trace_clock".into();
            if let Ok(n) = c.u64("trace_clock size") {
                if let Ok(b) = c.bytes(n, "trace_clock") {
                    self.clock = clock_of(&String::from_utf8_lossy(b));
                }
            }
        }
        for (offset, name) in instances {
            let mut c = self.file_cur(offset, format!("buffer `{name}`"))?;
            let mut kind = c.bytes(10, "`options` or `flyrecord`")?;
            if kind.starts_with(b"options") {
                self.options_v6(&mut c)?;
                kind = c.bytes(10, "`flyrecord`")?;
            }
            if !kind.starts_with(b"flyrecord") {
                // A latency instance: no per-CPU data.
                continue;
            }
            let b = self.cpu_table_v6(&mut c, cpus, &name)?;
            self.buffers.push(b);
        }
        Ok(())
    }

    fn cpu_table_v6(&self, c: &mut Cur<'a>, cpus: u32, name: &str) -> R<Buffer> {
        let mut table = Vec::new();
        for cpu in 0..cpus {
            let offset = c.u64("CPU data offset")?;
            let size = c.u64("CPU data size")?;
            table.push(CpuData { cpu, offset, size });
        }
        Ok(Buffer {
            name: name.to_string(),
            page_size: self.page_size,
            section: None,
            cpus: table,
        })
    }

    /// Version 6 options: `id`, `size`, data, …, up to an id 0. Returns the instance buffers.
    fn options_v6(&mut self, c: &mut Cur<'a>) -> R<Vec<(u64, String)>> {
        let mut instances = Vec::new();
        loop {
            let id = c.u16("option id")?;
            if id == OPT_DONE {
                return Ok(instances);
            }
            let size = c.u32("option size")?;
            let mut o = c.sub(size as u64, "option data", format!("option {id}"))?;
            match id {
                OPT_BUFFER => {
                    let off = o.u64("buffer offset")?;
                    let name = o.cstr("buffer name")?;
                    instances.push((off, name));
                }
                _ => self.option(id, &mut o)?,
            }
        }
    }

    fn read_v7(&mut self, mut c: Cur<'a>) -> R<()> {
        let name = c.cstr("compression name")?;
        let _version = c.cstr("compression version")?;
        self.codec = match name.as_str() {
            "none" | "" => None,
            "zlib" => Some(Codec::Zlib),
            "zstd" => Some(Codec::Zstd),
            other => {
                return Err(c.err(format!(
                    "compressed with `{other}`; zlib and zstd are read (`trace-cmd convert --compression none` unpacks it)"
                )))
            }
        };
        let mut next = c.u64("first options offset")?;
        let mut sections: Vec<(u16, u64)> = Vec::new();
        let mut seen = HashSet::new();
        while next != 0 {
            if !seen.insert(next) || seen.len() > MAX_OPTION_SECTIONS {
                return Err(format!(
                    "options section at byte {next}: the chain of options sections loops"
                ));
            }
            next = self.options_v7(next, &mut sections)?;
        }
        let find = |id: u16| sections.iter().rev().find(|s| s.0 == id).map(|s| s.1);
        let Some(h) = find(OPT_HEADER_INFO) else {
            return Err("no HEADER INFO section (the ring buffer's page layout)".into());
        };
        let (data, origin) = self.section(h, OPT_HEADER_INFO, "HEADER INFO")?;
        self.header_info(&mut Cur::new(&data, self.big, "HEADER INFO", origin))?;
        if let Some(f) = find(OPT_FTRACE_EVENTS) {
            let (data, origin) = self.section(f, OPT_FTRACE_EVENTS, "FTRACE EVENT FORMATS")?;
            self.ftrace_formats(&mut Cur::new(
                &data,
                self.big,
                "FTRACE EVENT FORMATS",
                origin,
            ))?;
        }
        if let Some(f) = find(OPT_EVENT_FORMATS) {
            let (data, origin) = self.section(f, OPT_EVENT_FORMATS, "EVENT FORMATS")?;
            self.event_formats(&mut Cur::new(&data, self.big, "EVENT FORMATS", origin))?;
        }
        if let Some(f) = find(OPT_CMDLINES) {
            let (data, origin) = self.section(f, OPT_CMDLINES, "SAVED COMMAND LINES")?;
            self.cmdlines(&mut Cur::new(
                &data,
                self.big,
                "SAVED COMMAND LINES",
                origin,
            ))?;
        }
        Ok(())
    }

    /// A version 7 section's data (unpacked if it is compressed), checked to be the section
    /// expected.
    fn section(&mut self, at: u64, id: u16, what: &str) -> R<(Cow<'a, [u8]>, Origin)> {
        let mut c = self.file_cur(at, format!("{what} section header"))?;
        let (sid, flags, size) = section_header(&mut c)?;
        if sid != id {
            return Err(c.err(format!("section id {sid} where {what} ({id}) belongs")));
        }
        c.what = format!("{what} section");
        self.section_data(&mut c, flags, size)
    }

    fn section_data(
        &mut self,
        c: &mut Cur<'a>,
        flags: u16,
        size: u64,
    ) -> R<(Cow<'a, [u8]>, Origin)> {
        let start = c.file_pos().unwrap_or(0);
        if flags & SEC_COMPRESSED == 0 {
            let b = c.bytes(size, "section data")?;
            return Ok((Cow::Borrowed(b), Origin::File(start)));
        }
        let Some(codec) = self.codec else {
            return Err(c.err("a compressed section in a file that names no compression"));
        };
        let csize = c.u32("compressed size")?;
        let usize_ = c.u32("unpacked size")?;
        let data = c.bytes(csize as u64, "compressed data")?;
        let out = unpack(codec, data, usize_ as u64, &mut self.budget).map_err(|e| c.err(e))?;
        Ok((Cow::Owned(out), Origin::Unpacked(start)))
    }

    /// One version 7 options section; returns the next one's offset (0: none).
    fn options_v7(&mut self, at: u64, sections: &mut Vec<(u16, u64)>) -> R<u64> {
        let mut c = self.file_cur(at, "options section header")?;
        let (id, flags, size) = section_header(&mut c)?;
        if id != OPT_DONE {
            return Err(c.err(format!(
                "section id {id} where an options section (0) belongs"
            )));
        }
        c.what = "options section".into();
        let (data, origin) = self.section_data(&mut c, flags, size)?;
        let mut c = Cur::new(&data, self.big, "options section", origin);
        loop {
            let id = c.u16("option id")?;
            let size = c.u32("option size")?;
            let mut o = c.sub(size as u64, "option data", format!("option {id}"))?;
            match id {
                OPT_DONE => return o.u64("next options offset"),
                OPT_BUFFER => {
                    let section = o.u64("buffer offset")?;
                    let name = o.cstr("buffer name")?;
                    let clock = o.cstr("buffer clock")?;
                    let page_size = o.u32("buffer page size")? as u64;
                    if page_size < MIN_PAGE_SIZE {
                        return Err(o.err(format!("page size {page_size}")));
                    }
                    let n = o.u32("buffer CPU count")?;
                    let mut cpus = Vec::new();
                    for _ in 0..n {
                        let cpu = o.u32("CPU id")?;
                        if cpu >= MAX_CPUS {
                            return Err(o.err(format!(
                                "CPU {cpu} is beyond any machine (limit {})",
                                MAX_CPUS - 1
                            )));
                        }
                        let offset = o.u64("CPU data offset")?;
                        let size = o.u64("CPU data size")?;
                        cpus.push(CpuData { cpu, offset, size });
                    }
                    if name.is_empty() && self.clock.is_none() {
                        self.clock = Some(clock);
                    }
                    self.buffers.push(Buffer {
                        name,
                        page_size,
                        section: Some(section),
                        cpus,
                    });
                }
                OPT_BUFFER_TEXT => {
                    let at = o.u64("latency buffer offset")?;
                    if self.latency.is_none() {
                        self.latency = Some(self.latency_v7(at)?);
                    }
                }
                OPT_HEADER_INFO | OPT_FTRACE_EVENTS | OPT_EVENT_FORMATS | OPT_KALLSYMS
                | OPT_PRINTK | OPT_CMDLINES => {
                    sections.push((id, o.u64("section offset")?));
                }
                _ => self.option(id, &mut o)?,
            }
        }
    }

    /// A BUFFER TEXT section: a latency trace's text.
    fn latency_v7(&mut self, at: u64) -> R<Vec<u8>> {
        let mut c = self.file_cur(at, "BUFFER TEXT section header")?;
        let (_, flags, size) = section_header(&mut c)?;
        c.what = "BUFFER TEXT section".into();
        if flags & SEC_COMPRESSED == 0 {
            return Ok(c.bytes(size, "latency text")?.to_vec());
        }
        let size = size.min(c.left() as u64);
        let data = c.sub(size, "latency text", "BUFFER TEXT section")?;
        self.chunks(data)
    }

    /// The options both versions share.
    fn option(&mut self, id: u16, o: &mut Cur) -> R<()> {
        let text = |o: &Cur| {
            let b = &o.buf[o.pos..];
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).trim().to_string()
        };
        match id {
            OPT_DATE => {
                // µs between the time stamps and the time of day, as `0x…`.
                let us = strtoll(&text(o));
                self.ts_offset = self.ts_offset.saturating_add(us as i128 * 1000);
            }
            OPT_OFFSET => {
                self.ts_offset = self.ts_offset.saturating_add(strtoll(&text(o)) as i128);
            }
            OPT_TRACECLOCK => {
                self.clock = clock_of(&text(o)).or(Some("local".into()));
            }
            OPT_CPUCOUNT => {
                let n = o.u32("CPU count")?;
                if n > MAX_CPUS {
                    return Err(o.err(format!("{n} CPUs, beyond any machine (limit {MAX_CPUS})")));
                }
                self.cpus = Some(n);
            }
            OPT_TSC2NSEC => {
                let mult = o.u32("TSC multiplier")?;
                let shift = o.u32("TSC shift")?;
                if shift >= 64 {
                    return Err(o.err(format!("TSC shift {shift}")));
                }
                self.tsc = Some((mult, shift));
            }
            _ => {}
        }
        Ok(())
    }

    /// `header_page` and `header_event`.
    fn header_info(&mut self, c: &mut Cur) -> R<()> {
        if c.bytes(12, "`header_page`")? != b"header_page\0" {
            return Err(c.err("no `header_page` string"));
        }
        let n = c.u64("header_page size")?;
        let text = c.bytes(n, "header_page")?;
        if n == 0 {
            return Err(c.err(
                "an empty header_page (a kernel before 2.6.31, whose ring buffer is not read here)",
            ));
        }
        self.page = Some(parse_header_page(&String::from_utf8_lossy(text)).map_err(|e| c.err(e))?);
        if c.bytes(13, "`header_event`")? != b"header_event\0" {
            return Err(c.err("no `header_event` string"));
        }
        let n = c.u64("header_event size")?;
        c.bytes(n, "header_event")?;
        Ok(())
    }

    fn ftrace_formats(&mut self, c: &mut Cur) -> R<()> {
        let n = c.u32("ftrace format count")?;
        for _ in 0..n {
            self.format(c, "ftrace")?;
        }
        Ok(())
    }

    fn event_formats(&mut self, c: &mut Cur) -> R<()> {
        let systems = c.u32("event system count")?;
        for _ in 0..systems {
            let system = c.cstr("system name")?;
            let n = c.u32("event count")?;
            for _ in 0..n {
                self.format(c, &system)?;
            }
        }
        Ok(())
    }

    /// One event's format. One that cannot be read is left out, and said where its records
    /// are met (libtraceevent also goes on past a format it cannot parse).
    fn format(&mut self, c: &mut Cur, system: &str) -> R<()> {
        let size = c.u64("format size")?;
        let at = c.clone();
        let text = c.bytes(size, "format")?;
        match parse_format(&String::from_utf8_lossy(text), system) {
            Ok(f) => self.formats.push(f),
            Err(e) => self
                .bad_formats
                .push(at.err(format!("a `{system}` event format: {e}"))),
        }
        Ok(())
    }

    fn cmdlines(&mut self, c: &mut Cur) -> R<()> {
        let n = c.u64("cmdlines size")?;
        self.cmdlines = String::from_utf8_lossy(c.bytes(n, "cmdlines")?).into_owned();
        Ok(())
    }

    /// A compressed CPU data stream: a chunk count, then chunks (`compressed size`,
    /// `unpacked size`, data), unpacked and joined.
    fn chunks(&mut self, mut c: Cur) -> R<Vec<u8>> {
        let Some(codec) = self.codec else {
            return Err(c.err("compressed data in a file that names no compression"));
        };
        let n = c.u32("chunk count")?;
        let mut out = Vec::new();
        for i in 0..n {
            let at = c.clone();
            let csize = c.u32("chunk's compressed size")?;
            let size = c.u32("chunk's unpacked size")?;
            let data = c.bytes(csize as u64, "chunk data")?;
            let mut part = unpack(codec, data, size as u64, &mut self.budget)
                .map_err(|e| at.err(format!("chunk {i} of {n}: {e}")))?;
            out.append(&mut part);
        }
        Ok(out)
    }

    /// The trace clock must count nanoseconds (or be converted to them).
    fn check_clock(&self) -> R<()> {
        match self.clock.as_deref() {
            Some("counter") => Err(
                "the trace clock is `counter`, which counts events, not time".into(),
            ),
            Some("uptime") => Err("the trace clock is `uptime`, which counts jiffies, not ns".into()),
            Some("x86-tsc") if self.tsc.is_none() => Err(
                "the trace clock is `x86-tsc` (CPU cycles) and the file has no TSC2NSEC option to convert it to ns".into(),
            ),
            _ => Ok(()),
        }
    }

    /// A record's time stamp as `trace-cmd report` prints it.
    fn time(&self, ts: u64) -> u64 {
        let ts = match self.tsc {
            Some((mult, shift)) => mul_u64_u32_shr(ts, mult, shift),
            None => ts,
        };
        (ts as i128 + self.ts_offset).clamp(0, u64::MAX as i128) as u64
    }

    /// The events, through the builder.
    fn events(self) -> R<Trace> {
        let mut b = Builder::new();
        let Some(layout) = self.page else {
            return Err("no header_page".into());
        };
        if let Some(n) = self.cpus.filter(|&n| n > 0) {
            b.cpus(n);
        }
        let mut types: HashMap<u32, EventType> = HashMap::new();
        let mut common_type: Option<Field> = None;
        for f in &self.formats {
            if common_type.is_none() {
                common_type = f.fields.get("common_type").cloned();
            }
            types.insert(f.id, EventType::new(f));
        }
        let common_type = common_type.unwrap_or(Field {
            offset: 0,
            size: 2,
            signed: false,
            loc: Loc::Fixed,
        });
        let comms = Comms::new(&self.cmdlines);

        // Each buffer's CPUs' data, split into records.
        let mut dat = self;
        let mut streams: Vec<Stream> = Vec::new();
        let buffers = std::mem::take(&mut dat.buffers);
        for buf in &buffers {
            let compressed = match buf.section {
                Some(at) => dat.flyrecord_flags(at, &buf.name)? & SEC_COMPRESSED != 0,
                None => false,
            };
            let page_size = buf.page_size;
            for cd in &buf.cpus {
                if cd.size == 0 {
                    continue;
                }
                let what = match buf.name.as_str() {
                    "" => format!("CPU {} data", cd.cpu),
                    n => format!("buffer `{n}` CPU {} data", cd.cpu),
                };
                let data = dat.cpu_data(cd, compressed, &what)?;
                let mut s = Stream {
                    cpu: cd.cpu,
                    origin: if compressed {
                        Origin::Unpacked(cd.offset as usize)
                    } else {
                        Origin::File(cd.offset as usize)
                    },
                    what,
                    data,
                    records: Vec::new(),
                    next: 0,
                };
                s.split(page_size, layout, dat.big, &mut b);
                streams.push(s);
            }
        }

        // Merged in time order as `trace-cmd report` does: the earliest record first, the
        // first stream's on a tie.
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = streams
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.records.first().map(|r| Reverse((r.ts, i))))
            .collect();
        let mut comms = comms;
        while let Some(Reverse((_, i))) = heap.pop() {
            let s = &mut streams[i];
            let r = s.records[s.next];
            s.next += 1;
            if let Some(n) = s.records.get(s.next) {
                heap.push(Reverse((n.ts, i)));
            }
            let rec = &s.data[r.start..r.start + r.len];
            b.stats.lines += 1;
            if r.lost > 0 {
                b.lost(r.lost);
            }
            let ts = dat.time(r.ts);
            let decoded = decode(rec, ts, s.cpu, &types, &common_type, dat.big, &mut comms)
                .map_err(|e| match dat.bad_formats.first() {
                    Some(f) if e.contains("which no format") => format!(
                        "{e} ({} format(s) could not be read; the first: {f})",
                        dat.bad_formats.len()
                    ),
                    _ => e,
                });
            match decoded {
                Ok(Decoded::Event(raw)) => b.event(raw),
                Ok(Decoded::Other(name)) => b.other(name),
                Err(e) => {
                    let at = match s.origin {
                        Origin::File(base) => format!("byte {}", base + r.start),
                        Origin::Unpacked(at) => {
                            format!("byte {} of the data unpacked from byte {at}", r.start)
                        }
                    };
                    b.malformed(format!("{}, record at {at}: {e}", s.what));
                }
            }
        }
        b.finish("records").map_err(|e| e.to_string())
    }

    /// The flags of a BUFFER FLYRECORD section (whether its CPU data is compressed).
    fn flyrecord_flags(&self, at: u64, name: &str) -> R<u16> {
        let mut c = self.file_cur(at, format!("buffer `{name}` section header"))?;
        let (_, flags, _) = section_header(&mut c)?;
        Ok(flags)
    }

    fn cpu_data(&mut self, cd: &CpuData, compressed: bool, what: &str) -> R<Cow<'a, [u8]>> {
        let end = cd.offset.checked_add(cd.size);
        if end.is_none_or(|e| e > self.bytes.len() as u64) {
            return Err(format!(
                "{what}: {} bytes at byte {} run past the file's end ({} bytes): the file is cut short or corrupt",
                cd.size,
                cd.offset,
                self.bytes.len()
            ));
        }
        let mut c = self.file_cur(cd.offset, what)?;
        if compressed {
            // The size trace-cmd writes leaves out the chunk count: the chunks are read from
            // the offset on, as trace-input.c reads them.
            self.chunks(c).map(Cow::Owned)
        } else {
            Ok(Cow::Borrowed(c.sub(cd.size, "CPU data", what)?.buf))
        }
    }
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

/// pid → comm as `trace-cmd report` names the task running at each event: the saved
/// cmdlines, then (libtraceevent's sched plugin) names of `sched_switch` and `sched_wakeup`
/// events for PIDs not known yet.
struct Comms(HashMap<u32, String>);

impl Comms {
    fn new(cmdlines: &str) -> Comms {
        let mut m = HashMap::new();
        for line in cmdlines.lines() {
            // `%d %[^\n]`; libtraceevent stops at the first line that is not that.
            let Some((pid, comm)) = line.split_once(' ') else {
                break;
            };
            let Ok(pid) = pid.trim().parse::<i64>() else {
                break;
            };
            if comm.is_empty() {
                break;
            }
            if let Ok(pid) = u32::try_from(pid) {
                if pid != 0 {
                    m.entry(pid).or_insert_with(|| comm.to_string());
                }
            }
        }
        Comms(m)
    }

    fn learn(&mut self, pid: u32, comm: &Option<String>) {
        if let (Some(c), true) = (comm, pid != 0) {
            self.0.entry(pid).or_insert_with(|| c.clone());
        }
    }

    /// The name the line header shows (`<idle>` for PID 0, `<...>` if unknown).
    fn header(&self, pid: u32) -> String {
        match pid {
            0 => "<idle>".into(),
            p => self
                .0
                .get(&p)
                .map_or_else(|| "<...>".into(), |c| c.trim().to_string()),
        }
    }
}

/// A record's place in its stream.
#[derive(Clone, Copy, Debug)]
struct Rec {
    ts: u64,
    start: usize,
    len: usize,
    /// Events lost before it (the first record of a page flagged with missed events).
    lost: u64,
}

/// One CPU's records.
struct Stream<'a> {
    cpu: u32,
    origin: Origin,
    what: String,
    data: Cow<'a, [u8]>,
    records: Vec<Rec>,
    next: usize,
}

impl Stream<'_> {
    /// Splits the data into pages and the pages into records (`kbuffer-parse.c`); a page
    /// that does not parse is counted as malformed, with where it is, and skipped from there.
    fn split(&mut self, page_size: u64, l: PageLayout, big: bool, b: &mut Builder) {
        let page_size = page_size.min(self.data.len() as u64) as usize;
        if page_size <= l.data_offset {
            let at = match self.origin {
                Origin::File(base) => format!("byte {base}"),
                Origin::Unpacked(at) => format!("the data unpacked from byte {at}"),
            };
            b.malformed(format!(
                "{} at {at}: page size {page_size} leaves no room for events after the page header ({} bytes)",
                self.what, l.data_offset
            ));
            return;
        }
        let mut start = 0;
        while start < self.data.len() {
            let end = (start + page_size).min(self.data.len());
            if let Err(e) = self.page(start, end, l, big) {
                let at = match self.origin {
                    Origin::File(base) => format!("byte {}", base + start),
                    Origin::Unpacked(at) => {
                        format!("byte {start} of the data unpacked from byte {at}")
                    }
                };
                b.malformed(format!("{}, page at {at}: {e}", self.what));
            }
            start = end;
        }
    }

    fn page(&mut self, start: usize, end: usize, l: PageLayout, big: bool) -> R<()> {
        let page = &self.data[start..end];
        if page.len() < l.data_offset {
            return Err(format!(
                "{} bytes, fewer than the page header's {}",
                page.len(),
                l.data_offset
            ));
        }
        let mut ts = rd(&page[l.ts_offset..l.ts_offset + 8], big);
        let flags = rd(&page[l.commit_offset..l.commit_offset + l.commit_size], big);
        let size = (flags & COMMIT_MASK) as usize;
        let data = &page[l.data_offset..];
        if size > data.len() {
            return Err(format!(
                "its commit says {size} bytes of events, but the page holds {}",
                data.len()
            ));
        }
        let mut lost = 0;
        if flags & MISSED_EVENTS != 0 {
            lost = 1;
            if flags & MISSED_STORED != 0 {
                if let Some(w) = data.get(size..size + l.commit_size) {
                    lost = rd(w, big).max(1);
                }
            }
        }
        let data = &data[..size];
        let base = start + l.data_offset;
        let mut i = 0;
        while i < size {
            let Some(h) = data.get(i..i + 4) else {
                return Err(format!("an event header cut at byte {i} of {size}"));
            };
            let w = rd(h, big) as u32;
            let (type_len, delta) = if big {
                (w >> 27, (w & ((1 << 27) - 1)) as u64)
            } else {
                (w & 0x1f, (w >> 5) as u64)
            };
            let word = |at: usize| data.get(at..at + 4).map(|b| rd(b, big));
            match type_len {
                TYPE_PADDING => {
                    // With no time delta, the rest of the page is empty (the kernel's
                    // rb_null_event); else a discarded event of the length given, whose delta
                    // counts (as kbuffer counts it).
                    if delta == 0 {
                        break;
                    }
                    ts = ts.wrapping_add(delta);
                    match word(i + 4) {
                        Some(n) => i = i.saturating_add(4).saturating_add(n as usize),
                        None => break,
                    }
                }
                TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                    let ext = word(i + 4)
                        .ok_or_else(|| format!("a time extension cut at byte {i} of {size}"))?;
                    let t = (ext << TS_SHIFT).wrapping_add(delta);
                    ts = if type_len == TYPE_TIME_STAMP {
                        t | (ts & TS_MSB)
                    } else {
                        ts.wrapping_add(t)
                    };
                    i += 8;
                }
                _ => {
                    ts = ts.wrapping_add(delta);
                    let (from, len) = if type_len == 0 {
                        let n = word(i + 4)
                            .ok_or_else(|| format!("an event length cut at byte {i} of {size}"))?;
                        if n < 4 {
                            return Err(format!("an event at byte {i} says its length is {n}"));
                        }
                        (i + 8, ((n as usize - 4) + 3) & !3)
                    } else {
                        (i + 4, type_len as usize * 4)
                    };
                    if from + len > size {
                        return Err(format!(
                            "an event of {len} bytes at byte {i} runs past the page's {size} bytes of events"
                        ));
                    }
                    self.records.push(Rec {
                        ts,
                        start: base + from,
                        len,
                        lost: std::mem::take(&mut lost),
                    });
                    i = from + len;
                }
            }
        }
        Ok(())
    }
}

enum Decoded<'a> {
    Event(Raw),
    Other(&'a str),
}

/// One record → a raw event of the model, or the name of another kind.
fn decode<'t>(
    rec: &[u8],
    ts: u64,
    cpu: u32,
    types: &'t HashMap<u32, EventType>,
    common_type: &Field,
    big: bool,
    comms: &mut Comms,
) -> Result<Decoded<'t>, String> {
    let id = common_type
        .int(rec, big)
        .ok_or_else(|| format!("{} bytes, whose event type cannot be read", rec.len()))?;
    let Some(t) = types.get(&(id as u32)) else {
        return Err(format!(
            "event type {id}, which no format in the file describes"
        ));
    };
    let name = t.name.as_str();
    let err = |e: String| format!("{name}: {e}");
    let int = |f: &Field, n: &str| -> Result<i128, String> {
        f.int(rec, big).ok_or_else(|| {
            err(format!(
                "`{n}` does not fit in the record's {} bytes",
                rec.len()
            ))
        })
    };
    let pid = |f: &Field, n: &str| -> Result<u32, String> {
        let v = int(f, n)?;
        u32::try_from(v).map_err(|_| err(format!("`{n}={v}` is not a PID")))
    };
    let u32_ = |f: &Field, n: &str| -> Result<u32, String> {
        let v = int(f, n)?;
        u32::try_from(v).map_err(|_| err(format!("`{n}={v}` is out of range")))
    };
    let prio = |f: &Option<Field>| -> Option<i32> {
        f.as_ref()
            .and_then(|f| f.int(rec, big))
            .and_then(|v| i32::try_from(v).ok())
    };
    let comm = |f: &Option<Field>| f.as_ref().and_then(|f| f.text(rec, big));
    let kind = match &t.decoder {
        Decoder::Other => return Ok(Decoded::Other(name)),
        Decoder::Broken(e) => return Err(err(e.clone())),
        Decoder::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
            letters,
        } => {
            let state = int(prev_state, "prev_state")? as u64;
            let mut text = String::new();
            for (i, l) in letters.iter().enumerate() {
                if state & (1u64 << i) != 0 {
                    if !text.is_empty() {
                        text.push('|');
                    }
                    text.push(*l);
                }
            }
            if text.is_empty() {
                text.push('R');
            }
            RawKind::Switch {
                prev: Ref {
                    pid: pid(prev_pid, "prev_pid")?,
                    comm: comm(prev_comm),
                    prio: prio(prev_prio),
                },
                state: parse_prev_state(&text).map_err(err)?,
                next: Ref {
                    pid: pid(next_pid, "next_pid")?,
                    comm: comm(next_comm),
                    prio: prio(next_prio),
                },
            }
        }
        Decoder::Wake {
            waking,
            new,
            comm: c,
            pid: p,
            prio: pr,
            target_cpu,
        } => {
            let task = Ref {
                pid: pid(p, "pid")?,
                comm: comm(c),
                prio: prio(pr),
            };
            let cpu = match target_cpu {
                Some(f) => u32_(f, "target_cpu")?,
                None => cpu,
            };
            if *new {
                RawKind::WakeupNew { task, cpu }
            } else {
                RawKind::Wake {
                    task,
                    cpu,
                    waking: *waking,
                }
            }
        }
        Decoder::Fork {
            parent_comm,
            parent_pid,
            child_comm,
            child_pid,
        } => RawKind::Fork {
            parent: Ref {
                pid: pid(parent_pid, "parent_pid")?,
                comm: comm(parent_comm),
                prio: None,
            },
            child: Ref {
                pid: pid(child_pid, "child_pid")?,
                comm: comm(child_comm),
                prio: None,
            },
        },
        Decoder::Exit {
            comm: c,
            pid: p,
            prio: pr,
        } => RawKind::Exit {
            task: Ref {
                pid: pid(p, "pid")?,
                comm: comm(c),
                prio: prio(pr),
            },
        },
        Decoder::Migrate {
            comm: c,
            pid: p,
            prio: pr,
            orig,
            dest,
        } => RawKind::Migrate {
            task: Ref {
                pid: pid(p, "pid")?,
                comm: comm(c),
                prio: prio(pr),
            },
            orig: u32_(orig, "orig_cpu")?,
            dest: u32_(dest, "dest_cpu")?,
        },
        Decoder::Freq { state, cpu: c } => RawKind::Freq {
            cpu: u32_(c, "cpu_id")?,
            khz: u64::try_from(int(state, "state")?).map_err(|_| err("negative `state`".into()))?,
        },
        Decoder::Idle { state, cpu: c } => {
            let s = int(state, "state")?;
            RawKind::Idle {
                cpu: u32_(c, "cpu_id")?,
                // PWR_EVENT_EXIT is (u32)-1.
                state: u32::try_from(s).ok().filter(|&s| s < u32::MAX),
            }
        }
        Decoder::Print { buf } => {
            let text = buf
                .text(rec, big)
                .ok_or_else(|| err("`buf` lies past the record's end".into()))?;
            match import::parse_mark(&text).map_err(err)? {
                Some(k) => k,
                None => return Ok(Decoded::Other(name)),
            }
        }
    };
    import::check_cpus(&kind).map_err(err)?;
    let current_pid = match &t.common_pid {
        Some(f) => pid(f, "common_pid")?,
        None => return Err(err("its format has no `common_pid` field".into())),
    };
    let flags = t
        .common_flags
        .as_ref()
        .and_then(|f| f.int(rec, big))
        .unwrap_or(0) as u64;
    let header = comms.header(current_pid);
    // What libtraceevent's sched plugin learns while printing this event.
    match &kind {
        RawKind::Switch { prev, next, .. } => {
            comms.learn(prev.pid, &prev.comm);
            comms.learn(next.pid, &next.comm);
        }
        RawKind::Wake {
            task,
            waking: false,
            ..
        }
        | RawKind::WakeupNew { task, .. } => comms.learn(task.pid, &task.comm),
        _ => {}
    }
    Ok(Decoded::Event(Raw {
        ts,
        cpu,
        current: Ref {
            pid: current_pid,
            comm: (!header.is_empty()).then_some(header),
            prio: None,
        },
        tgid: None,
        irq: flags & (TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ) != 0,
        kind,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_state_letters_come_from_the_format_text() {
        let f = parse_format(
            "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n\nprint fmt: \"x\", __print_flags(REC->prev_state & 255, \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }, { 0x04, \"T\" }) : \"R\"",
            "sched",
        )
        .unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
        let pid = &f.fields["prev_pid"];
        assert_eq!((pid.offset, pid.size, pid.signed), (24, 4, true));
        assert_eq!(f.fields["prev_comm"].size, 16);
        assert_eq!(f.fields["name"].loc, Loc::Data);
        assert_eq!(state_letters(&f.print_fmt), vec!['S', 'D', 'T']);
        // A kernel before 4.14: bit 6 is `x`, bit 8 `W`, bit 10 `N`.
        let old = "__print_flags(REC->prev_state & (2048-1), \"|\", { 1, \"S\"} , { 2, \"D\" }, { 4, \"T\" }, { 8, \"t\" }, { 16, \"Z\" }, { 32, \"X\" }, { 64, \"x\" }, { 128, \"K\" }, { 256, \"W\" }, { 512, \"P\" }, { 1024, \"N\" })";
        assert_eq!(state_letters(old).iter().collect::<String>(), "SDTtZXxKWPN");
        assert_eq!(state_letters("").iter().collect::<String>(), "SDTtXZPI");
    }

    #[test]
    fn field_values_by_endianness_sign_and_location() {
        let f = |offset, size, signed, loc| Field {
            offset,
            size,
            signed,
            loc,
        };
        let rec = [0xfe, 0xff, 0xff, 0xff, 8, 0, 3, 0, b'a', b'b', b'c', 0];
        assert_eq!(f(0, 4, true, Loc::Fixed).int(&rec, false), Some(-2));
        assert_eq!(
            f(0, 4, false, Loc::Fixed).int(&rec, false),
            Some(0xffff_fffe)
        );
        assert_eq!(f(0, 2, false, Loc::Fixed).int(&rec, true), Some(0xfeff));
        assert_eq!(f(10, 4, false, Loc::Fixed).int(&rec, false), None);
        // __data_loc: offset 8, length 3.
        assert_eq!(
            f(4, 4, false, Loc::Data).text(&rec, false).as_deref(),
            Some("abc")
        );
        // __rel_loc: from the word's end (8) + 0.
        let rel = [0, 0, 4, 0, b'x', b'y', 0, 0];
        assert_eq!(
            f(0, 4, false, Loc::Rel).text(&rel, false).as_deref(),
            Some("xy")
        );
        assert_eq!(strtoll("0x10"), 16);
        assert_eq!(strtoll("-12"), -12);
        assert_eq!(mul_u64_u32_shr(1000, 3, 1), 1500);
    }

    /// A page as the kernel writes it, in either byte order: ts 1000, an 8-byte commit.
    fn page(big: bool) -> Vec<u8> {
        let w32 = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w64 = |v: u64| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let hdr = |type_len: u32, delta: u32| {
            w32(if big {
                (type_len << 27) | delta
            } else {
                (delta << 5) | type_len
            })
        };
        let mut e: Vec<u8> = Vec::new();
        // A 4-byte event at +5.
        e.extend(hdr(1, 5));
        e.extend([1, 2, 3, 4]);
        // TIME_EXTEND of (1 << 27) + 3.
        e.extend(hdr(TYPE_TIME_EXTEND, 3));
        e.extend(w32(1));
        // An event with a length word: 8 bytes of data.
        e.extend(hdr(0, 0));
        e.extend(w32(12));
        e.extend([9; 8]);
        // An absolute stamp of 7 << 27 | 1, then an event at +2.
        e.extend(hdr(TYPE_TIME_STAMP, 1));
        e.extend(w32(7));
        e.extend(hdr(2, 2));
        e.extend([5; 8]);
        // A discarded event (padding with a delta): its length word counts itself and 4
        // bytes after it. Then an event at +1.
        e.extend(hdr(TYPE_PADDING, 4));
        e.extend(w32(8));
        e.extend([0xee; 4]);
        e.extend(hdr(1, 1));
        e.extend([6; 4]);
        // The rest of the page is empty.
        e.extend(hdr(TYPE_PADDING, 0));
        e.extend(w32(0xdead));
        let mut page = Vec::new();
        page.extend(w64(1000));
        page.extend(w64(e.len() as u64 | MISSED_EVENTS | MISSED_STORED));
        page.extend(&e);
        // The count of missed events, after the data.
        page.extend(w64(42));
        page
    }

    #[test]
    fn a_page_of_events_with_time_extends_stamps_and_padding() {
        let l = PageLayout {
            ts_offset: 0,
            commit_offset: 8,
            commit_size: 8,
            data_offset: 16,
        };
        for big in [false, true] {
            let mut s = Stream {
                cpu: 0,
                origin: Origin::File(0),
                what: "test".into(),
                data: Cow::Owned(page(big)),
                records: Vec::new(),
                next: 0,
            };
            let mut b = Builder::new();
            s.split(4096, l, big, &mut b);
            assert_eq!(b.stats.malformed, 0, "{:?}", b.stats.malformed_examples);
            let got: Vec<(u64, usize, u64)> =
                s.records.iter().map(|r| (r.ts, r.len, r.lost)).collect();
            let stamp = (7 << 27) + 1;
            assert_eq!(
                got,
                [
                    (1005, 4, 42),
                    (1005 + (1 << 27) + 3, 8, 0),
                    (stamp + 2, 8, 0),
                    (stamp + 2 + 4 + 1, 4, 0),
                ],
                "big-endian: {big}"
            );
            let first = &s.data[s.records[0].start..][..4];
            assert_eq!(first, [1, 2, 3, 4]);
            // A commit larger than the page is refused, with where.
            let mut bad = s.data.to_vec();
            bad[8..16].copy_from_slice(&if big {
                5000u64.to_be_bytes()
            } else {
                5000u64.to_le_bytes()
            });
            s.data = Cow::Owned(bad);
            s.records.clear();
            s.split(4096, l, big, &mut b);
            assert_eq!(b.stats.malformed, 1);
            assert!(
                b.stats.malformed_examples[0]
                    .starts_with("test, page at byte 0: its commit says 5000 bytes"),
                "{:?}",
                b.stats.malformed_examples
            );
        }
    }

    const SWITCH_FORMAT: &str = "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\nprint fmt: \"prev_comm=%s\", __print_flags(REC->prev_state & 255, \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }) : \"R\"\n";
    const WAKING_FORMAT: &str = "name: sched_waking\nID: 375\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\nprint fmt: \"comm=%s\"\n";
    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    /// A whole version 6 file in either byte order: one CPU of four, with options (a CPU
    /// count and a time offset), a sched_waking in hardirq context and a sched_switch.
    fn v6_file(big: bool) -> Vec<u8> {
        let w16 = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w32 = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w64 = |v: u64| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let comm = |s: &str| {
            let mut c = [0u8; 16];
            c[..s.len()].copy_from_slice(s.as_bytes());
            c
        };
        let mut f: Vec<u8> = Vec::new();
        f.extend(MAGIC);
        f.extend(b"tracing6\0");
        f.extend([big as u8, 8]);
        f.extend(w32(4096));
        f.extend(b"header_page\0");
        f.extend(w64(HEADER_PAGE.len() as u64));
        f.extend(HEADER_PAGE.as_bytes());
        f.extend(b"header_event\0");
        f.extend(w64(4));
        f.extend(b"none");
        f.extend(w32(0)); // ftrace formats
        f.extend(w32(1)); // one system
        f.extend(b"sched\0");
        f.extend(w32(3));
        // A format that cannot be read (no ID) is left out; its events never come.
        for fmt in [SWITCH_FORMAT, WAKING_FORMAT, "name: sched_oops\nformat:\n"] {
            f.extend(w64(fmt.len() as u64));
            f.extend(fmt.as_bytes());
        }
        f.extend(w32(0)); // kallsyms
        f.extend(w32(0)); // printk formats
        let cmdlines = "100 alpha\n200 beta\n";
        f.extend(w64(cmdlines.len() as u64));
        f.extend(cmdlines.as_bytes());
        f.extend(w32(1)); // CPUs with data
        f.extend(b"options  \0");
        f.extend(w16(OPT_CPUCOUNT));
        f.extend(w32(4));
        f.extend(w32(4));
        f.extend(w16(OPT_OFFSET));
        f.extend(w32(8));
        f.extend(b"1000000\0");
        f.extend(w16(OPT_DONE));
        f.extend(b"flyrecord\0");
        let table = f.len();
        f.extend([0; 16]);
        f.resize(f.len().next_multiple_of(4096), 0);
        let at = f.len() as u64;
        f[table..table + 8].copy_from_slice(&w64(at));
        f[table + 8..table + 16].copy_from_slice(&w64(4096));
        let hdr = |type_len: u32, delta: u32| {
            w32(if big {
                (type_len << 27) | delta
            } else {
                (delta << 5) | type_len
            })
        };
        let mut e: Vec<u8> = Vec::new();
        // sched_waking of beta by alpha, in hardirq context, at +10.
        e.extend(hdr(9, 10));
        e.extend(w16(375));
        e.extend([TRACE_FLAG_HARDIRQ as u8, 1]);
        e.extend(w32(100));
        e.extend(comm("beta"));
        e.extend(w32(200));
        e.extend(w32(120));
        e.extend(w32(0));
        // alpha sleeps, beta runs, at +20.
        e.extend(hdr(16, 20));
        e.extend(w16(372));
        e.extend([0, 1]);
        e.extend(w32(100));
        e.extend(comm("alpha"));
        e.extend(w32(100));
        e.extend(w32(120));
        e.extend(w64(1));
        e.extend(comm("beta"));
        e.extend(w32(200));
        e.extend(w32(110));
        f.extend(w64(5000));
        f.extend(w64(e.len() as u64));
        f.extend(&e);
        f.resize(at as usize + 4096, 0);
        f
    }

    #[test]
    fn a_whole_file_in_either_byte_order_reads_the_same() {
        let le = parse(&v6_file(false)).unwrap();
        let be = parse(&v6_file(true)).unwrap();
        assert_eq!(le, be);
        assert_eq!(le.ncpus, 4);
        assert_eq!(le.stats.malformed, 0, "{:?}", le.stats.malformed_examples);
        let names: Vec<_> = le
            .tasks
            .iter()
            .map(|t| (t.pid, t.comm.as_str(), t.prio))
            .collect();
        assert_eq!(names, [(100, "alpha", 120), (200, "beta", 110)]);
        // The OFFSET option's 1 ms is added.
        let ts: Vec<u64> = le.events.iter().map(|e| e.ts).collect();
        assert_eq!(ts, [1_005_010, 1_005_030]);
        assert_eq!(
            le.events[0].kind,
            super::super::EventKind::Waking {
                waker: Some(0),
                task: 1,
                target_cpu: 0,
                irq: true
            }
        );
        assert_eq!(
            le.events[1].kind,
            super::super::EventKind::Switch {
                prev: Some(0),
                prev_state: super::super::PrevState::Sleep,
                next: Some(1)
            }
        );
    }

    #[test]
    fn headers_that_are_not_a_trace_dat_are_refused_with_where() {
        let e = parse(b"\x17\x08\x44tracinX6\0").unwrap_err();
        assert!(e.contains("file header, byte 10"), "{e}");
        let e = parse(b"\x17\x08\x44tracing5\0\0\x08\0\x10\0\0").unwrap_err();
        assert!(e.contains("version 5"), "{e}");
        let e = parse(b"\x17\x08\x44tracing7\0\0\x08\0\x10\0\0lz4\x001\0").unwrap_err();
        assert!(e.contains("`lz4`"), "{e}");
        let e = parse(b"\x17\x08\x44tracing6\0\0\x08\0\x10\0\0header_page\0").unwrap_err();
        assert!(e.contains("HEADER INFO, byte 30: header_page size"), "{e}");
    }
}

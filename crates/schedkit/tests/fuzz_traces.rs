//! A fuzzer for the trace importer: stretches of the recorded traces in `traces/` (tracefs
//! text, `trace-cmd report` plugin, `-N` and `-R` output, `perf sched script`), mutated, fed
//! to `trace::import::parse`. Nothing may panic; every malformed line is reported with its
//! line number; and whatever is accepted must go through the rest of the pipeline: figures,
//! the rebuilt workload (whose TOML must parse), the ftrace writer (whose text must read back
//! as the same events) and the Perfetto writer. The trace.dat files of `traces/` (versions 6
//! and 7, zstd and zlib) are mutated byte by byte (bytes set and bit-flipped, words set to
//! extremes, stretches deleted, duplicated and copied over others, the file cut), half the
//! time in their last 16 KiB where the CPU data lies, and fed to `input::parse_bytes`: each
//! is read (its damage counted with the byte it is at) or refused with an error, never a
//! panic, and what is read goes through the same pipeline.
//!
//! The test command runs a short pass (`SCHEDKIT_FUZZ_CASES`, default 2 000 cases of text and
//! 300 of trace.dat). The long pass, as run for issue 9:
//!
//! ```sh
//! SCHEDKIT_FUZZ_CASES=1000000 cargo test --release -p schedkit --features checks --test fuzz_traces -- --nocapture
//! ```

mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schedkit::trace::{self, import, input};
use std::sync::OnceLock;

fn corpus() -> &'static Vec<Vec<String>> {
    static C: OnceLock<Vec<Vec<String>>> = OnceLock::new();
    C.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces");
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "txt"))
            .collect();
        files.sort();
        files
            .iter()
            .map(|p| {
                std::fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
            .collect()
    })
}

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "65535",
    "65536",
    "18446744073709551615",
    "99999999999999999999999",
    "0.000000001",
    "",
    "<...>",
    "==>",
    "[",
    "]",
    "=",
    ":",
    "|",
];

#[derive(Clone, Debug)]
enum Mutation {
    SetByte(usize, u8),
    Delete(usize, usize),
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    /// Replace the n-th run of digits with an extreme.
    Number(usize, usize),
    /// Cut the text at a position (a buffer dumped mid-line).
    Truncate(usize),
    /// Put a line of another file (another format) in.
    Splice(usize, usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::SetByte(p, b)),
        (any::<usize>(), 1usize..24).prop_map(|(p, n)| Mutation::Delete(p, n)),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<usize>(), 0..EXTREMES.len()).prop_map(|(n, e)| Mutation::Number(n, e)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(a, b, c)| Mutation::Splice(a, b, c)),
    ]
}

fn apply(lines: &mut Vec<String>, m: &Mutation) {
    if lines.is_empty() {
        return;
    }
    let n = lines.len();
    match *m {
        Mutation::SetByte(p, v) => {
            let l = &mut lines[p % n];
            let mut b = l.as_bytes().to_vec();
            if !b.is_empty() {
                let i = (p / n) % b.len();
                b[i] = v;
            }
            *l = String::from_utf8_lossy(&b).into_owned();
        }
        Mutation::Delete(p, k) => {
            let l = &mut lines[p % n];
            let mut b = l.as_bytes().to_vec();
            if !b.is_empty() {
                let i = (p / n) % b.len();
                b.drain(i..(i + k).min(b.len()));
            }
            *l = String::from_utf8_lossy(&b).into_owned();
        }
        Mutation::DeleteLine(i) => {
            lines.remove(i % n);
        }
        Mutation::DuplicateLine(i) => {
            let l = lines[i % n].clone();
            lines.insert(i % n, l);
        }
        Mutation::SwapLines(a, b) => lines.swap(a % n, b % n),
        Mutation::Number(k, e) => {
            let i = k % n;
            let l = &lines[i];
            let spans: Vec<(usize, usize)> = {
                let b = l.as_bytes();
                let mut v = Vec::new();
                let mut j = 0;
                while j < b.len() {
                    if b[j].is_ascii_digit() {
                        let s = j;
                        while j < b.len() && b[j].is_ascii_digit() {
                            j += 1;
                        }
                        v.push((s, j));
                    } else {
                        j += 1;
                    }
                }
                v
            };
            if !spans.is_empty() {
                let (s, t) = spans[(k / n) % spans.len()];
                lines[i].replace_range(s..t, EXTREMES[e]);
            }
        }
        Mutation::Truncate(p) => {
            let i = p % n;
            lines.truncate(i + 1);
            let l = &mut lines[i];
            let mut cut = (p / n) % (l.len() + 1);
            while !l.is_char_boundary(cut) {
                cut -= 1;
            }
            l.truncate(cut);
        }
        Mutation::Splice(f, k, at) => {
            let c = corpus();
            let other = &c[f % c.len()];
            if !other.is_empty() {
                lines.insert(at % (n + 1), other[k % other.len()].clone());
            }
        }
    }
}

fn cases() -> u32 {
    cases_or(2_000)
}

/// `SCHEDKIT_FUZZ_CASES`, or `default` cases.
fn cases_or(default: u32) -> u32 {
    std::env::var("SCHEDKIT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Everything downstream of an accepted trace. `exact`: the ftrace text written must read
/// back as exactly the same events (for the recordings as they are; a mutated trace may
/// contradict itself in ways a re-read resolves differently, e.g. a CPU's first line naming a
/// task that a later line says was idle, so for those every written line must parse and no
/// event may be lost).
fn pipeline(text: &str, exact: bool) -> Result<bool, String> {
    let t = match import::parse(text) {
        Ok(t) => t,
        Err(e) => {
            let e = e.to_string();
            if e.is_empty() {
                return Err("an empty error".into());
            }
            return Ok(false);
        }
    };
    for ex in &t.stats.malformed_examples {
        if !ex.starts_with("line ") {
            return Err(format!(
                "a malformed line reported without its number: {ex}"
            ));
        }
    }
    downstream(&t, exact)
}

/// What [`pipeline`] checks of an accepted trace, whatever it was read from.
fn downstream(t: &trace::Trace, exact: bool) -> Result<bool, String> {
    if t.events.windows(2).any(|w| w[0].ts > w[1].ts) {
        return Err("events not in time order".into());
    }
    let f = trace::figures::figures(t);
    if !(f.busy_cpu_s.is_finite() && f.idle_fraction.is_finite()) {
        return Err("a figure is not finite".into());
    }
    let prices = trace::replay::OpPrices {
        syscall_ns: 100,
        fork_ns: 1000,
        exit_ns: 1000,
        switch_ns: 500,
        ipi_send_ns: 2000,
        tick_ppm: 400,
        timer_entry_ns: 1000,
        idle_exit_ns: 3000,
        timer_irq_ns: 2000,
        cpus: 2,
    };
    if let Err(e) = trace::replay::workload(t, "fuzz", &prices) {
        if !e.contains("more than the simulator's limit") {
            return Err(format!("the rebuilt workload does not build: {e}"));
        }
    }
    let text2 = trace::ftrace::to_string(t);
    let back = import::parse(&text2).map_err(|e| format!("written text unreadable: {e}"))?;
    if back.stats.malformed + back.stats.truncated_edges > 0 {
        return Err(format!(
            "written text has unreadable lines: {:?}",
            back.stats
        ));
    }
    let same_figures = || {
        let fb = trace::figures::figures(&back);
        (
            fb.context_switches,
            fb.migrations,
            fb.wakeups,
            fb.busy_cpu_s,
            fb.forks,
        ) == (
            f.context_switches,
            f.migrations,
            f.wakeups,
            f.busy_cpu_s,
            f.forks,
        )
    };
    if back.events.len() < t.events.len() || (exact && !same_figures()) {
        return Err(format!(
            "ftrace round trip: {} events became {} ({:?})",
            t.events.len(),
            back.events.len(),
            back.stats
        ));
    }
    let _ = trace::perfetto::encode(t);
    Ok(true)
}

#[test]
fn mutated_traces_are_read_or_refused_never_crash() {
    let files = corpus();
    assert!(files.len() >= 4, "traces/ holds the corpus");
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u64);
    let strategy = (
        0..files.len(),
        any::<usize>(),
        4usize..80,
        proptest::collection::vec(mutation(), 1..6),
    );
    common::run(
        &mut runner,
        "trace",
        "txt",
        &strategy,
        |(f, start, len, muts)| {
            let file = &files[f];
            let s = start % file.len();
            let mut lines: Vec<String> = file[s..(s + len).min(file.len())].to_vec();
            for m in &muts {
                apply(&mut lines, m);
            }
            let text = lines.join("\n");
            common::input(text.as_bytes());
            match pipeline(&text, false) {
                Ok(true) => accepted.set(accepted.get() + 1),
                Ok(false) => {}
                Err(e) => prop_assert!(false, "{e}\n--- input:\n{text}"),
            }
            Ok(())
        },
    );
    eprintln!(
        "trace fuzz: {} cases, {} accepted and carried through the pipeline",
        cases(),
        accepted.get()
    );
    assert!(accepted.get() > 0);
}

#[test]
fn every_shipped_trace_reads_cleanly_and_the_trace_cmd_forms_agree() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces");
    let load = |n: &str| input::load(std::path::Path::new(&format!("{dir}/{n}"))).unwrap();
    for n in [
        "pipe-vm.txt",
        "messaging-vm.txt",
        "trace-cmd-plugin.txt",
        "trace-cmd-N.txt",
        "trace-cmd-R.txt",
        "perf-sched-script.txt",
    ] {
        let t = load(n);
        assert_eq!(
            t.stats.malformed, 0,
            "{n}: {:?}",
            t.stats.malformed_examples
        );
        assert!(pipeline(
            &std::fs::read_to_string(format!("{dir}/{n}")).unwrap(),
            true
        )
        .unwrap());
    }
    // One recording printed three ways gives one trace.
    let plugin = trace::figures::figures(&load("trace-cmd-plugin.txt"));
    for n in ["trace-cmd-N.txt", "trace-cmd-R.txt"] {
        let f = trace::figures::figures(&load(n));
        assert_eq!(f.context_switches, plugin.context_switches, "{n}");
        assert_eq!(f.busy_cpu_s, plugin.busy_cpu_s, "{n}");
        assert_eq!(f.forks, plugin.forks, "{n}");
        assert_eq!(f.wakeups, plugin.wakeups, "{n}");
    }
}

/// The trace.dat files of `traces/` (a `.dat.gz` unpacked) and a zstd-compressed text trace,
/// by name.
fn dat_corpus() -> &'static Vec<(String, Vec<u8>)> {
    static C: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    C.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces");
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.to_string_lossy();
                n.ends_with(".dat") || n.ends_with(".dat.gz")
            })
            .collect();
        files.sort();
        let mut out: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|p| {
                let mut b = std::fs::read(p).unwrap();
                if p.extension().is_some_and(|e| e == "gz") {
                    b = input::gunzip(&b, 1 << 30).unwrap();
                }
                (p.file_name().unwrap().to_string_lossy().into_owned(), b)
            })
            .collect();
        // A zstd-compressed text trace: the decoder under damaged frames too.
        let text = std::fs::read(format!("{dir}/trace-cmd-N.txt")).unwrap();
        out.push((
            "trace-cmd-N.txt.zst".into(),
            ruzstd::encoding::compress_to_vec(
                &text[..],
                ruzstd::encoding::CompressionLevel::Fastest,
            ),
        ));
        out
    })
}

const WORDS: &[u64] = &[
    0,
    1,
    3,
    0x7f,
    0xff,
    0x1000,
    0xffff,
    0x7fff_ffff,
    0xffff_ffff,
    0x8000_0000,
    0x0800_0000,
    u64::MAX,
    i64::MAX as u64,
];

#[derive(Clone, Debug)]
enum ByteMutation {
    Set(usize, u8),
    Flip(usize, u8),
    /// A little-endian word of 2, 4 or 8 bytes set to one of [`WORDS`].
    Word(usize, usize, usize),
    Delete(usize, usize),
    Duplicate(usize, usize),
    /// A stretch copied over another (a page over a page, a format over a format).
    Copy(usize, usize, usize),
    Truncate(usize),
}

/// A position: anywhere, or (`tail`) in the last 16 KiB, where the CPU data lies.
fn at(len: usize, p: usize, tail: bool) -> usize {
    if len == 0 {
        return 0;
    }
    if tail {
        len - 1 - p % len.min(16 << 10)
    } else {
        p % len
    }
}

fn byte_mutation() -> impl Strategy<Value = (bool, ByteMutation)> {
    let m = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| ByteMutation::Set(p, b)),
        (any::<usize>(), 0u8..8).prop_map(|(p, b)| ByteMutation::Flip(p, b)),
        (any::<usize>(), 0usize..3, 0..WORDS.len()).prop_map(|(p, w, v)| ByteMutation::Word(
            p,
            [2, 4, 8][w],
            v
        )),
        (any::<usize>(), 1usize..64).prop_map(|(p, n)| ByteMutation::Delete(p, n)),
        (any::<usize>(), 1usize..64).prop_map(|(p, n)| ByteMutation::Duplicate(p, n)),
        (any::<usize>(), any::<usize>(), 1usize..4096)
            .prop_map(|(a, b, n)| ByteMutation::Copy(a, b, n)),
        any::<usize>().prop_map(ByteMutation::Truncate),
    ];
    (any::<bool>(), m)
}

fn apply_bytes(b: &mut Vec<u8>, tail: bool, m: &ByteMutation) {
    let len = b.len();
    if len == 0 {
        return;
    }
    match *m {
        ByteMutation::Set(p, v) => b[at(len, p, tail)] = v,
        ByteMutation::Flip(p, bit) => b[at(len, p, tail)] ^= 1 << bit,
        ByteMutation::Word(p, n, v) => {
            let i = at(len, p, tail);
            let end = (i + n).min(len);
            let w = WORDS[v].to_le_bytes();
            b[i..end].copy_from_slice(&w[..end - i]);
        }
        ByteMutation::Delete(p, n) => {
            let i = at(len, p, tail);
            b.drain(i..(i + n).min(len));
        }
        ByteMutation::Duplicate(p, n) => {
            let i = at(len, p, tail);
            let s: Vec<u8> = b[i..(i + n).min(len)].to_vec();
            b.splice(i..i, s);
        }
        ByteMutation::Copy(from, to, n) => {
            let (f, t) = (at(len, from, tail), at(len, to, tail));
            let n = n.min(len - f).min(len - t);
            b.copy_within(f..f + n, t);
        }
        ByteMutation::Truncate(p) => b.truncate(at(len, p, tail)),
    }
}

#[test]
fn mutated_trace_dat_files_are_read_or_refused_never_crash() {
    let files = dat_corpus();
    assert!(files.len() >= 3, "traces/ holds the trace.dat files");
    for (name, b) in files {
        let t = input::parse_bytes(b).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(t.stats.malformed, 0, "{name}");
        assert!(downstream(&t, true).unwrap(), "{name}");
    }
    let cases = cases_or(300);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let (accepted, damaged) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    let strategy = (
        0..files.len(),
        proptest::collection::vec(byte_mutation(), 1..4),
    );
    common::run(&mut runner, "trace-dat", "dat", &strategy, |(f, muts)| {
        let (name, orig) = &files[f];
        let mut b = orig.clone();
        for (tail, m) in &muts {
            apply_bytes(&mut b, *tail, m);
        }
        common::input(&b);
        match input::parse_bytes(&b) {
            Ok(t) => {
                accepted.set(accepted.get() + 1);
                if t.stats.malformed > 0 {
                    damaged.set(damaged.get() + 1);
                }
                for ex in &t.stats.malformed_examples {
                    prop_assert!(
                        ex.contains("byte ") || ex.starts_with("line "),
                        "{name}: damage reported without where it is: {ex}"
                    );
                }
                if let Err(e) = downstream(&t, false) {
                    prop_assert!(false, "{name} {muts:?}: {e}");
                }
            }
            Err(e) => prop_assert!(!e.is_empty(), "{name} {muts:?}: an empty error"),
        }
        Ok(())
    });
    eprintln!(
        "trace.dat fuzz: {cases} cases, {} read ({} with damage counted), the rest refused",
        accepted.get(),
        damaged.get()
    );
    assert!(accepted.get() > 0);
}

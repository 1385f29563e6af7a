//! trace-cmd's binary trace.dat read directly, and gzip-compressed traces.
//!
//! The fixtures in `traces/` are one recording on the project VM (kernel 6.18, 2 vCPUs, clock
//! `local`): `perf bench sched pipe -l 200` run from `bash -c` (so exec and wait events too,
//! which the model does not use) between two writes to `trace_marker` (`B|pid|fixture_lock`,
//! `E|pid`), extracted with `trace-cmd extract` 3.1.6 with the formats of the `sched` and
//! `ftrace` systems only and no kallsyms (see docs/traces.md, "Recording"):
//!
//! - `trace-cmd-pipe.dat`: as extracted, file version 7 with zstd-compressed sections and CPU
//!   data (trace-cmd's default);
//! - `trace-cmd-pipe-zlib.dat`: `trace-cmd convert --compression zlib` of it (version 7, zlib);
//! - `trace-cmd-pipe-v6.dat.gz`: `trace-cmd convert --file-version 6 --compression none`, then
//!   `gzip -9`;
//! - `trace-cmd-pipe.txt.gz`: `trace-cmd report -t` of it (full ns time stamps), gzipped.

use schedkit::trace::{self, figures::figures, import, input, EventKind, Trace};
use std::io::Write;
use std::path::PathBuf;

fn path(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces")).join(name)
}

fn load(name: &str) -> Trace {
    input::load(&path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(path(name)).unwrap()
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// The events with the interrupt flag and the preemption depth cleared (`trace-cmd report`
/// prints no flags).
fn without_irq(t: &Trace) -> Vec<trace::Event> {
    t.events
        .iter()
        .cloned()
        .map(|mut e| {
            if let EventKind::Waking { irq, depth, .. } = &mut e.kind {
                *irq = false;
                *depth = None;
            }
            e
        })
        .collect()
}

const DATS: [&str; 3] = [
    "trace-cmd-pipe.dat",
    "trace-cmd-pipe-zlib.dat",
    "trace-cmd-pipe-v6.dat.gz",
];

#[test]
fn a_trace_dat_and_its_report_text_are_one_trace() {
    let text = load("trace-cmd-pipe.txt.gz");
    assert_eq!(
        text.stats.malformed, 0,
        "{:?}",
        text.stats.malformed_examples
    );
    for name in DATS {
        let dat = load(name);
        let s = &dat.stats;
        assert_eq!(s.malformed, 0, "{name}: {:?}", s.malformed_examples);
        assert_eq!((dat.ncpus, s.lost_events), (2, 0), "{name}");
        // Every record of the file, as the text has a line for each (and `cpus=2`).
        assert_eq!(s.lines + 1, text.stats.lines, "{name}");
        assert_eq!(s.other_events, text.stats.other_events, "{name}");
        assert_eq!(s.other_events.get("sched_process_exec"), Some(&2), "{name}");
        assert_eq!(
            (s.events, s.unknown_comms, s.pid_reuse, s.inferred_switches),
            (
                text.stats.events,
                text.stats.unknown_comms,
                text.stats.pid_reuse,
                text.stats.inferred_switches
            ),
            "{name}"
        );
        assert_eq!(dat.tasks, text.tasks, "{name}");
        assert_eq!(without_irq(&dat), without_irq(&text), "{name}");
        assert_eq!(figures(&dat), figures(&text), "{name}");
        assert_eq!((dat.start_ns, dat.end_ns), (text.start_ns, text.end_ns));
        // The binary file carries what the text leaves out: 13 of the 416 sched_waking
        // events fired in interrupt context (10 softirq, 3 hardirq, as `trace-cmd report -l`
        // shows them).
        let irq = dat
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Waking { irq: true, .. }))
            .count();
        assert_eq!(irq, 13, "{name}");
        // And each waking's preemption depth (`common_preempt_count`), which the text lacks.
        assert!(
            dat.events
                .iter()
                .all(|e| !matches!(e.kind, EventKind::Waking { depth: None, .. })),
            "{name}"
        );
        // The marker slice around the benchmark is a lock wait of the bash that ran it.
        let marks: Vec<_> = dat
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::LockWait { task, lock, begin } => {
                    Some((dat.tasks[*task].comm.as_str(), lock.as_str(), *begin))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            marks,
            [("bash", "fixture_lock", true), ("bash", "", false)],
            "{name}"
        );
    }
    // And the replay built from it is the text's.
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
    let w = |t: &Trace| {
        trace::replay::workload(t, "pipe", &prices)
            .unwrap()
            .1
            .toml()
    };
    let dat = load("trace-cmd-pipe.dat");
    // Not equal: the text says no wakeup came from an interrupt, the file says 13 did.
    assert_ne!(w(&dat), w(&text));
    let mut no_irq = dat.clone();
    no_irq.events = without_irq(&dat);
    assert_eq!(w(&no_irq), w(&text));
}

#[test]
fn gzip_compressed_text_reads_as_the_text() {
    let raw = bytes("pipe-vm.txt");
    let plain = import::parse(&String::from_utf8(raw.clone()).unwrap()).unwrap();
    assert_eq!(input::parse_bytes(&gzip(&raw)).unwrap(), plain);
    // Two gzip members one after the other (`cat a.gz b.gz`) are one stream.
    let cut = raw.len() / 2;
    let mut two = gzip(&raw[..cut]);
    two.extend(gzip(&raw[cut..]));
    assert_eq!(input::parse_bytes(&two).unwrap(), plain);
    // Through load(), as `schedkit replay` reads a file.
    let dir = std::env::temp_dir().join(format!("schedkit-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("pipe-vm.txt.gz");
    std::fs::write(&f, gzip(&raw)).unwrap();
    assert_eq!(input::load(&f).unwrap(), plain);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gzip_past_the_limit_cut_or_twice_is_refused() {
    let raw = bytes("pipe-vm.txt");
    let gz = gzip(&raw);
    let e = input::gunzip(&gz, 1000).unwrap_err();
    assert!(e.contains("more than"), "{e}");
    assert_eq!(input::gunzip(&gz, raw.len() as u64).unwrap(), raw);
    let e = input::parse_bytes(&gz[..gz.len() / 2]).unwrap_err();
    assert!(e.contains("gzip"), "{e}");
    let e = input::parse_bytes(&gzip(&gz)).unwrap_err();
    assert!(e.contains("twice"), "{e}");
    let e = input::parse_bytes(b"PERFILE2....").unwrap_err();
    assert!(e.contains("perf sched script"), "{e}");
}

#[test]
fn a_cut_trace_dat_is_refused_saying_where() {
    for name in DATS {
        let mut b = bytes(name);
        if name.ends_with(".gz") {
            b = input::gunzip(&b, 1 << 30).unwrap();
        }
        let whole = input::parse_bytes(&b).unwrap();
        let refused = |b: &[u8]| match input::parse_bytes(b) {
            Ok(t) => panic!("{name} cut to {} bytes read: {:?}", b.len(), t.stats),
            Err(e) => e,
        };
        // Cut in the CPU data and the options after it, in the metadata, in the header.
        for keep in [b.len() - 300, b.len() / 2, b.len() / 5, 40, 12, 3] {
            let e = refused(&b[..keep]);
            assert!(e.starts_with("trace.dat: "), "{name} cut at {keep}: {e}");
            assert!(
                e.contains("byte ") || e.contains("offset "),
                "{name} cut at {keep}: {e}"
            );
        }
        let e = refused(&b[..b.len() - 300]);
        assert!(e.contains("cut short"), "{name}: {e}");
        // The same, gzipped.
        let e = input::parse_bytes(&gzip(&b[..b.len() / 2])).unwrap_err();
        assert!(e.contains("(gzip-compressed) trace.dat: "), "{name}: {e}");
        // One more byte of padding at the end changes nothing.
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(input::parse_bytes(&longer).unwrap(), whole);
    }
}

#[test]
fn a_corrupt_trace_dat_is_refused_or_its_damage_counted() {
    let b = bytes("trace-cmd-pipe.dat");
    let set = |at: usize, v: &[u8]| {
        let mut c = b.clone();
        c[at..at + v.len()].copy_from_slice(v);
        c
    };
    // The version, the endianness byte, the compression's name.
    let e = input::parse_bytes(&set(10, b"8")).unwrap_err();
    assert!(e.contains("file version 8"), "{e}");
    let e = input::parse_bytes(&set(12, &[7])).unwrap_err();
    assert!(
        e.contains("endianness byte 7") && e.contains("byte 13"),
        "{e}"
    );
    let e = input::parse_bytes(&set(18, b"lz4x")).unwrap_err();
    assert!(e.contains("`lz4x`"), "{e}");
    // The first options offset pointing past the end.
    let opt = 18 + "zstd\x001.5.4\0".len();
    let e = input::parse_bytes(&set(opt, &[0xff; 8])).unwrap_err();
    assert!(e.contains("past the file's end"), "{e}");

    // A page of events broken inside: the CPU data is zstd-compressed here, so break the
    // uncompressed v6 file's instead.
    let v6 = input::gunzip(&bytes("trace-cmd-pipe-v6.dat.gz"), 1 << 30).unwrap();
    let whole = input::parse_bytes(&v6).unwrap();
    // The first CPU's data starts on the last pages of the file; its first page's commit
    // word (8 bytes after the page's time stamp) made huge.
    let cpu0 = v6.len() - (49152 + 32768);
    let mut c = v6.clone();
    c[cpu0 + 8..cpu0 + 16].copy_from_slice(&0x07ff_ffffu64.to_le_bytes());
    let t = input::parse_bytes(&c).unwrap();
    assert_eq!(t.stats.malformed, 1, "{:?}", t.stats);
    let ex = &t.stats.malformed_examples[0];
    assert!(
        ex.starts_with(&format!("CPU 0 data, page at byte {cpu0}: its commit says")),
        "{ex}"
    );
    assert!(t.events.len() < whole.events.len());
    // A record of an event type no format describes.
    let mut c = v6.clone();
    let first_record = cpu0 + 16 + 4;
    c[first_record..first_record + 2].copy_from_slice(&[0xfe, 0xfe]);
    let t = input::parse_bytes(&c).unwrap();
    assert_eq!(t.stats.malformed, 1, "{:?}", t.stats);
    assert!(
        t.stats.malformed_examples[0].contains("event type 65278, which no format"),
        "{:?}",
        t.stats.malformed_examples
    );
}

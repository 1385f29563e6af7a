//! A fuzzer for what users hand schedkit: workload files and machine profiles, mutated from a
//! small corpus (`fuzz/corpus/workloads/*.toml`, `profiles/*.toml`), fed to the parsers, and
//! what they accept run through a bounded simulation with the invariant audit on. Nothing may
//! panic, abort, break an invariant (`SimError::Invariant`) or grow without bound; an input
//! may only be accepted or refused with an error.
//!
//! The test command runs a short pass (`SCHEDKIT_FUZZ_CASES`, default 2 000 cases). A long
//! pass, as run once for issue 10:
//!
//! ```sh
//! SCHEDKIT_FUZZ_CASES=1000000 cargo test --release -p schedkit --features checks --test fuzz_inputs -- --nocapture
//! ```
//!
//! Mutations are drawn by proptest (so a failure is shrunk to a small reproducer, which is
//! written to `target/tmp/fuzz-failures/TEST.EXT` and named in the failure message): byte edits, line deletions and duplications, numbers
//! replaced by extremes, and statements spliced in from a dictionary of every statement kind.

mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use schedkit::machine::Machine;
use schedkit::registry::PolicyKind;
use schedkit::sim::{SimConfig, SimError};
use schedkit::workload::{file, rtapp, Workload};
use std::sync::OnceLock;

/// The bound on a simulation of an accepted input: its simulated time, and how many tasks it
/// may have (a mutated count of a million is accepted by the parser but not simulated here).
const SIM_NS: u64 = 20_000_000;
const MAX_SIM_TASKS: usize = 2_000;

fn read_dir(d: &str, ext: &str) -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut files: Vec<_> = std::fs::read_dir(format!("{root}/{d}"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

fn corpus() -> &'static (Vec<String>, Vec<String>) {
    static C: OnceLock<(Vec<String>, Vec<String>)> = OnceLock::new();
    C.get_or_init(|| {
        (
            read_dir("fuzz/corpus/workloads", "toml"),
            read_dir("profiles", "toml"),
        )
    })
}

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "-9223372036854775808",
    "1e300",
    "-1e300",
    "1e-300",
    "nan",
    "inf",
    "0.5",
    "99",
    "100",
    "255",
    "256",
    "1000000",
    "\"x\"",
    "[]",
];

const STATEMENTS: &[&str] = &[
    "\"compute 1ms\",",
    "\"compute exp(0ns)\",",
    "\"compute lognormal(1000000s,5)\",",
    "\"touch\",",
    "\"sleep 1us\",",
    "\"io uniform(0ns,1ms)\",",
    "\"yield\",",
    "\"send pipe.{i+1}\",",
    "\"recv pipe.{i-1}\",",
    "\"send pipe.2\",",
    "\"recv sock.{i}\",",
    "\"fork child\",",
    "\"thread worker\",",
    "\"exec\",",
    "\"shell\",",
    "\"wait\",",
    "\"exit\",",
    "\"nice -20\",",
    "\"nice 19\",",
    "\"policy fifo 99\",",
    "\"policy rr 1\",",
    "\"policy batch\",",
    "\"policy normal\",",
    "\"affinity 0\",",
    "\"affinity 1,0\",",
    "\"affinity-next\",",
    "\"stamp\",",
    "\"spin-until 1ms 0\",",
    "\"lock bkl\",",
    "\"unlock bkl\",",
    "\"lock m\",",
    "\"unlock m\",",
    "\"kwork 10us\",",
    "\"audio-write 10ms 2\",",
    "\"audio-write 1us 64\",",
    "\"count\",",
    "\"dirty 2\",",
    "\"dirty 1048576\",",
    "\"cond-wait c m\",",
    "\"cond-signal c\",",
    "\"cond-broadcast c\",",
    "\"timer tick 1us\",",
    "\"timer own 10ms absolute\",",
    "\"timer own 1ms cyclic\",",
    "\"timer tick 1us cyclic\",",
    "\"loop 3\",",
    "\"loop forever\",",
    "\"end\",",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the byte at (position mod len) with this byte.
    SetByte(usize, u8),
    /// Delete this many bytes at a position.
    Delete(usize, usize),
    /// Delete the line at (index mod lines).
    DeleteLine(usize),
    /// Duplicate the line at (index mod lines).
    DuplicateLine(usize),
    /// Replace the n-th number in the text with an extreme.
    Number(usize, usize),
    /// Insert a statement from the dictionary after the n-th `[` of a program list.
    Statement(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::SetByte(p, b)),
        (any::<usize>(), 1usize..16).prop_map(|(p, n)| Mutation::Delete(p, n)),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), 0..EXTREMES.len()).prop_map(|(n, e)| Mutation::Number(n, e)),
        (any::<usize>(), 0..STATEMENTS.len()).prop_map(|(n, s)| Mutation::Statement(n, s)),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut b = text.as_bytes().to_vec();
    match *m {
        Mutation::SetByte(p, v) if !b.is_empty() => {
            let i = p % b.len();
            b[i] = v;
        }
        Mutation::Delete(p, n) if !b.is_empty() => {
            let i = p % b.len();
            b.drain(i..(i + n).min(b.len()));
        }
        Mutation::DeleteLine(i) | Mutation::DuplicateLine(i) => {
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let k = i % lines.len();
                if matches!(m, Mutation::DeleteLine(_)) {
                    lines.remove(k);
                } else {
                    lines.insert(k, lines[k]);
                }
            }
            return lines.join("\n");
        }
        Mutation::Number(n, e) => {
            let spans: Vec<(usize, usize)> = {
                let mut v = Vec::new();
                let mut i = 0;
                while i < b.len() {
                    if b[i].is_ascii_digit() {
                        let s = i;
                        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                            i += 1;
                        }
                        v.push((s, i));
                    } else {
                        i += 1;
                    }
                }
                v
            };
            if !spans.is_empty() {
                let (s, t) = spans[n % spans.len()];
                b.splice(s..t, EXTREMES[e].bytes());
            }
        }
        Mutation::Statement(n, st) => {
            let at: Vec<usize> = text
                .match_indices("program = [")
                .map(|(i, _)| i + 11)
                .collect();
            if !at.is_empty() {
                let i = at[n % at.len()];
                b.splice(i..i, STATEMENTS[st].bytes());
            }
        }
        _ => {}
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn small_machine() -> &'static Machine {
    static M: OnceLock<Machine> = OnceLock::new();
    M.get_or_init(|| Machine::load("smp2-2002").unwrap())
}

/// Simulates briefly under `policy`; an invariant violation is the only failure.
fn bounded_run(policy: PolicyKind, m: &Machine, w: &Workload) -> Result<(), String> {
    if w.tasks.len() > MAX_SIM_TASKS || w.channels.len() > 100_000 {
        return Ok(());
    }
    let cfg = SimConfig {
        duration_ns: SIM_NS,
        audit_every: 61,
        max_live_tasks: MAX_SIM_TASKS as u64,
        ..Default::default()
    };
    match policy.simulate(m, w, cfg) {
        Ok(_) | Err(SimError::Impossible(_)) => Ok(()),
        Err(e @ SimError::Invariant { .. }) => Err(e.to_string()),
    }
}

fn cases() -> u32 {
    std::env::var("SCHEDKIT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

#[test]
fn mutated_workload_files_are_accepted_or_refused_never_crash() {
    let (workloads, _) = corpus();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u64);
    let strategy = (
        0..workloads.len(),
        proptest::collection::vec(mutation(), 1..6),
        0..PolicyKind::ALL.len(),
    );
    common::run(
        &mut runner,
        "workload",
        "toml",
        &strategy,
        |(f, muts, p)| {
            let mut text = workloads[f].clone();
            for m in &muts {
                text = apply(&text, m);
            }
            common::input(text.as_bytes());
            if let Ok(w) = file::parse_str(&text, "fuzz.toml", "fuzz") {
                accepted.set(accepted.get() + 1);
                let r = bounded_run(PolicyKind::ALL[p], small_machine(), &w);
                prop_assert!(r.is_ok(), "{}\n--- input:\n{text}", r.unwrap_err());
            }
            Ok(())
        },
    );
    eprintln!(
        "workload fuzz: {} cases, {} accepted and simulated",
        cases(),
        accepted.get()
    );
    assert!(accepted.get() > 0, "no mutated file was ever accepted");
}

/// rt-app events and properties spliced in after an object's `{`.
const RTAPP_ENTRIES: &[&str] = &[
    "\"run\": 100, ",
    "\"run9\": 0, ",
    "\"runtime\": 5, ",
    "\"sleep\": 4294967296, ",
    "\"timer\": { \"ref\": \"unique\", \"period\": 1 }, ",
    "\"timer\": { \"ref\": \"m\", \"period\": 10 }, ",
    "\"lock\": \"m\", ",
    "\"unlock\": \"m\", ",
    "\"wait\": { \"ref\": \"c\", \"mutex\": \"m\" }, ",
    "\"signal\": \"c\", ",
    "\"broad\": \"c\", ",
    "\"sync\": { \"ref\": \"c\", \"mutex\": \"m\" }, ",
    "\"fork\": \"child\", ",
    "\"fork\": \"video\", ",
    "\"yield\": \"\", ",
    "\"barrier\": \"b\", ",
    "\"policy\": \"SCHED_FIFO\", ",
    "\"policy\": \"SCHED_DEADLINE\", ",
    "\"priority\": 99, ",
    "\"cpus\": [0, 1023], ",
    "\"loop\": -1, ",
    "\"instance\": 0, ",
    "\"phases\": { \"p\": { \"run\": 1 } }, ",
    "\"\": null, ",
];

/// rt-app JSON files (`fuzz/corpus/rt-app/*.json`), mutated as the workload files are, with
/// rt-app entries spliced into objects: the translation accepts or refuses with an error
/// (naming a line or a key path), and what it accepts simulates without breaking an invariant.
#[test]
fn mutated_rtapp_files_are_accepted_or_refused_never_crash() {
    let files = read_dir("fuzz/corpus/rt-app", "json");
    assert!(files.len() >= 2);
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u64);
    let entry = (any::<usize>(), 0..RTAPP_ENTRIES.len());
    let strategy = (
        0..files.len(),
        proptest::collection::vec(
            prop_oneof![mutation().prop_map(Ok), entry.prop_map(Err)],
            1..6,
        ),
        0..PolicyKind::ALL.len(),
    );
    common::run(&mut runner, "rtapp", "json", &strategy, |(f, muts, p)| {
        let mut text = files[f].clone();
        for m in &muts {
            text = match m {
                Ok(m) => apply(&text, m),
                Err((n, e)) => {
                    let at: Vec<usize> = text.match_indices('{').map(|(i, _)| i + 1).collect();
                    let i = at[n % at.len().max(1)];
                    format!("{}{}{}", &text[..i], RTAPP_ENTRIES[*e], &text[i..])
                }
            };
        }
        common::input(text.as_bytes());
        match rtapp::parse_str(&text, "fuzz.json", "fuzz") {
            Ok(w) => {
                accepted.set(accepted.get() + 1);
                let r = bounded_run(PolicyKind::ALL[p], small_machine(), &w);
                prop_assert!(r.is_ok(), "{}\n--- input:\n{text}", r.unwrap_err());
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(
                    msg.contains("line ") || msg.contains(": at "),
                    "an error that names no place: {msg}"
                );
            }
        }
        Ok(())
    });
    eprintln!(
        "rt-app fuzz: {} cases, {} accepted and simulated",
        cases(),
        accepted.get()
    );
    assert!(accepted.get() > 0, "no mutated file was ever accepted");
}

#[test]
fn mutated_profiles_are_accepted_or_refused_never_crash() {
    let (_, profiles) = corpus();
    let w = Workload::parse("chat:rooms=1,messages=5+fork:mode=exit").unwrap();
    let mut runner = TestRunner::new(Config {
        cases: cases() / 2,
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u64);
    let strategy = (
        0..profiles.len(),
        proptest::collection::vec(mutation(), 1..4),
        0..PolicyKind::ALL.len(),
    );
    common::run(&mut runner, "profile", "toml", &strategy, |(f, muts, p)| {
        let mut text = profiles[f].clone();
        for m in &muts {
            text = apply(&text, m);
        }
        common::input(text.as_bytes());
        if let Ok(m) = Machine::from_toml(&text, "fuzz.toml") {
            accepted.set(accepted.get() + 1);
            if m.ncpus() <= 16 {
                let r = bounded_run(PolicyKind::ALL[p], &m, &w);
                prop_assert!(r.is_ok(), "{}\n--- profile:\n{text}", r.unwrap_err());
            }
        }
        Ok(())
    });
    eprintln!("profile fuzz: {} accepted", accepted.get());
    assert!(accepted.get() > 0);
}

/// The most points a fuzzed grid may expand to: the parser's own limit. A mutated number
/// (`seeds = "1..=1000000"`) can make a grid of up to [`schedkit::sweep::MAX_POINTS`]
/// (2 000 000) points; the size is counted before anything expands, so a grid past it costs
/// nothing, and one within it costs its points (a long pass of 1 000 000 cases took about two
/// minutes at this limit, README "Layout"). A caller that can afford less passes a smaller
/// one to `parse_grid_limited`, as the check below does.
const GRID_LIMIT: usize = schedkit::sweep::MAX_POINTS;

/// Sweep grids (`examples/sweeps/*.toml` and a grid of every key), mutated and parsed with a
/// limit of [`GRID_LIMIT`] points: parsed or refused with an error naming a line of the text,
/// never a panic; an accepted grid's points expand without one either, and number at most the
/// limit; a grid refused for its size names the limit and a count past it; and an accepted
/// grid of N points is refused for its size, naming the limit, under a limit of N - 1.
#[test]
fn mutated_sweep_grids_are_accepted_or_refused_never_crash() {
    let mut grids = read_dir("examples/sweeps", "toml");
    grids.push(
        r#"
policies = ["goodness", "cfs:era={2.6.23,2.6.32}", "eevdf"]
machines = ["smp2-2002", "up-2002"]
workloads = ["chat:rooms={1..3},messages=10", "loops:n=4,renice=5ms/10"]
seeds = "1..3"
duration = "20ms"
rt_balance = ["passive", "pushpull"]
record = ["throughput", "context_switches"]
"#
        .to_string(),
    );
    let mut runner = TestRunner::new(Config {
        cases: cases() / 2,
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u64);
    let too_big = std::cell::Cell::new(0u64);
    let strategy = (0..grids.len(), proptest::collection::vec(mutation(), 1..4));
    common::run(&mut runner, "grid", "toml", &strategy, |(f, muts)| {
        let mut text = grids[f].clone();
        for m in &muts {
            text = apply(&text, m);
        }
        common::input(text.as_bytes());
        let refused_for_size = |e: &schedkit::sweep::GridError, limit: usize| {
            let tail = format!(", more than the limit of {limit}");
            let count = e
                .problem
                .strip_prefix("the grid has ")
                .and_then(|p| p.split(' ').next());
            e.problem.ends_with(&tail)
                && match count {
                    Some("2^64") => true,
                    Some(n) => n.parse::<u64>().is_ok_and(|n| n > limit as u64),
                    None => false,
                }
        };
        match schedkit::sweep::parse_grid_limited(&text, "fuzz.toml", None, GRID_LIMIT) {
            Ok(g) => {
                accepted.set(accepted.get() + 1);
                let n = g.points.len();
                prop_assert!(n >= 1, "an accepted grid with no point");
                prop_assert!(n <= GRID_LIMIT, "{n} points past the limit of {GRID_LIMIT}");
                let e = schedkit::sweep::parse_grid_limited(&text, "fuzz.toml", None, n - 1).err();
                prop_assert!(
                    e.as_ref().is_some_and(|e| refused_for_size(e, n - 1)),
                    "a grid of {n} points, under a limit of {}: {e:?}",
                    n - 1
                );
            }
            Err(e) => {
                prop_assert!(
                    e.line >= 1 && e.line <= text.lines().count().max(1) + 1,
                    "an error outside the text: {e}"
                );
                if e.problem.contains("more than the limit") {
                    prop_assert!(refused_for_size(&e, GRID_LIMIT), "{e}");
                    too_big.set(too_big.get() + 1);
                }
            }
        }
        Ok(())
    });
    eprintln!(
        "grid fuzz: {} cases, {} accepted and expanded, {} refused for more than {GRID_LIMIT} points",
        cases() / 2,
        accepted.get(),
        too_big.get()
    );
    assert!(accepted.get() > 0);
}

/// Result files for `schedkit report` (a real run's JSON, and one with phases), mutated: added
/// to a page or refused, and an accepted set renders, never a panic.
#[test]
fn mutated_result_json_is_reported_or_refused_never_crash() {
    let m = Machine::load("up-2002").unwrap();
    let run = |w: &str, phases: Vec<u64>| {
        let cfg = SimConfig {
            duration_ns: 3_000_000,
            phases,
            ..Default::default()
        };
        let r = PolicyKind::parse("cfs")
            .unwrap()
            .simulate(&m, &Workload::parse(w).unwrap(), cfg)
            .unwrap();
        serde_json::to_string_pretty(&r).unwrap()
    };
    let texts = [
        run("yield:instances=2", Vec::new()),
        run("mpg123+loops:n=2", vec![1_000_000, 2_000_000]),
    ];
    let mut runner = TestRunner::new(Config {
        cases: cases() / 2,
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u64);
    let strategy = (0..texts.len(), proptest::collection::vec(mutation(), 1..4));
    common::run(&mut runner, "result", "json", &strategy, |(f, muts)| {
        let mut text = texts[f].clone();
        for m in &muts {
            text = apply(&text, m);
        }
        common::input(text.as_bytes());
        let mut input = schedkit::report::html::Input::new();
        if input.add("fuzz.json", &text).is_ok() {
            accepted.set(accepted.get() + 1);
            let _ = input.render();
        }
        Ok(())
    });
    eprintln!("result json fuzz: {} accepted", accepted.get());
    assert!(accepted.get() > 0);
}

/// Sweep journals (the rows a sweep appends as it goes), mutated and read back as `--resume`
/// reads them: rows, a note about a last line cut short, or an error naming the line.
#[test]
fn mutated_sweep_journals_are_recovered_or_refused_never_crash() {
    let row = r#"{"key":"policy=cfs machine=up-2002 workload=yield:instances=2 seed=1","policy":"cfs","machine":"up-2002","workload":"yield:instances=2","seed":1,"throughput":12345.6,"context_switches":987}"#;
    let journal = format!("{row}\n{}\n", row.replace("seed=1", "seed=2"));
    let dir = std::env::temp_dir().join(format!("schedkit-fuzz-journal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sweep.journal");
    let mut runner = TestRunner::new(Config {
        cases: cases() / 2,
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::cell::Cell::new(0u64);
    let strategy = proptest::collection::vec(mutation(), 1..4);
    common::run(&mut runner, "journal", "jsonl", &strategy, |muts| {
        let mut text = journal.clone();
        for m in &muts {
            text = apply(&text, m);
        }
        common::input(text.as_bytes());
        std::fs::write(&path, &text).unwrap();
        if schedkit::sweep::Journal::recover(&path).is_ok() {
            accepted.set(accepted.get() + 1);
        }
        Ok(())
    });
    std::fs::remove_dir_all(&dir).ok();
    eprintln!("journal fuzz: {} accepted", accepted.get());
    assert!(accepted.get() > 0);
}

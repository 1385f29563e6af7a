//! `schedkit calibrate`: the profile it writes loads, validates, says how each value was
//! found, and holds plausible figures. No timed assertions: the figures vary from run to run
//! and machine to machine, so only their structure and wide plausibility bounds are checked.

use schedkit::machine::Machine;
use std::process::Command;

fn schedkit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_schedkit"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn calibrate_help_and_bad_arguments() {
    let (code, out, _) = schedkit(&["calibrate", "--help"]);
    assert_eq!(code, 0);
    for o in ["--output", "--name", "--quick", "--quiet"] {
        assert!(out.contains(o), "calibrate --help lacks {o}: {out}");
    }
    let (_, out, _) = schedkit(&["--help"]);
    assert!(out.contains("calibrate"), "{out}");
    // Output that cannot be written and bad names fail at once, before measuring.
    let (code, _, err) = schedkit(&["calibrate", "--quick", "-o", "/nonexistent-dir/x/my.toml"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-o") && err.contains("cannot create"), "{err}");
    let (code, _, err) = schedkit(&["calibrate", "--quick", "--name", ""]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--name"), "{err}");
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn calibrate_writes_a_profile_that_loads_and_says_how_each_value_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("my.toml");
    let p = path.to_str().unwrap();
    let (code, out, err) = schedkit(&["calibrate", "--quick", "-o", p, "--name", "test box"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "the profile goes to the file: {out}");
    // Progress on stderr: each figure, then where the profile went.
    for s in ["calibrate: ", "syscall", "pipe round trip", "fork", "wrote"] {
        assert!(err.contains(s), "stderr lacks {s}: {err}");
    }

    let m = Machine::load(p).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(m.name(), "test box");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok();
    if let Some(list) = online {
        let n: usize = list
            .trim()
            .split(',')
            .map(|r| match r.split_once('-') {
                Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
                None => 1,
            })
            .sum();
        assert_eq!(m.ncpus(), n, "{text}");
    }
    let c = &m.profile.costs;
    let k = &m.profile.kernel;
    let within = |what: &str, v: f64, lo: f64, hi: f64| {
        assert!(
            (lo..=hi).contains(&v),
            "{what} = {v} outside {lo}..={hi}:\n{text}"
        );
    };
    within("syscall_ns", c.syscall_ns, 10.0, 100_000.0);
    within("atomic_ns", c.atomic_ns, 0.1, 1_000.0);
    within("cache_latency_ns", c.cache_latency_ns, 0.5, 1_000.0);
    within("mem_latency_ns", c.mem_latency_ns, 5.0, 10_000.0);
    within("mem_read_mb_s", c.mem_read_mb_s, 100.0, 1_000_000.0);
    within("context_switch_ns", c.context_switch_ns, 0.0, 1_000_000.0);
    within("pipe_write_ns", k.pipe_write_ns, 10.0, 1_000_000.0);
    within("pipe_read_ns", k.pipe_read_ns, 10.0, 1_000_000.0);
    within("fork_ns", k.fork_ns, 1_000.0, 100_000_000.0);
    within("exit_ns", k.exit_ns, 500.0, 100_000_000.0);
    within("wait_ns", k.wait_ns, 10.0, 10_000_000.0);
    within("clock.mhz", m.profile.clock.mhz, 100.0, 20_000.0);
    assert!(
        [100, 250, 300, 1000].contains(&m.hz()) || text.contains("hz = "),
        "{text}"
    );
    // The L2 level and its refill rate come together (validation checks it as well).
    assert_eq!(
        m.profile.cache.l2_kb.is_some(),
        c.llc_read_mb_s.is_some(),
        "{text}"
    );

    // Every value carries a comment that says how it was found.
    let mut section = String::new();
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with('[') {
            section = l.to_string();
            continue;
        }
        if l.is_empty() || l.starts_with('#') || section.is_empty() {
            continue;
        }
        let (_, note) = l
            .split_once(" # ")
            .unwrap_or_else(|| panic!("no comment on `{l}`:\n{text}"));
        let note = note.trim();
        assert!(!note.is_empty(), "empty comment on `{l}`");
        if section == "[costs]" || section == "[kernel]" {
            assert!(
                note.starts_with("measured")
                    || note.starts_with("copied from profiles/host.toml")
                    || note.starts_with("estimate"),
                "`{l}`: a cost's comment says measured, copied or estimate"
            );
        }
    }
    for key in [
        "syscall_ns",
        "context_switch_ns",
        "pipe_write_ns",
        "fork_ns",
        "cache_latency_ns",
        "mem_latency_ns",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{key} =")))
            .unwrap();
        assert!(line.contains("# measured"), "{line}");
    }

    // To standard output with --quiet: the same kind of profile, no progress.
    let (code, out, err) = schedkit(&["calibrate", "--quick", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    let m = Machine::from_toml(&out, "stdout").unwrap_or_else(|e| panic!("{e}\n{out}"));
    assert_eq!(m.name(), "calibrated");
}

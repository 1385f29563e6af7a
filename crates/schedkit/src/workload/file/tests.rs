use super::*;

#[test]
fn lines_are_found_by_their_offsets() {
    let text = "a\nbb\n\nccc";
    let idx = LineIndex::new(text);
    for (offset, line) in [
        (0, 1),
        (1, 1),
        (2, 2),
        (4, 2),
        (5, 3),
        (6, 4),
        (9, 4),
        (99, 4),
    ] {
        assert_eq!(idx.line(offset), line, "offset {offset}");
    }
    assert_eq!(LineIndex::new("").line(0), 1);
}

#[test]
fn a_program_of_200_000_statements_parses_and_names_the_line_of_its_last() {
    // Each statement's line used to be counted from the start of the file: 133 s for this.
    let mut text = String::from("[[group]]\nname = \"big\"\nprogram = [\n");
    for _ in 0..200_000 {
        text.push_str("  \"compute 1us\",\n");
    }
    let ok = format!("{text}]\n");
    let w = parse_str(&ok, "big.toml", "big").unwrap();
    assert_eq!(w.programs[0].ops.len(), 200_000);
    let bad = format!("{text}  \"compute never\",\n]\n");
    let e = parse_str(&bad, "big.toml", "big").unwrap_err().to_string();
    assert!(e.contains("line 200004"), "{e}");
}

const RING: &str = r#"
name = "ring"
throughput = "hops/s"

[[channel]]
name = "pipe"
count = 3

[[group]]
name = "member"
count = 3
working_set_kb = 8
program = [
  "loop 10",
  "recv pipe.{i-1}",
  "compute exp(50us)",
  "count",
  "send pipe.{i}",
  "end",
]

[[group]]
name = "starter"
program = ["send pipe.2", "exit"]
"#;

#[test]
fn ring_file_parses() {
    let w = parse_str(RING, "ring.toml", "ring").unwrap();
    assert_eq!(w.tasks.len(), 4);
    assert_eq!(w.channels.len(), 3);
    // One program per group: member i receives from pipe.{i-1} (modulo 3), chosen when
    // it runs.
    assert_eq!(w.programs.len(), 2);
    assert_eq!(
        w.programs[0].ops[1],
        Op::RecvMember {
            base: 0,
            count: 3,
            offset: 2
        }
    );
    assert_eq!(
        w.tasks.iter().map(|t| t.member).collect::<Vec<_>>(),
        vec![0, 1, 2, 0]
    );
    assert_eq!(w.throughput_unit, "hops/s");
}

#[test]
fn a_cyclic_timer_is_the_timer_then_its_lateness() {
    let text = "[[channel]]\nname = \"t\"\nkind = \"task-timer\"\n[[group]]\nname = \"p\"\nprogram = [\"loop forever\", \"timer t 1ms cyclic\", \"end\"]\n";
    let w = parse_str(text, "c.toml", "c").unwrap();
    assert_eq!(
        w.programs[0].ops[1..],
        [
            Op::Timer {
                timer: 0,
                period: 1_000_000,
                absolute: true
            },
            Op::Lateness {
                timer: 0,
                period: 1_000_000
            }
        ]
    );
    let e = parse_str(&text.replace("cyclic", "cyclical"), "c.toml", "c")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cyclical") && e.contains("line"), "{e}");
}

#[test]
fn audio_write_statement() {
    let ok = "[[group]]\nname = \"player\"\nprogram = [\"loop forever\", \"compute 2ms\", \"audio-write 20ms 4\", \"end\"]\n";
    let w = parse_str(ok, "a.toml", "a").unwrap();
    assert!(w.programs[0].ops.contains(&Op::AudioWrite {
        period: 20_000_000,
        buffer: 4
    }));
    for bad in [
        "audio-write 20ms",
        "audio-write 0ms 2",
        "audio-write 20ms 0",
        "audio-write 20ms x",
    ] {
        let text = ok.replace("audio-write 20ms 4", bad);
        let e = parse_str(&text, "a.toml", "a").unwrap_err().to_string();
        assert!(e.contains("a.toml") && e.contains("line 3"), "{bad}: {e}");
    }
}

#[test]
fn a_sleep_may_name_the_cpu_of_its_interrupt() {
    let ok = "[[group]]\nname = \"s\"\nprogram = [\"sleep 2ms irq-on 1\", \"io exp(1ms) irq-on 0\", \"sleep 3ms\"]\n";
    let w = parse_str(ok, "s.toml", "s").unwrap();
    let sleeps: Vec<_> = w.programs[0]
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Sleep {
                uninterruptible,
                irq_cpu,
                ..
            } => Some((*uninterruptible, *irq_cpu)),
            _ => None,
        })
        .collect();
    assert_eq!(sleeps, [(false, Some(1)), (true, Some(0)), (false, None)]);
    for bad in ["sleep 2ms irq-on", "sleep 2ms irq-on one", "sleep irq-on 1"] {
        let text = ok.replace("sleep 2ms irq-on 1", bad);
        let e = parse_str(&text, "s.toml", "s").unwrap_err().to_string();
        assert!(e.contains("s.toml") && e.contains("line 3"), "{bad}: {e}");
    }
}

#[test]
fn a_send_may_wake_its_reader_with_wf_sync() {
    let ok = "[[channel]]\nname = \"w\"\ncount = 2\nkind = \"semaphore\"\n[[group]]\nname = \"s\"\nprogram = [\"send w.1 sync\", \"send w.0\", \"recv w.1\"]\n";
    let w = parse_str(ok, "s.toml", "s").unwrap();
    assert_eq!(w.programs[0].ops[..2], [Op::SendSync(1), Op::Send(0)]);
    for (bad, why) in [
        ("send w.1 sync now", "nothing after 'sync'"),
        ("send w.{i} sync", "a single channel"),
        ("send w.7 sync", "w.7"),
    ] {
        let text = ok.replace("send w.1 sync", bad);
        let e = parse_str(&text, "s.toml", "s").unwrap_err().to_string();
        assert!(e.contains("s.toml") && e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn errors_name_the_line() {
    let bad = RING.replace("\"compute exp(50us)\"", "\"compute exp(50 parsecs)\"");
    let e = parse_str(&bad, "ring.toml", "ring")
        .unwrap_err()
        .to_string();
    let line = RING
        .lines()
        .position(|l| l.contains("compute exp"))
        .unwrap()
        + 1;
    assert!(e.contains(&format!("line {line}")), "{e}");
    assert!(e.contains("ring.toml"), "{e}");

    let bad = RING.replace("\"send pipe.{i}\"", "\"send pope.{i}\"");
    let e = parse_str(&bad, "r.toml", "r").unwrap_err().to_string();
    assert!(e.contains("no channel named 'pope'"), "{e}");

    let bad = RING.replace("  \"end\",\n", "");
    let e = parse_str(&bad, "r.toml", "r").unwrap_err().to_string();
    assert!(e.contains("not closed"), "{e}");

    let bad = RING.replace("working_set_kb = 8", "working_set_kb = 8\ncolour = 3");
    let e = parse_str(&bad, "r.toml", "r").unwrap_err().to_string();
    assert!(e.contains("colour") && e.contains("line"), "{e}");

    let bad = RING.replace("count = 3\nworking", "count = 3\nnice = 40\nworking");
    let e = parse_str(&bad, "r.toml", "r").unwrap_err().to_string();
    assert!(e.contains("nice 40"), "{e}");
    // ... at the line of the field, not of its [[group]] header.
    let line = bad
        .lines()
        .position(|l| l.starts_with("nice = 40"))
        .unwrap()
        + 1;
    assert!(e.contains(&format!("line {line}:")), "{e}");
}

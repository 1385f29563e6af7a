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
        let got: Vec<(u64, usize, u64)> = s.records.iter().map(|r| (r.ts, r.len, r.lost)).collect();
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
            irq: true,
            // `common_preempt_count` 1.
            depth: Some(1),
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

/// A task's own `sched_setscheduler()` in a trace.dat: the syscall tracepoints' records (the
/// formats as this project's 6.18 kernel writes them) decode into the same raw events as
/// their text lines.
#[test]
fn the_sched_setscheduler_syscall_events_decode() {
    let enter = "name: sys_enter_sched_setscheduler\nID: 404\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:pid_t pid;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:int policy;\toffset:24;\tsize:8;\tsigned:0;\n\tfield:struct sched_param * param;\toffset:32;\tsize:8;\tsigned:0;\n\nprint fmt: \"pid: 0x%08lx, policy: 0x%08lx, param: 0x%08lx\", ((unsigned long)(REC->pid)), ((unsigned long)(REC->policy)), ((unsigned long)(REC->param))\n";
    let exit = "name: sys_exit_sched_setscheduler\nID: 403\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n\nprint fmt: \"0x%lx\", REC->ret\n";
    let mut types = HashMap::new();
    let mut common_type = None;
    for text in [enter, exit] {
        let f = parse_format(text, "syscalls").unwrap();
        common_type = f.fields.get("common_type").cloned();
        types.insert(f.id, EventType::new(&f));
    }
    let common_type = common_type.unwrap();
    let mut comms = Comms::new("");
    // sys_enter (404) by PID 8706: pid 0, policy SCHED_IDLE | SCHED_RESET_ON_FORK.
    let mut rec = vec![0u8; 40];
    rec[0..2].copy_from_slice(&404u16.to_le_bytes());
    rec[4..8].copy_from_slice(&8706i32.to_le_bytes());
    rec[24..32].copy_from_slice(&0x4000_0005u64.to_le_bytes());
    match decode(&rec, 0, 0, &types, &common_type, false, &mut comms).unwrap() {
        Decoded::Event(r) => {
            assert_eq!(r.current.pid, 8706);
            assert!(matches!(
                r.kind,
                RawKind::SetSchedulerEnter { pid: 0, policy: 5 }
            ));
        }
        _ => panic!("not an event"),
    }
    // sys_exit (403): -EPERM.
    let mut rec = vec![0u8; 24];
    rec[0..2].copy_from_slice(&403u16.to_le_bytes());
    rec[16..24].copy_from_slice(&(-1i64).to_le_bytes());
    match decode(&rec, 0, 0, &types, &common_type, false, &mut comms).unwrap() {
        Decoded::Event(r) => assert!(matches!(r.kind, RawKind::SetSchedulerExit { ret: -1 })),
        _ => panic!("not an event"),
    }
}

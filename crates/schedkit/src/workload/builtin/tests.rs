//! Tests of the built-in workloads: every entry builds with its defaults, and each has its
//! benchmark's shape.

use super::*;

#[test]
fn every_builtin_parses_with_defaults_and_validates() {
    for b in BUILTINS {
        let w = parse(b.name).unwrap_or_else(|e| panic!("{}: {e}", b.name));
        w.validate().unwrap();
    }
}

#[test]
fn every_declared_parameter_is_read_and_its_default_is_the_one_used() {
    // Writing out every default gives the same workload as giving none: a parameter declared
    // but never read by its builder would be refused as unknown, and a builder using another
    // default than the one shown would build something else.
    for b in BUILTINS {
        let bare = parse(b.name).unwrap();
        let spelled = parse(&format!("{}:{}", b.name, b.defaults()))
            .unwrap_or_else(|e| panic!("{}: {e}", b.name));
        assert_eq!(
            format!("{:?}", bare.tasks),
            format!("{:?}", spelled.tasks),
            "{}",
            b.name
        );
        assert_eq!(
            format!("{:?}", bare.programs),
            format!("{:?}", spelled.programs),
            "{}",
            b.name
        );
    }
    let names: Vec<_> = BUILTINS.iter().map(|b| b.name).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        names.len(),
        "a name twice in BUILTINS: {names:?}"
    );
}

#[test]
fn mpg123s_default_rate_is_the_constant_written_out() {
    let p = super::latency::MPG123
        .params
        .iter()
        .find(|p| p.name == "cycles_per_s")
        .unwrap();
    assert_eq!(p.default.parse::<f64>().unwrap(), MPG123_CYCLES_PER_AUDIO_S);
}

#[test]
fn an_unknown_parameter_is_named_with_what_the_builtin_takes() {
    let e = parse("hackbench:group=3").unwrap_err().to_string();
    assert!(
        e.contains("'group'") && e.contains("groups=10,fds=20"),
        "{e}"
    );
    let e = parse("hackbench:mode=udp").unwrap_err().to_string();
    assert!(e.contains("mode=udp: must be pipe or socket"), "{e}");
}

#[test]
fn chat_has_the_benchmark_shape() {
    let w = parse("chat:rooms=2,messages=5").unwrap();
    assert_eq!(w.tasks.len(), 2 * 20 * 4);
    // Each server sender forwards to the 19 other users of its room.
    let sends = w.programs[3]
        .ops
        .iter()
        .filter(|o| matches!(o, Op::Send(_)))
        .count();
    assert_eq!(sends, 19);
}

#[test]
fn loops_are_busy_tasks_of_the_policy_asked() {
    let w = parse("loops:n=3,policy=batch,nice=19").unwrap();
    assert_eq!(w.tasks.len(), 3);
    assert!(w
        .tasks
        .iter()
        .all(|t| t.policy == SchedPolicy::Batch && t.nice == 19));
    assert_eq!(w.name, "loops:n=3,policy=batch,nice=19");
    // One count per 10 ms of CPU, reported as CPU-seconds per second.
    assert_eq!(w.throughput_scale, 0.01);
    let w = parse("loops:n=2,policy=idle").unwrap();
    assert!(w.tasks.iter().all(|t| t.policy == SchedPolicy::Idle));
    assert_eq!(w.name, "loops:n=2,policy=idle");
    let e = parse("loops:policy=fifo").unwrap_err().to_string();
    assert!(e.contains("policy=fifo"), "{e}");
}

#[test]
fn hackbench_has_the_benchmark_shape() {
    let w = parse("hackbench:groups=2,fds=3,loops=5").unwrap();
    // groups * 2 * fds tasks, one channel per receiver, pipes of 655 messages.
    assert_eq!(w.tasks.len(), 12);
    assert_eq!(w.channels.len(), 6);
    assert!(w
        .channels
        .iter()
        .all(|c| c.kind == ChanKind::Pipe && c.capacity == Some(655)));
    // A sender writes loops times to each of its group's receivers; a receiver reads
    // fds * loops messages from its own channel.
    let sender = &w.programs[0].ops;
    assert!(matches!(sender[0], Op::Loop { times: Some(5), .. }));
    let sends: Vec<_> = sender.iter().filter(|o| matches!(o, Op::Send(_))).collect();
    assert_eq!(sends.len(), 3);
    assert!(matches!(
        w.programs[1].ops[0],
        Op::Loop {
            times: Some(15),
            ..
        }
    ));
    // Processes: every task its own address space; threads: one.
    let mms: std::collections::HashSet<_> = w.tasks.iter().map(|t| t.mm).collect();
    assert_eq!(mms.len(), 12);
    let t = parse("hackbench:groups=2,fds=3,mode=socket,threads=1").unwrap();
    assert!(t.tasks.iter().all(|t| t.mm == 0));
    assert!(t.channels.iter().all(|c| c.kind == ChanKind::Socket));
    assert!(parse("hackbench:mode=fifo").is_err());
    assert!(parse("hackbench:threads=2").is_err());
}

#[test]
fn schbench_has_messengers_and_their_waiting_workers() {
    let w = parse("schbench:messages=2,workers=3,cputime=5ms,sleep=20ms").unwrap();
    // Per messenger: itself and 3 workers; one post channel and 3 wake channels.
    assert_eq!(w.tasks.len(), 8);
    assert_eq!(w.channels.len(), 8);
    assert_eq!(w.tasks.iter().filter(|t| t.interactive).count(), 6);
    let messenger = &w.programs[w.tasks[0].prog as usize].ops;
    let recvs = messenger
        .iter()
        .filter(|o| matches!(o, Op::Recv(0)))
        .count();
    let wakes = messenger
        .iter()
        .filter(|o| matches!(o, Op::Send(1..=3)))
        .count();
    assert_eq!((recvs, wakes), (3, 3), "{messenger:?}");
    assert!(matches!(
        messenger[1],
        Op::Sleep {
            dur: Dist::Uniform(20_000_000, 25_000_000),
            ..
        }
    ));
    let e = parse("schbench:cputime=0").unwrap_err().to_string();
    assert!(e.contains("cputime"), "{e}");
    assert!(parse("schbench:messages=1000,workers=10000").is_err());
}

#[test]
fn nice_applies_to_every_task() {
    let w = parse("chat:rooms=1,messages=10,nice=19").unwrap();
    assert!(w.tasks.iter().all(|t| t.nice == 19));
    assert!(w.name.ends_with("nice=19"));
}

#[test]
fn bad_parameters_name_the_problem() {
    let e = parse("yield:instances=0").unwrap_err().to_string();
    assert!(e.contains("instances=0") && e.contains("1..="), "{e}");
    let e = parse("yield:instnaces=3").unwrap_err().to_string();
    assert!(e.contains("instnaces"), "{e}");
    let e = parse("fork:mode=vfork").unwrap_err().to_string();
    assert!(e.contains("vfork"), "{e}");
    let e = parse("chat:rooms").unwrap_err().to_string();
    assert!(e.contains("key=value"), "{e}");
    let e = parse("nosuch").unwrap_err().to_string();
    assert!(e.contains("chat"), "{e}");
    assert!(parse("yield:nice=20").is_err());
    let e = parse("audio:period=0").unwrap_err().to_string();
    assert!(e.contains("period"), "{e}");
    let e = parse("audio:buffer=0").unwrap_err().to_string();
    assert!(e.contains("buffer=0"), "{e}");
    let e = parse("pipechain:len=1").unwrap_err().to_string();
    assert!(e.contains("len=1"), "{e}");
    let e = parse("pipechain:groups=100000,len=100")
        .unwrap_err()
        .to_string();
    assert!(e.contains("tasks"), "{e}");
}

#[test]
fn probe_rtmix_and_x264_have_their_shapes_and_refuse_bad_parameters() {
    // The probe: a background, interactive task on its own timer, measuring lateness.
    let w = parse("probe:period=2ms").unwrap();
    assert_eq!(w.tasks.len(), 1);
    assert!(w.tasks[0].background && w.tasks[0].interactive);
    assert_eq!(w.channels[0].kind, ChanKind::TaskTimer);
    let ops = &w.programs[0].ops;
    assert!(ops.contains(&Op::Lateness {
        timer: 0,
        period: 2_000_000
    }));
    // rtmix: a parent forking the RT tasks (which make themselves FIFO) and the hogs.
    let w = parse("rtmix:rt=3,normal=1,prio=10").unwrap();
    assert_eq!(w.tasks.len(), 1, "only the parent starts");
    let parent = &w.programs[w.tasks[0].prog as usize].ops;
    let forks: Vec<_> = parent
        .iter()
        .filter(|o| matches!(o, Op::Fork { .. }))
        .collect();
    assert_eq!(forks.len(), 2, "{parent:?}");
    assert!(matches!(parent[0], Op::Loop { times: Some(3), .. }));
    assert_eq!(
        w.programs[0].ops[0],
        Op::SetPolicy(SchedPolicy::Fifo, 10),
        "RT tasks set their policy first"
    );
    // x264: T frame threads, the lookahead and main; frames rounded up to T's multiple.
    let w = parse("x264:threads=4,frames=10,rows=8,mvrange=2").unwrap();
    assert_eq!(w.tasks.len(), 6);
    assert!(w.name.contains("frames=12"), "{}", w.name);
    // 3 channels per thread (rows, go, done) and the lookahead's.
    assert_eq!(w.channels.len(), 13);
    // A frame thread takes 8 row tokens of the previous frame per frame: 2 up front and
    // one before each of the first 6 rows.
    let frame = &w.programs[0].ops;
    let row_recvs = frame
        .iter()
        .filter(|o| {
            matches!(
                o,
                Op::RecvMember {
                    base: 0,
                    offset: -1,
                    ..
                }
            )
        })
        .count();
    assert_eq!(row_recvs, 3, "2 unrolled + 1 in the row loop: {frame:?}");
    assert!(frame.contains(&Op::Loop {
        times: Some(6),
        len: 3
    }));
    for (spec, needle) in [
        ("probe:period=0", "period"),
        ("probe:period=1ms,work=2ms", "longer than the work"),
        ("rtmix:work=20ms", "shorter than the period"),
        ("rtmix:prio=0", "prio=0"),
        ("x264:rows=4,mvrange=4", "mvrange=4"),
        ("x264:row=0", "row must be"),
        ("x264:threads=0", "threads=0"),
    ] {
        let e = parse(spec).unwrap_err().to_string();
        assert!(e.contains(needle), "{spec}: {e}");
    }
}

#[test]
fn pipechain_is_a_ring_per_group() {
    let w = parse("pipechain:groups=2,len=3").unwrap();
    assert_eq!((w.tasks.len(), w.channels.len()), (6, 6));
    // Member 0 of a group injects into its pipe 0 and reads the ring's last pipe; member
    // i reads pipe i-1 and writes pipe i (RecvMember offset -1, SendMember offset 0).
    let first = &w.programs[w.tasks[0].prog as usize];
    assert_eq!(first.ops[0], Op::Send(0));
    assert!(first.ops.contains(&Op::RecvMember {
        base: 0,
        count: 3,
        offset: -1
    }));
    let second_group = &w.programs[w.tasks[4].prog as usize];
    assert!(second_group.ops.contains(&Op::SendMember {
        base: 3,
        count: 3,
        offset: 0
    }));
    assert_eq!(w.tasks[4].member, 1);
    // With a delay, the first process sleeps before it injects the byte.
    let d = parse("pipechain:groups=1,len=2,delay=1s").unwrap();
    assert_eq!(d.name, "pipechain:groups=1,len=2,delay=1s");
    assert!(matches!(
        d.programs[d.tasks[0].prog as usize].ops[0],
        Op::Sleep {
            dur: Dist::Const(1_000_000_000),
            ..
        }
    ));
}

/// The request/response pairs of tbench and netperf: task 2i is pair i's client, 2i + 1 its
/// server, each its own process, joined by a request and a reply channel of today's TCP.
fn rr_pair_channels(w: &Workload, pairs: u32) {
    assert_eq!(w.tasks.len() as u32, 2 * pairs);
    assert_eq!(w.channels.len() as u32, 2 * pairs);
    assert!(w
        .channels
        .iter()
        .all(|c| c.kind == ChanKind::Tcp && c.capacity.is_none()));
    let mms: std::collections::HashSet<_> = w.tasks.iter().map(|t| t.mm).collect();
    assert_eq!(mms.len() as u32, 2 * pairs, "every task its own process");
    for i in 0..pairs as usize {
        assert_eq!(w.tasks[2 * i].member, 2 * i as u32);
        assert_eq!(w.tasks[2 * i + 1].member, 2 * i as u32);
    }
    let client = &w.programs[w.tasks[0].prog as usize].ops;
    let server = &w.programs[w.tasks[1].prog as usize].ops;
    let req = Op::SendMember {
        base: 0,
        count: 2 * pairs,
        offset: 0,
    };
    let rep = Op::RecvMember {
        base: 0,
        count: 2 * pairs,
        offset: 1,
    };
    // The client sends the request, then sleeps on the reply, then counts: one
    // transaction in flight, and one count per reply received.
    let at = |ops: &[Op], op: &Op| ops.iter().position(|o| o == op).unwrap();
    assert!(at(client, &req) < at(client, &rep), "{client:?}");
    assert!(at(client, &rep) < at(client, &Op::Count), "{client:?}");
    // The server receives the request first and sends the reply last; it counts nothing.
    let srv_req = Op::RecvMember {
        base: 0,
        count: 2 * pairs,
        offset: 0,
    };
    let srv_rep = Op::SendMember {
        base: 0,
        count: 2 * pairs,
        offset: 1,
    };
    assert_eq!(server[1], srv_req, "{server:?}");
    assert_eq!(server[server.len() - 1], srv_rep, "{server:?}");
    assert!(!server.contains(&Op::Count));
    assert_eq!(w.throughput_unit, "transactions/s");
}

#[test]
fn netperf_is_n_pairs_with_one_transaction_in_flight() {
    let w = parse("netperf:instances=3,work=1us,server_work=0").unwrap();
    rr_pair_channels(&w, 3);
    assert_eq!(w.name, "netperf:instances=3,work=1us,server_work=0s");
    let client = &w.programs[0].ops;
    assert!(client.contains(&Op::Compute(Dist::Const(1_000))));
    // No server work: the server's loop is receive, send.
    assert_eq!(w.programs[1].ops.len(), 3, "{:?}", w.programs[1].ops);
    for (spec, needle) in [
        ("netperf:instances=0", "instances=0"),
        ("netperf:instances=600000", "1..=500000"),
        ("netperf:work=fast", "work"),
        ("netperf:clients=4", "'clients'"),
    ] {
        let e = parse(spec).unwrap_err().to_string();
        assert!(e.contains(needle), "{spec}: {e}");
    }
}

#[test]
fn tbench_servers_copy_the_payload_as_kernel_work() {
    let w = parse("tbench:clients=2,copy=5us,server_work=1us").unwrap();
    rr_pair_channels(&w, 2);
    let server = &w.programs[w.tasks[1].prog as usize].ops;
    assert!(server.contains(&Op::Compute(Dist::Const(1_000))));
    assert!(server.contains(&Op::KernelCompute(Dist::Exp(5_000))));
    let w = parse("tbench:clients=1,copy=0,server_work=0,work=0").unwrap();
    assert_eq!(w.programs[0].ops.len(), 4, "{:?}", w.programs[0].ops);
    for (spec, needle) in [
        ("tbench:clients=0", "clients=0"),
        ("tbench:copy=-1us", "copy"),
        ("tbench:instances=4", "'instances'"),
    ] {
        let e = parse(spec).unwrap_err().to_string();
        assert!(e.contains(needle), "{spec}: {e}");
    }
}

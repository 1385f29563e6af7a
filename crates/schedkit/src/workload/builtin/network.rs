//! Request/response over loopback TCP: tbench (dbench's network half) and netperf's TCP_RR,
//! the two network benchmarks of the EEVDF test reports (docs/modern.md, "EEVDF against CFS
//! on the Zen 3 server").
//!
//! Both are pairs of processes, a client and its own server process, joined by one TCP
//! connection over 127.0.0.1: the client writes a request and blocks reading the reply; the
//! server, blocked reading, wakes, does its (small) work and writes the reply, which wakes the
//! client; then it blocks reading again. One transaction is in flight per pair, so each
//! transaction is two wakeups, each of a task that slept while its peer ran, and N pairs are
//! N independent ping-pongs. The channels are `ChanKind::Tcp`: a reader woken by a write is
//! woken with WF_SYNC, as `sock_def_readable` does today.
//!
//! Sources (the benchmarks' behaviour only):
//! - tbench: dbench's `tbench_srv.c` (`sahlberg/dbench`): the listener `fork()`s one server
//!   process per accepted connection, whose loop reads a 4-byte length, the request body, and
//!   writes the reply of the size the request names; `sockio.c`: each client process (`tbench
//!   N` starts N) opens its connection and turns every operation of the netbench load file into
//!   `do_packets(send, recv)`: write the request, read the 4-byte header, then the reply
//!   (`MSG_WAITALL`). Sizes are the SMB exchange's: 39 to 200 bytes for metadata operations,
//!   up to 64 KB for `readx`/`writex` payloads. Its figure is MB/s of payload; here,
//!   transactions/s.
//! - netperf: the netperf manual (`HewlettPackard/netperf:doc/netperf.texi`, "TCP_RR"): "a
//!   user-space to user-space ping with no think time - it is a synchronous, one transaction
//!   at a time, request/response test", 1-byte request and response by default; several
//!   instances are run as concurrent netperf processes ("Running Concurrent Netperf Tests"),
//!   each served by its own netserver process; the figure is transactions per second.
//!
//! Simplified, and said so: a message's kernel work is the profile's socket send and receive
//! costs (`sock_send_ns`, `sock_recv_ns`, whatever the size), plus for tbench an exponential
//! `copy` of kernel work on the server's side standing for the copy of the payload (the load
//! file's mix of sizes is not replayed); the loopback's softirq work is part of the send's
//! cost, on the sender's CPU; no Nagle, delayed ACKs or socket-buffer limits (one message is
//! in flight per connection); connection set-up is not modelled (the pairs start connected).

use super::*;

pub(super) const TBENCH: Builtin = Builtin {
    name: "tbench",
    params: &[
        Param::int("clients", "16", 1, MAX_PAIRS),
        Param::dur("work", "2us"),
        Param::dur("server_work", "1us"),
        Param::dur("copy", "2us"),
    ],
    about: "dbench's tbench over loopback TCP: N client processes, each with its own forked tbench_srv process; per operation the client runs `work` (parsing its load file), sends a request and sleeps until the reply; the server wakes, runs `server_work` and a payload copy (exponential, mean `copy`, kernel work) and replies; transactions/s",
    build: |a| {
        let clients = a.int("clients")? as u32;
        let work = a.dur("work")?;
        let server_work = a.dur("server_work")?;
        let copy = a.dur("copy")?;
        Ok(tbench(clients, work, server_work, copy))
    },
};

pub(super) const NETPERF: Builtin = Builtin {
    name: "netperf",
    params: &[
        Param::int("instances", "16", 1, MAX_PAIRS),
        Param::dur("work", "500ns"),
        Param::dur("server_work", "500ns"),
    ],
    about: "netperf TCP_RR over loopback TCP: N concurrent netperf processes, each with its own netserver process, one 1-byte transaction in flight per pair and no think time beyond `work` (client) and `server_work` (server) of user time per transaction; transactions/s",
    build: |a| {
        let instances = a.int("instances")? as u32;
        let work = a.dur("work")?;
        let server_work = a.dur("server_work")?;
        Ok(netperf(instances, work, server_work))
    },
};

/// The most pairs: two tasks each, within the simulator's limit on tasks.
const MAX_PAIRS: i64 = super::super::limits::MAX_TASKS as i64 / 2;

/// The part of a pair both benchmarks share: `pairs` clients and servers, each pair with a
/// request and a reply channel (loopback TCP, one message in flight), every task its own
/// process. The client: `client_work`, send the request, sleep until the reply, count one
/// transaction. The server: sleep until a request, `server_ops`, send the reply.
fn rr_pairs(
    w: &mut Workload,
    name: &str,
    pairs: u32,
    client_work: u64,
    server_ops: &[Op],
    working_set_kb: u32,
) {
    let tcp = ChannelSpec {
        kind: ChanKind::Tcp,
        capacity: None,
    };
    // Channel 2i: client i's requests; 2i + 1: its replies. One program per side serves
    // every pair through its member index.
    for _ in 0..2 * pairs {
        w.channels.push(tcp.clone());
    }
    let (req, rep) = (0i64, 1i64);
    let mut client = ProgramBuilder::new();
    client.begin(None);
    if client_work > 0 {
        client.push(Op::Compute(Dist::Const(client_work)));
    }
    client.push(Op::SendMember {
        base: 0,
        count: 2 * pairs,
        offset: req,
    });
    client.push(Op::RecvMember {
        base: 0,
        count: 2 * pairs,
        offset: rep,
    });
    client.push(Op::Count);
    client.close();
    let mut server = ProgramBuilder::new();
    server.begin(None);
    server.push(Op::RecvMember {
        base: 0,
        count: 2 * pairs,
        offset: req,
    });
    for op in server_ops {
        server.push(op.clone());
    }
    server.push(Op::SendMember {
        base: 0,
        count: 2 * pairs,
        offset: rep,
    });
    server.close();
    let client_prog = w.programs.len() as u32;
    w.programs.push(
        client
            .build(format!("{name}_client"))
            .with_working_set(working_set_kb),
    );
    let server_prog = w.programs.len() as u32;
    w.programs.push(
        server
            .build(format!("{name}_server"))
            .with_working_set(working_set_kb),
    );
    // Member index 2i addresses channel 2i (+ offset): client and server i share it. The
    // client of pair i is task 2i, its server task 2i + 1, so pairs start side by side.
    for i in 0..pairs {
        for (prog, mm) in [(client_prog, 2 * i), (server_prog, 2 * i + 1)] {
            let mut t = TaskSpec::new(prog);
            t.member = 2 * i;
            t.mm = mm;
            w.tasks.push(t);
        }
    }
}

/// tbench (dbench 4.0's `tbench`/`tbench_srv`): `clients` client processes, each with its own
/// server process forked by tbench_srv. Per operation of the load file the client runs `work`
/// of user time (reading and parsing the operation), writes the request and sleeps until the
/// reply; the server wakes, runs `server_work` of user time and a copy of the payload
/// (kernel work, exponential with mean `copy`: the load file's mix of 39-byte replies and
/// 64 KB reads, not replayed) and writes the reply. The working set, an estimate: the 70 000-
/// byte buffer each side reads into, touched up to the message's size, about 16 KB.
pub fn tbench(clients: u32, work: u64, server_work: u64, copy: u64) -> Workload {
    let mut w = base(
        format!(
            "tbench:clients={clients},work={},server_work={},copy={}",
            fmt_dur(work),
            fmt_dur(server_work),
            fmt_dur(copy)
        ),
        "transactions/s",
    );
    let mut server_ops = Vec::new();
    if server_work > 0 {
        server_ops.push(Op::Compute(Dist::Const(server_work)));
    }
    if copy > 0 {
        server_ops.push(Op::KernelCompute(Dist::Exp(copy)));
    }
    rr_pairs(&mut w, "tbench", clients, work, &server_ops, 16);
    w
}

/// netperf TCP_RR (netperf 2.x): `instances` concurrent netperf processes, each with its own
/// netserver process, exchanging 1-byte requests and responses one at a time with no think
/// time; `work` and `server_work` are the user time of each side's loop per transaction (an
/// estimate: a few hundred instructions around the send and receive calls). The working set,
/// an estimate: the loop's stack and buffers, 4 KB.
pub fn netperf(instances: u32, work: u64, server_work: u64) -> Workload {
    let mut w = base(
        format!(
            "netperf:instances={instances},work={},server_work={}",
            fmt_dur(work),
            fmt_dur(server_work)
        ),
        "transactions/s",
    );
    let server_ops: Vec<Op> = if server_work > 0 {
        vec![Op::Compute(Dist::Const(server_work))]
    } else {
        Vec::new()
    };
    rr_pairs(&mut w, "netperf", instances, work, &server_ops, 4);
    w
}

//! Message passing: chat (the 2002 announcement's chat_c/chat_s), hackbench, schbench and rings
//! of processes passing a byte over pipes.

use super::*;

pub(super) const CHAT: Builtin = Builtin {
    name: "chat",
    params: &[
        Param::int("rooms", "10", 1, 1000),
        Param::int("messages", "100", 1, 1_000_000),
        Param::int("client_nice", "0", NICE_MIN as i64, NICE_MAX as i64),
    ],
    about: "Bill Hartner's chat_c/chat_s: rooms of 20 users, 4 threads per connection, TCP loopback; client_nice=19 is the announcement's `nice -n 19 ./chat_c` (the server not reniced); messages/s",
    build: |a| {
        let rooms = a.int("rooms")? as u32;
        let msgs = a.int("messages")? as u64;
        let client_nice = a.int("client_nice")? as i32;
        let mut w = chat(rooms, msgs);
        if client_nice != 0 {
            // `nice -n N ./chat_c`: the client's tasks only; chat_s runs at nice 0.
            for t in &mut w.tasks {
                if w.programs[t.prog as usize].name.starts_with("cli_") {
                    t.nice = client_nice;
                }
            }
            w.name.push_str(&format!(",client_nice={client_nice}"));
        }
        Ok(w)
    },
};

pub(super) const HACKBENCH: Builtin = Builtin {
    name: "hackbench",
    params: &[
        Param::int("groups", "10", 1, 10_000),
        Param::int("fds", "20", 1, 1_000),
        Param::int("loops", "100", 1, 100_000_000),
        Param::choice("mode", "pipe", &["pipe", "socket"]),
        Param::choice("threads", "0", &["0", "1"]),
    ],
    about: "rt-tests hackbench: per group `fds` senders each writing `loops` 100-byte messages to each of `fds` receivers, over pipes or sockets, as processes (threads=0) or threads (threads=1); the run's simulated time is hackbench's Time; messages/s",
    build: |a| {
        let groups = a.int("groups")? as u32;
        let fds = a.int("fds")? as u32;
        let loops = a.int("loops")? as u64;
        if groups as u64 * fds as u64 * 2 > super::super::limits::MAX_TASKS {
            return Err(a.err(format!(
                "groups={groups} with fds={fds} is {} tasks, more than {}",
                groups as u64 * fds as u64 * 2,
                super::super::limits::MAX_TASKS
            )));
        }
        let socket = a.choice("mode")? == "socket";
        let threads = a.choice("threads")? == "1";
        Ok(hackbench(groups, fds, loops, socket, threads))
    },
};

pub(super) const SCHBENCH: Builtin = Builtin {
    name: "schbench",
    params: &[
        Param::int("messages", "2", 1, 1000),
        Param::int("workers", "16", 1, 10_000),
        Param::dur("cputime", "10ms"),
        Param::dur("sleep", "10ms"),
    ],
    about: "Chris Mason's schbench, 2016 design: message threads wake their workers, each spins `cputime` and waits again; worker wakeup latency is the interactive figure; requests/s",
    build: |a| {
        let messages = a.int("messages")? as u32;
        let workers = a.int("workers")? as u32;
        if messages as u64 * (workers as u64 + 1) > super::super::limits::MAX_TASKS {
            return Err(a.err(format!(
                "messages={messages} with workers={workers} is more than {} tasks",
                super::super::limits::MAX_TASKS
            )));
        }
        let cputime = a.dur("cputime")?;
        let sleep = a.dur("sleep")?;
        if cputime == 0 {
            return Err(a.err("cputime must be longer than 0".into()));
        }
        Ok(schbench(messages, workers, cputime, sleep))
    },
};

pub(super) const PIPECHAIN: Builtin = Builtin {
    name: "pipechain",
    params: &[
        Param::int("groups", "4", 1, 100_000),
        Param::int("len", "8", 2, 100_000),
        Param::dur("delay", "0"),
    ],
    about: "G rings of L processes passing one byte along over pipes (the CFS v19 report's chained processes), the byte injected after `delay`; hops/s",
    build: |a| {
        let groups = a.int("groups")? as u32;
        let len = a.int("len")? as u32;
        let delay = a.dur("delay")?;
        if groups as u64 * len as u64 > super::super::limits::MAX_TASKS {
            return Err(a.err(format!(
                "groups={groups} with len={len} is {} tasks, more than {}",
                groups as u64 * len as u64,
                super::super::limits::MAX_TASKS
            )));
        }
        Ok(pipechain(groups, len, delay))
    },
};

/// Message size of chat and of the socket-buffer bound below.
const CHAT_CLIENTS_PER_ROOM: u32 = 20;
/// Messages a loopback TCP socket holds before send() blocks: 2.4's default receive buffer
/// (`tcp_rmem` 87380 bytes, Documentation/networking/ip-sysctl.txt) over chat's 100-byte
/// messages. A simplification: skb overhead would lower it.
const CHAT_SOCKET_CAPACITY: u32 = 87380 / 100;

/// chat_s/chat_c (benchmarks.md A1): per connection a client sender and receiver and a server
/// receiver and sender, all threads (CLONE_VM) of the client or the server process. Each
/// client sends `messages`; the server's sender for that user forwards each to the 19 others.
/// The figure is chat's "Average throughput": (sent + received) / elapsed.
pub fn chat(rooms: u32, messages: u64) -> Workload {
    let mut w = base(
        format!("chat:rooms={rooms},messages={messages}"),
        "messages/s",
    );
    const CLIENT_MM: u32 = 0;
    const SERVER_MM: u32 = 1;
    let conns = rooms * CHAT_CLIENTS_PER_ROOM;
    let sock = ChannelSpec {
        kind: ChanKind::Socket,
        capacity: Some(CHAT_SOCKET_CAPACITY),
    };
    // Channels: up[k] client->server, down[k] server->client, note[k] the server's SysV
    // semaphore slot that srv_rcv posts and srv_snd waits on.
    let up = |k: u32| k;
    let down = |k: u32| conns + k;
    let note = |k: u32| 2 * conns + k;
    for _ in 0..2 * conns {
        w.channels.push(sock.clone());
    }
    for _ in 0..conns {
        w.channels.push(ChannelSpec {
            kind: ChanKind::Semaphore,
            capacity: None,
        });
    }
    let others = (CHAT_CLIENTS_PER_ROOM - 1) as u64;
    for k in 0..conns {
        let room_base = k / CHAT_CLIENTS_PER_ROOM * CHAT_CLIENTS_PER_ROOM;
        let cli_snd = ProgramBuilder::new()
            .repeat(Some(messages))
            .op(Op::Send(up(k)))
            .op(Op::Count)
            .end()
            .op(Op::Exit)
            .build("cli_snd");
        let cli_rcv = ProgramBuilder::new()
            .repeat(Some(others * messages))
            .op(Op::Recv(down(k)))
            .op(Op::Count)
            .end()
            .op(Op::Exit)
            .build("cli_rcv");
        let srv_rcv = ProgramBuilder::new()
            .repeat(Some(messages))
            .op(Op::Recv(up(k)))
            .op(Op::Send(note(k)))
            .end()
            .op(Op::Exit)
            .build("srv_rcv");
        let mut snd = ProgramBuilder::new()
            .repeat(Some(messages))
            .op(Op::Recv(note(k)));
        for j in room_base..room_base + CHAT_CLIENTS_PER_ROOM {
            if j != k {
                snd = snd.op(Op::Send(down(j)));
            }
        }
        let srv_snd = snd.end().op(Op::Exit).build("srv_snd");
        for (prog, mm) in [
            (cli_snd, CLIENT_MM),
            (cli_rcv, CLIENT_MM),
            (srv_rcv, SERVER_MM),
            (srv_snd, SERVER_MM),
        ] {
            let id = w.programs.len() as u32;
            // A thread's working set, our estimate: the few stack lines and the 100-byte
            // buffer it touches plus the socket and task structures on its path - about 4 KB
            // (chat.h's 16 KB STACK_SIZE is allocated, not touched).
            w.programs.push(prog.with_working_set(4));
            let mut t = TaskSpec::new(id);
            t.mm = mm;
            w.tasks.push(t);
        }
    }
    w
}

/// Pipe capacity since Linux 2.6.11, pipe(7): 16 pages of 4 KB = 65 536 bytes, i.e. this many
/// of hackbench's 100-byte messages.
const PIPE_CAPACITY_MSGS: u32 = 65_536 / 100;

/// hackbench of rt-tests v2.4 (benchmarks.md A1b): `groups` groups, each of `fds` receivers
/// (one channel each) and `fds` senders; every sender writes `loops` times to each receiver
/// in turn, every receiver reads `fds * loops` messages. The run ends when all have finished,
/// so the simulated time is hackbench's `Time:`. Processes (each its own address space) or,
/// with `threads`, threads of one process. Simplified, and said so: the ready/wake start
/// barrier is left out (every task starts at time 0); socket mode (AF_UNIX `socketpair`) uses
/// the socket cost model with chat's 2.4 TCP receive buffer as its capacity, not AF_UNIX's
/// own send-buffer accounting.
pub fn hackbench(groups: u32, fds: u32, loops: u64, socket: bool, threads: bool) -> Workload {
    let mut w = base(
        format!(
            "hackbench:groups={groups},fds={fds},loops={loops},mode={},threads={}",
            if socket { "socket" } else { "pipe" },
            threads as u8
        ),
        "messages/s",
    );
    let chan = ChannelSpec {
        kind: if socket {
            ChanKind::Socket
        } else {
            ChanKind::Pipe
        },
        capacity: Some(if socket {
            CHAT_SOCKET_CAPACITY
        } else {
            PIPE_CAPACITY_MSGS
        }),
    };
    let mut mm = 0u32;
    for g in 0..groups {
        let base_ch = w.channels.len() as u32;
        for _ in 0..fds {
            w.channels.push(chan.clone());
        }
        let mut sender = ProgramBuilder::new();
        sender.begin(Some(loops));
        for j in 0..fds {
            sender.push(Op::Send(base_ch + j));
        }
        sender.close();
        let sender_prog = w.programs.len() as u32;
        w.programs.push(
            sender
                .build(format!("hackbench_sender{g}"))
                .with_working_set(8),
        );
        let mut receiver = ProgramBuilder::new();
        receiver.begin(Some(fds as u64 * loops));
        receiver.push(Op::RecvMember {
            base: base_ch,
            count: fds,
            offset: 0,
        });
        receiver.push(Op::Count);
        receiver.close();
        let receiver_prog = w.programs.len() as u32;
        w.programs.push(
            receiver
                .build(format!("hackbench_receiver{g}"))
                .with_working_set(8),
        );
        for (prog, _) in [(receiver_prog, "receiver"), (sender_prog, "sender")] {
            for j in 0..fds {
                let mut t = TaskSpec::new(prog);
                t.member = j;
                t.mm = if threads { 0 } else { mm };
                mm += 1;
                w.tasks.push(t);
            }
        }
    }
    w
}

/// schbench as first published (benchmarks.md A7, `masoncl/schbench` 36d859a, 2016):
/// `messages` message threads, each with `workers` workers, threads of one process. A worker
/// spins `cputime`, posts itself to its messenger and waits (FUTEX_WAIT); the messenger
/// sleeps `sleep` plus up to a quarter more, then wakes every worker that posted. schbench's
/// figure, the time from that wake to the worker running, is the simulator's wakeup latency
/// of the workers, reported as the interactive percentiles (p50/p99/max; schbench prints more
/// percentiles from a log histogram). Futex wake/wait are modelled as semaphore up/down.
/// Simplified, and said so: the messenger waits for all its workers to have posted before it
/// wakes them (schbench wakes whoever is on its list and leaves late posters for the next
/// round), which only matters when workers cannot finish `cputime` within a sleep.
pub fn schbench(messages: u32, workers: u32, cputime_ns: u64, sleep_ns: u64) -> Workload {
    let mut w = base(
        format!(
            "schbench:messages={messages},workers={workers},cputime={},sleep={}",
            fmt_dur(cputime_ns),
            fmt_dur(sleep_ns)
        ),
        "requests/s",
    );
    let sem = || ChannelSpec {
        kind: ChanKind::Semaphore,
        capacity: None,
    };
    for m in 0..messages {
        // Channel of messenger m's posts, then one wake channel per worker.
        let post = w.channels.len() as u32;
        w.channels.push(sem());
        let wake0 = w.channels.len() as u32;
        for _ in 0..workers {
            w.channels.push(sem());
        }
        let mut b = ProgramBuilder::new();
        b.begin(None);
        b.push(Op::Sleep {
            dur: Dist::Uniform(sleep_ns, sleep_ns + sleep_ns / 4),
            uninterruptible: false,
            irq_cpu: None,
        });
        for _ in 0..workers {
            b.push(Op::Recv(post));
        }
        for j in 0..workers {
            b.push(Op::Send(wake0 + j));
        }
        b.close();
        let prog = w.programs.len() as u32;
        w.programs
            .push(b.build(format!("schbench_message{m}")).with_working_set(16));
        w.tasks.push(TaskSpec::new(prog));
        for j in 0..workers {
            let mut b = ProgramBuilder::new();
            b.begin(None);
            b.push(Op::Compute(Dist::Const(cputime_ns)));
            b.push(Op::Send(post));
            b.push(Op::Recv(wake0 + j));
            b.push(Op::Count);
            b.close();
            let prog = w.programs.len() as u32;
            w.programs.push(
                b.build(format!("schbench_worker{m}.{j}"))
                    .with_working_set(16),
            );
            let mut t = TaskSpec::new(prog);
            t.interactive = true;
            w.tasks.push(t);
        }
    }
    w
}

/// `groups` rings of `len` processes joined by pipes, each reading one byte from the process
/// before it and writing it to the one after (the CFS v19 report's pipe-chained processes;
/// lmbench lat_ctx's ring with no array to walk). One byte circulates per ring, injected by
/// its first process. The report's own program is not in the reference: that the chain is
/// a closed ring with one byte in flight is this model's reading of "passing one byte along".
/// Every process starts runnable at time 0 and blocks on its pipe when it first runs; with
/// `delay`, each ring's first process sleeps that long before injecting the byte, so that the
/// byte circulates among processes that have all started (as when a program creates every
/// chain before starting them).
pub fn pipechain(groups: u32, len: u32, delay_ns: u64) -> Workload {
    let name = if delay_ns > 0 {
        format!(
            "pipechain:groups={groups},len={len},delay={}",
            fmt_dur(delay_ns)
        )
    } else {
        format!("pipechain:groups={groups},len={len}")
    };
    let mut w = base(name, "hops/s");
    w.per_op_label = Some("us_per_hop".into());
    let mut mm = 0u32;
    for g in 0..groups {
        let base_ch = w.channels.len() as u32;
        for _ in 0..len {
            w.channels.push(ChannelSpec {
                kind: ChanKind::Pipe,
                capacity: Some(PIPE_CAPACITY_MSGS),
            });
        }
        // Member i reads pipe i-1 and writes pipe i; member 0 first injects the byte.
        let hop = |b: &mut ProgramBuilder| {
            b.begin(None);
            b.push(Op::RecvMember {
                base: base_ch,
                count: len,
                offset: -1,
            });
            b.push(Op::Count);
            b.push(Op::SendMember {
                base: base_ch,
                count: len,
                offset: 0,
            });
            b.close();
        };
        let mut first = ProgramBuilder::new();
        if delay_ns > 0 {
            first.push(Op::Sleep {
                dur: Dist::Const(delay_ns),
                uninterruptible: false,
                irq_cpu: None,
            });
        }
        first.push(Op::Send(base_ch));
        hop(&mut first);
        let first_prog = w.programs.len() as u32;
        w.programs
            .push(first.build(format!("pipechain{g}.0")).with_working_set(8));
        let mut rest = ProgramBuilder::new();
        hop(&mut rest);
        let rest_prog = w.programs.len() as u32;
        w.programs
            .push(rest.build(format!("pipechain{g}")).with_working_set(8));
        for i in 0..len {
            let mut t = TaskSpec::new(if i == 0 { first_prog } else { rest_prog });
            t.member = i;
            t.mm = mm;
            mm += 1;
            w.tasks.push(t);
        }
    }
    w
}

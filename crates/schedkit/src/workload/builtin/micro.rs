//! Micro-benchmarks: yield loops, lmbench's lat_proc and lat_ctx, busy loops and fixed CPU jobs.

use super::*;

pub(super) const YIELD: Builtin = Builtin {
    name: "yield",
    params: &[Param::int("instances", "4", 1, 100_000)],
    about: "N tasks calling sched_yield() in a loop (the announcement's loop_yield); yields/s",
    build: |a| Ok(yield_loop(a.int("instances")? as u32)),
};

pub(super) const FORK: Builtin = Builtin {
    name: "fork",
    params: &[Param::choice("mode", "exit", &["exit", "exec", "sh"])],
    about: "lmbench lat_proc: fork+exit, fork+exec (mode=exec) or fork+/bin/sh -c (mode=sh) in a loop; forks/s",
    build: |a| Ok(fork(a.choice("mode")?)),
};

pub(super) const CTX: Builtin = Builtin {
    name: "ctx",
    params: &[
        Param::int("procs", "2", 2, 100_000),
        Param::int("size", "0", 0, 1 << 20),
    ],
    about: "lmbench lat_ctx: a token passed round a ring of N processes over pipes, each touching size KB; hops/s",
    build: |a| Ok(ctx(a.int("procs")? as u32, a.int("size")? as u32)),
};

pub(super) const LOOPS: Builtin = Builtin {
    name: "loops",
    params: &[
        Param::int("n", "4", 1, super::super::limits::MAX_TASKS as i64),
        Param::choice("policy", "normal", &["normal", "other", "batch", "idle"]),
        Param::choice("from", "none", &["none", "shell"]),
    ],
    about: "N endless busy loops (the CFS v19 report's `while(1)` hogs), SCHED_OTHER, SCHED_BATCH or SCHED_IDLE; from=shell: forked one by one by a nice-0 shell loop (`nice -n N ./loop &`: fork, exec of nice, setpriority, exec of the loop), competing with the loops already running; CPU-seconds/s",
    build: |a| {
        let n = a.int("n")? as u32;
        let policy = match a.choice("policy")? {
            "batch" => SchedPolicy::Batch,
            "idle" => SchedPolicy::Idle,
            _ => SchedPolicy::Normal,
        };
        Ok(match a.choice("from")? {
            "shell" => {
                // The loops set their own nice level after the fork; the shell stays at 0.
                a.nice_applied = true;
                loops_from_shell(n, policy, a.nice)
            }
            _ => loops(n, policy),
        })
    },
};

pub(super) const CPUJOB: Builtin = Builtin {
    name: "cpujob",
    params: &[
        Param::int("threads", "1", 1, 4096),
        Param::text("work", "100s"),
    ],
    about: "N CPU-bound threads of one process, each with a fixed job: work=CYCLES (a number) or a time at the machine's top non-turbo clock (100s); the run ends when all are done (completion time = simulated time, as the BFS 0.400 posts measured it); jobs/s",
    build: |a| {
        let threads = a.int("threads")? as u32;
        let v = a.text("work");
        let work = match v.trim().parse::<f64>() {
            Ok(c) if c.is_finite() && (1.0..=1e16).contains(&c) => CpuWork::Cycles(c as u64),
            Ok(_) => return Err(a.err(format!("work={v}: cycles must be within 1..=1e16"))),
            Err(_) => {
                let ns = parse_duration(v).map_err(|e| a.err(format!("work: {e}")))?;
                if ns == 0 {
                    return Err(a.err("work must be more than 0".into()));
                }
                CpuWork::Time(ns)
            }
        };
        Ok(cpujob(threads, work))
    },
};

/// loop_yield: an endless `sched_yield()` loop per instance (benchmarks.md A2).
pub fn yield_loop(instances: u32) -> Workload {
    let mut w = base(format!("yield:instances={instances}"), "yields/s");
    let prog = ProgramBuilder::new()
        .repeat(None)
        .op(Op::Yield)
        .op(Op::Count)
        .end()
        .build("loop_yield");
    w.programs.push(prog.with_working_set(4));
    for i in 0..instances {
        let mut t = TaskSpec::new(0);
        t.mm = i;
        w.tasks.push(t);
    }
    w
}

/// Resident pages of lmbench's `lat_proc` parent (after its first forks), of `/tmp/hello` and
/// of `/bin/sh` (dash), for the address-space model: `/proc/PID/statm` on the project machine
/// (glibc 2.36, Debian 12) as `scripts/mm-sizes.sh` prints them, rounded (they vary by about
/// 15 pages from run to run). The 2002 programs, linked against glibc 2.2, were smaller: these
/// are upper bounds (no 2002 measurement was found).
pub const LAT_PROC_PAGES: u32 = 290;
pub const HELLO_PAGES: u32 = 275;
pub const SH_PAGES: u32 = 420;

/// lmbench lat_proc (benchmarks.md A3): the parent forks, the child exits (or execs
/// /tmp/hello, or execs /bin/sh -c /tmp/hello), the parent waits.
///
/// The pages each side writes after a fork (what copy-on-write sees): the parent takes one
/// write fault as `fork()` returns (its stack) and a second in `wait()` (the status word), as
/// `getrusage` minor-fault counts of such a loop show on the project machine
/// (`scripts/mm-sizes.sh`). The child that exits writes its stack and the stdio state `exit()`
/// flushes (2 pages); the child that execs writes its stack for `close(1)` and the `execve`
/// arguments (1 page). (Today's glibc child takes ~16 faults in its fork wrapper; the 2002
/// one had no such work: the child's counts are our estimate for 2002.)
pub fn fork(mode: &str) -> Workload {
    let mut w = base(format!("fork:mode={mode}"), "forks/s");
    w.per_op_label = Some(
        match mode {
            "exit" => "fork_exit_us",
            "exec" => "fork_exec_us",
            _ => "fork_sh_us",
        }
        .into(),
    );
    // Program 0: the parent; 1: the child; 2: hello run by the shell.
    let parent = ProgramBuilder::new()
        .repeat(None)
        .op(Op::Fork {
            prog: 1,
            thread: false,
        })
        .op(Op::Dirty(1))
        .op(Op::Wait)
        .op(Op::Dirty(2))
        .op(Op::Count)
        .end()
        .build("lat_proc");
    let (child, child_pages) = match mode {
        "exit" => (
            ProgramBuilder::new()
                .op(Op::Dirty(2))
                .op(Op::Exit)
                .build("child"),
            LAT_PROC_PAGES,
        ),
        "exec" => (
            ProgramBuilder::new()
                .op(Op::Dirty(1))
                .op(Op::Kernel(KernelWork::Exec))
                .op(Op::Exit)
                .build("hello"),
            HELLO_PAGES,
        ),
        _ => (
            // sh forks hello as lat_proc forks its child, and writes as lat_proc does.
            ProgramBuilder::new()
                .op(Op::Dirty(1))
                .op(Op::Kernel(KernelWork::Exec))
                .op(Op::Kernel(KernelWork::ShellStartup))
                .op(Op::Fork {
                    prog: 2,
                    thread: false,
                })
                .op(Op::Dirty(1))
                .op(Op::Wait)
                .op(Op::Dirty(2))
                .op(Op::Exit)
                .build("sh"),
            SH_PAGES,
        ),
    };
    let hello = ProgramBuilder::new()
        .op(Op::Dirty(1))
        .op(Op::Kernel(KernelWork::Exec))
        .op(Op::Exit)
        .build("hello");
    // A program's pages are its image after exec (the forked child starts with a copy of its
    // parent's address space, whatever its program says).
    w.programs
        .push(parent.with_working_set(16).with_mm_pages(LAT_PROC_PAGES));
    w.programs
        .push(child.with_working_set(16).with_mm_pages(child_pages));
    w.programs
        .push(hello.with_working_set(16).with_mm_pages(HELLO_PAGES));
    w.tasks.push(TaskSpec::new(0));
    w
}

/// lmbench lat_ctx (benchmarks.md A3): a ring of `procs` processes joined by pipes; each reads
/// the token, walks its private `size` KB array, and writes the token on.
pub fn ctx(procs: u32, size_kb: u32) -> Workload {
    let mut w = base(format!("ctx:procs={procs},size={size_kb}"), "hops/s");
    w.per_op_label = Some("us_per_hop".into());
    for _ in 0..procs {
        w.channels.push(ChannelSpec {
            kind: ChanKind::Pipe,
            capacity: None,
        });
    }
    for i in 0..procs {
        let prev = (i + procs - 1) % procs;
        let mut b = ProgramBuilder::new();
        if i == 0 {
            // The parent injects the token.
            b.push(Op::Send(0));
        }
        b.begin(None);
        b.push(Op::Recv(prev));
        b.push(Op::Touch);
        b.push(Op::Count);
        b.push(Op::Send(i));
        b.close();
        w.programs
            .push(b.build(format!("lat_ctx{i}")).with_working_set(size_kb));
        let mut t = TaskSpec::new(i);
        t.mm = i;
        w.tasks.push(t);
    }
    w
}

/// `n` endless busy loops. Each counts one unit per 10 ms of CPU it gets, scaled back to
/// CPU-seconds per second, so the figure is the CPU the loops received (at most the CPU count).
pub fn loops(n: u32, policy: SchedPolicy) -> Workload {
    let pol = match policy {
        SchedPolicy::Batch => ",policy=batch",
        SchedPolicy::Idle => ",policy=idle",
        SchedPolicy::Iso => ",policy=iso",
        _ => "",
    };
    let mut w = base(format!("loops:n={n}{pol}"), "CPU-s/s");
    let prog = ProgramBuilder::new()
        .repeat(None)
        .op(Op::Compute(Dist::Const(10_000_000)))
        .op(Op::Count)
        .end()
        .build("loop");
    w.programs.push(prog.with_working_set(4));
    w.throughput_scale = 0.01;
    for i in 0..n {
        let mut t = TaskSpec::new(0);
        t.mm = i;
        t.policy = policy;
        w.tasks.push(t);
    }
    w
}

/// `n` busy loops started as the CFS v19 report started them: a nice-0 shell loop forks them
/// one after another (`for ...; do nice -n 19 ./loop & done`), each child paying the fork, an
/// exec of `nice`, its `setpriority` and the exec of the loop, while the loops already
/// started compete with the shell for the CPU. The shell exits once the last is started.
/// The shell's own interpretation of the loop line is not charged (no source gives it).
pub fn loops_from_shell(n: u32, policy: SchedPolicy, nice: i32) -> Workload {
    let mut w = loops(n, policy);
    w.name = w.name.replacen(
        &format!("loops:n={n}"),
        &format!("loops:n={n},from=shell"),
        1,
    );
    w.tasks.clear();
    // Program 0 becomes the child: `nice -n N` (exec, setpriority) execs the loop.
    let mut child = ProgramBuilder::new().op(Op::Kernel(KernelWork::Exec));
    if nice != 0 {
        child = child.op(Op::SetNice(nice));
    }
    if policy != SchedPolicy::Normal {
        child = child.op(Op::SetPolicy(policy, 0));
    }
    let working_set = w.programs[0].working_set_kb;
    w.programs[0] = child
        .op(Op::Kernel(KernelWork::Exec))
        .repeat(None)
        .op(Op::Compute(Dist::Const(10_000_000)))
        .op(Op::Count)
        .end()
        .build("loop")
        .with_working_set(working_set);
    let shell = ProgramBuilder::new()
        .repeat(Some(n as u64))
        .op(Op::Fork {
            prog: 0,
            thread: false,
        })
        .end()
        .op(Op::Exit)
        .build("shell");
    w.programs.push(shell.with_working_set(16));
    w.tasks.push(TaskSpec::new(1));
    w
}

/// A `cpujob`'s work per thread: cycles, or a time at the machine's top non-turbo clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CpuWork {
    Cycles(u64),
    Time(u64),
}

/// `threads` CPU-bound threads of one process, each with a fixed job cut into 100 pieces
/// (each counted, so throughput is jobs per second); the run ends when every job is done and
/// its simulated time is the completion time the BFS 0.400 posts quoted ("took 126 seconds").
/// A main thread creates the workers with `clone(CLONE_VM)` and waits for them, so that the
/// policy places each one as it would a new thread.
pub fn cpujob(threads: u32, work: CpuWork) -> Workload {
    let (spec, piece) = match work {
        CpuWork::Cycles(c) => (format!("{c}"), Op::ComputeCycles(c.div_ceil(100))),
        CpuWork::Time(ns) => (fmt_dur(ns), Op::Compute(Dist::Const(ns.div_ceil(100)))),
    };
    let mut w = base(format!("cpujob:threads={threads},work={spec}"), "jobs/s");
    let worker = ProgramBuilder::new()
        .repeat(Some(100))
        .op(piece)
        .op(Op::Count)
        .end()
        .op(Op::Exit)
        .build("cpujob-worker");
    w.programs.push(worker.with_working_set(64));
    let main = ProgramBuilder::new()
        .repeat(Some(threads as u64))
        .op(Op::Fork {
            prog: 0,
            thread: true,
        })
        .end()
        .repeat(Some(threads as u64))
        .op(Op::Wait)
        .end()
        .op(Op::Exit)
        .build("cpujob");
    w.programs.push(main.with_working_set(4));
    w.throughput_scale = 0.01;
    w.tasks.push(TaskSpec::new(1));
    w
}

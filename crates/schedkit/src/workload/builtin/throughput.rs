//! Throughput: a parallel build, AIM7's shared mix under the big kernel lock, and an x264
//! encoder's pipeline of frame threads.

use super::*;

pub(super) const MAKEJ: Builtin = Builtin {
    name: "makej",
    params: &[
        Param::int("jobs", "8", 1, 100_000),
        Param::int("units", "64", 1, 10_000_000),
    ],
    about: "a parallel build: make keeps N compile jobs (CPU bursts with short I/O waits) running; jobs/s",
    build: |a| Ok(makej(a.int("jobs")? as u64, a.int("units")? as u64)),
};

pub(super) const AIM7: Builtin = Builtin {
    name: "aim7",
    params: &[
        Param::int("tasks", "2000", 1, 100_000),
        Param::int("jobs", "10", 1, 100_000),
        Param::num("bkl", "0.3", 0.0, 0.7),
        Param::dur("hold", "10us"),
    ],
    about: "AIM7 shared mix: N tasks each running a job list (user compute, disk I/O, fork+exec, system calls under the big kernel lock, taken by a `bkl` share of the jobs) beside an interactive task; jobs/min",
    build: |a| {
        let tasks = a.int("tasks")? as u32;
        let jobs = a.int("jobs")? as u32;
        let bkl = a.num("bkl")?;
        let hold = a.dur("hold")?;
        // Each task's job list is its own program (jobs are drawn per task): refuse a size the
        // machine cannot hold before building it.
        let statements = tasks as u64 * (jobs as u64 * AIM7_MAX_OPS_PER_JOB + 2);
        if statements > super::super::limits::MAX_TOTAL_OPS {
            return Err(a.err(format!(
                "tasks={tasks} with jobs={jobs} would be up to {statements} program statements, more than the limit of {} (lower tasks or jobs)",
                super::super::limits::MAX_TOTAL_OPS
            )));
        }
        Ok(aim7(tasks, jobs, bkl, hold))
    },
};

pub(super) const X264: Builtin = Builtin {
    name: "x264",
    params: &[
        Param::int("threads", "6", 1, 1024),
        Param::int("frames", "240", 1, 1_000_000),
        Param::int("rows", "68", 2, 10_000),
        Param::dur("row", "2ms"),
        Param::int("mvrange", "3", 0, 10_000),
        Param::dur("lookahead", "10ms"),
    ],
    about: "an x264 encoder model (frame threads in a pipeline, each row waiting for `mvrange` more rows of the previous frame, a lookahead thread, the main thread waiting for the oldest frame); the run ends when every frame is encoded; frames/s",
    build: |a| {
        let threads = a.int("threads")? as u32;
        let frames = a.int("frames")? as u32;
        let rows = a.int("rows")? as u32;
        let row = a.dur("row")?;
        let mvrange = a.int("mvrange")? as u32;
        let lookahead = a.dur("lookahead")?;
        if mvrange >= rows {
            return Err(a.err(format!(
                "mvrange={mvrange} with rows={rows}: a row may reach at most rows-1 rows ahead"
            )));
        }
        if row == 0 {
            return Err(a.err("row must be longer than 0".into()));
        }
        let frames_up = frames.div_ceil(threads) as u64 * threads as u64;
        if frames_up * (rows as u64 * 3 + 8) > super::super::limits::MAX_TOTAL_OPS {
            return Err(a.err(format!(
                "frames={frames} of rows={rows} is too large a program (lower frames or rows)"
            )));
        }
        Ok(x264(X264 {
            threads,
            frames,
            rows,
            row_ns: row,
            mvrange,
            lookahead_ns: lookahead,
        }))
    },
};

/// A `make -jN` build (benchmarks.md A8): make keeps `jobs` compile jobs running until `units`
/// have been built. A job execs the compiler, then alternates CPU bursts (log-normal, median
/// 50 ms, four per job: ~0.2 s of CPU per file) with short uninterruptible I/O waits
/// (exponential, mean 1 ms: a warm page cache).
pub fn makej(jobs: u64, units: u64) -> Workload {
    let jobs = jobs.min(units);
    let mut w = base(format!("makej:jobs={jobs},units={units}"), "jobs/s");
    let mut make = ProgramBuilder::new();
    make.begin(Some(jobs));
    make.push(Op::Fork {
        prog: 1,
        thread: false,
    });
    make.close();
    if units > jobs {
        make.begin(Some(units - jobs));
        make.push(Op::Wait);
        make.push(Op::Fork {
            prog: 1,
            thread: false,
        });
        make.close();
    }
    make.begin(Some(jobs));
    make.push(Op::Wait);
    make.close();
    make.push(Op::Exit);
    let job = ProgramBuilder::new()
        .op(Op::Kernel(KernelWork::Exec))
        .repeat(Some(4))
        .op(Op::Compute(Dist::LogNormal(50_000_000, 0.8)))
        .op(Op::Sleep {
            dur: Dist::Exp(1_000_000),
            uninterruptible: true,
            irq_cpu: None,
        })
        .end()
        .op(Op::Count)
        .op(Op::Exit)
        .build("cc1");
    w.programs.push(make.build("make").with_working_set(64));
    // A compiler's working set is larger than a 2002 L2: it always refills after a migration.
    w.programs.push(job.with_working_set(512));
    w.tasks.push(TaskSpec::new(0));
    w
}

/// The most statements one AIM7 job adds to its task's program (the system-call job: four
/// lock/unlock sections of four statements, its entry and its count).
const AIM7_MAX_OPS_PER_JOB: u64 = 18;

/// splitmix64: a fixed, seedable hash for AIM7's per-task job draws.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// AIM7 (benchmarks.md A5), modelled as the reference suggests for a simulator: `tasks`
/// independent job streams sharing one global sleeping lock, the big kernel lock of
/// 2.6.26-rc1 (a semaphore; its hand-over follows `--lock-mode`). Each task runs `jobs` jobs
/// back to back, drawn per task from a fixed hash of (task, job) as AIM7 draws with a pid seed:
///
/// - user compute (the rest of the mix; workfile.shared is 39.7% pure user time): exp(1 ms);
/// - disk I/O, 20%: 50 µs in the kernel, an uninterruptible wait exp(2 ms), 200 µs of user work;
/// - process, 10%: fork a child that execs and exits, and wait for it;
/// - system calls under the BKL, `bkl` of the jobs (30%): four times, 10 µs of kernel work,
///   then the BKL held for `hold` of non-preemptible kernel work (tty, ioctl, char-device
///   open: the paths that still took the BKL in 2008).
///
/// The job sizes are our estimates of the mix's shape, not measurements. Beside the tasks runs
/// one interactive task (the console-switch test); its wakeup latency is reported on its own.
/// The figure is AIM7's Jobs per Minute.
pub fn aim7(tasks: u32, jobs: u32, bkl_share: f64, hold_ns: u64) -> Workload {
    let mut w = base(
        format!(
            "aim7:tasks={tasks},jobs={jobs},bkl={bkl_share},hold={}",
            fmt_dur(hold_ns)
        ),
        "jobs/min",
    );
    w.throughput_scale = 60.0;
    w.locks.push((
        "bkl".into(),
        super::super::LockSpec::Semaphore {
            count: 1,
            mode: None,
        },
    ));
    const BKL: u32 = 0;
    // Program 0: the exec'd child of a process job.
    w.programs.push(
        ProgramBuilder::new()
            .op(Op::Kernel(KernelWork::Exec))
            .op(Op::Exit)
            .build("aim7-child")
            .with_working_set(16),
    );
    let (disk, process) = (0.2, 0.1);
    for task in 0..tasks {
        let mut b = ProgramBuilder::new();
        for job in 0..jobs {
            let u =
                (splitmix(((task as u64) << 32) | job as u64) >> 11) as f64 / (1u64 << 53) as f64;
            if u < bkl_share {
                for _ in 0..4 {
                    b.push(Op::KernelCompute(Dist::Const(10_000)));
                    b.push(Op::Lock(BKL));
                    b.push(Op::KernelCompute(Dist::Const(hold_ns)));
                    b.push(Op::Unlock(BKL));
                }
            } else if u < bkl_share + disk {
                b.push(Op::KernelCompute(Dist::Const(50_000)));
                b.push(Op::Sleep {
                    dur: Dist::Exp(2_000_000),
                    uninterruptible: true,
                    irq_cpu: None,
                });
                b.push(Op::Compute(Dist::Exp(200_000)));
            } else if u < bkl_share + disk + process {
                b.push(Op::Fork {
                    prog: 0,
                    thread: false,
                });
                b.push(Op::Wait);
            } else {
                b.push(Op::Compute(Dist::Exp(1_000_000)));
            }
            b.push(Op::Count);
        }
        b.push(Op::Exit);
        w.programs
            .push(b.build(format!("aim7-{task}")).with_working_set(32));
        let mut t = TaskSpec::new(task + 1);
        t.mm = task;
        w.tasks.push(t);
    }
    let ia = interactive(20_000_000, 1_000_000);
    w.append(ia, 1);
    w.name = format!(
        "aim7:tasks={tasks},jobs={jobs},bkl={bkl_share},hold={}",
        fmt_dur(hold_ns)
    );
    w
}

/// The parameters of the x264 model.
#[derive(Clone, Copy, Debug)]
pub struct X264 {
    pub threads: u32,
    pub frames: u32,
    pub rows: u32,
    pub row_ns: u64,
    pub mvrange: u32,
    pub lookahead_ns: u64,
}

/// x264's frame threading, as `doc/threads.txt` describes it (benchmarks.md A8): `threads`
/// frame threads of one process encode frames round robin (thread j takes frames j, j+T, …);
/// a frame's macroblock row r may use only reference rows already encoded, so before row r
/// its thread waits until the previous frame's thread has published rows up to r + `mvrange`
/// (x264's `i_mv_range_thread`, in rows), then computes the row and publishes it (x264's
/// condition-variable broadcast of row progress, modelled as a semaphore post the next frame's
/// thread waits on). A lookahead thread analyses each frame first (`lookahead` of CPU per frame,
/// at most 40 frames ahead: x264's default rc-lookahead of the medium preset), and the main
/// thread hands each frame thread its next frame once that thread's previous frame is done,
/// waiting for the oldest frame in order as x264cli does. Every frame is a P frame referencing
/// the one before (B-frames, which nothing references, and the I-frame's lack of a reference
/// are left out); frame 0's reference counts as already encoded. Row times are log-normal
/// around `row` (σ 0.3: rows differ in content — an estimate, as are the defaults: 68 rows of
/// a 1080p frame, 2 ms a row, a 3-row MV range). `frames` is rounded up to a multiple of
/// `threads`. The run ends when every frame is encoded: its simulated time is the encode's
/// wall time; the figure is frames per second.
pub fn x264(p: X264) -> Workload {
    let t = p.threads;
    let per_thread = p.frames.div_ceil(t) as u64;
    let frames = per_thread * t as u64;
    let mut w = base(
        format!(
            "x264:threads={t},frames={frames},rows={},row={},mvrange={},lookahead={}",
            p.rows,
            fmt_dur(p.row_ns),
            p.mvrange,
            fmt_dur(p.lookahead_ns)
        ),
        "frames/s",
    );
    let sem = |capacity| ChannelSpec {
        kind: ChanKind::Semaphore,
        capacity,
    };
    // row.{j}: rows thread j has published; go.{j}: main's "start your next frame";
    // done.{j}: thread j's frame is finished; la: frames the lookahead has analysed.
    let row0 = w.channels.len() as u32;
    w.channels.extend((0..t).map(|_| sem(None)));
    let go0 = w.channels.len() as u32;
    w.channels.extend((0..t).map(|_| sem(None)));
    let done0 = w.channels.len() as u32;
    w.channels.extend((0..t).map(|_| sem(None)));
    let la = w.channels.len() as u32;
    w.channels.push(sem(Some(40)));

    let member = |base: u32, offset: i64| (base, t, offset);
    let send_m = |(base, count, offset): (u32, u32, i64)| Op::SendMember {
        base,
        count,
        offset,
    };
    let recv_m = |(base, count, offset): (u32, u32, i64)| Op::RecvMember {
        base,
        count,
        offset,
    };
    let row_work = Op::Compute(Dist::LogNormal(p.row_ns, 0.3));
    let d = p.mvrange as u64;
    let rows = p.rows as u64;
    let mut f = ProgramBuilder::new();
    f.begin(Some(per_thread));
    f.push(recv_m(member(go0, 0)));
    f.push(Op::Recv(la));
    for _ in 0..d {
        f.push(recv_m(member(row0, -1)));
    }
    f.begin(Some(rows - d));
    f.push(recv_m(member(row0, -1)));
    f.push(row_work.clone());
    f.push(send_m(member(row0, 0)));
    f.close();
    if d > 0 {
        f.begin(Some(d));
        f.push(row_work);
        f.push(send_m(member(row0, 0)));
        f.close();
    }
    f.push(send_m(member(done0, 0)));
    f.close();
    f.push(Op::Exit);
    // A frame thread touches its frame's band and the reference's search window.
    let frame_prog = w.programs.len() as u32;
    w.programs
        .push(f.build("x264-frame").with_working_set(1024));

    let lookahead = ProgramBuilder::new()
        .repeat(Some(frames))
        .op(Op::Compute(Dist::Const(p.lookahead_ns)))
        .op(Op::Send(la))
        .end()
        .op(Op::Exit)
        .build("x264-lookahead");
    let la_prog = w.programs.len() as u32;
    w.programs.push(lookahead.with_working_set(512));

    let mut m = ProgramBuilder::new();
    // Frame 0's reference (the frame before the run) is already encoded.
    m.begin(Some(rows));
    m.push(Op::Send(row0 + t - 1));
    m.close();
    for j in 0..t {
        m.push(Op::Send(go0 + j));
    }
    if per_thread > 1 {
        m.begin(Some(per_thread - 1));
        for j in 0..t {
            m.push(Op::Recv(done0 + j));
            m.push(Op::Count);
            m.push(Op::Send(go0 + j));
        }
        m.close();
    }
    for j in 0..t {
        m.push(Op::Recv(done0 + j));
        m.push(Op::Count);
    }
    m.push(Op::Exit);
    let main_prog = w.programs.len() as u32;
    w.programs.push(m.build("x264").with_working_set(64));

    w.tasks.push(TaskSpec::new(main_prog));
    w.tasks.push(TaskSpec::new(la_prog));
    for j in 0..t {
        let mut ts = TaskSpec::new(frame_prog);
        ts.member = j;
        w.tasks.push(ts);
    }
    w
}

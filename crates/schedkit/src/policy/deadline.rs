//! The deadline class (`dl_sched_class`, Linux 3.14+, `kernel/sched/deadline.c` of 6.18 and
//! `Documentation/scheduler/sched-deadline.rst`), stacked by the core in front of the RT
//! class: every runnable `SCHED_DEADLINE` task runs before any RT or normal task.
//!
//! - **EDF** (rst §2, §3): each runqueue keeps its deadline tasks ordered by absolute deadline
//!   (`struct dl_rq`, [`DlRq`]); the pick is the leftmost (`pick_next_dl_entity`), and a woken
//!   task preempts the running one when its deadline is earlier (`wakeup_preempt_dl`, formerly
//!   `check_preempt_curr_dl`; equal deadlines do not preempt: `check_preempt_equal_dl`'s
//!   migration hints are not modelled).
//! - **CBS** (rst §2): the running task's `runtime` is charged as it runs (`update_curr_dl_se`);
//!   when it reaches 0 (`dl_runtime_exceeded`) the task is throttled, taken off the tree, and
//!   its replenishment timer armed for `dl_next_period` (`start_dl_timer`); when it fires
//!   the runtime is refilled and the deadline postponed by periods until the runtime is
//!   positive (`replenish_dl_entity`). A waking task keeps its runtime and deadline unless the
//!   deadline has passed or `runtime / (deadline - now) > dl_runtime / dl_deadline`
//!   (`dl_entity_overflow`), in which case it starts a new period (`update_dl_entity`,
//!   `replenish_dl_new_period`); a constrained-deadline task (deadline < period) has its
//!   runtime cut to its density instead (`update_dl_revised_wakeup`).
//! - **Global EDF by push/pull** (rst §3.1 "SMP"): a waking task whose CPU runs a deadline
//!   task it would not preempt goes to a CPU running no deadline task or the one with the
//!   latest deadline (`select_task_rq_dl`, `find_later_rq`); an overloaded runqueue (two or
//!   more deadline tasks, one migratable) pushes its earliest non-running task to such a CPU
//!   (`push_dl_task`), and a CPU whose deadline task stops pulls the earliest task others
//!   could not run (`pull_dl_task`). The cpudl heap is replaced by an O(n) scan
//!   ([`DlRootDomain::find_later`]).
//! - **Admission control** (rst §4 "Bandwidth management"): a task becomes `SCHED_DEADLINE`
//!   only if the root domain's admitted bandwidth stays within `sched_rt_runtime_us /
//!   sched_rt_period_us` (0.95) times its CPUs (`sched_dl_overflow`, `__dl_overflow`); else
//!   the kernel returns -EBUSY, and [`DlClass::admit`] says so naming the task. One root
//!   domain spans the machine here.
//! - **GRUB** (rst §2, `SCHED_FLAG_RECLAIM`): a reclaiming task's runtime is charged at
//!   `delta * u_act / Umax` rather than `delta`, so that it may use the bandwidth nobody
//!   reserved (`grub_reclaim`, simplified: the inactive timer that keeps a blocked task's
//!   bandwidth active until its 0-lag time is not modelled, so `u_inact` is 0).
//!
//! Simplifications: the replenishment timer fires at the first tick of the task's CPU at or
//! after its instant (the kernel's is an hrtimer), which is where the kernel without HRTICK
//! notices an overrun too; a throttled task stays counted in its runqueue's `nr_running`
//! (the kernel subtracts it) so that every task is visibly in one place; there is no priority
//! inheritance (`pi_of`), no `dl_overrun` signal and no yield-to-next-period (`sched_yield` of
//! a deadline task only reschedules); a deadline task cannot fork (`sched_fork` returns
//! -EAGAIN without `SCHED_FLAG_RESET_ON_FORK`, which is not modelled).

use crate::class::{CpuView, Ctx, DequeueKind, EnqueueKind, Rq};
use crate::ds::dl_rq::{DlRootDomain, NO_DL};
use crate::ds::work::OpCounter;
use crate::task::{to_ratio, CpuId, Task, TaskId, TaskView, BW_SHIFT, BW_UNIT, DL_SCALE};

pub use crate::ds::dl_rq::{DlRq, DlServer, DlServerParams};

pub mod server;

/// `global_rt_runtime()` / `global_rt_period()`: the default `sched_rt_runtime_us` (950 000)
/// over `sched_rt_period_us` (1 000 000), the share of each CPU deadline tasks may reserve.
pub const RT_RUNTIME_US: u64 = 950_000;
pub const RT_PERIOD_US: u64 = 1_000_000;

/// `DL_MAX_TRIES` of `find_lock_later_rq`.
pub const DL_MAX_TRIES: usize = 3;

/// `nr_cpus_allowed > 1` on this machine.
#[inline]
fn migratory<D>(p: &Task<D>, ncpus: usize) -> bool {
    p.cpus_allowed.iter(ncpus).nth(1).is_some()
}

/// `dl_time_before(a, b)`.
#[inline]
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// What a runqueue should do after a switch or a wakeup (`push_dl_task`'s first steps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DlPush {
    None,
    /// The earliest queued task beats the running one: reschedule this CPU instead.
    ReschedSelf,
    /// Move `task` to `to` (re-checked under both locks by [`DlClass::push_dl_task_to`]).
    Move {
        task: TaskId,
        to: CpuId,
    },
}

/// The deadline class: its per-runqueue data lives in each [`Rq`]'s `dl`; what every CPU
/// reads without locks is its [`DlRootDomain`].
#[derive(Debug)]
pub struct DlClass {
    pub rd: DlRootDomain,
    ncpus: usize,
    /// `dl_b->bw`: `to_ratio(sched_rt_period_us, sched_rt_runtime_us)`.
    bw_per_cpu: u64,
    /// What the CPUs' fair servers hold of the root domain's `total_bw` (0 without them).
    servers_bw: std::sync::atomic::AtomicU64,
}

impl DlClass {
    pub fn new(ncpus: usize) -> DlClass {
        DlClass {
            rd: DlRootDomain::new(ncpus),
            ncpus,
            bw_per_cpu: to_ratio(RT_PERIOD_US, RT_RUNTIME_US),
            servers_bw: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Has any deadline task been admitted in this run? (Everything this class adds to the
    /// core's paths is skipped while none has, so that runs without one are unchanged.)
    #[inline]
    pub fn active(&self) -> bool {
        self.rd.active.load(std::sync::atomic::Ordering::Relaxed) != 0
    }

    /// `sched_dl_overflow` for a task entering the class: admits its bandwidth into the root
    /// domain if `__dl_overflow` allows it, else refuses with the kernel's -EBUSY, in words
    /// naming `who`.
    pub fn admit<D>(&self, p: &mut Task<D>, who: &str) -> Result<(), String> {
        let params = p.dl().params.check().map_err(|e| format!("{who}: {e}"))?;
        p.dl_mut().params = params;
        if p.dl().admitted_bw > 0 {
            return Ok(());
        }
        let bw = params.bw();
        let cap = self.bw_per_cpu * self.ncpus as u64;
        match self.rd.try_add(bw, cap) {
            Ok(_) => {
                p.dl_mut().admitted_bw = bw;
                self.rd
                    .active
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            Err(total) => Err(format!(
                "{who}: SCHED_DEADLINE runtime {} µs every {} µs (bandwidth {:.4}) refused by \
                 admission control: the root domain's total would be {:.4}, over {:.2} × {} CPUs \
                 = {:.4} (sched_rt_runtime_us / sched_rt_period_us × CPUs; sched_dl_overflow: \
                 -EBUSY){}",
                params.runtime_ns / 1000,
                params.period_ns / 1000,
                bw as f64 / BW_UNIT as f64,
                total as f64 / BW_UNIT as f64,
                RT_RUNTIME_US as f64 / RT_PERIOD_US as f64,
                self.ncpus,
                cap as f64 / BW_UNIT as f64,
                match self.servers_bw.load(std::sync::atomic::Ordering::Relaxed) {
                    0 => String::new(),
                    s => format!(
                        "; the CPUs' fair servers hold {:.4} of it (6.12+ dl_server_apply_params)",
                        s as f64 / BW_UNIT as f64
                    ),
                },
            )),
        }
    }

    /// `dl_server_apply_params` at boot for each CPU's server of bandwidth `bw`: `__dl_add` to
    /// the root domain's `total_bw`, checked by `__dl_overflow` (which the parameters'
    /// [`DlServerParams::check`] already guarantees). Returns false if it did not fit.
    pub fn reserve_servers(&self, bw: u64) -> bool {
        let cap = self.bw_per_cpu * self.ncpus as u64;
        let ok = (0..self.ncpus).all(|_| self.rd.try_add(bw, cap).is_ok());
        if ok {
            self.servers_bw
                .store(bw * self.ncpus as u64, std::sync::atomic::Ordering::Relaxed);
        }
        ok
    }

    /// The task left the class (exit, or a policy change away from it): its bandwidth
    /// leaves the root domain (`__dl_sub` of `task_non_contending`/`switched_from_dl`, at
    /// once: the 0-lag wait is not modelled).
    pub fn release<D>(&self, p: &mut Task<D>) {
        if p.dl().admitted_bw > 0 {
            self.rd.sub(p.dl().admitted_bw);
            p.dl_mut().admitted_bw = 0;
        }
    }

    /// Publishes `rq`'s earliest deadline, overload and throttled count (cpudl, `dlo_mask`).
    /// A queued fair server counts in the earliest deadline, as `inc_dl_deadline` counts
    /// every entity.
    #[inline]
    pub fn publish<C>(&self, rq: &Rq<C>) {
        let mut earliest = rq.dl.leftmost().map_or(NO_DL, |(d, _)| d);
        if rq.dl.server.queued && (earliest == NO_DL || before(rq.dl.server.deadline, earliest)) {
            earliest = rq.dl.server.deadline;
        }
        let overloaded = rq.dl.nr_running() >= 2 && rq.dl.nr_migratory >= 1;
        self.rd
            .publish(rq.cpu, earliest, overloaded, rq.dl.throttled.len());
    }

    fn insert<D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<impl Sized>, t: TaskId) {
        let mig = migratory(&ctx.tasks[t], ctx.ncpus);
        let d = ctx.tasks[t].dl().deadline;
        ctx.tasks[t].dl_mut().seq = rq.dl.insert(t, d, mig, ctx.ops);
    }

    fn remove<D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<impl Sized>, t: TaskId) -> bool {
        let mig = migratory(&ctx.tasks[t], ctx.ncpus);
        let (d, seq) = (ctx.tasks[t].dl().deadline, ctx.tasks[t].dl().seq);
        rq.dl.remove(t, d, seq, mig, ctx.ops)
    }

    /// `enqueue_task_dl`. A wakeup or a new task begins a job (its deadline for the miss
    /// count is now + the relative deadline) and applies the CBS wakeup rule
    /// (`update_dl_entity`); a task still throttled waits for its timer instead.
    pub fn enqueue<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>, t: TaskId, kind: EnqueueKind) {
        let now = ctx.now;
        let waking = matches!(kind, EnqueueKind::New | EnqueueKind::Wakeup { .. });
        let p = &mut ctx.tasks[t];
        p.dl_mut().on_rq = true;
        rq.nr_running += 1;
        if waking {
            p.dl_mut().job_deadline = now + p.dl().params.deadline_ns;
        }
        if p.dl().throttled {
            let due = next_period(p);
            if before(now, due) {
                // The timer armed at the throttle is still pending (`dl_task_timer` will
                // queue it): it waits throttled.
                rq.dl.throttled.push((due, t));
                self.publish(rq);
                return;
            }
            // Its timer has fired while it was away: `replenish_dl_entity`.
            replenish(p, now);
        }
        if waking {
            update_dl_entity(p, now);
        } else if before(p.dl().deadline, now) && kind == EnqueueKind::Restore {
            // `enqueue_dl_entity`'s ENQUEUE_RESTORE with a past deadline: a new period.
            new_period(p, now);
        }
        self.insert(ctx, rq, t);
        self.publish(rq);
    }

    /// `dequeue_task_dl`: off the tree (or the throttled list). A block or an exit ends the
    /// current job: it counts as missed if it ends after its deadline.
    pub fn dequeue<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>, t: TaskId, kind: DequeueKind) {
        if !ctx.tasks[t].dl().on_rq {
            return;
        }
        if rq.curr() == Some(t) && !ctx.tasks[t].dl().throttled {
            self.update_curr(ctx, rq, t);
        }
        if ctx.tasks[t].dl().throttled {
            rq.dl.throttled.retain(|&(_, x)| x != t);
        } else {
            self.remove(ctx, rq, t);
        }
        let now = ctx.now;
        let p = &mut ctx.tasks[t];
        p.dl_mut().on_rq = false;
        rq.nr_running = rq.nr_running.saturating_sub(1);
        if matches!(kind, DequeueKind::Sleep | DequeueKind::Exit) {
            if p.dl().job_deadline != 0 {
                p.dl_mut().jobs += 1;
                if now > p.dl().job_deadline {
                    p.dl_mut().misses += 1;
                }
                p.dl_mut().job_deadline = 0;
            }
        }
        self.publish(rq);
    }

    /// `update_curr_dl` → `update_curr_dl_se` of the running `t`: charge the time since it
    /// last was (GRUB-scaled if it reclaims); at exhaustion, throttle it (off the tree, its
    /// timer armed; if the instant is already past, replenished at once, as when
    /// `start_dl_timer` fails). Returns whether this CPU must reschedule.
    pub fn update_curr<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>, t: TaskId) -> bool {
        let now = ctx.now;
        let p = &mut ctx.tasks[t];
        if !p.dl().on_rq || p.dl().throttled {
            return false;
        }
        let delta = now.saturating_sub(p.dl().exec_start);
        p.dl_mut().exec_start = now;
        if delta == 0 {
            return false;
        }
        let scaled = if p.dl().params.reclaim {
            let extra = self
                .bw_per_cpu
                .saturating_sub(self.rd.total_bw() / self.ncpus as u64);
            grub_reclaim(delta, p.dl().params.bw(), 0, extra, self.bw_per_cpu)
        } else {
            delta
        };
        p.dl_mut().runtime -= scaled as i64;
        if p.dl().runtime > 0 {
            return false;
        }
        // dl_runtime_exceeded: throttle.
        p.dl_mut().throttles += 1;
        self.remove(ctx, rq, t);
        let p = &mut ctx.tasks[t];
        p.dl_mut().throttled = true;
        let due = next_period(p);
        if before(now, due) {
            rq.dl.throttled.push((due, t));
        } else {
            // start_dl_timer found the instant past: enqueue_task_dl(ENQUEUE_REPLENISH).
            replenish(p, now);
            self.insert(ctx, rq, t);
        }
        self.publish(rq);
        true
    }

    /// `put_prev_task_dl`: `update_curr_dl`. Returns whether it throttled.
    #[inline]
    pub fn put_prev<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>, prev: TaskId) -> bool {
        let r = self.update_curr(ctx, rq, prev);
        ctx.tasks[prev].last_ran_ns = ctx.now;
        r
    }

    /// `pick_task_dl` + `set_next_task_dl`: the leftmost, its run timed from now.
    #[inline]
    pub fn pick<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>) -> Option<TaskId> {
        let (_, t) = rq.dl.leftmost()?;
        ctx.ops.tree_steps += 1;
        ctx.tasks[t].dl_mut().exec_start = ctx.now;
        Some(t)
    }

    /// `task_tick_dl`: `update_curr_dl`; a throttled task, or one no longer leftmost (the
    /// earliest deadline), gives way.
    pub fn task_tick<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>, curr: TaskId) -> bool {
        if self.update_curr(ctx, rq, curr) {
            return true;
        }
        ctx.tasks[curr].dl().on_rq && rq.dl.leftmost().is_some_and(|(_, t)| t != curr)
    }

    /// The replenishment timers of `rq` due at `ctx.now` fire (`dl_task_timer`: the runtime
    /// refilled by `replenish_dl_entity`, the task queued again). Returns whether one of them
    /// should preempt what `curr` is (`wakeup_preempt_dl`; any deadline task preempts a lower
    /// class).
    pub fn replenish_due<C, D>(&self, ctx: &mut Ctx<D>, rq: &mut Rq<C>) -> bool {
        let now = ctx.now;
        let mut due = Vec::new();
        rq.dl.throttled.retain(|&(at, t)| {
            let fire = !before(now, at);
            if fire {
                due.push(t);
            }
            !fire
        });
        let mut preempt = false;
        for t in due {
            let p = &mut ctx.tasks[t];
            replenish(p, now);
            p.dl_mut().throttled = false;
            self.insert(ctx, rq, t);
            preempt |= match rq.curr() {
                None => true,
                Some(c) if c == t => true,
                Some(c) if ctx.tasks[c].is_dl() && ctx.tasks[c].dl_mut().on_rq => {
                    ctx.tasks[c].dl().throttled
                        || before(ctx.tasks[t].dl().deadline, ctx.tasks[c].dl().deadline)
                }
                Some(_) => true,
            };
        }
        self.publish(rq);
        preempt
    }

    /// `wakeup_preempt_dl`: the woken task's deadline is earlier (`dl_entity_preempt`).
    #[inline]
    pub fn check_preempt<D>(&self, ctx: &Ctx<D>, curr: TaskId, woken: TaskId) -> bool {
        let c = ctx.tasks[curr].dl();
        c.throttled || before(ctx.tasks[woken].dl().deadline, c.deadline)
    }

    /// `select_task_rq_dl`: if the task's CPU runs a deadline task that it would not preempt
    /// (or that cannot move), and the task can move, the CPU `find_later_rq` finds (one with
    /// no deadline task, else the latest deadline later than its own), if the task would be
    /// the earliest there.
    pub fn select_cpu<D>(
        &self,
        tasks: &TaskView<'_, D>,
        view: &CpuView,
        ops: &mut OpCounter,
        t: TaskId,
    ) -> CpuId {
        let p = &tasks[t];
        let n = view.ncpus();
        let cpu = if p.cpus_allowed.contains(p.cpu) {
            p.cpu
        } else {
            p.cpus_allowed.iter(n).next().unwrap_or(0)
        };
        let Some(c) = view.cpu(cpu).curr.filter(|&c| c != t && tasks[c].is_dl()) else {
            return cpu;
        };
        let curr = &tasks[c];
        let select = (!migratory(curr, n) || !before(p.dl().deadline, curr.dl().deadline))
            && migratory(p, n);
        if !select {
            return cpu;
        }
        let (to, reads) = self.rd.find_later(p.dl().deadline, &p.cpus_allowed, cpu);
        ops.remote_touches += reads;
        match to {
            Some(to)
                if {
                    let e = self.rd.earliest(to);
                    e == NO_DL || before(p.dl().deadline, e)
                } =>
            {
                to
            }
            _ => cpu,
        }
    }

    /// `push_dl_task`'s choice on `rq` (after a switch, or a wakeup of `woken` there, as
    /// `task_woken_dl` asks): the earliest queued task that is not running and may move
    /// (`pick_next_pushable_dl_task`), and where (`find_later_rq`).
    pub fn pick_push_target<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        rq: &Rq<C>,
        cpu: CpuId,
        woken: Option<TaskId>,
    ) -> DlPush {
        if rq.dl.nr_running() < 2 || rq.dl.nr_migratory == 0 {
            return DlPush::None;
        }
        let curr = rq.curr();
        let curr_dl = curr.filter(|&c| ctx.tasks[c].is_dl() && ctx.tasks[c].dl().on_rq);
        if let Some(w) = woken {
            // task_woken_dl: only a task that does not preempt a deadline current one.
            let Some(c) = curr_dl else {
                return DlPush::None;
            };
            if curr == Some(w)
                || !ctx.tasks[w].is_dl()
                || (migratory(&ctx.tasks[c], ctx.ncpus)
                    && before(ctx.tasks[w].dl().deadline, ctx.tasks[c].dl().deadline))
            {
                return DlPush::None;
            }
        }
        let ncpus = ctx.ncpus;
        let mut seen = 0;
        let next = rq
            .dl
            .iter()
            .inspect(|_| seen += 1)
            .find(|&(_, t)| Some(t) != curr && migratory(&ctx.tasks[t], ncpus));
        ctx.ops.scanned += seen;
        let Some((nd, next)) = next else {
            return DlPush::None;
        };
        if let Some(c) = curr_dl {
            if before(nd, ctx.tasks[c].dl().deadline) && migratory(&ctx.tasks[c], ncpus) {
                return DlPush::ReschedSelf;
            }
        }
        let (to, reads) = self.rd.find_later(nd, &ctx.tasks[next].cpus_allowed, cpu);
        ctx.ops.remote_touches += reads;
        match to {
            Some(to) if to != cpu => DlPush::Move { task: next, to },
            _ => DlPush::None,
        }
    }

    /// `find_lock_later_rq`'s re-check and the move, under both locks: `task` is still queued
    /// on `src`, not running, allowed on `to`, and would be the earliest there
    /// (`dl_task_is_earliest_deadline`). Returns whether it moved.
    pub fn push_dl_task_to<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        src: &mut Rq<C>,
        src_cpu: CpuId,
        dst: &mut Rq<C>,
        to: CpuId,
        task: TaskId,
    ) -> bool {
        let p = &ctx.tasks[task];
        if !p.is_dl()
            || !p.dl().on_rq
            || p.dl().throttled
            || p.cpu != src_cpu
            || src.curr() == Some(task)
            || !p.cpus_allowed.contains(to)
        {
            return false;
        }
        if dst
            .dl
            .leftmost()
            .is_some_and(|(e, _)| !before(p.dl().deadline, e))
        {
            return false;
        }
        self.move_task(ctx, src, dst, to, task);
        true
    }

    /// `pull_dl_task` from one overloaded `src` to `this`, under both locks: the earliest task
    /// of `src` that is not running there, may run on `this_cpu`, is earlier than anything
    /// `this` holds and would not run on `src` at once (it is not earlier than `src`'s
    /// current). Returns whether one moved.
    pub fn pull_dl_task_from<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        this: &mut Rq<C>,
        this_cpu: CpuId,
        src: &mut Rq<C>,
    ) -> bool {
        if src.dl.nr_running() <= 1 {
            return false;
        }
        let dmin = this.dl.leftmost().map(|(d, _)| d);
        let src_curr = src.curr();
        let mut seen = 0;
        let p =
            src.dl.iter().inspect(|_| seen += 1).find(|&(_, t)| {
                Some(t) != src_curr && ctx.tasks[t].cpus_allowed.contains(this_cpu)
            });
        ctx.ops.remote_touches += seen;
        let Some((pd, p)) = p else {
            return false;
        };
        if dmin.is_some_and(|d| !before(pd, d)) {
            return false;
        }
        if let Some(c) = src_curr.filter(|&c| ctx.tasks[c].is_dl() && ctx.tasks[c].dl().on_rq) {
            if !ctx.tasks[c].dl().throttled && before(pd, ctx.tasks[c].dl().deadline) {
                return false;
            }
        }
        self.move_task(ctx, src, this, this_cpu, p);
        true
    }

    /// Moves queued `t` from `src` to `dst` (`deactivate_task`, `set_task_cpu`,
    /// `activate_task`), keeping its runtime and deadline.
    fn move_task<C, D>(
        &self,
        ctx: &mut Ctx<D>,
        src: &mut Rq<C>,
        dst: &mut Rq<C>,
        to: CpuId,
        t: TaskId,
    ) {
        self.remove(ctx, src, t);
        src.nr_running = src.nr_running.saturating_sub(1);
        self.publish(src);
        ctx.tasks[t].cpu = to;
        dst.nr_running += 1;
        self.insert(ctx, dst, t);
        self.publish(dst);
        ctx.ops.remote_touches += 2;
    }
}

/// `dl_next_period`: when a throttled task's timer fires.
#[inline]
fn next_period<D>(p: &Task<D>) -> u64 {
    p.dl().deadline - p.dl().params.deadline_ns + p.dl().params.period_ns
}

/// `replenish_dl_new_period`: a new deadline from now and a full runtime.
#[inline]
fn new_period<D>(p: &mut Task<D>, now: u64) {
    p.dl_mut().deadline = now + p.dl().params.deadline_ns;
    p.dl_mut().runtime = p.dl().params.runtime_ns as i64;
}

/// `replenish_dl_entity`: postpone the deadline by periods, each adding a runtime, until the
/// runtime is positive; a deadline still in the past starts a new period ("DL replenish
/// lagged too much"). A task never run (deadline 0) starts a new period.
pub fn replenish<D>(p: &mut Task<D>, now: u64) {
    if p.dl().deadline == 0 || p.dl().params.runtime_ns == 0 {
        // (A runtime of 0 is refused by `DlParams::check`; this only keeps the loop finite.)
        new_period(p, now);
        if p.dl().runtime <= 0 {
            p.dl_mut().throttled = false;
            return;
        }
    }
    while p.dl().runtime <= 0 {
        p.dl_mut().deadline += p.dl().params.period_ns;
        p.dl_mut().runtime += p.dl().params.runtime_ns as i64;
    }
    if before(p.dl().deadline, now) {
        new_period(p, now);
    }
    p.dl_mut().throttled = false;
}

/// `dl_entity_overflow`: `runtime / (deadline - t) > dl_runtime / dl_deadline`, compared as
/// `(dl_deadline >> DL_SCALE) * (runtime >> DL_SCALE) > ((deadline - t) >> DL_SCALE) *
/// (dl_runtime >> DL_SCALE)`, the kernel's 1 µs-grained cross multiplication.
pub fn dl_entity_overflow<D>(p: &Task<D>, t: u64) -> bool {
    let runtime = p.dl().runtime.max(0) as u64;
    let left = (p.dl().params.deadline_ns >> DL_SCALE) as u128 * (runtime >> DL_SCALE) as u128;
    let right = (p.dl().deadline.wrapping_sub(t) >> DL_SCALE) as u128
        * (p.dl().params.runtime_ns >> DL_SCALE) as u128;
    right < left
}

/// `update_dl_entity`: the CBS wakeup rule.
pub fn update_dl_entity<D>(p: &mut Task<D>, now: u64) {
    if before(p.dl().deadline, now) || p.dl().deadline == 0 || dl_entity_overflow(p, now) {
        let implicit = p.dl().params.deadline_ns == p.dl().params.period_ns;
        if !implicit && p.dl().deadline != 0 && !before(p.dl().deadline, now) {
            // update_dl_revised_wakeup: runtime = dl_density * laxity.
            let density = to_ratio(p.dl().params.deadline_ns, p.dl().params.runtime_ns);
            let laxity = p.dl().deadline - now;
            p.dl_mut().runtime = ((density as u128 * laxity as u128) >> BW_SHIFT) as i64;
            return;
        }
        new_period(p, now);
    }
}

/// `grub_reclaim` (6.18): the time charged to a reclaiming task is `delta * u_act / Umax`,
/// where `Umax` is the class's share of a CPU (`max_bw`, 0.95; dividing by it is the kernel's
/// `bw_ratio`) and `u_act` is `max_bw - u_inact - extra_bw`, or the task's own `dl_bw` when
/// that would be smaller. `extra_bw` is this CPU's part of the bandwidth no task reserved
/// (`max_bw - total_bw / CPUs`, as `__dl_update` spreads it); `u_inact` (the bandwidth of
/// tasks blocked but not yet past their 0-lag time) is 0 here, as the inactive timer is not
/// modelled: a blocked task's bandwidth leaves at once.
pub fn grub_reclaim(delta: u64, dl_bw: u64, u_inact: u64, extra_bw: u64, max_bw: u64) -> u64 {
    if max_bw == 0 {
        return delta;
    }
    let u_act = if u_inact + extra_bw > max_bw.saturating_sub(dl_bw) {
        dl_bw
    } else {
        max_bw - u_inact - extra_bw
    };
    ((delta as u128 * u_act as u128) / max_bw as u128) as u64
}

#[cfg(test)]
mod tests;

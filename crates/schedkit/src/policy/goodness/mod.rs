//! `goodness`: the Linux 2.4 scheduler (2.4.16 `kernel/sched.c`; designs.md §1, tag S24).
//!
//! One global runqueue (`runqueue_head`, running tasks stay on it) under one global lock
//! (`runqueue_lock`). `schedule()` walks the whole list computing `goodness()` for every task
//! that may run here, O(n); when every runnable task has used its `counter`, the epoch
//! recalculation walks *every task in the system*, sleepers included. Wakeups go to the list
//! tail and `reschedule_idle()` picks a CPU to kick: the task's last CPU if idle, else the idle
//! CPU with the oldest `last_schedule`, else the CPU whose current task it beats by the most.
//! There is no load balancer.
//!
//! Simplifications, all stated: `SCHED_BATCH` did not exist in 2.4 and is treated as
//! `SCHED_OTHER`; the i386 HT shortcut of `reschedule_idle` (take a package with both siblings
//! idle) is not modelled; `runqueue_lock` nesting inside `tasklist_lock` is one lock here (the
//! recalculation runs under it and is charged per task visited).
//!
//! The class in two parts: `mod.rs` (this file) holds the run list, `goodness()`, the
//! `schedule()` scan and epoch recalculation, the tick, yield and fork, and the cache lines
//! they touch; `reschedule_idle` holds what a wakeup decides (`reschedule_idle()`'s choice of
//! a CPU to kick, and `preemption_goodness` against the task running there); `task_struct`
//! holds the i386 byte layout the line reports use. Must never depend on another design, the
//! stacked RT class, a host, the core or the registry (ARCHITECTURE.md).

mod reschedule_idle;
mod task_struct;

use crate::class::*;
use crate::ds::list::{Link, Linked, TaskList};
use crate::ds::work::{GlobalLine, Line, Span, Work, INIT_MM};
use crate::machine::Topology;
use crate::task::{CpuId, SchedPolicy, Task, TaskId, TaskView};
use task_struct::{mm, task};

/// `PROC_CHANGE_PENALTY` of i386 (`include/asm-i386/smp.h`): the bonus for staying put.
pub const PROC_CHANGE_PENALTY: i32 = 15;

/// `NICE_TO_TICKS(nice) = TICK_SCALE(20 - nice) + 1`, aiming at ~50 ms slices.
pub fn nice_to_ticks(nice: i32, hz: u32) -> i32 {
    let x = 20 - nice;
    let scaled = match hz {
        0..=199 => x >> 2,
        200..=399 => x >> 1,
        400..=799 => x,
        800..=1599 => x << 1,
        _ => x << 2,
    };
    scaled + 1
}

/// Per-task state of the 2.4 scheduler.
#[derive(Clone, Debug, Default)]
pub struct GoodnessTask {
    /// Ticks left in this epoch (`p->counter`).
    pub counter: i32,
    /// The `SCHED_YIELD` bit: goodness -1 for one pass of `schedule()`.
    pub yielded: bool,
    /// On `runqueue_head`.
    pub on_rq: bool,
    /// `cpus_runnable`: the CPU it is running on, if any.
    pub running_on: Option<CpuId>,
    /// Position in the task list (`for_each_task`) used by the recalculation.
    tasklist_pos: u32,
    run_list: Link,
}

impl Linked for GoodnessTask {
    fn link(&self) -> &Link {
        &self.run_list
    }
    fn link_mut(&mut self) -> &mut Link {
        &mut self.run_list
    }
}

/// The one global runqueue.
#[derive(Debug, Default)]
pub struct GoodnessRq {
    /// `runqueue_head`.
    pub run_list: TaskList,
    /// `init_task.next_task` ring: every live task, for the recalculation loop.
    tasklist: Vec<TaskId>,
    /// Recalculations done (an epoch counter, for tests and curiosity).
    pub epochs: u64,
    /// Each CPU's idle task's `active_mm`: the address space it borrowed (lazy TLB) from the
    /// task it replaced, [`INIT_MM`] until then. Only the coherence report uses it.
    idle_active_mm: Vec<u32>,
}

impl GoodnessRq {
    fn idle_active_mm(&mut self, cpu: CpuId) -> &mut u32 {
        if cpu >= self.idle_active_mm.len() {
            self.idle_active_mm.resize(cpu + 1, INIT_MM);
        }
        &mut self.idle_active_mm[cpu]
    }
}

pub struct Goodness;

type T = Task<GoodnessTask>;

/// `goodness(p, this_cpu, this_mm)`.
pub fn goodness(p: &T, this_cpu: CpuId, this_mm: Option<u32>) -> i32 {
    if p.data.yielded {
        return -1;
    }
    if p.policy.is_rt() {
        return 1000 + p.rt_priority as i32;
    }
    let mut w = p.data.counter;
    if w == 0 {
        return 0;
    }
    if p.cpu == this_cpu {
        w += PROC_CHANGE_PENALTY;
    }
    if this_mm == Some(p.mm) {
        w += 1;
    }
    w + 20 - p.nice
}

/// Bytes of task `t`'s `task_struct`, or of `cpu`'s idle task's when `t` is `None`.
fn tb(t: Option<TaskId>, cpu: CpuId, s: Span) -> Line {
    match t {
        Some(t) => Line::TaskBytes(t, s),
        None => Line::IdleBytes(cpu, s),
    }
}

/// `list_del(&p->run_list)`: it reads the task's two pointers and writes its neighbours'
/// (the previous one's `next`, the following one's `prev`) or the list head at either end.
fn report_unlink(ctx: &mut Ctx<GoodnessTask>, rq: &Rq<GoodnessRq>, t: TaskId) {
    if !ctx.tracks_lines() {
        return;
    }
    ctx.read_line(Line::TaskBytes(t, task::RUN_LIST_NEXT));
    ctx.read_line(Line::TaskBytes(t, task::RUN_LIST_PREV));
    match rq.run_list.prev(&ctx.tasks, t) {
        Some(p) => ctx.write_line(Line::TaskBytes(p, task::RUN_LIST_NEXT)),
        None => ctx.write_line(Line::RqList(0)),
    }
    match rq.run_list.next(&ctx.tasks, t) {
        Some(n) => ctx.write_line(Line::TaskBytes(n, task::RUN_LIST_PREV)),
        None => ctx.write_line(Line::RqList(0)),
    }
}

/// `list_add(&p->run_list, &runqueue_head)` (`front`: before `neighbour`, the old first task)
/// or `list_add_tail` (after `neighbour`, the old last one): the task's two pointers, the
/// neighbour's pointer towards it, and the head.
fn report_link(ctx: &mut Ctx<GoodnessTask>, t: TaskId, neighbour: Option<TaskId>, front: bool) {
    if !ctx.tracks_lines() {
        return;
    }
    ctx.write_line(Line::TaskBytes(t, task::RUN_LIST_NEXT));
    ctx.write_line(Line::TaskBytes(t, task::RUN_LIST_PREV));
    if let Some(b) = neighbour {
        let field = if front {
            task::RUN_LIST_PREV
        } else {
            task::RUN_LIST_NEXT
        };
        ctx.write_line(Line::TaskBytes(b, field));
    }
    ctx.write_line(Line::RqList(0));
}

/// The lines of `schedule()` from the decision on: `task_set_cpu(next)`, `aligned_data`,
/// `kstat.context_swtch`, `prepare_to_switch`'s mm handover (`switch_mm` or the lazy-TLB
/// borrowing of an idle task), `switch_to`/`__switch_to`'s thread fields, and
/// `__schedule_tail(prev)` (2.4.17 `kernel/sched.c` 467–700, `arch/i386/kernel/process.c`
/// `__switch_to`, `include/asm-i386/mmu_context.h` `switch_mm`). `None` is the idle task.
fn report_switch(
    ctx: &mut Ctx<GoodnessTask>,
    rq: &mut Rq<GoodnessRq>,
    cpu: CpuId,
    prev: Option<TaskId>,
    next: Option<TaskId>,
) {
    // sched_data->curr = next; task_set_cpu(next, this_cpu).
    ctx.write_line(Line::Cpu(cpu));
    ctx.write_line(tb(next, cpu, task::PROCESSOR_RUNNABLE));
    if prev == next {
        // "We won't go through the normal tail": prev->policy &= ~SCHED_YIELD.
        ctx.write_line(tb(prev, cpu, task::POLICY));
        return;
    }
    ctx.write_line(Line::Global(GlobalLine::ContextSwitches));
    // prepare_to_switch(): mm = next->mm, oldmm = prev->active_mm.
    ctx.read_line(tb(next, cpu, task::MM));
    ctx.read_line(tb(prev, cpu, task::ACTIVE_MM));
    ctx.read_line(tb(next, cpu, task::ACTIVE_MM));
    let oldmm = match prev {
        Some(p) => ctx.tasks[p].mm,
        None => *rq.idle_active_mm(cpu),
    };
    match next {
        // To the idle task (no mm of its own): it borrows oldmm and pins it.
        None => {
            *rq.idle_active_mm(cpu) = oldmm;
            ctx.write_line(Line::IdleBytes(cpu, task::ACTIVE_MM));
            ctx.write_line(Line::MmBytes(oldmm, mm::MM_COUNT));
        }
        Some(n) => {
            let newmm = ctx.tasks[n].mm;
            if newmm != oldmm {
                ctx.write_line(Line::MmBytes(oldmm, mm::CPU_VM_MASK));
                ctx.read_line(Line::MmBytes(oldmm, mm::CONTEXT_SEGMENTS));
                ctx.read_line(Line::MmBytes(newmm, mm::CONTEXT_SEGMENTS));
                ctx.read_line(Line::MmBytes(newmm, mm::PGD));
            }
            // set_bit / test_and_set_bit on cpu_vm_mask and context.cpuvalid: locked
            // read-modify-writes whether or not the bit changes.
            ctx.write_line(Line::MmBytes(newmm, mm::CPU_VM_MASK));
            ctx.write_line(Line::MmBytes(newmm, mm::CONTEXT_CPUVALID));
        }
    }
    if prev.is_none() {
        // if (!prev->mm) { prev->active_mm = NULL; mmdrop(oldmm); }
        ctx.write_line(Line::IdleBytes(cpu, task::ACTIVE_MM));
        ctx.write_line(Line::MmBytes(oldmm, mm::MM_COUNT));
    }
    // switch_to saves prev's esp and eip; __switch_to tests prev's PF_USEDFPU (unlazy_fpu),
    // saves its fs and gs, loads next's esp0, fs and gs, tests next's debugreg[7] and both
    // tasks' ioperm.
    ctx.read_line(tb(prev, cpu, task::FLAGS));
    ctx.write_line(tb(prev, cpu, task::THREAD_SAVED));
    ctx.read_line(tb(next, cpu, task::THREAD_LOADED));
    ctx.read_line(tb(next, cpu, task::THREAD_DEBUGREG7));
    ctx.read_line(tb(prev, cpu, task::THREAD_IOPERM));
    ctx.read_line(tb(next, cpu, task::THREAD_IOPERM));
    // __schedule_tail(prev): clear SCHED_YIELD, task_lock, task_release_cpu, read state.
    ctx.read_line(tb(prev, cpu, task::POLICY));
    ctx.write_line(tb(prev, cpu, task::POLICY));
    ctx.write_line(tb(prev, cpu, task::ALLOC_LOCK));
    ctx.write_line(tb(prev, cpu, task::CPUS_RUNNABLE));
    ctx.read_line(tb(prev, cpu, task::STATE));
}

/// `can_schedule(p, cpu)`: allowed there and not running elsewhere.
fn can_schedule(p: &T, cpu: CpuId) -> bool {
    p.cpus_allowed.contains(cpu) && p.data.running_on.is_none_or(|c| c == cpu)
}

impl SchedClass for Goodness {
    type Rq = GoodnessRq;
    type TaskData = GoodnessTask;

    /// 2.4 kept SCHED_FIFO/RR tasks on the one run list, ranked by `1000 + rt_priority` in
    /// `goodness()`: no RT class in front of it.
    const OWNS_RT: bool = true;

    fn name(&self) -> &'static str {
        "goodness"
    }

    fn pick_rule(&self) -> &'static str {
        "2.4 goodness(): the highest goodness over the global runqueue list (counter plus \
         20 - nice, a bonus for this CPU and for the same mm), prev kept on a tie; every \
         runnable counter 0: recalculate"
    }

    fn describe_task(&self, _rq: &Rq<GoodnessRq>, task: &Task<GoodnessTask>) -> String {
        format!("counter {}", task.data.counter)
    }

    fn lock_layout(&self) -> LockLayout {
        LockLayout::Global
    }

    /// `sys_setpriority`: `p->nice = niceval`, nothing else (2.4.16 `kernel/sys.c`);
    /// `setscheduler` does move a queued task to the front and reschedule.
    fn requeues_on_nice(&self) -> bool {
        false
    }

    fn task_struct_layout(&self) -> Option<&'static TaskStructLayout> {
        static I386_2_4_17: TaskStructLayout = TaskStructLayout {
            state: task::STATE,
            fork: task::FORK_WRITES,
        };
        Some(&I386_2_4_17)
    }

    fn new_rq(&self, _domain: usize, _topology: &Topology) -> GoodnessRq {
        GoodnessRq::default()
    }

    fn task_fork(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        rq: &mut Rq<GoodnessRq>,
        _cpu: CpuId,
        parent: Option<TaskId>,
        child: TaskId,
    ) -> bool {
        ctx.tasks[child].data.tasklist_pos = rq.tasklist.len() as u32;
        rq.tasklist.push(child);
        match parent {
            // do_fork: the child takes half the parent's ticks (rounded up), the parent keeps
            // the rest and reschedules if that is nothing.
            Some(p) => {
                let (pt, ct) = ctx.tasks.pair_mut(p, child);
                ct.data.counter = (pt.data.counter + 1) >> 1;
                pt.data.counter >>= 1;
                let resched = pt.data.counter == 0;
                ctx.write_line(Line::TaskBytes(p, task::COUNTER));
                if resched {
                    ctx.write_line(Line::TaskBytes(p, task::NEED_RESCHED));
                }
                resched
            }
            // A task started by the host gets a full first slice (init's DEF_COUNTER is
            // 10*HZ/100; NICE_TO_TICKS keeps nice in the picture).
            None => {
                let nice = ctx.tasks[child].nice;
                ctx.tasks[child].data.counter = nice_to_ticks(nice, ctx.hz);
                false
            }
        }
    }

    fn task_exit(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        rq: &mut Rq<GoodnessRq>,
        child: TaskId,
        _parent: Option<TaskId>,
    ) {
        // unhash_process: leave the task list (O(1) swap-remove of our index).
        let pos = ctx.tasks[child].data.tasklist_pos as usize;
        rq.tasklist.swap_remove(pos);
        if let Some(&moved) = rq.tasklist.get(pos) {
            ctx.tasks[moved].data.tasklist_pos = pos as u32;
        }
        // The task list is a vector here, not a TaskList: report its one removal by hand.
        ctx.ops.list_ops += 1;
    }

    fn enqueue(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        rq: &mut Rq<GoodnessRq>,
        _cpu: CpuId,
        t: TaskId,
        kind: EnqueueKind,
    ) {
        crate::check!(!ctx.tasks[t].data.on_rq);
        let _ = kind;
        // add_to_runqueue: list_add(&p->run_list, &runqueue_head), at the *front* ("This has
        // to add the process to the _beginning_ of the run-queue, not the end"; 2.4.16 and
        // 2.4.17 kernel/sched.c), for wakeups and new tasks alike; setscheduler's
        // move_first_runqueue puts a re-queued task there too. Ties in the goodness loop go
        // to the earlier entry, so a woken task wins them.
        report_link(ctx, t, rq.run_list.front(), true);
        rq.run_list.push_front(&mut ctx.tasks, t, ctx.ops);
        ctx.write_line(Line::Global(GlobalLine::NrRunning));
        ctx.tasks[t].data.on_rq = true;
    }

    fn dequeue(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        rq: &mut Rq<GoodnessRq>,
        _cpu: CpuId,
        t: TaskId,
        _kind: DequeueKind,
    ) {
        if ctx.tasks[t].data.on_rq {
            // del_from_runqueue: nr_running--, p->sleep_time = jiffies, list_del,
            // p->run_list.next = NULL.
            ctx.write_line(Line::Global(GlobalLine::NrRunning));
            ctx.write_line(Line::TaskBytes(t, task::SLEEP_TIME));
            report_unlink(ctx, rq, t);
            rq.run_list.remove(&mut ctx.tasks, t, ctx.ops);
            ctx.write_line(Line::TaskBytes(t, task::RUN_LIST_NEXT));
            ctx.tasks[t].data.on_rq = false;
        }
    }

    fn put_prev(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        _rq: &mut Rq<GoodnessRq>,
        _cpu: CpuId,
        prev: TaskId,
    ) {
        // An expired SCHED_RR task is refilled and moved to the tail inside schedule(); that
        // happens in pick_next where the list is at hand. Nothing to do here: the task stays
        // on the list, still marked running on this CPU until the pick releases it.
        let _ = (ctx, prev);
    }

    fn pick_next(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        rq: &mut Rq<GoodnessRq>,
        cpu: CpuId,
    ) -> Option<TaskId> {
        let prev = rq.curr_on(cpu);
        let prev_mm = prev.map(|p| ctx.tasks[p].mm);
        // schedule() on prev (the idle task when None): this_cpu = prev->processor, the RR
        // test on prev->policy, the switch on prev->state, prev->need_resched = 0, and
        // prev->active_mm for every goodness() call.
        if ctx.tracks_lines() {
            ctx.read_line(tb(prev, cpu, task::GOODNESS_FIELDS));
            ctx.read_line(tb(prev, cpu, task::STATE));
            ctx.write_line(tb(prev, cpu, task::NEED_RESCHED));
            ctx.read_line(tb(prev, cpu, task::ACTIVE_MM));
        }
        if let Some(p) = prev {
            let pt = &mut ctx.tasks[p];
            // schedule(): an RR task whose counter ran out is refilled and moved to the tail.
            if pt.policy == SchedPolicy::Rr && pt.data.counter == 0 && pt.data.on_rq {
                pt.data.counter = nice_to_ticks(pt.nice, ctx.hz);
                ctx.write_line(Line::TaskBytes(p, task::COUNTER));
                report_unlink(ctx, rq, p);
                rq.run_list.remove(&mut ctx.tasks, p, ctx.ops);
                report_link(ctx, p, rq.run_list.back(), false);
                rq.run_list.push_back(&mut ctx.tasks, p, ctx.ops);
            }
        }
        let tracks_lines = ctx.tracks_lines();
        let next = loop {
            // The goodness loop: every runnable task that can run here, strictly-greater wins.
            let mut best: Option<TaskId> = None;
            let mut c = -1000;
            let mut cur = rq.run_list.front();
            while let Some(t) = cur {
                // The loop reads every runnable task's goodness fields (one line on the P6,
                // "all fields in a single cacheline that are needed for the goodness() loop"),
                // wherever another CPU last wrote them, and an RT task's rt_priority.
                if tracks_lines {
                    ctx.read_line(Line::TaskBytes(t, task::GOODNESS_FIELDS));
                    if ctx.tasks[t].policy.is_rt() {
                        ctx.read_line(Line::TaskBytes(t, task::RT_PRIORITY));
                    }
                }
                let p = &ctx.tasks[t];
                ctx.ops.scanned += 1;
                if can_schedule(p, cpu) {
                    let w = goodness(p, cpu, prev_mm);
                    if w > c {
                        c = w;
                        best = Some(t);
                    }
                }
                cur = rq.run_list.next(&ctx.tasks, t);
            }
            if best.is_some() && c == 0 {
                // Every runnable candidate has used its slice: recalculate for every task in
                // the system, sleepers included (they converge to 2 x NICE_TO_TICKS).
                rq.epochs += 1;
                for &t in &rq.tasklist {
                    let p = &mut ctx.tasks[t];
                    p.data.counter = (p.data.counter >> 1) + nice_to_ticks(p.nice, ctx.hz);
                    // for_each_task follows next_task; the counter and nice share a line.
                    ctx.read_line(Line::TaskBytes(t, task::NEXT_TASK));
                    ctx.write_line(Line::TaskBytes(t, task::COUNTER));
                }
                ctx.ops.recalc += rq.tasklist.len() as u64;
                continue;
            }
            break best;
        };
        // __schedule_tail: the previous task's SCHED_YIELD bit is cleared and it releases this
        // CPU (cpus_runnable = ~0).
        if let Some(p) = prev {
            let pd = &mut ctx.tasks[p].data;
            pd.yielded = false;
            pd.running_on = None;
        }
        if let Some(n) = next {
            ctx.tasks[n].data.running_on = Some(cpu);
        }
        if ctx.tracks_lines() {
            report_switch(ctx, rq, cpu, prev, next);
        }
        next
    }

    fn task_tick(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        _rq: &mut Rq<GoodnessRq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        // update_process_times: every task's counter runs down, RT ones included; at 0 the
        // tick sets need_resched.
        ctx.write_line(Line::TaskBytes(curr, task::COUNTER));
        let d = &mut ctx.tasks[curr].data;
        d.counter -= 1;
        if d.counter <= 0 {
            d.counter = 0;
            ctx.write_line(Line::TaskBytes(curr, task::NEED_RESCHED));
            return true;
        }
        false
    }

    fn yield_task(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        rq: &mut Rq<GoodnessRq>,
        _cpu: CpuId,
        curr: TaskId,
    ) -> bool {
        // sys_sched_yield: only if someone is waiting (nr_pending = runnable - CPUs busy): a
        // look at every CPU's aligned_data, each line written by its CPU at its last switch.
        ctx.read_line(Line::Global(GlobalLine::NrRunning));
        for c in 0..ctx.ncpus {
            ctx.read_line(Line::Cpu(c));
        }
        let busy = rq.currs().iter().filter(|c| c.is_some()).count();
        let nr_pending = rq.run_list.len().saturating_sub(busy);
        if nr_pending == 0 {
            return false;
        }
        let p = &mut ctx.tasks[curr];
        if !p.policy.is_rt() {
            p.data.yielded = true;
        }
        // current->policy |= SCHED_YIELD; current->need_resched = 1; move_last_runqueue.
        ctx.write_line(Line::TaskBytes(curr, task::POLICY));
        ctx.write_line(Line::TaskBytes(curr, task::NEED_RESCHED));
        report_unlink(ctx, rq, curr);
        rq.run_list.remove(&mut ctx.tasks, curr, ctx.ops);
        report_link(ctx, curr, rq.run_list.back(), false);
        rq.run_list.push_back(&mut ctx.tasks, curr, ctx.ops);
        true
    }
    fn check_preempt_wakeup(
        &self,
        ctx: &mut Ctx<GoodnessTask>,
        rq: &mut Rq<GoodnessRq>,
        cpu: CpuId,
        woken: TaskId,
        sync: bool,
    ) -> bool {
        reschedule_idle::preempts_curr(ctx, rq, cpu, woken, sync)
    }

    fn select_cpu(
        &self,
        tasks: &TaskView<'_, GoodnessTask>,
        view: &CpuView,
        ops: &mut Work<'_>,
        t: TaskId,
        waker_cpu: CpuId,
        kind: WakeKind,
    ) -> CpuId {
        reschedule_idle::reschedule_idle(tasks, view, ops, t, waker_cpu, kind)
    }

    fn nr_running(&self, rq: &Rq<GoodnessRq>, _cpu: CpuId) -> usize {
        rq.run_list.len()
    }

    fn for_each_queued(
        &self,
        rq: &Rq<GoodnessRq>,
        tasks: &TaskView<'_, GoodnessTask>,
        f: &mut dyn FnMut(TaskId),
    ) {
        for t in rq.run_list.iter(tasks) {
            f(t);
        }
    }
}

#[cfg(test)]
mod tests;

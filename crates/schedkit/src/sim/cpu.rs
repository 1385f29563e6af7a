//! A simulated CPU: the segment it is in (what it does now, until when), and the segments'
//! accounting: each closed segment's time goes to one of the CPU's categories and, for user,
//! system and refill time, to the task current there. Interrupt work is inserted into
//! whatever segment runs.
//!
//! Must never decide what the CPU does next (the event loop's `resume` does) nor reach the
//! core: this is bookkeeping of time only.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SegKind {
    Idle,
    /// Task computing in user space; progress is the segment length less interrupts.
    User,
    /// System call on behalf of the current task.
    Sys,
    /// schedule() and the context switch.
    Sched,
    /// The task just switched in runs in user space stalled on the misses that bring its
    /// working set back (the cache model's refill): user time as far as preemption goes —
    /// an interrupt that asks for a reschedule stops it at once — accounted as cache refill.
    /// A refill cut short is not resumed later (the task's data counts as loaded).
    Refill,
    /// Interrupt work that is not inside another segment (a tick that preempts, an idle CPU
    /// woken by an IPI).
    Irq,
}

#[derive(Clone, Debug)]
pub(super) struct Cpu {
    pub(super) curr: Option<TaskId>,
    pub(super) need_resched: bool,
    pub(super) seg: SegKind,
    pub(super) seg_start: u64,
    pub(super) seg_end: u64,
    /// Interrupt time inserted into the current segment.
    pub(super) seg_irq: u64,
    /// Of a Sched segment: the part spent spinning on runqueue locks.
    pub(super) seg_spin: u64,
    /// The refill the task just switched in owes before its first operation (the cache
    /// model's, run as a `Refill` segment once the switch is done).
    pub(super) refill_due: Refill,
    pub(super) gen: u64,
    pub(super) ipi_pending: bool,
    /// Of a User segment: the speed it was timed at (`freq::SPEED_ONE` without a model).
    pub(super) seg_speed: u32,
    /// Where its time went.
    pub(super) acct: CpuAccount,
    /// The task just switched in and the working-set refill charged for it, until the CPU
    /// starts anything but the Sched segment of that switch: a probe measuring right after
    /// it leaves out the refill, which the model charges up front but the task pays in its
    /// work after measuring.
    pub(super) switch_in_refill: Option<(TaskId, u64)>,
}

impl Cpu {
    /// Running a task in user space (its own work or the refill of its working set), where an
    /// interrupt that asks for a reschedule preempts at once.
    pub(super) fn in_user(&self) -> bool {
        matches!(self.seg, SegKind::User | SegKind::Refill)
    }
}

impl<P: SchedClass> Sim<'_, '_, P> {
    pub(super) fn start_segment(&mut self, cpu: CpuId, kind: SegKind, len: u64) {
        let c = &mut self.cpus[cpu];
        c.gen += 1;
        c.seg = kind;
        c.seg_start = self.now;
        c.seg_end = self.now + len;
        c.seg_irq = 0;
        c.seg_spin = 0;
        if kind != SegKind::Sched && kind != SegKind::Refill {
            c.switch_in_refill = None;
        }
        if kind != SegKind::Idle {
            let gen = c.gen;
            self.post(
                self.now + len,
                Ev::SegEnd {
                    cpu: cpu as u32,
                    gen,
                },
            );
        }
    }

    /// Accounts the current segment up to `at` and returns the task progress it made (for
    /// User segments). The segment is then void.
    pub(super) fn close_segment(&mut self, cpu: CpuId, at: u64) -> u64 {
        let c = &mut self.cpus[cpu];
        let len = at.saturating_sub(c.seg_start);
        let irq = c.seg_irq.min(len);
        let body = len - irq;
        c.acct.irq += irq;
        let mut progress = 0;
        // Task CPU time: user, system and cache-refill time of the task that is current.
        let mut charged = 0;
        match c.seg {
            SegKind::Idle => c.acct.idle += body,
            SegKind::User => {
                c.acct.user += body;
                progress = freq::ns_to_work(body, c.seg_speed);
                charged = body;
            }
            SegKind::Sys => {
                c.acct.sys += body;
                charged = body;
            }
            SegKind::Sched => {
                let spin = c.seg_spin.min(body);
                c.acct.spin += spin;
                c.acct.sched += body - spin;
            }
            SegKind::Refill => {
                c.acct.refill += body;
                charged = body;
                if let Some(ic) = self.ic.as_mut() {
                    ic.set_streaming(cpu, false);
                }
            }
            SegKind::Irq => c.acct.irq += body,
        }
        if let Some(t) = c.curr {
            self.tasks[t].sum_exec_ns += charged;
        }
        let c = &mut self.cpus[cpu];
        c.gen += 1;
        c.seg_start = at;
        c.seg_end = at;
        c.seg_irq = 0;
        c.seg_spin = 0;
        c.seg = SegKind::Idle;
        progress
    }

    /// Interrupt work on `cpu` now: inserted into whatever runs there.
    pub(super) fn charge_irq(&mut self, cpu: CpuId, cost: u64) {
        if cost == 0 {
            return;
        }
        let c = &mut self.cpus[cpu];
        match c.seg {
            SegKind::Idle => {
                // Time taken out of idle: accounted as irq by the idle segment's close.
                c.seg_irq += cost;
            }
            _ => {
                c.seg_irq += cost;
                c.seg_end += cost;
                c.gen += 1;
                let (gen, end) = (c.gen, c.seg_end);
                self.post(
                    end,
                    Ev::SegEnd {
                        cpu: cpu as u32,
                        gen,
                    },
                );
            }
        }
    }
}

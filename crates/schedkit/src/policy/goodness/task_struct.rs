//! Where 2.4's scheduler paths find the data they touch, byte by byte, on i386: the fields of
//! `struct task_struct` and `struct mm_struct` that `schedule()`, `goodness()`,
//! `__schedule_tail()`, `reschedule_idle()`, `try_to_wake_up()`, `sys_sched_yield()`,
//! `switch_to`/`__switch_to` and the tick read and write.
//!
//! Offsets of Linux 2.4.17 (`include/linux/sched.h`, `include/asm-i386/processor.h`,
//! `include/asm-i386/mmu.h`) as gcc lays them out for i386 with `CONFIG_SMP` (so `NR_CPUS` =
//! 32) and the debugging options off (no spinlock or wait-queue magic): printed by
//! `scripts/task-struct-2417.sh`, which compiles the release's own headers with `gcc -m32`.
//! 2.4.16, which the class follows otherwise, declares both structures identically.
//!
//! Alignment, which decides which offsets share a line:
//! - a `task_struct` is the bottom of its 8 KB kernel stack (`union task_union`, allocated by
//!   `alloc_task_struct()` as two pages), so offset 0 begins a line at every line size;
//! - `mm_struct`s come from the `mm_struct` slab cache, created with `SLAB_HWCACHE_ALIGN`
//!   (`kernel/fork.c`, `proc_caches_init`): each begins a line too.
//!
//! On the Pentium III's 32-byte lines a `task_struct` spans these lines of interest:
//!
//! | line | bytes | fields |
//! |---|---|---|
//! | 0 | 0–31 | `state`, `flags`, `need_resched`, `lock_depth` |
//! | 1 | 32–63 | `counter`, `nice`, `policy`, `mm`, `processor`, `cpus_runnable`, `cpus_allowed`, `run_list.next` ("offset 32 begins here on 32-bit platforms. We keep all fields in a single cacheline that are needed for the goodness() loop in schedule()") |
//! | 2 | 64–95 | `run_list.prev` ("only the 'next' pointer fits into the cacheline"), `sleep_time`, `next_task`, `active_mm` |
//! | 6 | 192–223 | `rt_priority` |
//! | 27–29 | 864–959 | `thread.esp0`, `eip`, `esp`, `fs` (27); `gs` (28); `debugreg[7]` (29) |
//! | 46 | 1472–1503 | `thread.ioperm` |
//! | 52 | 1664–1695 | `alloc_lock` (`task_lock()`) |
//!
//! On 64-byte lines lines 0 and 1 are one line, as are 2 and 3: the interconnect maps each
//! span to the lines of the machine's `line_bytes`.

use crate::ds::work::Span;

/// `struct task_struct` of 2.4.17 on i386: 1 696 bytes.
pub mod task {
    use super::Span;
    /// `volatile long state`.
    pub const STATE: Span = Span::new(0, 4);
    /// `unsigned long flags` (`unlazy_fpu` tests `PF_USEDFPU` in it at every switch).
    pub const FLAGS: Span = Span::new(4, 4);
    /// `volatile long need_resched`.
    pub const NEED_RESCHED: Span = Span::new(20, 4);
    /// `long counter`.
    pub const COUNTER: Span = Span::new(32, 4);
    /// `unsigned long policy` (with the `SCHED_YIELD` bit).
    pub const POLICY: Span = Span::new(40, 4);
    /// What `goodness()` and `can_schedule()` read of a task, and the list walk's `next`
    /// pointer: `counter` (32) to `run_list.next` (60–63).
    pub const GOODNESS_FIELDS: Span = Span::new(32, 32);
    /// `int processor` and `unsigned long cpus_runnable` (`task_set_cpu`).
    pub const PROCESSOR_RUNNABLE: Span = Span::new(48, 8);
    /// `unsigned long cpus_runnable` (`task_release_cpu`).
    pub const CPUS_RUNNABLE: Span = Span::new(52, 4);
    /// `struct mm_struct *mm`.
    pub const MM: Span = Span::new(44, 4);
    /// `struct list_head run_list`'s `next` pointer.
    pub const RUN_LIST_NEXT: Span = Span::new(60, 4);
    /// `struct list_head run_list`'s `prev` pointer.
    pub const RUN_LIST_PREV: Span = Span::new(64, 4);
    /// `unsigned long sleep_time` (`del_from_runqueue` stamps it).
    pub const SLEEP_TIME: Span = Span::new(68, 4);
    /// `struct task_struct *next_task` (`for_each_task`).
    pub const NEXT_TASK: Span = Span::new(72, 4);
    /// `struct mm_struct *active_mm`.
    pub const ACTIVE_MM: Span = Span::new(80, 4);
    /// `unsigned long rt_priority`.
    pub const RT_PRIORITY: Span = Span::new(200, 4);
    /// `thread.eip`, `thread.esp` (`switch_to` saves them in the previous task), `thread.fs`
    /// and `thread.gs` (`__switch_to` saves them): 884–899.
    pub const THREAD_SAVED: Span = Span::new(884, 16);
    /// `thread.esp0` to `thread.gs` (880–899): what `switch_to` and `__switch_to` load of the
    /// next task.
    pub const THREAD_LOADED: Span = Span::new(880, 20);
    /// `thread.debugreg[7]` (`__switch_to` tests it).
    pub const THREAD_DEBUGREG7: Span = Span::new(928, 4);
    /// `thread.ioperm` (`__switch_to` tests both tasks').
    pub const THREAD_IOPERM: Span = Span::new(1480, 4);
    /// `spinlock_t alloc_lock` (`task_lock()`).
    pub const ALLOC_LOCK: Span = Span::new(1684, 4);
    /// `sizeof(struct task_struct)` (the tests keep every span inside it).
    #[allow(dead_code)]
    pub const SIZE: u16 = 1696;

    /// Every span a scheduler path here touches: the lines a new task's `task_struct` puts in
    /// the forking CPU's cache (`do_fork` copies the whole structure, `*p = *current`).
    pub const FORK_WRITES: &[Span] = &[
        STATE,
        GOODNESS_FIELDS,
        RUN_LIST_PREV,
        ACTIVE_MM,
        RT_PRIORITY,
        THREAD_LOADED,
        THREAD_DEBUGREG7,
        THREAD_IOPERM,
        ALLOC_LOCK,
    ];
}

/// `struct mm_struct` of 2.4.17 on i386: 136 bytes.
pub mod mm {
    use super::Span;
    /// `pgd_t *pgd` (`switch_mm` loads it into cr3).
    pub const PGD: Span = Span::new(12, 4);
    /// `atomic_t mm_count` (a lazy-TLB kernel thread or idle task holds a reference).
    pub const MM_COUNT: Span = Span::new(20, 4);
    /// `unsigned long cpu_vm_mask` (`switch_mm` clears and sets this CPU's bit, locked).
    pub const CPU_VM_MASK: Span = Span::new(116, 4);
    /// `context.segments` (`switch_mm` compares the two mms' LDTs).
    pub const CONTEXT_SEGMENTS: Span = Span::new(128, 4);
    /// `context.cpuvalid` (`switch_mm` sets this CPU's bit, locked).
    pub const CONTEXT_CPUVALID: Span = Span::new(132, 4);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line (at the P6's 32 bytes) of each span the kernel's comments place.
    #[test]
    fn the_goodness_fields_are_the_second_line_at_32_bytes() {
        let line = |s: Span| (s.off / 32, (s.off + s.len - 1) / 32);
        assert_eq!(line(task::GOODNESS_FIELDS), (1, 1));
        assert_eq!(line(task::RUN_LIST_NEXT), (1, 1));
        // "only the 'next' pointer fits into the cacheline"
        assert_eq!(line(task::RUN_LIST_PREV), (2, 2));
        assert_eq!(line(task::STATE), (0, 0));
        assert_eq!(line(task::NEED_RESCHED), (0, 0));
        assert_eq!(line(task::ACTIVE_MM), (2, 2));
        // The fields the switch saves straddle lines 27 and 28.
        assert_eq!(line(task::THREAD_SAVED), (27, 28));
        assert_eq!(line(mm::MM_COUNT), (0, 0));
        assert_eq!(line(mm::CPU_VM_MASK), (3, 3));
        for s in task::FORK_WRITES {
            assert!(s.off + s.len <= task::SIZE);
        }
    }
}

//! x86-64 System V machinery: the stack switch, task stacks, and the preemption trampoline.
//!
//! A task is a stackful user-level thread. Switching saves only what the ABI makes
//! callee-saved (rbp, rbx, r12–r15, the MXCSR control bits and the x87 control word), because
//! a voluntary switch is an ordinary function call: everything else is already dead or saved
//! by the caller. This is the Boost.Context `fcontext` technique (runtime-notes §0: 9 ns there,
//! corosensei's 2.5 ns on this kind of machine).
//!
//! An involuntary switch (preemption) enters through [`preempt_trampoline`]: the signal handler
//! rewrites the interrupted context so that, on return from the signal, the task "calls" the
//! trampoline, which saves *every* register (all GPRs, RFLAGS, and the full XSAVE state) before
//! calling into the scheduler, and restores them before jumping back. This is Go 1.14's
//! `pushCall(asyncPreempt)` (src/runtime/signal_amd64.go), with one difference Go does not
//! need: Rust leaf code may keep data in the 128-byte red zone below rsp, so the trampoline's
//! frame starts below it and its final `ret 128` steps back over it.

use std::ptr::NonNull;

std::arch::global_asm!(
    // fn schedkit_switch(save_sp: *mut *mut u8 (rdi), next_sp: *mut u8 (rsi))
    ".globl schedkit_switch",
    ".type schedkit_switch,@function",
    "schedkit_switch:",
    "push rbp",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "sub rsp, 8",
    "stmxcsr [rsp]",
    "fnstcw [rsp+4]",
    "mov [rdi], rsp",
    "mov rsp, rsi",
    "ldmxcsr [rsp]",
    "fldcw [rsp+4]",
    "add rsp, 8",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    ".size schedkit_switch, .-schedkit_switch",
    // First entry of a new task: the initial frame's "return address". r12 = argument,
    // r13 = entry function, which never returns.
    ".globl schedkit_task_start",
    ".type schedkit_task_start,@function",
    "schedkit_task_start:",
    "mov rdi, r12",
    "call r13",
    "ud2",
    ".size schedkit_task_start, .-schedkit_task_start",
    // The preemption trampoline. On entry rsp = interrupted rsp - 136 and [rsp] = interrupted
    // rip (written by the signal handler below the red zone).
    ".globl schedkit_preempt_trampoline",
    ".type schedkit_preempt_trampoline,@function",
    "schedkit_preempt_trampoline:",
    "push rbp",
    "mov rbp, rsp",
    "pushfq",
    "push rax",
    "push rcx",
    "push rdx",
    "push rsi",
    "push rdi",
    "push r8",
    "push r9",
    "push r10",
    "push r11",
    "sub rsp, {xsave_area}",
    "and rsp, -64",
    // The XSAVE header must be zero for the standard-form XRSTOR that follows.
    "xor eax, eax",
    "mov [rsp+512], rax",
    "mov [rsp+520], rax",
    "mov [rsp+528], rax",
    "mov [rsp+536], rax",
    "mov [rsp+544], rax",
    "mov [rsp+552], rax",
    "mov [rsp+560], rax",
    "mov [rsp+568], rax",
    "mov eax, -1",
    "mov edx, -1",
    "xsave64 [rsp]",
    "call {entry}",
    "mov eax, -1",
    "mov edx, -1",
    "xrstor64 [rsp]",
    "lea rsp, [rbp-80]",
    "pop r11",
    "pop r10",
    "pop r9",
    "pop r8",
    "pop rdi",
    "pop rsi",
    "pop rdx",
    "pop rcx",
    "pop rax",
    "popfq",
    "pop rbp",
    "ret 128",
    ".size schedkit_preempt_trampoline, .-schedkit_preempt_trampoline",
    xsave_area = const XSAVE_AREA,
    entry = sym super::worker::preempt_entry,
);

/// Bytes the trampoline reserves for XSAVE (checked against CPUID leaf 0xD at start-up; a CPU
/// whose enabled state needs more runs without preemption).
pub const XSAVE_AREA: usize = 4096;

extern "C" {
    fn schedkit_switch(save_sp: *mut *mut u8, next_sp: *mut u8);
    fn schedkit_task_start();
    fn schedkit_preempt_trampoline();
}

/// Saves the current context's stack pointer into `*save` and resumes the context whose saved
/// stack pointer is `next`.
///
/// # Safety
/// `next` must be a stack pointer saved by `switch` (or built by [`Stack::init`]) whose context
/// is not running anywhere, and `save` must stay valid until someone switches back.
#[inline(always)]
pub unsafe fn switch(save: *mut *mut u8, next: *mut u8) {
    schedkit_switch(save, next)
}

/// The address task code resumes at after a preemption.
pub fn trampoline_addr() -> usize {
    schedkit_preempt_trampoline as *const () as usize
}

/// Size of the XSAVE area for the state this CPU has enabled (CPUID.(EAX=0DH,ECX=0):EBX), or
/// `None` without XSAVE/OSXSAVE.
pub fn xsave_size() -> Option<usize> {
    // cpuid is available on every x86-64 CPU.
    let l1 = std::arch::x86_64::__cpuid(1);
    let osxsave = l1.ecx & (1 << 27) != 0;
    if !osxsave {
        return None;
    }
    // Leaf 0xD exists when OSXSAVE is set.
    let d = std::arch::x86_64::__cpuid_count(0xD, 0);
    Some(d.ebx as usize)
}

/// A task stack: an anonymous mapping with an inaccessible guard page at its low end, so an
/// overflow faults instead of overwriting a neighbour.
pub struct Stack {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a stack is plain memory owned by one task at a time.
unsafe impl Send for Stack {}

const PAGE: usize = 4096;

impl Stack {
    /// Maps a stack of `size` usable bytes (rounded up to pages) plus the guard page.
    pub fn new(size: usize) -> std::io::Result<Stack> {
        let size = size.div_ceil(PAGE) * PAGE;
        let len = size + PAGE;
        // SAFETY: a fresh anonymous private mapping; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the first page of our own mapping.
        if unsafe { libc::mprotect(p, PAGE, libc::PROT_NONE) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: unmapping what we mapped.
            unsafe { libc::munmap(p, len) };
            return Err(e);
        }
        Ok(Stack {
            base: NonNull::new(p as *mut u8).expect("mmap never returns null on success"),
            len,
        })
    }

    pub fn usable(&self) -> usize {
        self.len - PAGE
    }

    fn top(&self) -> *mut u8 {
        // SAFETY: one past the end of the mapping; 16-aligned because the length is pages.
        unsafe { self.base.as_ptr().add(self.len) }
    }

    /// Builds the initial frame so that the first `switch` to the returned stack pointer calls
    /// `entry(arg)` on this stack (see `schedkit_task_start`).
    pub fn init(&self, entry: extern "C" fn(*mut u8) -> !, arg: *mut u8) -> *mut u8 {
        let top = self.top() as usize;
        debug_assert_eq!(top % 16, 0);
        // Frame, from the new sp upward: control words, r15, r14, r13, r12, rbx, rbp, return
        // address. The return address sits at top-24 so that after `ret` rsp = top-16, which
        // is 16-aligned at the `call r13` as the ABI requires.
        let sp = (top - 80) as *mut u64;
        let ctrl: u64 = 0x1F80 | (0x037F << 32); // MXCSR and x87 CW power-on defaults
        let frame: [u64; 8] = [
            ctrl,
            0,
            0,
            entry as usize as u64,
            arg as u64,
            0,
            0,
            schedkit_task_start as *const () as usize as u64,
        ];
        // SAFETY: the 80 bytes below top belong to this stack and nothing runs on it yet.
        unsafe {
            for (i, w) in frame.iter().enumerate() {
                sp.add(i).write(*w);
            }
            sp.add(8).write(0);
            sp.add(9).write(0);
        }
        sp as *mut u8
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer in use (a stack is dropped only when its task is
        // dead and switched out).
        unsafe { libc::munmap(self.base.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// Round trips (switch to a context that switches straight back) per call, timed: the cost
/// of saving and restoring registers that a runtime yield adds its scheduling work to.
pub fn raw_round_trip_ns(iters: u64) -> f64 {
    struct Pair {
        main: *mut u8,
        task: *mut u8,
    }
    extern "C" fn bounce(arg: *mut u8) -> ! {
        let p = arg as *mut Pair;
        loop {
            // SAFETY: main keeps `p` alive and is suspended in its switch.
            unsafe { switch(&mut (*p).task, (*p).main) };
        }
    }
    let Ok(stack) = Stack::new(16 * 1024) else {
        return f64::NAN;
    };
    let mut pair = Pair {
        main: std::ptr::null_mut(),
        task: std::ptr::null_mut(),
    };
    let pp: *mut Pair = &mut pair;
    // SAFETY: pp is alive for the whole function; the task only bounces.
    unsafe {
        (*pp).task = stack.init(bounce, pp as *mut u8);
        switch(&mut (*pp).main, (*pp).task); // first entry
        let t = std::time::Instant::now();
        for _ in 0..iters {
            switch(&mut (*pp).main, (*pp).task);
        }
        t.elapsed().as_nanos() as f64 / iters.max(1) as f64
    }
    // The bouncing context is abandoned with its stack (nothing on it needs dropping).
}

/// The bounds of this executable's code (`__executable_start`..`etext`, defined by the GNU and
/// LLVM linkers). Preemption is only allowed at a program counter inside it: never inside libc
/// (malloc's locks, stdio), the vDSO, or another shared object.
pub fn text_range() -> (usize, usize) {
    extern "C" {
        static __executable_start: u8;
        static etext: u8;
    }
    // Linker-defined symbols; only their addresses are taken.
    (
        std::ptr::addr_of!(__executable_start) as usize,
        std::ptr::addr_of!(etext) as usize,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pair {
        main: *mut u8,
        task: *mut u8,
        count: u64,
    }

    extern "C" fn body(arg: *mut u8) -> ! {
        let pair = arg as *mut Pair;
        loop {
            // SAFETY: the test keeps `pair` alive while the task runs, and only one side runs.
            unsafe {
                (*pair).count += 1;
                // An aligned SSE spill must not fault: the frame keeps the ABI's alignment.
                let v = std::hint::black_box([1.0f64, 2.0]);
                assert_eq!(v[0] + v[1], 3.0);
                switch(&mut (*pair).task, (*pair).main);
            }
        }
    }

    #[test]
    fn switches_in_and_out_of_a_task_stack() {
        let stack = Stack::new(64 * 1024).unwrap();
        assert!(stack.usable() >= 64 * 1024);
        let mut pair = Pair {
            main: std::ptr::null_mut(),
            task: std::ptr::null_mut(),
            count: 0,
        };
        let pp: *mut Pair = &mut pair;
        // SAFETY: pp points at `pair`, alive for the whole test.
        unsafe { (*pp).task = stack.init(body, pp as *mut u8) };
        for round in 1..=5u64 {
            // SAFETY: the task's sp is a fresh frame or saved by its own switch.
            unsafe { switch(&mut (*pp).main, (*pp).task) };
            assert_eq!(unsafe { (*pp).count }, round);
        }
    }

    #[test]
    fn the_text_range_holds_this_code() {
        let (lo, hi) = text_range();
        let here = switches_in_and_out_of_a_task_stack as *const () as usize;
        assert!(lo < here && here < hi, "{lo:#x} {here:#x} {hi:#x}");
    }
}

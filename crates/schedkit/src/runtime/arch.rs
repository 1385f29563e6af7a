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
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

std::arch::global_asm!(
    // fn schedkit_switch(save_sp: *mut *mut u8 (rdi), next_sp: *mut u8 (rsi))
    //
    // A task's way out to its worker. It leaves by `pop rcx; jmp rcx` (rcx is caller-saved),
    // not `ret`, as Boost.Context's `jump_fcontext` does: a `ret` is predicted from the
    // return stack buffer, whose top is the address this call came from on the *old* stack,
    // so it mispredicted; the indirect jump is predicted from the branch target buffer, which
    // learns where switches go. The worker enters a task the other way, through
    // `schedkit_switch_ret` below, so that the task's own returns after the switch meet the
    // addresses its calls pushed. A bare round trip (two switches) went from 22 to 9 ns on
    // this machine (`bench runtime`'s "raw switch"), and with the task three calls deep, as
    // a task in `yield_now` is, it stays at 9 ns where jumping both ways costs 21 ns.
    //
    // Of the MXCSR it carries the control bits only (rounding, masks, DAZ, FZ: callee-saved
    // in the System V ABI), and reloads them only when the resumed context's differ; the
    // status flags (bits 0-5, caller-saved) stay as they are. Until 2026-11-27 it reloaded the
    // whole saved word at every switch: on an Intel Xeon (Sapphire Rapids) VM an `ldmxcsr`
    // that changes the register costs about 25 ns (one that writes the same value, 1-2 ns),
    // and two contexts differ in their sticky flags as soon as one of them has done an
    // inexact floating-point operation, so every switch paid it (`scripts/mxcsr-reload.c`).
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
    "mov r8d, [rsp]",
    "mov [rdi], rsp",
    "mov rsp, rsi",
    "mov r9d, [rsp]",
    "xor r9d, r8d",
    "test r9d, 0xffc0",
    "jnz 8f",
    "7:",
    "fldcw [rsp+4]",
    "add rsp, 8",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "pop rcx",
    "jmp rcx",
    // The resumed context's MXCSR control bits differ from the current ones: load them, with
    // the current status flags (which the ABI leaves to the caller).
    "8:",
    "and r8d, 0x3f",
    "mov r9d, [rsp]",
    "and r9d, 0xffc0",
    "or r9d, r8d",
    "mov [rsp], r9d",
    "ldmxcsr [rsp]",
    "jmp 7b",
    ".size schedkit_switch, .-schedkit_switch",
    // The same switch entered by a jump from [`resume`] (whose resume address is already on
    // the stack) and left by `ret`: the worker's way into a task. The task's resume address,
    // and the addresses it returns through next, were pushed onto the return stack buffer
    // by its own calls on the way out, and no call of the worker's is left above them, so
    // this `ret` and the task's returns after it are predicted.
    ".globl schedkit_switch_ret",
    ".hidden schedkit_switch_ret",
    ".type schedkit_switch_ret,@function",
    "schedkit_switch_ret:",
    "push rbp",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "sub rsp, 8",
    "stmxcsr [rsp]",
    "fnstcw [rsp+4]",
    "mov r8d, [rsp]",
    "mov [rdi], rsp",
    "mov rsp, rsi",
    "mov r9d, [rsp]",
    "xor r9d, r8d",
    "test r9d, 0xffc0",
    "jnz 8f",
    "7:",
    "fldcw [rsp+4]",
    "add rsp, 8",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    "8:",
    "and r8d, 0x3f",
    "mov r9d, [rsp]",
    "and r9d, 0xffc0",
    "or r9d, r8d",
    "mov [rsp], r9d",
    "ldmxcsr [rsp]",
    "jmp 7b",
    ".size schedkit_switch_ret, .-schedkit_switch_ret",
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
    // rip (written by the signal handler below the red zone), and the handler has set the
    // worker's preempt_count to 1.
    //
    // It lives in the section the handler never redirects (`schedkit_nopreempt`, with
    // `worker::enter_runtime_here`), and it drops preempt_count to 0 itself, only once its save
    // area is released: a signal anywhere between the redirect and the `ret 128` therefore
    // never starts a second trampoline below this one. (Until 2026-11-27 `preempt_entry`
    // dropped the count in Rust, and a signal landing in its last instructions or at the
    // XRSTOR below redirected the task again with the first area still live: two areas and
    // two scheduler frames on the stack, 26.7 KiB with a 12 KiB area, which overflowed the
    // smallest stack the builder allowed in most runs of a stress.)
    ".pushsection schedkit_nopreempt,\"ax\",@progbits",
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
    // (Entered again at 1: when a reschedule was asked as the count dropped, below.)
    "1:",
    // Reserve the save area (its size is set once at start-up from CPUID leaf 0xD, see
    // `SaveArea`), touching every page on the way down as a stack probe: a reserve larger
    // than the guard page must fault on the guard rather than step over it into whatever
    // mapping lies below the task stack.
    "mov rcx, [rip + {reserve}]",
    "2:",
    "sub rsp, 4096",
    "test [rsp], rsp",
    "sub rcx, 4096",
    "ja 2b",
    "and rsp, -64",
    "cmp byte ptr [rip + {use_xsave}], 0",
    "je 3f",
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
    "mov eax, [rip + {mask}]",
    "mov edx, [rip + {mask} + 4]",
    "xsave64 [rsp]",
    // `preempt_entry` returns (rax, rdx) = the preempt_count and need_resched words of the
    // worker the task is on now (it may have moved), with the count still 1.
    "call {entry}",
    "mov r8, rax",
    "mov r9, rdx",
    "mov eax, [rip + {mask}]",
    "mov edx, [rip + {mask} + 4]",
    "xrstor64 [rsp]",
    "jmp 4f",
    // No XSAVE enabled by the OS (pre-2008 CPUs, or a kernel booted with noxsave): the legacy
    // 512-byte x87/SSE image is the whole of the extended state.
    "3:",
    "fxsave64 [rsp]",
    "call {entry}",
    "mov r8, rax",
    "mov r9, rdx",
    "fxrstor64 [rsp]",
    "4:",
    "lea rsp, [rbp-80]",
    // The area is released: back to task code. The count drops with a locked instruction (a
    // full barrier), then need_resched is read: the worker's half of `resched`'s Dekker pair,
    // as in `resched::leave`. A request that came in between is acted on at once by entering
    // again (the registers are those of the interrupted code; the frame is the same). One that
    // comes after the read finds the count 0 and signals, and that signal, landing in this
    // section, only leaves its flag for the next tick or runtime call.
    "lock dec dword ptr [r8]",
    "cmp byte ptr [r9], 0",
    "jne 5f",
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
    "5:",
    "mov dword ptr [r8], 1",
    "jmp 1b",
    ".globl schedkit_preempt_trampoline_end",
    ".hidden schedkit_preempt_trampoline_end",
    "schedkit_preempt_trampoline_end:",
    ".size schedkit_preempt_trampoline, .-schedkit_preempt_trampoline",
    ".popsection",
    reserve = sym SCHEDKIT_SAVE_RESERVE,
    use_xsave = sym SCHEDKIT_SAVE_USE_XSAVE,
    mask = sym SCHEDKIT_SAVE_MASK,
    entry = sym super::worker::preempt_entry,
);

// What the trampoline reads: the bytes it reserves below the saved registers (a multiple of
// the page size, so that its probe loop touches every page), whether it uses XSAVE or the
// legacy FXSAVE, and the XSAVE instruction mask. Written once by `SaveArea::get` before any
// handler is installed, read-only afterwards.
static SCHEDKIT_SAVE_RESERVE: AtomicU64 = AtomicU64::new(PAGE as u64);
static SCHEDKIT_SAVE_USE_XSAVE: AtomicU8 = AtomicU8::new(0);
static SCHEDKIT_SAVE_MASK: AtomicU64 = AtomicU64::new(0);

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

/// The worker's side of [`switch`]: saves the current context's stack pointer into `*save`
/// and resumes the task context whose saved stack pointer is `next`, entering the switch by a
/// jump and leaving it by `ret` (see `schedkit_switch_ret`), so that the return stack buffer
/// holds the task's return addresses when it resumes, not this call's. The context saved here
/// is resumed by a [`switch`] from the task, which jumps back to the label below.
///
/// # Safety
/// As [`switch`]; `next` must have been saved by [`switch`] or built by [`Stack::init`].
#[inline(always)]
pub unsafe fn resume(save: *mut *mut u8, next: *mut u8) {
    // The asm block acts as a call of a C function: every caller-saved register is clobbered
    // (the callee-saved ones are saved by the switch itself), memory may change, and the
    // stack is used below rsp (no `nostack`), restored exactly when it comes back at `2:`.
    std::arch::asm!(
        "lea rax, [rip + 2f]",
        "push rax",
        "jmp schedkit_switch_ret",
        "2:",
        in("rdi") save,
        in("rsi") next,
        clobber_abi("C"),
    );
}

/// The address task code resumes at after a preemption.
pub fn trampoline_addr() -> usize {
    schedkit_preempt_trampoline as *const () as usize
}

/// The trampoline's code, `[start, end)`.
#[cfg(test)]
pub fn trampoline_range() -> (usize, usize) {
    extern "C" {
        fn schedkit_preempt_trampoline_end();
    }
    (
        trampoline_addr(),
        schedkit_preempt_trampoline_end as *const () as usize,
    )
}

/// How the preemption trampoline saves the interrupted task's extended register state on this
/// machine, decided once per process.
///
/// The area is sized from CPUID leaf 0xD for exactly the state components the kernel lets this
/// process use: XCR0 (what the OS enabled) intersected with the process's permitted set
/// (`arch_prctl(ARCH_GET_XCOMP_PERM)`, Linux 5.16+). On a Sapphire Rapids server XCR0 includes
/// the AMX tile data (8 KiB) but a process may use it only after asking
/// (`ARCH_REQ_XCOMP_PERM`); CPUID.(0xD,0).EBX, which covers all of XCR0, then reports ~11 KiB.
/// Without the permission the tiles cannot be in use, so they are left out of the mask and the
/// area is the 2.4–2.7 KiB of x87/SSE/AVX/AVX-512 state; with it, they are saved too. A CPU or
/// kernel without XSAVE gets the 512-byte FXSAVE image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaveArea {
    /// Bytes the state needs (XSAVE standard form up to the last saved component).
    pub needed: usize,
    /// Bytes reserved on the task stack at each preemption (page multiple, ≥ needed + 64 for
    /// the 64-byte alignment).
    pub reserve: usize,
    /// `None`: FXSAVE. `Some(mask)`: XSAVE with this requested-feature bitmap.
    pub xsave_mask: Option<u64>,
}

/// Stack allowed for the scheduler's frames below a preemption's save area (`preempt_entry`,
/// the tick, timers, `schedule()` and the switch). Measured by
/// `runtime::tests::preemption::one_preemption_fits_what_a_stack_reserves`, which fails if the
/// deepest preemption it sees goes below [`SaveArea::stack_cost`]: 1.9 KiB in this
/// workspace's profiles (opt-level 2), 7.9 KiB with schedkit built at opt-level 0, as a
/// dependency of a crate in Cargo's default dev profile is. 16 KiB leaves twice that.
pub const SCHEDULER_FRAMES: usize = 16 * 1024;

/// Environment override for tests and CI: reserve this many bytes instead of what the CPU needs
/// (to exercise a large area on a machine whose state is small). Smaller than needed is refused.
pub const SAVE_AREA_ENV: &str = "SCHEDKIT_RUNTIME_SAVE_AREA";

impl SaveArea {
    /// What this CPU and kernel need.
    pub fn detect() -> SaveArea {
        // cpuid is available on every x86-64 CPU.
        let l1 = std::arch::x86_64::__cpuid(1);
        let osxsave = l1.ecx & (1 << 27) != 0;
        if !osxsave {
            return SaveArea::with_reserve(512, None, 0);
        }
        let xcr0 = xgetbv0();
        let mask = xcr0 & permitted_xfeatures().unwrap_or(u64::MAX);
        // Standard form: legacy region (512) + header (64), then each component at the offset
        // CPUID.(0xD,i).EBX with size EAX.
        let mut needed = 576usize;
        for i in 2..64u32 {
            if mask & (1u64 << i) != 0 {
                let c = std::arch::x86_64::__cpuid_count(0xD, i);
                needed = needed.max(c.ebx as usize + c.eax as usize);
            }
        }
        SaveArea::with_reserve(needed, Some(mask), 0)
    }

    fn with_reserve(needed: usize, xsave_mask: Option<u64>, at_least: usize) -> SaveArea {
        SaveArea {
            needed,
            reserve: at_least.max(needed + 64).div_ceil(PAGE) * PAGE,
            xsave_mask,
        }
    }

    /// The process's save area: detected once, with [`SAVE_AREA_ENV`] applied, and published to
    /// the trampoline. `Err` says why preemption cannot be used (a forced area too small).
    pub fn get() -> Result<SaveArea, String> {
        static AREA: std::sync::OnceLock<Result<SaveArea, String>> = std::sync::OnceLock::new();
        AREA.get_or_init(|| {
            let cpu = SaveArea::detect();
            let area = match std::env::var(SAVE_AREA_ENV) {
                Err(_) => cpu,
                Ok(v) => {
                    let forced: usize = v
                        .trim()
                        .parse()
                        .map_err(|_| format!("{SAVE_AREA_ENV}={v:?} is not a byte count"))?;
                    if forced < cpu.needed {
                        return Err(format!(
                            "{SAVE_AREA_ENV}={forced} is smaller than the {} bytes this CPU's \
                             enabled register state needs",
                            cpu.needed
                        ));
                    }
                    if forced > 1 << 20 {
                        return Err(format!("{SAVE_AREA_ENV}={forced} is over 1 MiB"));
                    }
                    SaveArea::with_reserve(cpu.needed, cpu.xsave_mask, forced)
                }
            };
            SCHEDKIT_SAVE_RESERVE.store(area.reserve as u64, Ordering::SeqCst);
            SCHEDKIT_SAVE_MASK.store(area.xsave_mask.unwrap_or(0), Ordering::SeqCst);
            SCHEDKIT_SAVE_USE_XSAVE.store(area.xsave_mask.is_some() as u8, Ordering::SeqCst);
            Ok(area)
        })
        .clone()
    }

    /// `Err` when the process may now use state components this area does not save: the
    /// area is sized once per process, and a program that asks for AMX
    /// (`ARCH_REQ_XCOMP_PERM`) after its first runtime was built would have its tiles
    /// clobbered by other tasks across preemptions. A runtime built then runs without
    /// preemption and says why.
    pub fn covers_permitted(&self) -> Result<(), String> {
        let Some(mask) = self.xsave_mask else {
            return Ok(());
        };
        let now = xgetbv0() & permitted_xfeatures().unwrap_or(u64::MAX);
        match now & !mask {
            0 => Ok(()),
            missing => Err(format!(
                "the process was allowed extended state {missing:#x} after the save area was \
                 sized (XSAVE mask {mask:#x}); ask for it (ARCH_REQ_XCOMP_PERM) before building \
                 the first runtime"
            )),
        }
    }

    /// Stack bytes a preemption takes on a task stack below the interrupted frame: the red
    /// zone it steps over (128), the interrupted pc and the trampoline's 11 saved registers
    /// (96), the area and up to 63 bytes of its 64-byte alignment, and `SCHEDULER_FRAMES`
    /// for the scheduler's frames below it. Only one preemption is ever on a stack: the
    /// signal handler never redirects a task whose trampoline has not returned (see
    /// `schedkit_preempt_trampoline`).
    pub fn stack_cost(&self) -> usize {
        128 + 96 + self.reserve + 64 + SCHEDULER_FRAMES
    }
}

/// XCR0: the state components the OS enabled (`xgetbv` with ECX = 0; only valid with OSXSAVE).
fn xgetbv0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: xgetbv with ECX=0 is valid whenever CPUID.1:ECX.OSXSAVE is set (checked by the
    // caller); it reads a register and touches no memory.
    unsafe {
        std::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi,
            options(nomem, nostack, preserves_flags));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// The extended state components this process may use (`ARCH_GET_XCOMP_PERM`, Linux 5.16+), or
/// `None` on older kernels, which never enable permission-gated components in XCR0.
fn permitted_xfeatures() -> Option<u64> {
    const ARCH_GET_XCOMP_PERM: libc::c_long = 0x1022;
    let mut bits: u64 = 0;
    // SAFETY: arch_prctl writes one u64 through the pointer we pass.
    let r = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_GET_XCOMP_PERM,
            &mut bits as *mut u64,
        )
    };
    (r == 0).then_some(bits)
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

    /// The guard page's addresses, `[lo, hi)`.
    pub fn guard(&self) -> (usize, usize) {
        let lo = self.base.as_ptr() as usize;
        (lo, lo + PAGE)
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
        resume(&mut (*pp).main, (*pp).task); // first entry
        let t = std::time::Instant::now();
        for _ in 0..iters {
            resume(&mut (*pp).main, (*pp).task);
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
            // SAFETY: the task's sp is a fresh frame or saved by its own switch. Both ways in
            // (the worker's `resume`, and a plain `switch`) save and restore the same frame.
            unsafe {
                if round % 2 == 1 {
                    resume(&mut (*pp).main, (*pp).task)
                } else {
                    switch(&mut (*pp).main, (*pp).task)
                }
            };
            assert_eq!(unsafe { (*pp).count }, round);
        }
    }

    fn mxcsr() -> u32 {
        let mut m = 0u32;
        // SAFETY: stores the MXCSR into a local.
        unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut m, options(nostack)) };
        m
    }

    fn set_mxcsr(m: u32) {
        // SAFETY: loads a valid MXCSR value (reserved bits clear) from a local.
        unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &m, options(nostack)) };
    }

    const ROUND_DOWN: u32 = 0x2000;
    const PRECISION_FLAG: u32 = 0x20;

    struct Modes {
        main: *mut u8,
        task: *mut u8,
        /// The task's MXCSR as it saw it after each resume.
        seen: Vec<u32>,
    }

    extern "C" fn rounding_task(arg: *mut u8) -> ! {
        let m = arg as *mut Modes;
        // Its own rounding mode, kept across its switches.
        set_mxcsr((mxcsr() & !0x3f) | ROUND_DOWN);
        loop {
            // SAFETY: the test keeps `m` alive while the task runs, and only one side runs.
            unsafe {
                switch(&mut (*m).task, (*m).main);
                (*m).seen.push(mxcsr());
            }
        }
    }

    /// A switch carries each context's MXCSR control bits (callee-saved in the System V ABI):
    /// a task's rounding mode is its own, whichever way it is entered; the status flags
    /// (caller-saved) are left as they are, not reloaded.
    #[test]
    fn a_switch_keeps_each_context_s_mxcsr_control_bits() {
        let stack = Stack::new(64 * 1024).unwrap();
        let mut modes = Modes {
            main: std::ptr::null_mut(),
            task: std::ptr::null_mut(),
            seen: Vec::new(),
        };
        let mp: *mut Modes = &mut modes;
        let before = mxcsr();
        // SAFETY: mp points at `modes`, alive for the whole test.
        unsafe { (*mp).task = stack.init(rounding_task, mp as *mut u8) };
        for round in 0..4 {
            let flags = if round % 2 == 0 { PRECISION_FLAG } else { 0 };
            set_mxcsr((before & !0x3f) | flags);
            // SAFETY: as in the test above.
            unsafe {
                if round % 2 == 0 {
                    resume(&mut (*mp).main, (*mp).task);
                } else {
                    switch(&mut (*mp).main, (*mp).task);
                }
            }
            let m = mxcsr();
            assert_eq!(
                m & !0x3f,
                before & !0x3f,
                "main's control bits, round {round}"
            );
            if round > 0 {
                let seen = unsafe { *(*mp).seen.last().unwrap() };
                assert_eq!(seen & !0x3f, (before & !0x3f) | ROUND_DOWN, "round {round}");
                assert_eq!(
                    seen & 0x3f,
                    flags,
                    "the status flags main left, round {round}"
                );
            }
        }
        set_mxcsr(before);
    }

    #[test]
    fn the_text_range_holds_this_code() {
        let (lo, hi) = text_range();
        let here = switches_in_and_out_of_a_task_stack as *const () as usize;
        assert!(lo < here && here < hi, "{lo:#x} {here:#x} {hi:#x}");
    }
}

//! Stack painting for the preemption tests: a task paints the unused part of its own stack
//! with a pattern, and later finds how far down anything (its own calls, a preemption's
//! frame, save area and scheduler frames) wrote.

const PAINT: u64 = 0xA5A5_A5A5_5A5A_5A5A;

/// The lowest usable address of this thread's current stack: the start of the mapping that
/// holds it, from /proc/self/maps (on a task stack, the guard page below is a PROT_NONE
/// mapping of its own; the end is not reliable, as the kernel merges the stack's mapping with
/// a like one above it).
pub(super) fn own_stack_bottom() -> usize {
    let here = stack_addr();
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    for line in maps.lines() {
        let range = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = range.split_once('-') {
            let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            else {
                continue;
            };
            if (a..b).contains(&here) {
                return a;
            }
        }
    }
    panic!("no mapping holds the stack address {here:#x}");
}

/// Paints `[lo, here - 4 KiB)`, where `here` is this function's own frame (the 4 KiB keep the
/// painting loop clear of its own frame and of the red zone).
#[inline(never)]
pub(super) fn paint_below_here(lo: usize) {
    let here = stack_addr();
    let hi = (here - 4096) & !7;
    let mut p = lo;
    while p < hi {
        // SAFETY: [lo, hi) is this stack's own free memory below the live frames.
        unsafe { std::ptr::write_volatile(p as *mut u64, PAINT) };
        p += 8;
    }
}

/// The lowest address at or above `lo` whose paint was overwritten (`hi` if none below it).
pub(super) fn lowest_written(lo: usize, hi: usize) -> usize {
    let mut p = lo;
    // SAFETY: reading this stack's own memory, below the caller's frame.
    while p < hi && unsafe { std::ptr::read_volatile(p as *const u64) } == PAINT {
        p += 8;
    }
    p
}

/// An address in the caller's frame (a local's; `&0u8` would be promoted to a static).
#[inline(always)]
pub(super) fn stack_addr() -> usize {
    let x = 0u8;
    std::hint::black_box(&x) as *const u8 as usize
}

//! The runtime's clock: nanoseconds since the runtime started, read on every switch.
//!
//! `clock_gettime` through the vDSO costs tens of ns (more in a VM), several times per
//! switch; on CPUs whose TSC is constant and non-stop (CPUID 8000_0007h EDX bit 8, which is
//! what lets Linux use it as `sched_clock`), the clock is the TSC scaled by a factor
//! calibrated once per process against `Instant`. Elsewhere it is `Instant`.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[derive(Clone, Copy)]
pub(crate) struct Clock {
    start_tsc: u64,
    /// ns per TSC tick, as a 32.32 fixed-point number; 0 = use `Instant`.
    mult: u64,
    epoch: Instant,
    /// CLOCK_MONOTONIC at `start_tsc`, for arming POSIX timers at a time of this clock.
    epoch_mono_ns: u64,
}

fn invariant_tsc() -> bool {
    let max = std::arch::x86_64::__cpuid(0x8000_0000).eax;
    max >= 0x8000_0007 && std::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0
}

fn rdtsc() -> u64 {
    // SAFETY: rdtsc is unprivileged on Linux x86-64.
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// ns per tick (32.32), measured once per process over 10 ms.
fn calibration() -> u64 {
    static MULT: OnceLock<u64> = OnceLock::new();
    *MULT.get_or_init(|| {
        if !invariant_tsc() {
            return 0;
        }
        let (t0, c0) = (Instant::now(), rdtsc());
        std::thread::sleep(Duration::from_millis(10));
        let (t1, c1) = (Instant::now(), rdtsc());
        let ns = (t1 - t0).as_nanos() as u64;
        let ticks = c1.wrapping_sub(c0);
        if ticks == 0 || ns == 0 {
            return 0;
        }
        ((ns as u128) << 32).checked_div(ticks as u128).unwrap_or(0) as u64
    })
}

impl Clock {
    pub fn new() -> Clock {
        let mult = calibration();
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec we pass.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        Clock {
            start_tsc: rdtsc(),
            mult,
            epoch: Instant::now(),
            epoch_mono_ns: ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
        }
    }

    /// The CLOCK_MONOTONIC time at which this clock reads `t` (to within the TSC
    /// calibration; a timer that fires early is re-armed by its handler).
    pub fn to_monotonic(self, t: u64) -> u64 {
        self.epoch_mono_ns.saturating_add(t)
    }

    #[inline]
    pub fn now(&self) -> u64 {
        if self.mult != 0 {
            ((rdtsc().wrapping_sub(self.start_tsc) as u128 * self.mult as u128) >> 32) as u64
        } else {
            self.epoch.elapsed().as_nanos() as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_instant() {
        let c = Clock::new();
        let t = Instant::now();
        std::thread::sleep(Duration::from_millis(20));
        let (a, b) = (c.now(), t.elapsed().as_nanos() as u64);
        // Within 5 % of the OS clock over 20 ms (calibration error is far smaller).
        assert!(a.abs_diff(b) < b / 20 + 500_000, "clock {a} vs Instant {b}");
    }
}

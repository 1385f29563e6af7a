//! The runqueue-lock model: a spinlock as a FIFO reservation of time.
//!
//! Events are processed in time order, so lock requests arrive in time order too. A request
//! at time `t` starts when the lock is free (`max(t, free_at)`; the difference is spinning),
//! pays the atomic operation, plus a cache-line transfer if another CPU held the lock last,
//! then holds it for the critical section the policy's hook actually performed.
//!
//! Simplification: the hook's effects are applied at request time, not at the end of the
//! spin; requests are served in arrival order, so the order of effects is still the order a
//! FIFO (ticket) lock would give.

use crate::task::CpuId;

#[derive(Clone, Debug, Default)]
pub struct LockModel {
    free_at: u64,
    last_owner: Option<CpuId>,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: u64,
}

/// What one acquisition cost the acquiring CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Spinning before the lock was free.
    pub wait_ns: u64,
    /// Request to release: spin + atomic + line transfer + critical section.
    pub total_ns: u64,
}

impl LockModel {
    /// Acquires at `t` for a critical section of `hold_ns`.
    pub fn acquire(
        &mut self,
        cpu: CpuId,
        t: u64,
        hold_ns: u64,
        atomic_ns: u64,
        transfer_ns: u64,
    ) -> Held {
        let start = t.max(self.free_at);
        let wait = start - t;
        let transfer = match self.last_owner {
            Some(o) if o != cpu => transfer_ns,
            _ => 0,
        };
        let end = start + atomic_ns + transfer + hold_ns;
        self.free_at = end;
        self.last_owner = Some(cpu);
        self.acquisitions += 1;
        if wait > 0 {
            self.contended += 1;
            self.wait_ns += wait;
        }
        Held {
            wait_ns: wait,
            total_ns: end - t,
        }
    }

    /// The CPU that held it last (whose cache has its line).
    pub fn last_owner(&self) -> Option<CpuId> {
        self.last_owner
    }

    /// Keeps the lock held until `t` (the outer lock of a nested pair stays held while the
    /// inner one is taken and the section runs).
    pub fn hold_until(&mut self, t: u64) {
        self.free_at = self.free_at.max(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncontended_local_acquisition_costs_the_atomic_and_the_section() {
        let mut l = LockModel::default();
        assert_eq!(
            l.acquire(0, 100, 50, 10, 1000),
            Held {
                wait_ns: 0,
                total_ns: 60
            }
        );
        // Same CPU again later: no transfer, no wait.
        assert_eq!(
            l.acquire(0, 1000, 50, 10, 1000),
            Held {
                wait_ns: 0,
                total_ns: 60
            }
        );
    }

    #[test]
    fn a_second_cpu_waits_and_pays_the_transfer() {
        let mut l = LockModel::default();
        l.acquire(0, 0, 100, 10, 50); // held until 110
        let h = l.acquire(1, 40, 100, 10, 50);
        assert_eq!(h.wait_ns, 70);
        assert_eq!(h.total_ns, 70 + 10 + 50 + 100);
        assert_eq!((l.acquisitions, l.contended, l.wait_ns), (2, 1, 70));
    }
}

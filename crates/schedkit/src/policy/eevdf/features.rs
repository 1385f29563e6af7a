//! `eevdf`'s eras and their `sched_features`: 6.6 as first merged, 6.18 with the defaults of
//! its `features.h` (`kernel/sched/features.h`, `sysctl_sched_base_slice` and
//! `get_update_sysctl_factor` of `kernel/sched/fair.c`). Constants only: must never depend on
//! the runqueue, the balancer or anything beyond `Eevdf` itself.

use super::Eevdf;

/// Which kernel's EEVDF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EevdfEra {
    /// Linux 6.6, the design as first merged.
    V6_6,
    /// Linux 6.18.
    V6_18,
}

/// The `sched_features` of `features.h` that the 6.18 rules depend on (defaults of v6.18).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    pub place_rel_deadline: bool,
    pub preempt_short: bool,
    pub delay_dequeue: bool,
    pub delay_zero: bool,
    pub wakeup_preemption: bool,
}

impl Features {
    pub const V6_18: Features = Features {
        place_rel_deadline: true,
        preempt_short: true,
        delay_dequeue: true,
        delay_zero: true,
        wakeup_preemption: true,
    };
}

impl Eevdf {
    /// `get_update_sysctl_factor` (SCHED_TUNABLESCALING_LOG): 1 + ilog2(min(ncpus, 8)).
    pub fn slice_factor(ncpus: usize) -> u64 {
        let cpus = ncpus.clamp(1, 8);
        1 + (usize::BITS - 1 - cpus.leading_zeros()) as u64
    }

    /// 6.6's defaults for `ncpus` CPUs (`sched_update_scaling`'s log factor).
    pub fn v6_6(ncpus: usize) -> Eevdf {
        Eevdf {
            base_slice: 750_000 * Self::slice_factor(ncpus),
            normalized_base_slice: 750_000,
            run_to_parity: true,
            migration_cost: 500_000,
            removed: super::RemovedLoad::default(),
            asym: Default::default(),
            era: EevdfEra::V6_6,
            features: Features {
                place_rel_deadline: false,
                preempt_short: false,
                delay_dequeue: false,
                delay_zero: false,
                wakeup_preemption: true,
            },
        }
    }

    /// 6.18's defaults for `ncpus` CPUs: `sysctl_sched_base_slice` 0.70 ms (fair.c of v6.18,
    /// line 79), the features of its `features.h`.
    pub fn v6_18(ncpus: usize) -> Eevdf {
        Eevdf {
            base_slice: 700_000 * Self::slice_factor(ncpus),
            normalized_base_slice: 700_000,
            run_to_parity: true,
            migration_cost: 500_000,
            removed: super::RemovedLoad::default(),
            asym: Default::default(),
            era: EevdfEra::V6_18,
            features: Features::V6_18,
        }
    }

    pub(super) fn is_618(&self) -> bool {
        self.era == EevdfEra::V6_18
    }
}

//! `eevdf`'s eras and their `sched_features`: 6.6 as first merged, 6.18 with the defaults of
//! its `features.h` (`kernel/sched/features.h`, `sysctl_sched_base_slice` and
//! `get_update_sysctl_factor` of `kernel/sched/fair.c`). Constants only: must never depend on
//! the runqueue, the balancer or anything beyond `Eevdf` itself.

use super::Eevdf;
use crate::ds::dl_rq::DlServerParams;
use crate::policy::deadline::{RT_PERIOD_US, RT_RUNTIME_US};

/// The fair server's parameters as the command line sets them, per machine (every CPU's
/// `/sys/kernel/debug/sched/fair_server/cpuN/{runtime,period}`, in ns):
/// `eevdf:era=6.18,fair_server_runtime=NS,fair_server_period=NS` (either or both; a runtime
/// of 0 turns the server off, as writing 0 to debugfs does). Deferral is not a kernel knob
/// (the fair server always defers); `defer` exists for the tests that compare the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FairServerOpts {
    pub runtime_ns: u64,
    pub period_ns: u64,
    pub defer: bool,
}

impl FairServerOpts {
    pub const DEFAULT: FairServerOpts = FairServerOpts {
        runtime_ns: DlServerParams::FAIR_DEFAULT.runtime_ns,
        period_ns: DlServerParams::FAIR_DEFAULT.period_ns,
        defer: true,
    };

    /// The server these options give (`None`: runtime 0, no server).
    pub fn params(&self) -> Option<DlServerParams> {
        (self.runtime_ns > 0).then_some(DlServerParams {
            runtime_ns: self.runtime_ns,
            period_ns: self.period_ns,
            defer: self.defer,
        })
    }

    /// Parses `fair_server_runtime=NS,fair_server_period=NS` (any subset, comma-separated),
    /// validated as the kernel's debugfs write and `dl_server_apply_params` validate them.
    pub fn parse(spec: &str) -> Result<FairServerOpts, String> {
        let mut o = FairServerOpts::DEFAULT;
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| format!("eevdf:era=6.18 option '{item}': expected key=value"))?;
            let n = v.trim().parse::<u64>().map_err(|_| {
                format!(
                    "eevdf:era=6.18 option {}: expected a whole number of nanoseconds, got '{v}'",
                    k.trim()
                )
            })?;
            match k.trim() {
                "fair_server_runtime" => o.runtime_ns = n,
                "fair_server_period" => o.period_ns = n,
                other => {
                    return Err(format!(
                        "eevdf:era=6.18 has no option '{other}' (it takes fair_server_runtime=NS \
                         and fair_server_period=NS)"
                    ))
                }
            }
        }
        let p = DlServerParams {
            runtime_ns: o.runtime_ns,
            period_ns: o.period_ns,
            defer: true,
        };
        p.check("eevdf:era=6.18", RT_RUNTIME_US, RT_PERIOD_US)?;
        Ok(o)
    }

    /// The options that differ from the kernel's defaults, as `parse` reads them.
    pub fn suffix(&self) -> String {
        let mut parts = Vec::new();
        if self.runtime_ns != Self::DEFAULT.runtime_ns {
            parts.push(format!("fair_server_runtime={}", self.runtime_ns));
        }
        if self.period_ns != Self::DEFAULT.period_ns {
            parts.push(format!("fair_server_period={}", self.period_ns));
        }
        parts.join(",")
    }
}

impl Default for FairServerOpts {
    fn default() -> Self {
        FairServerOpts::DEFAULT
    }
}

/// The label suffix of a class built with fair server `fs` (`None`: runtime 0).
pub(super) fn fair_server_suffix(fs: Option<DlServerParams>) -> String {
    let o = match fs {
        Some(p) => FairServerOpts {
            runtime_ns: p.runtime_ns,
            period_ns: p.period_ns,
            defer: p.defer,
        },
        None => FairServerOpts {
            runtime_ns: 0,
            ..FairServerOpts::DEFAULT
        },
    };
    o.suffix()
}

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
    /// SIS_UTIL (v5.20+): the wakeup's idle search limited by the LLC's utilisation.
    pub sis_util: bool,
}

impl Features {
    pub const V6_18: Features = Features {
        place_rel_deadline: true,
        preempt_short: true,
        delay_dequeue: true,
        delay_zero: true,
        wakeup_preemption: true,
        sis_util: true,
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
            llc_shared: Default::default(),
            dst_domains: Default::default(),
            era: EevdfEra::V6_6,
            features: Features {
                place_rel_deadline: false,
                preempt_short: false,
                delay_dequeue: false,
                delay_zero: false,
                wakeup_preemption: true,
                // On in 6.6 too, but its class keeps the 2.6.2x wakeup path (no SIS_UTIL).
                sis_util: false,
            },
            fair_server: None,
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
            llc_shared: Default::default(),
            dst_domains: Default::default(),
            era: EevdfEra::V6_18,
            features: Features::V6_18,
            fair_server: Some(DlServerParams::FAIR_DEFAULT),
        }
    }

    /// 6.18 with the fair server's parameters as `eevdf:era=6.18,...` gave them
    /// ([`FairServerOpts`]).
    pub fn v6_18_with(ncpus: usize, opts: FairServerOpts) -> Eevdf {
        Eevdf {
            fair_server: opts.params(),
            ..Eevdf::v6_18(ncpus)
        }
    }

    pub(super) fn is_618(&self) -> bool {
        self.era == EevdfEra::V6_18
    }
}

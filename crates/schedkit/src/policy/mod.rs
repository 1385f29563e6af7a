//! The policies, one module per historical design, each behind [`crate::class::SchedClass`].

pub mod goodness;
pub mod list;
pub mod o1;
pub mod prio_array;
pub mod rt;

use crate::machine::Machine;
use crate::metrics::RunResult;
use crate::sim::{self, SimConfig, SimError};
use crate::workload::Workload;
use rt::RtBalance;

/// The policies schedkit ships, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    Goodness,
    O1,
}

/// (name, one-line description) of every policy.
pub const POLICIES: &[(&str, &str)] = &[
    (
        "goodness",
        "Linux 2.4: one global runqueue and lock, O(n) goodness() loop, epoch recalculation over all tasks",
    ),
    (
        "o1",
        "Ingo Molnar's O(1) (2002; 2.6 code where the announcement is silent): per-CPU active/expired priority arrays, bitmap pick, sleep_avg estimator, balancer",
    ),
];

impl PolicyKind {
    pub fn parse(name: &str) -> Result<PolicyKind, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "goodness" | "2.4" | "linux-2.4" => Ok(PolicyKind::Goodness),
            "o1" | "o(1)" => Ok(PolicyKind::O1),
            other => Err(format!(
                "unknown policy '{other}' (known: {})",
                POLICIES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Goodness => "goodness",
            PolicyKind::O1 => "o1",
        }
    }

    /// Simulates `workload` on `machine` under this policy (RT balancing passive).
    pub fn simulate(
        self,
        machine: &Machine,
        workload: &Workload,
        config: SimConfig,
    ) -> Result<RunResult, SimError> {
        self.simulate_with(RtBalance::Passive, machine, workload, config)
    }

    /// Simulates with a chosen RT balancing mode. The mode applies to per-CPU designs; the 2.4
    /// scheduler's single global queue has nothing to balance and ignores it.
    pub fn simulate_with(
        self,
        rt_balance: RtBalance,
        machine: &Machine,
        workload: &Workload,
        config: SimConfig,
    ) -> Result<RunResult, SimError> {
        match self {
            PolicyKind::Goodness => sim::simulate(goodness::Goodness, machine, workload, config),
            PolicyKind::O1 => {
                let mut r =
                    sim::simulate(o1::O1::new(machine, rt_balance), machine, workload, config)?;
                r.rt_balance = Some(rt_balance.name().to_string());
                Ok(r)
            }
        }
    }
}

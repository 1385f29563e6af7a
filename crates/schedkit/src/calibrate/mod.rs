//! `schedkit calibrate`: measures the Linux x86-64 machine it runs on with short
//! microbenchmarks and writes a machine profile (the TOML of `profiles/*.toml`) in which every
//! value carries a comment saying how it was measured, or that it is an estimate or a value
//! copied from `profiles/host.toml`, and why.
//!
//! What is measured, and how each figure becomes a profile field:
//! - **topology** and cache sizes from `/sys/devices/system/cpu` (and `/sys/devices/system/node`);
//! - **clock**: the cpufreq P-states where the kernel exposes them (as the `host` profile reads
//!   them), else the clock a chain of dependent adds runs at; **HZ** from `CONFIG_HZ` in
//!   `/proc/config.gz` or `/boot/config-*`, else from how fast `jiffies` advances;
//! - **costs** of a null system call, an uncontended locked add, a pointer chase within the
//!   last-level cache and far beyond it, streaming reads, and the timer interrupt (the gaps a
//!   busy loop sees at the tick's phase);
//! - **pipes** in one process (write, read) and between two processes pinned to one CPU (the
//!   round trip, whose remainder is two context switches); between two CPUs, kept busy by
//!   SCHED_IDLE spinners and left idle (the IPI and the idle exit);
//! - **processes**: fork + exit + wait, the parent's `fork()` call alone (which splits the
//!   first between fork and exit), wait on a zombie, fork + exec, `sh -c`; copy-on-write
//!   faults; AF_UNIX socket sends and receives.
//!
//! The splits of round trips into profile fields follow the derivations in
//! `profiles/host.toml` (see [`derive()`]). Each timed figure is the median of several runs.

//!
//! The files: `parse` (what `/sys` and `/proc` say), `sysfs` (topology, caches, cpufreq),
//! `derive` (timings to profile fields), `render` (the TOML with its comments): pure
//! functions, unit-tested with hand-made inputs; `measure` (the raw microbenchmarks) with `memory` (the
//! chase and stream buffers) and `run`
//! (what is measured in which order), Linux x86-64 only.
//!
//! Must never depend on a policy, `sched_core` or a host: it measures the machine, not a
//! scheduler.

mod derive;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod measure;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod memory;
mod parse;
mod render;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod run;
mod sysfs;
#[cfg(test)]
mod tests;

pub use derive::*;
pub use parse::*;
pub use render::*;
pub use sysfs::*;

use crate::machine::{Machine, MachineProfile, BUILTIN_PROFILES};
use std::fmt::Write as _;

/// What `calibrate` is asked for.
#[derive(Clone, Debug)]
pub struct Options {
    /// The profile's `name`.
    pub name: String,
    /// About one second of measurement instead of about ten: fewer, shorter runs.
    pub quick: bool,
    /// Leave tracefs alone: the part of a timer interrupt after its wakeup, which only a
    /// trace shows, is then copied from `host`.
    pub no_trace: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("schedkit calibrate measures a Linux x86-64 machine; this build is for {0}")]
    Unsupported(String),
    #[error("--name: {0}")]
    BadName(String),
    /// The profile written does not load: a bug in calibrate, reported with the text.
    #[error("the calibrated profile does not validate ({0}); this is a bug in schedkit calibrate. The profile:\n{1}")]
    Invalid(String, String),
}

/// A calibrated machine: the profile's text (with its comments) and the machine it loads as.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub toml: String,
    pub machine: Machine,
}

/// Measures this machine and returns its profile. `progress` gets a line per step.
pub fn calibrate(
    opts: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Calibration, CalibrateError> {
    check_name(&opts.name)?;
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let text = run::calibrate(opts, progress);
        match Machine::from_toml(&text, "calibrated profile") {
            Ok(machine) => Ok(Calibration {
                toml: text,
                machine,
            }),
            Err(e) => Err(CalibrateError::Invalid(e.to_string(), text)),
        }
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = progress;
        Err(CalibrateError::Unsupported(format!(
            "{}/{}",
            std::env::consts::OS,
            std::env::consts::ARCH
        )))
    }
}

fn check_name(name: &str) -> Result<(), CalibrateError> {
    if name.trim().is_empty() {
        return Err(CalibrateError::BadName("give a non-empty name".into()));
    }
    if name.chars().any(|c| c.is_control()) {
        return Err(CalibrateError::BadName(
            "control characters (newlines, tabs) are not allowed".into(),
        ));
    }
    Ok(())
}

/// The `host` profile's own values, the fallback of every figure not measured.
pub fn host_profile() -> MachineProfile {
    let text = BUILTIN_PROFILES
        .iter()
        .find(|(n, _)| *n == "host")
        .map(|(_, t)| *t)
        .unwrap_or_default();
    match Machine::from_toml(text, "host") {
        Ok(m) => m.profile,
        // The shipped profiles load (machine/tests.rs tests it).
        Err(e) => panic!("the shipped host profile does not load: {e}"),
    }
}

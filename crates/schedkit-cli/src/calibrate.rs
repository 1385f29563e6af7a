//! `schedkit calibrate`: measure this machine and write its profile (the library's
//! `calibrate` does the work).

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct CalibrateArgs {
    /// Write the profile to FILE (default: standard output). Load it with `--machine FILE`.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The profile's name (what results and reports call the machine).
    #[arg(long, default_value = "calibrated")]
    pub name: String,
    /// About 1 s of measurement instead of about 10 s: fewer, shorter runs, rougher figures.
    #[arg(long)]
    pub quick: bool,
    /// No progress lines on standard error.
    #[arg(long)]
    pub quiet: bool,
    /// Leave tracefs alone. Otherwise, where this user may write /sys/kernel/tracing and
    /// nothing is being traced (`tracing_on` 0), calibrate traces sched_waking and
    /// sched_switch for a moment to time the part of a timer interrupt after its wakeup, and
    /// puts the settings back; without it that value is copied from `host`.
    #[arg(long)]
    pub no_trace: bool,
}

pub fn run(a: CalibrateArgs) -> Result<()> {
    if let Some(p) = &a.output {
        crate::check_creatable(p, "-o")?;
    }
    let opts = schedkit::calibrate::Options {
        name: a.name.clone(),
        quick: a.quick,
        no_trace: a.no_trace,
    };
    let quiet = a.quiet;
    let cal = schedkit::calibrate::calibrate(&opts, &mut |line| {
        if !quiet {
            eprintln!("calibrate: {line}");
        }
    })?;
    match &a.output {
        Some(p) => {
            crate::write_out(p, cal.toml.as_bytes(), "-o")?;
            if !quiet {
                eprintln!(
                    "calibrate: wrote {} (machine '{}'); use it with --machine {0}, e.g. `schedkit validate --machine {0}`",
                    p.display(),
                    cal.machine.name()
                );
            }
        }
        None => crate::out(&cal.toml),
    }
    Ok(())
}

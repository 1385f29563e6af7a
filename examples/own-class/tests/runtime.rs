//! The classes on the runtime: real worker threads scheduled by the same hooks (Linux x86-64).
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use schedkit::registry::PolicyKind;
use schedkit::runtime::{yield_now, Runtime, TaskSpec};
use schedkit_own_class::{FIFO, LOTTERY};

#[test]
fn tasks_run_to_completion_under_each_class() {
    for policy in [&FIFO, &LOTTERY] {
        let rt = Runtime::builder()
            .policy(PolicyKind::External(policy))
            .cpus(2)
            .build()
            .unwrap_or_else(|e| panic!("{}: {e}", policy.name));
        assert_eq!(rt.policy(), PolicyKind::External(policy));
        let handles: Vec<_> = (0..6u64)
            .map(|i| {
                rt.spawn(TaskSpec::new().nice(i as i32 - 3), move || {
                    let mut sum = 0u64;
                    for k in 0..1000u64 {
                        sum += k * i;
                        if k % 100 == 0 {
                            yield_now();
                        }
                    }
                    sum
                })
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().unwrap(), 499_500 * i as u64, "{}", policy.name);
        }
    }
}

//! Shared by the fuzz tests: a failing case leaves its input in a file that the failure
//! message names, so that a failure found in a long pass can be reproduced and kept.

use proptest::strategy::Strategy;
use proptest::test_runner::{TestCaseError, TestRunner};
use std::cell::RefCell;
use std::fmt::Debug;
use std::path::PathBuf;

thread_local! {
    /// The input of the case running now, as the property built it.
    static CURRENT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The input of the last case that failed (after shrinking: the smallest).
    static FAILED: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Says what the case running now feeds the code under test.
pub fn input(bytes: &[u8]) {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        c.clear();
        c.extend_from_slice(bytes);
    });
}

fn mark_failed() {
    let v = CURRENT.with(|c| c.borrow().clone());
    FAILED.with(|f| *f.borrow_mut() = Some(v));
}

/// `runner.run(strategy, body)`, and on failure writes the failing case's input (as given to
/// [`input`]) to `CARGO_TARGET_TMPDIR/fuzz-failures/NAME.EXT` and names that file in the
/// panic. Proptest's shrinking runs failing cases again, smaller each time: the file holds
/// the last, smallest one.
pub fn run<S>(
    runner: &mut TestRunner,
    name: &str,
    ext: &str,
    strategy: &S,
    body: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S: Strategy,
    S::Value: Debug,
{
    let r = runner.run(strategy, |v| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(v))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                mark_failed();
                Err(e)
            }
            Err(p) => {
                mark_failed();
                std::panic::resume_unwind(p)
            }
        }
    });
    if let Err(e) = r {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz-failures");
        let path = dir.join(format!("{name}.{ext}"));
        let kept = FAILED
            .with(|f| f.borrow_mut().take())
            .map(|bytes| std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, bytes)));
        match kept {
            Some(Ok(())) => panic!("{e}\nthe failing input is kept in {}", path.display()),
            Some(Err(w)) => panic!("{e}\n(the failing input could not be kept: {w})"),
            None => panic!("{e}"),
        }
    }
}

//! Input files read with a size cap: a file a user names (a workload, a profile, a trace, a
//! grid, a result) is read up to its kind's limit and refused past it, so that `/dev/zero`
//! or a wrong path to a disk image is an error at once, not gigabytes of memory first.

use std::io::Read;
use std::path::Path;

/// Workload files, rt-app JSON, machine profiles, sweep grids, suite descriptions.
pub const MAX_TEXT_INPUT: u64 = 256 << 20;
/// Result files for `report`.
pub const MAX_RESULT_INPUT: u64 = 1 << 30;
/// Traces (text or trace.dat, compressed or not).
pub const MAX_TRACE_INPUT: u64 = 2 << 30;

/// The bytes of `path`, at most `cap` of them: a longer file is an error that names the
/// limit (`what` says what the file is, for the message).
pub fn read(path: &Path, cap: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    f.take(cap.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(std::io::Error::other(format!(
            "larger than the {} a {what} may be",
            size(cap)
        )));
    }
    Ok(out)
}

/// As [`read`], as UTF-8 text; a byte-order mark at its start (which some editors write) is
/// left out.
pub fn read_to_string(path: &Path, cap: u64, what: &str) -> std::io::Result<String> {
    let text = String::from_utf8(read(path, cap, what)?).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

fn size(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{} GiB", b >> 30)
    } else {
        format!("{} MiB", b >> 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_at_its_cap() {
        let e = read(Path::new("/dev/zero"), 1 << 20, "workload file").unwrap_err();
        assert!(
            e.to_string()
                .contains("larger than the 1 MiB a workload file may be"),
            "{e}"
        );
        let e = read_to_string(Path::new("/dev/zero"), 16, "profile").unwrap_err();
        assert!(e.to_string().contains("profile"), "{e}");
    }

    #[test]
    fn a_byte_order_mark_is_left_out() {
        let p = std::env::temp_dir().join(format!("schedkit-bom-{}.json", std::process::id()));
        std::fs::write(&p, "\u{feff}{\"tasks\": {}}").unwrap();
        assert_eq!(read_to_string(&p, 1 << 20, "x").unwrap(), "{\"tasks\": {}}");
        let e = {
            std::fs::write(&p, [0x7b, 0xff, 0x7d]).unwrap();
            read_to_string(&p, 1 << 20, "x").unwrap_err()
        };
        assert!(e.to_string().contains("not UTF-8 text (byte 1)"), "{e}");
        std::fs::remove_file(&p).unwrap();
    }
}

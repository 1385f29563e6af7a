//! Output files written whole or not at all: each is written to a temporary file beside it
//! and renamed over it once complete, so that a write error, a full disk or a kill leaves the
//! previous file (or none), never a truncated one. A path that exists and is not a regular
//! file (a pipe, `/dev/stdout`) is written in place: it cannot be replaced.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The temporary name beside `path`: hidden, with this process's id.
fn temp_beside(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other(format!("{} names no file", path.display())))?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok(dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Writes `path` through `f`, which writes the whole content into the file it is given.
pub fn write_with<F>(path: &Path, f: F) -> io::Result<()>
where
    F: FnOnce(&mut std::fs::File) -> io::Result<()>,
{
    if path.is_dir() {
        return Err(io::Error::other(format!(
            "{} is a directory",
            path.display()
        )));
    }
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() {
            let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
            return f(&mut file);
        }
    }
    let tmp = temp_beside(path)?;
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        f(&mut file)?;
        file.flush()?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `bytes` to `path`, whole or not at all.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with(path, |f| f.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("schedkit-outfile-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = dir();
        let p = d.join("results.json");
        std::fs::write(&p, "old results").unwrap();
        let e = write_with(&p, |f| {
            f.write_all(b"half of the new")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("disk full"));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old results");
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
        assert_eq!(left.len(), 1, "the temporary file is removed");
        write(&p, b"new results").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new results");
        // A directory is refused, with its name.
        assert!(write(&d, b"x")
            .unwrap_err()
            .to_string()
            .contains("is a directory"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_device_is_written_in_place() {
        write(Path::new("/dev/null"), b"nothing").unwrap();
        assert!(Path::new("/dev/null").exists());
    }
}

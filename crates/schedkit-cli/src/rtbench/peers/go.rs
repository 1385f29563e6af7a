//! Go's goroutines (GMP scheduler, async preemption every 10 ms since Go 1.14), when a Go
//! toolchain is on the PATH: `peer.go` is built once per run into a temporary directory. On a
//! machine without Go (a lent benchmark machine), `SCHEDKIT_GO_PEER=PATH` names a peer built
//! elsewhere from the same source: `GO111MODULE=off go build -o peer
//! crates/schedkit-cli/src/rtbench/peer.go`.

use super::super::{row, Opts, Row};
use std::path::PathBuf;
use std::process::Command;

pub struct Peer {
    bin: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

const SOURCE: &str = include_str!("../peer.go");

impl Peer {
    /// Builds the peer; None (with a note on stderr) when Go is missing or the build fails.
    pub fn build() -> Option<Peer> {
        if let Some(path) = std::env::var_os("SCHEDKIT_GO_PEER") {
            let bin = PathBuf::from(path);
            if bin.is_file() {
                return Some(Peer { bin, _dir: None });
            }
            eprintln!(
                "note: SCHEDKIT_GO_PEER={} is not a file; the go runner is skipped",
                bin.display()
            );
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let src = dir.path().join("peer.go");
        std::fs::write(&src, SOURCE).ok()?;
        let bin = dir.path().join("peer");
        let status = Command::new("go")
            .args(["build", "-o"])
            .arg(&bin)
            .arg(&src)
            .env("GO111MODULE", "off")
            .output();
        match status {
            Ok(o) if o.status.success() => Some(Peer {
                bin,
                _dir: Some(dir),
            }),
            Ok(o) => {
                eprintln!(
                    "note: Go peer not built: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(_) => {
                eprintln!("note: no Go toolchain on the PATH; the go runner is skipped");
                None
            }
        }
    }

    /// The server workload: Go's net/http in a child process, driven by the same load
    /// generator as the other runners.
    pub fn server(&self, o: &Opts) -> Vec<Row> {
        use std::io::BufRead;
        use std::process::Stdio;
        let child = Command::new(&self.bin)
            .args([
                "server",
                &o.cpus.to_string(),
                &o.duration.as_millis().to_string(),
                &super::super::server::HEAVY_MS.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let Ok(mut child) = child else {
            return Vec::new();
        };
        let mut line = String::new();
        let port = child.stdout.take().and_then(|out| {
            std::io::BufReader::new(out).read_line(&mut line).ok()?;
            let v: serde_json::Value = serde_json::from_str(&line).ok()?;
            v.get("port")?.as_u64()
        });
        let rows = match port {
            Some(port) => super::super::server::measure(
                ([127, 0, 0, 1], port as u16).into(),
                "go",
                "net/http",
                o,
            ),
            None => {
                eprintln!("note: the Go server did not say its port ({line:?})");
                Vec::new()
            }
        };
        // Closing its standard input ends the server.
        drop(child.stdin.take());
        let _ = child.wait();
        rows
    }

    pub fn run(&self, w: &str, o: &Opts) -> Vec<Row> {
        if w == "lock" {
            return Vec::new(); // the lock comparison is between OS-thread mutexes and ours
        }
        let out = Command::new(&self.bin)
            .args([w, &o.cpus.to_string(), &o.duration.as_millis().to_string()])
            .output();
        let Ok(out) = out else { return Vec::new() };
        let v: serde_json::Value = match serde_json::from_slice(&out.stdout) {
            Ok(v) => v,
            Err(_) => {
                eprintln!("note: Go peer gave no result for {w}");
                return Vec::new();
            }
        };
        let f = |k: &str| v.get(k).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
        match w {
            "yield" => vec![row(w, "go", "-", f("value"), "yields/s/core", true)],
            "pingpong" => vec![row(w, "go", "-", f("value"), "ns/round trip", false)],
            "chat" => vec![row(w, "go", "-", f("value"), "msgs/s", true)],
            "spawn" => vec![row(w, "go", "-", f("value"), "ns/spawn+join", false)],
            "wakeup" => ["p50", "p99", "max"]
                .iter()
                .map(|q| {
                    row(
                        &format!("wakeup-nice0/{q}"),
                        "go",
                        "-",
                        f(q) / 1e3,
                        "µs late",
                        false,
                    )
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

//! A small HTTP/1.1 server on the schedkit runtime, where priorities do what they say:
//!
//! - `GET /` and `GET /hello` answer at once, from a task at nice 0 per connection;
//! - `GET /work?ms=N` computes for N ms of wall time (at most 1 000) at nice 19: the connection's task
//!   lowers itself for the computation and comes back to nice 0 afterwards, so short requests
//!   on other connections go first while it runs;
//! - `--batch N` adds N background jobs at SCHED_IDLE (or `--batch-policy batch|nice19`) that
//!   use every spare cycle and never delay a request;
//! - `GET /stats` shows the runtime's counters.
//!
//! Every socket operation parks the task, not its worker (`schedkit::runtime::io`).
//!
//! ```sh
//! cargo run --release -p schedkit --example http_server -- --port 8080 --batch 2
//! curl localhost:8080/hello; curl 'localhost:8080/work?ms=200'
//! ```

use schedkit::runtime::io::TcpListener;
use schedkit::runtime::{self as rt, Policy, Runtime, TaskSpec};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    port: u16,
    policy: Policy,
    cpus: usize,
    batch: usize,
    batch_policy: String,
}

const HELP: &str = "\
http_server: an HTTP/1.1 server on the schedkit runtime
  --port N            port on 127.0.0.1 (default 8080; 0 picks a free one)
  --policy NAME       scheduling policy (default eevdf:era=6.18; see `schedkit policies`)
  --cpus N            worker threads (default: this machine's CPUs)
  --batch N           background jobs that use spare CPU (default 0)
  --batch-policy P    idle (SCHED_IDLE, default), batch (SCHED_BATCH at nice 19) or nice19
Requests: GET /hello, GET /work?ms=N (N ms of CPU at nice 19), GET /stats";

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        port: 8080,
        policy: Policy::parse("eevdf:era=6.18")?,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        batch: 0,
        batch_policy: "idle".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            println!("{HELP}");
            std::process::exit(0);
        }
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| {
            v.parse::<usize>()
                .map_err(|_| format!("{flag}: '{v}' is not a number"))
        };
        match flag.as_str() {
            "--port" => {
                a.port = num(&v)?
                    .try_into()
                    .map_err(|_| format!("--port: {v} is not a port"))?
            }
            "--policy" => a.policy = Policy::parse(&v).map_err(|e| format!("--policy: {e}"))?,
            "--cpus" => a.cpus = num(&v)?,
            "--batch" => a.batch = num(&v)?,
            "--batch-policy" => match v.as_str() {
                "idle" | "batch" | "nice19" => a.batch_policy = v,
                _ => return Err(format!("--batch-policy: '{v}' (idle, batch or nice19)")),
            },
            _ => return Err(format!("unknown option {flag}\n{HELP}")),
        }
    }
    Ok(a)
}

/// Busy work until `ms` of wall time have passed.
fn compute(ms: u64) -> u64 {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < Duration::from_millis(ms) {
        for i in 0..10_000u64 {
            x = (x ^ i).wrapping_mul(0xff51_afd7_ed55_8ccd).rotate_left(17);
        }
    }
    std::hint::black_box(x)
}

fn respond(s: &mut impl Write, status: &str, body: &str) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// One connection: requests in order until the peer closes (keep-alive).
fn serve(mut s: rt::io::TcpStream, stats: Arc<Stats>) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            buf.drain(..end + 4);
            let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let ok = handle(&mut s, &target, &stats).is_ok();
            stats.requests.fetch_add(1, Relaxed);
            if !ok {
                return;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) if buf.len() + n > 64 * 1024 => {
                let _ = respond(&mut s, "431 Request Header Fields Too Large", "too long\n");
                return;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn handle(s: &mut rt::io::TcpStream, target: &str, stats: &Stats) -> std::io::Result<()> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match path {
        "/" | "/hello" => respond(s, "200 OK", "hello\n"),
        "/work" => {
            let ms = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("ms="))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(100)
                .min(1_000);
            // Long work at nice 19, then back: raising one's priority again is allowed here
            // (the runtime is this process's own scheduler).
            let _ = rt::set_nice(19);
            let t = Instant::now();
            compute(ms);
            let _ = rt::set_nice(0);
            stats.work_ms.fetch_add(ms, Relaxed);
            respond(
                s,
                "200 OK",
                &format!("computed {ms} ms in {:?}\n", t.elapsed()),
            )
        }
        "/stats" => respond(
            s,
            "200 OK",
            &format!(
                "requests {}\nwork_ms {}\nbatch_loops {}\n",
                stats.requests.load(Relaxed),
                stats.work_ms.load(Relaxed),
                stats.batch_loops.load(Relaxed)
            ),
        ),
        _ => respond(s, "404 Not Found", "not found\n"),
    }
}

#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    work_ms: AtomicU64,
    batch_loops: AtomicU64,
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    // SCHED_IDLE exists under the fair classes only: say so before starting anything.
    let fair = ["cfs", "eevdf"]
        .iter()
        .any(|c| args.policy.name().starts_with(c));
    if args.batch > 0 && args.batch_policy == "idle" && !fair {
        eprintln!(
            "error: {} has no SCHED_IDLE; use --batch-policy batch or nice19",
            args.policy.name()
        );
        std::process::exit(2);
    }
    let runtime = match Runtime::builder()
        .policy(args.policy)
        .cpus(args.cpus)
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: the runtime does not start: {e}");
            std::process::exit(1);
        }
    };
    let listener = match TcpListener::bind(("127.0.0.1", args.port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on 127.0.0.1:{}: {e}", args.port);
            std::process::exit(1);
        }
    };
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    println!(
        "listening on http://{addr}/ ({} on {} workers, preemption {})",
        runtime.policy().name(),
        args.cpus,
        runtime.preemption_summary()
    );
    let stats = Arc::new(Stats::default());
    for i in 0..args.batch {
        let spec = match args.batch_policy.as_str() {
            "idle" => TaskSpec::new().idle(),
            "batch" => TaskSpec::new().batch().nice(19),
            _ => TaskSpec::new().nice(19),
        };
        let spec = spec.name(format!("batch {i}"));
        let stats = stats.clone();
        runtime.spawn(spec, move || loop {
            compute(10);
            stats.batch_loops.fetch_add(1, Relaxed);
        });
    }
    let st = stats.clone();
    let acceptor = runtime.spawn(TaskSpec::new().name("acceptor"), move || loop {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = s.set_nodelay(true);
                let st = st.clone();
                rt::spawn(TaskSpec::new().name("connection"), move || serve(s, st));
            }
            // Out of descriptors (EMFILE): say so, wait a little, go on.
            Err(e) => {
                eprintln!("accept: {e}");
                rt::sleep(Duration::from_millis(100));
            }
        }
    });
    let _ = acceptor.join();
}

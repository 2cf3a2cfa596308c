//! `codemode-worker`: one process of the pool. Reads frames on stdin, writes frames on stdout,
//! runs one program at a time, each in a fresh V8 isolate prepared while the worker was idle.
//! Nothing else may write to stdout (it carries frames); diagnostics go to stderr.

mod engine;
mod natives;
mod process;
mod run;
#[cfg(test)]
mod tests;

use codemode_protocol::limits::options::DEFAULT_MEMORY_LIMIT_MIB;
use codemode_protocol::{Hops, HostMsg, WorkerMsg, PROTOCOL_VERSION};

use engine::{bench, isolate, platform, snapshot};

#[global_allocator]
static ALLOCATOR: process::last_words::Allocator = process::last_words::Allocator;
use process::{io, jail};
use run::retained;

/// The memory limit of the isolate prepared before any run has asked for one (the pool passes
/// its executor's in `CODEMODE_MEMORY_LIMIT_MIB`): the executor's default.
const DEFAULT_LIMIT_MIB: u32 = {
    assert!(DEFAULT_MEMORY_LIMIT_MIB <= u32::MAX as u64);
    DEFAULT_MEMORY_LIMIT_MIB as u32
};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let selftest = args.first().map(String::as_str) == Some("--jail-selftest");
    if args.first().map(String::as_str) == Some("--version") {
        let engine = platform::engine();
        let sandbox = if engine.sandbox { "on" } else { "off" };
        println!(
            "codemode-worker {} (protocol {PROTOCOL_VERSION}, V8 {}, heap sandbox {sandbox})",
            env!("CARGO_PKG_VERSION"),
            engine.v8
        );
        return;
    }
    if args.first().map(String::as_str) == Some("--write-snapshot") {
        write_snapshot(args.get(1));
    }
    let bench_runs = match args.first().map(String::as_str) {
        Some("--bench-prepare") => Some(args.get(1).and_then(|n| n.parse().ok()).unwrap_or(200)),
        _ => None,
    };
    io::die_with_parent();
    process::last_words::install();
    let parent = std::os::unix::process::parent_id();
    jail::close_inherited_fds();

    let started = std::time::Instant::now();
    // `--bench-prepare` may try V8 flags beyond the shipped ones (bench/ compares them).
    let bench_flags = match bench_runs {
        Some(_) => std::env::var("CODEMODE_BENCH_V8_FLAGS").unwrap_or_default(),
        None => String::new(),
    };
    platform::init_v8_with(&bench_flags);
    let v8_ms = started.elapsed().as_secs_f64() * 1000.0;

    let default_limit = std::env::var("CODEMODE_MEMORY_LIMIT_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_LIMIT_MIB);
    let snapshot_started = std::time::Instant::now();
    let origin = snapshot::init(bench_flags.is_empty());
    if let Some(n) = bench_runs {
        let snapshot_ms = snapshot_started.elapsed().as_secs_f64() * 1000.0;
        let startup = bench::Startup {
            v8_ms,
            snapshot_ms,
            origin,
        };
        let only_snapshot = args.get(2).map(String::as_str) == Some("snapshot");
        bench::prepare(n, only_snapshot, startup);
        return;
    }
    let current = io::CurrentRun::default();
    if !selftest {
        io::spawn_canceller(current.clone());
    }
    // From here on the process can no longer open files, sockets or programs. Every isolate,
    // the first one included, is created inside the jail.
    if let Err(e) = jail::enter() {
        eprintln!("codemode-worker: cannot enter the jail, refusing to run: {e}");
        std::process::exit(71);
    }
    if selftest {
        let code = jail::selftest::selftest(
            parent,
            || isolate::selftest_eval() == "42",
            platform::entropy_drawn,
        );
        std::process::exit(code);
    }
    let mut input = io::Input::new();
    let mut next = Some(isolate::Prepared::new(default_limit));

    io::send(&WorkerMsg::Hello {
        version: PROTOCOL_VERSION,
        pid: std::process::id(),
    });
    io::send(&WorkerMsg::Engine(platform::engine()));

    while let Some(msg) = input.next() {
        match msg {
            HostMsg::Execute(req) => {
                let mut hops = Hops::start(req.hops, |h| &mut h.read);
                // First, before anything of the run: the host now counts the run as started
                // (until here, a lost worker's run goes back to the queue), and a Cancel for it
                // is kept from here on.
                current.expect(req.exec_id);
                io::send(&WorkerMsg::Started {
                    exec_id: req.exec_id,
                });
                let limit = req.memory_limit_mib;
                let prepared = match next.take() {
                    Some(p) if p.memory_limit_mib == limit => p,
                    stale => {
                        // V8 requires isolates to be dropped in reverse order of creation.
                        drop(stale);
                        isolate::Prepared::new(limit)
                    }
                };
                let exec_id = req.exec_id;
                Hops::mark(hops.as_mut(), |h| &mut h.ready);
                let (outcome, ended) =
                    run::run(prepared, req, &mut input, io::send, &current, hops);
                io::send(&WorkerMsg::Done { exec_id, outcome });
                // The answer wakes the host's thread, often onto this CPU, where the scheduler
                // would let this thread run on through the dispose and the next preparation
                // (over a millisecond) before the host's thread gets it: hand the CPU over first.
                io::yield_cpu();
                // Off the critical path: the answer is already on its way. The next isolate
                // gets the limit the last run asked for, the best guess for the next one.
                let spent = match ended {
                    run::Ended::Spent(spent) => spent,
                    run::Ended::Retained(retained) => {
                        retained::serve(retained, &mut input, io::send, &current)
                    }
                };
                drop(spent);
                next = Some(isolate::Prepared::new(limit));
                io::send(&WorkerMsg::Ready);
            }
            // Answers for a run that already ended (it settled or was cancelled): nothing waits.
            // Invoke and CloseHandles for an execution already ended (its isolate is gone) are
            // answered by the host's own records; nothing here waits for them.
            HostMsg::ToolResult { .. }
            | HostMsg::ToolDenied { .. }
            | HostMsg::FetchResult { .. }
            | HostMsg::Cancel { .. }
            | HostMsg::Invoke { .. }
            | HostMsg::CloseHandles { .. } => {}
        }
    }
    // The host closed our stdin: it is gone or closing the pool.
}

/// `--write-snapshot <path>` (scripts/build.sh): writes the runtime snapshot's file for the next
/// build to embed, then exits.
fn write_snapshot(path: Option<&String>) -> ! {
    let Some(path) = path else {
        eprintln!("usage: codemode-worker --write-snapshot <path>");
        std::process::exit(2);
    };
    platform::init_v8();
    match snapshot::write(path) {
        Ok(what) => {
            eprintln!("codemode-worker: runtime snapshot {path}: {what}");
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("codemode-worker: cannot write the runtime snapshot: {e}");
            std::process::exit(1);
        }
    }
}

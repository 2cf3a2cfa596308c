//! The pool core against the real worker binary (built by scripts/build.sh into target/).

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_pool::protocol::{FailureCode, ProviderDecl, RunOutcome};
use codemode_pool::{ExecSpec, Host, Pool, PoolOptions, ToolCall};

fn worker_path() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = root.join("target/release/codemode-worker");
    assert!(
        path.is_file(),
        "{} is missing: build it first (npm run build, or cargo build --release -p codemode-worker)",
        path.display()
    );
    path
}

fn pool(workers: usize, queue_bound: usize) -> Pool {
    Pool::start(PoolOptions {
        workers,
        worker_path: worker_path(),
        queue_bound,
        timeout_ms: 10_000,
        memory_limit_mib: 64,
        handles_idle_timeout_ms: 300_000,
        approval_key: None,
        hops: false,
        tenants: Default::default(),
    })
    .expect("pool starts")
}

/// Answers every tool call from a background thread, like a host's event loop would.
struct Answering {
    pool: Mutex<Option<Pool>>,
    calls: Mutex<Vec<(String, String)>>,
}

impl Answering {
    /// A host that answers through `pool` (`None`: a host whose runs make no calls).
    fn new(pool: Option<Pool>) -> Arc<Answering> {
        Arc::new(Answering {
            pool: Mutex::new(pool),
            calls: Mutex::new(Vec::new()),
        })
    }
}

impl Host for Answering {
    fn fetch(&self, call: codemode_pool::FetchCall) {
        let pool = self.pool.lock().unwrap().clone().unwrap();
        pool.answer_fetch(
            call.exec_id,
            call.call_id,
            Err("no routed outbound in this test".into()),
        );
    }

    fn tool_call(&self, call: ToolCall) {
        self.calls
            .lock()
            .unwrap()
            .push((call.provider.clone(), call.tool.clone()));
        let pool = self.pool.lock().unwrap().clone().unwrap();
        std::thread::spawn(move || {
            // Answer with the arguments array itself (already V8-serialized).
            pool.answer_tool_call(call.exec_id, call.call_id, true, call.args);
        });
    }
}

fn run(pool: &Pool, spec: ExecSpec, host: Arc<dyn Host>) -> Result<RunOutcome, FailureCode> {
    let (tx, rx) = mpsc::channel();
    pool.execute(
        spec,
        host,
        Box::new(move |_, r| {
            let _ = tx.send(r);
        }),
    )
    .map_err(|f| f.code)?;
    rx.recv_timeout(Duration::from_secs(20))
        .expect("completion arrives")
        .map_err(|f| f.code)
}

#[test]
fn runs_programs_and_routes_tool_calls() {
    let pool = pool(1, 8);
    let host = Answering::new(Some(pool.clone()));
    let out = run(
        &pool,
        ExecSpec {
            code: "async () => { const [a, b] = await kv.get(20, 22); console.log('sum'); return a + b }"
                .into(),
            providers: vec![ProviderDecl {
                name: "kv".into(),
                tools: Some(vec!["get".into()]),
            }],
            ..Default::default()
        },
        host.clone(),
    )
    .unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    // V8 wire format: header (0xFF 0x0F), then 'I' (int32, zigzag varint): 42 -> 84.
    assert_eq!(out.result.as_deref(), Some(&[0xFF, 0x0F, b'I', 84][..]));
    assert_eq!(out.logs.len(), 1);
    assert_eq!(
        host.calls.lock().unwrap().as_slice(),
        &[("kv".into(), "get".into())]
    );
    pool.shutdown(Duration::from_secs(2));
    assert!(pool.worker_pids().is_empty());
}

#[test]
fn refuses_at_once_when_the_queue_is_full_and_after_close() {
    let pool = pool(1, 0);
    let host: Arc<dyn Host> = Answering::new(None);
    // Wait until the single worker is ready, so the first run is dispatched, not queued.
    assert!(run(
        &pool,
        ExecSpec {
            code: "() => 1".into(),
            ..Default::default()
        },
        host.clone()
    )
    .is_ok());
    let (tx, rx) = mpsc::channel();
    pool.execute(
        ExecSpec {
            code: "async () => { for (;;) {} }".into(),
            timeout_ms: Some(300),
            ..Default::default()
        },
        host.clone(),
        Box::new(move |_, r| {
            let _ = tx.send(r);
        }),
    )
    .unwrap();
    let full = run(
        &pool,
        ExecSpec {
            code: "() => 1".into(),
            ..Default::default()
        },
        host.clone(),
    );
    assert_eq!(full.err(), Some(FailureCode::QueueFull));
    let timed_out = rx.recv_timeout(Duration::from_secs(10)).unwrap().unwrap();
    assert_eq!(timed_out.error.unwrap().code, "TIMEOUT");
    pool.close();
    let closed = run(
        &pool,
        ExecSpec {
            code: "() => 1".into(),
            ..Default::default()
        },
        host,
    );
    assert_eq!(closed.err(), Some(FailureCode::Closed));
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_missing_binary_is_a_clear_fault() {
    let err = Pool::start(PoolOptions {
        workers: 1,
        worker_path: PathBuf::from("/nonexistent/codemode-worker"),
        queue_bound: 1,
        timeout_ms: 1000,
        memory_limit_mib: 64,
        handles_idle_timeout_ms: 300_000,
        approval_key: None,
        hops: false,
        tenants: Default::default(),
    })
    .err()
    .unwrap();
    assert_eq!(err.code, FailureCode::WorkerNotFound);
    assert!(err.message.contains("/nonexistent/codemode-worker"));
}

/// Under the worker's memory ceiling (RLIMIT_DATA, 256 MiB + 3 x the run's limit), a run that fills
/// its memory limit, with objects or with buffers, still ends with MEMORY_LIMIT: the ceiling
/// stops native growth outside V8, never V8's own.
#[test]
fn runs_that_fill_their_memory_limit_end_with_memory_limit_under_the_ceiling() {
    let pool = pool(1, 4);
    let host: Arc<dyn Host> = Answering::new(None);
    for mib in [64, 256] {
        for code in [
            "async () => { const a = []; for (;;) a.push(new Array(1000).fill(Math.random())) }",
            "async () => { const a = []; for (;;) a.push(new Uint8Array(1 << 20)) }",
        ] {
            let spec = ExecSpec {
                code: code.into(),
                memory_limit_mib: Some(mib),
                ..Default::default()
            };
            let out = run(&pool, spec, host.clone()).unwrap();
            let code = out.error.map(|e| e.code);
            assert_eq!(code.as_deref(), Some("MEMORY_LIMIT"), "{mib} MiB");
        }
        let pid = pool.worker_pids()[0];
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max data size"))
            .unwrap();
        let ceiling = ((256 + 3 * u64::from(mib)) * 1024 * 1024).to_string();
        assert!(line.contains(&ceiling), "{line}");
        // The stack, which RLIMIT_DATA does not count, has a ceiling of its own: at most 8 MiB.
        let stack = limits
            .lines()
            .find(|l| l.starts_with("Max stack size"))
            .unwrap();
        // "Max stack size <soft> <hard> bytes": the hard limit too, so the worker cannot raise it.
        let fields: Vec<&str> = stack.split_whitespace().collect();
        for field in &fields[3..5] {
            let bytes: u64 = field.parse().unwrap_or(u64::MAX);
            assert!(bytes <= 8 * 1024 * 1024, "{stack}");
        }
    }
    pool.shutdown(Duration::from_secs(2));
}

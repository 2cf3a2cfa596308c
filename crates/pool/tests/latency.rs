//! Latency of the pool against the real worker, for before/after comparisons of the
//! pool's reading, dispatch and scheduling: `cargo test --release -p codemode-pool --test latency -- --ignored --nocapture`.
//! Ignored by default: it measures, it does not check.

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_pool::protocol::ProviderDecl;
use codemode_pool::{ExecSpec, FetchCall, Host, Pool, PoolOptions, ToolCall};

struct Echo(Mutex<Option<Pool>>);

impl Host for Echo {
    fn tool_call(&self, call: ToolCall) {
        let pool = self.0.lock().unwrap().clone().unwrap();
        // The arguments array, serialized, answers as is: an array is a value.
        pool.answer_tool_call(call.exec_id, call.call_id, true, call.args);
    }
    fn fetch(&self, _: FetchCall) {}
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
#[ignore]
fn execute_and_tool_call_latency() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let pool = Pool::start(PoolOptions {
        workers: 1,
        worker_path: root.join("target/release/codemode-worker"),
        queue_bound: 4,
        timeout_ms: 10_000,
        memory_limit_mib: 64,
        handles_idle_timeout_ms: 300_000,
        approval_key: None,
        hops: false,
        tenants: Default::default(),
    })
    .unwrap();
    let host = Arc::new(Echo(Mutex::new(Some(pool.clone()))));
    let run = |code: &str| {
        let (tx, rx) = mpsc::channel();
        let spec = ExecSpec {
            code: code.into(),
            providers: vec![ProviderDecl {
                name: "t".into(),
                tools: Some(vec!["echo".into()]),
            }],
            ..Default::default()
        };
        let started = Instant::now();
        pool.execute(
            spec,
            host.clone(),
            Box::new(move |_, r| tx.send(r).unwrap()),
        )
        .unwrap();
        let out = rx.recv().unwrap().unwrap();
        assert!(out.error.is_none(), "{:?}", out.error);
        started.elapsed()
    };
    for _ in 0..50 {
        run("async () => 1");
    }
    let execute: Vec<Duration> = (0..400).map(|_| run("async () => 1")).collect();
    const CALLS: u32 = 200;
    let code =
        format!("async () => {{ for (let i = 0; i < {CALLS}; i++) await t.echo(i); return 1 }}");
    let with_calls: Vec<Duration> = (0..40).map(|_| run(&code)).collect();
    let execute = p50(execute);
    let round_trip = p50(with_calls).saturating_sub(execute) / CALLS;
    println!("execute p50 {execute:?}; tool call round trip (p50 run with {CALLS} calls, less an empty run, per call) {round_trip:?}");
    pool.shutdown(Duration::from_secs(2));
}

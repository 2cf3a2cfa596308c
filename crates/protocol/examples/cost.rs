//! Encode + decode cost of the hot-path frames, in ns per operation (best of five rounds; a
//! measurement to read, not a test): `cargo run --release -p codemode-protocol --example cost`.

use std::hint::black_box;
use std::time::Instant;

use codemode_protocol::{ExecuteRequest, HostMsg, Outbound, ProviderDecl, WorkerMsg};

fn time(name: &str, iters: u32, mut f: impl FnMut()) {
    for _ in 0..iters / 10 {
        f();
    }
    // The best of five rounds: the machine is shared, and noise only ever adds time.
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        best = best.min(start.elapsed().as_nanos() as f64 / f64::from(iters));
    }
    println!("{name:<40} {best:>9.0} ns/op");
}

fn main() {
    let execute = HostMsg::Execute(ExecuteRequest {
        exec_id: 123_456,
        code: "async () => { const rows = await store.list({ limit: 50 }); return rows.map(r => r.id) }"
            .repeat(4),
        modules: vec![(
            "./helpers.js".into(),
            "export const sum = (xs) => xs.reduce((a, b) => a + b, 0)\n".repeat(8),
        )],
        providers: vec![
            ProviderDecl {
                name: "store".into(),
                tools: Some(vec!["list".into(), "get".into(), "put".into()]),
            },
            ProviderDecl {
                name: "web".into(),
                tools: None,
            },
        ],
        memory_limit_mib: 128,
        outbound: Outbound::Routed,
        retain_handles: false,
        live_logs: false,
        budgets: Default::default(),
        replayable: None,
        hops: false,
    });
    let call = WorkerMsg::ToolCall {
        exec_id: 123_456,
        call_id: 7,
        provider: "store".into(),
        tool: "list".into(),
        args: vec![0x5a; 64],
    };
    let answer = HostMsg::ToolResult {
        exec_id: 123_456,
        call_id: 7,
        ok: true,
        payload: vec![0x5a; 1024],
    };
    let big_answer = HostMsg::ToolResult {
        exec_id: 123_456,
        call_id: 8,
        ok: true,
        payload: vec![0x5a; 1024 * 1024],
    };
    let n = 200_000;
    time("Execute encode+decode (~800 B)", n, || {
        let f = black_box(&execute).encode().unwrap();
        black_box(HostMsg::decode(&f[4..]).ok());
    });
    time("ToolCall encode+decode (64 B args)", n, || {
        let f = black_box(&call).encode().unwrap();
        black_box(WorkerMsg::decode(&f[4..]).ok());
    });
    time("ToolResult encode+decode (1 KiB)", n, || {
        let f = black_box(&answer).encode().unwrap();
        black_box(HostMsg::decode(&f[4..]).ok());
    });
    time("ToolResult encode+decode (1 MiB)", 500, || {
        let f = black_box(&big_answer).encode().unwrap();
        black_box(HostMsg::decode(&f[4..]).ok());
    });
}

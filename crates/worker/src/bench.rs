//! `codemode-worker --bench-prepare N`: how long preparing an isolate takes, split into its
//! steps, for bench/ (the number that decides whether a startup snapshot pays off), and what this
//! process spent starting (V8's initialization, building the runtime snapshot): the part of a
//! replacement worker's start that is ours. Prints one JSON object; runs no untrusted code.

use std::time::Instant;

use crate::isolate::Prepared;
use crate::snapshot::Origin;

/// What the process spent before its first isolate, in milliseconds.
pub struct Startup {
    pub v8_ms: f64,
    /// Loading the embedded snapshot, or building it when there is none.
    pub snapshot_ms: f64,
    pub origin: Origin,
}

pub fn prepare(n: usize, startup: Startup) {
    let n = n.max(1);
    let mut bare = Vec::with_capacity(n);
    let mut full = Vec::with_capacity(n);
    let mut bootstrap = Vec::with_capacity(n);
    let mut dispose = Vec::with_capacity(n);
    for _ in 0..n {
        // Isolate and context only: the cost before any runtime is installed.
        let t = Instant::now();
        {
            let mut isolate =
                v8::Isolate::new(v8::CreateParams::default().heap_limits(0, 128 << 20));
            let scope = &mut v8::HandleScope::new(&mut isolate);
            let _context = v8::Context::new(scope, Default::default());
        }
        bare.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        drop(Prepared::build(128, None));
        bootstrap.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let p = Prepared::new(128);
        full.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        drop(p);
        dispose.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let p50 = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    println!(
        "{{\"runs\":{n},\"initV8Ms\":{:.3},\"buildSnapshotMs\":{:.3},\"bareIsolateAndContextMs\":{:.3},\"runtimeByBootstrapMs\":{:.3},\"runtimeFromSnapshotMs\":{:.3},\"disposeMs\":{:.3},\"snapshotEmbedded\":{}}}",
        startup.v8_ms,
        startup.snapshot_ms,
        p50(&mut bare),
        p50(&mut bootstrap),
        p50(&mut full),
        p50(&mut dispose),
        startup.origin == Origin::Embedded
    );
}

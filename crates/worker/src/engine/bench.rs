//! `codemode-worker --bench-prepare N`: how long preparing an isolate takes, split into its
//! steps, for bench/ (the number that decides whether a startup snapshot pays off), and what this
//! process spent starting (V8's initialization, building the runtime snapshot): the part of a
//! replacement worker's start that is ours. Prints one JSON object; runs no untrusted code.

use std::time::Instant;

use crate::engine::isolate::{Prepared, Split};
use crate::engine::snapshot::Origin;

/// What the process spent before its first isolate, in milliseconds.
pub struct Startup {
    pub v8_ms: f64,
    /// Loading the embedded snapshot, or building it when there is none.
    pub snapshot_ms: f64,
    pub origin: Origin,
}

/// `only_snapshot`: measure only what a worker does (for a profiler), the other kinds read 0.
pub fn prepare(n: usize, only_snapshot: bool, startup: Startup) {
    let n = n.max(1);
    let mut bare = Vec::with_capacity(n);
    let mut full = Vec::with_capacity(n);
    let mut bootstrap = Vec::with_capacity(n);
    let mut dispose = Vec::with_capacity(n);
    let mut isolate_step = Vec::with_capacity(n);
    let mut context_step = Vec::with_capacity(n);
    // CPU time of the snapshot loop (prepare and dispose): on a busy machine a steadier
    // figure than the wall-clock p50s.
    let cpu_started = crate::process::thread_cpu_us();
    // Each kind in a loop of its own, as a worker makes them (one kind, back to back); the
    // snapshot's first, since it is the one a worker makes.
    for _ in 0..n {
        let t = Instant::now();
        let mut split = Split::default();
        let p = Prepared::build_timed(128, crate::engine::snapshot::current(), &mut split);
        full.push(t.elapsed().as_secs_f64() * 1000.0);
        isolate_step.push(split.isolate.as_secs_f64() * 1000.0);
        context_step.push((split.context - split.isolate).as_secs_f64() * 1000.0);
        let t = Instant::now();
        drop(p);
        dispose.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let cpu_ms = (crate::process::thread_cpu_us() - cpu_started) as f64 / 1000.0 / n as f64;
    if only_snapshot {
        bare.push(0.0);
        bootstrap.push(0.0);
    } else {
        for _ in 0..n {
            // Isolate and context only: the cost before any runtime is installed.
            let t = Instant::now();
            {
                let mut isolate =
                    v8::Isolate::new(v8::CreateParams::default().heap_limits(0, 128 << 20));
                v8::scope!(let scope, &mut isolate);
                let _context = v8::Context::new(scope, Default::default());
            }
            bare.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        for _ in 0..n {
            let t = Instant::now();
            drop(Prepared::build(128, None));
            bootstrap.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let p50 = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    // Means too: throughput is bounded by the mean cost, which a tail of slow preparations
    // (fresh pages, a GC) lifts above the p50.
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (full_mean, dispose_mean) = (mean(&full), mean(&dispose));
    println!(
        "{{\"runs\":{n},\"initV8Ms\":{:.3},\"buildSnapshotMs\":{:.3},\"bareIsolateAndContextMs\":{:.3},\"runtimeByBootstrapMs\":{:.3},\"runtimeFromSnapshotMs\":{:.3},\"snapshotIsolateMs\":{:.3},\"snapshotContextMs\":{:.3},\"disposeMs\":{:.3},\"runtimeFromSnapshotMeanMs\":{:.3},\"disposeMeanMs\":{:.3},\"prepareAndDisposeCpuMs\":{:.3},\"snapshotEmbedded\":{}}}",
        startup.v8_ms,
        startup.snapshot_ms,
        p50(&mut bare),
        p50(&mut bootstrap),
        p50(&mut full),
        p50(&mut isolate_step),
        p50(&mut context_step),
        p50(&mut dispose),
        full_mean,
        dispose_mean,
        cpu_ms,
        startup.origin == Origin::Embedded
    );
}

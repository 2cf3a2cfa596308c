//! A fresh isolate and context with the runtime installed, ready for one program.

use crate::engine::helpers::Helpers;
use crate::engine::snapshot::{self, Snapshot};
use crate::engine::{memory, runtime_js};

use std::time::{Duration, Instant};

/// When each step of [`Prepared::build_timed`] ended, from its start.
#[derive(Default)]
pub struct Split {
    /// The isolate exists (from the snapshot, if any).
    pub isolate: Duration,
    /// Its context holds the runtime (deserialized, or bootstrapped).
    pub context: Duration,
}

pub struct Prepared {
    // Globals first: fields drop in order, and a Global must go before its isolate.
    pub context: v8::Global<v8::Context>,
    pub helpers: Helpers,
    pub isolate: v8::OwnedIsolate,
    /// V8's isolate pointer at a stable address, handed to the near-heap-limit callback
    /// (memory.rs): `OwnedIsolate` moves with this struct, so a pointer into it would dangle.
    /// Declared after `isolate`, so it is dropped after it. Held, never read here.
    #[allow(dead_code)]
    heap_limit_data: Box<v8::UnsafeRawIsolatePtr>,
    pub memory_limit_mib: u32,
}

impl Prepared {
    /// An isolate from the process's snapshot (snapshot.rs), if it has one.
    pub fn new(memory_limit_mib: u32) -> Prepared {
        Self::build(memory_limit_mib, snapshot::current())
    }

    /// `snapshot: None` runs the bootstrap in the new isolate (the fallback, and bench/'s point
    /// of comparison).
    pub fn build(memory_limit_mib: u32, snapshot: Option<&Snapshot>) -> Prepared {
        Self::build_timed(memory_limit_mib, snapshot, &mut Split::default())
    }

    /// `build`, noting when each step ended (`--bench-prepare`).
    pub fn build_timed(
        memory_limit_mib: u32,
        snapshot: Option<&Snapshot>,
        split: &mut Split,
    ) -> Prepared {
        let started = Instant::now();
        let limit = (memory_limit_mib as usize).saturating_mul(1024 * 1024);
        let mut params = v8::CreateParams::default()
            .heap_limits(0, limit)
            .array_buffer_allocator(memory::allocator());
        if let Some(snap) = snapshot {
            params = params
                .snapshot_blob(snap.blob.into())
                .external_references(snap.refs.into());
        }
        let mut isolate = v8::Isolate::new(params);
        split.isolate = started.elapsed();
        isolate.set_microtasks_policy(v8::MicrotasksPolicy::Explicit);
        // Errors keep a detailed stack trace (line and column per frame), so a failure can say
        // where in the model's code it happened (run/location.rs, `locate`).
        isolate.set_capture_stack_trace_for_uncaught_exceptions(true, 16);
        // SAFETY: the pointer is only read by the near-heap-limit callback, which V8 calls on
        // this isolate's thread while the isolate is alive.
        let heap_limit_data = Box::new(unsafe { isolate.as_raw_isolate_ptr() });
        // The callback receives the isolate it is registered on (see `heap_limit_data`).
        let data: *const v8::UnsafeRawIsolatePtr = &*heap_limit_data;
        isolate.add_near_heap_limit_callback(memory::near_heap_limit, data.cast_mut().cast());
        // One allocation past the limit and its headroom: the run is answered before V8 aborts.
        isolate.set_oom_error_handler(crate::process::last_words::v8_out_of_memory);
        // Callbacks are the isolate's, not the snapshot's: set on every isolate.
        isolate.set_host_import_module_dynamically_callback(
            crate::engine::modules::import::import_dynamically,
        );
        let (context, helpers) = {
            v8::scope!(let scope, &mut isolate);
            let context = v8::Context::new(scope, Default::default());
            let scope = &mut v8::ContextScope::new(scope, context);
            let from_snapshot = snapshot.and_then(|snap| {
                scope
                    .get_context_data_from_snapshot_once::<v8::Object>(snap.helpers_index)
                    .ok()
            });
            let helpers = match from_snapshot {
                Some(h) => {
                    remove_reinstalled_globals(scope, context);
                    h
                }
                None => runtime_js::install_runtime(scope),
            };
            split.context = started.elapsed();
            // While idle, compile (never instantiate or run) a module of the program's shape: the
            // isolate's first module compile pays one-time setup (~20-50 µs here) that would
            // otherwise land on the run's critical path. Nothing in the context changes.
            let _ = crate::engine::modules::compile(
                scope,
                "warm-up.js",
                "export default (async () => 0\n);",
            );
            (
                v8::Global::new(scope, context),
                runtime_js::resolve_helpers(scope, helpers),
            )
        };
        Prepared {
            context,
            helpers,
            isolate,
            heap_limit_data,
            memory_limit_mib,
        }
    }
}

/// V8 installs some globals when a context is created, even from a snapshot whose context
/// had them deleted; remove them again (see js/buffer_guard.js for why they are not in the sandbox).
fn remove_reinstalled_globals(scope: &mut v8::PinScope, context: v8::Local<v8::Context>) {
    let global = context.global(scope);
    for name in ["WebAssembly", "SharedArrayBuffer"] {
        if let Some(key) = v8::String::new(scope, name) {
            global.delete(scope, key.into());
        }
    }
}

/// Evaluates `6 * 7` in a fresh isolate (the jail self-test's proof that V8 still works).
pub fn selftest_eval() -> String {
    let mut prepared = Prepared::new(64);
    v8::scope!(let scope, &mut prepared.isolate);
    let context = v8::Local::new(scope, &prepared.context);
    let scope = &mut v8::ContextScope::new(scope, context);
    v8::String::new(scope, "6 * 7")
        .and_then(|src| v8::Script::compile(scope, src, None))
        .and_then(|script| script.run(scope))
        .map(|v| v.to_rust_string_lossy(scope))
        .unwrap_or_else(|| "failed".into())
}

//! One execution: compile the program as a module, call its function, drive the event loop
//! (event_loop.rs) until its promise settles, copy the result out, or keep the request handler
//! it returned for invocations (retained.rs). The entry rewrite is entry.rs's, the failures'
//! texts failure.rs's, the place of a throw in the model's code location.rs's.

pub mod entry;
pub mod event_loop;
pub mod failure;
pub mod location;
pub mod retained;

use codemode_protocol::{
    limits, ExecuteRequest, FailureCode, Grant, Hops, RunError, RunOutcome, RunStats,
};

use crate::engine::helpers::Helpers;
use crate::engine::isolate::Prepared;
use crate::engine::memory::METER;
use crate::engine::modules::{self, ModuleMap, PROGRAM_NAME};
use crate::natives::clone;
use crate::natives::console::Console;
use crate::natives::host::Calls;
use crate::natives::seeded::Seeded;
use crate::process::budget::{self, Counted};
use crate::process::io::CurrentRun;
use crate::process::last_words;
use crate::process::link::{HostInput, Outbox};
use crate::process::work_cpu_us;
use event_loop::{heap_used, settle, EventLoop, Settled};
use failure::{cpu_limit, entry_failure, exception_failure, fail, settle_failure, type_name};
use retained::Retained;

/// What a run produced: a value (serialized), or a request handler to retain.
enum Produced {
    Bytes(Vec<u8>),
    /// The handler and the `this` it is called with (the object it came from, or undefined).
    Handler(v8::Global<v8::Function>, v8::Global<v8::Value>),
}

/// How a run leaves its isolate.
pub enum Ended {
    /// Spent: the caller disposes it (after the answer is on its way).
    Spent(Prepared),
    /// Kept for invocations: the outcome carries the grant (docs/handles.md).
    Retained(Retained),
}

/// Runs `req` in `prepared`, reading the host's answers from `input` and sending requests
/// through `send`; returns the outcome and the isolate, spent or retained. `hops`: the steps
/// recorded so far when the request asked for them (`ExecuteRequest::hops`); the run adds its
/// own and the outcome carries them.
///
/// While the run lasts its state sits in isolate slots, one for each consumer: [`Calls`] for
/// the natives that ask the host (tool calls, fetches), [`Console`] for `log`, [`ModuleMap`]
/// for the module loader. A spent run's go with it; a retained one keeps its calls and modules
/// for its handlers, and its console output is discarded from then on.
pub fn run(
    mut prepared: Prepared,
    req: ExecuteRequest,
    input: &mut impl HostInput,
    send: Outbox,
    current: &CurrentRun,
    mut hops: Option<Hops>,
) -> (RunOutcome, Ended) {
    let ExecuteRequest {
        exec_id,
        code,
        modules,
        providers,
        memory_limit_mib,
        outbound,
        retain_handles,
        live_logs,
        budgets,
        replayable,
        hops: _,
    } = req;
    let cpu_limit_ms = budgets.cpu_limit_ms;
    let limit_bytes = (memory_limit_mib as usize).saturating_mul(1024 * 1024);
    METER.start_run(limit_bytes);
    last_words::running(exec_id, None, memory_limit_mib);
    let cpu_start = work_cpu_us();
    let isolate = &mut prepared.isolate;
    isolate.set_slot(Calls::new(
        exec_id,
        outbound,
        budgets,
        send,
        replayable.is_some(),
    ));
    if let Some(r) = replayable {
        isolate.set_slot(Seeded::new(r.seed));
    }
    isolate.set_slot(Console::new(live_logs.then_some((exec_id, send))));
    isolate.set_slot(ModuleMap::new(modules));
    current.set(Some((exec_id, isolate.thread_safe_handle())));
    budget::arm(isolate, current, cpu_limit_ms);
    let (result, heap_peak) = {
        v8::scope!(let scope, &mut prepared.isolate);
        let context = v8::Local::new(scope, &prepared.context);
        let scope = &mut v8::ContextScope::new(scope, context);
        let mut lp = EventLoop::new(&prepared.helpers, exec_id);
        let epoch_ms = replayable.map(|r| r.epoch_ms);
        let result = execute(
            scope,
            &mut lp,
            retain_handles,
            epoch_ms,
            &code,
            &providers,
            input,
            &mut hops,
        );
        (result, lp.heap_peak)
    };
    last_words::idle();
    let counted = budget::disarm(&mut prepared.isolate, current);
    let heap_now = heap_used(&mut prepared.isolate);
    // A run that ended past its limit in its last turn is exhausted too (memory.rs).
    METER.sample_heap(heap_now);
    // A run the budget stopped reports that, whatever it was doing when it stopped.
    let result = match (&counted, cpu_limit_ms) {
        (Some(Counted { spent: true, .. }), Some(ms)) => Err(cpu_limit(ms)),
        _ => result,
    };
    let retaining = matches!(result, Ok(Produced::Handler(..)));
    let isolate = &mut prepared.isolate;
    // A spent run's state goes now (every Global it parked, while the isolate is alive); a
    // retained one's calls and modules stay for its handlers, its dispatch ended.
    let calls = if retaining {
        isolate.get_slot_mut::<Calls>().map(|calls| {
            calls.complete();
            calls.counts()
        })
    } else {
        current.set(None);
        drop(isolate.remove_slot::<ModuleMap>());
        isolate.remove_slot::<Calls>().map(|calls| calls.counts())
    };
    let (tool_calls, fetches) = calls.unwrap_or_default();
    let logs = isolate
        .remove_slot::<Console>()
        .map_or_else(Vec::new, Console::finish);
    let stats = RunStats {
        wall_us: 0,
        cpu_us: work_cpu_us().saturating_sub(cpu_start),
        heap_peak: heap_peak.max(heap_now) as u64,
        buffers_peak: METER.buffers_peak() as u64,
        tool_calls,
        worker_pid: std::process::id(),
        cpu_budget_us: counted.map_or(0, |c| c.cpu_us),
        fetches,
    };
    let result = match result {
        Ok(Produced::Handler(handler, this)) => {
            let grant = Grant {
                execution_id: uuid::Uuid::new_v4().to_string(),
                handles: vec!["fetch".into()],
            };
            let outcome = RunOutcome {
                result: None,
                error: None,
                logs,
                stats,
                grant: Some(grant),
                hops: answered(hops),
                ..RunOutcome::default()
            };
            let retained = Retained {
                handler,
                this,
                exec_id,
                memory_limit_mib,
                cpu_limit_ms,
                prepared,
            };
            return (outcome, Ended::Retained(retained));
        }
        Ok(Produced::Bytes(bytes)) => Ok(bytes),
        Err(e) => Err(e),
    };
    // A run that met the memory bound reports that, whatever it threw on the way down
    // ("Array buffer allocation failed", a termination). A heap that reached its limit does so
    // even when the run returned: the headroom granted to stop it (memory.rs) can let one huge
    // allocation succeed and the run end before the termination is seen. A refused buffer the
    // program caught and got past is its own business.
    let result = match result {
        ref r if METER.heap_exhausted() || (r.is_err() && METER.refused()) => {
            let mib = memory_limit_mib.to_string();
            Err(fail(FailureCode::MemoryLimit, &[("mib", &mib)]))
        }
        Ok(bytes) if bytes.len() > limits::RESULT_BYTES => {
            let (size, limit) = (bytes.len().to_string(), limits::RESULT_BYTES.to_string());
            Err(fail(
                FailureCode::ResultTooLarge,
                &[("size", &size), ("limit", &limit)],
            ))
        }
        other => other,
    };
    let (result, error) = match result {
        Ok(bytes) => (Some(bytes), None),
        Err(error) => (None, Some(error)),
    };
    let outcome = RunOutcome {
        result,
        error,
        logs,
        stats,
        hops: answered(hops),
        ..RunOutcome::default()
    };
    (outcome, Ended::Spent(prepared))
}

/// The run's steps for its outcome, the last one (`answered`) set to now.
fn answered(mut hops: Option<Hops>) -> Option<Box<Hops>> {
    Hops::mark(hops.as_mut(), |h| &mut h.answered);
    hops.map(Box::new)
}

/// Compiles, links and evaluates the program, calls its function and waits for its promise.
/// `epoch_ms`: the run is replayable, its logical clock starting there (js/replay.js).
#[allow(clippy::too_many_arguments)]
fn execute(
    scope: &mut v8::PinScope,
    lp: &mut EventLoop,
    retain: bool,
    epoch_ms: Option<u64>,
    code: &str,
    providers: &[codemode_protocol::ProviderDecl],
    input: &mut impl HostInput,
    hops: &mut Option<Hops>,
) -> Result<Produced, RunError> {
    let helpers = lp.helpers;
    let entry::Entry { source, shift } = match entry::to_module_source(code) {
        Ok(e) => e,
        Err(error) => return Err(entry_failure(scope, error)),
    };
    Hops::mark(hops.as_mut(), |h| &mut h.parsed);
    install_providers(scope, helpers, providers)?;
    let begin = v8::Local::new(scope, &helpers.begin_run);
    let undefined = v8::undefined(scope).into();
    match epoch_ms {
        None => begin.call(scope, undefined, &[]),
        Some(ms) => {
            let epoch = v8::Number::new(scope, ms as f64).into();
            begin.call(scope, undefined, &[epoch])
        }
    };

    v8::tc_scope!(let tc, scope);
    let Some(module) = modules::compile(tc, PROGRAM_NAME, &source) else {
        return Err(exception_failure(tc, helpers, &shift));
    };
    if module.instantiate_module(tc, modules::resolve).is_none() {
        let missing = tc
            .get_slot_mut::<ModuleMap>()
            .and_then(|m| m.missing.take().map(|missing| (missing, m.available())));
        if let Some((specifier, available)) = missing {
            return Err(fail(
                FailureCode::ModuleNotFound,
                &[("specifier", &specifier), ("available", &available)],
            ));
        }
        if let Some(text) = tc
            .get_slot_mut::<ModuleMap>()
            .and_then(|m| m.too_deep.take())
        {
            let mut error = fail(FailureCode::NestingTooDeep, &[]);
            error.message = text;
            return Err(error);
        }
        return Err(exception_failure(tc, helpers, &shift));
    }
    let Some(evaluation) = module.evaluate(tc) else {
        return Err(exception_failure(tc, helpers, &shift));
    };
    if let Ok(promise) = v8::Local::<v8::Promise>::try_from(evaluation) {
        match settle(tc, lp, promise, input) {
            Settled::Fulfilled(_) => {}
            other => return Err(settle_failure(tc, helpers, other, &shift)),
        }
    }
    Hops::mark(hops.as_mut(), |h| &mut h.evaluated);
    let namespace = module.get_module_namespace();
    let func = v8::Local::<v8::Object>::try_from(namespace)
        .ok()
        .and_then(|ns| {
            let key = v8::String::new(tc, "default")?;
            ns.get(tc, key.into())
        });
    let func = match func.map(v8::Local::<v8::Function>::try_from) {
        Some(Ok(f)) => f,
        Some(Err(_)) | None => {
            let what = func
                .map(|v| type_name(tc, helpers, v))
                .unwrap_or_else(|| "nothing".into());
            let found = format!("an expression that evaluates to {what}, not a function");
            return Err(fail(FailureCode::EntryShape, &[("found", &found)]));
        }
    };
    let undefined = v8::undefined(tc).into();
    let Some(returned) = func.call(tc, undefined, &[]) else {
        return Err(exception_failure(tc, helpers, &shift));
    };
    let value = match v8::Local::<v8::Promise>::try_from(returned) {
        Ok(promise) => match settle(tc, lp, promise, input) {
            Settled::Fulfilled(v) => v,
            other => return Err(settle_failure(tc, helpers, other, &shift)),
        },
        Err(_) => {
            tc.perform_microtask_checkpoint();
            returned
        }
    };
    Hops::mark(hops.as_mut(), |h| &mut h.settled);
    if retain {
        if let Some((handler, this)) = handler_of(tc, value) {
            return Ok(Produced::Handler(
                v8::Global::new(tc, handler),
                v8::Global::new(tc, this),
            ));
        }
    }
    clone::serialize(tc, value)
        .map(Produced::Bytes)
        .map_err(|detail| fail(FailureCode::ResultNotCloneable, &[("detail", &detail)]))
}

/// The request handler a result grants, with the `this` it is called with: a function, or an
/// object's `fetch` method (the shape a Workers entrypoint exports). Anything else grants none.
fn handler_of<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    value: v8::Local<'s, v8::Value>,
) -> Option<(v8::Local<'s, v8::Function>, v8::Local<'s, v8::Value>)> {
    if let Ok(f) = v8::Local::<v8::Function>::try_from(value) {
        return Some((f, v8::undefined(scope).into()));
    }
    let object = v8::Local::<v8::Object>::try_from(value).ok()?;
    // A throwing getter grants nothing: the value is then reported as any other result.
    v8::tc_scope!(let tc, scope);
    let key = v8::String::new(tc, "fetch")?;
    let fetch = object.get(tc, key.into())?;
    let fetch = v8::Local::<v8::Function>::try_from(fetch).ok()?;
    Some((fetch, value))
}

fn install_providers(
    scope: &mut v8::PinScope,
    helpers: &Helpers,
    providers: &[codemode_protocol::ProviderDecl],
) -> Result<(), RunError> {
    if providers.is_empty() {
        return Ok(());
    }
    let internal = |detail: &str| fail(FailureCode::Internal, &[("detail", detail)]);
    let list = v8::Array::new(scope, providers.len() as i32);
    for (i, p) in providers.iter().enumerate() {
        let name = v8::String::new(scope, &p.name).ok_or_else(|| internal("provider name"))?;
        let tools: v8::Local<v8::Value> = match &p.tools {
            None => v8::null(scope).into(),
            Some(tools) => {
                let arr = v8::Array::new(scope, tools.len() as i32);
                for (j, t) in tools.iter().enumerate() {
                    let s = v8::String::new(scope, t).ok_or_else(|| internal("tool name"))?;
                    arr.set_index(scope, j as u32, s.into());
                }
                arr.into()
            }
        };
        let pair = v8::Array::new_with_elements(scope, &[name.into(), tools]);
        list.set_index(scope, i as u32, pair.into());
    }
    v8::tc_scope!(let tc, scope);
    let f = v8::Local::new(tc, &helpers.install_providers);
    let undefined = v8::undefined(tc).into();
    if f.call(tc, undefined, &[list.into()]).is_none() {
        let why = tc
            .exception()
            .map(|e| e.to_rust_string_lossy(tc))
            .unwrap_or_default();
        return Err(internal(&format!("installing providers failed: {why}")));
    }
    Ok(())
}

//! One execution: compile the program as a module, call its function, drive tool calls until
//! the promise settles, copy the result out.
//!
//! Over 500 lines on purpose: the run loop and the texts of the failures it reports (entry
//! shape, syntax, TypeScript refusals, uncaught throws with their place in the model's code, a
//! promise that never settles) are one reading; the retained execution's loop lives in
//! retained.rs.

use codemode_protocol::{
    limits, ExecuteRequest, FailureCode, Grant, HostMsg, RunError, RunOutcome, RunStats,
    SourceLocation,
};

use crate::entry::{self, EntryError, Shift};
use crate::helpers::Helpers;
use crate::io::{CurrentRun, Next};
use crate::isolate::Prepared;
use crate::link::{HostInput, Outbox};
use crate::memory::METER;
use crate::modules::{self, ModuleMap, PROGRAM_NAME};
use crate::retained::Retained;
use crate::state::RunState;
use crate::{clone, host, web};

/// How the wait for a promise ended.
pub(crate) enum Settled<'s> {
    Fulfilled(v8::Local<'s, v8::Value>),
    Rejected(v8::Local<'s, v8::Value>),
    /// Nothing in flight can ever settle it.
    Stuck,
    /// Terminated (cancelled by the host) or the host went away.
    Stopped,
}

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

pub(crate) fn fail(code: FailureCode, vars: &[(&str, &str)]) -> RunError {
    RunError {
        code: code.as_str().to_string(),
        message: code.render(vars),
        location: None,
    }
}

/// A failure that happened at `location`: the place is also written into the text (after
/// `detail`), so a model that reads only the text still learns it.
fn fail_at(
    code: FailureCode,
    detail: &str,
    hint: &str,
    location: Option<SourceLocation>,
) -> RunError {
    let detail = match &location {
        Some(l) => format!("{detail}{}", place(l)),
        None => detail.to_string(),
    };
    let mut error = fail(code, &[("detail", &detail), ("hint", hint)]);
    error.location = location.map(Box::new);
    error
}

/// " (line 3, column 7)", or " (module \"./a.js\", line 3, column 7)".
fn place(l: &SourceLocation) -> String {
    match &l.module {
        Some(m) => format!(" (module \"{m}\", line {}, column {})", l.line, l.column),
        None => format!(" (line {}, column {})", l.line, l.column),
    }
}

/// The entry-shape reminder a syntax error carries when the shape is what is wrong.
const SHAPE_HINT: &str = " The code must be one expression that evaluates to a function, optionally preceded by import declarations, e.g. `async () => { return 1 }`.";

/// Runs `req` in `prepared`, reading the host's answers from `input` and sending requests
/// through `send`; returns the outcome and the isolate, spent or retained.
pub fn run(
    mut prepared: Prepared,
    req: ExecuteRequest,
    input: &mut impl HostInput,
    send: Outbox,
    current: &CurrentRun,
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
    } = req;
    let limit_bytes = (memory_limit_mib as usize).saturating_mul(1024 * 1024);
    METER.start_run(limit_bytes);
    let cpu_start = thread_cpu_us();
    let mut state = RunState::new(exec_id, ModuleMap::new(modules), outbound, send);
    state.live_logs = live_logs;
    prepared.isolate.set_slot(state);
    current.set(Some((exec_id, prepared.isolate.thread_safe_handle())));
    let result = {
        let scope = &mut v8::HandleScope::new(&mut prepared.isolate);
        let context = v8::Local::new(scope, &prepared.context);
        let scope = &mut v8::ContextScope::new(scope, context);
        let ctx = Context {
            helpers: &prepared.helpers,
            exec_id,
            retain: retain_handles,
        };
        execute(scope, &ctx, &code, &providers, input)
    };
    let heap_now = heap_used(&mut prepared.isolate);
    let retaining = matches!(result, Ok(Produced::Handler(..)));
    let stats;
    let logs;
    {
        // A spent run's state goes now (every Global it parked, while the isolate is alive);
        // a retained one's stays for its handlers, with the dispatch gone.
        let mut removed = if retaining {
            None
        } else {
            current.set(None);
            prepared.isolate.remove_slot::<RunState>()
        };
        let state = if retaining {
            prepared.isolate.get_slot_mut::<RunState>()
        } else {
            removed.as_mut()
        };
        stats = RunStats {
            wall_us: 0,
            cpu_us: thread_cpu_us().saturating_sub(cpu_start),
            heap_peak: state.as_ref().map_or(0, |s| s.heap_peak).max(heap_now) as u64,
            buffers_peak: METER.buffers_peak() as u64,
            tool_calls: state.as_ref().map_or(0, |s| s.next_call - s.fetches),
            worker_pid: std::process::id(),
        };
        logs = match state {
            Some(s) => {
                s.completed = retaining;
                s.finish_logs()
            }
            None => Vec::new(),
        };
    }
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
            };
            let retained = Retained {
                handler,
                this,
                exec_id,
                memory_limit_mib,
                prepared,
            };
            return (outcome, Ended::Retained(retained));
        }
        Ok(Produced::Bytes(bytes)) => Ok(bytes),
        Err(e) => Err(e),
    };
    // A run that met the memory bound reports that, whatever it threw on the way down
    // ("Array buffer allocation failed", a termination).
    let result = match result {
        Err(_) if METER.heap_exhausted() || METER.refused() => {
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
        grant: None,
    };
    (outcome, Ended::Spent(prepared))
}

/// What the run loop needs besides the scope.
pub(crate) struct Context<'a> {
    pub helpers: &'a Helpers,
    pub exec_id: u64,
    /// Keep a request handler instead of serializing it (retainHandles).
    pub retain: bool,
}

/// CPU time of the calling thread in microseconds.
pub(crate) fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1000
}

pub(crate) fn heap_used(isolate: &mut v8::Isolate) -> usize {
    let mut stats = v8::HeapStatistics::default();
    isolate.get_heap_statistics(&mut stats);
    stats.used_heap_size()
}

fn execute(
    scope: &mut v8::HandleScope,
    ctx: &Context,
    code: &str,
    providers: &[codemode_protocol::ProviderDecl],
    input: &mut impl HostInput,
) -> Result<Produced, RunError> {
    let (helpers, exec_id) = (ctx.helpers, ctx.exec_id);
    let entry::Entry { source, shift } = match entry::to_module_source(code) {
        Ok(e) => e,
        Err(EntryError::Shape(found)) => {
            return Err(fail(FailureCode::EntryShape, &[("found", &found)]))
        }
        Err(EntryError::Syntax { oxc, source, shape }) => {
            let hint = if shape { SHAPE_HINT } else { "" };
            let (detail, location) = v8_syntax_error(scope, &source)
                .unwrap_or_else(|| (format!("SyntaxError: {oxc}"), None));
            return Err(fail_at(FailureCode::SyntaxError, &detail, hint, location));
        }
        Err(EntryError::TypeScriptSyntax {
            message,
            line,
            column,
        }) => {
            let location = SourceLocation {
                line,
                column,
                module: None,
            };
            let detail = format!("SyntaxError: {message}");
            return Err(fail_at(
                FailureCode::SyntaxError,
                &detail,
                "",
                Some(location),
            ));
        }
        Err(EntryError::TooDeep(t)) => {
            let mut error = fail(FailureCode::NestingTooDeep, &[]);
            error.message = t.text("The code");
            error.location = Some(Box::new(SourceLocation {
                line: t.line,
                column: 1,
                module: None,
            }));
            return Err(error);
        }
        Err(EntryError::Refused(r)) => {
            let line = r.line.to_string();
            let mut error = fail(
                FailureCode::TypeScriptUnsupported,
                &[
                    ("construct", r.construct),
                    ("line", &line),
                    ("instead", r.instead),
                ],
            );
            error.location = Some(Box::new(SourceLocation {
                line: r.line,
                column: 1,
                module: None,
            }));
            return Err(error);
        }
    };
    install_providers(scope, helpers, providers)?;
    let begin = v8::Local::new(scope, &helpers.begin_run);
    let undefined = v8::undefined(scope).into();
    begin.call(scope, undefined, &[]);

    let tc = &mut v8::TryCatch::new(scope);
    let Some(module) = modules::compile(tc, PROGRAM_NAME, &source) else {
        return Err(exception_failure(tc, helpers, &shift));
    };
    if module.instantiate_module(tc, modules::resolve).is_none() {
        let missing = tc
            .get_slot_mut::<RunState>()
            .and_then(|s| s.modules.missing.take().map(|m| (m, s.modules.available())));
        if let Some((specifier, available)) = missing {
            return Err(fail(
                FailureCode::ModuleNotFound,
                &[("specifier", &specifier), ("available", &available)],
            ));
        }
        if let Some(text) = tc
            .get_slot_mut::<RunState>()
            .and_then(|s| s.modules.too_deep.take())
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
        match settle(tc, helpers, promise, exec_id, input) {
            Settled::Fulfilled(_) => {}
            other => return Err(settle_failure(tc, helpers, other, &shift)),
        }
    }
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
        Ok(promise) => match settle(tc, helpers, promise, exec_id, input) {
            Settled::Fulfilled(v) => v,
            other => return Err(settle_failure(tc, helpers, other, &shift)),
        },
        Err(_) => {
            tc.perform_microtask_checkpoint();
            returned
        }
    };
    if ctx.retain {
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
    scope: &mut v8::HandleScope<'s>,
    value: v8::Local<'s, v8::Value>,
) -> Option<(v8::Local<'s, v8::Function>, v8::Local<'s, v8::Value>)> {
    if let Ok(f) = v8::Local::<v8::Function>::try_from(value) {
        return Some((f, v8::undefined(scope).into()));
    }
    let object = v8::Local::<v8::Object>::try_from(value).ok()?;
    // A throwing getter grants nothing: the value is then reported as any other result.
    let tc = &mut v8::TryCatch::new(scope);
    let key = v8::String::new(tc, "fetch")?;
    let fetch = object.get(tc, key.into())?;
    let fetch = v8::Local::<v8::Function>::try_from(fetch).ok()?;
    Some((fetch, value))
}

fn install_providers(
    scope: &mut v8::HandleScope,
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
    let tc = &mut v8::TryCatch::new(scope);
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

/// Drives microtasks, timers and tool answers until `promise` settles. Pending timers alone
/// do not keep a run alive past its promise; a promise nothing can settle (no tool call in
/// flight, no timer pending) ends the run at once.
pub(crate) fn settle<'s>(
    scope: &mut v8::HandleScope<'s>,
    helpers: &Helpers,
    promise: v8::Local<'s, v8::Promise>,
    exec_id: u64,
    input: &mut impl HostInput,
) -> Settled<'s> {
    let run_timers = v8::Local::new(scope, &helpers.run_timers);
    let alloc = v8::Local::new(scope, &helpers.alloc_bytes);
    loop {
        scope.perform_microtask_checkpoint();
        if scope.is_execution_terminating() {
            return Settled::Stopped;
        }
        match promise.state() {
            v8::PromiseState::Fulfilled => return Settled::Fulfilled(promise.result(scope)),
            v8::PromiseState::Rejected => return Settled::Rejected(promise.result(scope)),
            v8::PromiseState::Pending => {}
        }
        // -2: a timer fired (run its microtasks, then look again); -1: none pending;
        // otherwise the next deadline on the `now` clock.
        let undefined = v8::undefined(scope).into();
        let next_timer = match run_timers
            .call(scope, undefined, &[])
            .and_then(|v| v.number_value(scope))
        {
            Some(-2.0) => continue,
            Some(n) if n >= 0.0 => Some(n),
            Some(_) => None,
            None => return Settled::Stopped,
        };
        let used = heap_used(scope);
        METER.sample_heap(used);
        let in_flight = match scope.get_slot_mut::<RunState>() {
            Some(s) => {
                s.heap_peak = s.heap_peak.max(used);
                s.calls.len()
            }
            None => 0,
        };
        if in_flight == 0 && next_timer.is_none() {
            return Settled::Stuck;
        }
        let wait = next_timer.map(web::until_ms);
        match input.next_within(wait) {
            Next::Msg(HostMsg::ToolResult {
                exec_id: id,
                call_id,
                ok,
                payload,
            }) if id == exec_id => {
                let scope = &mut v8::HandleScope::new(scope);
                host::settle_tool_call(scope, call_id, ok, &payload);
            }
            Next::Msg(HostMsg::FetchResult {
                exec_id: id,
                call_id,
                result,
            }) if id == exec_id => {
                let scope = &mut v8::HandleScope::new(scope);
                host::settle_fetch(scope, alloc, call_id, result);
            }
            Next::Msg(HostMsg::Cancel { exec_id: id } | HostMsg::CloseHandles { exec_id: id })
                if id == exec_id =>
            {
                return Settled::Stopped
            }
            // A stale answer or cancel for an earlier run; an Execute cannot arrive mid-run.
            Next::Msg(_) | Next::Timeout => {}
            // The host is gone: nothing will answer.
            Next::Closed => return Settled::Stopped,
        }
    }
}

fn settle_failure(
    scope: &mut v8::HandleScope,
    helpers: &Helpers,
    settled: Settled,
    shift: &Shift,
) -> RunError {
    match settled {
        Settled::Rejected(reason) => {
            let location = locate(scope, reason, shift);
            let detail = describe_throw(scope, helpers, reason);
            fail_at(FailureCode::ProgramError, &detail, "", location)
        }
        Settled::Stuck => fail(FailureCode::NeverSettled, &[]),
        Settled::Stopped | Settled::Fulfilled(_) => fail(
            FailureCode::Internal,
            &[("detail", "the run was stopped before it settled")],
        ),
    }
}

/// The failure for a pending exception: a SyntaxError (from a module) or an uncaught throw.
fn exception_failure(
    tc: &mut v8::TryCatch<v8::HandleScope>,
    helpers: &Helpers,
    shift: &Shift,
) -> RunError {
    if tc.is_execution_terminating() || tc.has_terminated() {
        return fail(
            FailureCode::Internal,
            &[("detail", "the run was stopped before it settled")],
        );
    }
    let Some(exception) = tc.exception() else {
        return fail(
            FailureCode::Internal,
            &[("detail", "no exception was recorded")],
        );
    };
    // Where V8 says the throw happened (a syntax error's place, a throw of a non-Error).
    let thrown_at = tc.message().map(|m| {
        let line = m.get_line_number(tc).unwrap_or(0) as u32;
        let column = m.get_start_column() as u32 + 1;
        let name = m
            .get_script_resource_name(tc)
            .map(|r| r.to_rust_string_lossy(tc));
        (line, column, name)
    });
    let is_syntax = exception
        .to_object(tc)
        .and_then(|o| {
            let key = v8::String::new(tc, "name")?;
            o.get(tc, key.into())
        })
        .map(|n| n.to_rust_string_lossy(tc) == "SyntaxError")
        .unwrap_or(false);
    tc.reset();
    let from_message = thrown_at.and_then(|(line, column, name)| {
        source_location(tc, name.as_deref().unwrap_or(""), line, column, shift)
    });
    let location = if is_syntax {
        from_message
    } else {
        locate(tc, exception, shift).or(from_message)
    };
    let detail = describe_throw(tc, helpers, exception);
    let code = if is_syntax {
        FailureCode::SyntaxError
    } else {
        FailureCode::ProgramError
    };
    fail_at(code, &detail, "", location)
}

/// The place in the model's code of a position V8 reports in script `name`: the program (its
/// rewrite undone) or one of the run's modules; `None` for the runtime's own scripts.
fn source_location(
    scope: &mut v8::HandleScope,
    name: &str,
    line: u32,
    column: u32,
    shift: &Shift,
) -> Option<SourceLocation> {
    if line == 0 {
        return None;
    }
    if name == PROGRAM_NAME {
        let (line, column) = shift.undo(line, column)?;
        return Some(SourceLocation {
            line,
            column,
            module: None,
        });
    }
    let known = scope
        .get_slot::<RunState>()
        .is_some_and(|s| s.modules.has_name(name));
    known.then(|| SourceLocation {
        line,
        column,
        module: Some(name.to_string()),
    })
}

/// Where an Error was created, in the model's code: the innermost frame of its stack that is
/// the program or one of the run's modules (frames of the runtime, a URL parser throwing for
/// the model's call say, are skipped). `None` for a thrown value that is not an Error.
fn locate(
    scope: &mut v8::HandleScope,
    exception: v8::Local<v8::Value>,
    shift: &Shift,
) -> Option<SourceLocation> {
    let trace = v8::Exception::get_stack_trace(scope, exception)?;
    for i in 0..trace.get_frame_count() {
        let Some(frame) = trace.get_frame(scope, i) else {
            continue;
        };
        let Some(name) = frame.get_script_name(scope) else {
            continue;
        };
        let name = name.to_rust_string_lossy(scope);
        let (line, column) = (frame.get_line_number() as u32, frame.get_column() as u32);
        if let Some(l) = source_location(scope, &name, line, column, shift) {
            return Some(l);
        }
    }
    None
}

/// V8's own SyntaxError text for code oxc refused (models know V8's wording), and where. The
/// code is compiled as written (or with its types blanked, which moves nothing), so V8's
/// position is the model's.
fn v8_syntax_error(
    scope: &mut v8::HandleScope,
    code: &str,
) -> Option<(String, Option<SourceLocation>)> {
    let tc = &mut v8::TryCatch::new(scope);
    if modules::compile(tc, PROGRAM_NAME, code).is_some() {
        return None;
    }
    let exception = tc.exception()?;
    let location = tc.message().and_then(|m| {
        let line = m.get_line_number(tc)? as u32;
        let column = m.get_start_column() as u32 + 1;
        Some(SourceLocation {
            line,
            column,
            module: None,
        })
    });
    let text = exception.to_rust_string_lossy(tc);
    Some((text, location))
}

/// Calls `f(value)` and returns its result as a string; `None` when it throws.
fn call_helper(
    scope: &mut v8::HandleScope,
    f: &v8::Global<v8::Function>,
    value: v8::Local<v8::Value>,
) -> Option<String> {
    let tc = &mut v8::TryCatch::new(scope);
    let f = v8::Local::new(tc, f);
    let undefined = v8::undefined(tc).into();
    let out = f.call(tc, undefined, &[value])?;
    Some(out.to_rust_string_lossy(tc))
}

pub(crate) fn describe_throw(
    scope: &mut v8::HandleScope,
    helpers: &Helpers,
    value: v8::Local<v8::Value>,
) -> String {
    call_helper(scope, &helpers.describe_throw, value)
        .unwrap_or_else(|| "Uncaught exception (its description failed)".into())
}

fn type_name(
    scope: &mut v8::HandleScope,
    helpers: &Helpers,
    value: v8::Local<v8::Value>,
) -> String {
    call_helper(scope, &helpers.type_name, value).unwrap_or_else(|| "a value".into())
}

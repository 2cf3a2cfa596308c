//! A retained execution (docs/handles.md): the run returned a request handler and asked to keep
//! it, so its isolate lives on. The worker serves it until it ends: invocations one at a time,
//! the isolate's timers in between, fetch answers for its handlers and timers. It ends on
//! `CloseHandles` or a `Cancel` (the host's close, idle bound or an invocation's time bound),
//! or when a bound is hit (the isolate filled its heap): then the next `Invoke` is answered with
//! the memory text. The caller disposes the returned isolate and says `Ready`.

use codemode_protocol::{FailureCode, HostMsg, RunError, WireRequest, WireResponse, WorkerMsg};

use crate::host;
use crate::io::{CurrentRun, Next};
use crate::isolate::Prepared;
use crate::link::{HostInput, Outbox};
use crate::memory::METER;
use crate::run::{self, fail, Settled};
use crate::state::RunState;
use crate::web;

pub struct Retained {
    // Globals first: fields drop in order, and a Global must go before its isolate.
    pub handler: v8::Global<v8::Function>,
    pub this: v8::Global<v8::Value>,
    pub exec_id: u64,
    pub memory_limit_mib: u32,
    pub prepared: Prepared,
}

/// Why serving stopped being possible before the execution was told to end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dead {
    /// The heap filled (between invocations): the next invocation reports the memory text.
    Memory,
    /// Terminated (a Cancel): the execution is over.
    Terminated,
}

/// Serves `retained` until its execution ends; returns the isolate to dispose.
pub fn serve(
    retained: Retained,
    input: &mut impl HostInput,
    send: Outbox,
    current: &CurrentRun,
) -> Prepared {
    let Retained {
        handler,
        this,
        exec_id,
        memory_limit_mib,
        mut prepared,
    } = retained;
    current.set(Some((exec_id, prepared.isolate.thread_safe_handle())));
    {
        let scope = &mut v8::HandleScope::new(&mut prepared.isolate);
        let context = v8::Local::new(scope, &prepared.context);
        let scope = &mut v8::ContextScope::new(scope, context);
        let helpers = &prepared.helpers;
        let mut dead = None;
        loop {
            // The isolate's timers fire while nobody invokes it; between two invocations it
            // runs nothing else.
            let mut next_timer = None;
            if dead.is_none() {
                match idle_turn(scope, helpers) {
                    Ok(next) => next_timer = next,
                    Err(why) => dead = Some(why),
                }
            }
            if dead == Some(Dead::Terminated) {
                break;
            }
            let wait = next_timer.map(web::until_ms);
            match input.next_within(wait) {
                Next::Msg(HostMsg::Invoke {
                    exec_id: id,
                    invoke_id,
                    request,
                    ..
                }) if id == exec_id => {
                    let result = match dead {
                        Some(Dead::Memory) => Err(memory(memory_limit_mib)),
                        Some(Dead::Terminated) => Err(fail(FailureCode::Timeout, &[])),
                        None => {
                            let scope = &mut v8::HandleScope::new(scope);
                            let handler = v8::Local::new(scope, &handler);
                            let this = v8::Local::new(scope, &this);
                            let call = Call {
                                helpers,
                                exec_id,
                                memory_limit_mib,
                            };
                            invoke(scope, &call, handler, this, request, input)
                        }
                    };
                    // A bound's failure ends the execution: the isolate must go.
                    let ends = matches!(&result, Err(e) if e.code == FailureCode::MemoryLimit.as_str()
                        || e.code == FailureCode::Timeout.as_str());
                    send(&WorkerMsg::Invoked {
                        exec_id,
                        invoke_id,
                        result,
                    });
                    if ends {
                        break;
                    }
                }
                Next::Msg(
                    HostMsg::CloseHandles { exec_id: id } | HostMsg::Cancel { exec_id: id },
                ) if id == exec_id => break,
                Next::Msg(HostMsg::FetchResult {
                    exec_id: id,
                    call_id,
                    result,
                }) if id == exec_id && dead.is_none() => {
                    let scope = &mut v8::HandleScope::new(scope);
                    let alloc = v8::Local::new(scope, &helpers.alloc_bytes);
                    host::settle_fetch(scope, alloc, call_id, result);
                }
                Next::Msg(_) | Next::Timeout => {}
                // The host is gone: the caller's loop sees the closed pipe too.
                Next::Closed => break,
            }
        }
    }
    current.set(None);
    // Drop every Global the execution parked while the isolate is still alive.
    drop(prepared.isolate.remove_slot::<RunState>());
    drop((handler, this));
    prepared
}

/// Fires due timers and runs their microtasks; returns the next timer's deadline.
fn idle_turn(
    scope: &mut v8::HandleScope,
    helpers: &crate::helpers::Helpers,
) -> Result<Option<f64>, Dead> {
    let run_timers = v8::Local::new(scope, &helpers.run_timers);
    loop {
        scope.perform_microtask_checkpoint();
        let used = run::heap_used(scope);
        METER.sample_heap(used);
        if METER.heap_exhausted() {
            return Err(Dead::Memory);
        }
        if scope.is_execution_terminating() {
            return Err(Dead::Terminated);
        }
        let undefined = v8::undefined(scope).into();
        let next = run_timers
            .call(scope, undefined, &[])
            .and_then(|v| v.number_value(scope));
        match next {
            Some(-2.0) => continue,
            Some(n) if n >= 0.0 => return Ok(Some(n)),
            Some(_) => return Ok(None),
            None if METER.heap_exhausted() => return Err(Dead::Memory),
            None => return Err(Dead::Terminated),
        }
    }
}

struct Call<'a> {
    helpers: &'a crate::helpers::Helpers,
    exec_id: u64,
    memory_limit_mib: u32,
}

fn memory(mib: u32) -> RunError {
    fail(FailureCode::MemoryLimit, &[("mib", &mib.to_string())])
}

/// One invocation: the handler gets a real Request; its answer is the Response's parts.
fn invoke(
    scope: &mut v8::HandleScope,
    call: &Call,
    handler: v8::Local<v8::Function>,
    this: v8::Local<v8::Value>,
    request: WireRequest,
    input: &mut impl HostInput,
) -> Result<WireResponse, RunError> {
    METER.start_invocation();
    let helpers = call.helpers;
    let tc = &mut v8::TryCatch::new(scope);
    let promise = (|| {
        let invoke_fetch = v8::Local::new(tc, &helpers.invoke_fetch);
        let alloc = v8::Local::new(tc, &helpers.alloc_bytes);
        let method = v8::String::new(tc, &request.method)?.into();
        let url = v8::String::new(tc, &request.url)?.into();
        let headers = host::headers_to_js(tc, &request.headers)?;
        let body = host::bytes_to_js(tc, alloc, request.body.as_deref())?;
        let undefined = v8::undefined(tc).into();
        let args = [handler.into(), this, method, url, headers, body];
        let returned = invoke_fetch.call(tc, undefined, &args)?;
        v8::Local::<v8::Promise>::try_from(returned).ok()
    })();
    let bound = |tc: &mut v8::TryCatch<v8::HandleScope>| {
        if METER.heap_exhausted() || METER.refused() {
            memory(call.memory_limit_mib)
        } else if tc.is_execution_terminating() || tc.has_terminated() {
            fail(FailureCode::Timeout, &[])
        } else {
            let why = tc
                .exception()
                .map(|e| e.to_rust_string_lossy(tc))
                .unwrap_or_else(|| "the request could not be built".into());
            fail(FailureCode::HandlerError, &[("detail", &why)])
        }
    };
    let Some(promise) = promise else {
        return Err(bound(tc));
    };
    let answer = match run::settle(tc, helpers, promise, call.exec_id, input) {
        Settled::Fulfilled(v) => v,
        Settled::Stuck => {
            let text = FailureCode::NeverSettled.template();
            return Err(fail(FailureCode::HandlerError, &[("detail", text)]));
        }
        Settled::Rejected(reason) => {
            if METER.heap_exhausted() || METER.refused() {
                return Err(memory(call.memory_limit_mib));
            }
            let detail = run::describe_throw(tc, helpers, reason);
            return Err(fail(FailureCode::HandlerError, &[("detail", &detail)]));
        }
        Settled::Stopped => return Err(bound(tc)),
    };
    if METER.heap_exhausted() {
        return Err(memory(call.memory_limit_mib));
    }
    read_answer(tc, answer)
}

/// `['ok', status, statusText, headers, bytes|null] | ['not-response'] | ['threw', message]`
/// (js/handles.js) as the invocation's result.
fn read_answer(
    scope: &mut v8::HandleScope,
    answer: v8::Local<v8::Value>,
) -> Result<WireResponse, RunError> {
    let malformed = || {
        fail(
            FailureCode::Internal,
            &[("detail", "the handle's answer could not be read")],
        )
    };
    let list = v8::Local::<v8::Array>::try_from(answer).map_err(|_| malformed())?;
    let kind = list.get_index(scope, 0).ok_or_else(malformed)?;
    let kind = kind.to_rust_string_lossy(scope);
    match kind.as_str() {
        "not-response" => Err(fail(FailureCode::HandleNotResponse, &[])),
        "threw" => {
            let message = list.get_index(scope, 1).ok_or_else(malformed)?;
            let detail = message.to_rust_string_lossy(scope);
            Err(fail(FailureCode::HandlerError, &[("detail", &detail)]))
        }
        "ok" => {
            let status = list
                .get_index(scope, 1)
                .and_then(|v| v.uint32_value(scope))
                .ok_or_else(malformed)?;
            let status_text = list
                .get_index(scope, 2)
                .map(|v| v.to_rust_string_lossy(scope))
                .ok_or_else(malformed)?;
            let headers = list.get_index(scope, 3).ok_or_else(malformed)?;
            let headers = host::string_pairs(scope, headers);
            let body = match list.get_index(scope, 4) {
                Some(v) => match v8::Local::<v8::ArrayBufferView>::try_from(v) {
                    Ok(view) => {
                        let mut bytes = vec![0u8; view.byte_length()];
                        view.copy_contents(&mut bytes);
                        Some(bytes)
                    }
                    Err(_) => None,
                },
                None => None,
            };
            Ok(WireResponse {
                // Outside u16 is outside the wire shape: the host refuses status 0 alike.
                status: u16::try_from(status).unwrap_or(0),
                status_text,
                headers,
                body,
                url: String::new(),
                redirected: false,
            })
        }
        _ => Err(malformed()),
    }
}

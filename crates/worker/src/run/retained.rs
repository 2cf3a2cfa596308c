//! A retained execution (docs/handles.md): the run returned a request handler and asked to keep
//! it, so its isolate lives on. The worker serves it until it ends: invocations one at a time,
//! the isolate's timers in between, fetch answers for its handlers and timers. It ends on
//! `CloseHandles` or a `Cancel` (the host's close, idle bound or an invocation's time bound),
//! or when a bound is hit (the isolate filled its heap): then the next `Invoke` is answered with
//! the memory text. The caller disposes the returned isolate and says `Ready`.

use codemode_protocol::{FailureCode, RunError, WireRequest, WireResponse, WorkerMsg};

use crate::engine::isolate::Prepared;
use crate::engine::memory::METER;
use crate::engine::modules::ModuleMap;
use crate::natives::host::{self, Calls};
use crate::process::budget::{self, Counted};
use crate::process::io::CurrentRun;
use crate::process::last_words;
use crate::process::link::{HostInput, Outbox};
use crate::run::event_loop::{self, heap_used, settle, Deliver, EventLoop, Heard, Settled, Turn};
use crate::run::failure::{cpu_limit, describe_throw, fail};

pub struct Retained {
    // Globals first: fields drop in order, and a Global must go before its isolate.
    pub handler: v8::Global<v8::Function>,
    pub this: v8::Global<v8::Value>,
    pub exec_id: u64,
    pub memory_limit_mib: u32,
    /// The run's CPU budget, which each invocation gets afresh (its fetch limit stays with
    /// the execution's calls, counted afresh per invocation too).
    pub cpu_limit_ms: Option<u32>,
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
        cpu_limit_ms,
        mut prepared,
    } = retained;
    current.set(Some((exec_id, prepared.isolate.thread_safe_handle())));
    {
        v8::scope!(let scope, &mut prepared.isolate);
        let context = v8::Local::new(scope, &prepared.context);
        let scope = &mut v8::ContextScope::new(scope, context);
        let mut lp = EventLoop::new(&prepared.helpers, exec_id);
        let mut dead = None;
        loop {
            // The isolate's timers fire while nobody invokes it; between two invocations it
            // runs nothing else.
            let mut next_timer = None;
            if dead.is_none() {
                match idle_turn(scope, &lp) {
                    Ok(next) => next_timer = next,
                    Err(why) => dead = Some(why),
                }
            }
            if dead == Some(Dead::Terminated) {
                break;
            }
            // A full isolate takes no more answers. Tool calls ended with the run that granted
            // the handle (their calls reject inside the isolate).
            let deliver = Deliver {
                tool_results: false,
                fetch_results: dead.is_none(),
            };
            match event_loop::wait(scope, &lp, input, next_timer, deliver) {
                Heard::Invoke { invoke_id, request } => {
                    let result = match dead {
                        Some(Dead::Memory) => Err(memory(memory_limit_mib)),
                        Some(Dead::Terminated) => Err(fail(FailureCode::Timeout, &[])),
                        None => {
                            v8::scope!(let scope, scope);
                            if let Some(calls) = scope.get_slot_mut::<Calls>() {
                                calls.begin_invocation();
                            }
                            budget::arm(scope, current, cpu_limit_ms);
                            let handler = v8::Local::new(scope, &handler);
                            let this = v8::Local::new(scope, &this);
                            last_words::running(exec_id, Some(invoke_id), memory_limit_mib);
                            let result = invoke(
                                scope,
                                &mut lp,
                                memory_limit_mib,
                                handler,
                                this,
                                request,
                                input,
                            );
                            last_words::idle();
                            match (budget::disarm(scope, current), cpu_limit_ms) {
                                (Some(Counted { spent: true, .. }), Some(ms)) => Err(cpu_limit(ms)),
                                _ => result,
                            }
                        }
                    };
                    // A bound's failure ends the execution: the isolate must go.
                    let ends = matches!(&result, Err(e) if [
                        FailureCode::MemoryLimit,
                        FailureCode::Timeout,
                        FailureCode::CpuLimit,
                    ]
                    .iter()
                    .any(|bound| e.code == bound.as_str()));
                    send(&WorkerMsg::Invoked {
                        exec_id,
                        invoke_id,
                        result,
                    });
                    if ends {
                        break;
                    }
                }
                // Closed: the host is gone, and the caller's loop sees the closed pipe too.
                Heard::Stop | Heard::Closed => break,
                Heard::Nothing => {}
            }
        }
    }
    current.set(None);
    // Drop every Global the execution parked while the isolate is still alive.
    drop(prepared.isolate.remove_slot::<Calls>());
    drop(prepared.isolate.remove_slot::<ModuleMap>());
    drop((handler, this));
    prepared
}

/// Fires due timers and runs their microtasks (one turn of the event loop); returns the next
/// timer's deadline.
fn idle_turn(scope: &mut v8::PinScope, lp: &EventLoop) -> Result<Option<f64>, Dead> {
    let turn = event_loop::turn(scope, lp, |scope| {
        METER.sample_heap(heap_used(scope));
        if METER.heap_exhausted() {
            Some(Dead::Memory)
        } else if scope.is_execution_terminating() {
            Some(Dead::Terminated)
        } else {
            None
        }
    });
    match turn {
        Turn::Ended(dead) => Err(dead),
        Turn::Wait(next) => Ok(next),
        Turn::Broken if METER.heap_exhausted() => Err(Dead::Memory),
        Turn::Broken => Err(Dead::Terminated),
    }
}

fn memory(mib: u32) -> RunError {
    fail(FailureCode::MemoryLimit, &[("mib", &mib.to_string())])
}

/// One invocation: the handler gets a real Request; its answer is the Response's parts.
fn invoke(
    scope: &mut v8::PinScope,
    lp: &mut EventLoop,
    memory_limit_mib: u32,
    handler: v8::Local<v8::Function>,
    this: v8::Local<v8::Value>,
    request: WireRequest,
    input: &mut impl HostInput,
) -> Result<WireResponse, RunError> {
    METER.start_invocation();
    let helpers = lp.helpers;
    v8::tc_scope!(let tc, scope);
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
    let bound = |tc: &mut v8::PinnedRef<v8::TryCatch<v8::HandleScope>>| {
        if METER.heap_exhausted() || METER.refused() {
            memory(memory_limit_mib)
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
    let answer = match settle(tc, lp, promise, input) {
        Settled::Fulfilled(v) => v,
        Settled::Stuck => {
            let text = FailureCode::NeverSettled.template();
            return Err(fail(FailureCode::HandlerError, &[("detail", text)]));
        }
        Settled::Rejected(reason) => {
            if METER.heap_exhausted() || METER.refused() {
                return Err(memory(memory_limit_mib));
            }
            let detail = describe_throw(tc, helpers, reason);
            return Err(fail(FailureCode::HandlerError, &[("detail", &detail)]));
        }
        Settled::Stopped => return Err(bound(tc)),
    };
    if METER.heap_exhausted() {
        return Err(memory(memory_limit_mib));
    }
    read_answer(tc, answer)
}

/// `['ok', status, statusText, headers, bytes|null] | ['not-response'] | ['threw', message]`
/// (js/handles.js) as the invocation's result.
fn read_answer(
    scope: &mut v8::PinScope,
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

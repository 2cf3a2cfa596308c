//! The natives that talk to the host: tool calls and fetches, and the settling of the promises
//! they return when the host answers. Their state, [`Calls`], sits in an isolate slot for as long
//! as the execution lasts (a retained one's included). One file over 500 lines: tool calls and
//! fetches share that state, its bounds and its settle path.

use std::collections::HashMap;

use codemode_protocol::{
    limits, Budgets, FailureCode, Outbound, Redirect, WireRequest, WireResponse, WorkerMsg,
};

use crate::natives::clone;
use crate::process::link::Outbox;

/// The execution's requests to the host: where they go, and the promises waiting for answers.
pub struct Calls {
    exec_id: u64,
    /// Where the execution's requests to the host (tool calls, fetches) go.
    send: Outbox,
    /// The promise of each call in flight, by call id (tool calls and fetches share ids).
    pending: HashMap<u32, v8::Global<v8::PromiseResolver>>,
    next_call: u32,
    /// Tool calls sent to the host, by the run.
    tool_calls: u32,
    /// Fetches sent to the host, by the run (or, retained, by the invocation in progress).
    fetches: u32,
    /// The counts its requests are held to (`tool_call_limit`, `fetch_limit`).
    budgets: Budgets,
    outbound: Outbound,
    /// The run ended and its isolate is retained (docs/handles.md): the dispatch ended with the
    /// run, so tool calls reject inside the isolate.
    completed: bool,
    /// The run is replayable: it says when it waits ([`Calls::idle`]).
    replayable: bool,
    /// A request went to the host since the run last said it waits.
    sent_since_idle: bool,
    /// An answer was handed to the program since the run last said it waits.
    answered_since_idle: bool,
    /// The run said it waits and has neither sent nor been handed anything since: the host
    /// may rest its time bound, so the run says when it computes again ([`Calls::wake`]).
    resting: bool,
    /// The run woke from a rest on its own (a timer fired): it says again when it next waits.
    woke: bool,
}

impl Calls {
    pub fn new(
        exec_id: u64,
        outbound: Outbound,
        budgets: Budgets,
        send: Outbox,
        replayable: bool,
    ) -> Self {
        Calls {
            exec_id,
            send,
            pending: HashMap::new(),
            next_call: 0,
            tool_calls: 0,
            fetches: 0,
            budgets,
            outbound,
            completed: false,
            replayable,
            sent_since_idle: false,
            answered_since_idle: false,
            resting: false,
            woke: false,
        }
    }

    /// The run is about to wait (run/event_loop.rs): a replayable one says so
    /// (`WorkerMsg::Idle`) if it sent a request since it last did, woke from its last wait
    /// ([`Calls::wake`]), or was handed an answer and has no other in flight. A retained
    /// execution's handlers (after the run completed) never say it.
    pub fn idle(&mut self) {
        if !self.replayable || self.completed {
            return;
        }
        let answered = self.answered_since_idle && self.pending.is_empty();
        if self.sent_since_idle || answered || self.woke {
            self.sent_since_idle = false;
            self.answered_since_idle = false;
            self.woke = false;
            self.resting = true;
            (self.send)(&WorkerMsg::Idle {
                exec_id: self.exec_id,
            });
        }
    }

    /// The run's wait ended (run/event_loop.rs): if it said it waits, it says `Awake` before it
    /// computes, whatever ended the wait (a timer due, an answer: the host may have rested the
    /// bound at the `Idle` while that answer was already on its way), so a time bound the host
    /// rested runs again first (docs/approvals.md, "Callback mode").
    pub fn wake(&mut self) {
        if self.resting {
            self.resting = false;
            self.woke = true;
            (self.send)(&WorkerMsg::Awake {
                exec_id: self.exec_id,
            });
        }
    }

    /// Calls and fetches waiting for the host's answer.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Tool calls and fetches sent to the host so far.
    pub fn counts(&self) -> (u32, u32) {
        (self.tool_calls, self.fetches)
    }

    /// An invocation of the retained execution starts: its fetches are counted afresh.
    pub fn begin_invocation(&mut self) {
        self.fetches = 0;
    }

    /// The run that made the calls ended; its isolate is retained for its handlers.
    pub fn complete(&mut self) {
        self.completed = true;
    }
}

/// The limit a count has reached (`count` gives the count so far and its limit): the next
/// request past it is refused.
fn spent(scope: &mut v8::PinScope, count: impl Fn(&Calls) -> (u32, Option<u32>)) -> Option<u32> {
    let (made, limit) = count(scope.get_slot::<Calls>()?);
    limit.filter(|&limit| made >= limit)
}

/// A pending promise set as the return value, with its resolver.
fn returned_promise<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    rv: &mut v8::ReturnValue,
) -> Option<v8::Local<'s, v8::PromiseResolver>> {
    let resolver = v8::PromiseResolver::new(scope)?;
    rv.set(resolver.get_promise(scope).into());
    Some(resolver)
}

/// Parks `resolver` under a fresh call id until the host answers; returns the exec id, the
/// call id and where to send the request. `None` when the run already has the most calls in
/// flight it may have: `resolver` is then rejected with `CALLS_IN_FLIGHT`.
fn park(
    scope: &mut v8::PinScope,
    resolver: v8::Local<v8::PromiseResolver>,
) -> Option<(u64, u32, Outbox)> {
    // The host holds a worker to this bound too (a worker past it is taken as compromised).
    if scope
        .get_slot::<Calls>()
        .is_some_and(|s| s.pending.len() >= limits::CALLS_IN_FLIGHT)
    {
        let limit = limits::CALLS_IN_FLIGHT.to_string();
        let text = FailureCode::CallsInFlight.render(&[("limit", &limit)]);
        reject(scope, resolver, Class::Error, &text);
        return None;
    }
    let global = v8::Global::new(scope, resolver);
    let state = scope.get_slot_mut::<Calls>()?;
    let call_id = state.next_call;
    state.next_call = state.next_call.wrapping_add(1);
    state.pending.insert(call_id, global);
    state.sent_since_idle = true;
    state.resting = false;
    Some((state.exec_id, call_id, state.send))
}

/// `callTool(provider, tool, argsArray) -> Promise`: sends the call to the host and parks a
/// resolver until the answer comes back.
pub fn call_tool(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let Some(resolver) = returned_promise(scope, &mut rv) else {
        return;
    };
    if scope.get_slot::<Calls>().is_none_or(|s| s.completed) {
        let text = FailureCode::ExecutionCompleted.template();
        reject(scope, resolver, Class::Error, text);
        return;
    }
    let provider = args.get(0).to_rust_string_lossy(scope);
    let tool = args.get(1).to_rust_string_lossy(scope);
    if let Some(limit) = spent(scope, |calls| {
        (calls.tool_calls, calls.budgets.tool_call_limit)
    }) {
        let text = FailureCode::ToolCallLimit.render(&[
            ("provider", &provider),
            ("tool", &tool),
            ("limit", &limit.to_string()),
        ]);
        return reject(scope, resolver, Class::Error, &text);
    }
    let payload = match clone::serialize(scope, args.get(2)) {
        Ok(bytes) => bytes,
        Err(detail) => {
            let text = FailureCode::ToolArgsNotCloneable.render(&[
                ("provider", &provider),
                ("tool", &tool),
                ("detail", &detail),
            ]);
            reject(scope, resolver, Class::Error, &text);
            return;
        }
    };
    if payload.len() > limits::TOOL_PAYLOAD_BYTES {
        let (size, limit) = (
            payload.len().to_string(),
            limits::TOOL_PAYLOAD_BYTES.to_string(),
        );
        let text = FailureCode::ToolPayloadTooLarge.render(&[
            ("what", "arguments"),
            ("provider", &provider),
            ("tool", &tool),
            ("size", &size),
            ("limit", &limit),
        ]);
        reject(scope, resolver, Class::Error, &text);
        return;
    }
    let Some((exec_id, call_id, send)) = park(scope, resolver) else {
        return;
    };
    if let Some(state) = scope.get_slot_mut::<Calls>() {
        state.tool_calls += 1;
    }
    send(&WorkerMsg::ToolCall {
        exec_id,
        call_id,
        provider,
        tool,
        args: payload,
    });
}

/// What a rejection is made of: an `Error` for a tool call (as the host's dispatch rejects), a
/// `TypeError` for fetch (as the Fetch standard's network errors are).
#[derive(Clone, Copy)]
enum Class {
    Error,
    TypeError,
}

/// Rejects `resolver` with a new error of `class` whose message is `text`.
fn reject(
    scope: &mut v8::PinScope,
    resolver: v8::Local<v8::PromiseResolver>,
    class: Class,
    text: &str,
) {
    if let Some(msg) = v8::String::new(scope, text) {
        let err = match class {
            Class::Error => v8::Exception::error(scope, msg),
            Class::TypeError => v8::Exception::type_error(scope, msg),
        };
        resolver.reject(scope, err);
    }
}

/// The promise of call `call_id`, taken out of the calls in flight (it settles once); `None`
/// for an answer to no call in flight.
fn take_call<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    call_id: u32,
) -> Option<v8::Local<'s, v8::PromiseResolver>> {
    let calls = scope.get_slot_mut::<Calls>()?;
    let global = calls.pending.remove(&call_id)?;
    // Still `resting`: the loop says Awake after the wait that delivered this (Calls::wake),
    // before the program computes on it; the host may have rested the bound meanwhile.
    calls.answered_since_idle = true;
    Some(v8::Local::new(scope, global))
}

/// Settles the parked tool call `call_id` with the host's answer.
pub fn settle_tool_call(scope: &mut v8::PinScope, call_id: u32, ok: bool, payload: &[u8]) {
    let Some(resolver) = take_call(scope, call_id) else {
        return;
    };
    if !ok {
        let text = String::from_utf8_lossy(payload);
        reject(scope, resolver, Class::Error, &text);
        return;
    }
    match clone::deserialize(scope, payload) {
        Some(value) => {
            resolver.resolve(scope, value);
        }
        None => reject(
            scope,
            resolver,
            Class::Error,
            FailureCode::ToolAnswerUnreadable.template(),
        ),
    }
}

/// The private key that marks an Error the runtime made for a denial, holding the denial's
/// text: the program can read the error's `code` and `message`, forge or rewrite them, but not
/// this mark, so an uncaught denial is told from a program's own throw and reported with the
/// text the runtime gave it ([`denial_text`]).
fn denial_mark<'s>(scope: &mut v8::PinScope<'s, '_>) -> Option<v8::Local<'s, v8::Private>> {
    let name = v8::String::new(scope, "codemode.denial")?;
    Some(v8::Private::for_api(scope, Some(name)))
}

/// Rejects the parked tool call `call_id` with its denial (`text`, the `APPROVAL_DENIED`
/// text): an Error whose `code` is `APPROVAL_DENIED`, marked as the runtime's.
pub fn deny_tool_call(scope: &mut v8::PinScope, call_id: u32, text: &str) {
    let Some(resolver) = take_call(scope, call_id) else {
        return;
    };
    let Some(msg) = v8::String::new(scope, text) else {
        return;
    };
    let err = v8::Exception::error(scope, msg);
    if let Ok(obj) = v8::Local::<v8::Object>::try_from(err) {
        let code = FailureCode::ApprovalDenied.as_str();
        if let (Some(key), Some(value)) =
            (v8::String::new(scope, "code"), v8::String::new(scope, code))
        {
            // Defined, not assigned: no setter of the program's runs here.
            obj.create_data_property(scope, key.into(), value.into());
        }
        if let Some(mark) = denial_mark(scope) {
            obj.set_private(scope, mark, msg.into());
        }
    }
    resolver.reject(scope, err);
}

/// The text of a denial's Error ([`deny_tool_call`]) as the runtime made it, whatever the
/// program did to its `message` since; `None` for any other value.
pub fn denial_text(scope: &mut v8::PinScope, value: v8::Local<v8::Value>) -> Option<String> {
    let obj = v8::Local::<v8::Object>::try_from(value).ok()?;
    let mark = denial_mark(scope)?;
    if !obj.has_private(scope, mark).unwrap_or(false) {
        return None;
    }
    let text = obj.get_private(scope, mark)?;
    Some(text.to_rust_string_lossy(scope))
}

/// `[[name, value], ...]` from JS, skipping entries that are not pairs.
pub fn string_pairs(scope: &mut v8::PinScope, v: v8::Local<v8::Value>) -> Vec<(String, String)> {
    let Ok(list) = v8::Local::<v8::Array>::try_from(v) else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(list.length() as usize);
    for i in 0..list.length() {
        let Some(pair) = list
            .get_index(scope, i)
            .and_then(|p| v8::Local::<v8::Array>::try_from(p).ok())
        else {
            continue;
        };
        let k = pair
            .get_index(scope, 0)
            .map(|v| v.to_rust_string_lossy(scope));
        let v = pair
            .get_index(scope, 1)
            .map(|v| v.to_rust_string_lossy(scope));
        if let (Some(k), Some(v)) = (k, v) {
            out.push((k, v));
        }
    }
    out
}

/// `fetch(method, url, headers, body|null, redirect) -> Promise<raw response>`: blocked runs reject at
/// once; others send the request to the host (which performs or routes it).
pub fn fetch(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let Some(resolver) = returned_promise(scope, &mut rv) else {
        return;
    };
    let url = args.get(1).to_rust_string_lossy(scope);
    let outbound = scope.get_slot::<Calls>().map(|s| s.outbound);
    if outbound.is_none_or(|o| o == Outbound::Blocked) {
        return reject(
            scope,
            resolver,
            Class::TypeError,
            FailureCode::NetworkClosed.template(),
        );
    }
    if let Some(limit) = spent(scope, |calls| (calls.fetches, calls.budgets.fetch_limit)) {
        let text = FailureCode::FetchLimit.render(&[("url", &url), ("limit", &limit.to_string())]);
        return reject(scope, resolver, Class::TypeError, &text);
    }
    let method = args.get(0).to_rust_string_lossy(scope);
    let headers = string_pairs(scope, args.get(2));
    // web/request.js admits only the three modes; anything else follows, as by default.
    let redirect = Redirect::parse(&args.get(4).to_rust_string_lossy(scope)).unwrap_or_default();
    let body = match v8::Local::<v8::ArrayBufferView>::try_from(args.get(3)) {
        Ok(view) => {
            if view.byte_length() > limits::FETCH_BODY_BYTES {
                let limit = limits::FETCH_BODY_BYTES.to_string();
                let text = FailureCode::FetchTooLarge.render(&[
                    ("what", "request"),
                    ("url", &url),
                    ("limit", &limit),
                ]);
                return reject(scope, resolver, Class::TypeError, &text);
            }
            let mut bytes = vec![0u8; view.byte_length()];
            view.copy_contents(&mut bytes);
            Some(bytes)
        }
        Err(_) => None,
    };
    let Some((exec_id, call_id, send)) = park(scope, resolver) else {
        return;
    };
    if let Some(state) = scope.get_slot_mut::<Calls>() {
        state.fetches += 1;
    }
    send(&WorkerMsg::Fetch {
        exec_id,
        call_id,
        request: WireRequest {
            method,
            url,
            headers,
            body,
            redirect,
        },
    });
}

/// `[[name, value], ...]` for JS.
pub fn headers_to_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    headers: &[(String, String)],
) -> Option<v8::Local<'s, v8::Value>> {
    let mut pairs = Vec::with_capacity(headers.len());
    for (k, v) in headers {
        let k = v8::String::new(scope, k)?.into();
        let v = v8::String::new(scope, v)?.into();
        pairs.push(v8::Array::new_with_elements(scope, &[k, v]).into());
    }
    Some(v8::Array::new_with_elements(scope, &pairs).into())
}

/// A body for JS: a Uint8Array allocated through `alloc` (so it is metered) holding `bytes`,
/// or `null`.
pub fn bytes_to_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    alloc: v8::Local<v8::Function>,
    bytes: Option<&[u8]>,
) -> Option<v8::Local<'s, v8::Value>> {
    let Some(bytes) = bytes else {
        return Some(v8::null(scope).into());
    };
    let undefined = v8::undefined(scope).into();
    let len = v8::Number::new(scope, bytes.len() as f64).into();
    let view = alloc.call(scope, undefined, &[len])?;
    let typed = v8::Local::<v8::ArrayBufferView>::try_from(view).ok()?;
    let data = typed.data() as *mut u8;
    if typed.byte_length() != bytes.len() || (data.is_null() && !bytes.is_empty()) {
        return None;
    }
    if !bytes.is_empty() {
        // SAFETY: `data` addresses the `bytes.len()` bytes of the fresh Uint8Array just
        // allocated; no JS runs during the copy.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len()) };
    }
    Some(view)
}

/// Settles fetch `call_id`: a response becomes `{ status, statusText, headers, body, url,
/// redirected }` (the body allocated through `alloc`, so it is metered), an error a TypeError.
pub fn settle_fetch(
    scope: &mut v8::PinScope,
    alloc: v8::Local<v8::Function>,
    call_id: u32,
    result: Result<WireResponse, String>,
) {
    let Some(resolver) = take_call(scope, call_id) else {
        return;
    };
    let response = match result {
        Ok(r) => r,
        Err(text) => return reject(scope, resolver, Class::TypeError, &text),
    };
    v8::tc_scope!(let tc, scope);
    let built = (|| {
        let obj = v8::Object::new(tc);
        let set = |tc: &mut v8::PinnedRef<v8::TryCatch<v8::HandleScope>>,
                   k: &str,
                   v: v8::Local<v8::Value>| {
            let key = v8::String::new(tc, k)?;
            obj.set(tc, key.into(), v)
        };
        let status = v8::Integer::new(tc, response.status as i32).into();
        set(tc, "status", status)?;
        let text = v8::String::new(tc, &response.status_text)?.into();
        set(tc, "statusText", text)?;
        let headers = headers_to_js(tc, &response.headers)?;
        set(tc, "headers", headers)?;
        let body = bytes_to_js(tc, alloc, response.body.as_deref())?;
        set(tc, "body", body)?;
        let url = v8::String::new(tc, &response.url)?.into();
        set(tc, "url", url)?;
        let redirected = v8::Boolean::new(tc, response.redirected).into();
        set(tc, "redirected", redirected)?;
        Some(obj)
    })();
    match built {
        Some(obj) => {
            resolver.resolve(tc, obj.into());
        }
        None => {
            let reason = tc.exception();
            match reason {
                Some(e) => {
                    resolver.reject(tc, e);
                }
                None => {
                    let detail = "fetch: the response could not be built";
                    let text = FailureCode::Internal.render(&[("detail", detail)]);
                    reject(tc, resolver, Class::TypeError, &text)
                }
            }
        }
    }
}

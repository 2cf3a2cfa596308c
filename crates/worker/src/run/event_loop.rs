//! The event loop of an execution's isolate, one for a run and for a retained execution alike:
//! a [`turn`] runs microtasks and the runtime's due timers, [`wait`] waits for the host until
//! the next timer's deadline and hands its answers (tool calls, fetches) to the promises that
//! wait for them. [`settle`] drives both until a promise settles (a run's program, an
//! invocation's handler); retained.rs drives them between invocations.

use std::time::Duration;

use codemode_protocol::{HostMsg, WireRequest};

use crate::engine::helpers::Helpers;
use crate::engine::memory::METER;
use crate::natives::host::{self, Calls};
use crate::natives::web;
use crate::process::io::Next;
use crate::process::link::HostInput;

/// One execution's loop: the runtime it calls, the execution the host's messages must name.
pub(crate) struct EventLoop<'a> {
    pub helpers: &'a Helpers,
    pub exec_id: u64,
    /// Largest heap size sampled while [`settle`] waited.
    pub heap_peak: usize,
}

impl<'a> EventLoop<'a> {
    pub fn new(helpers: &'a Helpers, exec_id: u64) -> Self {
        EventLoop {
            helpers,
            exec_id,
            heap_peak: 0,
        }
    }
}

/// How a turn ended.
pub(crate) enum Turn<T> {
    /// The caller's check said stop, with this.
    Ended(T),
    /// No timer is due: the next one's deadline on the `now` clock, if one is pending.
    Wait(Option<f64>),
    /// The timers could not run (the isolate was terminated, or its heap filled).
    Broken,
}

/// Runs microtasks, then `check`, then the due timers, again while a timer fired (so a timer's
/// microtasks run before the next timer, and `check` sees each step).
pub(crate) fn turn<'s, T>(
    scope: &mut v8::PinScope<'s, '_>,
    lp: &EventLoop,
    mut check: impl FnMut(&mut v8::PinScope<'s, '_>) -> Option<T>,
) -> Turn<T> {
    let run_timers = v8::Local::new(scope, &lp.helpers.run_timers);
    loop {
        scope.perform_microtask_checkpoint();
        if let Some(ended) = check(scope) {
            return Turn::Ended(ended);
        }
        // -2: a timer fired (run its microtasks, then look again); -1: none pending;
        // otherwise the next deadline on the `now` clock.
        let undefined = v8::undefined(scope).into();
        match run_timers
            .call(scope, undefined, &[])
            .and_then(|v| v.number_value(scope))
        {
            Some(-2.0) => continue,
            Some(n) if n >= 0.0 => return Turn::Wait(Some(n)),
            Some(_) => return Turn::Wait(None),
            None => return Turn::Broken,
        }
    }
}

/// Which of the host's answers [`wait`] hands to the isolate.
#[derive(Clone, Copy)]
pub(crate) struct Deliver {
    pub tool_results: bool,
    pub fetch_results: bool,
}

impl Deliver {
    pub const ALL: Deliver = Deliver {
        tool_results: true,
        fetch_results: true,
    };
}

/// What the host said that is the caller's to act on.
pub(crate) enum Heard {
    /// Nothing: the deadline passed, an answer was delivered, or the message was stale.
    Nothing,
    /// An invocation of this execution's handle.
    Invoke {
        invoke_id: u64,
        request: WireRequest,
    },
    /// A Cancel or CloseHandles for this execution.
    Stop,
    /// The host is gone: nothing will answer.
    Closed,
}

/// Waits at most until `deadline` (a timer's, on the `now` clock; forever when `None`) for a
/// message from the host, and settles the promise an answer of this execution is for.
pub(crate) fn wait(
    scope: &mut v8::PinScope,
    lp: &EventLoop,
    input: &mut impl HostInput,
    deadline: Option<f64>,
    deliver: Deliver,
) -> Heard {
    let exec_id = lp.exec_id;
    let within: Option<Duration> = deadline.map(web::until_ms);
    let answers = scope
        .get_slot::<crate::natives::host::Calls>()
        .is_some_and(|calls| calls.in_flight() > 0);
    match input.next_within(within, answers) {
        Next::Msg(HostMsg::ToolResult {
            exec_id: id,
            call_id,
            ok,
            payload,
        }) if id == exec_id && deliver.tool_results => {
            v8::scope!(let scope, scope);
            host::settle_tool_call(scope, call_id, ok, &payload);
            Heard::Nothing
        }
        Next::Msg(HostMsg::ToolDenied {
            exec_id: id,
            call_id,
            message,
        }) if id == exec_id && deliver.tool_results => {
            v8::scope!(let scope, scope);
            host::deny_tool_call(scope, call_id, &message);
            Heard::Nothing
        }
        Next::Msg(HostMsg::FetchResult {
            exec_id: id,
            call_id,
            result,
        }) if id == exec_id && deliver.fetch_results => {
            v8::scope!(let scope, scope);
            let alloc = v8::Local::new(scope, &lp.helpers.alloc_bytes);
            host::settle_fetch(scope, alloc, call_id, result);
            Heard::Nothing
        }
        Next::Msg(HostMsg::Invoke {
            exec_id: id,
            invoke_id,
            request,
            ..
        }) if id == exec_id => Heard::Invoke { invoke_id, request },
        Next::Msg(HostMsg::Cancel { exec_id: id } | HostMsg::CloseHandles { exec_id: id })
            if id == exec_id =>
        {
            Heard::Stop
        }
        // A stale answer or cancel for an earlier execution; an Execute cannot arrive while
        // one is in progress.
        Next::Msg(_) | Next::Timeout => Heard::Nothing,
        Next::Closed => Heard::Closed,
    }
}

/// How the wait for a promise ended.
pub(crate) enum Settled<'s> {
    Fulfilled(v8::Local<'s, v8::Value>),
    Rejected(v8::Local<'s, v8::Value>),
    /// Nothing in flight can ever settle it.
    Stuck,
    /// Terminated (cancelled by the host) or the host went away.
    Stopped,
}

/// Drives microtasks, timers and the host's answers until `promise` settles. Pending timers
/// alone do not keep an execution alive past its promise; a promise nothing can settle (no
/// call in flight, no timer pending) ends the wait at once. An invocation arriving meanwhile
/// is not this wait's (the host sends one at a time): it is ignored.
pub(crate) fn settle<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    lp: &mut EventLoop,
    promise: v8::Local<'s, v8::Promise>,
    input: &mut impl HostInput,
) -> Settled<'s> {
    loop {
        let next_timer = match turn(scope, lp, |scope| {
            if scope.is_execution_terminating() {
                return Some(Settled::Stopped);
            }
            match promise.state() {
                v8::PromiseState::Fulfilled => Some(Settled::Fulfilled(promise.result(scope))),
                v8::PromiseState::Rejected => Some(Settled::Rejected(promise.result(scope))),
                v8::PromiseState::Pending => None,
            }
        }) {
            Turn::Ended(settled) => return settled,
            Turn::Wait(next) => next,
            Turn::Broken => return Settled::Stopped,
        };
        let used = heap_used(scope);
        METER.sample_heap(used);
        lp.heap_peak = lp.heap_peak.max(used);
        if METER.heap_exhausted() {
            // Past its limit (memory.rs, `sample_heap`): the run ends here, as at the callback.
            return Settled::Stopped;
        }
        let calls = scope.get_slot_mut::<Calls>();
        let in_flight = calls.as_ref().map_or(0, |c| c.in_flight());
        if in_flight == 0 && next_timer.is_none() {
            return Settled::Stuck;
        }
        // A replayable run says it waits (WorkerMsg::Idle) when something moved.
        if let Some(calls) = calls {
            calls.idle();
        }
        match wait(scope, lp, input, next_timer, Deliver::ALL) {
            Heard::Stop | Heard::Closed => return Settled::Stopped,
            Heard::Nothing | Heard::Invoke { .. } => {}
        }
        // The run computes again, on an answer or a due timer: a rested bound runs first.
        if let Some(calls) = scope.get_slot_mut::<Calls>() {
            calls.wake();
        }
    }
}

pub(crate) fn heap_used(isolate: &mut v8::Isolate) -> usize {
    isolate.get_heap_statistics().used_heap_size()
}

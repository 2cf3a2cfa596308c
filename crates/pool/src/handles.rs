//! Retained handles (docs/handles.md): executions whose worker keeps the isolate after the run
//! because the program returned a request handler. Each holds its worker's slot until it ends;
//! its invocations run one at a time, in arrival order, each under a fresh time bound; the idle
//! bound ends one nobody invokes, and the watchdog's CPU count (limit.rs, `IdleCpu`) one
//! whose timers keep the worker busy between invocations; every ending is published once,
//! through the execution's host.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_protocol::{
    limits, Failure, FailureCode, Grant, HostMsg, RunError, WireRequest, WireResponse,
};

use crate::api::{CloseReason, Host, InvokeDone};
use crate::conduct::Violation;
use crate::limit::{timed_out, Limit, Verdict};
use crate::state::{Current, Inner, Retained, Running, State, Waiting};

/// Work to do once the state lock is released: callbacks never run under it.
pub(crate) enum Settle {
    Answer(InvokeDone, Result<WireResponse, Failure>),
    Published(Arc<dyn Host>, String, CloseReason),
}

pub(crate) fn run_all(settles: Vec<Settle>) {
    for s in settles {
        match s {
            Settle::Answer(done, result) => done(result),
            Settle::Published(host, id, reason) => host.handles_closed(&id, reason),
        }
    }
}

/// `HANDLES_CLOSED` for `id`: the same text for a closed execution and an invented id.
pub(crate) fn closed(id: &str) -> Failure {
    FailureCode::HandlesClosed.failure(&[("id", id)])
}

/// A grant must not name an execution id already in use: hosts key retained executions by it,
/// so a worker that named another tenant's would take that tenant's entry (and its invocations).
/// Checked under the same lock as [`grant`] records it. The text does not repeat the id: it
/// reaches the host of the run that forged it.
pub(crate) fn unused(st: &State, grant: &Grant) -> Result<(), Violation> {
    if st.retained.contains_key(&grant.execution_id) {
        return Err(Violation(
            "a grant whose execution id is already in use by another retained execution".into(),
        ));
    }
    Ok(())
}

/// Records a grant: the worker keeps the isolate, and its slot stays taken. The grant passed
/// [`unused`] and the worker's conduct (a canonical v4 UUID: conduct.rs) under this lock.
pub(crate) fn grant(st: &mut State, exec_id: u64, run: &Running, grant: Grant) {
    st.retained_ids.insert(exec_id, grant.execution_id.clone());
    st.retained.insert(
        grant.execution_id,
        Retained {
            exec_id,
            worker: run.worker,
            host: run.host.clone(),
            outbound: run.outbound,
            timeout_ms: run.limit.timeout_ms(),
            cpu_limit_ms: run.budgets.cpu_limit_ms,
            handles: grant.handles,
            waiting: VecDeque::new(),
            current: None,
            idle_since: Instant::now(),
            tenant: run.tenant.clone(),
        },
    );
}

/// Queues an invocation; refuses a name outside the grant, or a request too big for one frame
/// (`REQUEST_TOO_LARGE`), without reaching the worker.
pub(crate) fn invoke(
    inner: &Inner,
    id: &str,
    handle: &str,
    request: WireRequest,
    tenant: Option<&str>,
    done: InvokeDone,
) -> Result<u64, Failure> {
    let mut st = inner.lock();
    let invoke_id = st.next_invoke;
    // Another tenant's execution answers as one never granted: it learns nothing of it.
    let caller = tenant.unwrap_or(crate::tenants::UNNAMED);
    let Some(r) = st.retained.get_mut(id).filter(|r| &*r.tenant == caller) else {
        return Err(closed(id));
    };
    if !r.handles.iter().any(|h| h == handle) {
        return Err(if r.handles.is_empty() {
            FailureCode::HandleNotGranted.failure(&[("id", id), ("name", handle)])
        } else {
            let granted = r.handles.join(", ");
            FailureCode::HandleNotFound.failure(&[
                ("id", id),
                ("name", handle),
                ("granted", &granted),
            ])
        });
    }
    // Invocations run one at a time: past the pool's queue bound, the caller hears so at once
    // instead of the pool holding every request a client sends.
    let bound = inner.opts.queue_bound;
    if r.waiting.len() >= bound {
        return Err(FailureCode::QueueFull.failure(&[
            ("bound", &bound.to_string()),
            ("what", "invocations"),
            (
                "whom",
                "this execution's handles, which serve one at a time",
            ),
            ("advice", ", or raise `queueBound`"),
        ]));
    }
    let frame = HostMsg::Invoke {
        exec_id: r.exec_id,
        invoke_id,
        handle: handle.to_string(),
        request,
    }
    .encode()
    .map_err(|e| crate::schedule::too_large("invocation request", e))?;
    let done = inner.observe.track_invocation(invoke_id, done);
    r.waiting.push_back(Waiting {
        invoke_id,
        frame,
        done,
    });
    st.next_invoke += 1;
    start_next(inner, &mut st, id);
    Ok(invoke_id)
}

/// The caller aborted invocation `invoke_id` (see `Pool::abort_invocation`).
pub(crate) fn abort(inner: &Inner, invoke_id: u64) {
    let waiting = {
        let mut st = inner.lock();
        let mut found = None;
        let mut due = None;
        for r in st.retained.values_mut() {
            if let Some(c) = r.current.as_mut().filter(|c| c.invoke_id == invoke_id) {
                if !c.limit.cancelled() {
                    let now = Instant::now();
                    c.limit.stop(now);
                    inner.observe.mark_invocation_aborted(invoke_id);
                    due = Some(now);
                }
                break;
            }
            if let Some(i) = r.waiting.iter().position(|w| w.invoke_id == invoke_id) {
                found = r.waiting.remove(i);
                break;
            }
        }
        if let Some(now) = due {
            crate::deadlines::due_by(inner, &mut st, now);
        }
        found
    };
    if let Some(w) = waiting {
        inner.observe.invocation_aborted_waiting();
        (w.done)(Err(crate::observe::aborted("invocation")));
    }
}

/// Sends the next waiting invocation of `id` when none is in flight.
fn start_next(inner: &Inner, st: &mut State, id: &str) {
    let State {
        retained, workers, ..
    } = st;
    let Some(r) = retained.get_mut(id) else {
        return;
    };
    if r.current.is_some() {
        return;
    }
    let Some(w) = r.waiting.pop_front() else {
        return;
    };
    let now = Instant::now();
    let mut limit = Limit::new(r.timeout_ms, now, Duration::ZERO);
    let mut look = limit.deadline();
    let mut slot = workers.get_mut(&r.worker);
    if let Some(slot) = slot.as_ref() {
        let cpu_by = limit.watch_cpu(&slot.process, r.cpu_limit_ms, now);
        look = cpu_by.map_or(look, |at| look.min(at));
    }
    r.current = Some(Current {
        invoke_id: w.invoke_id,
        done: w.done,
        limit,
    });
    if let Some(slot) = slot.as_mut() {
        if let Some(b) = slot.bound.as_mut().filter(|b| b.exec_id == r.exec_id) {
            b.invocation_sent();
        }
        slot.input.send(w.frame);
    }
    let worker = r.worker;
    crate::deadlines::invocation_started(st, worker);
    crate::deadlines::due_by(inner, st, look);
}

/// The worker's answer to an invocation.
pub(crate) fn invoked(
    inner: &Inner,
    exec_id: u64,
    invoke_id: u64,
    result: Result<WireResponse, RunError>,
) {
    let mut settles = Vec::new();
    {
        let mut st = inner.lock();
        let Some(id) = st.retained_ids.get(&exec_id).cloned() else {
            return;
        };
        let Some(r) = st.retained.get_mut(&id) else {
            return;
        };
        let Some(current) = r.current.take_if(|c| c.invoke_id == invoke_id) else {
            return;
        };
        r.idle_since = Instant::now();
        let worker = r.worker;
        crate::deadlines::invocation_answered(&mut st, worker);
        let Some(r) = st.retained.get_mut(&id) else {
            return;
        };
        let code = result
            .as_ref()
            .err()
            .and_then(|e| FailureCode::from_code(&e.code));
        let cancelled = current.limit.cancelled();
        let bound = match code {
            _ if cancelled => Some(current.limit.close_reason()),
            Some(FailureCode::Timeout) => Some(CloseReason::Timeout),
            Some(FailureCode::MemoryLimit) => Some(CloseReason::Memory),
            Some(FailureCode::CpuLimit) => Some(CloseReason::Cpu),
            _ => None,
        };
        match bound {
            Some(reason) => {
                // The worker ends the execution itself after a bound: it disposes the isolate
                // and says Ready. The invocation rejects with the bound's declared text.
                let failure = match (reason, result) {
                    _ if cancelled => current.limit.failure(),
                    (CloseReason::Memory | CloseReason::Cpu, Err(e)) => Failure {
                        code: code.unwrap_or(FailureCode::Internal),
                        message: e.message,
                    },
                    _ => timed_out(r.timeout_ms),
                };
                // Published first: a host that hears of the rejection already knows why.
                end(inner, &mut st, &id, reason, false, &mut settles);
                settles.push(Settle::Answer(current.done, Err(failure)));
            }
            None => {
                let answer = match result {
                    Ok(response) => check_wire(response),
                    Err(e) => Err(Failure {
                        code: FailureCode::from_code(&e.code).unwrap_or(FailureCode::Internal),
                        message: e.message,
                    }),
                };
                settles.push(Settle::Answer(current.done, answer));
                start_next(inner, &mut st, &id);
            }
        }
    }
    run_all(settles);
}

/// The host's own check of a handler's answer: the isolate can redefine `Response`, so what
/// arrives is checked against the wire shape again.
fn check_wire(response: WireResponse) -> Result<WireResponse, Failure> {
    let byte_string = |s: &str| {
        s.chars()
            .all(|c| (c as u32) <= 0xff && !"\0\r\n".contains(c))
    };
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let fits = limits::RESPONSE_STATUS.contains(&response.status)
        && byte_string(&response.status_text)
        && response
            .headers
            .iter()
            .all(|(k, v)| token(k) && byte_string(v))
        && response
            .body
            .as_ref()
            .is_none_or(|b| b.len() <= limits::FETCH_BODY_BYTES);
    if fits {
        Ok(response)
    } else {
        Err(FailureCode::HandleResponseInvalid.failure(&[]))
    }
}

/// `close_handles`: ends the execution and tells the worker to dispose the isolate.
pub(crate) fn close(inner: &Inner, id: &str, tenant: Option<&str>) -> Result<(), Failure> {
    let mut settles = Vec::new();
    {
        let mut st = inner.lock();
        let caller = tenant.unwrap_or(crate::tenants::UNNAMED);
        if st.retained.get(id).is_none_or(|r| &*r.tenant != caller) {
            return Err(closed(id));
        }
        end(inner, &mut st, id, CloseReason::Closed, true, &mut settles);
    }
    run_all(settles);
    Ok(())
}

/// Removes retained execution `id`, settles its invocations and publishes the close. With
/// `tell_worker`, the worker is told to dispose the isolate (a Cancel on the control pipe stops
/// any JS of its timers first); otherwise it already ends the execution by itself.
pub(crate) fn end(
    inner: &Inner,
    st: &mut State,
    id: &str,
    reason: CloseReason,
    tell_worker: bool,
    settles: &mut Vec<Settle>,
) {
    let Some(r) = st.retained.remove(id) else {
        return;
    };
    st.retained_ids.remove(&r.exec_id);
    st.fetches.forget(r.exec_id);
    if let Some(slot) = st.workers.get_mut(&r.worker) {
        // Free, but not idle until the worker says Ready with a fresh isolate.
        slot.exec = None;
        if tell_worker {
            let cancel = HostMsg::Cancel { exec_id: r.exec_id }.encode_small();
            if let Ok(mut control) = slot.control.lock() {
                use std::io::Write;
                let _ = control.write_all(&cancel);
            }
            slot.input
                .send(HostMsg::CloseHandles { exec_id: r.exec_id }.encode_small());
        }
    }
    let unanswered = match reason {
        CloseReason::PoolClosed => FailureCode::Closed.failure(&[]),
        _ => closed(id),
    };
    // Published first: a host that hears of a rejection below already knows why.
    settles.push(Settle::Published(r.host, id.to_string(), reason));
    if let Some(c) = r.current {
        settles.push(Settle::Answer(c.done, Err(unanswered.clone())));
    }
    for w in r.waiting {
        settles.push(Settle::Answer(w.done, Err(unanswered.clone())));
    }
    inner.changed.notify_all();
}

/// The retained execution a lost worker held, if any: its invocation in flight rejects
/// (`TIMEOUT` when it was being cancelled, else `WORKER_LOST`), and the close is published.
pub(crate) fn worker_lost(
    inner: &Inner,
    st: &mut State,
    exec_id: u64,
    lost: &Failure,
    settles: &mut Vec<Settle>,
) {
    let Some(id) = st.retained_ids.get(&exec_id).cloned() else {
        return;
    };
    let mut reason = CloseReason::WorkerLost;
    let mut answer = None;
    if let Some(r) = st.retained.get_mut(&id) {
        if let Some(c) = r.current.take() {
            let failure = if c.limit.cancelled() {
                reason = c.limit.close_reason();
                c.limit.failure()
            } else {
                lost.clone()
            };
            answer = Some(Settle::Answer(c.done, Err(failure)));
        }
    }
    end(inner, st, &id, reason, false, settles);
    settles.extend(answer);
}

/// The pool is shutting down: every retained execution ends with `PoolClosed`.
pub(crate) fn end_all(inner: &Inner, st: &mut State, settles: &mut Vec<Settle>) {
    let ids: Vec<String> = st.retained.keys().cloned().collect();
    for id in ids {
        end(inner, st, &id, CloseReason::PoolClosed, false, settles);
    }
}

/// For the watchdog: invocations past a bound (to cancel, then to kill after `CANCEL_GRACE`),
/// executions past the idle bound (to end), and the next moment to look again.
pub(crate) struct Due {
    pub cancel: Vec<(u64, u64)>,
    pub kill: Vec<u64>,
    pub idle: Vec<String>,
}

pub(crate) fn due(st: &mut State, now: Instant, idle_bound: Duration, next: &mut Instant) -> Due {
    let mut due = Due {
        cancel: Vec::new(),
        kill: Vec::new(),
        idle: Vec::new(),
    };
    let State {
        retained, workers, ..
    } = st;
    for (id, r) in retained.iter_mut() {
        match r.current.as_mut() {
            Some(c) => {
                let process = workers.get(&r.worker).map(|w| &*w.process);
                match c.limit.look(process, now, next) {
                    Verdict::Cancel => due.cancel.push((r.worker, r.exec_id)),
                    Verdict::Kill => due.kill.push(r.worker),
                    Verdict::Wait => {}
                }
            }
            None if r.waiting.is_empty() => {
                let expires = r.idle_since + idle_bound;
                if expires <= now {
                    due.idle.push(id.clone());
                } else {
                    *next = (*next).min(expires);
                }
            }
            None => {}
        }
    }
    due
}

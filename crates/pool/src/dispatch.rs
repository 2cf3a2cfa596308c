//! What each frame a worker sends does, whichever reader read it (reader.rs, readiness.rs):
//! the frame is checked against the worker's binding (conduct.rs) under the state lock, then
//! acted on (the handshake, a run's start and end, a tool call or fetch handed to its host or
//! performer, an invocation's answer, a live log entry). `Err` says why the worker must go
//! (lifecycle.rs settles it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_protocol::{Hops, HostMsg, RunOutcome, WireRequest, WorkerMsg, PROTOCOL_VERSION};

use crate::api::{FetchCall, ToolCall};
use crate::approvals::{CallAction, FetchAction};
use crate::conduct::{self, Violation};
use crate::handles;
use crate::lifecycle::End;
use crate::outbound::Admitted;
use crate::schedule::{answer_fetch, mark_idle, pump, send_cancel, stopped};
use crate::state::{Inner, State};

/// Handles one frame a worker sent (its body, without the length prefix), whichever reader
/// read it (a reader thread, or the host's loop: reader.rs, readiness.rs). `Err` says why the worker must
/// go.
pub(crate) fn on_frame(
    inner: &Arc<Inner>,
    key: u64,
    greeted: &mut bool,
    frame: &[u8],
) -> Result<(), End> {
    inner.observe.read(frame.len());
    let msg = match WorkerMsg::decode(frame) {
        Ok(m) => m,
        // Before the handshake, garbage is most likely no worker at all (a wrong path).
        Err(e) if !*greeted => return Err(End::Lost(e.to_string())),
        Err(e) => return Err(End::Violation(Violation(e.to_string()))),
    };
    if !*greeted && !matches!(msg, WorkerMsg::Hello { .. }) {
        return Err(End::Lost("its first frame was not a Hello".into()));
    }
    check(inner, key, &msg).map_err(End::Violation)?;
    match msg {
        WorkerMsg::Hello { version, .. } => {
            if *greeted {
                return Err(End::Violation(Violation("it said Hello twice".into())));
            }
            if version != PROTOCOL_VERSION {
                return Err(End::Lost(format!(
                    "the worker binary speaks protocol {version}, this addon {PROTOCOL_VERSION}; rebuild or reinstall so both come from one release"
                )));
            }
            *greeted = true;
            mark_idle(inner, key);
        }
        WorkerMsg::Ready => mark_idle(inner, key),
        // Every worker runs the same binary: the first to say names the pool's engine.
        WorkerMsg::Engine(engine) => {
            let _ = inner.engine.set(engine);
        }
        WorkerMsg::Log { exec_id, entry } => inner.observe.log(exec_id, entry),
        WorkerMsg::Idle { exec_id } => {
            let idle = inner.approvals.idle(exec_id);
            if idle.stop {
                crate::deadlines::stop_run(inner, exec_id);
            } else if let Some(budget) = idle.rest {
                crate::deadlines::suspend(inner, &mut inner.lock(), exec_id, budget);
            }
        }
        WorkerMsg::Awake { exec_id } => {
            // A timer of a run that said it waits fired: its time bound runs again.
            inner.approvals.awake(exec_id);
            crate::deadlines::unsuspend(inner, &mut inner.lock(), exec_id);
        }
        WorkerMsg::Started { exec_id } => started(inner, exec_id),
        WorkerMsg::Fetch {
            exec_id,
            call_id,
            request,
        } => start_fetch(inner, exec_id, call_id, request),
        WorkerMsg::ToolCall {
            exec_id,
            call_id,
            provider,
            tool,
            args,
        } => tool_call(
            inner,
            ToolCall {
                exec_id,
                call_id,
                provider,
                tool,
                args,
            },
        ),
        WorkerMsg::Invoked {
            exec_id,
            invoke_id,
            result,
        } => handles::invoked(inner, exec_id, invoke_id, result),
        WorkerMsg::Done {
            exec_id,
            mut outcome,
        } => {
            Hops::mark(outcome.hops.as_deref_mut(), |h| &mut h.answer_read);
            done(inner, key, exec_id, outcome).map_err(End::Violation)?
        }
    }
    Ok(())
}

/// Checks a frame against the execution the worker is bound to (conduct.rs), under the lock.
fn check(inner: &Inner, key: u64, msg: &WorkerMsg) -> Result<(), Violation> {
    let mut st = inner.lock();
    let binding = st.workers.get_mut(&key).and_then(|s| s.bound.as_mut());
    conduct::admit(binding, msg)
}

/// A run's `Started`: it can no longer be queued again; one handed over while its worker was
/// preparing gets its time bound from now; one cancelled before it started is cancelled now
/// (the worker knows the run from here on).
fn started(inner: &Inner, exec_id: u64) {
    let mut st = inner.lock();
    let State {
        running, workers, ..
    } = &mut *st;
    let Some(run) = running.get_mut(&exec_id) else {
        return;
    };
    run.unstarted = None;
    let now = Instant::now();
    let mut look_by: Option<Instant> = None;
    // A run handed to a worker still preparing: its wall time and time bound count from here.
    if let Some(deadline) = run.limit.restart(now) {
        run.started = now;
        look_by = Some(deadline);
    }
    // The CPU backstop counts from here: what the worker spent before the run is not the run's.
    if let Some(w) = workers.get(&run.worker) {
        if let Some(first) = run
            .limit
            .watch_cpu(&w.process, run.budgets.cpu_limit_ms, now)
        {
            look_by = Some(look_by.map_or(first, |d: Instant| d.min(first)));
        }
    }
    if run.limit.cancelled() {
        if let Some(w) = workers.get(&run.worker) {
            send_cancel(exec_id, &w.control, &w.input);
        }
    }
    // Later than the deadline it replaces, but maybe earlier than the watchdog's next look.
    if let Some(at) = look_by {
        crate::deadlines::due_by(inner, &mut st, at);
    }
}

/// A run's Done: the outcome goes to whoever waits for it, or the isolate is retained. A grant
/// naming an execution id already in use is a violation (handles.rs), checked before anything
/// changes.
fn done(inner: &Inner, key: u64, exec_id: u64, mut outcome: RunOutcome) -> Result<(), Violation> {
    let finished = {
        let mut st = inner.lock();
        if let Some(grant) = &outcome.grant {
            handles::unused(&st, grant)?;
        }
        let run = st.running.remove(&exec_id);
        if let Some(run) = &run {
            st.queue.charge(&run.tenant, outcome.stats.cpu_us);
        }
        match (run, outcome.grant.take()) {
            // The isolate is retained: the worker's slot stays taken.
            (Some(run), Some(grant)) if !run.limit.cancelled() => {
                outcome.grant = Some(grant.clone());
                handles::grant(&mut st, exec_id, &run, grant);
                Some(run)
            }
            (run, grant) => {
                st.fetches.forget(exec_id);
                // Free, but not idle until its next isolate is prepared (Ready); a run
                // queued with no idle worker is handed to it now, to start when it can.
                if let Some(slot) = st.workers.get_mut(&key) {
                    slot.exec = None;
                    if grant.is_some() {
                        // Granted as the deadline passed: nobody gets the handles.
                        let close = HostMsg::CloseHandles { exec_id };
                        slot.input.send(close.encode_small());
                    }
                    st.preparing.push_back(key);
                    pump(inner, &mut st);
                }
                run
            }
        }
    };
    if let Some(run) = finished {
        // Terminated at its deadline (or past its CPU allowance): whatever the worker said,
        // that bound stopped it.
        let mut outcome = match run.limit.cancelled() {
            true => RunOutcome {
                stats: outcome.stats,
                ..stopped(&run, outcome.logs)
            },
            false => outcome,
        };
        outcome.stats.wall_us = run.started.elapsed().as_micros() as u64;
        // The worker's steps with the pool's; a worker the pool did not ask sends none.
        outcome.hops = match (run.hops, outcome.hops) {
            (Some(ours), Some(theirs)) => Some(Box::new(Hops {
                encoded: ours.encoded,
                written: ours.written,
                reported: Hops::now(),
                ..*theirs
            })),
            _ => None,
        };
        (run.done)(exec_id, Ok(outcome));
    }
    Ok(())
}

/// A run's tool call: to its host, unless the approval book (approvals/) answers it, holds it,
/// puts it to the host's `approve`, or stops the run.
fn tool_call(inner: &Arc<Inner>, call: ToolCall) {
    let (exec_id, call_id) = (call.exec_id, call.call_id);
    inner.calls.called(&call);
    match inner.approvals.tool_call(call) {
        CallAction::Forward(call) => {
            if let Some(host) = acting(inner, exec_id) {
                host.tool_call(call);
            }
        }
        CallAction::Answer(ok, payload) => {
            crate::schedule::answer_call(inner, exec_id, call_id, ok, payload)
        }
        CallAction::Deny(text) => crate::schedule::deny_call(inner, exec_id, call_id, text),
        CallAction::Ask(request) => {
            if let Some(host) = acting(inner, exec_id) {
                host.approve(request);
            }
        }
        CallAction::Hold => {}
        CallAction::Stop => crate::deadlines::stop_run(inner, exec_id),
    }
}

/// Run `exec_id` made a request: one resting on decisions acts again (deadlines.rs
/// `suspend`). Its host, while it runs.
fn acting(inner: &Inner, exec_id: u64) -> Option<Arc<dyn crate::api::Host>> {
    let mut st = inner.lock();
    crate::deadlines::unsuspend(inner, &mut st, exec_id);
    st.running.get(&exec_id).map(|r| r.host.clone())
}

/// Routes a run's fetch by its outbound mode: to the host's policy, or to the native fetch
/// threads (outbound.rs: bounded per run and per pool, in bytes in flight, and by what is left
/// of the run's time).
fn start_fetch(inner: &Arc<Inner>, exec_id: u64, call_id: u32, request: WireRequest) {
    match inner
        .approvals
        .fetch(exec_id, call_id, &request.method, &request.url)
    {
        FetchAction::Live => {}
        FetchAction::Answer(result) => return answer_fetch(inner, exec_id, call_id, result),
        FetchAction::Stop => return crate::deadlines::stop_run(inner, exec_id),
    }
    let admitted = {
        let mut st = inner.lock();
        // A run resting on decisions acts again (deadlines.rs `suspend`).
        crate::deadlines::unsuspend(inner, &mut st, exec_id);
        let found = match st.running.get(&exec_id) {
            Some(r) => Some((r.outbound, r.host.clone(), r.limit.deadline())),
            // A retained execution's fetch (from a handler or a timer): bounded by the
            // invocation in flight, else by one time bound from now.
            None => st
                .retained_ids
                .get(&exec_id)
                .and_then(|id| st.retained.get(id))
                .map(|r| {
                    let deadline = r.current.as_ref().map_or_else(
                        || Instant::now() + Duration::from_millis(r.timeout_ms),
                        |c| c.limit.deadline(),
                    );
                    (r.outbound, r.host.clone(), deadline)
                }),
        };
        let Some((outbound, host, deadline)) = found else {
            return;
        };
        let admitted = st
            .fetches
            .admit(exec_id, call_id, request, outbound, deadline);
        (admitted, host)
    };
    match admitted {
        (Admitted::Route(request), host) => host.fetch(FetchCall {
            exec_id,
            call_id,
            request,
        }),
        (Admitted::Perform(task), _) => inner.performers.submit(task),
        (Admitted::Wait, _) => {}
        (Admitted::Refuse(text), _) => answer_fetch(inner, exec_id, call_id, Err(text)),
    }
}

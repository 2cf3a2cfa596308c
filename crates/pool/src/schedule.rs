//! Which worker runs what, and the frames the host sends to a run: queued runs are handed to
//! idle workers, else to workers preparing their next isolate ([`pump`]); answers to a run's
//! calls ([`send_to_run`], [`answer_fetch`]) and cancels ([`send_cancel`]) are written to the
//! worker that holds it. Called by the public API (lib.rs), the dispatcher, the watchdog and
//! the settlement of lost workers; everything here runs under, or takes, the state lock.

use std::fs::File;
use std::io::Write;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use codemode_protocol::{Failure, FailureCode, HostMsg, RunError, RunOutcome, WireResponse};

use crate::api::{PREPARE_GRACE, RETIRE_IDLE};
use crate::conduct::Binding;
use crate::input::WorkerInput;
use crate::limit::Limit;
use crate::state::{Inner, Running, State};
use crate::tenants::TenantKey;

/// Hands queued runs to workers, tenants in turn (tenants.rs, `Queues`): each run to an idle
/// worker of its tenant's cordon, else to one that ran no code yet, else to such a worker still
/// preparing its next isolate (see `State::preparing`). A tenant at its `maxRunning`, or past
/// its `cpuPerMinute` (its runs wait for the minute to make room: the watchdog pumps on every
/// look), waits for its next turn; one with no worker it may use gets one by [`retire`].
/// Called with the lock held.
pub(crate) fn pump(inner: &Inner, st: &mut MutexGuard<'_, State>) {
    while let Some((tenant, worker, early)) = next(inner, st) {
        let Some(job) = st.queue.served(&tenant) else {
            return;
        };
        st.idle.retain(|k| *k != worker);
        st.preparing.retain(|k| *k != worker);
        let Some(slot) = st.workers.get_mut(&worker) else {
            st.queue.push(&tenant, job, true);
            continue;
        };
        slot.exec = Some(job.exec_id);
        slot.cordon = Some(tenant);
        // Before the Execute: the worker builds the run's isolate under its ceiling. A worker
        // that is already gone fails the write below and is reported lost.
        let ceiling = crate::process::memory_ceiling(job.memory_limit_mib);
        if let Err(e) = slot.process.set_memory_ceiling(ceiling) {
            eprintln!("codemode-executor: could not set a worker's memory ceiling: {e}");
        }
        slot.bound = Some(Binding::new(job.exec_id, job.tools.clone(), job.budgets));
        // A broken pipe means the worker is going; its reader reports it lost, and the
        // run, never acknowledged, goes back to the queue.
        slot.input.send(job.frame.clone());
        let mut hops = job.hops;
        codemode_protocol::Hops::mark(hops.as_mut(), |h| &mut h.written);
        let now = Instant::now();
        let extra = if early { PREPARE_GRACE } else { Duration::ZERO };
        let limit = Limit::new(job.timeout_ms, now, extra);
        let deadline = limit.deadline();
        st.running.insert(
            job.exec_id,
            Running {
                worker,
                unstarted: Some(job.frame),
                requeues: job.requeues,
                host: job.host,
                outbound: job.outbound,
                tools: job.tools,
                memory_limit_mib: job.memory_limit_mib,
                done: job.done,
                budgets: job.budgets,
                started: now,
                limit,
                hops,
                tenant: job.tenant,
            },
        );
        crate::deadlines::due_by(inner, st, deadline);
    }
}

/// The next tenant to serve and the worker its run goes to (`true`: one still preparing), or
/// `None` when no tenant with runs waiting can be served now. A tenant whose cordon has no
/// worker free, when no fresh worker is on its way, retires one idle worker of another tenant.
fn next(inner: &Inner, st: &mut State) -> Option<(TenantKey, u64, bool)> {
    let tenants = &inner.opts.tenants;
    let waiting: Vec<TenantKey> = st.queue.turns().cloned().collect();
    // Fresh workers still starting, and those asked of the spawner (a retired worker's
    // replacement among them): each will take a run of any tenant once ready.
    let mut coming = st.respawning
        + st.workers
            .iter()
            .filter(|(k, w)| {
                w.exec.is_none()
                    && (w.bound.is_none() || w.retiring)
                    && !st.idle.contains(k)
                    && !st.preparing.contains(k)
            })
            .count();
    for tenant in waiting {
        let limits = tenants.limits(&tenant);
        // A retained execution holds its worker as a run does: it counts.
        let running = st.running.values().filter(|r| r.tenant == tenant).count()
            + st.retained.values().filter(|r| r.tenant == tenant).count();
        if limits.max_running.is_some_and(|max| running >= max) {
            continue;
        }
        if st.queue.over_cpu(&tenant, limits).is_some() {
            continue;
        }
        if let Some((worker, early)) = worker_for(st, &tenant) {
            return Some((tenant, worker, early));
        }
        if coming > 0 {
            coming -= 1;
        } else {
            retire(st, running == 0);
        }
    }
    None
}

/// How many runs of `tenant` could start now without waiting: workers it may use that are
/// free or starting, up to what its `maxRunning` leaves.
pub(crate) fn free_for(inner: &Inner, st: &State, tenant: &TenantKey) -> usize {
    let free = st
        .workers
        .values()
        .filter(|w| {
            w.exec.is_none() && !w.retiring && w.cordon.as_ref().is_none_or(|c| c == tenant)
        })
        .count();
    match inner.opts.tenants.limits(tenant).max_running {
        Some(max) => {
            let running = st.running.values().filter(|r| r.tenant == *tenant).count()
                + st.retained.values().filter(|r| r.tenant == *tenant).count();
            free.min(max.saturating_sub(running))
        }
        None => free,
    }
}

/// A worker tenant `tenant` may use: free, and of its cordon or of none yet; idle first, its
/// own before a fresh one, then one preparing its next isolate.
fn worker_for(st: &State, tenant: &TenantKey) -> Option<(u64, bool)> {
    let of = |key: &u64, own: bool| {
        st.workers.get(key).is_some_and(|w| {
            w.exec.is_none()
                && !w.retiring
                && match &w.cordon {
                    Some(c) => own && c == tenant,
                    None => !own,
                }
        })
    };
    for (list, early) in [(&st.idle, false), (&st.preparing, true)] {
        for own in [true, false] {
            if let Some(k) = list.iter().find(|k| of(k, own)) {
                return Some((*k, early));
            }
        }
    }
    None
}

/// Makes room for a tenant with no worker it may use: the longest-idle worker of another
/// tenant (one with nothing waiting, if any) is killed, and the replacement the spawner starts
/// for it, of no cordon yet, takes the run (docs/tenants.md, "Cordons"). A `starved` tenant
/// (nothing of it running) may take any free worker, one preparing after another tenant's run
/// included, so it waits at most one run; one already running elsewhere only a worker idle
/// for [`RETIRE_IDLE`]. Its end is counted as a tenant switch, not a loss.
fn retire(st: &mut State, starved: bool) {
    let now = Instant::now();
    // A replacement that could not be started would leave the pool a worker short: no more
    // retiring until spawns work again.
    if st
        .spawn_failed
        .is_some_and(|at| now.duration_since(at) < RETIRE_IDLE * 10)
    {
        return;
    }
    let free_of = |k: &u64, st: &State, quiet: bool| {
        st.workers.get(k).is_some_and(|w| {
            w.exec.is_none()
                && !w.retiring
                && (starved || now.duration_since(w.free_since) >= RETIRE_IDLE)
                && w.cordon
                    .as_ref()
                    .is_some_and(|c| !quiet || st.queue.queued(c) == 0)
        })
    };
    // A starved tenant may take a worker that just ended another's run, still preparing.
    let lists: &[&std::collections::VecDeque<u64>] = if starved {
        &[&st.idle, &st.preparing]
    } else {
        &[&st.idle]
    };
    let Some(key) = [true, false].into_iter().find_map(|quiet| {
        lists
            .iter()
            .find_map(|l| l.iter().copied().find(|k| free_of(k, st, quiet)))
    }) else {
        return;
    };
    st.idle.retain(|k| *k != key);
    st.preparing.retain(|k| *k != key);
    if let Some(w) = st.workers.get_mut(&key) {
        w.retiring = true;
        // Its reader reaps it and the spawner replaces it (lifecycle.rs).
        w.process.kill();
    }
}

pub(crate) fn mark_idle(inner: &Inner, key: u64) {
    let mut st = inner.lock();
    st.preparing.retain(|k| *k != key);
    // Not free when it was handed a run while preparing: that run is already in its stdin.
    // Not when it is being retired either: its Ready crossed the kill.
    let free = st
        .workers
        .get(&key)
        .is_some_and(|slot| slot.exec.is_none() && !slot.retiring);
    if free && !st.idle.contains(&key) {
        st.idle.push_back(key);
        if let Some(slot) = st.workers.get_mut(&key) {
            slot.free_since = Instant::now();
        }
    }
    pump(inner, &mut st);
}

/// Writes `frame`, the answer to call `call_id`, to the worker running `exec_id`. A run that already ended gets nothing (no one
/// waits for the answer); a write error means the worker died, and its reader reports it.
pub(crate) fn send_to_run(inner: &Inner, exec_id: u64, call_id: u32, frame: Vec<u8>) {
    let mut st = inner.lock();
    let Some(worker) = st.running.get(&exec_id).map(|r| r.worker) else {
        return;
    };
    deliver(&mut st, worker, exec_id, call_id, frame);
}

/// Writes a fetch answer to the worker running `exec_id` (or retaining it), if it still does.
/// Every answer passes here, native or routed, in process or through the daemon: the answer is
/// checked (outbound::Flights::answered), and the run's next waiting native fetch starts.
pub(crate) fn answer_fetch(
    inner: &Inner,
    exec_id: u64,
    call_id: u32,
    result: Result<WireResponse, String>,
) {
    let (result, next) = inner.lock().fetches.answered(exec_id, call_id, result);
    if let Some(task) = next {
        inner.performers.submit(task);
    }
    if inner.approvals.fetched(exec_id, call_id, &result) {
        crate::deadlines::stop_run(inner, exec_id);
    }
    let frame = HostMsg::FetchResult {
        exec_id,
        call_id,
        result,
    }
    .encode()
    .unwrap_or_else(|e| {
        HostMsg::FetchResult {
            exec_id,
            call_id,
            result: Err(answer_too_large("fetch", e)),
        }
        .encode_small()
    });
    let mut st = inner.lock();
    let worker = match st.running.get(&exec_id) {
        Some(run) => Some(run.worker),
        None => st
            .retained_ids
            .get(&exec_id)
            .and_then(|id| st.retained.get(id))
            .map(|r| r.worker),
    };
    if let Some(worker) = worker {
        deliver(&mut st, worker, exec_id, call_id, frame);
    }
}

/// Writes `frame`, the answer to call `call_id` of `exec_id`, to `worker`: the call is no
/// longer in flight there (its binding), and the run's CPU backstop allows for the worker's
/// poll for the answer.
fn deliver(st: &mut State, worker: u64, exec_id: u64, call_id: u32, frame: Vec<u8>) {
    allow_poll(st, exec_id);
    if let Some(w) = st.workers.get_mut(&worker) {
        if let Some(b) = w.bound.as_mut().filter(|b| b.exec_id == exec_id) {
            b.answered(call_id);
        }
        w.input.send(frame);
    }
}

/// An answer goes to `exec_id`: its CPU backstop allows for the worker's poll for it.
fn allow_poll(st: &mut State, exec_id: u64) {
    let limit = match st.running.get_mut(&exec_id) {
        Some(run) => Some(&mut run.limit),
        None => st
            .retained_ids
            .get(&exec_id)
            .and_then(|id| st.retained.get_mut(id))
            .and_then(|r| r.limit()),
    };
    if let Some(limit) = limit {
        limit.answered();
    }
}

/// The outcome of a run the host stopped (its limit cancelled it): its time bound's text, or
/// its CPU budget's when the backstop stopped it, whatever the worker said.
pub(crate) fn stopped(run: &Running, logs: Vec<codemode_protocol::LogEntry>) -> RunOutcome {
    let failure = run.limit.failure();
    RunOutcome {
        result: None,
        error: Some(RunError {
            code: failure.code.as_str().into(),
            message: failure.message,
            location: None,
        }),
        logs,
        ..RunOutcome::default()
    }
}

/// Tells a worker to stop run `exec_id`: the control pipe terminates running JS; stdin wakes a
/// run waiting for tools.
pub(crate) fn send_cancel(exec_id: u64, control: &Mutex<File>, input: &WorkerInput) {
    let frame = HostMsg::Cancel { exec_id }.encode_small();
    if let Ok(mut pipe) = control.lock() {
        let _ = pipe.write_all(&frame);
    };
    input.send(frame);
}

/// `REQUEST_TOO_LARGE` for a request whose frame would pass the bound a worker accepts.
pub(crate) fn too_large(what: &str, e: codemode_protocol::FrameTooLarge) -> Failure {
    FailureCode::RequestTooLarge.failure(&[
        ("what", what),
        ("size", &e.size.to_string()),
        ("limit", &e.limit.to_string()),
    ])
}

/// The text a call rejects with inside the sandbox when the host's answer is too big to send.
pub(crate) fn answer_too_large(what: &str, e: codemode_protocol::FrameTooLarge) -> String {
    FailureCode::AnswerTooLarge.render(&[
        ("what", what),
        ("size", &e.size.to_string()),
        ("limit", &e.limit.to_string()),
    ])
}

/// Writes the answer to tool call `call_id` of `exec_id` (the host's, or the approval book's)
/// to its worker; one too big for a frame rejects the call inside the sandbox instead.
pub(crate) fn answer_call(inner: &Inner, exec_id: u64, call_id: u32, ok: bool, payload: Vec<u8>) {
    let answer = HostMsg::ToolResult {
        exec_id,
        call_id,
        ok,
        payload,
    };
    send_answer(inner, exec_id, call_id, &answer);
}

/// Writes the denial of tool call `call_id` of `exec_id` to its worker: the call rejects
/// inside the sandbox with `text` and the code `APPROVAL_DENIED`.
pub(crate) fn deny_call(inner: &Inner, exec_id: u64, call_id: u32, text: String) {
    let denial = HostMsg::ToolDenied {
        exec_id,
        call_id,
        message: text,
    };
    send_answer(inner, exec_id, call_id, &denial);
}

/// Sends `answer` to call `call_id` of `exec_id`; one too big for a frame rejects the call
/// inside the sandbox with `ANSWER_TOO_LARGE` instead.
fn send_answer(inner: &Inner, exec_id: u64, call_id: u32, answer: &HostMsg) {
    let frame = answer.encode().unwrap_or_else(|e| {
        HostMsg::ToolResult {
            exec_id,
            call_id,
            ok: false,
            payload: answer_too_large("tool call", e).into_bytes(),
        }
        .encode_small()
    });
    send_to_run(inner, exec_id, call_id, frame);
}

/// The pool performs native fetches for its runs (outbound.rs, `Performers`).
impl crate::outbound::Perform for Inner {
    fn perform(&self, task: crate::outbound::Task) {
        let (exec_id, call_id) = (task.exec_id, task.call_id);
        if !self.lock().fetches.wanted(exec_id, call_id) {
            return;
        }
        let result = self.client.perform(task);
        answer_fetch(self, exec_id, call_id, result);
    }

    fn refuse(&self, task: crate::outbound::Task, text: String) {
        answer_fetch(self, task.exec_id, task.call_id, Err(text));
    }
}

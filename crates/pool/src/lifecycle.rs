//! How a worker's life ends: why its reading stopped ([`End`], judged from its output and its
//! exit), reaping it, settling what it held (its run queued again, timed out or failed; its
//! retained execution ended) and asking for a replacement; a worker that never completed its
//! handshake is refused instead of replaced. And the pool's own end ([`stop_all`],
//! [`wait_reaped`]).

use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_protocol::{Failure, FailureCode};

use crate::api::{Completion, REQUEUE_BOUND};
use crate::conduct::Violation;
use crate::handles;
use crate::process::Process;
use crate::schedule::{pump, stopped};
use crate::state::{Inner, Job};

/// Why a worker's reader stopped.
pub(crate) enum End {
    /// Its output ended between frames.
    Eof,
    /// It must go, for a reason that breaks no rule (an unreadable pipe, a version mismatch).
    Lost(String),
    /// It sent what a healthy worker never sends (conduct.rs).
    Violation(Violation),
}

/// The worker is gone (or must go). Make sure, reap it (under the lock every kill of it
/// takes), and settle what it held.
pub(crate) fn end_worker(
    inner: &Inner,
    key: u64,
    mut child: Child,
    process: &Process,
    greeted: bool,
    end: End,
) {
    let status = process.kill_and_reap(&mut child);
    match end {
        End::Violation(v) if greeted => violated(inner, key, process.pid(), v, status),
        _ if greeted => {
            let why = match end {
                End::Lost(why) => Some(why),
                _ => None,
            };
            worker_lost(inner, key, why, status)
        }
        _ => {
            let detail = match end {
                End::Lost(why) => why,
                End::Violation(v) => v.0,
                End::Eof => describe_exit(status) + " before its handshake",
            };
            worker_refused(inner, key, detail);
        }
    }
}

/// Output that cannot be read as frames. A length past the bound, or a frame cut short by a
/// worker that exited normally or still lives, is a violation; a frame cut short by the
/// worker's death from a signal (the kernel's OOM killer, a memory ceiling) is a crash.
pub(crate) fn unreadable(e: std::io::Error, child: &mut Child) -> End {
    use std::io::ErrorKind;
    use std::os::unix::process::ExitStatusExt;
    match e.kind() {
        ErrorKind::InvalidData => End::Violation(Violation(format!("an oversize frame: {e}"))),
        ErrorKind::UnexpectedEof => {
            // A worker that closed its output is exiting: give it a moment to say how.
            let until = Instant::now() + Duration::from_millis(200);
            loop {
                match child.try_wait() {
                    Ok(Some(status)) if status.signal().is_some() => {
                        break End::Lost(format!(
                            "{}, in the middle of a frame",
                            describe_exit(Some(status))
                        ));
                    }
                    Ok(Some(_)) => {
                        break End::Violation(Violation(format!("a truncated frame: {e}")))
                    }
                    Ok(None) if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    _ => break End::Violation(Violation(format!("a truncated frame: {e}"))),
                }
            }
        }
        _ => End::Lost(format!("unreadable output: {e}")),
    }
}

fn worker_lost(inner: &Inner, key: u64, why: Option<String>, status: Option<ExitStatus>) {
    let detail = why.unwrap_or_else(|| describe_exit(status));
    let failure = FailureCode::WorkerLost.failure(&[("detail", &detail)]);
    settle_lost(inner, key, &detail, failure, status);
}

/// The worker broke a rule (conduct.rs) and was killed: the operator reads which, the run it
/// held fails with `WORKER_VIOLATION`, and a replacement starts. No other run notices.
fn violated(inner: &Inner, key: u64, pid: u32, v: Violation, status: Option<ExitStatus>) {
    let held = inner.lock().workers.get(&key).and_then(|s| s.exec);
    let run = held.map_or_else(
        || "no execution".to_string(),
        |id| format!("execution {id}"),
    );
    eprintln!(
        "codemode-executor: worker {pid} broke the host's rules and was killed: {v}. It held {run}, which fails with WORKER_VIOLATION; a replacement is starting. A healthy worker never does this: suspect a program that took control of its worker (an engine exploit), or a worker binary from another build."
    );
    let failure = FailureCode::WorkerViolation.failure(&[("detail", &v.0)]);
    settle_lost(inner, key, &v.0, failure, status);
}

/// Removes a dead worker, settles what it held with `failure`, and asks for a replacement.
fn settle_lost(
    inner: &Inner,
    key: u64,
    detail: &str,
    failure: Failure,
    status: Option<ExitStatus>,
) {
    let violated = failure.code == FailureCode::WorkerViolation;
    let mut settles = Vec::new();
    let retired: bool;
    let (lost, replace) = {
        let mut st = inner.lock();
        let slot = st.workers.remove(&key);
        st.idle.retain(|k| *k != key);
        st.preparing.retain(|k| *k != key);
        retired = slot.as_ref().is_some_and(|s| s.retiring);
        let held = slot.and_then(|s| s.exec);
        if let Some(exec_id) = held {
            handles::worker_lost(inner, &mut st, exec_id, &failure, &mut settles);
        }
        let mut lost = held.and_then(|id| st.running.remove(&id).map(|r| (id, r)));
        if let Some(exec_id) = held {
            st.fetches.forget(exec_id);
        }
        // A run the worker never acknowledged had no effect outside it: it goes back to the
        // front of the queue, for the replacement (or another idle worker), a bounded number
        // of times. One past its deadline was cancelled: it times out below. One whose worker
        // broke a rule fails: what the worker did with it is unknown.
        if let Some((exec_id, run)) = lost.take_if(|(_, r)| {
            r.unstarted.is_some()
                && !violated
                && !r.limit.cancelled()
                && r.requeues < REQUEUE_BOUND
                && !st.stopping
        }) {
            if let Some(frame) = run.unstarted {
                let tenant = run.tenant.clone();
                let job = Job {
                    exec_id,
                    frame,
                    requeues: run.requeues + 1,
                    outbound: run.outbound,
                    tools: run.tools,
                    memory_limit_mib: run.memory_limit_mib,
                    timeout_ms: run.limit.timeout_ms(),
                    budgets: run.budgets,
                    host: run.host,
                    done: run.done,
                    hops: run.hops,
                    tenant: run.tenant,
                };
                st.queue.push(&tenant, job, true);
            }
            pump(inner, &mut st);
        }
        let replace = !st.stopping;
        if replace {
            // Counted until the spawner has tried (schedule.rs counts it as a worker coming).
            st.respawning += 1;
        }
        inner.changed.notify_all();
        (lost, replace)
    };
    handles::run_all(settles);
    let unresponsive = lost.as_ref().is_some_and(|(_, r)| r.limit.cancelled());
    if replace && retired {
        inner.observe.switched();
    } else if replace {
        // Counted before the run is settled, so whoever sees its outcome sees the restart.
        inner.observe.restarted(status, unresponsive);
    }
    if let Some((exec_id, run)) = lost {
        let result = if violated {
            Err(failure)
        } else if run.limit.cancelled() {
            let mut outcome = stopped(&run, Vec::new());
            outcome.stats.wall_us = run.started.elapsed().as_micros() as u64;
            Ok(outcome)
        } else if run.unstarted.is_some() && run.requeues >= REQUEUE_BOUND {
            let detail = format!(
                "{detail}; the run was given to a worker {} times and none started it",
                run.requeues + 1
            );
            Err(FailureCode::WorkerLost.failure(&[("detail", &detail)]))
        } else if run.unstarted.is_some() {
            // Never started, and the pool is stopping: nothing was lost.
            Err(FailureCode::Closed.failure(&[]))
        } else {
            Err(failure)
        };
        (run.done)(exec_id, result);
    }
    if replace {
        // A closed channel means the pool is being dropped: nothing to replace for.
        let _ = inner.respawn.send(());
    }
}

/// A worker that ended before completing its handshake (it exited, said another protocol
/// version, or spoke garbage) is not replaced: its binary would most likely fail the same way,
/// over and over. When no worker is left, waiting runs fail with WORKER_START_FAILED; the next
/// `execute` tries a fresh worker.
fn worker_refused(inner: &Inner, key: u64, detail: String) {
    {
        let mut st = inner.lock();
        st.workers.remove(&key);
        st.idle.retain(|k| *k != key);
        st.preparing.retain(|k| *k != key);
        inner.changed.notify_all();
        if st.stopping {
            // Killed by shutdown while starting: nothing failed.
            return;
        }
    }
    let failure = FailureCode::WorkerStartFailed.failure(&[("detail", &detail)]);
    eprintln!("codemode-executor: {failure}");
    fail_queue_if_no_workers(inner, failure);
}

pub(crate) fn fail_queue_if_no_workers(inner: &Inner, failure: Failure) {
    let jobs: Vec<(u64, Completion)> = {
        let mut st = inner.lock();
        if !st.workers.is_empty() {
            return;
        }
        st.queue
            .drain()
            .into_iter()
            .map(|j| (j.exec_id, j.done))
            .collect()
    };
    for (exec_id, done) in jobs {
        done(exec_id, Err(failure.clone()));
    }
}

fn describe_exit(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("it exited with code {code}"),
            (None, Some(sig)) => format!("it was killed by signal {sig}"),
            _ => "it exited".into(),
        },
        None => "its exit status is unknown".into(),
    }
}

/// The pool stops: it refuses new runs, settles every queued one and retained execution with
/// `CLOSED`, and kills every worker (their readers reap them and settle their runs; the host's
/// loop's workers are reaped by `readiness::end_all`).
pub(crate) fn stop_all(inner: &Arc<Inner>) {
    let mut settles = Vec::new();
    let (jobs, processes) = {
        let mut st = inner.lock();
        st.closed = true;
        st.stopping = true;
        handles::end_all(inner, &mut st, &mut settles);
        let processes: Vec<Arc<Process>> = st.workers.values().map(|w| w.process.clone()).collect();
        let jobs: Vec<(u64, Completion)> = st
            .queue
            .drain()
            .into_iter()
            .map(|j| (j.exec_id, j.done))
            .collect();
        (jobs, processes)
    };
    handles::run_all(settles);
    for (exec_id, done) in jobs {
        done(exec_id, Err(FailureCode::Closed.failure(&[])));
    }
    // A worker holds nothing worth flushing once its runs are settled, so SIGKILL is the
    // fastest stop that cannot be ignored; each reader thread then reaps its own child, and
    // `readiness::end_all` the loop-read ones. A worker reaped meanwhile is not signalled (see
    // `Process`).
    for process in &processes {
        process.kill();
    }
}

/// Waits until every worker is reaped, or `grace` has passed.
pub(crate) fn wait_reaped(inner: &Inner, grace: Duration) {
    let deadline = Instant::now() + grace;
    let mut st = inner.lock();
    while !st.workers.is_empty() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        st = inner
            .changed
            .wait_timeout(st, deadline - now)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
}

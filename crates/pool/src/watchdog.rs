//! Enforces every run's and invocation's limits from the host side, through the one
//! [`Limit`](crate::limit::Limit) each holds: past its deadline, or past its CPU budget's
//! allowance (the backstop behind the worker's own count), the worker is told to cancel (it
//! terminates the isolate); if it has not answered within `CANCEL_GRACE`, the process is killed,
//! its reader reaps it, and a replacement starts. This thread only looks and acts; the limit
//! decides (limit.rs, `Limit::look`).
//!
//! It also bounds the CPU a worker spends between runs (deadlines.rs, `IdleCpu`): on every look it reads the
//! CPU clock of each worker that holds no run and no invocation in flight. A retained
//! execution whose timers pass [`limits::IDLE_CPU_MS`] in a window of
//! [`limits::IDLE_CPU_WINDOW_MS`] ends (reason `cpu`); a worker holding nothing that passes it
//! was taken over by its program, and is killed and replaced.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use codemode_protocol::limits;

use crate::api::CloseReason;
use crate::deadlines::{look_at_idle_cpu, OverBudget};
use crate::handles;
use crate::limit::Verdict;
use crate::process::Process;
use crate::schedule::send_cancel;
use crate::state::{Inner, State};

pub(crate) fn start(inner: &Arc<Inner>) {
    let weak = Arc::downgrade(inner);
    let _ = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || run(weak));
}

fn run(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let mut cancels = Vec::new();
        let mut kills = Vec::new();
        let mut settles = Vec::new();
        let next_look: Instant = {
            let mut st = inner.lock();
            if st.stopping && st.workers.is_empty() {
                return;
            }
            let now = Instant::now();
            let mut next = now + Duration::from_secs(1);
            let State {
                running, workers, ..
            } = &mut *st;
            for (exec_id, run) in running.iter_mut() {
                let process = workers.get(&run.worker).map(|w| &*w.process);
                match run.limit.look(process, now, &mut next) {
                    // A run not yet Started is cancelled when it starts (dispatch.rs): its
                    // worker may not know it yet, and would miss the Cancel.
                    Verdict::Cancel if run.unstarted.is_none() => {
                        if let Some(w) = workers.get(&run.worker) {
                            cancels.push((*exec_id, w.control.clone(), w.input.clone()));
                        }
                    }
                    Verdict::Kill => {
                        kills.extend(workers.get(&run.worker).map(|w| w.process.clone()))
                    }
                    Verdict::Cancel | Verdict::Wait => {}
                }
            }
            // Retained executions: invocations past their bound, and the idle bound.
            let idle_bound = Duration::from_millis(inner.opts.handles_idle_timeout_ms);
            let due = handles::due(&mut st, now, idle_bound, &mut next);
            for (worker, exec_id) in due.cancel {
                if let Some(w) = st.workers.get(&worker) {
                    cancels.push((exec_id, w.control.clone(), w.input.clone()));
                }
            }
            for worker in due.kill {
                if let Some(w) = st.workers.get(&worker) {
                    kills.push(w.process.clone());
                }
            }
            for id in due.idle {
                handles::end(&inner, &mut st, &id, CloseReason::Idle, true, &mut settles);
            }
            idle_cpu(&inner, &mut st, now, &mut settles, &mut kills);
            // Runs of a tenant past its CPU minute wait for room, which only time makes.
            if !st.queue.is_empty() {
                crate::schedule::pump(&inner, &mut st);
            }
            st.watchdog_at = Some(next);
            next
        };
        handles::run_all(settles);
        for (exec_id, control, input) in cancels {
            send_cancel(exec_id, &control, &input);
        }
        // Outside the state lock: a worker reaped since is not signalled (see `Process`).
        for process in kills {
            process.kill();
        }
        // `watchdog_at`, not `next_look` alone: a deadline set since the scan (while the lock
        // was free) lowered it, and its notification found no one waiting.
        {
            let st = inner.lock();
            let wake = st.watchdog_at.unwrap_or(next_look).min(next_look);
            let left = wake.saturating_duration_since(Instant::now());
            if !left.is_zero() {
                let _ = inner.changed.wait_timeout(st, left);
            }
        }
        drop(inner);
    }
}

/// Ends the retained executions past the CPU bound between invocations (reason `cpu`), and
/// marks for killing the workers holding nothing that passed it. Called with the lock held.
fn idle_cpu(
    inner: &Inner,
    st: &mut State,
    now: Instant,
    settles: &mut Vec<handles::Settle>,
    kills: &mut Vec<Arc<Process>>,
) {
    for over in look_at_idle_cpu(st, now) {
        match over {
            OverBudget::Retained(exec_id) => {
                if let Some(id) = st.retained_ids.get(&exec_id).cloned() {
                    handles::end(inner, st, &id, CloseReason::Cpu, true, settles);
                }
            }
            OverBudget::Free { worker, used } => {
                let Some(process) = st.workers.get(&worker).map(|w| w.process.clone()) else {
                    continue;
                };
                // Never handed a run again: it is killed once the lock is released, and its
                // reader reports it lost (it holds nothing) and starts a replacement.
                st.idle.retain(|k| *k != worker);
                st.preparing.retain(|k| *k != worker);
                eprintln!(
                    "codemode-executor: worker {} spent {} ms of CPU while it held no run (the bound is {} ms per {} ms) and was killed; a replacement is starting. A healthy worker idles at next to no CPU: suspect a program that took control of its worker (an engine exploit).",
                    process.pid(),
                    used.as_millis(),
                    limits::IDLE_CPU_MS,
                    limits::IDLE_CPU_WINDOW_MS,
                );
                kills.push(process);
            }
        }
    }
}

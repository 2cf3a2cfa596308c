//! Enforces each run's time bound from the host side: at the deadline the worker is told to
//! cancel (it terminates the isolate); if it has not answered within CANCEL_GRACE, the process
//! is killed, its reader reaps it, and a replacement starts.

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use codemode_protocol::HostMsg;

use crate::input::WorkerInput;
use crate::{Inner, State, CANCEL_GRACE};

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
                match run.cancelled_at {
                    None if run.deadline <= now => {
                        run.cancelled_at = Some(now);
                        // A run not yet Started is cancelled when it starts (supervisor.rs):
                        // its worker may not know it yet, and would miss the Cancel.
                        if let Some(w) =
                            workers.get(&run.worker).filter(|_| run.unstarted.is_none())
                        {
                            cancels.push((*exec_id, w.control.clone(), w.input.clone()));
                        }
                        next = next.min(now + CANCEL_GRACE);
                    }
                    None => next = next.min(run.deadline),
                    Some(at) if at + CANCEL_GRACE <= now => {
                        if let Some(w) = workers.get(&run.worker) {
                            kills.push(w.process.clone());
                        }
                    }
                    Some(at) => next = next.min(at + CANCEL_GRACE),
                }
            }
            // Retained executions: invocations past their bound, and the idle bound.
            let idle_bound = Duration::from_millis(inner.opts.handles_idle_timeout_ms);
            let due = handles::due(&mut st, now, idle_bound, CANCEL_GRACE, &mut next);
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

/// Tells a worker to stop run `exec_id`: the control pipe terminates running JS; stdin wakes a
/// run waiting for tools.
pub(crate) fn send_cancel(exec_id: u64, control: &Mutex<File>, input: &WorkerInput) {
    let frame = HostMsg::Cancel { exec_id }.encode_small();
    if let Ok(mut pipe) = control.lock() {
        let _ = pipe.write_all(&frame);
    };
    input.send(frame);
}

/// Asks the watchdog to look again by `at` (a new deadline, or now for an abort). It is woken
/// only when `at` precedes the look it planned: it looks at least once a second, so a run
/// starting under the default bound costs it no wake-up. Called with the lock held.
pub(crate) fn due_by(inner: &Inner, st: &mut State, at: Instant) {
    if st.watchdog_at.is_none_or(|planned| at < planned) {
        st.watchdog_at = Some(at);
        inner.changed.notify_all();
    }
}

use crate::handles::{self, CloseReason};

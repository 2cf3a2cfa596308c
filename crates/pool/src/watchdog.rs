//! Enforces each run's time bound from the host side: at the deadline the worker is told to
//! cancel (it terminates the isolate); if it has not answered within CANCEL_GRACE, the process
//! is killed, its reader reaps it, and a replacement starts.

use std::io::Write;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use codemode_protocol::HostMsg;

use crate::{Inner, CANCEL_GRACE};

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
        let wait = {
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
                        if let Some(w) = workers.get(&run.worker) {
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
            next.saturating_duration_since(now)
        };
        handles::run_all(settles);
        for (exec_id, control, input) in cancels {
            let frame = HostMsg::Cancel { exec_id }.encode_small();
            // The control pipe terminates running JS; stdin wakes a run waiting for tools.
            if let Ok(mut pipe) = control.lock() {
                let _ = pipe.write_all(&frame);
            };
            input.send(frame);
        }
        // Outside the state lock: a worker reaped since is not signalled (see `Process`).
        for process in kills {
            process.kill();
        }
        let st = inner.lock();
        let _ = inner.changed.wait_timeout(st, wait);
        drop(inner);
    }
}

use crate::handles::{self, CloseReason};
use crate::State;

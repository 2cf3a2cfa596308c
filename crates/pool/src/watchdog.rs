//! Enforces each run's time bound from the host side: at the deadline the worker is told to
//! cancel (it terminates the isolate); if it has not answered within CANCEL_GRACE, the process
//! is killed, its reader reaps it, and a replacement starts.
//!
//! It also bounds the CPU a worker spends between runs (`IdleCpu`): on every look it reads the
//! CPU clock of each worker that holds no run and no invocation in flight. A retained
//! execution whose timers pass [`limits::IDLE_CPU_MS`] in a window of
//! [`limits::IDLE_CPU_WINDOW_MS`] ends (reason `cpu`); a worker holding nothing that passes it
//! was taken over by its program, and is killed and replaced.

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use codemode_protocol::{limits, HostMsg};

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
            idle_cpu(&inner, &mut st, now, &mut settles, &mut kills);
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
use crate::process::Process;

/// The CPU one worker spends while it holds no run and no invocation in flight, in the current
/// window. Reads come from the worker's CPU clock (`Process::cpu_time`) at the watchdog's
/// looks (at least once a second), and at each invocation's start and answer, so what an
/// invocation spends is its own (its time bound covers it) however often invocations come.
/// Time between a run's end (or an invocation's answer that no hook saw) and the first look
/// is not counted: at most one look apart.
#[derive(Clone, Copy)]
pub(crate) struct IdleCpu {
    phase: Phase,
    window_start: Instant,
    /// CPU counted in this window.
    used: Duration,
    /// The worker's CPU clock at the last read while it was between invocations; `None` while
    /// an invocation runs.
    mark: Option<Duration>,
}

/// What a watched worker is doing; a change starts a fresh count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No run: ready, or preparing its next isolate. Carries the execution it was last sent,
    /// so a run that came and went between two looks starts a fresh count.
    Free(Option<u64>),
    /// Serving retained execution `exec_id`.
    Retained(u64),
}

enum OverBudget {
    Retained(u64),
    Free { worker: u64, used: Duration },
}

/// The phase of worker `key`, if its CPU is watched: not while it runs a program (its time
/// bound covers it), nor while it starts (before its Hello it has run nothing).
fn phase(st: &State, key: u64) -> Option<(Phase, bool)> {
    let slot = st.workers.get(&key)?;
    let last = slot.bound.as_ref().map(|b| b.exec_id);
    match slot.exec {
        None if last.is_some() || st.idle.contains(&key) => Some((Phase::Free(last), false)),
        None => None,
        Some(exec_id) => {
            let r = st.retained.get(st.retained_ids.get(&exec_id)?)?;
            Some((Phase::Retained(exec_id), r.current.is_some()))
        }
    }
}

/// One look: reads each watched worker's CPU clock and returns those past the budget (their
/// counts are dropped: what follows starts afresh).
fn look_at_idle_cpu(st: &mut State, now: Instant) -> Vec<OverBudget> {
    let budget = Duration::from_millis(limits::IDLE_CPU_MS);
    let window = Duration::from_millis(limits::IDLE_CPU_WINDOW_MS);
    let mut over = Vec::new();
    let keys: Vec<u64> = st.workers.keys().copied().collect();
    for key in keys {
        let watched = phase(st, key);
        let cpu = watched.and_then(|_| st.workers.get(&key)?.process.cpu_time());
        let (Some((phase, invoking)), Some(cpu)) = (watched, cpu) else {
            st.idle_cpu.remove(&key);
            continue;
        };
        let fresh = IdleCpu {
            phase,
            window_start: now,
            used: Duration::ZERO,
            mark: (!invoking).then_some(cpu),
        };
        let count = st.idle_cpu.entry(key).or_insert(fresh);
        if count.phase != phase {
            *count = fresh;
            continue;
        }
        match count.mark {
            Some(mark) => {
                count.used += cpu.saturating_sub(mark);
                count.mark = Some(cpu);
            }
            // Between invocations, but the answer's read failed: counting resumes here.
            None if !invoking => count.mark = Some(cpu),
            None => {}
        }
        if count.used > budget {
            over.push(match phase {
                Phase::Retained(exec_id) => OverBudget::Retained(exec_id),
                Phase::Free(_) => OverBudget::Free {
                    worker: key,
                    used: count.used,
                },
            });
            st.idle_cpu.remove(&key);
        } else if now.saturating_duration_since(count.window_start) >= window {
            count.window_start = now;
            count.used = Duration::ZERO;
        }
    }
    st.idle_cpu.retain(|key, _| st.workers.contains_key(key));
    over
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

/// An invocation of the retained execution on `worker` starts: what the worker spent since the
/// last read counts; what the invocation spends does not. Called with the lock held.
pub(crate) fn invocation_started(st: &mut State, worker: u64) {
    let State {
        workers, idle_cpu, ..
    } = st;
    let Some(count) = idle_cpu.get_mut(&worker) else {
        return;
    };
    let cpu = workers.get(&worker).and_then(|w| w.process.cpu_time());
    if let (Some(mark), Some(cpu)) = (count.mark.take(), cpu) {
        count.used += cpu.saturating_sub(mark);
    }
}

/// An invocation of the retained execution on `worker` was answered: counting resumes from
/// here. Called with the lock held.
pub(crate) fn invocation_answered(st: &mut State, worker: u64) {
    let State {
        workers, idle_cpu, ..
    } = st;
    if let Some(count) = idle_cpu.get_mut(&worker) {
        count.mark = workers.get(&worker).and_then(|w| w.process.cpu_time());
    }
}

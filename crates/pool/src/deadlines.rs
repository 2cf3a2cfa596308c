//! The deadline registry: when the watchdog (watchdog.rs) is to look next ([`due_by`], which
//! everything that sets a deadline calls), a run's limit moved by a pause, a rest or a stop
//! (limit.rs does the arithmetic), and the CPU count each worker keeps between runs and
//! invocations (limit.rs, `IdleCpu`), which invocations mark as they start and are answered
//! and the watchdog reads on each look. Plain bookkeeping on the state, under its lock: nothing
//! here signals or settles anything.

use std::time::{Duration, Instant};

use codemode_protocol::limits;

use crate::limit::{IdleCpu, Phase};
use crate::state::{Inner, State};

/// Asks the watchdog to look again by `at` (a new deadline, or now for an abort). It is woken
/// only when `at` precedes the look it planned: it looks at least once a second, so a run
/// starting under the default bound costs it no wake-up. Called with the lock held.
pub(crate) fn due_by(inner: &Inner, st: &mut State, at: Instant) {
    if st.watchdog_at.is_none_or(|planned| at < planned) {
        st.watchdog_at = Some(at);
        inner.changed.notify_all();
    }
}

pub(crate) enum OverBudget {
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
pub(crate) fn look_at_idle_cpu(st: &mut State, now: Instant) -> Vec<OverBudget> {
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

/// Run `exec_id` waits on decisions only (callback mode: the worker said `Idle` with calls put
/// to `approve` and nothing else in flight): its time bound rests until the worker acts again
/// or a decision comes ([`unsuspend`]), for at most `budget` over the whole run (the approval's
/// `timeout`), so a run whose decisions never come, or whose timers compute while they are
/// awaited, still ends. A run already being stopped (an abort, a pause) is left alone.
pub(crate) fn suspend(inner: &Inner, st: &mut State, exec_id: u64, budget: Duration) {
    let Some(run) = st.running.get_mut(&exec_id) else {
        return;
    };
    if let Some(deadline) = run.limit.rest(Instant::now(), budget) {
        due_by(inner, st, deadline);
    }
}

/// Run `exec_id` acts again (a request from its worker, or a decision for it): its time bound
/// runs again with what was left, and what it rested is spent from its allowance. Cheap when it
/// does not rest. Called with the lock held.
pub(crate) fn unsuspend(inner: &Inner, st: &mut State, exec_id: u64) {
    let Some(run) = st.running.get_mut(&exec_id) else {
        return;
    };
    if let Some(deadline) = run.limit.wake(Instant::now()) {
        due_by(inner, st, deadline);
    }
}

/// Stops run `exec_id` now, as at its deadline (the watchdog cancels it): an abort, a pause
/// for approval, a replay that diverged.
pub(crate) fn stop_run(inner: &Inner, exec_id: u64) {
    stop_in(inner, &mut inner.lock(), exec_id);
}

/// [`stop_run`] under the lock; whether the run was running.
pub(crate) fn stop_in(inner: &Inner, st: &mut State, exec_id: u64) -> bool {
    let Some(run) = st.running.get_mut(&exec_id) else {
        return false;
    };
    let now = Instant::now();
    run.limit.stop(now);
    // Wakes the watchdog, which cancels the run.
    due_by(inner, st, now);
    true
}

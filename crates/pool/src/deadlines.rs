//! The deadline registry: when the watchdog (watchdog.rs) is to look next ([`due_by`], which
//! everything that sets a deadline calls), and the CPU count each worker keeps between runs
//! and invocations ([`IdleCpu`]), which invocations mark as they start and are answered and
//! the watchdog reads on each look. Plain bookkeeping on the state, under its lock: nothing
//! here signals or settles anything.

use std::time::{Duration, Instant};

use codemode_protocol::limits;

use crate::{Inner, State};

/// Asks the watchdog to look again by `at` (a new deadline, or now for an abort). It is woken
/// only when `at` precedes the look it planned: it looks at least once a second, so a run
/// starting under the default bound costs it no wake-up. Called with the lock held.
pub(crate) fn due_by(inner: &Inner, st: &mut State, at: Instant) {
    if st.watchdog_at.is_none_or(|planned| at < planned) {
        st.watchdog_at = Some(at);
        inner.changed.notify_all();
    }
}

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

/// The host's check of one run's (or one invocation's) CPU budget, a backstop behind the
/// worker's own count (docs/bounds.md, "Budgets"): the worker stops its program when the
/// program's thread has spent `cpu_limit_ms`; a worker that does not (one whose isolate was
/// taken over, or whose count broke) is stopped here once its whole process has spent
/// [`CpuWatch::allowance`], read from the process's CPU clock at the watchdog's looks.
#[derive(Clone, Copy)]
pub(crate) struct CpuWatch {
    /// The budget, for the failure's text.
    pub limit_ms: u32,
    /// The process's CPU clock when the run (or invocation) started.
    from: Duration,
    allowance: Duration,
}

/// What the watchdog learns from one look at a [`CpuWatch`].
pub(crate) enum CpuLook {
    /// Spent past its allowance: stop it.
    Over,
    /// Not yet: look again by then (the earliest the allowance can be spent, one core busy).
    Within(Duration),
    /// The clock could not be read (the worker is going): nothing to decide.
    Unknown,
}

impl CpuWatch {
    /// Starts watching from the process's CPU clock now; `None` without a budget or a clock.
    pub(crate) fn start(process: &crate::process::Process, limit_ms: Option<u32>) -> Option<Self> {
        let limit_ms = limit_ms?;
        Some(CpuWatch {
            limit_ms,
            from: process.cpu_time()?,
            allowance: Self::allowance(limit_ms),
        })
    }

    /// Twice the budget and 100 ms more: the process clock counts every thread of the worker,
    /// V8's own (garbage collection, compilation) beside the program's, so a program within its
    /// budget never reaches this; one whose worker does not stop it is stopped by this.
    pub(crate) fn allowance(limit_ms: u32) -> Duration {
        Duration::from_millis(2 * u64::from(limit_ms) + 100)
    }

    /// The run was sent an answer: the worker may have polled for it before it slept, CPU its
    /// budget does not count (`limits::ANSWER_POLL_US`), so the allowance grows by twice that.
    /// Only answers the host sends can make a worker poll.
    pub(crate) fn answered(&mut self) {
        self.allowance += Duration::from_micros(2 * codemode_protocol::limits::ANSWER_POLL_US);
    }

    pub(crate) fn look(&self, process: &crate::process::Process) -> CpuLook {
        match process.cpu_time() {
            None => CpuLook::Unknown,
            Some(now) => {
                let spent = now.saturating_sub(self.from);
                match self.allowance.checked_sub(spent) {
                    Some(left) if !left.is_zero() => {
                        CpuLook::Within(left.max(Duration::from_millis(5)))
                    }
                    _ => CpuLook::Over,
                }
            }
        }
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
    let now = Instant::now();
    if run.cancelled_at.is_some() || run.deadline <= now || run.suspended.is_some() {
        return;
    }
    let left_to_rest = *run.rest_left.get_or_insert(budget);
    if left_to_rest.is_zero() {
        return;
    }
    let left = run.deadline - now;
    run.suspended = Some((left, now));
    run.deadline = now + left + left_to_rest;
    let deadline = run.deadline;
    due_by(inner, st, deadline);
}

/// Run `exec_id` acts again (a request from its worker, or a decision for it): its time bound
/// runs again with what was left, and what it rested is spent from its allowance. Cheap when it
/// does not rest. Called with the lock held.
pub(crate) fn unsuspend(inner: &Inner, st: &mut State, exec_id: u64) {
    let Some(run) = st.running.get_mut(&exec_id) else {
        return;
    };
    let Some((left, since)) = run.suspended.take() else {
        return;
    };
    let now = Instant::now();
    if let Some(rest) = run.rest_left.as_mut() {
        *rest = rest.saturating_sub(now.saturating_duration_since(since));
    }
    if run.cancelled_at.is_none() {
        run.deadline = now + left;
        let deadline = run.deadline;
        due_by(inner, st, deadline);
    }
}

//! The limits of one request, enforced from the host's side: every run and every invocation
//! holds one [`Limit`], and every bound it has passes through it — its time bound (with the
//! rest it takes while it waits on approvals), its CPU budget's backstop ([`CpuWatch`]), the
//! cancel, the grace, the kill, and the failure it reports. The watchdog (watchdog.rs) only
//! looks: [`Limit::look`] says what to do, the same for a run and an invocation.
//!
//! Also the CPU count of a worker between requests ([`IdleCpu`]), which the watchdog reads
//! (deadlines.rs). Plain data and arithmetic on the clock: nothing here locks, signals or
//! settles anything.

use std::time::{Duration, Instant};

use codemode_protocol::{limits, Failure, FailureCode};

use crate::api::{CloseReason, CANCEL_GRACE};
use crate::process::Process;

/// The bound a cancelled request was stopped by, which names its failure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Stop {
    /// Its time bound, or its caller's abort (observe.rs turns that into `ABORTED`).
    #[default]
    Time,
    /// Its CPU budget, by the host's backstop ([`CpuWatch`]).
    Cpu,
}

/// What the watchdog is to do about a request, from one look at its [`Limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Within its bounds, or already cancelled and within the grace.
    Wait,
    /// Past a bound just now: tell its worker to cancel it (once).
    Cancel,
    /// Cancelled and still going after [`CANCEL_GRACE`]: kill its worker.
    Kill,
}

/// One request's limits: a run's, from the moment it is handed to a worker, or an
/// invocation's, from the moment it is sent.
pub(crate) struct Limit {
    timeout_ms: u64,
    deadline: Instant,
    /// Set when a bound passed and the request was cancelled.
    cancelled_at: Option<Instant>,
    /// The host's backstop of the CPU budget, once the worker has started the request.
    cpu: Option<CpuWatch>,
    /// Why it was cancelled.
    stopped_by: Stop,
    /// While a run waits on decisions only: the time bound that was left, and since when it
    /// rests ([`Limit::rest`]).
    suspended: Option<(Duration, Instant)>,
    /// How long its time bound may still rest (the approval's `timeout`, spent as it rests);
    /// `None` until it first does.
    rest_left: Option<Duration>,
    /// Handed to a worker still preparing: the time bound counts again from when the worker
    /// starts the request ([`Limit::restart`]). Cleared by a stop, whose deadline stands.
    rebase: bool,
}

impl Limit {
    /// A time bound of `timeout_ms` from `now`, and `extra` more (a run handed to a worker
    /// still preparing: `PREPARE_GRACE`, until [`Limit::restart`] counts it afresh).
    pub(crate) fn new(timeout_ms: u64, now: Instant, extra: Duration) -> Limit {
        Limit {
            timeout_ms,
            deadline: now + Duration::from_millis(timeout_ms) + extra,
            cancelled_at: None,
            cpu: None,
            stopped_by: Stop::Time,
            suspended: None,
            rest_left: None,
            rebase: !extra.is_zero(),
        }
    }

    pub(crate) fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether a bound passed and the request was cancelled (or is to be, when it starts).
    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled_at.is_some()
    }

    /// The worker started the request: a time bound that waited on a worker still preparing
    /// counts again from `now`. The new deadline, or `None` when it stands (it did not wait, it
    /// was stopped, or it is cancelled).
    pub(crate) fn restart(&mut self, now: Instant) -> Option<Instant> {
        if !std::mem::take(&mut self.rebase) || self.cancelled() {
            return None;
        }
        self.deadline = now + Duration::from_millis(self.timeout_ms);
        Some(self.deadline)
    }

    /// Starts the CPU backstop of `limit_ms` from `process`'s CPU clock now (what the worker
    /// spent before is not the request's); the earliest the watchdog need look at it.
    pub(crate) fn watch_cpu(
        &mut self,
        process: &Process,
        limit_ms: Option<u32>,
        now: Instant,
    ) -> Option<Instant> {
        self.cpu = CpuWatch::start(process, limit_ms);
        self.cpu.map(|c| now + c.allowance)
    }

    /// The request was sent an answer: its worker may poll for it (`limits::ANSWER_POLL_US`),
    /// CPU its budget does not count, so the backstop allows for it.
    pub(crate) fn answered(&mut self) {
        if let Some(cpu) = self.cpu.as_mut() {
            cpu.answered();
        }
    }

    /// Stops the request now, as at its deadline (an abort, a pause, a replay that diverged):
    /// the watchdog cancels it at its next look.
    pub(crate) fn stop(&mut self, now: Instant) {
        self.deadline = self.deadline.min(now);
        self.suspended = None;
        self.rebase = false;
    }

    /// The one state machine: past its CPU allowance or its deadline, the request is to be
    /// cancelled; cancelled and still going after [`CANCEL_GRACE`], its worker is to be killed.
    /// `next` comes no later than the moment a bound can next pass.
    pub(crate) fn look(
        &mut self,
        process: Option<&Process>,
        now: Instant,
        next: &mut Instant,
    ) -> Verdict {
        if self.cancelled_at.is_none() && self.deadline > now && self.cpu_over(process, now, next) {
            // Stopped as at a deadline, with the CPU budget's text.
            self.stopped_by = Stop::Cpu;
            self.deadline = now;
        }
        match self.cancelled_at {
            None if self.deadline <= now => {
                self.cancelled_at = Some(now);
                *next = (*next).min(now + CANCEL_GRACE);
                Verdict::Cancel
            }
            None => {
                *next = (*next).min(self.deadline);
                Verdict::Wait
            }
            Some(at) if at + CANCEL_GRACE <= now => Verdict::Kill,
            Some(at) => {
                *next = (*next).min(at + CANCEL_GRACE);
                Verdict::Wait
            }
        }
    }

    /// Whether the worker spent past the CPU allowance; if not yet, `next` comes no later
    /// than the earliest it could.
    fn cpu_over(&self, process: Option<&Process>, now: Instant, next: &mut Instant) -> bool {
        let (Some(watch), Some(process)) = (self.cpu, process) else {
            return false;
        };
        match watch.look(process) {
            CpuLook::Over => {
                eprintln!(
                    "codemode-executor: worker {} spent more than {} ms of CPU in a run (or invocation) whose CPU budget is {} ms without stopping it, and the host stopped it. A healthy worker stops its program at the budget: suspect a program that took control of its worker (an engine exploit).",
                    process.pid(),
                    watch.allowance.as_millis(),
                    watch.limit_ms,
                );
                true
            }
            CpuLook::Within(left) => {
                *next = (*next).min(now + left);
                false
            }
            CpuLook::Unknown => false,
        }
    }

    /// What a request the host cancelled fails with: its time bound's text, or its CPU
    /// budget's when the backstop stopped it, whatever the worker said.
    pub(crate) fn failure(&self) -> Failure {
        match (self.stopped_by, self.cpu) {
            (Stop::Cpu, Some(watch)) => cpu_spent(watch.limit_ms),
            _ => timed_out(self.timeout_ms),
        }
    }

    /// Why a retained execution ends when the host cancelled its invocation.
    pub(crate) fn close_reason(&self) -> CloseReason {
        match self.stopped_by {
            Stop::Cpu => CloseReason::Cpu,
            Stop::Time => CloseReason::Timeout,
        }
    }

    /// A run waits on decisions only (callback mode): its time bound rests until it acts again
    /// ([`Limit::wake`]), for at most `budget` over the whole run (the approval's `timeout`), so
    /// a run whose decisions never come still ends. The new deadline, or `None` when it does
    /// not rest (already stopping, already resting, its rest spent).
    pub(crate) fn rest(&mut self, now: Instant, budget: Duration) -> Option<Instant> {
        if self.cancelled() || self.deadline <= now || self.suspended.is_some() {
            return None;
        }
        let left_to_rest = *self.rest_left.get_or_insert(budget);
        if left_to_rest.is_zero() {
            return None;
        }
        let left = self.deadline - now;
        self.suspended = Some((left, now));
        self.deadline = now + left + left_to_rest;
        Some(self.deadline)
    }

    /// The run acts again: its time bound runs with what was left, and what it rested is spent
    /// from its allowance. The new deadline, or `None` when it did not rest.
    pub(crate) fn wake(&mut self, now: Instant) -> Option<Instant> {
        let (left, since) = self.suspended.take()?;
        if let Some(rest) = self.rest_left.as_mut() {
            *rest = rest.saturating_sub(now.saturating_duration_since(since));
        }
        if self.cancelled() {
            return None;
        }
        self.deadline = now + left;
        Some(self.deadline)
    }
}

/// `TIMEOUT` for a time bound of `timeout_ms`.
pub(crate) fn timed_out(timeout_ms: u64) -> Failure {
    FailureCode::Timeout.failure(&[("ms", &timeout_ms.to_string())])
}

/// `CPU_LIMIT` for a budget of `limit_ms`.
pub(crate) fn cpu_spent(limit_ms: u32) -> Failure {
    FailureCode::CpuLimit.failure(&[("ms", &limit_ms.to_string())])
}

/// The host's check of one request's CPU budget, a backstop behind the worker's own count
/// (docs/bounds.md, "Budgets"): the worker stops its program when the program's thread has
/// spent `cpu_limit_ms`; a worker that does not (one whose isolate was taken over, or whose
/// count broke) is stopped once its whole process has spent [`CpuWatch::allowance`], read
/// from the process's CPU clock at the watchdog's looks.
#[derive(Clone, Copy)]
pub(crate) struct CpuWatch {
    /// The budget, for the failure's text.
    limit_ms: u32,
    /// The process's CPU clock when the request started.
    from: Duration,
    allowance: Duration,
}

/// What one look at a [`CpuWatch`] finds.
enum CpuLook {
    /// Spent past its allowance: stop it.
    Over,
    /// Not yet: look again by then (the earliest the allowance can be spent, one core busy).
    Within(Duration),
    /// The clock could not be read (the worker is going): nothing to decide.
    Unknown,
}

impl CpuWatch {
    /// Starts watching from the process's CPU clock now; `None` without a budget or a clock.
    fn start(process: &Process, limit_ms: Option<u32>) -> Option<Self> {
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
    fn allowance(limit_ms: u32) -> Duration {
        Duration::from_millis(2 * u64::from(limit_ms) + 100)
    }

    /// The request was sent an answer: the worker may have polled for it before it slept, CPU
    /// its budget does not count (`limits::ANSWER_POLL_US`), so the allowance grows by twice
    /// that. Only answers the host sends can make a worker poll.
    fn answered(&mut self) {
        self.allowance += Duration::from_micros(2 * limits::ANSWER_POLL_US);
    }

    fn look(&self, process: &Process) -> CpuLook {
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

/// The CPU one worker spends while it holds no run and no invocation in flight, in the current
/// window (counted by deadlines.rs, `look_at_idle_cpu`). Reads come from the worker's CPU
/// clock (`Process::cpu_time`) at the watchdog's looks (at least once a second), and at each
/// invocation's start and answer, so what an invocation spends is its own (its time bound
/// covers it) however often invocations come. Time between a run's end (or an invocation's
/// answer that no hook saw) and the first look is not counted: at most one look apart.
#[derive(Clone, Copy)]
pub(crate) struct IdleCpu {
    pub(crate) phase: Phase,
    pub(crate) window_start: Instant,
    /// CPU counted in this window.
    pub(crate) used: Duration,
    /// The worker's CPU clock at the last read while it was between invocations; `None` while
    /// an invocation runs.
    pub(crate) mark: Option<Duration>,
}

/// What a watched worker is doing; a change starts a fresh count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No run: ready, or preparing its next isolate. Carries the execution it was last sent,
    /// so a run that came and went between two looks starts a fresh count.
    Free(Option<u64>),
    /// Serving retained execution `exec_id`.
    Retained(u64),
}

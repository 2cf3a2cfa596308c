//! The call record: every tool call of every run, from the moment it leaves the worker to its
//! answer, kept once. What it says is read three ways: the run's audit trail
//! (`outcome.calls`, within `limits::CALL_RECORDS`), the metrics' tool-call seconds (observe.rs,
//! from what [`Calls::answered`] returns), and the approval gate (approvals/), which says how
//! the calls it answered itself ended. One lock of its own, never held while calling out;
//! approvals/ takes it under its own lock, never the other way round.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use codemode_protocol::{limits, CallRecord, CallStatus};

use crate::api::{Completion, ToolCall};

/// Every run's trail and every call in flight.
#[derive(Default)]
pub(crate) struct Calls(Mutex<Record>);

#[derive(Default)]
struct Record {
    /// Each run's trail, from its submission to its completion.
    trails: HashMap<u64, Vec<CallRecord>>,
    /// Calls not yet answered, by (execution, call): their place in the trail (none past its
    /// bound, or for a retained execution's call after its run completed) and since when they
    /// count.
    open: HashMap<(u64, u32), Open>,
}

struct Open {
    index: Option<usize>,
    since: Instant,
}

impl Calls {
    fn lock(&self) -> MutexGuard<'_, Record> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps run `exec_id`'s trail until its completion, which carries it (`outcome.calls`);
    /// a call the run ended without an answer to says `error`.
    pub(crate) fn track(self: &Arc<Self>, exec_id: u64, done: Completion) -> Completion {
        self.lock().trails.insert(exec_id, Vec::new());
        let me = self.clone();
        Box::new(move |id, result| {
            let trail = {
                let mut r = me.lock();
                let Record { trails, open } = &mut *r;
                let mut trail = trails.remove(&id).unwrap_or_default();
                open.retain(|(e, _), o| {
                    if *e != id {
                        return true;
                    }
                    if let Some(c) = o.index.and_then(|i| trail.get_mut(i)) {
                        c.status = CallStatus::Error;
                        c.ms = ms(o.since.elapsed());
                    }
                    false
                });
                trail
            };
            done(
                id,
                result.map(|mut outcome| {
                    outcome.calls = trail;
                    outcome
                }),
            )
        })
    }

    /// `call` left its worker: it is recorded, in flight from now.
    pub(crate) fn called(&self, call: &ToolCall) {
        let mut r = self.lock();
        let index = r.trails.get_mut(&call.exec_id).and_then(|trail| {
            (trail.len() < limits::CALL_RECORDS).then(|| {
                trail.push(CallRecord {
                    provider: call.provider.clone(),
                    tool: call.tool.clone(),
                    status: CallStatus::Ok,
                    ms: 0.0,
                });
                trail.len() - 1
            })
        });
        let since = Instant::now();
        r.open
            .insert((call.exec_id, call.call_id), Open { index, since });
    }

    /// Call `call_id` of `exec_id` goes to the host only now (a person approved it): its time
    /// counts from here.
    pub(crate) fn restart(&self, exec_id: u64, call_id: u32) {
        if let Some(o) = self.lock().open.get_mut(&(exec_id, call_id)) {
            o.since = Instant::now();
        }
    }

    /// Call `call_id` of `exec_id` ended without the host (the gate answered it from a ledger,
    /// denied it, held it, refused it): its status, and no time.
    pub(crate) fn settled(&self, exec_id: u64, call_id: u32, status: CallStatus) {
        self.close(exec_id, call_id, status, false);
    }

    /// The host answered call `call_id` of `exec_id` (`status`): how long it took, for the
    /// metrics; `None` for a call nobody waits for any more.
    pub(crate) fn answered(
        &self,
        exec_id: u64,
        call_id: u32,
        status: CallStatus,
    ) -> Option<Duration> {
        self.close(exec_id, call_id, status, true)
    }

    /// The host's dispatch denied call `call_id` of `exec_id` itself: `denied`, and no time (the
    /// call never ran); how long the host took, for the metrics.
    pub(crate) fn denied(&self, exec_id: u64, call_id: u32) -> Option<Duration> {
        self.close(exec_id, call_id, CallStatus::Denied, false)
    }

    /// Call `call_id` of `exec_id` is no longer in flight: its status, and (`timed`) how long
    /// it took.
    fn close(
        &self,
        exec_id: u64,
        call_id: u32,
        status: CallStatus,
        timed: bool,
    ) -> Option<Duration> {
        let mut r = self.lock();
        let o = r.open.remove(&(exec_id, call_id))?;
        let took = o.since.elapsed();
        if let Some(c) = r.trails.get_mut(&exec_id).and_then(|t| t.get_mut(o.index?)) {
            c.status = status;
            c.ms = if timed { ms(took) } else { 0.0 };
        }
        Some(took)
    }

    /// Run `exec_id`'s trail entries and the calls in flight (of every run).
    #[cfg(test)]
    pub(crate) fn held(&self, exec_id: u64) -> (usize, usize) {
        let r = self.lock();
        (r.trails.get(&exec_id).map_or(0, Vec::len), r.open.len())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

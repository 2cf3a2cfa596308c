//! Approvals (docs/approvals.md): tool calls that wait for a person's yes. The rules a request's
//! approvals are held to are rules.rs; every run's record of its calls is calls.rs, which the
//! book tells how the calls it answered itself ended.
//!
//! Every run is tracked here from its submission to its completion ([`Book::track`]). A run
//! with approvals ([`ApprovalSpec`]) has a [`Gate`]: each request it makes (tool call or fetch) takes the
//! next slot of its ledger, in the order the program made them (the worker sends them in that
//! order, and a replayable run makes them in the same order again). A call of a tool that needs
//! approval is held (interrupt mode) or put to the host's `approve` (callback mode). In interrupt
//! mode the run pauses when it waits with calls held and none of its other requests in flight
//! (the worker's `Idle`): the ledger, the held calls and the request are sealed into a token
//! (token.rs), the run is stopped, and its completion carries the token instead of a result.
//! `resume` opens the token and runs the program again as a replayable run: every slot of the
//! ledger is answered from it (the host is not asked again), a held call by its decision, and a
//! request that is not the ledger's next ends the run with `REPLAY_DIVERGED`.
//!
//! Locking: one lock here, taken after the pool's state lock where both are held (`track`, at
//! submission) and never the other way round; each entry point returns what to do, and the
//! caller (dispatch.rs, schedule.rs, lib.rs) does it with this lock released.
//!
//! One file over 500 lines: the book's entry points and the gate they drive share one private
//! state (`Track`, `Gate`, the ledger's slots) under one lock, and each entry point reads as one
//! step of the ledger's story (a call, an answer, an idle, a decision, a pause); about a fifth
//! is its tests.

pub(crate) mod rules;
mod token;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use codemode_protocol::{
    limits, CallStatus, Failure, FailureCode, Paused, PendingCall, Replayable, RunError,
    RunOutcome, WireResponse,
};

use crate::api::{ApprovalMode, ApprovalSpec, Completion, Decision, ExecSpec, ToolCall};
use crate::calls::Calls;
pub(crate) use token::Key;
use token::{Answer, Basis, Body, Slot};

/// What the caller does with a tool call after the book saw it.
pub(crate) enum CallAction {
    /// To the host's dispatch.
    Forward(ToolCall),
    /// Answered here (from the ledger): `ok` and the payload, as the host would.
    Answer(bool, Vec<u8>),
    /// Denied (a decision, or the ledger's record of one): the call rejects inside the sandbox
    /// with this `APPROVAL_DENIED` text and that code.
    Deny(String),
    /// Put to the host's `approve` (callback mode); the time bound waits meanwhile.
    Ask(ToolCall),
    /// Held for a decision, or dropped (the run is being stopped).
    Hold,
    /// The run is over: stop it (paused, diverged, or its token too large).
    Stop,
}

/// What the caller does with a fetch after the book saw it.
pub(crate) enum FetchAction {
    Live,
    Answer(Result<WireResponse, String>),
    Stop,
}

/// How a gated run ended early, for its completion.
enum Ending {
    Paused(Paused),
    Failed(FailureCode, String),
}

/// A gated run's tool call on its way to the host: its ledger slot and what it asked.
type Open = (usize, String, String, Vec<u8>);

/// A gated run's ledger and what waits on it.
struct Gate {
    basis: Basis,
    mode: ApprovalMode,
    /// The ledger a resume replays (empty on a first run).
    script: Vec<Slot>,
    /// Decisions of the script's pending slots, by slot.
    decisions: HashMap<usize, Decision>,
    /// This run's requests in order; `None` while in flight, held or put to `approve`. Emptied
    /// when the ledger passes its bound (`requests` still counts them).
    slots: Vec<Option<Slot>>,
    /// Requests the run made so far (the next one's slot).
    requests: usize,
    /// Held calls: slot, provider, tool, arguments.
    held: Vec<(usize, String, String, Vec<u8>)>,
    /// Calls put to `approve`, by call id: their slot and the call.
    asked: HashMap<u32, (usize, ToolCall)>,
    /// Fetches in flight, by call id: slot, method, URL.
    fetches: HashMap<u32, (usize, String, String)>,
    /// Requests with the host (or the network), not yet answered.
    in_flight: usize,
    /// The worker said Idle and has not sent a request since.
    idle: bool,
    ended: Option<Ending>,
    /// Bytes the token would hold so far (the ledger's answers and the held calls): past
    /// `limits::APPROVAL_TOKEN_BYTES` the run ends (interrupt mode; callback mode keeps no
    /// ledger).
    bytes: usize,
    /// Argument bytes of the calls put to `approve` and not yet decided (callback mode): held
    /// to `limits::TOOL_BYTES_IN_FLIGHT`, as the calls the host dispatches are.
    asked_bytes: usize,
}

/// What the caller does after the worker said `Idle`.
pub(crate) struct IdleAction {
    /// The run paused (or ended): stop it.
    pub stop: bool,
    /// It waits only on decisions (callback mode): its time bound may rest, for at most this
    /// in all (the approval's `timeout`; deadlines.rs `suspend`).
    pub rest: Option<Duration>,
}

/// One run, from its submission to its completion.
#[derive(Default)]
struct Track {
    /// A gated run's calls with the host, by call id.
    open: HashMap<u32, Open>,
    gate: Option<Gate>,
}

/// The runs' tracks, the key tokens are signed with, and the call record (calls.rs), where the
/// book says how the calls it answered itself ended.
pub(crate) struct Book {
    key: Key,
    runs: Mutex<HashMap<u64, Track>>,
    calls: Arc<Calls>,
}

/// The key of a pool given none: random, its own, so a token resumes only on the pool that
/// made it (and on none after it closes); pools that are to resume each other's tokens share
/// a key they are given.
fn random_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    fill_random(&mut key);
    key
}

fn fill_random(out: &mut [u8]) {
    use ring::rand::SecureRandom as _;
    // The system's random source failing is not recoverable in any useful way; the process
    // clock and address keep the key unguessable enough not to be a constant if it ever does.
    if ring::rand::SystemRandom::new().fill(out).is_err() {
        let fallback = format!("{:?}{:p}", SystemTime::now(), out);
        let d = ring::digest::digest(&ring::digest::SHA256, fallback.as_bytes());
        for (o, b) in out.iter_mut().zip(d.as_ref().iter().cycle()) {
            *o = *b;
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A run with approvals, as submitted: its request and gate, ready for the pool.
pub(crate) struct Gated {
    pub replayable: Replayable,
    gate: Gate,
}

/// A token's request as the pool runs it again (the token is the boundary: its `Basis` is
/// what was sealed): interrupt mode, as every paused run's.
impl From<&Basis> for ExecSpec {
    fn from(basis: &Basis) -> Self {
        ExecSpec {
            code: basis.code.clone(),
            modules: basis.modules.clone(),
            providers: basis.providers.clone(),
            timeout_ms: Some(basis.timeout_ms),
            memory_limit_mib: Some(basis.memory_limit_mib),
            outbound: basis.outbound,
            retain_handles: false,
            live_logs: false,
            budgets: basis.budgets,
            approval: Some(ApprovalSpec {
                approve: basis.approve.clone(),
                mode: basis_mode(basis),
            }),
            tenant: basis.tenant.clone(),
        }
    }
}

/// The mode a paused run resumes in: interrupt, for the token's expiry.
fn basis_mode(basis: &Basis) -> ApprovalMode {
    ApprovalMode::Interrupt {
        expires_in_ms: basis.expires_in_ms,
    }
}

impl Book {
    pub(crate) fn new(key: Option<&[u8]>, calls: Arc<Calls>) -> Book {
        Book {
            key: Key::new(key.unwrap_or(&random_key())),
            runs: Mutex::new(HashMap::new()),
            calls,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Track>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A first run with approvals: its gate, and the seed and clock that make it replayable.
    pub(crate) fn first_run(spec: &ExecSpec, approval: &ApprovalSpec) -> Gated {
        let mut seed = [0u8; 8];
        fill_random(&mut seed);
        let replayable = Replayable {
            seed: u64::from_le_bytes(seed),
            epoch_ms: now_ms(),
        };
        let expires_in_ms = match approval.mode {
            ApprovalMode::Interrupt { expires_in_ms } => expires_in_ms,
            ApprovalMode::Callback { .. } => 0,
        };
        let basis = Basis {
            code: spec.code.clone(),
            modules: spec.modules.clone(),
            providers: spec.providers.clone(),
            approve: approval.approve.clone(),
            timeout_ms: spec.timeout_ms.unwrap_or(0),
            memory_limit_mib: spec.memory_limit_mib.unwrap_or(0),
            outbound: spec.outbound,
            budgets: spec.budgets,
            replayable,
            expires_in_ms,
            tenant: spec.tenant.clone(),
        };
        Gated {
            replayable,
            gate: Gate::new(basis, approval.mode, Vec::new(), HashMap::new()),
        }
    }

    /// Opens `token` with this book's key and checks `decisions` against its held calls: the
    /// request to run again (live logs off: the resuming caller says) and its gate.
    pub(crate) fn resume(
        &self,
        token: &str,
        decisions: Vec<(String, Decision)>,
        tenant: Option<&str>,
    ) -> Result<(ExecSpec, Gated), Failure> {
        let body = token::open(&self.key, token, now_ms())?;
        // Another tenant's token answers as one of another key: it learns nothing of the run.
        if body.basis.tenant.as_deref() != tenant {
            return Err(FailureCode::TokenForeignKey.failure(&[]));
        }
        let pending: Vec<usize> = body
            .script
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Slot::Pending { .. }))
            .map(|(i, _)| i)
            .collect();
        let ids = pending
            .iter()
            .map(|i| format!("\"{i}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let invalid = |detail: String| {
            FailureCode::DecisionsInvalid.failure(&[("detail", &detail), ("ids", &ids)])
        };
        let pending_set: std::collections::HashSet<usize> = pending.iter().copied().collect();
        let mut decided = HashMap::new();
        for (id, decision) in decisions {
            let slot = id
                .parse::<usize>()
                .ok()
                .filter(|i| pending_set.contains(i) && id == i.to_string());
            let Some(slot) = slot else {
                return Err(invalid(format!("{id:?} names no pending call")));
            };
            if decided.insert(slot, decision).is_some() {
                return Err(invalid(format!("{id:?} is decided twice")));
            }
        }
        if let Some(missing) = pending.iter().find(|i| !decided.contains_key(i)) {
            return Err(invalid(format!("no decision for call \"{missing}\"")));
        }
        let Body { basis, script, .. } = body;
        let resumed = ExecSpec::from(&basis);
        let replayable = basis.replayable;
        let mode = basis_mode(&basis);
        Ok((
            resumed,
            Gated {
                replayable,
                gate: Gate::new(basis, mode, script, decided),
            },
        ))
    }

    /// Tracks run `exec_id` (gated when it has approvals); its completion goes through the
    /// book, which adds the calls and turns a paused or diverged run's ending into its own.
    pub(crate) fn track(
        self: &Arc<Self>,
        exec_id: u64,
        gated: Option<Gated>,
        done: Completion,
    ) -> Completion {
        self.lock().insert(
            exec_id,
            Track {
                gate: gated.map(|g| g.gate),
                ..Track::default()
            },
        );
        let me = self.clone();
        Box::new(move |id, result| {
            let track = me.lock().remove(&id).unwrap_or_default();
            done(id, result.map(|outcome| track.finish(outcome)))
        })
    }

    /// A tool call of run `exec_id`, as the worker sent it.
    pub(crate) fn tool_call(&self, call: ToolCall) -> CallAction {
        let mut runs = self.lock();
        let Some(track) = runs.get_mut(&call.exec_id) else {
            return CallAction::Forward(call);
        };
        let (exec_id, call_id) = (call.exec_id, call.call_id);
        let settle = |status| self.calls.settled(exec_id, call_id, status);
        let Some(gate) = track.gate.as_mut() else {
            return CallAction::Forward(call);
        };
        let Some(n) = gate.next_request() else {
            return CallAction::Hold;
        };
        let asked = (call.provider.clone(), call.tool.clone(), call.args.clone());
        if let Some(expected) = gate.script.get(n) {
            match expected {
                Slot::Call {
                    provider,
                    tool,
                    args,
                    answer,
                } if (provider, tool, args) == (&asked.0, &asked.1, &asked.2) => {
                    let action = match answer {
                        Answer::Ok(bytes) => CallAction::Answer(true, bytes.clone()),
                        Answer::Err(text) => CallAction::Answer(false, text.clone().into_bytes()),
                        Answer::Denied(text) => CallAction::Deny(text.clone()),
                    };
                    let status = match answer {
                        Answer::Denied(_) => CallStatus::Denied,
                        _ => CallStatus::Replayed,
                    };
                    if let Some(slot) = gate.slots.get_mut(n) {
                        *slot = Some(expected.clone());
                    }
                    settle(status);
                    return action;
                }
                Slot::Pending {
                    provider,
                    tool,
                    args,
                } if (provider, tool, args) == (&asked.0, &asked.1, &asked.2) => {
                    let decision = gate.decisions.get(&n).cloned().unwrap_or(Decision {
                        approved: false,
                        reason: None,
                    });
                    if !decision.approved {
                        let text = denied(&asked.0, &asked.1, decision.reason.as_deref());
                        let answered = Slot::Call {
                            provider: asked.0,
                            tool: asked.1,
                            args: asked.2,
                            answer: Answer::Denied(text.clone()),
                        };
                        if let Some(slot) = gate.slots.get_mut(n) {
                            *slot = Some(answered);
                        }
                        settle(CallStatus::Denied);
                        return CallAction::Deny(text);
                    }
                    return track.forward(call, (n, asked.0, asked.1, asked.2));
                }
                other => {
                    let expected = describe(other);
                    let got = match other {
                        Slot::Call { provider, tool, .. }
                        | Slot::Pending { provider, tool, .. }
                            if (provider, tool) == (&asked.0, &asked.1) =>
                        {
                            format!("a call of {}.{} with other arguments", asked.0, asked.1)
                        }
                        _ => format!("a call of {}.{}", asked.0, asked.1),
                    };
                    gate.ended = Some(Ending::Failed(
                        FailureCode::ReplayDiverged,
                        FailureCode::ReplayDiverged
                            .render(&[("got", &got), ("expected", &expected)]),
                    ));
                    return CallAction::Stop;
                }
            }
        }
        if gate.needs_approval(&call.provider, &call.tool) {
            match gate.mode {
                ApprovalMode::Interrupt { .. } => {
                    let size = asked.0.len() + asked.1.len() + asked.2.len();
                    gate.held.push((n, asked.0, asked.1, asked.2));
                    settle(CallStatus::Pending);
                    let Some(gate) = track.gate.as_mut() else {
                        return CallAction::Hold;
                    };
                    if gate.grow(size) {
                        return CallAction::Stop;
                    }
                    return CallAction::Hold;
                }
                ApprovalMode::Callback { .. } => {
                    let size = asked.2.len();
                    let limit = limits::TOOL_BYTES_IN_FLIGHT;
                    if gate.asked_bytes + size > limit {
                        let text = FailureCode::ToolBytesInFlight.render(&[
                            ("provider", &asked.0),
                            ("tool", &asked.1),
                            ("size", &size.to_string()),
                            ("held", &gate.asked_bytes.to_string()),
                            ("limit", &limit.to_string()),
                        ]);
                        settle(CallStatus::Error);
                        return CallAction::Answer(false, text.into_bytes());
                    }
                    gate.asked_bytes += size;
                    let request = ToolCall {
                        exec_id: call.exec_id,
                        call_id: call.call_id,
                        provider: asked.0,
                        tool: asked.1,
                        args: asked.2,
                    };
                    gate.asked.insert(call.call_id, (n, call));
                    return CallAction::Ask(request);
                }
            }
        }
        track.forward(call, (n, asked.0, asked.1, asked.2))
    }

    /// The host answered tool call `call_id` of `exec_id`; whether the run is to be stopped
    /// now (it paused).
    pub(crate) fn answered(&self, exec_id: u64, call_id: u32, ok: bool, payload: &[u8]) -> bool {
        self.host_answered(exec_id, call_id, || match ok {
            true => Answer::Ok(payload.to_vec()),
            false => Answer::Err(String::from_utf8_lossy(payload).into_owned()),
        })
    }

    /// The host's dispatch denied tool call `call_id` of `exec_id` itself (a check of its own
    /// refused it, as approval would): the call's record says `denied`, and a replay answers it
    /// with the same denial. Whether the run is to be stopped now (it paused).
    pub(crate) fn host_denied(&self, exec_id: u64, call_id: u32, text: &str) -> bool {
        self.host_answered(exec_id, call_id, || Answer::Denied(text.to_string()))
    }

    /// A gated run's call came back from the host with `answer`: its ledger slot is filled;
    /// whether the run is to be stopped now (the ledger overflowed, or it paused).
    fn host_answered(&self, exec_id: u64, call_id: u32, answer: impl FnOnce() -> Answer) -> bool {
        let mut runs = self.lock();
        let Some(track) = runs.get_mut(&exec_id) else {
            return false;
        };
        let (Some(gate), Some((n, provider, tool, args))) =
            (track.gate.as_mut(), track.open.remove(&call_id))
        else {
            return false;
        };
        let answer = answer();
        let over = gate.record(
            n,
            Slot::Call {
                provider,
                tool,
                args,
                answer,
            },
        );
        over || self.pause_if_due(gate)
    }

    /// A decision for a call put to `approve`: what to do with the call (to the host, or
    /// answered with the denial), or nothing when none waits.
    pub(crate) fn decided(
        &self,
        exec_id: u64,
        call_id: u32,
        decision: Decision,
    ) -> Option<CallAction> {
        let mut runs = self.lock();
        let track = runs.get_mut(&exec_id)?;
        let gate = track.gate.as_mut()?;
        let (n, call) = gate.asked.remove(&call_id)?;
        gate.asked_bytes = gate.asked_bytes.saturating_sub(call.args.len());
        if decision.approved {
            let slot = (
                n,
                call.provider.clone(),
                call.tool.clone(),
                call.args.clone(),
            );
            self.calls.restart(exec_id, call_id);
            return Some(track.forward(call, slot));
        }
        // Callback mode keeps no ledger: nothing to record, and nothing was in flight.
        let _ = n;
        let text = denied(&call.provider, &call.tool, decision.reason.as_deref());
        self.calls.settled(exec_id, call_id, CallStatus::Denied);
        Some(CallAction::Deny(text))
    }

    /// A fetch of run `exec_id`.
    pub(crate) fn fetch(&self, exec_id: u64, call_id: u32, method: &str, url: &str) -> FetchAction {
        let mut runs = self.lock();
        let Some(gate) = runs.get_mut(&exec_id).and_then(|t| t.gate.as_mut()) else {
            return FetchAction::Live;
        };
        let Some(n) = gate.next_request() else {
            return FetchAction::Stop;
        };
        if let Some(expected) = gate.script.get(n) {
            return match expected {
                Slot::Fetch {
                    method: m,
                    url: u,
                    result,
                } if m == method && u == url => {
                    let result = result.clone();
                    if let Some(slot) = gate.slots.get_mut(n) {
                        *slot = Some(expected.clone());
                    }
                    FetchAction::Answer(result)
                }
                other => {
                    let expected = describe(other);
                    let got = format!("a fetch of {url}");
                    gate.ended = Some(Ending::Failed(
                        FailureCode::ReplayDiverged,
                        FailureCode::ReplayDiverged
                            .render(&[("got", &got), ("expected", &expected)]),
                    ));
                    FetchAction::Stop
                }
            };
        }
        gate.in_flight += 1;
        gate.fetches
            .insert(call_id, (n, method.to_string(), url.to_string()));
        FetchAction::Live
    }

    /// A fetch's answer (as it goes to the worker); whether the run is to be stopped now.
    pub(crate) fn fetched(
        &self,
        exec_id: u64,
        call_id: u32,
        result: &Result<WireResponse, String>,
    ) -> bool {
        let mut runs = self.lock();
        let Some(gate) = runs.get_mut(&exec_id).and_then(|t| t.gate.as_mut()) else {
            return false;
        };
        let Some((n, method, url)) = gate.fetches.remove(&call_id) else {
            return false;
        };
        let over = gate.record(
            n,
            Slot::Fetch {
                method,
                url,
                result: result.clone(),
            },
        );
        over || self.pause_if_due(gate)
    }

    /// The worker says run `exec_id` waits: whether it is to be stopped (it paused), or its
    /// time bound may rest (it waits on decisions only).
    pub(crate) fn idle(&self, exec_id: u64) -> IdleAction {
        let mut runs = self.lock();
        let Some(gate) = runs.get_mut(&exec_id).and_then(|t| t.gate.as_mut()) else {
            return IdleAction {
                stop: false,
                rest: None,
            };
        };
        gate.idle = true;
        let rest = match gate.mode {
            ApprovalMode::Callback { timeout_ms }
                if !gate.asked.is_empty() && gate.in_flight == 0 =>
            {
                Some(Duration::from_millis(timeout_ms))
            }
            _ => None,
        };
        IdleAction {
            stop: self.pause_if_due(gate),
            rest,
        }
    }

    /// The worker says run `exec_id` computes again after it said `Idle` (a timer fired): it
    /// no longer waits, so it is not paused until it says so again.
    pub(crate) fn awake(&self, exec_id: u64) {
        if let Some(gate) = self.lock().get_mut(&exec_id).and_then(|t| t.gate.as_mut()) {
            gate.idle = false;
        }
    }

    /// Pauses `gate`'s run when it waits with calls held and nothing else in flight: seals the
    /// token. Whether the run is to be stopped.
    fn pause_if_due(&self, gate: &mut Gate) -> bool {
        if gate.ended.is_some() || gate.held.is_empty() || gate.in_flight > 0 || !gate.idle {
            return false;
        }
        let script: Vec<Slot> = gate
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| match slot {
                Some(s) => Some(s.clone()),
                None => {
                    gate.held
                        .iter()
                        .find(|(n, ..)| *n == i)
                        .map(|(_, provider, tool, args)| Slot::Pending {
                            provider: provider.clone(),
                            tool: tool.clone(),
                            args: args.clone(),
                        })
                }
            })
            .collect();
        let issued_ms = now_ms();
        let body = Body {
            issued_ms,
            expires_ms: issued_ms.saturating_add(gate.basis.expires_in_ms),
            basis: gate.basis.clone(),
            script,
        };
        gate.ended = Some(match token::seal(&self.key, &body) {
            Ok(token) => Ending::Paused(Paused {
                token,
                pending: gate
                    .held
                    .iter()
                    .map(|(n, provider, tool, args)| PendingCall {
                        id: n.to_string(),
                        provider: provider.clone(),
                        tool: tool.clone(),
                        args: args.clone(),
                    })
                    .collect(),
            }),
            Err(f) => Ending::Failed(f.code, f.message),
        });
        true
    }
}

impl Gate {
    fn new(
        basis: Basis,
        mode: ApprovalMode,
        script: Vec<Slot>,
        decisions: HashMap<usize, Decision>,
    ) -> Gate {
        Gate {
            basis,
            mode,
            script,
            decisions,
            slots: Vec::new(),
            requests: 0,
            held: Vec::new(),
            asked: HashMap::new(),
            fetches: HashMap::new(),
            in_flight: 0,
            idle: false,
            ended: None,
            bytes: 0,
            asked_bytes: 0,
        }
    }

    /// The worker sent a request: it is active again, and the request takes the next slot
    /// (its index); `None` once the run ended here (paused, diverged), when nothing more of it
    /// is to reach the host.
    fn next_request(&mut self) -> Option<usize> {
        if self.ended.is_some() {
            return None;
        }
        self.idle = false;
        let n = self.requests;
        self.requests += 1;
        // Only interrupt mode keeps a ledger (a token replays it); callback mode keeps nothing
        // per request, however many it makes.
        if matches!(self.mode, ApprovalMode::Interrupt { .. }) && !self.overflowed() {
            self.slots.push(None);
        }
        Some(n)
    }

    fn needs_approval(&self, provider: &str, tool: &str) -> bool {
        self.basis.approve.iter().any(|(p, tools)| {
            p == provider && tools.as_ref().is_none_or(|t| t.iter().any(|x| x == tool))
        })
    }

    /// An answered request takes its slot (interrupt mode: the ledger a token holds); it is no
    /// longer in flight. Whether the ledger passed its bound (the run is to be stopped).
    fn record(&mut self, n: usize, slot: Slot) -> bool {
        self.in_flight = self.in_flight.saturating_sub(1);
        if !matches!(self.mode, ApprovalMode::Interrupt { .. }) {
            return false;
        }
        let size = match &slot {
            Slot::Call {
                provider,
                tool,
                args,
                answer,
            } => {
                let answer = match answer {
                    Answer::Ok(b) => b.len(),
                    Answer::Err(t) | Answer::Denied(t) => t.len(),
                };
                provider.len() + tool.len() + args.len() + answer
            }
            Slot::Fetch {
                method,
                url,
                result,
            } => {
                let response = match result {
                    Ok(r) => {
                        r.body.as_ref().map_or(0, Vec::len)
                            + r.headers
                                .iter()
                                .map(|(k, v)| k.len() + v.len())
                                .sum::<usize>()
                            + r.url.len()
                            + r.status_text.len()
                    }
                    Err(t) => t.len(),
                };
                method.len() + url.len() + response
            }
            Slot::Pending {
                provider,
                tool,
                args,
            } => provider.len() + tool.len() + args.len(),
        };
        if !self.overflowed() {
            if let Some(s) = self.slots.get_mut(n) {
                *s = Some(slot);
            }
        }
        self.grow(size)
    }

    /// Counts `size` more bytes toward the token. Past the bound the ledger is dropped (the
    /// host's memory holds no more of it) and the run can no longer pause: it goes on, and ends
    /// with `APPROVAL_LEDGER_TOO_LARGE` if a call holds for approval. Whether it ended now.
    fn grow(&mut self, size: usize) -> bool {
        self.bytes = self.bytes.saturating_add(size + SLOT_OVERHEAD);
        if self.bytes <= limits::APPROVAL_TOKEN_BYTES || self.ended.is_some() {
            return false;
        }
        self.slots.clear();
        if self.held.is_empty() {
            return false;
        }
        self.held.clear();
        self.ended = Some(Ending::Failed(
            FailureCode::ApprovalLedgerTooLarge,
            FailureCode::ApprovalLedgerTooLarge.render(&[
                ("size", &format!("more than {}", self.bytes)),
                ("limit", &limits::APPROVAL_TOKEN_BYTES.to_string()),
            ]),
        ));
        true
    }

    /// The ledger passed its bound and was dropped.
    fn overflowed(&self) -> bool {
        self.bytes > limits::APPROVAL_TOKEN_BYTES
    }
}

impl Track {
    /// A gated run's call goes to the host, in ledger slot `slot.0`, asking what `slot` says.
    fn forward(&mut self, call: ToolCall, slot: Open) -> CallAction {
        if let Some(gate) = self.gate.as_mut() {
            gate.in_flight += 1;
        }
        self.open.insert(call.call_id, slot);
        CallAction::Forward(call)
    }

    /// The run's outcome, or the ending its gate chose.
    fn finish(self, mut outcome: RunOutcome) -> RunOutcome {
        let gate = self.gate;
        let unreached = gate.as_ref().and_then(|g| {
            g.script
                .iter()
                .enumerate()
                .find(|(i, s)| matches!(s, Slot::Pending { .. }) && *i >= g.requests)
                .map(|(_, s)| describe(s))
        });
        let ended = gate.and_then(|g| g.ended).or_else(|| {
            unreached.map(|expected| {
                let text = FailureCode::ReplayDiverged
                    .render(&[("got", "the program's end"), ("expected", &expected)]);
                Ending::Failed(FailureCode::ReplayDiverged, text)
            })
        });
        match ended {
            Some(Ending::Paused(paused)) => {
                outcome.result = None;
                outcome.error = None;
                outcome.paused = Some(paused);
            }
            Some(Ending::Failed(code, message)) => {
                outcome.result = None;
                outcome.error = Some(RunError {
                    code: code.as_str().into(),
                    message,
                    location: None,
                });
            }
            None => {}
        }
        outcome
    }
}

/// What one ledger slot keeps beside its texts and bytes: the slot itself (its place in
/// `Gate::slots`, or a held call) and the heap blocks of its up to four buffers (a block's
/// header and rounding, 16 bytes each on glibc's allocator).
const SLOT_OVERHEAD: usize = std::mem::size_of::<Option<Slot>>() + 4 * 16;

fn denied(provider: &str, tool: &str, reason: Option<&str>) -> String {
    let reason = reason
        .filter(|r| !r.is_empty())
        .unwrap_or("no reason given");
    FailureCode::ApprovalDenied.render(&[
        ("provider", provider),
        ("tool", tool),
        ("reason", reason),
    ])
}

fn describe(slot: &Slot) -> String {
    match slot {
        Slot::Call { provider, tool, .. } | Slot::Pending { provider, tool, .. } => {
            format!("a call of {provider}.{tool}")
        }
        Slot::Fetch { url, .. } => format!("a fetch of {url}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_protocol::{Budgets, Outbound};

    fn spec(code: &str) -> ExecSpec {
        ExecSpec {
            code: code.into(),
            modules: Vec::new(),
            providers: Vec::new(),
            timeout_ms: Some(1000),
            memory_limit_mib: Some(64),
            outbound: Outbound::Blocked,
            retain_handles: false,
            live_logs: false,
            budgets: Budgets::default(),
            approval: None,
            tenant: None,
        }
    }

    fn call(exec_id: u64, call_id: u32, tool: &str) -> ToolCall {
        ToolCall {
            exec_id,
            call_id,
            provider: "billing".into(),
            tool: tool.into(),
            args: vec![0xff, 0x0f, 0x41, 0, 0x24, 0, 0],
        }
    }

    /// A callback-mode run of 10,000 calls (one in ten needing a person) keeps nothing per
    /// call once each is answered: no ledger slot, no open call, no asked call.
    #[test]
    fn a_callback_run_keeps_nothing_per_call() {
        let calls = Arc::new(Calls::default());
        let book = Arc::new(Book::new(Some(&[7u8; 32]), calls.clone()));
        let approval = ApprovalSpec {
            approve: vec![("billing".into(), Some(vec!["refund".into()]))],
            mode: ApprovalMode::Callback { timeout_ms: 1000 },
        };
        let gated = Book::first_run(&spec("async () => 0"), &approval);
        let _done = calls.track(1, book.track(1, Some(gated), Box::new(|_, _| {})));
        let answered = |id| calls.answered(1, id, CallStatus::Ok).is_some();
        for i in 0..10_000u32 {
            let tool = if i % 10 == 0 { "refund" } else { "list" };
            let c = call(1, i, tool);
            calls.called(&c);
            match book.tool_call(c) {
                CallAction::Ask(c) => {
                    let next = book.decided(
                        1,
                        c.call_id,
                        Decision {
                            approved: true,
                            reason: None,
                        },
                    );
                    assert!(matches!(next, Some(CallAction::Forward(_))));
                    assert!(!book.answered(1, i, true, b"ok") && answered(i));
                }
                CallAction::Forward(c) => {
                    assert!(!book.answered(1, c.call_id, true, b"ok") && answered(c.call_id))
                }
                _ => panic!("call {i} was neither asked nor forwarded"),
            }
            if i % 100 == 0 {
                let _ = book.idle(1);
            }
        }
        let runs = book.lock();
        let track = runs.get(&1).expect("tracked");
        let gate = track.gate.as_ref().expect("gated");
        assert_eq!(gate.slots.len(), 0, "ledger slots kept in callback mode");
        assert!(gate.asked.is_empty() && gate.held.is_empty() && track.open.is_empty());
        assert_eq!(gate.requests, 10_000);
        assert_eq!(calls.held(1), (limits::CALL_RECORDS, 0));
    }

    /// Interrupt mode counts a slot at what it keeps: 10,000 calls of 7-byte arguments and
    /// 2-byte answers pass the ledger's bound well before the 8 MiB their bytes alone would
    /// take, once each slot is counted at its real size.
    #[test]
    fn an_interrupt_ledger_counts_each_slot_at_its_size() {
        let book = Arc::new(Book::new(Some(&[7u8; 32]), Arc::default()));
        let approval = ApprovalSpec {
            approve: vec![("billing".into(), Some(vec!["refund".into()]))],
            mode: ApprovalMode::Interrupt {
                expires_in_ms: 1000,
            },
        };
        let gated = Book::first_run(&spec("async () => 0"), &approval);
        let _done = book.track(2, Some(gated), Box::new(|_, _| {}));
        for i in 0..10_000u32 {
            match book.tool_call(call(2, i, "list")) {
                CallAction::Forward(c) => {
                    let _ = book.answered(2, c.call_id, true, b"ok");
                }
                _ => panic!("call {i} was not forwarded"),
            }
        }
        let runs = book.lock();
        let gate = runs.get(&2).and_then(|t| t.gate.as_ref()).expect("gated");
        let per_slot = std::mem::size_of::<Option<Slot>>();
        let kept = gate.slots.len() * per_slot
            + gate
                .slots
                .iter()
                .flatten()
                .map(|s| match s {
                    Slot::Call {
                        provider,
                        tool,
                        args,
                        ..
                    } => provider.len() + tool.len() + args.len() + 2,
                    _ => 0,
                })
                .sum::<usize>();
        assert!(
            gate.bytes >= kept,
            "counted {} of the {kept} bytes kept",
            gate.bytes
        );
    }
}

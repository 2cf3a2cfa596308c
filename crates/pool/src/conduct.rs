//! What a worker may say. The host treats every worker as hostile (docs/threat-model.md): a
//! worker whose isolate was taken over by a V8 exploit writes whatever bytes it likes to its
//! stdout, so each frame it sends is checked here, against the execution the host gave that
//! worker, before anything acts on it.
//!
//! A worker is bound to the last execution it was sent (its `Binding`, in its slot). Of the
//! frames that name an execution, one that names another is a violation, and so is one out of
//! its place in the run (`Started` twice, anything before `Started`, a second `Done`, a tool
//! call after `Done`, an `Invoked` of an execution never retained), a tool of a provider the
//! request did not declare or not on its closed list, a call id already in flight, more calls
//! in flight than [`limits::CALLS_IN_FLIGHT`], and any output past the bounds in
//! [`codemode_protocol::limits`] (the same constants the worker enforces where the output is
//! built). Frames are bounded before they are read ([`WORKER_FRAME_BYTES`]). What a worker
//! names reaches hosts and the metrics only from the grammar: a failure code must be one the
//! worker may report where it reports it ([`run_code`], [`invocation_code`]), and a grant's
//! execution id a canonical v4 UUID ([`execution_id`]) no other execution holds
//! (`handles::unused`).
//!
//! One file over 500 lines (over a quarter of it its tests): every rule a worker's frames are
//! held to, in one place, so what a worker may say can be read (and audited) whole.
//!
//! The pool answers a violation (lifecycle.rs) by killing the worker at once, failing the
//! execution it held with `WORKER_VIOLATION`, naming the violation on stderr, and starting a
//! replacement.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use codemode_protocol::{
    limits, Budgets, FailureCode, FailureKind, LogEntry, ProviderDecl, RunError, RunOutcome,
    WireRequest, WorkerMsg,
};

/// The largest frame body a healthy worker sends: a `Done` with the largest result and the
/// largest logs, or a call with the largest payload, plus room for names, headers and the
/// encoding's own bytes. Below [`codemode_protocol::MAX_FRAME_BYTES`], the bound the host
/// itself writes within.
pub(crate) const WORKER_FRAME_BYTES: usize = {
    let payload = max(
        limits::RESULT_BYTES,
        max(limits::TOOL_PAYLOAD_BYTES, limits::FETCH_BODY_BYTES),
    );
    payload + 8 * 1024 * 1024
};

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// What a worker did that a healthy worker never does, in words for the operator's log and
/// the failure's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation(pub String);

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn violation<T>(text: String) -> Result<T, Violation> {
    Err(Violation(text))
}

/// The tools a request declared: provider name to its closed list (`None`: `'*'`, any name).
#[derive(Debug, Default)]
pub(crate) struct ToolList(HashMap<String, Option<HashSet<String>>>);

impl ToolList {
    pub(crate) fn of(providers: &[ProviderDecl]) -> Arc<ToolList> {
        Arc::new(ToolList(
            providers
                .iter()
                .map(|p| {
                    let tools = p.tools.as_ref().map(|t| t.iter().cloned().collect());
                    (p.name.clone(), tools)
                })
                .collect(),
        ))
    }

    /// The sandbox's own rule (docs/contract.md, "Providers"): an undeclared provider is no
    /// name in the sandbox, a closed list answers other names itself (`Tool "<tool>" not
    /// found`) without reaching the host, `'*'` sends every name to dispatch. So a call a
    /// healthy worker sends always passes.
    fn admits(&self, provider: &str, tool: &str) -> Result<(), Violation> {
        match self.0.get(provider) {
            None => violation(format!(
                "a tool call names provider {provider:?}, which the request did not declare"
            )),
            Some(Some(listed)) if !listed.contains(tool) => violation(format!(
                "a tool call names {provider}.{tool}, a tool the provider's list does not hold"
            )),
            Some(_) => Ok(()),
        }
    }
}

/// The execution a worker was last sent, and what it has said of it so far.
pub(crate) struct Binding {
    pub exec_id: u64,
    tools: Arc<ToolList>,
    started: bool,
    done: bool,
    retained: bool,
    /// Call ids (tool calls and fetches share them) the host has not answered yet.
    in_flight: HashSet<u32>,
    /// Live log entries (`Log` frames) so far, and their bytes: held to the logs' bounds.
    live_entries: usize,
    live_bytes: usize,
    /// The budgets the request set; the worker enforces them, and [`Counts`] holds it to them.
    budgets: Budgets,
    counts: Counts,
}

/// Tool calls and fetches a worker sent for its execution, against the request's counts (the
/// worker refuses the call past each itself, inside the sandbox: one that sends it anyway
/// breaks a rule). The run's are exact. A retained execution's fetches are counted per
/// invocation, the worker's count starting again when it reads the Invoke, the host's when it
/// sends it: fetches its timers sent before it read the Invoke land in the host's count of the
/// next invocation, so past the first invocation the host allows twice the limit, which a
/// healthy worker never passes (the previous window's tail plus its own).
#[derive(Default)]
struct Counts {
    tool_calls: u32,
    fetches: u32,
    invoking: bool,
}

impl Binding {
    pub(crate) fn new(exec_id: u64, tools: Arc<ToolList>, budgets: Budgets) -> Binding {
        Binding {
            exec_id,
            tools,
            started: false,
            done: false,
            retained: false,
            in_flight: HashSet::new(),
            live_entries: 0,
            live_bytes: 0,
            budgets,
            counts: Counts::default(),
        }
    }

    /// An invocation of the retained execution is sent: its fetches are counted afresh.
    pub(crate) fn invocation_sent(&mut self) {
        self.counts.fetches = 0;
        self.counts.invoking = true;
    }

    /// The host answered call `call_id`: it is no longer in flight.
    pub(crate) fn answered(&mut self, call_id: u32) {
        self.in_flight.remove(&call_id);
    }
}

/// Checks `msg` (any message but `Hello`, which the handshake checks) from a worker bound to
/// `binding`, and records what it changes. Called under the state lock, before the message
/// has any effect.
pub(crate) fn admit(binding: Option<&mut Binding>, msg: &WorkerMsg) -> Result<(), Violation> {
    let Some(exec_id) = exec_id_of(msg) else {
        return Ok(());
    };
    let Some(b) = binding else {
        return violation(format!(
            "{} frame for execution {exec_id}, but it was given no execution",
            name(msg)
        ));
    };
    if exec_id != b.exec_id {
        return violation(format!(
            "{} frame for execution {exec_id}, but it runs execution {}",
            name(msg),
            b.exec_id
        ));
    }
    if !b.started && !matches!(msg, WorkerMsg::Started { .. }) {
        return violation(format!(
            "{} frame before it acknowledged the execution (Started)",
            name(msg)
        ));
    }
    match msg {
        WorkerMsg::Started { .. } if b.started => violation("a second Started frame".into()),
        WorkerMsg::Started { .. } => {
            b.started = true;
            Ok(())
        }
        WorkerMsg::ToolCall {
            call_id,
            provider,
            tool,
            args,
            ..
        } => {
            if b.done {
                return violation(format!(
                    "a tool call ({provider}.{tool}) after the execution's Done"
                ));
            }
            b.tools.admits(provider, tool)?;
            b.counts.tool_calls += 1;
            counted("tool calls", b.counts.tool_calls, b.budgets.tool_call_limit)?;
            bounded(
                "a tool call's arguments",
                args.len(),
                limits::TOOL_PAYLOAD_BYTES,
            )?;
            call(b, *call_id)
        }
        WorkerMsg::Fetch {
            call_id, request, ..
        } => {
            if b.done && !b.retained {
                return violation("a fetch after the execution's Done".into());
            }
            fetch_bounded(request)?;
            b.counts.fetches += 1;
            let allowed = b.budgets.fetch_limit.map(|n| {
                if b.counts.invoking {
                    n.saturating_mul(2)
                } else {
                    n
                }
            });
            counted("fetches", b.counts.fetches, allowed)?;
            call(b, *call_id)
        }
        WorkerMsg::Done { outcome, .. } => {
            if b.done {
                return violation("a second Done frame".into());
            }
            outcome_bounded(outcome)?;
            if let Some(error) = &outcome.error {
                run_code(error)?;
                budgeted(error, b.budgets)?;
            }
            if let Some(grant) = &outcome.grant {
                execution_id(&grant.execution_id)?;
            }
            b.done = true;
            b.retained = outcome.grant.is_some();
            // Answers still on their way are dropped by the worker: the run is over.
            b.in_flight.clear();
            Ok(())
        }
        WorkerMsg::Invoked { result, .. } => {
            if !b.retained {
                return violation("an Invoked frame for an execution it does not retain".into());
            }
            match result {
                Ok(response) => bounded(
                    "a handler response's body",
                    response.body.as_ref().map_or(0, Vec::len),
                    limits::FETCH_BODY_BYTES,
                ),
                Err(error) => {
                    invocation_code(error)?;
                    budgeted(error, b.budgets)
                }
            }
        }
        WorkerMsg::Idle { .. } => {
            if b.done {
                return violation("an Idle frame after the execution's Done".into());
            }
            Ok(())
        }
        WorkerMsg::Awake { .. } => {
            if b.done {
                return violation("an Awake frame after the execution's Done".into());
            }
            Ok(())
        }
        WorkerMsg::Log { entry, .. } => {
            if b.done {
                return violation("a live log entry after the execution's Done".into());
            }
            b.live_entries += 1;
            b.live_bytes += entry.message.len();
            live_log_bounded(b.live_entries, entry, b.live_bytes)
        }
        WorkerMsg::Ready | WorkerMsg::Hello { .. } => Ok(()),
        WorkerMsg::Engine(engine) => bounded(
            "the engine's version",
            engine.v8.len(),
            codemode_protocol::Engine::VERSION_BYTES,
        ),
    }
}

/// The execution a message names, if any.
fn exec_id_of(msg: &WorkerMsg) -> Option<u64> {
    match msg {
        WorkerMsg::ToolCall { exec_id, .. }
        | WorkerMsg::Done { exec_id, .. }
        | WorkerMsg::Fetch { exec_id, .. }
        | WorkerMsg::Invoked { exec_id, .. }
        | WorkerMsg::Log { exec_id, .. }
        | WorkerMsg::Idle { exec_id }
        | WorkerMsg::Awake { exec_id }
        | WorkerMsg::Started { exec_id } => Some(*exec_id),
        WorkerMsg::Ready | WorkerMsg::Hello { .. } | WorkerMsg::Engine(_) => None,
    }
}

fn name(msg: &WorkerMsg) -> &'static str {
    match msg {
        WorkerMsg::ToolCall { .. } => "a ToolCall",
        WorkerMsg::Done { .. } => "a Done",
        WorkerMsg::Ready => "a Ready",
        WorkerMsg::Fetch { .. } => "a Fetch",
        WorkerMsg::Invoked { .. } => "an Invoked",
        WorkerMsg::Started { .. } => "a Started",
        WorkerMsg::Hello { .. } => "a Hello",
        WorkerMsg::Engine(_) => "an Engine",
        WorkerMsg::Log { .. } => "a Log",
        WorkerMsg::Idle { .. } => "an Idle",
        WorkerMsg::Awake { .. } => "an Awake",
    }
}

/// The `count`th of `what`, against the request's limit.
fn counted(what: &str, count: u32, limit: Option<u32>) -> Result<(), Violation> {
    match limit {
        Some(limit) if count > limit => violation(format!(
            "{what} past the request's limit of {limit} (it refuses those itself)"
        )),
        _ => Ok(()),
    }
}

/// `CPU_LIMIT` ends only a run or an invocation that had a CPU budget.
fn budgeted(error: &RunError, budgets: Budgets) -> Result<(), Violation> {
    if budgets.cpu_limit_ms.is_none() && error.code == FailureCode::CpuLimit.as_str() {
        return violation("a CPU_LIMIT failure for a run without a CPU budget".into());
    }
    Ok(())
}

fn call(b: &mut Binding, call_id: u32) -> Result<(), Violation> {
    if b.in_flight.len() >= limits::CALLS_IN_FLIGHT {
        return violation(format!(
            "more than {} tool calls and fetches in flight at once",
            limits::CALLS_IN_FLIGHT
        ));
    }
    if !b.in_flight.insert(call_id) {
        return violation(format!("call id {call_id} is already in flight"));
    }
    Ok(())
}

/// The codes a worker may end a run with: the program's own failures (kind Program) but
/// `TIMEOUT`, which only the host's clock decides; and `INTERNAL`, which a worker reports when
/// its run stopped before it settled (the host reports the bound or the abort that stopped it
/// instead) or an invariant of its own broke. Anything else (a fault's code, a code outside
/// the grammar, free text) is a violation, so a code reaching a host or a metrics label is
/// always the grammar's.
fn run_code(error: &RunError) -> Result<(), Violation> {
    reportable(error, |code| {
        (code.kind() == FailureKind::Program && code != FailureCode::Timeout)
            || code == FailureCode::Internal
    })
}

/// The codes a worker may end an invocation of a retained handler with (docs/handles.md).
fn invocation_code(error: &RunError) -> Result<(), Violation> {
    reportable(error, |code| {
        matches!(
            code,
            FailureCode::HandlerError
                | FailureCode::HandleNotResponse
                | FailureCode::Timeout
                | FailureCode::MemoryLimit
                | FailureCode::CpuLimit
                | FailureCode::Internal
        )
    })
}

fn reportable(error: &RunError, may: impl Fn(FailureCode) -> bool) -> Result<(), Violation> {
    let code = &error.code;
    match FailureCode::from_code(code) {
        Some(c) if may(c) => Ok(()),
        // Named by its length alone: the operator's log line and the failure's text stay small.
        _ if code.len() > 64 => violation(format!(
            "a failure code of {} bytes, not one of the grammar's",
            code.len()
        )),
        _ => violation(format!("a failure code {code:?} it may not report")),
    }
}

/// A grant's execution id: a random v4 UUID in its canonical form (lower-case, hyphenated), as
/// the worker mints it. Hosts key retained executions by it, so no other spelling of one id and
/// no free text is taken.
fn execution_id(id: &str) -> Result<(), Violation> {
    let canonical = uuid::Uuid::try_parse(id).ok().filter(|u| {
        u.get_version() == Some(uuid::Version::Random)
            && u.get_variant() == uuid::Variant::RFC4122
            && u.hyphenated().to_string() == id
    });
    if canonical.is_some() {
        return Ok(());
    }
    if id.len() > 64 {
        return violation(format!(
            "a grant whose execution id ({} bytes) is not a v4 UUID",
            id.len()
        ));
    }
    violation(format!(
        "a grant whose execution id {id:?} is not a v4 UUID"
    ))
}

fn bounded(what: &str, size: usize, limit: usize) -> Result<(), Violation> {
    if size > limit {
        return violation(format!(
            "{what} came to {size} bytes, past the bound of {limit}"
        ));
    }
    Ok(())
}

fn fetch_bounded(request: &WireRequest) -> Result<(), Violation> {
    let body = request.body.as_ref().map_or(0, Vec::len);
    bounded("a fetch request's body", body, limits::FETCH_BODY_BYTES)
}

/// The result and the logs, against the bounds the worker keeps them within (its log notice
/// and the marker of a cut entry included).
fn outcome_bounded(outcome: &RunOutcome) -> Result<(), Violation> {
    let result = outcome.result.as_ref().map_or(0, Vec::len);
    bounded("the result", result, limits::RESULT_BYTES)?;
    logs_bounded(&outcome.logs)
}

fn logs_bounded(logs: &[LogEntry]) -> Result<(), Violation> {
    let mut total = 0usize;
    for (n, entry) in logs.iter().enumerate() {
        total += entry.message.len();
        live_log_bounded(n + 1, entry, total)?;
    }
    Ok(())
}

/// The `count`th log entry of a run, `entry`, bringing its log bytes to `total`: within the
/// wire bounds of a run's logs (`limits::LOG_WIRE_*`; the same for the logs of `Done` and for
/// live `Log` frames, which reach the host only once admitted here).
fn live_log_bounded(count: usize, entry: &LogEntry, total: usize) -> Result<(), Violation> {
    if count > limits::LOG_WIRE_ENTRIES {
        return violation(format!(
            "{count} log entries, past the bound of {}",
            limits::LOG_WIRE_ENTRIES
        ));
    }
    bounded(
        "a log entry",
        entry.message.len(),
        limits::LOG_ENTRY_WIRE_BYTES,
    )?;
    bounded("the logs", total, limits::LOG_WIRE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_protocol::Grant;

    fn tools() -> Arc<ToolList> {
        ToolList::of(&[
            ProviderDecl {
                name: "kv".into(),
                tools: Some(vec!["get".into()]),
            },
            ProviderDecl {
                name: "any".into(),
                tools: None,
            },
        ])
    }

    fn tool_call(exec_id: u64, call_id: u32, provider: &str, tool: &str) -> WorkerMsg {
        WorkerMsg::ToolCall {
            exec_id,
            call_id,
            provider: provider.into(),
            tool: tool.into(),
            args: Vec::new(),
        }
    }

    fn started(b: &mut Binding) {
        let exec_id = b.exec_id;
        admit(Some(b), &WorkerMsg::Started { exec_id }).unwrap();
    }

    #[test]
    fn frames_for_another_execution_are_refused() {
        let mut b = Binding::new(7, tools(), Budgets::default());
        assert!(admit(Some(&mut b), &WorkerMsg::Started { exec_id: 6 }).is_err());
        started(&mut b);
        assert!(admit(Some(&mut b), &tool_call(8, 0, "kv", "get")).is_err());
        assert!(admit(None, &tool_call(7, 0, "kv", "get")).is_err());
        assert!(admit(Some(&mut b), &WorkerMsg::Ready).is_ok());
    }

    #[test]
    fn the_tool_list_is_the_sandbox_s() {
        let mut b = Binding::new(1, tools(), Budgets::default());
        started(&mut b);
        assert!(admit(Some(&mut b), &tool_call(1, 0, "kv", "get")).is_ok());
        assert!(admit(Some(&mut b), &tool_call(1, 1, "any", "whatever")).is_ok());
        assert!(admit(Some(&mut b), &tool_call(1, 2, "kv", "drop")).is_err());
        assert!(admit(Some(&mut b), &tool_call(1, 3, "db", "get")).is_err());
    }

    #[test]
    fn call_ids_and_done_are_once_only() {
        let mut b = Binding::new(1, tools(), Budgets::default());
        started(&mut b);
        assert!(admit(Some(&mut b), &tool_call(1, 0, "kv", "get")).is_ok());
        assert!(admit(Some(&mut b), &tool_call(1, 0, "kv", "get")).is_err());
        b.answered(0);
        assert!(admit(Some(&mut b), &tool_call(1, 0, "kv", "get")).is_ok());
        let done = WorkerMsg::Done {
            exec_id: 1,
            outcome: RunOutcome::default(),
        };
        assert!(admit(Some(&mut b), &done).is_ok());
        assert!(admit(Some(&mut b), &done).is_err());
        assert!(admit(Some(&mut b), &tool_call(1, 5, "kv", "get")).is_err());
    }

    /// A retained execution's fetches: exact for the run; past the first Invoke the host allows
    /// twice the limit, since fetches its timers sent before the worker read the Invoke land
    /// in the host's count of the next invocation (the worker counts them in the last).
    #[test]
    fn fetch_counts_per_run_and_per_invocation() {
        let limit = Budgets {
            fetch_limit: Some(2),
            ..Budgets::default()
        };
        let mut b = Binding::new(1, tools(), limit);
        started(&mut b);
        let fetch = |call_id| WorkerMsg::Fetch {
            exec_id: 1,
            call_id,
            request: WireRequest::default(),
        };
        assert!(admit(Some(&mut b), &fetch(1)).is_ok());
        assert!(admit(Some(&mut b), &fetch(2)).is_ok());
        assert!(admit(Some(&mut b), &fetch(3)).is_err());
        let granted = WorkerMsg::Done {
            exec_id: 1,
            outcome: RunOutcome {
                grant: Some(Grant {
                    execution_id: uuid::Uuid::new_v4().to_string(),
                    handles: vec!["fetch".into()],
                }),
                ..RunOutcome::default()
            },
        };
        assert!(admit(Some(&mut b), &granted).is_ok());
        for round in 0..2 {
            b.invocation_sent();
            for call_id in 0..4 {
                let id = 10 * (round + 1) + call_id;
                assert!(admit(Some(&mut b), &fetch(id)).is_ok(), "{round}/{call_id}");
                b.answered(id);
            }
            assert!(admit(Some(&mut b), &fetch(99)).is_err(), "{round}");
        }
    }

    fn ended(code: &str) -> RunError {
        RunError {
            code: code.into(),
            message: String::new(),
            location: None,
        }
    }

    #[test]
    fn failure_codes_are_the_grammar_s_and_the_worker_s_to_report() {
        for ok in ["PROGRAM_ERROR", "SYNTAX_ERROR", "MEMORY_LIMIT", "INTERNAL"] {
            assert!(run_code(&ended(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "TIMEOUT",
            "WORKER_LOST",
            "ABORTED",
            "FOO",
            "FOO\n",
            "",
            "program_error",
        ] {
            assert!(run_code(&ended(bad)).is_err(), "{bad:?}");
        }
        let long = run_code(&ended(&"E".repeat(10_240))).unwrap_err();
        assert!(long.0.len() < 100, "{long}");
        for ok in [
            "HANDLER_ERROR",
            "HANDLE_NOT_RESPONSE",
            "TIMEOUT",
            "MEMORY_LIMIT",
            "CPU_LIMIT",
        ] {
            assert!(invocation_code(&ended(ok)).is_ok(), "{ok}");
        }
        for bad in ["PROGRAM_ERROR", "HANDLES_CLOSED", "X"] {
            assert!(invocation_code(&ended(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn execution_ids_are_canonical_v4_uuids() {
        let minted = uuid::Uuid::new_v4().to_string();
        assert!(execution_id(&minted).is_ok());
        assert!(execution_id("3b241101-e2bb-4255-8caf-4136c566a962").is_ok());
        for bad in [
            "3B241101-E2BB-4255-8CAF-4136C566A962",
            "3b241101e2bb42558caf4136c566a962",
            "{3b241101-e2bb-4255-8caf-4136c566a962}",
            "urn:uuid:3b241101-e2bb-4255-8caf-4136c566a962",
            "3b241101-e2bb-1255-8caf-4136c566a962",
            "3b241101-e2bb-4255-ccaf-4136c566a962",
            "",
            "tenant-b",
        ] {
            assert!(execution_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn output_past_the_bounds_is_refused() {
        let log = |n: usize| LogEntry {
            level: codemode_protocol::LogLevel::Log,
            message: "x".repeat(n),
        };
        assert!(logs_bounded(&vec![log(10); limits::LOG_ENTRIES + 1]).is_ok());
        assert!(logs_bounded(&vec![log(10); limits::LOG_ENTRIES + 2]).is_err());
        assert!(logs_bounded(&[log(limits::LOG_ENTRY_BYTES + 40)]).is_ok());
        assert!(logs_bounded(&[log(limits::LOG_ENTRY_BYTES * 2)]).is_err());
        let many = vec![log(limits::LOG_ENTRY_BYTES); 40];
        assert!(logs_bounded(&many).is_err());
        let big = RunOutcome {
            result: Some(vec![0; limits::RESULT_BYTES + 1]),
            ..Default::default()
        };
        assert!(outcome_bounded(&big).is_err());
    }
}

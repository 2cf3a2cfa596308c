//! The executor protocol's messages (docs/protocol.md), each defined once here as a serde type,
//! and the two frame forms: a text message is one JSON object; a binary message is a `u32`
//! big-endian header length, the JSON header, then the payload (V8-serialized value or HTTP
//! body), kept as opaque bytes.
//! The shapes a message shares with the addon (a failure, a log entry, a run's stats, a
//! grant, the counts, the outbound and redirect modes) are `codemode_protocol`'s (`host`,
//! `messages`): one definition serves this JSON and the addon's JS. The tests are in
//! `tests.rs`.
//!
//! One file for the protocol's vocabulary: every message either side sends, the checks a
//! request's fields get before anything acts on them, and the frames they travel in, as
//! docs/protocol.md lists them in one place; what a connection does with them is conn.rs.

use std::ops::RangeInclusive;

use codemode_pool::protocol::host::{DaemonCounts, FailureReport, RunUsage};
pub use codemode_pool::protocol::Outbound;
use codemode_pool::protocol::{
    limits, CallRecord, Failure, FailureCode, Grant, LogEntry, Paused, ProviderDecl, Redirect,
    RunOutcome, WireResponse,
};
use codemode_pool::{read_approval, ApprovalSpec, AskedMode, Decision, ExecSpec, ProviderApproval};
use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::Message;

/// The executor protocol's version, carried by `hello` and `welcome`. 2: approvals (`execute`'s
/// `providers[].approve` and `approval`, `resume`, `approve` and `decision`, `done`'s `calls`
/// and `paused`).
pub const PROTOCOL: u32 = 2;

/// The largest message a client may send by default (`limits.maxMessageBytes`; `serve
/// --max-message-bytes`): the largest payload (16 MiB: a result, a tool payload, a fetch body)
/// with room for its header and the run's logs. Each connection may hold one message this large
/// while it arrives, so the bound times the connection cap is the memory clients can pin.
pub const MAX_MESSAGE_BYTES: usize = 20 * 1024 * 1024;

/// How much of the daemon's own network a mode reaches, in order ([`Outbound::BY_REACH`]):
/// blocked, routed (none: the caller's process performs the request), public, native
/// (everything the daemon's machine reaches). A daemon's ceiling (`serve --outbound`) admits a
/// mode up to it.
pub fn reach(mode: Outbound) -> usize {
    mode.reach()
}

/// The mode `serve --outbound` names (`null` is blocked).
pub fn outbound_flag(flag: &str) -> Option<Outbound> {
    match flag {
        "null" => Some(Outbound::Blocked),
        _ => Outbound::BY_REACH.into_iter().find(|m| m.as_str() == flag),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteMsg {
    pub id: u32,
    pub code: String,
    #[serde(default)]
    pub modules: Vec<(String, String)>,
    /// `tools: null`: an open list (`'*'`).
    #[serde(default)]
    pub providers: Vec<ProviderMsg>,
    /// Milliseconds; absent: the daemon's default.
    pub timeout: Option<u64>,
    /// MiB; absent: the daemon's default.
    pub memory_limit: Option<u64>,
    /// Absent: the daemon's outbound ceiling.
    pub outbound: Option<Outbound>,
    /// CPU milliseconds the program may spend; absent: the daemon's `--cpu-limit` (none
    /// without one).
    pub cpu_limit: Option<u64>,
    /// Tool calls the run may make; absent: the daemon's `--tool-call-limit` (none without one).
    pub tool_call_limit: Option<u64>,
    /// Fetches the run (and each invocation of its handles) may make; absent: the daemon's
    /// `--fetch-limit` (none without one).
    pub fetch_limit: Option<u64>,
    #[serde(default)]
    pub retain_handles: bool,
    /// Stream each console entry as a `log` message while the run goes.
    #[serde(default)]
    pub live_logs: bool,
    /// How the calls its providers mark `approve` wait (absent with some marked: interrupt
    /// mode, the default expiry).
    pub approval: Option<ApprovalMsg>,
    /// Whom the run is for (docs/tenants.md); absent: the connection's tenant.
    pub tenant: Option<String>,
}

/// A provider as `execute` declares it: its tools, and which of them wait for approval.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProviderMsg {
    #[serde(flatten)]
    pub decl: ProviderDecl,
    /// `true`: every tool of it; tool names: those; absent: none.
    pub approve: Option<Approve>,
}

/// A provider's `approve`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Approve {
    All(bool),
    Tools(Vec<String>),
}

/// A request's `approval` (its `decide` stays with the client, which answers `approve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(
    tag = "mode",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ApprovalMsg {
    /// Milliseconds the token stays good; absent: the default.
    Interrupt {
        #[serde(default)]
        expires_in: Option<u64>,
    },
    /// Milliseconds one decision may take; absent: the default.
    Callback {
        #[serde(default)]
        timeout: Option<u64>,
    },
}

/// `INVALID_REQUEST` for `field` when `got` is outside `range` (in `unit`).
fn in_range(
    field: &str,
    got: Option<u64>,
    range: &RangeInclusive<u64>,
    unit: &str,
) -> Result<(), Failure> {
    match got.filter(|v| !range.contains(v)) {
        None => Ok(()),
        Some(got) => Err(invalid_request(
            field,
            &format!("got {got}"),
            &format!(
                "an integer from {} to {} ({unit})",
                range.start(),
                range.end()
            ),
        )),
    }
}

/// The tenant a request of a connection acts for: the connection's (its token's, `serve
/// --tenants`) when it has one, and a request that names another is `TENANT_MISMATCH`; else the
/// one the request names, a name checked (`INVALID_REQUEST`), or none.
pub fn tenant_for(
    connection: Option<&str>,
    named: Option<String>,
) -> Result<Option<String>, Failure> {
    match (connection, named) {
        (Some(own), Some(named)) if named != own => {
            Err(FailureCode::TenantMismatch.failure(&[("named", &named)]))
        }
        (Some(own), _) => Ok(Some(own.to_string())),
        (None, Some(named)) => match codemode_pool::tenants::check_name(&named) {
            Ok(()) => Ok(Some(named)),
            Err(problem) => Err(invalid_request(
                "tenant",
                &problem,
                "a tenant name: 1 to 64 of A-Z a-z 0-9 . _ -",
            )),
        },
        (None, None) => Ok(None),
    }
}

fn invalid_request(field: &str, problem: &str, allowed: &str) -> Failure {
    FailureCode::InvalidRequest.failure(&[
        ("field", field),
        ("problem", problem),
        ("allowed", allowed),
    ])
}

impl ExecuteMsg {
    /// The run as the pool takes it (the wire is the boundary), with the outbound and budgets
    /// the daemon's ceilings admitted and the approvals read from it.
    pub fn into_spec(
        self,
        outbound: Outbound,
        budgets: codemode_pool::protocol::Budgets,
        approval: Option<ApprovalSpec>,
        tenant: Option<String>,
    ) -> ExecSpec {
        ExecSpec {
            tenant,
            providers: self.provider_decls(),
            code: self.code,
            modules: self.modules,
            timeout_ms: self.timeout,
            memory_limit_mib: self.memory_limit.map(|m| m as u32),
            outbound,
            retain_handles: self.retain_handles,
            live_logs: self.live_logs,
            approval,
            budgets,
        }
    }

    /// The providers as the pool declares them.
    pub fn provider_decls(&self) -> Vec<ProviderDecl> {
        self.providers.iter().map(|p| p.decl.clone()).collect()
    }

    /// The run's approvals: the tools its providers mark `approve` and its `approval`'s mode,
    /// by the rules every executor holds a request to (`codemode_pool::read_approval`, the
    /// same the addon applies for `validate.request`): `INVALID_REQUEST` naming the field.
    pub fn approval_spec(&self) -> Result<Option<ApprovalSpec>, Failure> {
        let mut providers = Vec::with_capacity(self.providers.len());
        for (i, p) in self.providers.iter().enumerate() {
            let approve = match &p.approve {
                None => None,
                Some(Approve::All(true)) => Some(None),
                Some(Approve::Tools(tools)) => Some(Some(tools.clone())),
                // The shape, as lib/validate/approvals.js reads it: `true` or tool names.
                Some(Approve::All(false)) => {
                    return Err(invalid_request(
                        &format!("providers[{i}].approve"),
                        "got boolean false",
                        "true, or an array of tool names",
                    ))
                }
            };
            providers.push(ProviderApproval {
                name: p.decl.name.clone(),
                tools: p.decl.tools.clone(),
                approve,
            });
        }
        let ms = |v: Option<u64>| v.map(|v| v as f64);
        let asked = self.approval.map(|a| match a {
            ApprovalMsg::Interrupt { expires_in } => AskedMode::Interrupt {
                expires_in: ms(expires_in),
            },
            ApprovalMsg::Callback { timeout } => AskedMode::Callback {
                timeout: ms(timeout),
            },
        });
        read_approval(&providers, asked, self.retain_handles).map_err(|r| r.failure())
    }

    /// The request's `timeout`, `memoryLimit` and budgets against the ranges every executor
    /// takes (`limits::options`): `INVALID_REQUEST` naming the first one outside its range.
    pub fn check_ranges(&self) -> Result<(), Failure> {
        use limits::options::{
            CPU_LIMIT_MS, FETCH_LIMIT, MEMORY_LIMIT_MIB, TIMEOUT_MS, TOOL_CALL_LIMIT,
        };
        let fields = [
            ("timeout", self.timeout, &TIMEOUT_MS, "ms"),
            ("memoryLimit", self.memory_limit, &MEMORY_LIMIT_MIB, "MiB"),
            ("cpuLimit", self.cpu_limit, &CPU_LIMIT_MS, "ms of CPU"),
            (
                "toolCallLimit",
                self.tool_call_limit,
                &TOOL_CALL_LIMIT,
                "tool calls per run",
            ),
            (
                "fetchLimit",
                self.fetch_limit,
                &FETCH_LIMIT,
                "fetches per run",
            ),
        ];
        for (field, got, range, unit) in fields {
            in_range(field, got, range, unit)?;
        }
        Ok(())
    }
}

/// `resume`: a paused run's token and a decision for each of its pending calls.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeMsg {
    pub id: u32,
    pub token: String,
    #[serde(default)]
    pub decisions: Vec<DecisionMsg>,
    /// The client answers routed fetches (it has the policy a routed run needs).
    #[serde(default)]
    pub routes: bool,
    #[serde(default)]
    pub live_logs: bool,
    /// The most network the client lets the resumed run reach (its own policy): the token's is
    /// narrowed to it. Absent: the token's, within the daemon's ceiling.
    pub outbound: Option<Outbound>,
    /// Budgets the client holds the resumed run to: each the tighter of the token's and this.
    pub cpu_limit: Option<u64>,
    pub tool_call_limit: Option<u64>,
    pub fetch_limit: Option<u64>,
    /// Whom the resume acts for; absent: the connection's tenant.
    pub tenant: Option<String>,
}

/// One of `resume`'s decisions, by the pending call's id.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct DecisionMsg {
    pub id: String,
    pub approved: bool,
    pub reason: Option<String>,
}

impl ResumeMsg {
    /// The client's own bounds for the resumed run: its outbound (if named) and budgets.
    pub fn within(&self) -> (Option<Outbound>, codemode_pool::protocol::Budgets) {
        let n = |v: Option<u64>| v.map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        let budgets = codemode_pool::protocol::Budgets {
            cpu_limit_ms: n(self.cpu_limit),
            tool_call_limit: n(self.tool_call_limit),
            fetch_limit: n(self.fetch_limit),
        };
        (self.outbound, budgets)
    }

    /// The decisions as the pool takes them.
    pub fn decisions(&self) -> Vec<(String, Decision)> {
        self.decisions
            .iter()
            .map(|d| {
                let decision = Decision {
                    approved: d.approved,
                    reason: d.reason.clone(),
                };
                (d.id.clone(), decision)
            })
            .collect()
    }
}

/// The client's answer to a routed `fetch`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchResultMsg {
    pub id: u32,
    pub call_id: u32,
    pub ok: bool,
    #[serde(default)]
    pub status: u32,
    #[serde(default)]
    pub status_text: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub has_body: bool,
    pub message: Option<String>,
}

impl FetchResultMsg {
    /// The answer as the pool takes it for the fetch of `url`: the response, or the text the
    /// fetch rejects with inside the sandbox (the client's `message`; a status outside
    /// `limits::RESPONSE_STATUS`; a body over `limits::FETCH_BODY_BYTES`).
    pub fn into_response(self, payload: Vec<u8>, url: &str) -> Result<WireResponse, String> {
        if !self.ok {
            return Err(self.message.unwrap_or_default());
        }
        let status = u16::try_from(self.status)
            .ok()
            .filter(|s| limits::RESPONSE_STATUS.contains(s));
        let Some(status) = status else {
            let (lo, hi) = (
                limits::RESPONSE_STATUS.start(),
                limits::RESPONSE_STATUS.end(),
            );
            let detail = format!("status {} is outside {lo}-{hi}", self.status);
            return Err(
                FailureCode::OutboundInvalidResponse.render(&[("url", url), ("detail", &detail)])
            );
        };
        if payload.len() > limits::FETCH_BODY_BYTES {
            let limit = limits::FETCH_BODY_BYTES.to_string();
            return Err(FailureCode::FetchTooLarge.render(&[
                ("what", "response"),
                ("url", url),
                ("limit", &limit),
            ]));
        }
        Ok(WireResponse {
            status,
            status_text: self.status_text,
            headers: self.headers,
            body: self.has_body.then_some(payload),
            url: String::new(),
            redirected: false,
        })
    }
}

/// A message from the client. The payload (when the message carries one) travels beside it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ClientMsg {
    Hello {
        protocol: u32,
        #[serde(default)]
        client: Option<String>,
    },
    Execute(ExecuteMsg),
    ToolResult {
        id: u32,
        call_id: u32,
        ok: bool,
        #[serde(default)]
        message: Option<String>,
        /// With `ok: false`: the client's dispatch denied the call as approval would; it
        /// rejects as a denial (`APPROVAL_DENIED`'s code) instead of a tool's error.
        #[serde(default)]
        denied: bool,
    },
    FetchResult(FetchResultMsg),
    Resume(ResumeMsg),
    /// The client's `decide` answered the `approve` of call `call_id` of run `id`.
    Decision {
        id: u32,
        call_id: u32,
        approved: bool,
        #[serde(default)]
        reason: Option<String>,
    },
    Invoke {
        id: u32,
        execution_id: String,
        handle: String,
        method: String,
        url: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
        #[serde(default)]
        has_body: bool,
        /// Whom the caller acts for; absent: the connection's tenant.
        #[serde(default)]
        tenant: Option<String>,
    },
    CloseHandles {
        id: u32,
        execution_id: String,
        /// Whom the caller acts for; absent: the connection's tenant.
        #[serde(default)]
        tenant: Option<String>,
    },
    Stats {
        id: u32,
    },
    /// Abort request `id` (an `execute` or an `invoke` in flight); no answer of its own.
    Abort {
        id: u32,
    },
}

impl ClientMsg {
    /// The request id of a request (`execute`, `resume`, `invoke`, `closeHandles`, `stats`).
    pub fn request_id(&self) -> Option<u32> {
        match self {
            ClientMsg::Execute(e) => Some(e.id),
            ClientMsg::Resume(r) => Some(r.id),
            ClientMsg::Invoke { id, .. }
            | ClientMsg::CloseHandles { id, .. }
            | ClientMsg::Stats { id } => Some(*id),
            _ => None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            ClientMsg::Hello { .. } => "hello",
            ClientMsg::Execute(_) => "execute",
            ClientMsg::ToolResult { .. } => "toolResult",
            ClientMsg::FetchResult { .. } => "fetchResult",
            ClientMsg::Resume(_) => "resume",
            ClientMsg::Decision { .. } => "decision",
            ClientMsg::Invoke { .. } => "invoke",
            ClientMsg::CloseHandles { .. } => "closeHandles",
            ClientMsg::Stats { .. } => "stats",
            ClientMsg::Abort { .. } => "abort",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub max_message_bytes: u64,
    pub max_in_flight: u32,
    /// The most time (ms) a request may ask for, and what one without `timeout` gets.
    pub timeout: u64,
    /// The most memory (MiB) a request may ask for, and what one without `memoryLimit` gets.
    pub memory_limit: u32,
    /// The most network a request may ask for, and what one without `outbound` gets.
    pub outbound: Outbound,
    /// The most CPU (ms) a request may ask for, and what one without `cpuLimit` gets; `null`:
    /// no ceiling (a request without `cpuLimit` has no CPU budget).
    pub cpu_limit: Option<u32>,
    /// The same for `toolCallLimit`.
    pub tool_call_limit: Option<u32>,
    /// The same for `fetchLimit`.
    pub fetch_limit: Option<u32>,
    /// The most a callback-mode run's `approval.timeout` may ask for (ms); one that names none
    /// gets the request default or this, whichever is less.
    pub approval_timeout: u64,
    pub tool_payload_bytes: u64,
    pub result_bytes: u64,
    pub fetch_body_bytes: u64,
}

/// `GET /healthz`'s body: serving or draining, who, and the counts.
#[derive(Debug, Serialize)]
pub struct Health<'a> {
    pub status: &'static str,
    pub daemon: &'a str,
    pub protocol: u32,
    #[serde(flatten)]
    pub counts: DaemonCounts,
}

/// A message from the daemon. `payload` fields are not serialized: they travel as the binary
/// form's tail (see [`encode`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ServerMsg {
    Welcome {
        protocol: u32,
        daemon: String,
        name: String,
        limits: Limits,
    },
    Refused {
        code: &'static str,
        message: String,
    },
    ToolCall {
        id: u32,
        call_id: u32,
        provider: String,
        tool: String,
    },
    Fetch {
        id: u32,
        call_id: u32,
        /// Set when the execution is retained (its `execute` id may have been reused since).
        #[serde(skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        has_body: bool,
        /// The request's redirect mode.
        redirect: Redirect,
    },
    Done {
        id: u32,
        has_result: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<FailureReport>,
        logs: Vec<LogEntry>,
        stats: RunUsage,
        #[serde(skip_serializing_if = "Option::is_none")]
        grant: Option<Grant>,
        /// The run's tool calls in order (the audit trail).
        calls: Vec<CallRecord>,
        /// Present when the run paused for approval; the payload is then its pending calls'
        /// arguments, one after another.
        #[serde(skip_serializing_if = "Option::is_none")]
        paused: Option<PausedMsg>,
    },
    /// A call of run `id` (callback mode) that needs the client's `decide`; the payload is its
    /// V8-serialized arguments array. Answered by `decision`.
    Approve {
        id: u32,
        call_id: u32,
        provider: String,
        tool: String,
    },
    Invoked {
        id: u32,
        status: u16,
        status_text: String,
        headers: Vec<(String, String)>,
        has_body: bool,
    },
    Ack {
        id: u32,
    },
    Stats {
        id: u32,
        #[serde(flatten)]
        counts: DaemonCounts,
    },
    Failed {
        id: u32,
        code: &'static str,
        message: String,
        retryable: bool,
    },
    HandlesClosed {
        execution_id: String,
        reason: &'static str,
    },
    Error {
        code: &'static str,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<u32>,
    },
    /// A console entry of run `id`, as it was written (the run asked for `liveLogs`).
    Log {
        id: u32,
        #[serde(flatten)]
        entry: LogEntry,
    },
}

/// A paused run as `done` carries it: its token, and its pending calls with the length of each
/// one's arguments in the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PausedMsg {
    pub token: String,
    pub pending: Vec<PendingMsg>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingMsg {
    pub id: String,
    pub provider: String,
    pub tool: String,
    /// The bytes of its V8-serialized arguments array in the payload, after the previous
    /// pending calls'.
    pub args_bytes: usize,
}

impl PausedMsg {
    /// The message, and the payload that carries the arguments.
    fn of(paused: Paused) -> (Self, Vec<u8>) {
        let mut payload = Vec::new();
        let pending = paused
            .pending
            .into_iter()
            .map(|c| {
                payload.extend_from_slice(&c.args);
                PendingMsg {
                    id: c.id,
                    provider: c.provider,
                    tool: c.tool,
                    args_bytes: c.args.len(),
                }
            })
            .collect();
        let msg = PausedMsg {
            token: paused.token,
            pending,
        };
        (msg, payload)
    }
}

impl ServerMsg {
    pub fn failed(id: u32, f: Failure) -> Self {
        ServerMsg::Failed {
            id,
            code: f.code.as_str(),
            retryable: f.code.retryable(),
            message: f.message,
        }
    }

    /// A `PROTOCOL_ERROR`.
    pub fn protocol_error(detail: &str, id: Option<u32>) -> Self {
        ServerMsg::Error {
            code: FailureCode::ProtocolError.as_str(),
            message: FailureCode::ProtocolError.render(&[("detail", detail)]),
            id,
        }
    }

    /// A run's end: `done` (the payload is the result, or a paused run's pending arguments),
    /// or `failed` for an executor fault.
    pub fn completion(id: u32, result: Result<RunOutcome, Failure>) -> (Self, Option<Vec<u8>>) {
        match result {
            Err(f) => (ServerMsg::failed(id, f), None),
            Ok(o) => {
                let (paused, args) = o.paused.map(PausedMsg::of).unzip();
                let msg = ServerMsg::Done {
                    id,
                    has_result: o.result.is_some(),
                    error: o.error.map(FailureReport::from),
                    logs: o.logs,
                    stats: o.stats.into(),
                    grant: o.grant,
                    calls: o.calls,
                    paused,
                };
                (msg, o.result.or(args.filter(|a| !a.is_empty())))
            }
        }
    }
}

/// One message: the text form without a payload, the binary form with one.
pub fn encode(msg: &ServerMsg, payload: Option<&[u8]>) -> Message {
    // Serializing these types cannot fail (string keys, no custom Serialize); should it ever,
    // the peer gets a PROTOCOL_ERROR it can read instead of a broken frame.
    let header = serde_json::to_vec(msg).unwrap_or_else(|e| {
        let fallback =
            ServerMsg::protocol_error(&format!("the daemon could not encode: {e}"), None);
        serde_json::to_vec(&fallback).unwrap_or_default()
    });
    match payload {
        None => match String::from_utf8(header) {
            Ok(text) => Message::text(text),
            Err(e) => Message::binary(binary(&e.into_bytes(), &[])),
        },
        Some(payload) => Message::binary(binary(&header, payload)),
    }
}

fn binary(header: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + header.len() + payload.len());
    out.extend_from_slice(&(header.len() as u32).to_be_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(payload);
    out
}

/// A message the daemon could not take: what was wrong, and the request id it named, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub detail: String,
    pub id: Option<u32>,
}

impl WireError {
    fn new(detail: impl Into<String>) -> Self {
        WireError {
            detail: detail.into(),
            id: None,
        }
    }
}

/// Decodes a text message: the JSON object alone.
pub fn decode_text(text: &str) -> Result<ClientMsg, WireError> {
    decode_header(text.as_bytes())
}

/// Decodes a binary message into its header and payload.
pub fn decode_binary(bytes: &[u8]) -> Result<(ClientMsg, Vec<u8>), WireError> {
    let Some(len) = bytes.get(..4) else {
        return Err(WireError::new(format!(
            "a binary message of {} bytes is shorter than its 4-byte header length",
            bytes.len()
        )));
    };
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let rest = &bytes[4..];
    if len > rest.len() {
        return Err(WireError::new(format!(
            "a binary message says its header is {len} bytes, but only {} bytes follow the length",
            rest.len()
        )));
    }
    let (header, payload) = rest.split_at(len);
    Ok((decode_header(header)?, payload.to_vec()))
}

fn decode_header(json: &[u8]) -> Result<ClientMsg, WireError> {
    let value: serde_json::Value = serde_json::from_slice(json)
        .map_err(|e| WireError::new(format!("the message is not JSON ({e})")))?;
    let id = value
        .get("id")
        .and_then(|v| v.as_u64())
        .and_then(|v| u32::try_from(v).ok());
    let Some(kind) = value.get("type") else {
        return Err(WireError {
            detail: "the message has no `type`".into(),
            id,
        });
    };
    let kind = kind.to_string();
    ClientMsg::deserialize(value).map_err(|e| WireError {
        detail: format!("a message of type {kind} does not fit its shape: {e}"),
        id,
    })
}

#[cfg(test)]
mod tests;

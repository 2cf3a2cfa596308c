//! The JS shapes of the pool's types, each with its `From` conversion into or out of the pool
//! core. `lib/validate.js` builds the inbound shapes (`NativeOptions`, `NativeRequest`), so what
//! it returns is what crosses; the outbound shapes are what `lib/isolate-executor.js` receives.
//! Just over 500 lines on purpose: one shape per thing, and every shape that crosses in one file.

use std::path::PathBuf;

use codemode_pool::protocol::{
    self, Failure, LogEntry, Outbound, ProviderDecl, Redirect, RunError, RunOutcome, RunStats,
    SourceLocation, WireRequest, WireResponse,
};
use codemode_pool::{CloseReason, ExecSpec, FetchCall, PoolOptions, PoolStats, ToolCall};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

/// How a run's `fetch` reaches the network; `lib/validate.js` resolves it from the request's
/// `outbound`, else the executor's (omitted or `'public'`: public, `'native'`: native, `null`:
/// blocked, a function: routed).
#[napi(string_enum = "lowercase")]
pub enum OutboundMode {
    Native,
    Public,
    Blocked,
    Routed,
}

impl From<OutboundMode> for Outbound {
    fn from(mode: OutboundMode) -> Self {
        match mode {
            OutboundMode::Native => Outbound::Native,
            OutboundMode::Public => Outbound::Public,
            OutboundMode::Blocked => Outbound::Blocked,
            OutboundMode::Routed => Outbound::Routed,
        }
    }
}

/// The pool's options, validated (ranges and defaults) by `lib/validate.js`.
#[napi(object)]
pub struct NativeOptions {
    pub workers: u32,
    pub worker_path: String,
    pub queue_bound: u32,
    /// Milliseconds.
    pub timeout: u32,
    /// MiB.
    pub memory_limit: u32,
    /// Milliseconds a retained execution lives without an invocation.
    pub handles_idle_timeout: u32,
}

impl From<NativeOptions> for PoolOptions {
    fn from(o: NativeOptions) -> Self {
        PoolOptions {
            workers: o.workers.max(1) as usize,
            worker_path: PathBuf::from(o.worker_path),
            queue_bound: o.queue_bound as usize,
            timeout_ms: u64::from(o.timeout.max(1)),
            memory_limit_mib: o.memory_limit,
            handles_idle_timeout_ms: u64::from(o.handles_idle_timeout.max(1)),
        }
    }
}

#[napi(object)]
pub struct NativeProvider {
    pub name: String,
    /// Absent for an open list (`'*'`).
    pub tools: Option<Vec<String>>,
}

impl From<NativeProvider> for ProviderDecl {
    fn from(p: NativeProvider) -> Self {
        ProviderDecl {
            name: p.name,
            tools: p.tools,
        }
    }
}

/// One execution, validated by `lib/validate.js`.
#[napi(object)]
pub struct NativeRequest {
    pub code: String,
    /// `[specifier, source]` pairs, as `Object.entries` gives them.
    pub modules: Vec<(String, String)>,
    pub providers: Vec<NativeProvider>,
    /// Milliseconds; absent: the executor's.
    pub timeout: Option<u32>,
    /// MiB; absent: the executor's.
    pub memory_limit: Option<u32>,
    pub outbound: OutboundMode,
    /// Keep the isolate when the program returns a request handler.
    pub retain_handles: bool,
    /// Deliver each console entry as it is written (a completion with `log`).
    pub live_logs: Option<bool>,
}

impl From<NativeRequest> for ExecSpec {
    fn from(r: NativeRequest) -> Self {
        ExecSpec {
            code: r.code,
            modules: r.modules,
            providers: r.providers.into_iter().map(ProviderDecl::from).collect(),
            timeout_ms: r.timeout.map(|t| u64::from(t.max(1))),
            memory_limit_mib: r.memory_limit,
            outbound: r.outbound.into(),
            retain_handles: r.retain_handles,
            live_logs: r.live_logs.unwrap_or(false),
        }
    }
}

#[napi(string_enum = "lowercase")]
pub enum LogLevel {
    Log,
    Info,
    Warn,
    Error,
    Debug,
}

impl From<protocol::LogLevel> for LogLevel {
    fn from(level: protocol::LogLevel) -> Self {
        match level {
            protocol::LogLevel::Log => LogLevel::Log,
            protocol::LogLevel::Info => LogLevel::Info,
            protocol::LogLevel::Warn => LogLevel::Warn,
            protocol::LogLevel::Error => LogLevel::Error,
            protocol::LogLevel::Debug => LogLevel::Debug,
        }
    }
}

#[napi(object)]
pub struct NativeLog {
    pub level: LogLevel,
    pub message: String,
}

impl From<LogEntry> for NativeLog {
    fn from(l: LogEntry) -> Self {
        NativeLog {
            level: l.level.into(),
            message: l.message,
        }
    }
}

/// What a run used (see `RunStats`), in the units the public `RunStats` documents.
#[napi(object)]
pub struct NativeStats {
    pub wall_ms: f64,
    pub cpu_ms: f64,
    pub heap_peak_bytes: f64,
    pub buffers_peak_bytes: f64,
    pub tool_calls: u32,
    pub worker_pid: u32,
}

impl From<RunStats> for NativeStats {
    fn from(s: RunStats) -> Self {
        NativeStats {
            wall_ms: s.wall_ms(),
            cpu_ms: s.cpu_ms(),
            heap_peak_bytes: s.heap_peak as f64,
            buffers_peak_bytes: s.buffers_peak as f64,
            tool_calls: s.tool_calls,
            worker_pid: s.worker_pid,
        }
    }
}

/// A code with its rendered text: a program failure (`NativeOutcome.error`) or an executor
/// fault (`NativeCompletion.fault`).
#[napi(object)]
pub struct NativeFailure {
    pub code: String,
    pub message: String,
    /// Where a program failure happened in the model's code (1-based), when known.
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// The module it happened in (its key in the module map), when not the program itself.
    pub module: Option<String>,
}

impl From<RunError> for NativeFailure {
    fn from(e: RunError) -> Self {
        let (line, column, module) = SourceLocation::reported(e.location);
        NativeFailure {
            code: e.code,
            message: e.message,
            line,
            column,
            module,
        }
    }
}

impl From<Failure> for NativeFailure {
    fn from(f: Failure) -> Self {
        NativeFailure {
            code: f.code.as_str().into(),
            message: f.message,
            line: None,
            column: None,
            module: None,
        }
    }
}

/// How a run ended; `result` is V8-serialized, absent when `error` is set.
#[napi(object)]
pub struct NativeOutcome {
    pub result: Option<Buffer>,
    pub error: Option<NativeFailure>,
    pub logs: Vec<NativeLog>,
    pub stats: NativeStats,
    /// Present when the run's isolate is retained (then `result` is absent).
    pub grant: Option<NativeGrant>,
}

/// Retained handles: the id to invoke them by, and the names `invokeHandle` accepts.
#[napi(object)]
pub struct NativeGrant {
    pub execution_id: String,
    pub handles: Vec<String>,
}

impl From<RunOutcome> for NativeOutcome {
    fn from(o: RunOutcome) -> Self {
        NativeOutcome {
            grant: o.grant.map(|g| NativeGrant {
                execution_id: g.execution_id,
                handles: g.handles,
            }),
            result: o.result.map(Buffer::from),
            error: o.error.map(NativeFailure::from),
            logs: o.logs.into_iter().map(NativeLog::from).collect(),
            stats: o.stats.into(),
        }
    }
}

/// What the pool reports, in the order it happened (one channel, so a retained execution's
/// close arrives before the invocation it failed): an execution's end, `{ id, outcome }` or
/// `{ id, fault }`; an invocation's answer, `{ invocation, response }` or `{ invocation, fault }`;
/// or a retained execution's end, `{ closed }` (`id` is 0 for the last two).
#[napi(object)]
pub struct NativeCompletion {
    pub id: i64,
    pub outcome: Option<NativeOutcome>,
    pub fault: Option<NativeFailure>,
    /// The token `invokeHandle` was given.
    pub invocation: Option<u32>,
    pub response: Option<NativeWireResponse>,
    pub closed: Option<NativeClosed>,
    /// A console entry of run `id` as it was written (live logs); nothing else is set.
    pub log: Option<NativeLog>,
}

/// A retained execution ended, for `reason` (`closed`, `idle`, `timeout`, `memory`, `cpu`,
/// `worker-lost`, `pool-closed`).
#[napi(object)]
pub struct NativeClosed {
    pub execution_id: String,
    pub reason: String,
}

impl NativeCompletion {
    fn empty() -> Self {
        NativeCompletion {
            id: 0,
            outcome: None,
            fault: None,
            invocation: None,
            response: None,
            closed: None,
            log: None,
        }
    }

    pub fn log(id: u64, entry: LogEntry) -> Self {
        NativeCompletion {
            id: id as i64,
            log: Some(entry.into()),
            ..Self::empty()
        }
    }

    pub fn invoked(invocation: u32, result: Result<WireResponse, Failure>) -> Self {
        let (response, fault) = match result {
            Ok(r) => (Some(r.into()), None),
            Err(f) => (None, Some(f.into())),
        };
        NativeCompletion {
            invocation: Some(invocation),
            response,
            fault,
            ..Self::empty()
        }
    }

    pub fn closed(execution_id: &str, reason: CloseReason) -> Self {
        NativeCompletion {
            closed: Some(NativeClosed {
                execution_id: execution_id.into(),
                reason: reason.as_str().into(),
            }),
            ..Self::empty()
        }
    }
}

impl From<(u64, Result<RunOutcome, Failure>)> for NativeCompletion {
    fn from((id, result): (u64, Result<RunOutcome, Failure>)) -> Self {
        let (outcome, fault) = match result {
            Ok(o) => (Some(o.into()), None),
            Err(f) => (None, Some(f.into())),
        };
        NativeCompletion {
            id: id as i64,
            outcome,
            fault,
            ..Self::empty()
        }
    }
}

#[napi(object)]
pub struct NativeToolCall {
    pub id: i64,
    pub call_id: u32,
    pub provider: String,
    pub tool: String,
    /// The V8-serialized arguments array.
    pub args: Buffer,
}

impl From<ToolCall> for NativeToolCall {
    fn from(c: ToolCall) -> Self {
        NativeToolCall {
            id: c.exec_id as i64,
            call_id: c.call_id,
            provider: c.provider,
            tool: c.tool,
            args: c.args.into(),
        }
    }
}

/// A routed fetch, for the host's outbound policy.
#[napi(object)]
pub struct NativeFetchCall {
    pub id: i64,
    pub call_id: u32,
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Buffer>,
    /// The request's redirect mode.
    pub redirect: RedirectMode,
}

/// A request's redirect mode, as the Fetch standard spells it.
#[napi(string_enum = "lowercase")]
pub enum RedirectMode {
    Follow,
    Error,
    Manual,
}

impl From<Redirect> for RedirectMode {
    fn from(r: Redirect) -> Self {
        match r {
            Redirect::Follow => RedirectMode::Follow,
            Redirect::Error => RedirectMode::Error,
            Redirect::Manual => RedirectMode::Manual,
        }
    }
}

impl From<FetchCall> for NativeFetchCall {
    fn from(c: FetchCall) -> Self {
        NativeFetchCall {
            id: c.exec_id as i64,
            call_id: c.call_id,
            method: c.request.method,
            url: c.request.url,
            headers: c.request.headers,
            body: c.request.body.map(Buffer::from),
            redirect: c.request.redirect.into(),
        }
    }
}

/// A request for a retained handle, checked against the wire shape by `lib/validate.js`.
#[napi(object)]
pub struct NativeWireRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Buffer>,
}

impl From<NativeWireRequest> for WireRequest {
    fn from(r: NativeWireRequest) -> Self {
        WireRequest {
            method: r.method,
            url: r.url,
            headers: r.headers,
            body: r.body.map(|b| b.to_vec()),
            redirect: Default::default(),
        }
    }
}

/// A response in the wire shape: the outbound policy's answer (checked by
/// `lib/isolate-executor.js`), or a retained handle's (checked by the pool).
#[napi(object)]
pub struct NativeWireResponse {
    pub status: u32,
    pub status_text: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Buffer>,
}

impl From<NativeWireResponse> for WireResponse {
    fn from(r: NativeWireResponse) -> Self {
        WireResponse {
            status: r.status.min(u32::from(u16::MAX)) as u16,
            status_text: r.status_text,
            headers: r.headers,
            body: r.body.map(|b| b.to_vec()),
            url: String::new(),
            redirected: false,
        }
    }
}

impl From<WireResponse> for NativeWireResponse {
    fn from(r: WireResponse) -> Self {
        NativeWireResponse {
            status: u32::from(r.status),
            status_text: r.status_text,
            headers: r.headers,
            body: r.body.map(Buffer::from),
        }
    }
}

/// What the pool holds right now (see `PoolStats`).
#[napi(object)]
pub struct NativePoolStats {
    pub workers: u32,
    pub idle: u32,
    pub running: u32,
    pub queued: u32,
    pub retained: u32,
}

impl From<PoolStats> for NativePoolStats {
    fn from(s: PoolStats) -> Self {
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        NativePoolStats {
            workers: n(s.workers),
            idle: n(s.idle),
            running: n(s.running),
            queued: n(s.queued),
            retained: n(s.retained),
        }
    }
}

/// One sample of a metric: its series name, labels and value.
#[napi(object)]
pub struct NativeSample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// One metric (docs/operations.md) and its samples now.
#[napi(object)]
pub struct NativeMetric {
    pub name: String,
    /// `counter`, `gauge` or `histogram`.
    pub kind: String,
    pub help: String,
    pub samples: Vec<NativeSample>,
}

impl From<codemode_pool::Family> for NativeMetric {
    fn from(f: codemode_pool::Family) -> Self {
        NativeMetric {
            name: f.def.name.into(),
            kind: f.def.kind.as_str().into(),
            help: f.def.help.into(),
            samples: f
                .samples
                .into_iter()
                .map(|s| NativeSample {
                    name: s.name,
                    labels: s.labels,
                    value: s.value,
                })
                .collect(),
        }
    }
}

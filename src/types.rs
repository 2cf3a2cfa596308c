//! The addon's own JS shapes (what crosses into the pool, what `onDone`, `onToolCall` and
//! `onFetch` receive, the counts and metrics), each with its `From` conversion into or out of
//! the pool core. `lib/validate.js` builds the inbound shapes (`NativeOptions`,
//! `NativeRequest`); `lib/executor-core.js` reads the outbound ones. The shapes the daemon's
//! JSON carries too (a failure, a log entry, a run's stats, a grant, the outbound and redirect
//! modes) are defined once in `codemode_protocol` (`host`, `messages`), with their napi side.
//!
//! One file over 500 lines: the napi CLI generates native.d.ts from every shape here, and each
//! shape sits beside its conversion, so the JS side and the pool side of one crossing are read
//! and changed together.

use std::path::PathBuf;

use codemode_pool::protocol::host::{FailureReport, RunUsage};
use codemode_pool::protocol::{
    Budgets, CallRecord, Failure, Grant, LogEntry, LogLevel, Outbound, Paused, ProviderDecl,
    Redirect, RunOutcome, WireRequest, WireResponse,
};
use codemode_pool::tenants::{TenantLimits, TenantOptions};
use codemode_pool::{
    ApprovalMode, ApprovalSpec, CloseReason, Decision, ExecSpec, FetchCall, PoolOptions, PoolStats,
    ResumeBounds, ToolCall,
};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

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
    /// The key approval tokens are signed with (at least 32 bytes; lib/validate.js checks);
    /// absent: this process's random key.
    pub approval_key: Option<Buffer>,
    /// Record when each step of every execution happens (the outcome's `hops`).
    pub hops: bool,
    /// Whether the host's event loop is libuv's (Node's): then it reads the workers' output
    /// (uv.rs); `false` (Bun, Deno, `lib/host.js`), each worker's output is read on a thread of
    /// its own and reaches JS through the threadsafe functions alone. Absent: `true`.
    pub host_loop: Option<bool>,
    /// The tenants known by name, with their bounds (docs/tenants.md); absent: none.
    pub tenants: Option<Vec<NativeTenant>>,
    /// The bounds of a tenant not named in `tenants` (and of runs that name none).
    pub default_tenant: Option<NativeTenantLimits>,
}

/// A tenant the executor knows by name, validated by `lib/validate/tenants.js`.
#[napi(object)]
pub struct NativeTenant {
    pub name: String,
    pub limits: NativeTenantLimits,
}

/// A tenant's bounds; each absent: no bound of that kind beyond the executor's own.
#[napi(object)]
pub struct NativeTenantLimits {
    pub max_running: Option<u32>,
    pub max_queued: Option<u32>,
    /// CPU milliseconds the tenant's runs may spend in any minute.
    pub cpu_per_minute: Option<u32>,
}

impl From<NativeTenantLimits> for TenantLimits {
    fn from(l: NativeTenantLimits) -> Self {
        TenantLimits {
            max_running: l.max_running.map(|n| n.max(1) as usize),
            max_queued: l.max_queued.map(|n| n as usize),
            cpu_per_minute_ms: l.cpu_per_minute.map(u64::from),
        }
    }
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
            approval_key: o.approval_key.map(|k| k.to_vec()),
            hops: o.hops,
            tenants: TenantOptions {
                named: o
                    .tenants
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| (t.name, t.limits.into()))
                    .collect(),
                default: o.default_tenant.map(Into::into).unwrap_or_default(),
            },
        }
    }
}

/// One execution, validated by `lib/validate.js`.
#[napi(object)]
pub struct NativeRequest {
    pub code: String,
    /// `[specifier, source]` pairs, as `Object.entries` gives them.
    pub modules: Vec<(String, String)>,
    pub providers: Vec<ProviderDecl>,
    /// Milliseconds; absent: the executor's.
    pub timeout: Option<u32>,
    /// MiB; absent: the executor's.
    pub memory_limit: Option<u32>,
    pub outbound: Outbound,
    /// Keep the isolate when the program returns a request handler.
    pub retain_handles: bool,
    /// Deliver each console entry as it is written (a completion with `log`).
    pub live_logs: Option<bool>,
    /// CPU milliseconds the program may spend; absent: no budget (lib/validate.js resolves the
    /// executor's default).
    pub cpu_limit: Option<u32>,
    /// Tool calls the run may make; absent: no limit.
    pub tool_call_limit: Option<u32>,
    /// Fetches the run (and each invocation of its handles) may make; absent: no limit.
    pub fetch_limit: Option<u32>,
    /// Tool calls that wait for approval (docs/approvals.md); absent: none.
    pub approval: Option<NativeApproval>,
    /// Whom the run is for (docs/tenants.md); absent: the executor's one unnamed domain.
    pub tenant: Option<String>,
}

/// A run's approvals, validated by `lib/validate.js`.
#[napi(object)]
pub struct NativeApproval {
    /// `[provider, tools]` pairs: the tools of each provider that need approval (`null`: all).
    pub approve: Vec<(String, Option<Vec<String>>)>,
    /// `interrupt` (`expiresIn` set) or `callback` (`timeout` set).
    pub mode: NativeApprovalMode,
    /// Milliseconds a paused run's token stays good (interrupt mode).
    pub expires_in: Option<u32>,
    /// Milliseconds `decide` may take for one call (callback mode).
    pub timeout: Option<u32>,
}

#[napi(string_enum = "lowercase")]
pub enum NativeApprovalMode {
    Interrupt,
    Callback,
}

impl From<NativeApproval> for ApprovalSpec {
    fn from(a: NativeApproval) -> Self {
        let mode = match a.mode {
            NativeApprovalMode::Interrupt => ApprovalMode::Interrupt {
                expires_in_ms: u64::from(a.expires_in.unwrap_or(0).max(1)),
            },
            NativeApprovalMode::Callback => ApprovalMode::Callback {
                timeout_ms: u64::from(a.timeout.unwrap_or(0).max(1)),
            },
        };
        ApprovalSpec {
            approve: a.approve,
            mode,
        }
    }
}

/// One of `resume`'s decisions, by the pending call's id.
#[napi(object)]
pub struct NativeDecision {
    pub id: String,
    pub approved: bool,
    pub reason: Option<String>,
}

/// What a resumed run may use at most on this executor: its outbound policy (the mode, as
/// `lib/validate.js` resolves it) and its budgets. The time and memory bounds are the pool's.
#[napi(object)]
pub struct NativeResumeBounds {
    pub outbound: Outbound,
    pub cpu_limit: Option<u32>,
    pub tool_call_limit: Option<u32>,
    pub fetch_limit: Option<u32>,
}

impl From<NativeResumeBounds> for ResumeBounds {
    fn from(b: NativeResumeBounds) -> Self {
        ResumeBounds {
            outbound: b.outbound,
            budgets: Budgets {
                cpu_limit_ms: b.cpu_limit,
                tool_call_limit: b.tool_call_limit,
                fetch_limit: b.fetch_limit,
            },
        }
    }
}

impl From<NativeDecision> for (String, Decision) {
    fn from(d: NativeDecision) -> Self {
        (
            d.id,
            Decision {
                approved: d.approved,
                reason: d.reason,
            },
        )
    }
}

/// A run paused for approval: its token and the calls that wait.
#[napi(object)]
pub struct NativePaused {
    pub token: String,
    pub pending: Vec<NativePendingCall>,
}

#[napi(object)]
pub struct NativePendingCall {
    pub id: String,
    pub provider: String,
    pub tool: String,
    /// V8-serialized arguments array.
    pub args: Buffer,
}

impl From<Paused> for NativePaused {
    fn from(p: Paused) -> Self {
        NativePaused {
            token: p.token,
            pending: p
                .pending
                .into_iter()
                .map(|c| NativePendingCall {
                    id: c.id,
                    provider: c.provider,
                    tool: c.tool,
                    args: c.args.into(),
                })
                .collect(),
        }
    }
}

impl From<NativeRequest> for ExecSpec {
    fn from(r: NativeRequest) -> Self {
        ExecSpec {
            code: r.code,
            modules: r.modules,
            providers: r.providers,
            timeout_ms: r.timeout.map(|t| u64::from(t.max(1))),
            memory_limit_mib: r.memory_limit,
            outbound: r.outbound,
            retain_handles: r.retain_handles,
            live_logs: r.live_logs.unwrap_or(false),
            approval: r.approval.map(Into::into),
            budgets: Budgets {
                cpu_limit_ms: r.cpu_limit,
                tool_call_limit: r.tool_call_limit,
                fetch_limit: r.fetch_limit,
            },
            tenant: r.tenant,
        }
    }
}

/// How a run ended; `result` is V8-serialized, absent when `error` is set.
#[napi(object)]
pub struct NativeOutcome {
    pub result: Option<Buffer>,
    pub error: Option<FailureReport>,
    pub logs: Vec<LogEntry>,
    pub stats: RunUsage,
    /// Present when the run's isolate is retained (then `result` is absent).
    pub grant: Option<Grant>,
    /// The run's tool calls in order (the audit trail).
    pub calls: Vec<CallRecord>,
    /// Present when the run paused for approval (then `result` is absent).
    pub paused: Option<NativePaused>,
    /// When the pool records them (`hops`): each step's name and its time on the monotonic
    /// clock (ns, the clock of `process.hrtime`), in the order of the run path.
    pub hops: Option<Vec<(String, f64)>>,
}

impl From<RunOutcome> for NativeOutcome {
    fn from(o: RunOutcome) -> Self {
        NativeOutcome {
            grant: o.grant,
            result: o.result.map(Buffer::from),
            error: o.error.map(FailureReport::from),
            logs: o.logs,
            stats: o.stats.into(),
            calls: o.calls,
            paused: o.paused.map(Into::into),
            hops: o.hops.map(|h| {
                h.named()
                    .into_iter()
                    .map(|(name, ns)| (name.to_string(), ns as f64))
                    .collect()
            }),
        }
    }
}

/// Why a retained execution ended (the pool's `CloseReason`, as `onHandlesClosed` names it).
#[napi(string_enum = "kebab-case")]
pub enum HandlesClosedReason {
    Closed,
    Idle,
    Timeout,
    Memory,
    Cpu,
    WorkerLost,
    PoolClosed,
}

impl From<CloseReason> for HandlesClosedReason {
    fn from(r: CloseReason) -> Self {
        match r {
            CloseReason::Closed => HandlesClosedReason::Closed,
            CloseReason::Idle => HandlesClosedReason::Idle,
            CloseReason::Timeout => HandlesClosedReason::Timeout,
            CloseReason::Memory => HandlesClosedReason::Memory,
            CloseReason::Cpu => HandlesClosedReason::Cpu,
            CloseReason::WorkerLost => HandlesClosedReason::WorkerLost,
            CloseReason::PoolClosed => HandlesClosedReason::PoolClosed,
        }
    }
}

/// What the pool reports through `onDone`, in the order it happened (one channel, so a
/// retained execution's close arrives before the invocation it failed), tagged by `kind`:
/// run `id` ended (`done` with its outcome, or `failed` with an executor fault); the
/// invocation given token `invocation` was answered (`invoked`) or failed (`invokeFailed`); a
/// retained execution ended (`handlesClosed`); or run `id` wrote a console entry (`log`, live
/// logs only); or a call of run `id` needs `decide` (`approve`, callback mode). `connect()`
/// builds the same from the daemon's messages of the same names.
// Each completion is built once and moved straight into a threadsafe call; boxing the outcome
// would cost an allocation per run for no saving.
#[allow(clippy::large_enum_variant)]
#[napi(discriminant = "kind", discriminant_case = "camelCase")]
pub enum NativeCompletion {
    Done {
        id: i64,
        outcome: NativeOutcome,
    },
    Failed {
        id: i64,
        fault: FailureReport,
    },
    Invoked {
        invocation: u32,
        response: NativeWireResponse,
    },
    InvokeFailed {
        invocation: u32,
        fault: FailureReport,
    },
    HandlesClosed {
        execution_id: String,
        reason: HandlesClosedReason,
    },
    Log {
        id: i64,
        level: LogLevel,
        message: String,
    },
    /// A call that needs approval, for the run's `decide` (callback mode).
    Approve {
        call: NativeToolCall,
    },
}

impl NativeCompletion {
    pub fn log(id: u64, entry: LogEntry) -> Self {
        NativeCompletion::Log {
            id: id as i64,
            level: entry.level,
            message: entry.message,
        }
    }

    pub fn invoked(invocation: u32, result: Result<WireResponse, Failure>) -> Self {
        match result {
            Ok(r) => NativeCompletion::Invoked {
                invocation,
                response: r.into(),
            },
            Err(f) => NativeCompletion::InvokeFailed {
                invocation,
                fault: f.into(),
            },
        }
    }

    pub fn closed(execution_id: &str, reason: CloseReason) -> Self {
        NativeCompletion::HandlesClosed {
            execution_id: execution_id.into(),
            reason: reason.into(),
        }
    }
}

impl From<(u64, Result<RunOutcome, Failure>)> for NativeCompletion {
    fn from((id, result): (u64, Result<RunOutcome, Failure>)) -> Self {
        let id = id as i64;
        match result {
            Ok(o) => NativeCompletion::Done {
                id,
                outcome: o.into(),
            },
            Err(f) => NativeCompletion::Failed {
                id,
                fault: f.into(),
            },
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
    pub redirect: Redirect,
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
            redirect: c.request.redirect,
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
/// `lib/validate.js`, `wireResponse`), or a retained handle's (checked by the pool).
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
    pub engine: Option<codemode_pool::protocol::Engine>,
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
            engine: s.engine,
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
    pub kind: MetricKind,
    pub help: String,
    pub samples: Vec<NativeSample>,
}

impl From<codemode_pool::Family> for NativeMetric {
    fn from(f: codemode_pool::Family) -> Self {
        NativeMetric {
            name: f.def.name.into(),
            kind: f.def.kind.into(),
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

/// A metric's type, as the Prometheus text format names it.
#[napi(string_enum = "lowercase")]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

impl From<codemode_pool::MetricKind> for MetricKind {
    fn from(k: codemode_pool::MetricKind) -> Self {
        match k {
            codemode_pool::MetricKind::Counter => MetricKind::Counter,
            codemode_pool::MetricKind::Gauge => MetricKind::Gauge,
            codemode_pool::MetricKind::Histogram => MetricKind::Histogram,
        }
    }
}

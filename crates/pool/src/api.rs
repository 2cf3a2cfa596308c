//! What the pool's callers see: its options, the execution they describe, the calls and
//! completions it hands back, the host they implement, and the bounds every module shares.
//! Types only (re-exported by lib.rs); nothing here reaches into the pool.

use std::os::fd::RawFd;
use std::path::PathBuf;
use std::process::ChildStdout;
use std::time::Duration;

use codemode_protocol::{
    Budgets, Failure, LogEntry, Outbound, ProviderDecl, RunOutcome, WireRequest, WireResponse,
};

use crate::tenants::TenantOptions;

/// How many times a run is queued again because its worker was lost before acknowledging it
/// (`Started`); once more, and it fails with `WORKER_LOST` after all.
pub const REQUEUE_BOUND: u32 = 3;

/// How long a worker may take to confirm a cancelled run before it is killed and replaced.
pub const CANCEL_GRACE: Duration = Duration::from_millis(1000);

/// How long a run handed to a worker still preparing its next isolate (see `State::preparing`)
/// may wait for it to start before its time bound runs anyway. Its bound proper starts when the
/// worker acknowledges it (`Started`); preparing takes about 1.5 ms.
pub const PREPARE_GRACE: Duration = Duration::from_millis(1000);

/// How long a worker stays idle before a tenant that already runs elsewhere may have it retired
/// to take it over (docs/tenants.md, "Cordons"): without it, two tenants would trade a worker
/// back and forth, a spawn each time, whenever one of them idles between runs. A tenant with
/// nothing running does not wait for it.
pub const RETIRE_IDLE: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct PoolOptions {
    pub workers: usize,
    pub worker_path: PathBuf,
    pub queue_bound: usize,
    pub timeout_ms: u64,
    pub memory_limit_mib: u32,
    /// How long a retained execution lives without an invocation.
    pub handles_idle_timeout_ms: u64,
    /// The key approval tokens are signed with (at least `limits::APPROVAL_KEY_MIN_BYTES`);
    /// `None`: a random key of this process, so its tokens die with it.
    pub approval_key: Option<Vec<u8>>,
    /// Record when each step of every execution happens: its outcome's `hops`.
    pub hops: bool,
    /// The tenants the pool knows by name and the bounds of each (docs/tenants.md).
    pub tenants: TenantOptions,
}

/// One execution as the caller describes it; `None` fields take the pool's defaults.
#[derive(Debug, Clone, Default)]
pub struct ExecSpec {
    pub code: String,
    pub modules: Vec<(String, String)>,
    pub providers: Vec<ProviderDecl>,
    pub timeout_ms: Option<u64>,
    pub memory_limit_mib: Option<u32>,
    /// How the run's `fetch` reaches the network (the caller resolves its default).
    pub outbound: Outbound,
    /// Keep the isolate when the program returns a request handler (docs/handles.md).
    pub retain_handles: bool,
    /// Hand each console entry to the host as it is written ([`Host::log`]).
    pub live_logs: bool,
    /// CPU, tool calls and fetches the run may spend (the caller resolves its defaults).
    pub budgets: Budgets,
    /// Tool calls that wait for a person's approval (docs/approvals.md); not with
    /// `retain_handles`.
    pub approval: Option<ApprovalSpec>,
    /// Whom the run is for (docs/tenants.md): its worker runs only this tenant's code, its
    /// tenant's bounds hold it, and what it retains or pauses stays the tenant's. `None`: the
    /// pool's one unnamed domain. Checked by the caller (`tenants::check_name`).
    pub tenant: Option<String>,
}

/// What a resumed run may use at most where it resumes ([`Pool::resume`]): the resuming
/// executor's outbound policy and budgets (its time and memory bounds are the pool's).
#[derive(Debug, Clone, Copy, Default)]
pub struct ResumeBounds {
    pub outbound: Outbound,
    pub budgets: Budgets,
}

/// A tool call from a running program, for the host to answer with
/// [`Pool::answer_tool_call`].
#[derive(Debug)]
pub struct ToolCall {
    pub exec_id: u64,
    pub call_id: u32,
    pub provider: String,
    pub tool: String,
    /// V8-serialized arguments array.
    pub args: Vec<u8>,
}

/// A `fetch` from a run whose outbound is routed, for the host's policy to answer with
/// [`Pool::answer_fetch`].
#[derive(Debug)]
pub struct FetchCall {
    pub exec_id: u64,
    pub call_id: u32,
    pub request: WireRequest,
}

/// What the pool needs from whoever submitted an execution.
pub trait Host: Send + Sync + 'static {
    /// Called on a pool thread; must not block (hand the call to the host's own thread).
    fn tool_call(&self, call: ToolCall);
    /// A routed `fetch`; called on a pool thread, must not block.
    fn fetch(&self, call: FetchCall);
    /// A retained execution this host started has ended, for `reason`; called once per
    /// execution, on a pool thread, and must not block.
    fn handles_closed(&self, _execution_id: &str, _reason: CloseReason) {}
    /// A console entry of execution `exec_id`, as it is written (only for runs submitted with
    /// `live_logs`), in order and before its completion; called on a pool thread, must not
    /// block.
    fn log(&self, _exec_id: u64, _entry: LogEntry) {}
    /// A tool call that needs approval, of a run in callback mode (its arguments as the sandbox
    /// made them): answer it with
    /// [`Pool::decide`] (the run's time bound waits meanwhile). Called on a pool thread, must
    /// not block. A host that never submits callback-mode runs need not implement it.
    fn approve(&self, _call: ToolCall) {}
}

/// Why a retained execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The host called `close_handles`.
    Closed,
    /// No invocation arrived within the idle bound.
    Idle,
    /// An invocation outlived its time bound.
    Timeout,
    /// The isolate filled its memory limit (during an invocation or between two).
    Memory,
    /// The worker process died.
    WorkerLost,
    /// The pool shut down.
    PoolClosed,
    /// A CPU bound: an invocation spent its CPU budget (`Budgets::cpu_limit_ms`), or its
    /// timers spent more CPU between invocations than the bound allows
    /// (`limits::IDLE_CPU_MS` per `limits::IDLE_CPU_WINDOW_MS`).
    Cpu,
}

impl CloseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::Closed => "closed",
            CloseReason::Idle => "idle",
            CloseReason::Timeout => "timeout",
            CloseReason::Memory => "memory",
            CloseReason::WorkerLost => "worker-lost",
            CloseReason::PoolClosed => "pool-closed",
            CloseReason::Cpu => "cpu",
        }
    }
}

/// Receives an invocation's answer (or why there is none), exactly once.
pub type InvokeDone = Box<dyn FnOnce(Result<WireResponse, Failure>) + Send + 'static>;

/// What the pool holds right now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Live worker processes.
    pub workers: usize,
    /// Workers with a prepared isolate and nothing to do.
    pub idle: usize,
    /// Executions running (retained ones not counted).
    pub running: usize,
    /// Executions waiting for a worker.
    pub queued: usize,
    /// Retained executions: each holds a worker until it ends.
    pub retained: usize,
    /// The engine the workers run programs on; `None` until the first worker has said.
    pub engine: Option<codemode_protocol::Engine>,
}

/// Receives the execution id and how it ended, exactly once.
pub type Completion = Box<dyn FnOnce(u64, Result<RunOutcome, Failure>) + Send + 'static>;

/// Which tool calls of a run wait for approval, and how.
#[derive(Debug, Clone)]
pub struct ApprovalSpec {
    /// Provider names and, for each, the tools that need approval (`None`: every tool of it).
    pub approve: Vec<(String, Option<Vec<String>>)>,
    pub mode: ApprovalMode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalMode {
    /// The run stops at the first call that needs approval; its outcome carries a token that
    /// `Pool::resume` takes with the decisions, for `expires_in_ms`.
    Interrupt { expires_in_ms: u64 },
    /// The host's `Host::approve` is asked while the run waits (the time bound does not run
    /// meanwhile); `Pool::decide` answers, within `timeout_ms` (the host enforces it: the pool
    /// stops a run whose decision never comes once that much more has passed).
    Callback { timeout_ms: u64 },
}

/// A person's answer to a call that needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub approved: bool,
    /// Why (a denial's reason reaches the program in the `APPROVAL_DENIED` text).
    pub reason: Option<String>,
}

/// The host's event loop, as the pool asks it to watch a worker's output.
pub trait Watch: Send + Sync + 'static {
    /// Watch `fd` (worker `key`'s output) and call `Pool::readable(key)` on the loop's thread
    /// whenever it is readable, until that returns [`Readable::Ended`]. Called on any thread.
    /// `false`: the loop cannot (it is gone); the pool then reads that worker on a thread.
    fn watch(&self, key: u64, fd: RawFd) -> bool;
}

/// What [`Pool::readable`](crate::Pool::readable) found.
pub enum Readable {
    /// Keep watching.
    Open,
    /// The worker ended: stop watching its descriptor, then drop this (which closes it). `None`:
    /// the pool did not know the key (nothing to close).
    Ended(Option<ChildStdout>),
}

//! The napi layer: JS shapes to pool-core types and back (`types`), the failure grammar
//! (`failures`), and `NativePool`, a pool whose tool calls, routed fetches and completions reach
//! JS through weak threadsafe functions. Validation and the public API live in `lib/`;
//! supervision, queueing and bounds in `codemode-pool`.

mod approval;
mod failures;
mod limits;
mod server;
mod types;
mod typescript;
mod uv;

use std::sync::Arc;
use std::time::Duration;

use codemode_pool::protocol::{Failure, FailureCode, LogEntry, RunOutcome};
use codemode_pool::{CloseReason, Decision, FetchCall, Host, Pool, ToolCall};
use napi::bindgen_prelude::Buffer;
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Status};
use napi_derive::napi;

pub use approval::{
    read_approval, NativeApprovalAsk, NativeApprovalProvider, NativeApprovalRead,
    NativeApprovalRefusal,
};
pub use failures::{failure_catalog, render_failure, FailureEntry, FailureKind};
use failures::{thrown, Fault};
pub use limits::{dispatch_limits, limits, NativeDispatchLimits, NativeLimits, NativeOptionLimits};
pub use server::*;
pub use types::*;
pub use typescript::{strip_types, Stripped};

/// A weak (unref'd) threadsafe function called with one object argument. Weak, so an idle
/// pool never keeps Node alive; `lib/executor-core.js` (`#holdLoop`) holds the loop open while
/// executions are in flight. (Spelled out in `NativePool::new`, where the d.ts generator reads it.)
type Callback<T> = ThreadsafeFunction<T, UnknownReturnValue, T, Status, false, true>;

struct Bridge {
    on_tool_call: Callback<NativeToolCall>,
    on_fetch: Callback<NativeFetchCall>,
    on_done: Callback<NativeCompletion>,
}

impl Bridge {
    fn report(&self, completion: NativeCompletion) {
        self.on_done
            .call(completion, ThreadsafeFunctionCallMode::NonBlocking);
    }
}

impl Host for Bridge {
    fn tool_call(&self, call: ToolCall) {
        self.on_tool_call
            .call(call.into(), ThreadsafeFunctionCallMode::NonBlocking);
    }

    fn fetch(&self, call: FetchCall) {
        self.on_fetch
            .call(call.into(), ThreadsafeFunctionCallMode::NonBlocking);
    }

    fn handles_closed(&self, execution_id: &str, reason: CloseReason) {
        self.report(NativeCompletion::closed(execution_id, reason));
    }

    fn log(&self, exec_id: u64, entry: LogEntry) {
        // Through the completions' function: an entry reaches JS before its run's end.
        self.report(NativeCompletion::log(exec_id, entry));
    }

    fn approve(&self, call: ToolCall) {
        self.report(NativeCompletion::Approve { call: call.into() });
    }
}

#[napi]
pub struct NativePool {
    pool: Pool,
    bridge: Arc<Bridge>,
    /// Node's loop reads the workers' output (uv.rs); `None` on a host whose loop is not
    /// libuv's, where reader threads do.
    reactor: Option<uv::Reactor>,
}

#[napi]
impl NativePool {
    /// Starts the workers. Throws an error whose `code` is the failure code
    /// (`WORKER_START_FAILED`) when they cannot start.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        options: NativeOptions,
        on_tool_call: ThreadsafeFunction<
            NativeToolCall,
            UnknownReturnValue,
            NativeToolCall,
            Status,
            false,
            true,
        >,
        on_fetch: ThreadsafeFunction<
            NativeFetchCall,
            UnknownReturnValue,
            NativeFetchCall,
            Status,
            false,
            true,
        >,
        on_done: ThreadsafeFunction<
            NativeCompletion,
            UnknownReturnValue,
            NativeCompletion,
            Status,
            false,
            true,
        >,
    ) -> Result<Self, Fault> {
        let start_failed =
            |detail: String| thrown(FailureCode::WorkerStartFailed.failure(&[("detail", &detail)]));
        let (pool, reactor) = if options.host_loop.unwrap_or(true) {
            let (reactor, watcher) = uv::Reactor::new(&env).map_err(start_failed)?;
            let pool = match Pool::start_watched(options.into(), Arc::new(watcher)) {
                Ok(pool) => pool,
                Err(failure) => {
                    reactor.close();
                    return Err(thrown(failure));
                }
            };
            reactor.attach(pool.clone());
            (pool, Some(reactor))
        } else {
            (Pool::start(options.into()).map_err(thrown)?, None)
        };
        Ok(NativePool {
            pool,
            bridge: Arc::new(Bridge {
                on_tool_call,
                on_fetch,
                on_done,
            }),
            reactor,
        })
    }

    /// Submits one execution and returns its id; its end arrives through `onDone`. Throws an
    /// error whose `code` is the failure code (`CLOSED`, `QUEUE_FULL`) when it cannot be taken.
    #[napi]
    pub fn execute(&self, request: NativeRequest) -> Result<i64, Fault> {
        let bridge = self.bridge.clone();
        let done = Box::new(move |id: u64, result: Result<RunOutcome, Failure>| {
            bridge.report(NativeCompletion::from((id, result)));
        });
        let host: Arc<dyn Host> = self.bridge.clone();
        self.pool
            .execute(request.into(), host, done)
            .map(|id| id as i64)
            .map_err(thrown)
    }

    /// Resumes a run paused for approval from its `token` with a decision per pending call; the
    /// resumed run's end arrives through `onDone` under the id returned. Throws an error whose
    /// `code` names why the token or the decisions are refused (`TOKEN_TAMPERED`,
    /// `TOKEN_FOREIGN_KEY`, `TOKEN_EXPIRED`, `DECISIONS_INVALID`), or `CLOSED`, `QUEUE_FULL`.
    /// The run gets the tighter of the token's bounds and this executor's (`within`, and the
    /// pool's time and memory bounds). `tenant`: whom the resume acts for (another tenant's
    /// token is `TOKEN_FOREIGN_KEY`).
    #[napi]
    pub fn resume(
        &self,
        token: String,
        decisions: Vec<NativeDecision>,
        routes: bool,
        live_logs: bool,
        within: NativeResumeBounds,
        tenant: Option<String>,
    ) -> Result<i64, Fault> {
        let bridge = self.bridge.clone();
        let done = Box::new(move |id: u64, result: Result<RunOutcome, Failure>| {
            bridge.report(NativeCompletion::from((id, result)));
        });
        let host: Arc<dyn Host> = self.bridge.clone();
        let decisions = decisions.into_iter().map(Into::into).collect();
        self.pool
            .resume(
                &token,
                decisions,
                routes,
                live_logs,
                within.into(),
                tenant.as_deref(),
                host,
                done,
            )
            .map(|id| id as i64)
            .map_err(thrown)
    }

    /// The run's `decide` answered call `call_id` of execution `id` (callback mode).
    #[napi]
    pub fn decide(&self, id: i64, call_id: u32, approved: bool, reason: Option<String>) {
        self.pool
            .decide(id as u64, call_id, Decision { approved, reason });
    }

    /// Invokes handle `name` of retained execution `execution_id`; the answer arrives through
    /// `onDone` with `invocation` set to the token given, for `tenant` (another tenant's
    /// execution is `HANDLES_CLOSED`). Throws an error whose `code` is
    /// `HANDLES_CLOSED` or `HANDLE_NOT_FOUND` when it is refused at once. Returns the pool's
    /// number for the invocation (for `abortInvocation`).
    #[napi]
    pub fn invoke_handle(
        &self,
        execution_id: String,
        name: String,
        request: NativeWireRequest,
        invocation: u32,
        tenant: Option<String>,
    ) -> Result<i64, Fault> {
        let bridge = self.bridge.clone();
        let done = Box::new(move |result| {
            bridge.report(NativeCompletion::invoked(invocation, result));
        });
        self.pool
            .invoke_handle(
                &execution_id,
                &name,
                request.into(),
                tenant.as_deref(),
                done,
            )
            .map(|n| n as i64)
            .map_err(thrown)
    }

    /// Aborts execution `id`: it completes with `ABORTED` (queued: without starting; running:
    /// stopped as at its time bound). One already ended is left alone.
    #[napi]
    pub fn abort(&self, id: i64) {
        self.pool.abort(id as u64);
    }

    /// Aborts invocation `invoke_id` (the number `invokeHandle` returned).
    #[napi]
    pub fn abort_invocation(&self, invoke_id: i64) {
        self.pool.abort_invocation(invoke_id as u64);
    }

    /// The pool's metrics (docs/operations.md), each with its samples now.
    #[napi]
    pub fn metrics(&self) -> Vec<NativeMetric> {
        self.pool.metrics().into_iter().map(Into::into).collect()
    }

    /// The pool's metrics in the Prometheus text format.
    #[napi]
    pub fn metrics_text(&self) -> String {
        codemode_pool::render_metrics(&self.pool.metrics())
    }

    /// Ends retained execution `execution_id` for `tenant`. Throws an error whose `code` is
    /// `HANDLES_CLOSED` when it holds no handles or another tenant owns it.
    #[napi]
    pub fn close_handles(&self, execution_id: String, tenant: Option<String>) -> Result<(), Fault> {
        self.pool
            .close_handles(&execution_id, tenant.as_deref())
            .map_err(thrown)
    }

    /// Counts of workers and executions, retained ones included.
    #[napi]
    pub fn stats(&self) -> NativePoolStats {
        self.pool.stats().into()
    }

    /// The output bounds this pool's runs are held to.
    #[napi]
    pub fn limits(&self) -> NativeLimits {
        NativeLimits::current()
    }

    /// Answers tool call `call_id` of execution `id` with a V8-serialized value.
    #[napi]
    pub fn resolve_tool_call(&self, id: i64, call_id: u32, value: Buffer) {
        self.pool
            .answer_tool_call(id as u64, call_id, true, value.to_vec());
    }

    /// Rejects tool call `call_id` of execution `id` with `message` inside the sandbox.
    #[napi]
    pub fn reject_tool_call(&self, id: i64, call_id: u32, message: String) {
        self.pool
            .answer_tool_call(id as u64, call_id, false, message.into_bytes());
    }

    /// Denies tool call `call_id` of execution `id` with `message` (an `APPROVAL_DENIED` text):
    /// it rejects inside the sandbox as a denial, with that code.
    #[napi]
    pub fn deny_tool_call(&self, id: i64, call_id: u32, message: String) {
        self.pool.deny_tool_call(id as u64, call_id, message);
    }

    /// Answers routed fetch `call_id` of execution `id` with the policy's response.
    #[napi]
    pub fn resolve_fetch(&self, id: i64, call_id: u32, response: NativeWireResponse) {
        self.pool
            .answer_fetch(id as u64, call_id, Ok(response.into()));
    }

    /// Rejects routed fetch `call_id` of execution `id` with `message` inside the sandbox.
    #[napi]
    pub fn reject_fetch(&self, id: i64, call_id: u32, message: String) {
        self.pool.answer_fetch(id as u64, call_id, Err(message));
    }

    /// Refuses new executions; queued and running ones continue.
    #[napi]
    pub fn close(&self) {
        self.pool.close();
    }

    /// Stops and reaps every worker (waits at most `grace_ms`, then has killed them all).
    #[napi]
    pub fn shutdown(&self, grace_ms: u32) {
        self.pool
            .shutdown(Duration::from_millis(u64::from(grace_ms)));
        if let Some(reactor) = &self.reactor {
            reactor.close();
        }
    }

    #[napi]
    pub fn worker_pids(&self) -> Vec<u32> {
        self.pool.worker_pids()
    }
}

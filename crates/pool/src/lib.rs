//! The pool core: supervised `codemode-worker` processes, a bounded queue, time bounds, and
//! tool-call routing. Plain Rust with no napi, so the addon and a daemon share it.
//!
//! Threads, not an async runtime: each worker's stdout is read by its own reader thread, or by
//! the host's event loop when it offers one (`Pool::start_watched`, readiness.rs: the addon, so
//! a frame wakes only the JS thread that acts on it); both decode with the protocol's one frame
//! codec (reader.rs) and hand each frame to the dispatcher (dispatch.rs). Frames to a worker
//! are written by the sender's own thread when the pipe takes them at once, and otherwise
//! queued for the worker's writer thread (`input.rs`), so no caller (the JS thread answering a
//! tool call, the watchdog, a dispatch under the state lock) ever blocks on a full pipe, and
//! the common case adds no thread hop. One watchdog thread enforces every run's and
//! invocation's limits (watchdog.rs, each request's `Limit` in limit.rs, over the registry in
//! deadlines.rs). Callers get results through a completion callback,
//! which fits napi threadsafe functions and socket writers alike.
//!
//! A worker's life, module by module: spawn.rs starts it; reader.rs or readiness.rs reads its
//! output; dispatch.rs acts on each frame after conduct.rs admitted it; schedule.rs hands it
//! runs and writes the host's answers; lifecycle.rs settles its end. Retained executions are in
//! handles.rs, native fetch in outbound.rs, every run's tool calls in calls.rs, approvals in
//! approvals/, metrics and live logs in observe.rs.
//!
//! The modules stand in layers, and none reaches back into one above it (scripts/cycles.mjs
//! holds that in CI): the leaves (api.rs, the types callers see; limit.rs, every bound of one
//! request; process.rs, input.rs, conduct.rs, outbound.rs, observe.rs, calls.rs, approvals/),
//! then state.rs (what the pool holds, made of the leaves), then the modules that act on the
//! state, and this file on top: `Pool`, each method a short entry point into them. Nothing
//! refers to this file. It passes 500 lines only by its doc comments: the public API is
//! documented here, where callers read it.

mod api;
mod approvals;
mod calls;
mod conduct;
mod deadlines;
mod diagnostics;
mod dispatch;
mod handles;
mod input;
mod lifecycle;
mod limit;
mod observe;
mod outbound;
mod process;
mod reader;
mod readiness;
mod schedule;
mod spawn;
mod state;
pub mod tenants;
mod watchdog;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use codemode_protocol::{
    CallStatus, ExecuteRequest, Failure, FailureCode, Hops, HostMsg, Outbound, WireRequest,
    WireResponse,
};

pub use api::{
    ApprovalMode, ApprovalSpec, CloseReason, Completion, Decision, ExecSpec, FetchCall, Host,
    InvokeDone, PoolOptions, PoolStats, Readable, ResumeBounds, ToolCall, Watch, CANCEL_GRACE,
    PREPARE_GRACE, REQUEUE_BOUND, RETIRE_IDLE,
};
pub use approvals::rules::{read_approval, AskedMode, ProviderApproval, Refusal};
pub use codemode_protocol as protocol;
pub use observe::{
    in_and_out, render as render_metrics, sample, Family, MetricDef, MetricKind, Sample, FAMILIES,
};
pub use readiness::readable_now;

use state::{Inner, Job, State};

#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

/// A paused run opened from its token ([`Pool::open_token`]), not yet running: its bounds may
/// only narrow before [`Pool::run_reopened`] runs it.
pub struct Reopened {
    spec: ExecSpec,
    gated: approvals::Gated,
}

impl Reopened {
    /// The run as it stands: the token's request, held to what it was held to so far.
    pub fn spec(&self) -> &ExecSpec {
        &self.spec
    }

    /// Holds the run to a resuming executor's bounds: the narrower outbound (when it names
    /// one), the tighter of each budget.
    pub fn hold_to(&mut self, outbound: Option<Outbound>, budgets: codemode_protocol::Budgets) {
        if let Some(outbound) = outbound {
            self.spec.outbound = self.spec.outbound.narrower(outbound);
        }
        self.spec.budgets = self.spec.budgets.tighter(budgets);
    }

    /// Holds the run's time and memory bounds to at most these.
    pub fn cap(&mut self, timeout_ms: u64, memory_limit_mib: u32) {
        let spec = &mut self.spec;
        spec.timeout_ms = Some(spec.timeout_ms.map_or(timeout_ms, |t| t.min(timeout_ms)));
        spec.memory_limit_mib = Some(
            spec.memory_limit_mib
                .map_or(memory_limit_mib, |m| m.min(memory_limit_mib)),
        );
    }
}

impl Pool {
    /// Checks the worker binary and starts `workers` processes (they handshake in the
    /// background; executions queue until one is ready).
    pub fn start(opts: PoolOptions) -> Result<Pool, Failure> {
        Self::start_with(opts, None)
    }

    /// `start`, with the host's event loop reading the workers' output instead of a reader
    /// thread per worker (see [`Watch`]): one wake-up fewer per frame.
    pub fn start_watched(opts: PoolOptions, watch: Arc<dyn Watch>) -> Result<Pool, Failure> {
        Self::start_with(opts, Some(watch))
    }

    fn start_with(opts: PoolOptions, watch: Option<Arc<dyn Watch>>) -> Result<Pool, Failure> {
        if !opts.worker_path.is_file() {
            return Err(FailureCode::WorkerNotFound
                .failure(&[("path", &opts.worker_path.display().to_string())]));
        }
        let (respawn, respawns) = crossbeam_channel::unbounded();
        let opts_key = opts.approval_key.clone();
        let calls = Arc::new(calls::Calls::default());
        let inner = Arc::new_cyclic(|me| Inner {
            opts,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            next_exec: AtomicU64::new(1),
            client: outbound::NativeClient::new(),
            performers: outbound::Performers::new(
                me.clone() as std::sync::Weak<dyn outbound::Perform>
            ),
            respawn,
            watch,
            watched: Default::default(),
            observe: Arc::default(),
            approvals: Arc::new(approvals::Book::new(opts_key.as_deref(), calls.clone())),
            calls,
            engine: std::sync::OnceLock::new(),
        });
        spawn::start_spawner(&inner, respawns)?;
        for _ in 0..inner.opts.workers {
            spawn::spawn_worker(&inner)?;
        }
        watchdog::start(&inner);
        Ok(Pool { inner })
    }

    /// Queues an execution. Faults that are known at once (closed, queue full) return here;
    /// everything else arrives through `done`, exactly once.
    pub fn execute(
        &self,
        spec: ExecSpec,
        host: Arc<dyn Host>,
        done: Completion,
    ) -> Result<u64, Failure> {
        let opts = &self.inner.opts;
        let mut spec = spec;
        spec.timeout_ms = Some(spec.timeout_ms.unwrap_or(opts.timeout_ms));
        spec.memory_limit_mib = Some(spec.memory_limit_mib.unwrap_or(opts.memory_limit_mib));
        let gated = match &spec.approval {
            Some(_) if spec.retain_handles => {
                return Err(approvals::rules::Refusal::retained_with_approvals().failure())
            }
            Some(approval) => Some(approvals::Book::first_run(&spec, approval)),
            None => None,
        };
        self.submit(spec, gated, host, done)
    }

    /// Resumes a run paused for approval (docs/approvals.md) from its `token`, with a decision
    /// for each of its pending calls (by id): [`Pool::open_token`], held to `within` (the
    /// resuming executor's outbound policy and budgets) and to this pool's `timeout_ms` and
    /// `memory_limit_mib` (the tighter of each, so a token made where they were looser gets no
    /// more here), then [`Pool::run_reopened`]. `routes`: the host answers routed fetches.
    /// `tenant`: whom the resume acts for (see [`Pool::open_token`]).
    #[allow(clippy::too_many_arguments)]
    pub fn resume(
        &self,
        token: &str,
        decisions: Vec<(String, Decision)>,
        routes: bool,
        live_logs: bool,
        within: ResumeBounds,
        tenant: Option<&str>,
        host: Arc<dyn Host>,
        done: Completion,
    ) -> Result<u64, Failure> {
        let mut run = self.open_token(token, decisions, live_logs, tenant)?;
        run.hold_to(Some(within.outbound), within.budgets);
        let opts = &self.inner.opts;
        run.cap(opts.timeout_ms, opts.memory_limit_mib);
        self.run_reopened(run, routes, host, done)
    }

    /// The first step of a resume: opens `token` and matches `decisions` to its pending calls,
    /// giving the run it describes for the caller to hold to its own bounds
    /// ([`Reopened::hold_to`], [`Reopened::cap`]; a daemon checks its ceilings against
    /// [`Reopened::spec`]) before [`Pool::run_reopened`] runs it. Refused: a token this pool's
    /// key did not sign as it is (`TOKEN_TAMPERED`, `TOKEN_FOREIGN_KEY`), one past its expiry
    /// (`TOKEN_EXPIRED`), decisions that do not match its pending calls (`DECISIONS_INVALID`).
    /// `tenant`: whom the resume acts for; a token of another tenant's run is refused as one
    /// of another key (`TOKEN_FOREIGN_KEY`).
    pub fn open_token(
        &self,
        token: &str,
        decisions: Vec<(String, Decision)>,
        live_logs: bool,
        tenant: Option<&str>,
    ) -> Result<Reopened, Failure> {
        let (mut spec, gated) = self.inner.approvals.resume(token, decisions, tenant)?;
        spec.live_logs = live_logs;
        Ok(Reopened { spec, gated })
    }

    /// The second step of a resume: runs what [`Pool::open_token`] opened; the program runs
    /// again, every call its ledger holds answered from it, and goes on. `routes`: the host
    /// answers routed fetches (a run whose outbound was routed needs it).
    pub fn run_reopened(
        &self,
        run: Reopened,
        routes: bool,
        host: Arc<dyn Host>,
        done: Completion,
    ) -> Result<u64, Failure> {
        if run.spec.outbound == Outbound::Routed && !routes {
            return Err(FailureCode::InvalidRequest.failure(&[
                ("field", "outbound"),
                (
                    "problem",
                    "none, but the paused run's fetches went to a routed policy",
                ),
                ("allowed", "the policy function the run was executed with"),
            ]));
        }
        self.submit(run.spec, Some(run.gated), host, done)
    }

    /// The host's decision on a call it was asked to `approve` (callback mode): approved, the
    /// call goes to the host's `tool_call`; denied, it rejects inside the sandbox with
    /// `APPROVAL_DENIED`. One for a call nobody asks about any more is dropped.
    pub fn decide(&self, exec_id: u64, call_id: u32, decision: Decision) {
        let action = self.inner.approvals.decided(exec_id, call_id, decision);
        // The worker acts on the answer: its time bound runs again.
        deadlines::unsuspend(&self.inner, &mut self.inner.lock(), exec_id);
        match action {
            Some(approvals::CallAction::Forward(call)) => {
                let host = self
                    .inner
                    .lock()
                    .running
                    .get(&exec_id)
                    .map(|r| r.host.clone());
                if let Some(host) = host {
                    host.tool_call(call);
                }
            }
            Some(approvals::CallAction::Answer(ok, payload)) => {
                schedule::answer_call(&self.inner, exec_id, call_id, ok, payload)
            }
            Some(approvals::CallAction::Deny(text)) => {
                schedule::deny_call(&self.inner, exec_id, call_id, text)
            }
            _ => {}
        }
    }

    fn submit(
        &self,
        spec: ExecSpec,
        gated: Option<approvals::Gated>,
        host: Arc<dyn Host>,
        done: Completion,
    ) -> Result<u64, Failure> {
        let exec_id = self.inner.next_exec.fetch_add(1, Ordering::Relaxed);
        let opts = &self.inner.opts;
        let timeout_ms = spec.timeout_ms.unwrap_or(opts.timeout_ms);
        let tools = conduct::ToolList::of(&spec.providers);
        let memory_limit_mib = spec.memory_limit_mib.unwrap_or(opts.memory_limit_mib);
        let replayable = gated.as_ref().map(|g| g.replayable);
        let request = HostMsg::Execute(ExecuteRequest {
            exec_id,
            code: spec.code,
            modules: spec.modules,
            providers: spec.providers,
            memory_limit_mib,
            outbound: spec.outbound,
            retain_handles: spec.retain_handles,
            live_logs: spec.live_logs,
            budgets: spec.budgets,
            replayable,
            hops: opts.hops,
        });
        let frame = request.encode().map_err(|e| {
            schedule::too_large("execute request (code, modules and tool lists)", e)
        })?;
        let hops = Hops::start(opts.hops, |h| &mut h.encoded);
        let tenant = tenants::key_of(spec.tenant.as_deref());
        let limits = opts.tenants.limits(&tenant);
        let mut st = self.inner.lock();
        if st.closed {
            return Err(FailureCode::Closed.failure(&[]));
        }
        if let Some(failure) = st.queue.over_cpu(&tenant, limits) {
            return Err(failure);
        }
        // Workers still starting count as free: they take a queued job the moment they are
        // ready, so `queueBound: 0` means "run now or refuse", even right after start.
        let free = st.workers.values().filter(|w| w.exec.is_none()).count();
        if st.queue.len() >= opts.queue_bound + free {
            let bound = opts.queue_bound.to_string();
            return Err(FailureCode::QueueFull.failure(&[
                ("bound", &bound),
                ("what", "executions"),
                ("whom", "a worker (every worker is busy)"),
                ("advice", ", or raise `queueBound` or `workers`"),
            ]));
        }
        if let Some(bound) = limits.max_queued {
            if st.queue.queued(&tenant) >= bound + schedule::free_for(&self.inner, &st, &tenant) {
                let what = format!("executions of tenant {tenant:?}");
                return Err(FailureCode::QueueFull.failure(&[
                    ("bound", &bound.to_string()),
                    ("what", &what),
                    ("whom", "a worker"),
                    ("advice", ", or raise the tenant's `maxQueued`"),
                ]));
            }
        }
        let label = opts.tenants.label(&tenant).into();
        let done = self
            .inner
            .observe
            .track(exec_id, &host, done, spec.live_logs, label);
        // Outside the metrics' wrapper: a paused run is counted as it ends (not as stopped).
        let done = self.inner.approvals.track(exec_id, gated, done);
        let done = self.inner.calls.track(exec_id, done);
        st.queue.push(
            &tenant.clone(),
            Job {
                exec_id,
                frame: frame.into(),
                requeues: 0,
                outbound: spec.outbound,
                tools,
                memory_limit_mib,
                timeout_ms,
                budgets: spec.budgets,
                host,
                done,
                hops,
                tenant,
            },
            false,
        );
        if st.workers.is_empty() {
            // Every worker was refused at its handshake (refused workers are not replaced):
            // this run starts one more. Queued first, so a refusal of that worker, however
            // soon it comes, finds the run and fails it (`fail_queue_if_no_workers`).
            drop(st);
            if let Err(failure) = spawn::spawn_worker(&self.inner) {
                lifecycle::fail_queue_if_no_workers(&self.inner, failure);
            }
            return Ok(exec_id);
        }
        schedule::pump(&self.inner, &mut st);
        Ok(exec_id)
    }

    /// Delivers the host's answer to a tool call. An answer for a run that already ended is
    /// dropped: nothing waits for it.
    /// An answer too big for one frame rejects the call inside the sandbox (`ANSWER_TOO_LARGE`).
    pub fn answer_tool_call(&self, exec_id: u64, call_id: u32, ok: bool, payload: Vec<u8>) {
        let status = if ok {
            CallStatus::Ok
        } else {
            CallStatus::Error
        };
        let took = self.inner.calls.answered(exec_id, call_id, status);
        self.inner.observe.tool_answered(took);
        let pause = self
            .inner
            .approvals
            .answered(exec_id, call_id, ok, &payload);
        schedule::answer_call(&self.inner, exec_id, call_id, ok, payload);
        if pause {
            deadlines::stop_run(&self.inner, exec_id);
        }
    }

    /// Denies tool call `call_id` of `exec_id` on the host's word (its dispatch refused the call
    /// as approval would: `codeModeTool`'s check of a resumed call): it rejects inside the
    /// sandbox with `text` as a denial (`APPROVAL_DENIED`'s code; uncaught, `DENIAL_UNCAUGHT`),
    /// and the audit trail says `denied`.
    pub fn deny_tool_call(&self, exec_id: u64, call_id: u32, text: String) {
        let took = self.inner.calls.denied(exec_id, call_id);
        self.inner.observe.tool_answered(took);
        let pause = self.inner.approvals.host_denied(exec_id, call_id, &text);
        schedule::deny_call(&self.inner, exec_id, call_id, text);
        if pause {
            deadlines::stop_run(&self.inner, exec_id);
        }
    }

    /// Delivers the answer to a routed `fetch` (a response, or the text it rejects with). A
    /// response body past `limits::FETCH_BODY_BYTES` rejects the fetch with `FETCH_TOO_LARGE`
    /// (the same check as native answers), whichever host answered.
    pub fn answer_fetch(&self, exec_id: u64, call_id: u32, result: Result<WireResponse, String>) {
        schedule::answer_fetch(&self.inner, exec_id, call_id, result);
    }

    /// Invokes handle `handle` of retained execution `execution_id` with `request`; the answer
    /// arrives through `done`. Refused at once: an execution that holds no handles
    /// (`HANDLES_CLOSED`, also the answer when `tenant` is not the tenant that owns it: the same
    /// as an id never granted), a name outside its grant (`HANDLE_NOT_FOUND`). Returns the
    /// invocation's number, for [`Pool::abort_invocation`].
    pub fn invoke_handle(
        &self,
        execution_id: &str,
        handle: &str,
        request: WireRequest,
        tenant: Option<&str>,
        done: InvokeDone,
    ) -> Result<u64, Failure> {
        handles::invoke(&self.inner, execution_id, handle, request, tenant, done)
    }

    /// The caller aborted execution `exec_id`: a queued run leaves the queue, a running one is
    /// stopped as at its deadline (its worker is reused); either way it completes, exactly once,
    /// with `ABORTED`. A retained execution, or one already finished, is left alone.
    pub fn abort(&self, exec_id: u64) {
        if let Some(job) = self.stop_now(exec_id, true) {
            // Not marked: its completion is the abort itself (counted by the wrapper too).
            self.inner.observe.aborted_queued();
            (job.done)(exec_id, Err(observe::aborted("execution")));
        }
    }

    /// Stops execution `exec_id` now: a running one as at its deadline (the watchdog cancels
    /// it; `aborted` marks it for the abort's completion), a queued one by taking it out of the
    /// queue, returned for the caller to complete.
    fn stop_now(&self, exec_id: u64, aborted: bool) -> Option<Job> {
        let mut st = self.inner.lock();
        if deadlines::stop_in(&self.inner, &mut st, exec_id) {
            // Under the same lock: the mark is always taken back by the run's completion.
            if aborted {
                self.inner.observe.mark_aborted(exec_id);
            }
            return None;
        }
        st.queue.remove(|j| j.exec_id == exec_id)
    }

    /// The caller aborted invocation `invoke_id`: one still waiting its turn rejects at once;
    /// the one in flight is stopped as at its time bound (which ends its retained execution,
    /// reason `timeout`) and rejects with `ABORTED`. One already answered is left alone.
    pub fn abort_invocation(&self, invoke_id: u64) {
        handles::abort(&self.inner, invoke_id);
    }

    /// Every metric the pool keeps (docs/operations.md), with its samples now.
    pub fn metrics(&self) -> Vec<Family> {
        let depths = {
            let st = self.inner.lock();
            let tenants = &self.inner.opts.tenants;
            let mut by: std::collections::BTreeMap<Arc<str>, usize> = Default::default();
            for (tenant, n) in st.queue.depths() {
                *by.entry(tenants.label(tenant).into()).or_insert(0) += n;
            }
            by.into_iter().collect()
        };
        self.inner.observe.families(self.stats(), depths)
    }

    /// Ends retained execution `execution_id` (its worker disposes the isolate and returns to
    /// rotation); `HANDLES_CLOSED` when it holds no handles, or `tenant` does not own it.
    pub fn close_handles(&self, execution_id: &str, tenant: Option<&str>) -> Result<(), Failure> {
        handles::close(&self.inner, execution_id, tenant)
    }

    /// The caller no longer waits for execution `exec_id` (its connection closed). A running
    /// run is stopped as at its deadline (it completes with `TIMEOUT`); a queued one leaves the
    /// queue and completes with `CLOSED`. Either way its completion still fires, exactly once.
    /// A retained execution, or one already finished, is left alone.
    pub fn abandon(&self, exec_id: u64) {
        if let Some(job) = self.stop_now(exec_id, false) {
            (job.done)(exec_id, Err(FailureCode::Closed.failure(&[])));
        }
    }

    /// Worker `key`'s output is readable (a pool started with [`Pool::start_watched`]; call on
    /// the loop's thread): reads it and handles every whole frame.
    pub fn readable(&self, key: u64) -> Readable {
        readiness::readable(&self.inner, key)
    }

    /// The loop could not watch worker `key` (see [`Watch`]): it is read on a thread instead.
    pub fn unwatchable(&self, key: u64) {
        readiness::unwatch(&self.inner, key)
    }

    /// Counts of workers and executions.
    pub fn stats(&self) -> PoolStats {
        let st = self.inner.lock();
        PoolStats {
            workers: st.workers.len(),
            idle: st.idle.len(),
            running: st.running.len(),
            queued: st.queue.len(),
            retained: st.retained.len(),
            engine: self.inner.engine.get().cloned(),
        }
    }

    /// Process ids of the live workers (for supervision and tests).
    pub fn worker_pids(&self) -> Vec<u32> {
        let st = self.inner.lock();
        let mut pids: Vec<u32> = st.workers.values().map(|w| w.process.pid()).collect();
        pids.sort_unstable();
        pids
    }

    /// Refuses new executions from now on; queued and running ones continue.
    pub fn close(&self) {
        self.inner.lock().closed = true;
    }

    /// Stops every worker and waits until each is reaped (killing those that do not exit
    /// within `grace`). Whatever still waits or runs completes with `CLOSED`.
    pub fn shutdown(&self, grace: Duration) {
        lifecycle::stop_all(&self.inner);
        // Workers the host's loop reads are reaped here: that loop may be this very thread.
        readiness::end_all(&self.inner);
        lifecycle::wait_reaped(&self.inner, grace);
    }
}

//! What the pool holds, under one lock: its workers, the queue, the runs, the retained
//! executions and the bookkeeping of each (`State`), and what lives beside the lock for the
//! pool's whole life (`Inner`). Types only: the modules that act on them (schedule.rs,
//! dispatch.rs, handles.rs, lifecycle.rs, watchdog.rs, ...) take them; nothing here reaches
//! back into those modules, so the state depends only on the leaves it is made of.

use std::collections::{HashMap, VecDeque};
use std::process::{Child, ChildStdout};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use codemode_protocol::frame::FrameBuf;
use codemode_protocol::{Budgets, Hops, Outbound};

use crate::api::{Completion, Host, InvokeDone, PoolOptions, Watch};
use crate::limit::{IdleCpu, Limit};
use crate::process::Process;
use crate::tenants::{Queues, TenantKey};
use crate::{approvals, calls, conduct, input, observe, outbound};

pub(crate) struct Job {
    pub(crate) exec_id: u64,
    pub(crate) frame: input::Frame,
    /// How many times the run was queued again (see [`REQUEUE_BOUND`](crate::api::REQUEUE_BOUND)).
    pub(crate) requeues: u32,
    pub(crate) outbound: Outbound,
    /// The providers and tools the request declared (what its worker may call).
    pub(crate) tools: Arc<conduct::ToolList>,
    /// The run's isolate limit; its worker's memory ceiling follows it.
    pub(crate) memory_limit_mib: u32,
    pub(crate) timeout_ms: u64,
    pub(crate) budgets: Budgets,
    pub(crate) host: Arc<dyn Host>,
    pub(crate) done: Completion,
    /// The steps recorded so far, when the pool records them ([`PoolOptions::hops`]).
    pub(crate) hops: Option<Hops>,
    /// Whom it is for (tenants.rs): only a worker of this cordon, or of none yet, takes it.
    pub(crate) tenant: TenantKey,
}

pub(crate) struct Running {
    pub(crate) worker: u64,
    /// The Execute frame, until the worker acknowledges the run (`Started`): a run its worker
    /// never took is queued again with it when the worker is lost.
    pub(crate) unstarted: Option<input::Frame>,
    pub(crate) requeues: u32,
    pub(crate) host: Arc<dyn Host>,
    pub(crate) outbound: Outbound,
    pub(crate) tools: Arc<conduct::ToolList>,
    pub(crate) memory_limit_mib: u32,
    pub(crate) done: Completion,
    /// When its worker was handed it (or started it, after preparing): its wall time.
    pub(crate) started: Instant,
    pub(crate) budgets: Budgets,
    /// Its time bound, CPU backstop, cancel and failure (limit.rs). A run cancelled before its
    /// worker started it is cancelled when it starts: a worker still preparing would not know
    /// the run.
    pub(crate) limit: Limit,
    /// The steps recorded so far, when the pool records them ([`PoolOptions::hops`]).
    pub(crate) hops: Option<Hops>,
    pub(crate) tenant: TenantKey,
}

pub(crate) struct WorkerSlot {
    /// The process, for the threads that may kill it (a kill never reaches a recycled pid).
    pub(crate) process: Arc<Process>,
    /// The worker's stdin: frames in order, never blocking the sender. Dropping the slot (and
    /// any clone in flight) ends its writer thread, which closes stdin.
    pub(crate) input: input::WorkerInput,
    /// The worker's fd 3: Cancel frames reach its cancel thread even mid-loop.
    pub(crate) control: Arc<Mutex<std::fs::File>>,
    pub(crate) exec: Option<u64>,
    /// The execution the worker was last sent: every frame it sends is checked against it
    /// (conduct.rs). Unlike `exec`, kept after the run ends, until the next one.
    pub(crate) bound: Option<conduct::Binding>,
    /// The tenant whose code the worker ran (its cordon: it runs no other's until it ends);
    /// `None` until its first run.
    pub(crate) cordon: Option<TenantKey>,
    /// Killed to change tenant (schedule.rs, `retire`): its end is no loss, and nothing is
    /// handed to it meanwhile.
    pub(crate) retiring: bool,
    /// When it last became idle (schedule.rs, `retire`).
    pub(crate) free_since: Instant,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) closed: bool,
    pub(crate) stopping: bool,
    pub(crate) next_worker: u64,
    pub(crate) workers: HashMap<u64, WorkerSlot>,
    /// Workers with a prepared isolate, longest-idle first.
    pub(crate) idle: VecDeque<u64>,
    /// Workers whose run just ended and that are preparing their next isolate (until `Ready`),
    /// first-ended first. With no idle worker, a queued run goes to one of these at once and
    /// waits in its stdin: the worker starts it the moment its isolate is ready, without a
    /// round trip through the host.
    pub(crate) preparing: VecDeque<u64>,
    /// The runs waiting for a worker, a queue per tenant, served in turn (tenants.rs).
    pub(crate) queue: Queues<Job>,
    pub(crate) running: HashMap<u64, Running>,
    /// Retained executions by execution id (the UUID the worker minted), and that id by the
    /// pool's execution number.
    pub(crate) retained: HashMap<String, Retained>,
    pub(crate) retained_ids: HashMap<u64, String>,
    pub(crate) next_invoke: u64,
    /// Each run's fetches in flight (outbound.rs).
    pub(crate) fetches: outbound::Flights,
    /// When the watchdog means to look again (`None` before its first look): a new deadline
    /// wakes it only when it comes earlier (see `deadlines::due_by`).
    pub(crate) watchdog_at: Option<Instant>,
    /// The CPU each worker spends while it holds no run and no invocation, by worker key
    /// (kept by the watchdog: limit.rs, `IdleCpu`).
    pub(crate) idle_cpu: HashMap<u64, IdleCpu>,
    /// Replacements asked of the spawner and not yet tried (schedule.rs counts them as workers
    /// on their way).
    pub(crate) respawning: usize,
    /// When a replacement last failed to start (schedule.rs does not retire meanwhile).
    pub(crate) spawn_failed: Option<Instant>,
}

pub(crate) struct Inner {
    pub(crate) opts: PoolOptions,
    pub(crate) state: Mutex<State>,
    /// Wakes the watchdog (an earlier deadline: `deadlines::due_by`) and `shutdown` (a worker
    /// was reaped).
    pub(crate) changed: Condvar,
    pub(crate) next_exec: AtomicU64,
    pub(crate) client: outbound::NativeClient,
    /// The threads native fetches are performed on.
    pub(crate) performers: outbound::Performers,
    /// Asks the spawner thread for a replacement worker (see `spawn::start_spawner`).
    pub(crate) respawn: crossbeam_channel::Sender<()>,
    /// The host's loop, when it reads the workers' output (readiness.rs); else reader threads do.
    pub(crate) watch: Option<Arc<dyn Watch>>,
    /// The workers it watches.
    pub(crate) watched: Table,
    /// Aborts, live logs and metrics (observe.rs).
    pub(crate) observe: Arc<observe::Observe>,
    /// The runs with approvals (approvals/).
    pub(crate) approvals: Arc<approvals::Book>,
    /// Every run's tool calls (calls.rs).
    pub(crate) calls: Arc<calls::Calls>,
    /// The engine the workers run programs on, once one has said (its `Engine` message).
    pub(crate) engine: std::sync::OnceLock<codemode_protocol::Engine>,
}

impl Inner {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock would poison it; the state stays usable because every
        // critical section leaves it consistent before calling out.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A retained execution (handles.rs, docs/handles.md): its worker keeps the isolate, and its
/// invocations run one at a time.
pub(crate) struct Retained {
    pub(crate) exec_id: u64,
    pub(crate) worker: u64,
    pub(crate) host: Arc<dyn Host>,
    pub(crate) outbound: Outbound,
    pub(crate) timeout_ms: u64,
    /// The run's CPU budget, which each invocation gets afresh.
    pub(crate) cpu_limit_ms: Option<u32>,
    pub(crate) handles: Vec<String>,
    pub(crate) waiting: VecDeque<Waiting>,
    pub(crate) current: Option<Current>,
    /// The idle bound counts from here: the grant, or the last invocation's answer.
    pub(crate) idle_since: Instant,
    /// The tenant that owns it: only it may invoke or close it.
    pub(crate) tenant: TenantKey,
}

impl Retained {
    /// The limits of the invocation in flight, if one is.
    pub(crate) fn limit(&mut self) -> Option<&mut Limit> {
        self.current.as_mut().map(|c| &mut c.limit)
    }
}

pub(crate) struct Waiting {
    pub(crate) invoke_id: u64,
    /// The Invoke frame, encoded (and its size checked) when the invocation was accepted.
    pub(crate) frame: Vec<u8>,
    pub(crate) done: InvokeDone,
}

pub(crate) struct Current {
    pub(crate) invoke_id: u64,
    pub(crate) done: InvokeDone,
    /// Its time bound and CPU backstop (limit.rs), afresh for each invocation.
    pub(crate) limit: Limit,
}

/// A worker whose output the host's loop reads (readiness.rs).
pub(crate) struct Watched {
    /// `None` once the worker was reaped (by `shutdown`): what it still says is not read.
    pub(crate) child: Option<Child>,
    pub(crate) process: Arc<Process>,
    pub(crate) stdout: ChildStdout,
    /// Its frames, read and not yet handled, as a reader thread would hold them.
    pub(crate) output: Output,
}

#[derive(Default)]
pub(crate) struct Table(Mutex<HashMap<u64, Watched>>);

impl Table {
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<u64, Watched>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A worker's output as its reader holds it: the bytes read and not yet decoded, and whether
/// the worker has said Hello.
pub(crate) struct Output {
    pub(crate) frames: FrameBuf,
    pub(crate) greeted: bool,
}

//! The messages each side sends. Each is defined once, here: serde derives give its layout in
//! postcard (see the crate docs for the frame format and the rules that keep it readable).
//!
//! The enums and entries a host also sees (`Outbound`, `Redirect`, `LogLevel`, `LogEntry`,
//! `Grant`, `ProviderDecl`) carry their host spelling too: serde's names are the daemon's JSON (postcard reads
//! only variant indices and field order, so the names change no frame), and with the `napi`
//! feature the same definition is the addon's JS shape ([`crate::host`]).
//!
//! One file: both directions' messages and every type they carry, so the whole layout (each
//! enum's variant order is its postcard tag) and the codec that reads it are reviewed together.

use serde::{Deserialize, Serialize};

use crate::frame::FrameTooLarge;

/// One provider global in the sandbox. `tools: None` is an open list (`'*'`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "napi", napi_derive::napi(object))]
pub struct ProviderDecl {
    pub name: String,
    pub tools: Option<Vec<String>>,
}

/// How a run's `fetch` reaches the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "napi", napi_derive::napi(string_enum = "lowercase"))]
pub enum Outbound {
    // Postcard tags a variant by its place in this list, from 0: new ones go last.
    /// The pool performs the request from its own machine.
    #[default]
    Native,
    /// `fetch` rejects inside the sandbox without leaving it.
    Blocked,
    /// The host's policy function answers each request.
    Routed,
    /// The pool performs the request, to public unicast addresses only: each name is resolved
    /// once per hop and the connection goes to a vetted address (docs/runtime.md, "Outbound").
    Public,
}

impl Outbound {
    /// Every mode, in the order of how much of the network it reaches: blocked (none), routed
    /// (none of the executor's own: the host's policy performs the request), public, native.
    pub const BY_REACH: [Outbound; 4] = [
        Outbound::Blocked,
        Outbound::Routed,
        Outbound::Public,
        Outbound::Native,
    ];

    /// The mode's spelling on the host side (JS, the daemon's JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Outbound::Native => "native",
            Outbound::Blocked => "blocked",
            Outbound::Routed => "routed",
            Outbound::Public => "public",
        }
    }

    /// Whether the pool performs the run's fetches itself (native or public).
    pub fn is_native(self) -> bool {
        matches!(self, Outbound::Native | Outbound::Public)
    }

    /// The mode's place in [`Outbound::BY_REACH`]: how much of the network it reaches.
    pub fn reach(self) -> usize {
        Self::BY_REACH.iter().position(|m| *m == self).unwrap_or(0)
    }

    /// The one of `self` and `other` that reaches less: a policy held to another never widens.
    pub fn narrower(self, other: Outbound) -> Outbound {
        if other.reach() < self.reach() {
            other
        } else {
            self
        }
    }
}

/// A request's redirect mode (the Fetch standard's `RequestRedirect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "napi", napi_derive::napi(string_enum = "lowercase"))]
pub enum Redirect {
    // Postcard tags a variant by its place in this list, from 0: new ones go last.
    /// Redirects are followed (a bounded number of hops).
    #[default]
    Follow,
    /// A redirect response rejects the fetch.
    Error,
    /// A redirect response is the answer, as it came.
    Manual,
}

impl Redirect {
    /// The Fetch standard's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Redirect::Follow => "follow",
            Redirect::Error => "error",
            Redirect::Manual => "manual",
        }
    }

    /// The mode a spelling names (`None`: not one of the three).
    pub fn parse(text: &str) -> Option<Redirect> {
        match text {
            "follow" => Some(Redirect::Follow),
            "error" => Some(Redirect::Error),
            "manual" => Some(Redirect::Manual),
            _ => None,
        }
    }
}

/// A request in the wire shape the contract names (`WireRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WireRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    #[serde(with = "serde_bytes")]
    pub body: Option<Vec<u8>>,
    /// What a redirect response does to the request (a routed policy receives it too).
    pub redirect: Redirect,
}

/// A response in the wire shape (`WireResponse`), plus where it finally came from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WireResponse {
    pub status: u16,
    pub status_text: String,
    pub headers: Vec<(String, String)>,
    #[serde(with = "serde_bytes")]
    pub body: Option<Vec<u8>>,
    /// The URL after redirects (empty: the request's).
    pub url: String,
    pub redirected: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecuteRequest {
    pub exec_id: u64,
    pub code: String,
    /// specifier -> ES module source
    pub modules: Vec<(String, String)>,
    pub providers: Vec<ProviderDecl>,
    pub memory_limit_mib: u32,
    pub outbound: Outbound,
    /// Keep the isolate when the program returns a request handler (see [`Grant`]).
    pub retain_handles: bool,
    /// Send each console entry as it is written ([`WorkerMsg::Log`]), besides the outcome's
    /// logs. Off, a run sends no extra frame.
    pub live_logs: bool,
    /// The run's budgets (all `None`: none but the time bound).
    pub budgets: Budgets,
    /// A run whose tool calls may wait for a person's approval (docs/approvals.md): it must take
    /// the same path when it is replayed, so what is not the program's own (randomness, the
    /// clock) comes from here, and the worker says when it waits ([`WorkerMsg::Idle`]).
    pub replayable: Option<Replayable>,
    /// Record when each step of the run happened ([`Hops`], the outcome's `hops`).
    pub hops: bool,
}

/// When each step of one execute happened, on the machine's monotonic clock (`CLOCK_MONOTONIC`,
/// nanoseconds: the clock Node's `process.hrtime` reads), for the executor's `hops` option
/// (docs/benchmarks.md, "Where an execute's time goes"). 0: not recorded. The worker fills in its
/// steps; the pool, which sends none of its own, fills in the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Hops {
    /// The pool: the request encoded into its frame.
    pub encoded: u64,
    /// The pool: the frame written to the worker's stdin.
    pub written: u64,
    /// The worker: the frame read and decoded.
    pub read: u64,
    /// The worker: the run's isolate in hand (prepared while the worker was idle).
    pub ready: u64,
    /// The worker: the program parsed and rewritten into a module (entry.rs).
    pub parsed: u64,
    /// The worker: the module compiled, linked and evaluated.
    pub evaluated: u64,
    /// The worker: the program's promise settled.
    pub settled: u64,
    /// The worker: the outcome built (the value serialized), about to be written.
    pub answered: u64,
    /// The pool: the outcome's frame read.
    pub answer_read: u64,
    /// The pool: the outcome handed to the host's callback.
    pub reported: u64,
}

impl Hops {
    /// Each step's name (as the host names it) with its time, in the order of the run path.
    pub fn named(&self) -> [(&'static str, u64); 10] {
        [
            ("encoded", self.encoded),
            ("written", self.written),
            ("workerRead", self.read),
            ("isolateReady", self.ready),
            ("parsed", self.parsed),
            ("evaluated", self.evaluated),
            ("settled", self.settled),
            ("answered", self.answered),
            ("answerRead", self.answer_read),
            ("reported", self.reported),
        ]
    }

    /// Steps recorded from now on when `on`, with the step `at` picks set to now; else `None`.
    pub fn start(on: bool, at: fn(&mut Hops) -> &mut u64) -> Option<Hops> {
        let mut hops = on.then(Hops::default);
        Hops::mark(hops.as_mut(), at);
        hops
    }

    /// Sets the step `at` picks to now, when steps are recorded (`hops` is `Some`).
    pub fn mark(hops: Option<&mut Hops>, at: fn(&mut Hops) -> &mut u64) {
        if let Some(h) = hops {
            *at(h) = Hops::now();
        }
    }

    /// The monotonic clock now, in nanoseconds.
    pub fn now() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the timespec we own.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// What makes a run replayable (docs/approvals.md, "Replay"): with the same program, the same
/// answers from the host and this, a run takes the same path. `Math.random`,
/// `crypto.getRandomValues` and `crypto.randomUUID` draw from a generator seeded with `seed`
/// (not secret from whoever holds the token); `Date.now()`, `new Date()` and
/// `performance.now()` read a logical clock that starts at `epoch_ms` (see the docs for how it
/// advances).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replayable {
    pub seed: u64,
    /// Milliseconds since the Unix epoch: the first run's wall time, kept by every replay.
    pub epoch_ms: u64,
}

/// What one run may spend besides wall time (docs/bounds.md, "Budgets"), each `None` for no
/// limit. A retained execution's invocations start all three afresh. Encoded in
/// [`ExecuteRequest`] as its last three fields (postcard writes a nested struct as its fields).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    /// CPU time the program's thread may spend, in milliseconds: counted from the run's start
    /// to its end, and afresh for each invocation of a retained execution. Waiting for the host
    /// (a tool call's or a fetch's answer, a timer) costs the thread none. Past it the run ends
    /// with `CPU_LIMIT`.
    pub cpu_limit_ms: Option<u32>,
    /// Tool calls the run may make; the call past it rejects inside the sandbox with
    /// `TOOL_CALL_LIMIT`.
    pub tool_call_limit: Option<u32>,
    /// Fetches the run, and each invocation of a retained execution, may make; the fetch past
    /// it rejects inside the sandbox with `FETCH_LIMIT`.
    pub fetch_limit: Option<u32>,
}

impl Budgets {
    /// Each budget the tighter of `self`'s and `other`'s (no budget on one side: the other's).
    pub fn tighter(self, other: Budgets) -> Budgets {
        let min = |a: Option<u32>, b: Option<u32>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Budgets {
            cpu_limit_ms: min(self.cpu_limit_ms, other.cpu_limit_ms),
            tool_call_limit: min(self.tool_call_limit, other.tool_call_limit),
            fetch_limit: min(self.fetch_limit, other.fetch_limit),
        }
    }
}

/// Retained handles: the run returned a request handler (a function, or an object with a
/// `fetch` method) and asked to keep it, so its isolate lives on for [`HostMsg::Invoke`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "napi", napi_derive::napi(object))]
pub struct Grant {
    /// A random v4 UUID minted in the worker: the name the host invokes the handles by.
    pub execution_id: String,
    /// The names `Invoke` accepts.
    pub handles: Vec<String>,
}

/// Messages from the host to a worker. New variants go at the end (the variant index is the
/// first byte of the body), and any change here bumps [`crate::PROTOCOL_VERSION`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum HostMsg {
    Execute(ExecuteRequest),
    /// The answer to a tool call. `ok`: `payload` is a V8-serialized value; otherwise it is the
    /// UTF-8 message the call rejects with inside the sandbox.
    ToolResult {
        exec_id: u64,
        call_id: u32,
        ok: bool,
        #[serde(with = "serde_bytes")]
        payload: Vec<u8>,
    },
    /// Stop the run now (its bound passed on the host).
    Cancel {
        exec_id: u64,
    },
    /// The answer to a `fetch`: a response, or the message the fetch rejects with.
    FetchResult {
        exec_id: u64,
        call_id: u32,
        result: Result<WireResponse, String>,
    },
    /// Call handle `handle` of the retained execution `exec_id` with `request`. The host sends
    /// one at a time per execution, and only names the grant listed.
    Invoke {
        exec_id: u64,
        invoke_id: u64,
        handle: String,
        request: WireRequest,
    },
    /// End the retained execution `exec_id`: dispose its isolate, then prepare the next one
    /// and say `Ready`.
    CloseHandles {
        exec_id: u64,
    },
    /// Tool call `call_id` was denied approval (docs/approvals.md): it rejects inside the
    /// sandbox with `message` (the `APPROVAL_DENIED` text) as an Error whose `code` is
    /// `APPROVAL_DENIED`; uncaught, it ends the run with `DENIAL_UNCAUGHT`.
    ToolDenied {
        exec_id: u64,
        call_id: u32,
        message: String,
    },
}

/// A console entry's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "napi", napi_derive::napi(string_enum = "lowercase"))]
pub enum LogLevel {
    // Postcard tags a variant by its place in this list, from 0: new ones go last.
    Log,
    Info,
    Warn,
    Error,
    Debug,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Log => "log",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
            LogLevel::Debug => "debug",
        }
    }
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => LogLevel::Log,
            1 => LogLevel::Info,
            2 => LogLevel::Warn,
            3 => LogLevel::Error,
            4 => LogLevel::Debug,
            _ => return None,
        })
    }
}

/// One console entry, rendered as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "napi", napi_derive::napi(object))]
pub struct LogEntry {
    pub level: LogLevel,
    pub message: String,
}

/// A program failure, reported in the outcome (never as an executor fault).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunError {
    pub code: String,
    pub message: String,
    /// Where it happened in the model's code, when known (a throw, a syntax error).
    /// Boxed: it is rare, and the outcome it rides in is moved around by value.
    #[serde(default)]
    pub location: Option<Box<SourceLocation>>,
}

/// A place in the model's code: 1-based line and column (UTF-16 units, as editors and V8's
/// stack traces count), in the program as written, or in `module` when it is one of the run's
/// modules (the key as given in the module map).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SourceLocation {
    pub line: u32,
    pub column: u32,
    #[serde(default)]
    pub module: Option<String>,
}

impl SourceLocation {
    /// Line, column and module as hosts report them: line and column absent when the place is
    /// unknown (line 0, or no location at all).
    pub fn reported(at: Option<Box<SourceLocation>>) -> (Option<u32>, Option<u32>, Option<String>) {
        let at = *at.unwrap_or_default();
        let known = at.line > 0;
        (
            known.then_some(at.line),
            known.then_some(at.column),
            at.module,
        )
    }
}

/// What a run used, measured by the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunStats {
    /// Wall time from the moment a worker took the run to its answer, in microseconds
    /// (filled in by the pool, which owns the clock the time bound uses).
    pub wall_us: u64,
    /// CPU time of the thread that ran the program, in microseconds.
    pub cpu_us: u64,
    /// Largest heap size observed (sampled at each turn of the run's event loop and at the end).
    pub heap_peak: u64,
    /// Largest total of live ArrayBuffer backing stores.
    pub buffers_peak: u64,
    pub tool_calls: u32,
    /// The process id of the worker that ran the program.
    pub worker_pid: u32,
    /// CPU time the run's budget counted (`ExecuteRequest::cpu_limit_ms`), in microseconds: the
    /// program's thread from the run's start to its end, the same clock the budget is enforced
    /// on; 0 when the run had no budget.
    pub cpu_budget_us: u64,
    /// Fetches the run sent to the host (its tool calls are `tool_calls`).
    pub fetches: u32,
}

impl RunStats {
    /// Wall time in milliseconds, the unit the public `RunStats` reports (index.d.ts).
    pub fn wall_ms(&self) -> f64 {
        self.wall_us as f64 / 1000.0
    }

    /// CPU time in milliseconds, the unit the public `RunStats` reports.
    pub fn cpu_ms(&self) -> f64 {
        self.cpu_us as f64 / 1000.0
    }

    /// The CPU the budget counted, in milliseconds.
    pub fn cpu_budget_ms(&self) -> f64 {
        self.cpu_budget_us as f64 / 1000.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunOutcome {
    /// The V8-serialized result; absent when the run failed.
    #[serde(with = "serde_bytes")]
    pub result: Option<Vec<u8>>,
    pub error: Option<RunError>,
    pub logs: Vec<LogEntry>,
    pub stats: RunStats,
    /// Present when the run's isolate is retained (no result then).
    pub grant: Option<Grant>,
    /// The run's tool calls, in order (the audit trail; at most [`crate::limits::CALL_RECORDS`]).
    /// Filled in by the pool, never sent by a worker.
    #[serde(skip)]
    pub calls: Vec<CallRecord>,
    /// Present when the run stopped at tool calls awaiting approval (no result then). Filled
    /// in by the pool, never sent by a worker.
    #[serde(skip)]
    pub paused: Option<Paused>,
    /// When each step happened, when the request asked ([`ExecuteRequest::hops`]).
    pub hops: Option<Box<Hops>>,
}

/// How one tool call of a run went (`outcome.calls`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "napi", napi_derive::napi(object))]
pub struct CallRecord {
    pub provider: String,
    pub tool: String,
    pub status: CallStatus,
    /// Milliseconds from the call to its answer (0 for one answered from the replay's ledger,
    /// or still pending).
    pub ms: f64,
}

// `ms` is never NaN (a duration the pool measured), so equality is an equivalence.
impl Eq for CallRecord {}

/// What became of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "napi", napi_derive::napi(string_enum = "lowercase"))]
pub enum CallStatus {
    /// The host answered it.
    Ok,
    /// The host's dispatch failed it (or the executor refused its answer).
    Error,
    /// A person (or the approval's bound) said no; it was never dispatched.
    Denied,
    /// It waits for approval: the run paused on it.
    Pending,
    /// A replay answered it from the token's ledger, without the host.
    Replayed,
}

/// A run paused at tool calls that wait for approval (docs/approvals.md). The addon and the
/// daemon each carry it in their own shape (the arguments as a Buffer, or base64).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paused {
    /// Signed with the executor's approval key; `resume` takes it with the decisions.
    pub token: String,
    pub pending: Vec<PendingCall>,
}

/// A tool call waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCall {
    /// What `resume`'s decisions name it by (unique within its token).
    pub id: String,
    pub provider: String,
    pub tool: String,
    /// The V8-serialized arguments array, as the sandbox made it.
    pub args: Vec<u8>,
}

/// The engine a worker runs programs on (`executor.stats().engine`, a daemon's `/healthz`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "napi", napi_derive::napi(object))]
pub struct Engine {
    /// V8's version, as V8 says it (`15.2.124.1-rusty`).
    pub v8: String,
    /// Whether V8 runs with its heap sandbox (docs/threat-model.md): the version string is the
    /// same with and without it.
    pub sandbox: bool,
}

impl Engine {
    /// The longest `v8` a worker may say.
    pub const VERSION_BYTES: usize = 64;
}

/// Messages from a worker to the host. New variants go before `Hello` (the variant index is
/// the first byte of the body and must stay below [`HELLO_TAG`]); any change bumps
/// [`crate::PROTOCOL_VERSION`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkerMsg {
    ToolCall {
        exec_id: u64,
        call_id: u32,
        provider: String,
        tool: String,
        /// V8-serialized array of arguments.
        #[serde(with = "serde_bytes")]
        args: Vec<u8>,
    },
    Done {
        exec_id: u64,
        outcome: RunOutcome,
    },
    /// The next isolate is prepared: the worker can take a run without delay. Sent after
    /// every `Done` (`Hello` already means ready).
    Ready,
    /// A `fetch` from a run whose outbound is native or routed.
    Fetch {
        exec_id: u64,
        call_id: u32,
        request: WireRequest,
    },
    /// The answer to an `Invoke`: the handler's response, or why there is none (a failure
    /// code and text: `HANDLER_ERROR`, `HANDLE_NOT_RESPONSE`, `MEMORY_LIMIT`, ...). After a
    /// bound's failure (memory, a cancel) the worker ends the execution itself: it disposes the
    /// isolate and says `Ready`.
    Invoked {
        exec_id: u64,
        invoke_id: u64,
        result: Result<WireResponse, RunError>,
    },
    /// The worker took `Execute` `exec_id` and is about to run it: sent first, before anything
    /// else of the run. A run the worker never acknowledged had no effect outside the worker
    /// (every effect is a frame of the run, and they all come after this one), so when its
    /// worker is lost the host queues it again instead of failing it.
    Started {
        exec_id: u64,
    },
    /// A console entry of a run that asked for live logs (`ExecuteRequest::live_logs`), sent as
    /// it is written, within the same bounds as the outcome's logs (which still carry them all).
    Log {
        exec_id: u64,
        entry: LogEntry,
    },
    /// A replayable run ([`ExecuteRequest::replayable`]) has nothing to do until the host
    /// answers (or a timer is due): its microtasks ran out. Sent when the run is about to wait,
    /// if since it last said so it sent a tool call or fetch, woke from a wait (`Awake`), or
    /// was handed an answer and has no other call in flight. The host pauses a run whose calls
    /// wait for approval here (the calls made in the same turn are pending together), and rests
    /// the time bound of one that waits on decisions only, until its `Awake`.
    Idle {
        exec_id: u64,
    },
    /// A replayable run that said `Idle` computes again: a timer of it fired, or an answer was
    /// handed to it (one the host may have sent before it read the `Idle`). Sent before the
    /// program runs on, so the host's time bound, which may rest while the run waits on
    /// decisions only, runs again before the program does.
    Awake {
        exec_id: u64,
    },
    /// The engine the worker runs programs on, said once, right after its `Hello`.
    Engine(Engine),
    /// The worker's first frame. Its layout is frozen (see [`HELLO_TAG`]), so it is not part
    /// of the postcard layout: serde skips it (it stays the last variant, so skipping it moves
    /// no other variant's index).
    #[serde(skip)]
    Hello {
        version: u32,
        pid: u32,
    },
}

/// The first byte of a `Hello` body. A Hello is always exactly
/// `[HELLO_TAG, version as u32 LE, pid as u32 LE]` — the layout of protocol version 1, kept by
/// every version since — so any host reads any worker's Hello far enough to compare versions
/// and refuse a mismatch by name. No other worker message starts with this byte: their first
/// byte is a postcard variant index, and there are fewer than 101 variants.
pub const HELLO_TAG: u8 = 101;
const HELLO_BODY_BYTES: usize = 9;

/// A body that does not decode: truncated, an unknown variant, trailing bytes, invalid UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed frame: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one whole body: anything left over is an error, not ignored.
fn decode_body<'a, T: Deserialize<'a>>(body: &'a [u8], side: &str) -> Result<T, DecodeError> {
    let (msg, rest) = postcard::take_from_bytes(body)
        .map_err(|e| DecodeError(format!("a {side} message does not decode: {e}")))?;
    if !rest.is_empty() {
        return Err(DecodeError(format!(
            "{} trailing bytes after a {side} message",
            rest.len()
        )));
    }
    Ok(msg)
}

impl HostMsg {
    /// The whole frame, length prefix included; refused when the body passes
    /// [`crate::MAX_FRAME_BYTES`].
    pub fn encode(&self) -> Result<Vec<u8>, FrameTooLarge> {
        crate::frame::encode(self)
    }

    /// The frame of a message that is small by construction (a Cancel, a CloseHandles: a few
    /// integers), which cannot pass the bound.
    pub fn encode_small(&self) -> Vec<u8> {
        crate::frame::encode(self).unwrap_or_else(|_| vec![0; 4])
    }

    /// Decodes a frame body (without the length prefix).
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        decode_body(body, "host")
    }
}

impl WorkerMsg {
    /// The whole frame, length prefix included; refused when the body passes
    /// [`crate::MAX_FRAME_BYTES`].
    pub fn encode(&self) -> Result<Vec<u8>, FrameTooLarge> {
        match self {
            WorkerMsg::Hello { version, pid } => {
                let mut body = [0u8; HELLO_BODY_BYTES];
                body[0] = HELLO_TAG;
                body[1..5].copy_from_slice(&version.to_le_bytes());
                body[5..].copy_from_slice(&pid.to_le_bytes());
                crate::frame::encode_raw(&body)
            }
            other => crate::frame::encode(other),
        }
    }

    /// Decodes a frame body (without the length prefix).
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        match body {
            [HELLO_TAG, rest @ ..] => match <[u8; 8]>::try_from(rest) {
                Ok(b) => Ok(WorkerMsg::Hello {
                    version: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                    pid: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                }),
                Err(_) => Err(DecodeError(format!(
                    "a Hello is {HELLO_BODY_BYTES} bytes, this one {}",
                    body.len()
                ))),
            },
            _ => decode_body(body, "worker"),
        }
    }
}

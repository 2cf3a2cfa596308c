//! The wire protocol between the host (pool core) and a `codemode-worker` process, and the
//! failure grammar every layer reports with.
//!
//! A frame is a little-endian `u32` body length followed by the body. A body is one message in
//! [postcard](https://docs.rs/postcard) (varint integers, length-prefixed strings and byte
//! strings; an enum starts with its variant index), the layout the serde derives in
//! [`messages`] give. The worker's first frame is [`WorkerMsg::Hello`] carrying
//! [`PROTOCOL_VERSION`]; its layout is frozen across versions ([`messages::HELLO_TAG`]), so a
//! host that reads another version refuses the worker by name and a stale worker binary next to
//! a newer addon fails loudly instead of misreading frames.

pub mod failures;
pub mod frame;
pub mod messages;

pub use failures::{Failure, FailureCode, FailureKind};
pub use messages::{
    DecodeError, ExecuteRequest, FrameTooLarge, Grant, HostMsg, LogEntry, LogLevel, Outbound,
    ProviderDecl, Redirect, RunError, RunOutcome, RunStats, SourceLocation, WireRequest,
    WireResponse, WorkerMsg,
};

/// Bumped whenever a message's layout changes. 1: hand-written fixed-width fields; 2: postcard;
/// 3: retained handles (Execute's `retain_handles`, the outcome's grant, Invoke, CloseHandles,
/// Invoked); 4: `Started` (the worker acknowledges an Execute before running it); 5: live log
/// entries (Execute's `live_logs`, `Log`), the worker's pid in the stats, and the failure's
/// `location` (RunError); 6: `Outbound::Public` and the request's `redirect` mode (WireRequest).
pub const PROTOCOL_VERSION: u32 = 6;

/// The V8 value-serializer format the worker writes, and the newest it reads (the version after
/// the 0xFF header tag). Values cross both ways (tool answers in, arguments and results out) and
/// V8 refuses a format newer than its own (it never guesses), so the host requires its Node to
/// write exactly this one when an executor is built (`VALUE_FORMAT_UNSUPPORTED`). The worker's
/// tests pin it to its V8.
pub const VALUE_FORMAT_VERSION: u32 = 15;

/// The worker's descriptor for the control pipe: the pool maps the pipe's read end here, and
/// the worker's cancel thread reads `Cancel` frames from it.
pub const CONTROL_FD: i32 = 3;

/// Output bounds, enforced where the output is built.
pub mod limits {
    /// Console entries kept per run; later ones are dropped behind one LOG_LIMIT notice.
    pub const LOG_ENTRIES: usize = 1_000;
    /// Bytes of console text kept per run (UTF-8).
    pub const LOG_BYTES: usize = 1024 * 1024;
    /// Bytes one console entry may take; a longer one is cut with a visible marker.
    pub const LOG_ENTRY_BYTES: usize = 64 * 1024;
    /// Serialized size of a run's result.
    pub const RESULT_BYTES: usize = 16 * 1024 * 1024;
    /// Serialized size of a tool call's arguments, and of the host's answer.
    pub const TOOL_PAYLOAD_BYTES: usize = 16 * 1024 * 1024;
    /// Body size of an outbound request, and of its response.
    pub const FETCH_BODY_BYTES: usize = 16 * 1024 * 1024;
    /// Redirects a native fetch follows.
    pub const FETCH_REDIRECTS: u32 = 10;
    /// Native fetches (outbound native or public) of one run being performed at once; the
    /// run's further native fetches wait, in order, for one of these to end.
    pub const FETCH_CONCURRENCY_PER_RUN: usize = 8;
    /// Threads a pool performs native fetches on, for all its runs together (started as
    /// needed, kept while the pool lives).
    pub const FETCH_THREADS: usize = 64;
    /// Bytes of requests (URL, headers and body) one run may have in flight at once: fetches
    /// sent to the host and not yet answered, waiting ones included. A fetch past it rejects
    /// in the sandbox with `FETCH_BYTES_IN_FLIGHT`.
    pub const FETCH_BYTES_IN_FLIGHT: usize = 32 * 1024 * 1024;
    /// Tool calls and fetches of one run in flight at once (awaiting the host's answer).
    pub const CALLS_IN_FLIGHT: usize = 10_000;
    /// Serialized argument bytes of one run's tool calls the host holds at once: calls whose
    /// dispatch has not settled, running or waiting their turn. The call that would pass it
    /// rejects inside the sandbox (`TOOL_BYTES_IN_FLIGHT`) before its arguments are read. At
    /// least [`TOOL_PAYLOAD_BYTES`], so a single call of any allowed size always fits.
    pub const TOOL_BYTES_IN_FLIGHT: usize = 2 * TOOL_PAYLOAD_BYTES;
    /// Dispatches of one run the host runs at once; later calls wait, still serialized, in
    /// arrival order (bounded by [`TOOL_BYTES_IN_FLIGHT`] and [`CALLS_IN_FLIGHT`]).
    pub const DISPATCHES: usize = 64;

    /// CPU a worker may spend while it holds no run and no invocation in flight (idle,
    /// preparing its next isolate, or serving a retained execution's timers), per
    /// [`IDLE_CPU_WINDOW_MS`]: a tenth of a core. Past it, a retained execution ends (reason
    /// `cpu`) and a worker holding nothing is killed and replaced (docs/bounds.md).
    pub const IDLE_CPU_MS: u64 = 1_000;
    /// The window [`IDLE_CPU_MS`] is counted over.
    pub const IDLE_CPU_WINDOW_MS: u64 = 10_000;

    /// Threads a worker runs: V8's platform pool (one per core but one, at most 16), the main
    /// thread and the cancel thread. All start before the jail, which lets none start after.
    pub const WORKER_THREADS: u64 = 18;
    /// Under a root host, workers run as an unprivileged uid whose `RLIMIT_NPROC` is
    /// `WORKER_THREADS` for each of at least this many workers. The kernel counts every task
    /// of that uid (all pools' workers on the machine, and whatever else runs as it), so a pool
    /// smaller than this leaves room for the others.
    pub const WORKER_UID_WORKERS: u64 = 64;
    /// Bytes of diagnostics (its stderr) the host logs from one worker over its life; past
    /// them, the rest is read and dropped.
    pub const WORKER_STDERR_BYTES: usize = 64 * 1024;
    /// Bytes of one line of a worker's diagnostics the host logs; a longer one is cut.
    pub const WORKER_STDERR_LINE_BYTES: usize = 1024;

    /// Levels of nesting a program (and a TypeScript module) may have, counted by
    /// `codemode_typestrip::nesting` before any parser reads it: oxc recurses once per level
    /// without a depth check, and about 1.6 KiB of stack per level is the worst measured, so
    /// this bound needs under 1 MiB of the parsing thread's stack (docs/bounds.md).
    pub const NESTING_LEVELS: u32 = 500;
    /// Bytes of program code the dialect adapter (`CodemodeExecutor`) normalizes on the host's
    /// event loop; longer code is refused with CODE_TOO_LARGE before it is read.
    pub const CODE_BYTES: usize = 1024 * 1024;
}

/// Frames larger than this are refused by both sides: a corrupt length prefix must not make
/// the reader allocate gigabytes.
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

//! The wire protocol between the host (pool core) and a `codemode-worker` process, and the
//! failure grammar every layer reports with.
//!
//! A frame is a little-endian `u32` body length followed by the body ([`frame`]: the one codec
//! every reader and writer uses). A body is one message in
//! [postcard](https://docs.rs/postcard) (varint integers, length-prefixed strings and byte
//! strings; an enum starts with its variant index), the layout the serde derives in
//! [`messages`] give. The worker's first frame is [`WorkerMsg::Hello`] carrying
//! [`PROTOCOL_VERSION`]; its layout is frozen across versions ([`messages::HELLO_TAG`]), so a
//! host that reads another version refuses the worker by name and a stale worker binary next to
//! a newer addon fails loudly instead of misreading frames.

pub mod failures;
pub mod frame;
pub mod host;
pub mod limits;
pub mod messages;

pub use failures::{Failure, FailureCode, FailureKind};
pub use frame::FrameTooLarge;
pub use messages::{
    Budgets, CallRecord, CallStatus, DecodeError, Engine, ExecuteRequest, Grant, Hops, HostMsg,
    LogEntry, LogLevel, Outbound, Paused, PendingCall, ProviderDecl, Redirect, Replayable,
    RunError, RunOutcome, RunStats, SourceLocation, WireRequest, WireResponse, WorkerMsg,
};

/// Bumped whenever a message's layout changes. 1: hand-written fixed-width fields; 2: postcard;
/// 3: retained handles (Execute's `retain_handles`, the outcome's grant, Invoke, CloseHandles,
/// Invoked); 4: `Started` (the worker acknowledges an Execute before running it); 5: live log
/// entries (Execute's `live_logs`, `Log`), the worker's pid in the stats, and the failure's
/// `location` (RunError); 6: `Outbound::Public` and the request's `redirect` mode (WireRequest);
/// 7: budgets (Execute's `cpu_limit_ms`, `tool_call_limit`, `fetch_limit`; the stats'
/// `cpu_budget_us` and `fetches`); 8: replayable runs for approvals (Execute's `replayable`,
/// `Idle`); 9: `Awake` (a run that said `Idle` computes again) and `ToolDenied` (a call's denial,
/// which rejects with its code); 10: `Engine` (the worker names its V8 after its Hello); 11:
/// `hops` (Execute's flag, the outcome's step times).
pub const PROTOCOL_VERSION: u32 = 11;

/// The V8 value-serializer format the worker writes, and the newest it reads (the version after
/// the 0xFF header tag). Values cross both ways (tool answers in, arguments and results out) and
/// V8 refuses a format newer than its own (it never guesses), so the host requires its Node to
/// write exactly this one when an executor is built (`VALUE_FORMAT_UNSUPPORTED`). The worker's
/// tests pin it to its V8.
pub const VALUE_FORMAT_VERSION: u32 = 15;

/// The worker's descriptor for the control pipe: the pool maps the pipe's read end here, and
/// the worker's cancel thread reads `Cancel` frames from it.
pub const CONTROL_FD: i32 = 3;

/// Frames larger than this are refused by both sides: a corrupt length prefix must not make
/// the reader allocate gigabytes.
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

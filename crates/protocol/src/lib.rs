//! The wire protocol between the host (pool core) and a `codemode-worker` process, and the
//! failure grammar every layer reports with.
//!
//! A frame is a little-endian `u32` body length followed by the body; the body starts with a
//! one-byte message tag. The worker's first frame is [`WorkerMsg::Hello`] carrying
//! [`PROTOCOL_VERSION`]; a host that reads another version refuses the worker, so a stale worker
//! binary next to a newer addon fails loudly instead of misreading frames.

pub mod codec;
pub mod failures;
pub mod frame;
pub mod messages;

pub use failures::{Failure, FailureCode, FailureKind};
pub use messages::{
    ExecuteRequest, HostMsg, LogEntry, LogLevel, ProviderDecl, RunError, RunOutcome, WorkerMsg,
};

/// Bumped whenever a message's layout changes.
pub const PROTOCOL_VERSION: u32 = 1;

/// Frames larger than this are refused by both sides: a corrupt length prefix must not make
/// the reader allocate gigabytes.
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

//! The shapes a host sees of a run, defined once for both ways they reach it: the daemon's JSON
//! (serde, docs/protocol.md) and, with the `napi` feature, the addon's JS objects (native.d.ts,
//! what `lib/executor-core.js` reads). The enums and entries they carry (`LogLevel`,
//! `LogEntry`, `Grant`, `Outbound`, `Redirect`, `ProviderDecl`) are the frames' own, in
//! [`crate::messages`].
//! `__test__/shapes.test.mjs` holds index.d.ts and docs/protocol.md to these definitions.

use serde::Serialize;

use crate::failures::Failure;
use crate::messages::{RunError, RunStats, SourceLocation};

/// A code with its rendered text: a program failure (the outcome's `error`) or an executor
/// fault; the place is known for program failures only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "napi", napi_derive::napi(object))]
pub struct FailureReport {
    pub code: String,
    pub message: String,
    /// Where a program failure happened in the model's code (1-based), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The 1-based column on `line` (UTF-16 units), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The module it happened in (its key in the module map), when not the program itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
}

impl From<RunError> for FailureReport {
    fn from(e: RunError) -> Self {
        let (line, column, module) = SourceLocation::reported(e.location);
        FailureReport {
            code: e.code,
            message: e.message,
            line,
            column,
            module,
        }
    }
}

impl From<Failure> for FailureReport {
    fn from(f: Failure) -> Self {
        FailureReport {
            code: f.code.as_str().into(),
            message: f.message,
            line: None,
            column: None,
            module: None,
        }
    }
}

/// What a run used ([`RunStats`]), in the units the public `RunStats` documents (index.d.ts).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "napi", napi_derive::napi(object))]
pub struct RunUsage {
    pub wall_ms: f64,
    pub cpu_ms: f64,
    pub heap_peak_bytes: f64,
    pub buffers_peak_bytes: f64,
    pub tool_calls: u32,
    pub worker_pid: u32,
    /// The CPU the run's budget counted (`cpuLimit`), in ms; 0 without one.
    pub cpu_budget_ms: f64,
    pub fetches: u32,
}

impl From<RunStats> for RunUsage {
    fn from(s: RunStats) -> Self {
        RunUsage {
            wall_ms: s.wall_ms(),
            cpu_ms: s.cpu_ms(),
            heap_peak_bytes: s.heap_peak as f64,
            buffers_peak_bytes: s.buffers_peak as f64,
            tool_calls: s.tool_calls,
            worker_pid: s.worker_pid,
            cpu_budget_ms: s.cpu_budget_ms(),
            fetches: s.fetches,
        }
    }
}

/// A daemon's counts: its pool's workers and executions (retained ones included) and its open
/// connections (the `stats` message, `/healthz`, `NativeServer.stats()`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "napi", napi_derive::napi(object))]
pub struct DaemonCounts {
    pub workers: u32,
    pub idle: u32,
    pub running: u32,
    pub queued: u32,
    pub retained: u32,
    pub connections: u32,
    /// The engine its workers run programs on, once one has said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<crate::Engine>,
}

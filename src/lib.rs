//! The napi layer: converts JS values to pool-core types and back, nothing more. Validation
//! and the public API live in `index.js`; supervision, queueing and bounds in `codemode-pool`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use codemode_pool::protocol::{
    Failure, FailureCode, FailureKind, Outbound, ProviderDecl, RunOutcome, WireResponse,
};
use codemode_pool::{ExecSpec, FetchCall, Host, Pool, PoolOptions, ToolCall};
use napi::bindgen_prelude::Buffer;
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;
use napi_derive::napi;

/// A weak (unref'd) threadsafe function called with one object argument. Weak, so an idle
/// pool never keeps Node alive; index.js holds the loop open while executions are in flight.
type Callback<T> = ThreadsafeFunction<T, UnknownReturnValue, T, Status, false, true>;

#[napi(object)]
pub struct NativeOptions {
    pub workers: u32,
    pub worker_path: String,
    pub queue_bound: u32,
    pub timeout: f64,
    pub memory_limit: u32,
}

#[napi(object)]
pub struct NativeProvider {
    pub name: String,
    /// `null` for an open list (`'*'`).
    pub tools: Option<Vec<String>>,
}

#[napi(object)]
pub struct NativeRequest {
    pub code: String,
    /// Flat `[specifier, source, specifier, source, ...]`.
    pub modules: Vec<String>,
    pub providers: Vec<NativeProvider>,
    pub timeout: Option<f64>,
    pub memory_limit: Option<u32>,
    /// 0: native, 1: blocked, 2: routed (index.js resolves the executor default).
    pub outbound: u32,
}

/// `execute`'s immediate answer: an execution id, or a fault known at once.
#[napi(object)]
pub struct NativeAccepted {
    pub id: Option<i64>,
    pub fault_code: Option<String>,
    pub fault_message: Option<String>,
}

#[napi(object)]
pub struct NativeLog {
    pub level: String,
    pub message: String,
}

/// What a run used (see `RunStats`).
#[napi(object)]
pub struct NativeStats {
    pub wall_ms: f64,
    pub cpu_ms: f64,
    pub heap_peak_bytes: f64,
    pub buffers_peak_bytes: f64,
    pub tool_calls: u32,
}

/// The output bounds, for index.js (which bounds what the host sends back).
#[napi(object)]
pub struct NativeLimits {
    pub log_entries: u32,
    pub log_bytes: u32,
    pub log_entry_bytes: u32,
    pub result_bytes: u32,
    pub tool_payload_bytes: u32,
}

#[napi]
pub fn limits() -> NativeLimits {
    use codemode_pool::protocol::limits as l;
    NativeLimits {
        log_entries: l::LOG_ENTRIES as u32,
        log_bytes: l::LOG_BYTES as u32,
        log_entry_bytes: l::LOG_ENTRY_BYTES as u32,
        result_bytes: l::RESULT_BYTES as u32,
        tool_payload_bytes: l::TOOL_PAYLOAD_BYTES as u32,
    }
}

#[napi(object)]
pub struct NativeCompletion {
    pub id: i64,
    pub result: Option<Buffer>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub logs: Vec<NativeLog>,
    pub stats: Option<NativeStats>,
    pub fault_code: Option<String>,
    pub fault_message: Option<String>,
}

#[napi(object)]
pub struct NativeToolCall {
    pub id: i64,
    pub call_id: u32,
    pub provider: String,
    pub tool: String,
    pub args: Buffer,
}

/// A routed fetch, for the host's outbound policy.
#[napi(object)]
pub struct NativeFetchCall {
    pub id: i64,
    pub call_id: u32,
    pub method: String,
    pub url: String,
    pub headers: Vec<Vec<String>>,
    pub body: Option<Buffer>,
}

/// The policy's answer, already checked against the wire shape by index.js.
#[napi(object)]
pub struct NativeWireResponse {
    pub status: u32,
    pub status_text: String,
    pub headers: Vec<Vec<String>>,
    pub body: Option<Buffer>,
}

#[napi(object)]
pub struct FailureEntry {
    pub code: String,
    /// "program" | "fault" | "sandbox"
    pub kind: String,
    pub retryable: bool,
    pub when: String,
    pub text: String,
}

/// The failure grammar, for index.js and the docs check.
#[napi]
pub fn failure_catalog() -> Vec<FailureEntry> {
    FailureCode::ALL
        .iter()
        .map(|c| FailureEntry {
            code: c.as_str().into(),
            kind: match c.kind() {
                FailureKind::Program => "program",
                FailureKind::Fault => "fault",
                FailureKind::Sandbox => "sandbox",
                FailureKind::Log => "log",
            }
            .into(),
            retryable: c.retryable(),
            when: c.when().into(),
            text: c.template().into(),
        })
        .collect()
}

struct Bridge {
    on_tool_call: Callback<NativeToolCall>,
    on_fetch: Callback<NativeFetchCall>,
}

impl Host for Bridge {
    fn tool_call(&self, call: ToolCall) {
        self.on_tool_call.call(
            NativeToolCall {
                id: call.exec_id as i64,
                call_id: call.call_id,
                provider: call.provider,
                tool: call.tool,
                args: call.args.into(),
            },
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }

    fn fetch(&self, call: FetchCall) {
        self.on_fetch.call(
            NativeFetchCall {
                id: call.exec_id as i64,
                call_id: call.call_id,
                method: call.request.method,
                url: call.request.url,
                headers: call
                    .request
                    .headers
                    .into_iter()
                    .map(|(k, v)| vec![k, v])
                    .collect(),
                body: call.request.body.map(Buffer::from),
            },
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }
}

#[napi]
pub struct NativePool {
    pool: Pool,
    bridge: Arc<dyn Host>,
    on_done: Arc<Callback<NativeCompletion>>,
}

#[napi]
impl NativePool {
    #[napi(constructor)]
    pub fn new(
        options: NativeOptions,
        on_tool_call: Callback<NativeToolCall>,
        on_fetch: Callback<NativeFetchCall>,
        on_done: Callback<NativeCompletion>,
    ) -> napi::Result<Self> {
        let pool = Pool::start(PoolOptions {
            workers: options.workers.max(1) as usize,
            worker_path: PathBuf::from(options.worker_path),
            queue_bound: options.queue_bound as usize,
            timeout_ms: options.timeout.max(1.0) as u64,
            memory_limit_mib: options.memory_limit,
        })
        // index.js reads the code off the front of the message ("CODE: text").
        .map_err(|f| napi::Error::new(Status::GenericFailure, f.to_string()))?;
        Ok(NativePool {
            pool,
            bridge: Arc::new(Bridge {
                on_tool_call,
                on_fetch,
            }),
            on_done: Arc::new(on_done),
        })
    }

    #[napi]
    pub fn execute(&self, request: NativeRequest) -> NativeAccepted {
        let mut modules = Vec::with_capacity(request.modules.len() / 2);
        let mut flat = request.modules.into_iter();
        while let (Some(k), Some(v)) = (flat.next(), flat.next()) {
            modules.push((k, v));
        }
        let spec = ExecSpec {
            code: request.code,
            modules,
            providers: request
                .providers
                .into_iter()
                .map(|p| ProviderDecl {
                    name: p.name,
                    tools: p.tools,
                })
                .collect(),
            timeout_ms: request.timeout.map(|t| t.max(1.0) as u64),
            memory_limit_mib: request.memory_limit,
            outbound: match request.outbound {
                1 => Outbound::Blocked,
                2 => Outbound::Routed,
                _ => Outbound::Native,
            },
        };
        let on_done = self.on_done.clone();
        let done = Box::new(move |id: u64, result: Result<RunOutcome, Failure>| {
            on_done.call(
                completion(id, result),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        });
        match self.pool.execute(spec, self.bridge.clone(), done) {
            Ok(id) => NativeAccepted {
                id: Some(id as i64),
                fault_code: None,
                fault_message: None,
            },
            Err(f) => NativeAccepted {
                id: None,
                fault_code: Some(f.code.as_str().into()),
                fault_message: Some(f.message),
            },
        }
    }

    /// Delivers the host's answer to tool call `call_id` of execution `id`: `ok` with a
    /// V8-serialized value, or not ok with the message the call rejects with.
    #[napi]
    pub fn answer_tool_call(&self, id: i64, call_id: u32, ok: bool, payload: Buffer) {
        self.pool
            .answer_tool_call(id as u64, call_id, ok, payload.to_vec());
    }

    /// Delivers the outbound policy's answer to routed fetch `call_id` of execution `id`: a
    /// response, or the message the fetch rejects with.
    #[napi]
    pub fn answer_fetch(
        &self,
        id: i64,
        call_id: u32,
        response: Option<NativeWireResponse>,
        error: Option<String>,
    ) {
        let result = match (response, error) {
            (Some(r), _) => Ok(WireResponse {
                status: r.status.min(u16::MAX as u32) as u16,
                status_text: r.status_text,
                headers: r
                    .headers
                    .into_iter()
                    .filter_map(|mut pair| {
                        let v = pair.pop()?;
                        let k = pair.pop()?;
                        Some((k, v))
                    })
                    .collect(),
                body: r.body.map(|b| b.to_vec()),
                url: String::new(),
                redirected: false,
            }),
            (None, e) => Err(e.unwrap_or_else(|| "fetch failed".into())),
        };
        self.pool.answer_fetch(id as u64, call_id, result);
    }

    /// Refuses new executions; queued and running ones continue.
    #[napi]
    pub fn close(&self) {
        self.pool.close();
    }

    /// Stops and reaps every worker (waits at most `grace_ms`, then has killed them all).
    #[napi]
    pub fn shutdown(&self, grace_ms: u32) {
        self.pool.shutdown(Duration::from_millis(grace_ms as u64));
    }

    #[napi]
    pub fn worker_pids(&self) -> Vec<u32> {
        self.pool.worker_pids()
    }
}

fn completion(id: u64, result: Result<RunOutcome, Failure>) -> NativeCompletion {
    match result {
        Ok(outcome) => {
            let (error_code, error_message) = match outcome.error {
                Some(e) => (Some(e.code), Some(e.message)),
                None => (None, None),
            };
            NativeCompletion {
                id: id as i64,
                result: outcome.result.map(Buffer::from),
                error_code,
                error_message,
                logs: outcome
                    .logs
                    .into_iter()
                    .map(|l| NativeLog {
                        level: l.level.as_str().into(),
                        message: l.message,
                    })
                    .collect(),
                stats: Some(NativeStats {
                    wall_ms: outcome.stats.wall_us as f64 / 1000.0,
                    cpu_ms: outcome.stats.cpu_us as f64 / 1000.0,
                    heap_peak_bytes: outcome.stats.heap_peak as f64,
                    buffers_peak_bytes: outcome.stats.buffers_peak as f64,
                    tool_calls: outcome.stats.tool_calls,
                }),
                fault_code: None,
                fault_message: None,
            }
        }
        Err(f) => NativeCompletion {
            id: id as i64,
            result: None,
            error_code: None,
            error_message: None,
            logs: Vec::new(),
            stats: None,
            fault_code: Some(f.code.as_str().into()),
            fault_message: Some(f.message),
        },
    }
}

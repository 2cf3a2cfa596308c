//! The messages each side sends, and their byte layout.

use crate::codec::{DecodeError, Decoder, Encoder};

const T_EXECUTE: u8 = 1;
const T_TOOL_RESULT: u8 = 2;
const T_CANCEL: u8 = 3;
const T_FETCH_RESULT: u8 = 4;
const T_HELLO: u8 = 101;
const T_TOOL_CALL: u8 = 102;
const T_DONE: u8 = 103;
const T_READY: u8 = 104;
const T_FETCH: u8 = 105;

/// One provider global in the sandbox. `tools: None` is an open list (`'*'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderDecl {
    pub name: String,
    pub tools: Option<Vec<String>>,
}

/// How a run's `fetch` reaches the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outbound {
    /// The pool performs the request from its own machine.
    #[default]
    Native = 0,
    /// `fetch` rejects inside the sandbox without leaving it.
    Blocked = 1,
    /// The host's policy function answers each request.
    Routed = 2,
}

impl Outbound {
    fn from_u8(v: u8) -> Result<Self, DecodeError> {
        Ok(match v {
            0 => Outbound::Native,
            1 => Outbound::Blocked,
            2 => Outbound::Routed,
            _ => return Err(DecodeError(format!("unknown outbound mode {v}"))),
        })
    }
}

/// A request in the wire shape the contract names (`WireRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

/// A response in the wire shape (`WireResponse`), plus where it finally came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireResponse {
    pub status: u16,
    pub status_text: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// The URL after redirects (empty: the request's).
    pub url: String,
    pub redirected: bool,
}

fn put_headers(e: &mut Encoder, headers: &[(String, String)]) {
    e.u32(headers.len() as u32);
    for (k, v) in headers {
        e.str(k);
        e.str(v);
    }
}

fn get_headers(d: &mut Decoder) -> Result<Vec<(String, String)>, DecodeError> {
    let n = d.count()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push((d.string()?, d.string()?));
    }
    Ok(out)
}

impl WireRequest {
    fn put(&self, e: &mut Encoder) {
        e.str(&self.method);
        e.str(&self.url);
        put_headers(e, &self.headers);
        e.opt_bytes(self.body.as_deref());
    }
    fn get(d: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(WireRequest {
            method: d.string()?,
            url: d.string()?,
            headers: get_headers(d)?,
            body: d.opt_bytes()?,
        })
    }
}

impl WireResponse {
    fn put(&self, e: &mut Encoder) {
        e.u32(self.status as u32);
        e.str(&self.status_text);
        put_headers(e, &self.headers);
        e.opt_bytes(self.body.as_deref());
        e.str(&self.url);
        e.u8(self.redirected as u8);
    }
    fn get(d: &mut Decoder) -> Result<Self, DecodeError> {
        Ok(WireResponse {
            status: u16::try_from(d.u32()?)
                .map_err(|_| DecodeError("status out of range".into()))?,
            status_text: d.string()?,
            headers: get_headers(d)?,
            body: d.opt_bytes()?,
            url: d.string()?,
            redirected: d.u8()? != 0,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecuteRequest {
    pub exec_id: u64,
    pub code: String,
    /// specifier -> ES module source
    pub modules: Vec<(String, String)>,
    pub providers: Vec<ProviderDecl>,
    pub memory_limit_mib: u32,
    pub outbound: Outbound,
}

/// Messages from the host to a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostMsg {
    Execute(ExecuteRequest),
    /// The answer to a tool call. `ok`: `payload` is a V8-serialized value; otherwise it is the
    /// UTF-8 message the call rejects with inside the sandbox.
    ToolResult {
        exec_id: u64,
        call_id: u32,
        ok: bool,
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Log = 0,
    Info = 1,
    Warn = 2,
    Error = 3,
    Debug = 4,
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    pub level: LogLevel,
    pub message: String,
}

/// A program failure, reported in the outcome (never as an executor fault).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    pub code: String,
    pub message: String,
}

/// What a run used, measured by the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunOutcome {
    /// The V8-serialized result; absent when the run failed.
    pub result: Option<Vec<u8>>,
    pub error: Option<RunError>,
    pub logs: Vec<LogEntry>,
    pub stats: RunStats,
}

/// Messages from a worker to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerMsg {
    Hello {
        version: u32,
        pid: u32,
    },
    ToolCall {
        exec_id: u64,
        call_id: u32,
        provider: String,
        tool: String,
        /// V8-serialized array of arguments.
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
}

impl HostMsg {
    /// The whole frame, length prefix included.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            HostMsg::Execute(r) => {
                let size = r.code.len()
                    + r.modules
                        .iter()
                        .map(|(k, v)| k.len() + v.len() + 8)
                        .sum::<usize>()
                    + 64;
                let mut e = Encoder::frame(T_EXECUTE, size);
                e.u64(r.exec_id);
                e.str(&r.code);
                e.u32(r.modules.len() as u32);
                for (k, v) in &r.modules {
                    e.str(k);
                    e.str(v);
                }
                e.u32(r.providers.len() as u32);
                for p in &r.providers {
                    e.str(&p.name);
                    match &p.tools {
                        None => e.u8(0),
                        Some(tools) => {
                            e.u8(1);
                            e.u32(tools.len() as u32);
                            for t in tools {
                                e.str(t);
                            }
                        }
                    }
                }
                e.u32(r.memory_limit_mib);
                e.u8(r.outbound as u8);
                e.finish()
            }
            HostMsg::ToolResult {
                exec_id,
                call_id,
                ok,
                payload,
            } => {
                let mut e = Encoder::frame(T_TOOL_RESULT, payload.len() + 20);
                e.u64(*exec_id);
                e.u32(*call_id);
                e.u8(*ok as u8);
                e.bytes(payload);
                e.finish()
            }
            HostMsg::Cancel { exec_id } => {
                let mut e = Encoder::frame(T_CANCEL, 8);
                e.u64(*exec_id);
                e.finish()
            }
            HostMsg::FetchResult {
                exec_id,
                call_id,
                result,
            } => {
                let size = match result {
                    Ok(r) => r.body.as_ref().map_or(0, Vec::len) + 256,
                    Err(m) => m.len() + 16,
                };
                let mut e = Encoder::frame(T_FETCH_RESULT, size);
                e.u64(*exec_id);
                e.u32(*call_id);
                match result {
                    Ok(r) => {
                        e.u8(1);
                        r.put(&mut e);
                    }
                    Err(m) => {
                        e.u8(0);
                        e.str(m);
                    }
                }
                e.finish()
            }
        }
    }

    /// Decodes a frame body (without the length prefix).
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(body);
        let msg = match d.u8()? {
            T_EXECUTE => {
                let exec_id = d.u64()?;
                let code = d.string()?;
                let n = d.count()?;
                let mut modules = Vec::with_capacity(n);
                for _ in 0..n {
                    modules.push((d.string()?, d.string()?));
                }
                let n = d.count()?;
                let mut providers = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = d.string()?;
                    let tools = match d.u8()? {
                        0 => None,
                        _ => {
                            let m = d.count()?;
                            let mut tools = Vec::with_capacity(m);
                            for _ in 0..m {
                                tools.push(d.string()?);
                            }
                            Some(tools)
                        }
                    };
                    providers.push(ProviderDecl { name, tools });
                }
                let memory_limit_mib = d.u32()?;
                let outbound = Outbound::from_u8(d.u8()?)?;
                HostMsg::Execute(ExecuteRequest {
                    exec_id,
                    code,
                    modules,
                    providers,
                    memory_limit_mib,
                    outbound,
                })
            }
            T_TOOL_RESULT => HostMsg::ToolResult {
                exec_id: d.u64()?,
                call_id: d.u32()?,
                ok: d.u8()? != 0,
                payload: d.bytes()?.to_vec(),
            },
            T_CANCEL => HostMsg::Cancel { exec_id: d.u64()? },
            T_FETCH_RESULT => HostMsg::FetchResult {
                exec_id: d.u64()?,
                call_id: d.u32()?,
                result: match d.u8()? {
                    0 => Err(d.string()?),
                    _ => Ok(WireResponse::get(&mut d)?),
                },
            },
            t => return Err(DecodeError(format!("unknown host message tag {t}"))),
        };
        d.end()?;
        Ok(msg)
    }
}

impl WorkerMsg {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            WorkerMsg::Hello { version, pid } => {
                let mut e = Encoder::frame(T_HELLO, 8);
                e.u32(*version);
                e.u32(*pid);
                e.finish()
            }
            WorkerMsg::ToolCall {
                exec_id,
                call_id,
                provider,
                tool,
                args,
            } => {
                let mut e =
                    Encoder::frame(T_TOOL_CALL, provider.len() + tool.len() + args.len() + 32);
                e.u64(*exec_id);
                e.u32(*call_id);
                e.str(provider);
                e.str(tool);
                e.bytes(args);
                e.finish()
            }
            WorkerMsg::Ready => Encoder::frame(T_READY, 0).finish(),
            WorkerMsg::Fetch {
                exec_id,
                call_id,
                request,
            } => {
                let size = request.url.len() + request.body.as_ref().map_or(0, Vec::len) + 128;
                let mut e = Encoder::frame(T_FETCH, size);
                e.u64(*exec_id);
                e.u32(*call_id);
                request.put(&mut e);
                e.finish()
            }
            WorkerMsg::Done { exec_id, outcome } => {
                let size = outcome.result.as_ref().map_or(0, Vec::len)
                    + outcome
                        .logs
                        .iter()
                        .map(|l| l.message.len() + 5)
                        .sum::<usize>()
                    + 64;
                let mut e = Encoder::frame(T_DONE, size);
                e.u64(*exec_id);
                e.opt_bytes(outcome.result.as_deref());
                match &outcome.error {
                    None => e.u8(0),
                    Some(err) => {
                        e.u8(1);
                        e.str(&err.code);
                        e.str(&err.message);
                    }
                }
                e.u32(outcome.logs.len() as u32);
                for l in &outcome.logs {
                    e.u8(l.level as u8);
                    e.str(&l.message);
                }
                e.u64(outcome.stats.wall_us);
                e.u64(outcome.stats.cpu_us);
                e.u64(outcome.stats.heap_peak);
                e.u64(outcome.stats.buffers_peak);
                e.u32(outcome.stats.tool_calls);
                e.finish()
            }
        }
    }

    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(body);
        let msg = match d.u8()? {
            T_HELLO => WorkerMsg::Hello {
                version: d.u32()?,
                pid: d.u32()?,
            },
            T_TOOL_CALL => WorkerMsg::ToolCall {
                exec_id: d.u64()?,
                call_id: d.u32()?,
                provider: d.string()?,
                tool: d.string()?,
                args: d.bytes()?.to_vec(),
            },
            T_READY => WorkerMsg::Ready,
            T_FETCH => WorkerMsg::Fetch {
                exec_id: d.u64()?,
                call_id: d.u32()?,
                request: WireRequest::get(&mut d)?,
            },
            T_DONE => {
                let exec_id = d.u64()?;
                let result = d.opt_bytes()?;
                let error = match d.u8()? {
                    0 => None,
                    _ => Some(RunError {
                        code: d.string()?,
                        message: d.string()?,
                    }),
                };
                let n = d.count()?;
                let mut logs = Vec::with_capacity(n);
                for _ in 0..n {
                    let level = LogLevel::from_u8(d.u8()?)
                        .ok_or_else(|| DecodeError("unknown log level".into()))?;
                    logs.push(LogEntry {
                        level,
                        message: d.string()?,
                    });
                }
                let stats = RunStats {
                    wall_us: d.u64()?,
                    cpu_us: d.u64()?,
                    heap_peak: d.u64()?,
                    buffers_peak: d.u64()?,
                    tool_calls: d.u32()?,
                };
                WorkerMsg::Done {
                    exec_id,
                    outcome: RunOutcome {
                        result,
                        error,
                        logs,
                        stats,
                    },
                }
            }
            t => return Err(DecodeError(format!("unknown worker message tag {t}"))),
        };
        d.end()?;
        Ok(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::read_frame;

    fn roundtrip_host(m: HostMsg) {
        let frame = m.encode();
        let mut buf = Vec::new();
        assert!(read_frame(&mut &frame[..], &mut buf).unwrap());
        assert_eq!(HostMsg::decode(&buf).unwrap(), m);
    }

    fn roundtrip_worker(m: WorkerMsg) {
        let frame = m.encode();
        let mut buf = Vec::new();
        assert!(read_frame(&mut &frame[..], &mut buf).unwrap());
        assert_eq!(WorkerMsg::decode(&buf).unwrap(), m);
    }

    #[test]
    fn host_messages_roundtrip() {
        roundtrip_host(HostMsg::Execute(ExecuteRequest {
            exec_id: u64::MAX,
            code: "import { a } from './a.js'\nasync () => a".into(),
            modules: vec![("./a.js".into(), "export const a = 'é'".into())],
            providers: vec![
                ProviderDecl {
                    name: "store".into(),
                    tools: Some(vec!["list".into(), "get".into()]),
                },
                ProviderDecl {
                    name: "open".into(),
                    tools: None,
                },
            ],
            memory_limit_mib: 128,
            outbound: Outbound::Routed,
        }));
        roundtrip_host(HostMsg::FetchResult {
            exec_id: 3,
            call_id: 9,
            result: Ok(WireResponse {
                status: 201,
                status_text: "Created".into(),
                headers: vec![("content-type".into(), "text/plain".into())],
                body: Some(b"ok".to_vec()),
                url: "https://example.com/x".into(),
                redirected: true,
            }),
        });
        roundtrip_host(HostMsg::FetchResult {
            exec_id: 3,
            call_id: 10,
            result: Err("refused".into()),
        });
        roundtrip_host(HostMsg::ToolResult {
            exec_id: 7,
            call_id: 3,
            ok: false,
            payload: b"boom".to_vec(),
        });
        roundtrip_host(HostMsg::Cancel { exec_id: 9 });
    }

    #[test]
    fn worker_messages_roundtrip() {
        roundtrip_worker(WorkerMsg::Hello {
            version: 1,
            pid: 42,
        });
        roundtrip_worker(WorkerMsg::ToolCall {
            exec_id: 1,
            call_id: 2,
            provider: "p".into(),
            tool: "t".into(),
            args: vec![0xff, 0x0f, 0x41],
        });
        roundtrip_worker(WorkerMsg::Done {
            exec_id: 5,
            outcome: RunOutcome {
                result: Some(vec![1, 2, 3]),
                error: Some(RunError {
                    code: "PROGRAM_ERROR".into(),
                    message: "Error: x".into(),
                }),
                logs: vec![
                    LogEntry {
                        level: LogLevel::Warn,
                        message: "careful".into(),
                    },
                    LogEntry {
                        level: LogLevel::Debug,
                        message: String::new(),
                    },
                ],
                stats: RunStats {
                    wall_us: 2345,
                    cpu_us: 1234,
                    heap_peak: 1 << 20,
                    buffers_peak: 77,
                    tool_calls: 3,
                },
            },
        });
    }

    #[test]
    fn malformed_frames_are_refused_not_panicked_on() {
        // unknown tag
        assert!(HostMsg::decode(&[250]).is_err());
        // truncated execute
        let frame = HostMsg::Cancel { exec_id: 1 }.encode();
        assert!(HostMsg::decode(&frame[4..8]).is_err());
        // trailing bytes
        let mut body = frame[4..].to_vec();
        body.push(0);
        assert!(HostMsg::decode(&body).is_err());
        // a huge list count in a tiny frame
        let mut e = Encoder::frame(T_DONE, 16);
        e.u64(1);
        e.u8(0);
        e.u8(0);
        e.u32(u32::MAX);
        let f = e.finish();
        assert!(WorkerMsg::decode(&f[4..]).is_err());
        // invalid UTF-8
        let mut e = Encoder::frame(T_TOOL_CALL, 16);
        e.u64(1);
        e.u32(1);
        e.bytes(&[0xff, 0xfe]);
        let f = e.finish();
        assert!(WorkerMsg::decode(&f[4..]).is_err());
    }

    #[test]
    fn frame_reader_rejects_bad_lengths_and_reports_clean_eof() {
        let mut buf = Vec::new();
        assert!(!read_frame(&mut &[][..], &mut buf).unwrap());
        assert!(read_frame(&mut &[0, 0, 0, 0][..], &mut buf).is_err());
        assert!(read_frame(&mut &[0xff, 0xff, 0xff, 0xff][..], &mut buf).is_err());
        // a length prefix promising more than arrives
        assert!(read_frame(&mut &[5, 0, 0, 0, 1][..], &mut buf).is_err());
    }
}

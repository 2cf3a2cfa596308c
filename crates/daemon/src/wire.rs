//! The executor protocol's messages (docs/protocol.md), each defined once here as a serde type,
//! and the two frame forms: a text message is one JSON object; a binary message is a `u32`
//! big-endian header length, the JSON header, then the payload (V8-serialized value or HTTP
//! body), kept as opaque bytes.
//!
//! Over 500 lines on purpose: every message of the protocol is here, once, with the tests of
//! its encoding and its errors beside it.

use codemode_pool::protocol::host::{DaemonCounts, FailureReport, RunUsage};
pub use codemode_pool::protocol::Outbound;
use codemode_pool::protocol::{
    limits, Failure, FailureCode, Grant, LogEntry, ProviderDecl, Redirect, RunOutcome, WireResponse,
};
use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::Message;

/// The executor protocol's version, carried by `hello` and `welcome`.
pub const PROTOCOL: u32 = 1;

/// The largest message a client may send by default (`limits.maxMessageBytes`; `serve
/// --max-message-bytes`): the largest payload (16 MiB: a result, a tool payload, a fetch body)
/// with room for its header and the run's logs. Each connection may hold one message this large
/// while it arrives, so the bound times the connection cap is the memory clients can pin.
pub const MAX_MESSAGE_BYTES: usize = 20 * 1024 * 1024;

/// How much of the daemon's own network a mode reaches, in order ([`Outbound::BY_REACH`]):
/// blocked, routed (none: the caller's process performs the request), public, native
/// (everything the daemon's machine reaches). A daemon's ceiling (`serve --outbound`) admits a
/// mode up to it.
pub fn reach(mode: Outbound) -> usize {
    Outbound::BY_REACH
        .iter()
        .position(|m| *m == mode)
        .unwrap_or(0)
}

/// The mode `serve --outbound` names (`null` is blocked).
pub fn outbound_flag(flag: &str) -> Option<Outbound> {
    match flag {
        "null" => Some(Outbound::Blocked),
        _ => Outbound::BY_REACH.into_iter().find(|m| m.as_str() == flag),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteMsg {
    pub id: u32,
    pub code: String,
    #[serde(default)]
    pub modules: Vec<(String, String)>,
    /// `tools: null`: an open list (`'*'`).
    #[serde(default)]
    pub providers: Vec<ProviderDecl>,
    /// Milliseconds; absent: the daemon's default.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// MiB; absent: the daemon's default.
    #[serde(default)]
    pub memory_limit: Option<u64>,
    /// Absent: the daemon's outbound ceiling.
    #[serde(default)]
    pub outbound: Option<Outbound>,
    #[serde(default)]
    pub retain_handles: bool,
    /// Stream each console entry as a `log` message while the run goes.
    #[serde(default)]
    pub live_logs: bool,
}

impl ExecuteMsg {
    /// The request's `timeout` and `memoryLimit` against the ranges every executor takes
    /// (`limits::options`): `INVALID_REQUEST` naming the first one outside its range.
    pub fn check_ranges(&self) -> Result<(), Failure> {
        use limits::options::{MEMORY_LIMIT_MIB, TIMEOUT_MS};
        let fields = [
            ("timeout", self.timeout, &TIMEOUT_MS, "ms"),
            ("memoryLimit", self.memory_limit, &MEMORY_LIMIT_MIB, "MiB"),
        ];
        for (field, got, range, unit) in fields {
            if let Some(got) = got.filter(|v| !range.contains(v)) {
                return Err(FailureCode::InvalidRequest.failure(&[
                    ("field", field),
                    ("problem", &format!("got {got}")),
                    (
                        "allowed",
                        &format!(
                            "an integer from {} to {} ({unit})",
                            range.start(),
                            range.end()
                        ),
                    ),
                ]));
            }
        }
        Ok(())
    }
}

/// The client's answer to a routed `fetch`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FetchResultMsg {
    pub id: u32,
    pub call_id: u32,
    pub ok: bool,
    #[serde(default)]
    pub status: u32,
    #[serde(default)]
    pub status_text: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    #[serde(default)]
    pub has_body: bool,
    #[serde(default)]
    pub message: Option<String>,
}

impl FetchResultMsg {
    /// The answer as the pool takes it for the fetch of `url`: the response, or the text the
    /// fetch rejects with inside the sandbox (the client's `message`; a status outside
    /// `limits::RESPONSE_STATUS`; a body over `limits::FETCH_BODY_BYTES`).
    pub fn into_response(self, payload: Vec<u8>, url: &str) -> Result<WireResponse, String> {
        if !self.ok {
            return Err(self.message.unwrap_or_default());
        }
        let status = u16::try_from(self.status)
            .ok()
            .filter(|s| limits::RESPONSE_STATUS.contains(s));
        let Some(status) = status else {
            let (lo, hi) = (
                limits::RESPONSE_STATUS.start(),
                limits::RESPONSE_STATUS.end(),
            );
            let detail = format!("status {} is outside {lo}-{hi}", self.status);
            return Err(
                FailureCode::OutboundInvalidResponse.render(&[("url", url), ("detail", &detail)])
            );
        };
        if payload.len() > limits::FETCH_BODY_BYTES {
            let limit = limits::FETCH_BODY_BYTES.to_string();
            return Err(FailureCode::FetchTooLarge.render(&[
                ("what", "response"),
                ("url", url),
                ("limit", &limit),
            ]));
        }
        Ok(WireResponse {
            status,
            status_text: self.status_text,
            headers: self.headers,
            body: self.has_body.then_some(payload),
            url: String::new(),
            redirected: false,
        })
    }
}

/// A message from the client. The payload (when the message carries one) travels beside it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ClientMsg {
    Hello {
        protocol: u32,
        #[serde(default)]
        client: Option<String>,
    },
    Execute(ExecuteMsg),
    ToolResult {
        id: u32,
        call_id: u32,
        ok: bool,
        #[serde(default)]
        message: Option<String>,
    },
    FetchResult(FetchResultMsg),
    Invoke {
        id: u32,
        execution_id: String,
        handle: String,
        method: String,
        url: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
        #[serde(default)]
        has_body: bool,
    },
    CloseHandles {
        id: u32,
        execution_id: String,
    },
    Stats {
        id: u32,
    },
    /// Abort request `id` (an `execute` or an `invoke` in flight); no answer of its own.
    Abort {
        id: u32,
    },
}

impl ClientMsg {
    /// The request id of a request (`execute`, `invoke`, `closeHandles`, `stats`).
    pub fn request_id(&self) -> Option<u32> {
        match self {
            ClientMsg::Execute(e) => Some(e.id),
            ClientMsg::Invoke { id, .. }
            | ClientMsg::CloseHandles { id, .. }
            | ClientMsg::Stats { id } => Some(*id),
            _ => None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            ClientMsg::Hello { .. } => "hello",
            ClientMsg::Execute(_) => "execute",
            ClientMsg::ToolResult { .. } => "toolResult",
            ClientMsg::FetchResult { .. } => "fetchResult",
            ClientMsg::Invoke { .. } => "invoke",
            ClientMsg::CloseHandles { .. } => "closeHandles",
            ClientMsg::Stats { .. } => "stats",
            ClientMsg::Abort { .. } => "abort",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub max_message_bytes: u64,
    pub max_in_flight: u32,
    /// The most time (ms) a request may ask for, and what one without `timeout` gets.
    pub timeout: u64,
    /// The most memory (MiB) a request may ask for, and what one without `memoryLimit` gets.
    pub memory_limit: u32,
    /// The most network a request may ask for, and what one without `outbound` gets.
    pub outbound: Outbound,
    pub tool_payload_bytes: u64,
    pub result_bytes: u64,
    pub fetch_body_bytes: u64,
}

impl Limits {
    pub fn new(
        max_in_flight: u32,
        max_message_bytes: usize,
        timeout: u64,
        memory_limit: u32,
        outbound: Outbound,
    ) -> Self {
        Limits {
            max_message_bytes: max_message_bytes as u64,
            timeout,
            memory_limit,
            outbound,
            max_in_flight,
            tool_payload_bytes: limits::TOOL_PAYLOAD_BYTES as u64,
            result_bytes: limits::RESULT_BYTES as u64,
            fetch_body_bytes: limits::FETCH_BODY_BYTES as u64,
        }
    }
}

/// `GET /healthz`'s body: serving or draining, who, and the counts.
#[derive(Debug, Serialize)]
pub struct Health<'a> {
    pub status: &'static str,
    pub daemon: &'a str,
    pub protocol: u32,
    #[serde(flatten)]
    pub counts: DaemonCounts,
}

/// A message from the daemon. `payload` fields are not serialized: they travel as the binary
/// form's tail (see [`encode`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ServerMsg {
    Welcome {
        protocol: u32,
        daemon: String,
        name: String,
        limits: Limits,
    },
    Refused {
        code: &'static str,
        message: String,
    },
    ToolCall {
        id: u32,
        call_id: u32,
        provider: String,
        tool: String,
    },
    Fetch {
        id: u32,
        call_id: u32,
        /// Set when the execution is retained (its `execute` id may have been reused since).
        #[serde(skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        has_body: bool,
        /// The request's redirect mode.
        redirect: Redirect,
    },
    Done {
        id: u32,
        has_result: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<FailureReport>,
        logs: Vec<LogEntry>,
        stats: RunUsage,
        #[serde(skip_serializing_if = "Option::is_none")]
        grant: Option<Grant>,
    },
    Invoked {
        id: u32,
        status: u16,
        status_text: String,
        headers: Vec<(String, String)>,
        has_body: bool,
    },
    Ack {
        id: u32,
    },
    Stats {
        id: u32,
        #[serde(flatten)]
        counts: DaemonCounts,
    },
    Failed {
        id: u32,
        code: &'static str,
        message: String,
        retryable: bool,
    },
    HandlesClosed {
        execution_id: String,
        reason: &'static str,
    },
    Error {
        code: &'static str,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<u32>,
    },
    /// A console entry of run `id`, as it was written (the run asked for `liveLogs`).
    Log {
        id: u32,
        #[serde(flatten)]
        entry: LogEntry,
    },
}

impl ServerMsg {
    pub fn failed(id: u32, f: Failure) -> Self {
        ServerMsg::Failed {
            id,
            code: f.code.as_str(),
            retryable: f.code.retryable(),
            message: f.message,
        }
    }

    /// A `PROTOCOL_ERROR`.
    pub fn protocol_error(detail: &str, id: Option<u32>) -> Self {
        ServerMsg::Error {
            code: FailureCode::ProtocolError.as_str(),
            message: FailureCode::ProtocolError.render(&[("detail", detail)]),
            id,
        }
    }

    /// A run's end: `done` (the payload is the result), or `failed` for an executor fault.
    pub fn completion(id: u32, result: Result<RunOutcome, Failure>) -> (Self, Option<Vec<u8>>) {
        match result {
            Err(f) => (ServerMsg::failed(id, f), None),
            Ok(o) => (
                ServerMsg::Done {
                    id,
                    has_result: o.result.is_some(),
                    error: o.error.map(FailureReport::from),
                    logs: o.logs,
                    stats: o.stats.into(),
                    grant: o.grant,
                },
                o.result,
            ),
        }
    }
}

/// One message: the text form without a payload, the binary form with one.
pub fn encode(msg: &ServerMsg, payload: Option<&[u8]>) -> Message {
    // Serializing these types cannot fail (string keys, no custom Serialize); should it ever,
    // the peer gets a PROTOCOL_ERROR it can read instead of a broken frame.
    let header = serde_json::to_vec(msg).unwrap_or_else(|e| {
        let fallback =
            ServerMsg::protocol_error(&format!("the daemon could not encode: {e}"), None);
        serde_json::to_vec(&fallback).unwrap_or_default()
    });
    match payload {
        None => match String::from_utf8(header) {
            Ok(text) => Message::text(text),
            Err(e) => Message::binary(binary(&e.into_bytes(), &[])),
        },
        Some(payload) => Message::binary(binary(&header, payload)),
    }
}

fn binary(header: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + header.len() + payload.len());
    out.extend_from_slice(&(header.len() as u32).to_be_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(payload);
    out
}

/// A message the daemon could not take: what was wrong, and the request id it named, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub detail: String,
    pub id: Option<u32>,
}

impl WireError {
    fn new(detail: impl Into<String>) -> Self {
        WireError {
            detail: detail.into(),
            id: None,
        }
    }
}

/// Decodes a text message: the JSON object alone.
pub fn decode_text(text: &str) -> Result<ClientMsg, WireError> {
    decode_header(text.as_bytes())
}

/// Decodes a binary message into its header and payload.
pub fn decode_binary(bytes: &[u8]) -> Result<(ClientMsg, Vec<u8>), WireError> {
    let Some(len) = bytes.get(..4) else {
        return Err(WireError::new(format!(
            "a binary message of {} bytes is shorter than its 4-byte header length",
            bytes.len()
        )));
    };
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let rest = &bytes[4..];
    if len > rest.len() {
        return Err(WireError::new(format!(
            "a binary message says its header is {len} bytes, but only {} bytes follow the length",
            rest.len()
        )));
    }
    let (header, payload) = rest.split_at(len);
    Ok((decode_header(header)?, payload.to_vec()))
}

fn decode_header(json: &[u8]) -> Result<ClientMsg, WireError> {
    let value: serde_json::Value = serde_json::from_slice(json)
        .map_err(|e| WireError::new(format!("the message is not JSON ({e})")))?;
    let id = value
        .get("id")
        .and_then(|v| v.as_u64())
        .and_then(|v| u32::try_from(v).ok());
    let Some(kind) = value.get("type") else {
        return Err(WireError {
            detail: "the message has no `type`".into(),
            id,
        });
    };
    let kind = kind.to_string();
    ClientMsg::deserialize(value).map_err(|e| WireError {
        detail: format!("a message of type {kind} does not fit its shape: {e}"),
        id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_pool::protocol::{LogLevel, RunError, RunStats};

    #[test]
    fn text_requests_decode() {
        let m = decode_text(r#"{"type":"hello","protocol":1,"client":"x"}"#).unwrap();
        assert_eq!(
            m,
            ClientMsg::Hello {
                protocol: 1,
                client: Some("x".into())
            }
        );
        let m = decode_text(
            r#"{"type":"execute","id":7,"code":"async () => 1","modules":[["a","b"]],
               "providers":[{"name":"kv","tools":null}],"timeout":50,"outbound":"routed",
               "retainHandles":true,"future":1}"#,
        )
        .unwrap();
        let ClientMsg::Execute(e) = m else {
            panic!("{m:?}")
        };
        assert_eq!(e.id, 7);
        assert_eq!(e.modules, [("a".to_string(), "b".to_string())]);
        assert_eq!(e.providers[0].tools, None);
        assert_eq!(e.timeout, Some(50));
        assert_eq!(e.memory_limit, None);
        assert_eq!(e.outbound, Some(Outbound::Routed));
        for (text, mode) in [
            ("public", Outbound::Public),
            ("native", Outbound::Native),
            ("blocked", Outbound::Blocked),
        ] {
            let m = decode_text(&format!(
                r#"{{"type":"execute","id":1,"code":"","outbound":"{text}"}}"#
            ))
            .unwrap();
            let ClientMsg::Execute(e) = m else {
                panic!("{m:?}")
            };
            assert_eq!(e.outbound, Some(mode));
            assert_eq!(outbound_flag(text), Some(mode));
        }
        let bad =
            decode_text(r#"{"type":"execute","id":1,"code":"","outbound":"open"}"#).unwrap_err();
        assert!(bad.detail.contains("unknown variant `open`"), "{bad:?}");
        assert!(e.retain_handles);
        let m = decode_text(r#"{"type":"closeHandles","id":3,"executionId":"e"}"#).unwrap();
        assert_eq!(m.request_id(), Some(3));
    }

    #[test]
    fn a_request_s_ranges_are_the_executor_s() {
        let execute = |fields: &str| {
            let text = format!(r#"{{"type":"execute","id":1,"code":"",{fields}}}"#);
            match decode_text(&text).unwrap() {
                ClientMsg::Execute(e) => e.check_ranges(),
                other => panic!("{other:?}"),
            }
        };
        assert!(execute(r#""timeout":1,"memoryLimit":8"#).is_ok());
        assert!(execute(r#""timeout":2147483647,"memoryLimit":16384"#).is_ok());
        for (fields, field) in [
            (r#""timeout":0"#, "timeout"),
            (r#""timeout":2147483648"#, "timeout"),
            (r#""memoryLimit":7"#, "memoryLimit"),
            (r#""memoryLimit":16385"#, "memoryLimit"),
        ] {
            let f = execute(fields).unwrap_err();
            assert_eq!(f.code, FailureCode::InvalidRequest, "{fields}");
            assert!(f.message.contains(field), "{}", f.message);
        }
        let f = execute(r#""memoryLimit":4"#).unwrap_err();
        assert!(f.message.contains("from 8 to 16384 (MiB)"), "{}", f.message);
    }

    #[test]
    fn a_routed_fetch_s_status_is_the_response_rule() {
        let answer = |status: u32| {
            let text = format!(
                r#"{{"type":"fetchResult","id":1,"callId":1,"ok":true,"status":{status}}}"#
            );
            match decode_text(&text).unwrap() {
                ClientMsg::FetchResult(r) => r.into_response(Vec::new(), "https://a.test/"),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(answer(200).unwrap().status, 200);
        assert_eq!(answer(599).unwrap().status, 599);
        // 1xx is no final response (the Fetch standard's Response takes 200-599), nor 65736.
        for status in [0, 100, 101, 199, 600, 65_736] {
            let text = answer(status).unwrap_err();
            assert!(text.contains("outside 200-599"), "{status}: {text}");
        }
        let text = r#"{"type":"fetchResult","id":1,"callId":1,"ok":false,"message":"no"}"#;
        let ClientMsg::FetchResult(r) = decode_text(text).unwrap() else {
            panic!()
        };
        assert_eq!(r.into_response(Vec::new(), "u"), Err("no".to_string()));
    }

    #[test]
    fn binary_messages_carry_their_payload() {
        let header = br#"{"type":"toolResult","id":1,"callId":2,"ok":true}"#;
        let mut bytes = (header.len() as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(header);
        bytes.extend_from_slice(&[0xff, 0x0f, 0x49, 0x54]);
        let (m, payload) = decode_binary(&bytes).unwrap();
        assert_eq!(
            m,
            ClientMsg::ToolResult {
                id: 1,
                call_id: 2,
                ok: true,
                message: None
            }
        );
        assert_eq!(payload, [0xff, 0x0f, 0x49, 0x54]);
        // An empty payload is the text form.
        let mut bytes = (header.len() as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(header);
        assert!(decode_binary(&bytes).unwrap().1.is_empty());
    }

    #[test]
    fn bad_messages_say_what_is_wrong_and_keep_the_id() {
        let e = decode_text("not json").unwrap_err();
        assert!(e.detail.contains("not JSON"), "{e:?}");
        assert_eq!(e.id, None);
        let e = decode_text(r#"{"id":4}"#).unwrap_err();
        assert_eq!(
            (e.detail.as_str(), e.id),
            ("the message has no `type`", Some(4))
        );
        let e = decode_text(r#"{"type":"nope","id":5}"#).unwrap_err();
        assert!(e.detail.contains("unknown variant `nope`"), "{e:?}");
        assert_eq!(e.id, Some(5));
        let e = decode_text(r#"{"type":"execute","id":6,"outbound":"native"}"#).unwrap_err();
        assert!(e.detail.contains("missing field `code`"), "{e:?}");
        assert_eq!(e.id, Some(6));
        let e = decode_text(r#"{"type":"stats","id":-1}"#).unwrap_err();
        assert_eq!(e.id, None);
        assert!(decode_binary(&[0, 0])
            .unwrap_err()
            .detail
            .contains("shorter"));
        let e = decode_binary(&[0, 0, 0, 9, b'{', b'}']).unwrap_err();
        assert!(e.detail.contains("header is 9 bytes"), "{e:?}");
    }

    #[test]
    fn daemon_messages_encode_in_both_forms() {
        let outcome = RunOutcome {
            result: Some(vec![1, 2, 3]),
            error: Some(RunError {
                code: "PROGRAM_ERROR".into(),
                message: "Error: x".into(),
                location: None,
            }),
            logs: vec![LogEntry {
                level: LogLevel::Warn,
                message: "w".into(),
            }],
            stats: RunStats {
                wall_us: 1500,
                cpu_us: 250,
                heap_peak: 10,
                buffers_peak: 0,
                tool_calls: 2,
                worker_pid: 7,
            },
            grant: Some(Grant {
                execution_id: "e1".into(),
                handles: vec!["fetch".into()],
            }),
        };
        let (msg, payload) = ServerMsg::completion(9, Ok(outcome));
        let Message::Binary(bytes) = encode(&msg, payload.as_deref()) else {
            panic!("a payload travels in the binary form")
        };
        let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[4..4 + len]).unwrap();
        assert_eq!(&bytes[4 + len..], [1, 2, 3]);
        assert_eq!(
            header,
            serde_json::json!({
                "type": "done", "id": 9, "hasResult": true,
                "error": {"code": "PROGRAM_ERROR", "message": "Error: x"},
                "logs": [{"level": "warn", "message": "w"}],
                "stats": {"wallMs": 1.5, "cpuMs": 0.25, "heapPeakBytes": 10.0,
                          "buffersPeakBytes": 0.0, "toolCalls": 2, "workerPid": 7},
                "grant": {"executionId": "e1", "handles": ["fetch"]},
            })
        );
        let (msg, _) = ServerMsg::completion(3, Err(FailureCode::QueueFull.failure(&[])));
        let Message::Text(text) = encode(&msg, None) else {
            panic!("no payload: the text form")
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["type"], "failed");
        assert_eq!(v["code"], "QUEUE_FULL");
        assert_eq!(v["retryable"], true);
        let counts = DaemonCounts {
            workers: 1,
            idle: 1,
            running: 0,
            queued: 0,
            retained: 0,
            connections: 2,
        };
        let Message::Text(text) = encode(&ServerMsg::Stats { id: 1, counts }, None) else {
            panic!()
        };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["connections"], 2);
        assert_eq!(v["type"], "stats");
    }
    /// The headings of docs/protocol.md's section `title`: the message types it documents.
    fn documented(title: &str) -> Vec<String> {
        let doc = include_str!("../../../docs/protocol.md");
        let start = doc.find(title).expect("section");
        let rest = &doc[start + title.len()..];
        let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
        section
            .lines()
            .filter_map(|l| l.strip_prefix("### `")?.strip_suffix('`'))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn every_client_message_type_is_documented() {
        // serde names every variant it knows when it meets an unknown one.
        let err = serde_json::from_str::<ClientMsg>(r#"{"type":"\u0000"}"#)
            .unwrap_err()
            .to_string();
        let known: Vec<&str> = err.split('`').skip(3).step_by(2).collect();
        assert!(known.len() >= 7, "{err}");
        let doc = documented("## Messages: client to daemon");
        for t in &known {
            assert!(
                doc.iter().any(|d| d == t),
                "`{t}` is not documented: {doc:?}"
            );
        }
        assert_eq!(
            doc.len(),
            known.len(),
            "documented {doc:?}, known {known:?}"
        );
    }

    #[test]
    fn every_daemon_message_type_is_documented() {
        use ServerMsg as M;
        // The index makes the compiler ask for a sample of every variant added.
        fn index(m: &ServerMsg) -> usize {
            match m {
                M::Welcome { .. } => 0,
                M::Refused { .. } => 1,
                M::ToolCall { .. } => 2,
                M::Fetch { .. } => 3,
                M::Done { .. } => 4,
                M::Invoked { .. } => 5,
                M::Ack { .. } => 6,
                M::Stats { .. } => 7,
                M::Failed { .. } => 8,
                M::HandlesClosed { .. } => 9,
                M::Error { .. } => 10,
                M::Log { .. } => 11,
            }
        }
        let stats = RunUsage::from(RunStats::default());
        let counts = DaemonCounts::default();
        let samples = [
            M::Welcome {
                protocol: 1,
                daemon: "d".into(),
                name: "n".into(),
                limits: Limits::new(1, MAX_MESSAGE_BYTES, 30_000, 128, Outbound::Public),
            },
            M::Refused {
                code: "CONNECTION_REFUSED",
                message: "m".into(),
            },
            M::ToolCall {
                id: 1,
                call_id: 1,
                provider: "p".into(),
                tool: "t".into(),
            },
            M::Fetch {
                id: 1,
                call_id: 1,
                execution_id: None,
                method: "GET".into(),
                url: "u".into(),
                headers: vec![],
                has_body: false,
                redirect: Redirect::Follow,
            },
            M::Done {
                id: 1,
                has_result: false,
                error: None,
                logs: vec![],
                stats,
                grant: None,
            },
            M::Invoked {
                id: 1,
                status: 200,
                status_text: String::new(),
                headers: vec![],
                has_body: false,
            },
            M::Ack { id: 1 },
            M::Stats { id: 1, counts },
            M::Failed {
                id: 1,
                code: "CLOSED",
                message: "m".into(),
                retryable: false,
            },
            M::HandlesClosed {
                execution_id: "e".into(),
                reason: "closed",
            },
            M::Error {
                code: "PROTOCOL_ERROR",
                message: "m".into(),
                id: None,
            },
            M::Log {
                id: 1,
                entry: LogEntry {
                    level: LogLevel::Log,
                    message: "m".into(),
                },
            },
        ];
        let mut seen: Vec<usize> = samples.iter().map(index).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen, (0..samples.len()).collect::<Vec<_>>());
        let doc = documented("## Messages: daemon to client");
        for m in &samples {
            let json = serde_json::to_value(m).unwrap();
            let t = json["type"].as_str().unwrap().to_string();
            assert!(doc.contains(&t), "`{t}` is not documented: {doc:?}");
        }
        assert_eq!(doc.len(), samples.len(), "documented {doc:?}");
    }
}

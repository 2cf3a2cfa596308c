//! Samples of every message of the executor protocol (docs/protocol.md), as they cross the
//! wire, held in `__test__/fixtures/wire-messages.json`: every `ServerMsg` variant serialized by
//! `wire::encode` as the daemon sends it, and every `ClientMsg` variant as a client sends it,
//! read back by `wire::decode_text` as the daemon reads it. `__test__/wire-messages.test.mjs`
//! holds the JS client (lib/remote/messages.js, lib/connect.js) to the same file, so a message
//! or a field changed on one side fails a test until the other side and the file agree.
//!
//! The file is written from here: `UPDATE_FIXTURES=1 cargo test --release -p codemode-daemon
//! --test messages_fixtures` rewrites it; without that, a file that differs fails the test.
//!
//! A kind's samples between them show which fields are optional: a field present in every
//! sample of its kind is one the daemon always sends (server) or requires (client); the others
//! may be absent. A kind with optional fields has a sample with each of them and one without.

use codemode_daemon::codemode_pool::protocol::host::{DaemonCounts, FailureReport, RunUsage};
use codemode_daemon::codemode_pool::protocol::{
    CallRecord, CallStatus, Engine, FailureCode, Grant, LogEntry, LogLevel, ProviderDecl, Redirect,
};
use codemode_daemon::wire::{
    self, ApprovalMsg, Approve, ClientMsg, DecisionMsg, ExecuteMsg, FetchResultMsg, Limits,
    Outbound, PausedMsg, PendingMsg, ProviderMsg, ResumeMsg, ServerMsg, PROTOCOL,
};
use serde_json::{json, Map, Value};
use tokio_tungstenite::tungstenite::Message;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../__test__/fixtures/wire-messages.json"
);

/// A retained execution's id, in the shape a pool mints (a v4 UUID; the client checks it).
const EXECUTION_ID: &str = "0b7e3c52-8d4f-4e0a-9a51-6f2d8c1e4b7a";

/// The samples of every variant of `$ty`, by variant. The `match` is exhaustive: a variant
/// added to the enum fails to compile here until it is listed with its samples.
macro_rules! every_variant {
    ($ty:ident, $( ($variant:ident, [ $( $sample:expr ),+ $(,)? ]) ),+ $(,)?) => {{
        fn variant(m: &$ty) -> &'static str {
            match m {
                $( $ty::$variant { .. } => stringify!($variant), )+
            }
        }
        let listed = vec![ $( (stringify!($variant), vec![ $( $sample ),+ ]) ),+ ];
        for (name, samples) in &listed {
            for (m, _) in samples {
                assert_eq!(variant(m), *name, "a sample listed under {name} is a {}", variant(m));
            }
        }
        listed
    }};
}

fn usage() -> RunUsage {
    RunUsage {
        wall_ms: 12.5,
        cpu_ms: 3.25,
        heap_peak_bytes: 1_048_576.0,
        buffers_peak_bytes: 0.0,
        tool_calls: 2,
        worker_pid: 4242,
        cpu_budget_ms: 3.0,
        fetches: 1,
    }
}

fn log(level: LogLevel, message: &str) -> LogEntry {
    LogEntry {
        level,
        message: message.into(),
    }
}

fn call(tool: &str, status: CallStatus, ms: f64) -> CallRecord {
    CallRecord {
        provider: "orders".into(),
        tool: tool.into(),
        status,
        ms,
    }
}

/// A `done`'s fields besides its id, result flag and stats.
#[derive(Default)]
struct Ended {
    error: Option<FailureReport>,
    logs: Vec<LogEntry>,
    grant: Option<Grant>,
    calls: Vec<CallRecord>,
    paused: Option<PausedMsg>,
}

fn done(id: u32, has_result: bool, e: Ended) -> ServerMsg {
    ServerMsg::Done {
        id,
        has_result,
        error: e.error,
        logs: e.logs,
        stats: usage(),
        grant: e.grant,
        calls: e.calls,
        paused: e.paused,
    }
}

fn limits(ceilings: bool) -> Limits {
    Limits {
        max_message_bytes: 20 * 1024 * 1024,
        max_in_flight: 1024,
        timeout: 30_000,
        memory_limit: 128,
        outbound: if ceilings {
            Outbound::Public
        } else {
            Outbound::Blocked
        },
        cpu_limit: ceilings.then_some(5_000),
        tool_call_limit: ceilings.then_some(100),
        fetch_limit: ceilings.then_some(0),
        approval_timeout: 300_000,
        tool_payload_bytes: 16 * 1024 * 1024,
        result_bytes: 16 * 1024 * 1024,
        fetch_body_bytes: 16 * 1024 * 1024,
    }
}

/// A variant's name and its samples.
type Samples<T> = Vec<(&'static str, Vec<T>)>;

/// Every daemon message, each with the payload the daemon sends beside it.
fn server_samples() -> Samples<(ServerMsg, Option<Vec<u8>>)> {
    let args = || Some(vec![0xff, 0x0f, 0x41, 0x00]);
    every_variant!(
        ServerMsg,
        (
            Welcome,
            [
                (
                    ServerMsg::Welcome {
                        protocol: PROTOCOL,
                        daemon: "3f1c9a7e-2b4d-4c8e-9f10-5a6b7c8d9e0f".into(),
                        name: "127.0.0.1:53122".into(),
                        limits: limits(true)
                    },
                    None
                ),
                (
                    ServerMsg::Welcome {
                        protocol: PROTOCOL,
                        daemon: "3f1c9a7e-2b4d-4c8e-9f10-5a6b7c8d9e0f".into(),
                        name: "orders-service".into(),
                        limits: limits(false)
                    },
                    None
                ),
            ]
        ),
        (
            Refused,
            [(
                ServerMsg::Refused {
                    code: FailureCode::ConnectionRefused.as_str(),
                    message: FailureCode::ConnectionRefused
                        .render(&[("reason", "a missing or wrong token")]),
                },
                None,
            )]
        ),
        (
            ToolCall,
            [(
                ServerMsg::ToolCall {
                    id: 1,
                    call_id: 7,
                    provider: "orders".into(),
                    tool: "lookup".into()
                },
                args()
            )]
        ),
        (
            Fetch,
            [
                (
                    ServerMsg::Fetch {
                        id: 2,
                        call_id: 8,
                        execution_id: Some(EXECUTION_ID.into()),
                        method: "POST".into(),
                        url: "https://api.example.com/orders".into(),
                        headers: vec![("content-type".into(), "application/json".into())],
                        has_body: true,
                        redirect: Redirect::Manual,
                    },
                    Some(b"{\"id\":1}".to_vec()),
                ),
                (
                    ServerMsg::Fetch {
                        id: 2,
                        call_id: 9,
                        execution_id: None,
                        method: "GET".into(),
                        url: "https://api.example.com/orders/1".into(),
                        headers: vec![],
                        has_body: false,
                        redirect: Redirect::Follow,
                    },
                    None,
                ),
            ]
        ),
        (
            Done,
            [
                // A result, with logs and the calls that led to it.
                (
                    done(
                        1,
                        true,
                        Ended {
                            logs: vec![
                                log(LogLevel::Log, "looked up 2 orders"),
                                log(LogLevel::Warn, "slow")
                            ],
                            calls: vec![
                                call("lookup", CallStatus::Ok, 4.5),
                                call("cancel", CallStatus::Error, 1.0)
                            ],
                            ..Ended::default()
                        }
                    ),
                    args(),
                ),
                // A program failure at a known place in a module.
                (
                    done(
                        3,
                        false,
                        Ended {
                            error: Some(FailureReport {
                                code: FailureCode::ProgramError.as_str().into(),
                                message: "Uncaught Error: no such order".into(),
                                line: Some(3),
                                column: Some(11),
                                module: Some("./orders.js".into()),
                            }),
                            ..Ended::default()
                        }
                    ),
                    None,
                ),
                // A failure without a place.
                (
                    done(
                        4,
                        false,
                        Ended {
                            error: Some(FailureReport {
                                code: FailureCode::Timeout.as_str().into(),
                                message: FailureCode::Timeout.render(&[("ms", "30000")]),
                                line: None,
                                column: None,
                                module: None,
                            }),
                            ..Ended::default()
                        }
                    ),
                    None,
                ),
                // Retained handles.
                (
                    done(
                        5,
                        false,
                        Ended {
                            grant: Some(Grant {
                                execution_id: EXECUTION_ID.into(),
                                handles: vec!["fetch".into()]
                            }),
                            ..Ended::default()
                        }
                    ),
                    None,
                ),
                // Paused for approval: the payload is the pending calls' arguments.
                (
                    done(
                        6,
                        false,
                        Ended {
                            calls: vec![
                                call("lookup", CallStatus::Replayed, 0.0),
                                call("cancel", CallStatus::Pending, 0.0),
                                call("refund", CallStatus::Denied, 0.0)
                            ],
                            paused: Some(PausedMsg {
                                token: "cm1.eyJ2IjoxfQ.c2ln".into(),
                                pending: vec![PendingMsg {
                                    id: "1".into(),
                                    provider: "orders".into(),
                                    tool: "cancel".into(),
                                    args_bytes: 4
                                }],
                            }),
                            ..Ended::default()
                        }
                    ),
                    args(),
                ),
            ]
        ),
        (
            Approve,
            [(
                ServerMsg::Approve {
                    id: 1,
                    call_id: 10,
                    provider: "orders".into(),
                    tool: "cancel".into()
                },
                args()
            )]
        ),
        (
            Invoked,
            [
                (
                    ServerMsg::Invoked {
                        id: 11,
                        status: 201,
                        status_text: "Created".into(),
                        headers: vec![("content-type".into(), "text/plain".into())],
                        has_body: true,
                    },
                    Some(b"made".to_vec()),
                ),
                (
                    ServerMsg::Invoked {
                        id: 12,
                        status: 204,
                        status_text: String::new(),
                        headers: vec![],
                        has_body: false
                    },
                    None
                ),
            ]
        ),
        (Ack, [(ServerMsg::Ack { id: 13 }, None)]),
        (
            Stats,
            [
                (
                    ServerMsg::Stats {
                        id: 14,
                        counts: DaemonCounts {
                            workers: 4,
                            idle: 2,
                            running: 1,
                            queued: 0,
                            retained: 1,
                            connections: 3,
                            engine: Some(Engine {
                                v8: "15.2.124.1-rusty".into(),
                                sandbox: true
                            }),
                        },
                    },
                    None,
                ),
                (
                    ServerMsg::Stats {
                        id: 15,
                        counts: DaemonCounts::default()
                    },
                    None
                ),
            ]
        ),
        (
            Failed,
            [(
                ServerMsg::failed(
                    16,
                    FailureCode::QueueFull.failure(&[
                        ("bound", "1024"),
                        ("what", "executions"),
                        ("whom", "a worker"),
                        ("advice", "")
                    ])
                ),
                None,
            )]
        ),
        (
            HandlesClosed,
            [(
                ServerMsg::HandlesClosed {
                    execution_id: EXECUTION_ID.into(),
                    reason: "idle"
                },
                None
            )]
        ),
        (
            Error,
            [
                (
                    ServerMsg::protocol_error("request id 17 is already in flight", Some(17)),
                    None
                ),
                (
                    ServerMsg::protocol_error("the message is not JSON", None),
                    None
                ),
            ]
        ),
        (
            Log,
            [(
                ServerMsg::Log {
                    id: 18,
                    entry: log(LogLevel::Error, "could not reach the ledger")
                },
                None
            )]
        ),
    )
}

fn provider(name: &str, tools: Option<&[&str]>, approve: Option<Approve>) -> ProviderMsg {
    ProviderMsg {
        decl: ProviderDecl {
            name: name.into(),
            tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
        },
        approve,
    }
}

fn execute(id: u32, code: &str) -> ExecuteMsg {
    ExecuteMsg {
        id,
        code: code.into(),
        modules: vec![],
        providers: vec![],
        timeout: None,
        memory_limit: None,
        outbound: None,
        cpu_limit: None,
        tool_call_limit: None,
        fetch_limit: None,
        retain_handles: false,
        live_logs: false,
        approval: None,
        tenant: None,
    }
}

fn resume(id: u32) -> ResumeMsg {
    ResumeMsg {
        id,
        token: "cm1.eyJ2IjoxfQ.c2ln".into(),
        decisions: vec![],
        routes: false,
        live_logs: false,
        outbound: None,
        cpu_limit: None,
        tool_call_limit: None,
        fetch_limit: None,
        tenant: None,
    }
}

/// Every client message: the message the daemon reads, and the JSON a client sends for it.
fn client_samples() -> Samples<(ClientMsg, Value)> {
    const CODE: &str = "async () => orders.lookup({ id: 1 })";
    every_variant!(
        ClientMsg,
        (
            Hello,
            [
                (
                    ClientMsg::Hello {
                        protocol: PROTOCOL,
                        client: Some("codemode-executor (node)".into())
                    },
                    json!({ "type": "hello", "protocol": PROTOCOL, "client": "codemode-executor (node)" }),
                ),
                (
                    ClientMsg::Hello {
                        protocol: PROTOCOL,
                        client: None
                    },
                    json!({ "type": "hello", "protocol": PROTOCOL })
                ),
            ]
        ),
        (
            Execute,
            [
                // Every field: callback approvals, a module, routed, budgets, live logs.
                (
                    ClientMsg::Execute(ExecuteMsg {
                        modules: vec![("./orders.js".into(), "export const n = 1;".into())],
                        providers: vec![
                            provider(
                                "orders",
                                Some(&["lookup", "cancel"]),
                                Some(Approve::Tools(vec!["cancel".into()]))
                            ),
                            provider("search", None, Some(Approve::All(true))),
                            provider("clock", Some(&[]), None),
                        ],
                        timeout: Some(5_000),
                        memory_limit: Some(64),
                        outbound: Some(Outbound::Routed),
                        cpu_limit: Some(1_000),
                        tool_call_limit: Some(10),
                        fetch_limit: Some(5),
                        live_logs: true,
                        approval: Some(ApprovalMsg::Callback {
                            timeout: Some(60_000)
                        }),
                        ..execute(1, CODE)
                    }),
                    json!({
                        "type": "execute", "id": 1, "code": CODE,
                        "modules": [["./orders.js", "export const n = 1;"]],
                        "providers": [
                            { "name": "orders", "tools": ["lookup", "cancel"], "approve": ["cancel"] },
                            { "name": "search", "tools": null, "approve": true },
                            { "name": "clock", "tools": [] },
                        ],
                        "timeout": 5000, "memoryLimit": 64, "outbound": "routed",
                        "cpuLimit": 1000, "toolCallLimit": 10, "fetchLimit": 5,
                        "liveLogs": true,
                        "approval": { "mode": "callback", "timeout": 60000 },
                    }),
                ),
                // Interrupt approvals.
                (
                    ClientMsg::Execute(ExecuteMsg {
                        providers: vec![provider(
                            "orders",
                            Some(&["cancel"]),
                            Some(Approve::All(true))
                        )],
                        approval: Some(ApprovalMsg::Interrupt {
                            expires_in: Some(3_600_000)
                        }),
                        ..execute(2, CODE)
                    }),
                    json!({
                        "type": "execute", "id": 2, "code": CODE,
                        "providers": [{ "name": "orders", "tools": ["cancel"], "approve": true }],
                        "approval": { "mode": "interrupt", "expiresIn": 3600000 },
                    }),
                ),
                // A handler to retain.
                (
                    ClientMsg::Execute(ExecuteMsg {
                        retain_handles: true,
                        outbound: Some(Outbound::Native),
                        tenant: Some("acme".into()),
                        ..execute(3, "async () => ({ fetch: () => new Response('ok') })")
                    }),
                    json!({
                        "type": "execute", "id": 3, "code": "async () => ({ fetch: () => new Response('ok') })",
                        "retainHandles": true, "outbound": "native", "tenant": "acme",
                    }),
                ),
                // The least an execute says.
                (
                    ClientMsg::Execute(execute(4, "async () => 1")),
                    json!({ "type": "execute", "id": 4, "code": "async () => 1" })
                ),
            ]
        ),
        (
            ToolResult,
            [
                (
                    ClientMsg::ToolResult {
                        id: 1,
                        call_id: 7,
                        ok: true,
                        message: None,
                        denied: false
                    },
                    json!({ "type": "toolResult", "id": 1, "callId": 7, "ok": true }),
                ),
                (
                    ClientMsg::ToolResult {
                        id: 1,
                        call_id: 8,
                        ok: false,
                        message: Some("no such order".into()),
                        denied: false
                    },
                    json!({ "type": "toolResult", "id": 1, "callId": 8, "ok": false, "message": "no such order" }),
                ),
                (
                    ClientMsg::ToolResult {
                        id: 1,
                        call_id: 9,
                        ok: false,
                        message: Some("The call was denied".into()),
                        denied: true
                    },
                    json!({
                        "type": "toolResult", "id": 1, "callId": 9, "ok": false,
                        "message": "The call was denied", "denied": true,
                    }),
                ),
            ]
        ),
        (
            FetchResult,
            [
                (
                    ClientMsg::FetchResult(FetchResultMsg {
                        id: 2,
                        call_id: 8,
                        ok: true,
                        status: 200,
                        status_text: "OK".into(),
                        headers: vec![("content-type".into(), "application/json".into())],
                        has_body: true,
                        message: None,
                    }),
                    json!({
                        "type": "fetchResult", "id": 2, "callId": 8, "ok": true, "status": 200, "statusText": "OK",
                        "headers": [["content-type", "application/json"]], "hasBody": true,
                    }),
                ),
                (
                    ClientMsg::FetchResult(FetchResultMsg {
                        id: 2,
                        call_id: 9,
                        ok: false,
                        status: 0,
                        status_text: String::new(),
                        headers: vec![],
                        has_body: false,
                        message: Some("blocked by policy".into()),
                    }),
                    json!({ "type": "fetchResult", "id": 2, "callId": 9, "ok": false, "message": "blocked by policy" }),
                ),
            ]
        ),
        (
            Resume,
            [
                (
                    ClientMsg::Resume(ResumeMsg {
                        decisions: vec![
                            DecisionMsg {
                                id: "1".into(),
                                approved: false,
                                reason: Some("not today".into())
                            },
                            DecisionMsg {
                                id: "2".into(),
                                approved: true,
                                reason: None
                            },
                        ],
                        routes: true,
                        live_logs: true,
                        outbound: Some(Outbound::Public),
                        cpu_limit: Some(1_000),
                        tool_call_limit: Some(10),
                        fetch_limit: Some(5),
                        tenant: Some("acme".into()),
                        ..resume(5)
                    }),
                    json!({
                        "type": "resume", "id": 5, "token": "cm1.eyJ2IjoxfQ.c2ln",
                        "decisions": [
                            { "id": "1", "approved": false, "reason": "not today" },
                            { "id": "2", "approved": true },
                        ],
                        "routes": true, "liveLogs": true, "outbound": "public",
                        "cpuLimit": 1000, "toolCallLimit": 10, "fetchLimit": 5, "tenant": "acme",
                    }),
                ),
                (
                    ClientMsg::Resume(resume(6)),
                    json!({ "type": "resume", "id": 6, "token": "cm1.eyJ2IjoxfQ.c2ln" })
                ),
            ]
        ),
        (
            Decision,
            [
                (
                    ClientMsg::Decision {
                        id: 1,
                        call_id: 10,
                        approved: false,
                        reason: Some("too large".into())
                    },
                    json!({ "type": "decision", "id": 1, "callId": 10, "approved": false, "reason": "too large" }),
                ),
                (
                    ClientMsg::Decision {
                        id: 1,
                        call_id: 11,
                        approved: true,
                        reason: None
                    },
                    json!({ "type": "decision", "id": 1, "callId": 11, "approved": true })
                ),
            ]
        ),
        (
            Invoke,
            [
                (
                    ClientMsg::Invoke {
                        id: 11,
                        execution_id: EXECUTION_ID.into(),
                        handle: "fetch".into(),
                        method: "POST".into(),
                        url: "https://handler.internal/orders".into(),
                        headers: vec![("content-type".into(), "text/plain".into())],
                        has_body: true,
                        tenant: Some("acme".into()),
                    },
                    json!({
                        "type": "invoke", "id": 11, "executionId": EXECUTION_ID, "handle": "fetch", "method": "POST",
                        "url": "https://handler.internal/orders", "headers": [["content-type", "text/plain"]], "hasBody": true,
                        "tenant": "acme",
                    }),
                ),
                (
                    ClientMsg::Invoke {
                        id: 12,
                        execution_id: EXECUTION_ID.into(),
                        handle: "fetch".into(),
                        method: "GET".into(),
                        url: "https://handler.internal/".into(),
                        headers: vec![],
                        has_body: false,
                        tenant: None,
                    },
                    json!({ "type": "invoke", "id": 12, "executionId": EXECUTION_ID, "handle": "fetch", "method": "GET", "url": "https://handler.internal/" }),
                ),
            ]
        ),
        (
            CloseHandles,
            [
                (
                    ClientMsg::CloseHandles {
                        id: 13,
                        execution_id: EXECUTION_ID.into(),
                        tenant: Some("acme".into()),
                    },
                    json!({ "type": "closeHandles", "id": 13, "executionId": EXECUTION_ID, "tenant": "acme" }),
                ),
                (
                    ClientMsg::CloseHandles {
                        id: 15,
                        execution_id: EXECUTION_ID.into(),
                        tenant: None,
                    },
                    json!({ "type": "closeHandles", "id": 15, "executionId": EXECUTION_ID }),
                )
            ]
        ),
        (
            Stats,
            [(
                ClientMsg::Stats { id: 14 },
                json!({ "type": "stats", "id": 14 })
            )]
        ),
        (
            Abort,
            [(
                ClientMsg::Abort { id: 1 },
                json!({ "type": "abort", "id": 1 })
            )]
        ),
    )
}

/// The JSON header of one message as the daemon sends it.
fn header(message: Message) -> Value {
    match message {
        Message::Text(text) => serde_json::from_str(text.as_str()).expect("a text message is JSON"),
        Message::Binary(bytes) => {
            let len = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
            serde_json::from_slice(&bytes[4..4 + len]).expect("a binary message's header is JSON")
        }
        other => panic!("the daemon encoded a message as {other:?}"),
    }
}

/// A message's `type`.
fn kind(json: &Value) -> String {
    json["type"]
        .as_str()
        .unwrap_or_else(|| panic!("{json} has no type"))
        .to_string()
}

/// The file's contents, as the samples make it.
fn fixture() -> String {
    let mut server = Map::new();
    for (name, samples) in server_samples() {
        let jsons: Vec<Value> = samples
            .iter()
            .map(|(m, payload)| {
                let json = header(wire::encode(m, payload.as_deref()));
                // The header is the same in either form.
                assert_eq!(json, header(wire::encode(m, None)), "{name}");
                json
            })
            .collect();
        let kind = kind(&jsons[0]);
        assert!(
            jsons.iter().all(|j| self::kind(j) == kind),
            "{name}'s samples differ in type"
        );
        assert!(
            server.insert(kind.clone(), Value::Array(jsons)).is_none(),
            "two variants send {kind}"
        );
    }
    let mut client = Map::new();
    for (name, samples) in client_samples() {
        let kind = samples[0].0.type_name().to_string();
        for (m, json) in &samples {
            assert_eq!(self::kind(json), m.type_name(), "{name}");
        }
        let jsons = samples.into_iter().map(|(_, json)| json).collect();
        assert!(
            client.insert(kind.clone(), Value::Array(jsons)).is_none(),
            "two variants read {kind}"
        );
    }
    let file = json!({
        "//": "Samples of every executor protocol message, written by crates/daemon/tests/messages_fixtures.rs (UPDATE_FIXTURES=1 cargo test --release -p codemode-daemon --test messages_fixtures): server as the daemon sends them, client as the daemon reads them. A field in every sample of its kind is always sent (server) or required (client). __test__/wire-messages.test.mjs holds lib/remote/messages.js and lib/connect.js to them.",
        "protocol": PROTOCOL,
        "server": server,
        "client": client,
    });
    serde_json::to_string_pretty(&file).unwrap() + "\n"
}

fn updating() -> bool {
    std::env::var_os("UPDATE_FIXTURES").is_some_and(|v| v == "1")
}

/// The committed file (while it is being rewritten, what it will hold: the tests run at once).
fn committed() -> Value {
    if updating() {
        return serde_json::from_str(&fixture()).unwrap();
    }
    let text = std::fs::read_to_string(FIXTURE)
        .unwrap_or_else(|e| panic!("{FIXTURE}: {e} (UPDATE_FIXTURES=1 writes it)"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{FIXTURE} is not JSON: {e}"))
}

#[test]
fn the_committed_fixtures_are_the_messages_as_sent() {
    let made = fixture();
    if updating() {
        std::fs::write(FIXTURE, &made).unwrap_or_else(|e| panic!("{FIXTURE}: {e}"));
        return;
    }
    let on_disk = std::fs::read_to_string(FIXTURE).unwrap_or_default();
    if on_disk != made {
        let ours: Value = serde_json::from_str(&made).unwrap();
        let theirs: Value = serde_json::from_str(&on_disk).unwrap_or(Value::Null);
        let mut differ = Vec::new();
        for side in ["server", "client"] {
            for (kind, samples) in ours[side].as_object().unwrap() {
                if theirs[side][kind] != *samples {
                    differ.push(format!("{side}.{kind}"));
                }
            }
            for kind in theirs[side].as_object().into_iter().flat_map(|o| o.keys()) {
                if ours[side].get(kind).is_none() {
                    differ.push(format!("{side}.{kind} (no such message)"));
                }
            }
        }
        panic!(
            "{FIXTURE} is not the messages as the daemon sends and reads them (differing: {}). \
             If the change is meant, run `UPDATE_FIXTURES=1 cargo test --release -p \
             codemode-daemon --test messages_fixtures`, then make lib/remote/messages.js and \
             docs/protocol.md agree (npx vitest run __test__/wire-messages.test.mjs)",
            if differ.is_empty() {
                "formatting".into()
            } else {
                differ.join(", ")
            }
        );
    }
}

/// The committed client samples, read as the daemon reads them (text and binary form), are
/// exactly the messages they were made from.
#[test]
fn the_client_fixtures_read_back_as_their_messages() {
    let file = committed();
    for (name, samples) in client_samples() {
        let kind = samples[0].0.type_name();
        let on_disk = file["client"][kind]
            .as_array()
            .unwrap_or_else(|| panic!("{FIXTURE} has no client.{kind}"));
        assert_eq!(on_disk.len(), samples.len(), "client.{kind}'s samples");
        for ((m, _), json) in samples.iter().zip(on_disk) {
            let text = json.to_string();
            assert_eq!(wire::decode_text(&text).as_ref(), Ok(m), "{name}: {text}");
            let mut framed = (text.len() as u32).to_be_bytes().to_vec();
            framed.extend_from_slice(text.as_bytes());
            framed.extend_from_slice(b"body");
            assert_eq!(
                wire::decode_binary(&framed),
                Ok((m.clone(), b"body".to_vec())),
                "{name}"
            );
        }
    }
}

/// A field in every sample of a client message's kind is one the daemon requires (the message
/// without it is refused); any other may be left out. What `wire-messages.test.mjs` reads as
/// required is so.
#[test]
fn a_client_field_in_every_sample_is_required_and_no_other() {
    let file = committed();
    for (kind, samples) in file["client"].as_object().unwrap() {
        let samples = samples.as_array().unwrap();
        let in_every = |key: &str| samples.iter().all(|s| s.get(key).is_some());
        for sample in samples {
            for key in sample.as_object().unwrap().keys() {
                if key == "type" {
                    continue;
                }
                let mut without = sample.clone();
                without.as_object_mut().unwrap().remove(key);
                let read = wire::decode_text(&without.to_string());
                if in_every(key) {
                    assert!(
                        read.is_err(),
                        "client.{kind} without `{key}` was taken: {without}"
                    );
                } else {
                    assert!(
                        read.is_ok(),
                        "client.{kind} without `{key}` was refused: {read:?}"
                    );
                }
            }
        }
    }
}

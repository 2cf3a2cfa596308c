//! A real `Server` with the real worker binary (built by `npm run build` into target/release,
//! or named by CODEMODE_WORKER_PATH), driven over real sockets by a tokio-tungstenite client.
//! One file: every scenario uses the same client helpers (connect, send, recv, close codes) and
//! the same daemon setup.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_daemon::codemode_pool::PoolOptions;
use codemode_daemon::wire::PROTOCOL;
use codemode_daemon::{Event, Server, ServerOptions};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

type Ws = WebSocketStream<TcpStream>;

const BOUND: Duration = Duration::from_secs(20);

fn worker_path() -> PathBuf {
    let path = match std::env::var_os("CODEMODE_WORKER_PATH") {
        Some(p) => PathBuf::from(p),
        None => {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/codemode-worker")
        }
    };
    assert!(
        path.is_file(),
        "{} is missing: run `npm run build` first (or point CODEMODE_WORKER_PATH at the worker)",
        path.display()
    );
    path
}

struct Daemon {
    server: Server,
    events: Arc<Mutex<Vec<Event>>>,
}

fn start(token: Option<&str>, hook: bool, max_in_flight: u32) -> Daemon {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let server = Server::start(
        ServerOptions {
            host: "127.0.0.1".into(),
            port: 0,
            token: token.map(String::from),
            tenants: Vec::new(),
            pool: PoolOptions {
                workers: 1,
                worker_path: worker_path(),
                queue_bound: 8,
                timeout_ms: 10_000,
                memory_limit_mib: 64,
                handles_idle_timeout_ms: 300_000,
                approval_key: None,
                hops: false,
                tenants: Default::default(),
            },
            max_in_flight,
            hook,
            allow_origins: Vec::new(),
            allow_hosts: Vec::new(),
            bounds: Default::default(),
            outbound: codemode_daemon::wire::Outbound::Public,
            budgets: Default::default(),
            approval_timeout_ms: 300_000,
        },
        Box::new(move |e| seen.lock().unwrap().push(e)),
    )
    .expect("the daemon starts");
    Daemon { server, events }
}

/// What `pick` takes from each event recorded so far.
fn recorded<T>(events: &Mutex<Vec<Event>>, pick: impl FnMut(&Event) -> Option<T>) -> Vec<T> {
    events.lock().unwrap().iter().filter_map(pick).collect()
}

async fn connect_with(port: u16, headers: &[(&'static str, String)]) -> Ws {
    let mut req = format!("ws://127.0.0.1:{port}/")
        .into_client_request()
        .unwrap();
    for (k, v) in headers {
        req.headers_mut().insert(*k, v.parse().unwrap());
    }
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let config = WebSocketConfig::default()
        .max_message_size(Some(128 << 20))
        .max_frame_size(Some(128 << 20));
    let (ws, _) = tokio_tungstenite::client_async_with_config(req, tcp, Some(config))
        .await
        .expect("the upgrade succeeds");
    ws
}

async fn connect(port: u16) -> Ws {
    let mut ws = connect_with(port, &[]).await;
    send(
        &mut ws,
        json!({"type": "hello", "protocol": PROTOCOL, "client": "test"}),
    )
    .await;
    let (welcome, _) = recv(&mut ws).await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    ws
}

async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::text(v.to_string())).await.unwrap();
}

async fn send_binary(ws: &mut Ws, v: Value, payload: &[u8]) {
    let header = v.to_string().into_bytes();
    let mut bytes = (header.len() as u32).to_be_bytes().to_vec();
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(payload);
    ws.send(Message::binary(bytes)).await.unwrap();
}

/// The next protocol message (header and payload); panics on a close.
async fn recv(ws: &mut Ws) -> (Value, Vec<u8>) {
    match next(ws).await {
        Message::Text(t) => (serde_json::from_str(&t).unwrap(), Vec::new()),
        Message::Binary(b) => {
            let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
            let header = serde_json::from_slice(&b[4..4 + len]).unwrap();
            (header, b[4 + len..].to_vec())
        }
        other => panic!("expected a message, got {other:?}"),
    }
}

async fn next(ws: &mut Ws) -> Message {
    loop {
        let m = tokio::time::timeout(BOUND, ws.next())
            .await
            .expect("a message in time")
            .expect("the connection is open")
            .expect("a readable message");
        if !matches!(m, Message::Ping(_) | Message::Pong(_)) {
            return m;
        }
    }
}

async fn close_code(ws: &mut Ws) -> u16 {
    match next(ws).await {
        Message::Close(Some(f)) => u16::from(f.code),
        other => panic!("expected a close, got {other:?}"),
    }
}

/// A plain HTTP request; the whole answer.
async fn http(port: u16, request: &str) -> String {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    tokio::time::timeout(BOUND, tcp.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    out
}

fn kv_execute(id: u32) -> Value {
    json!({
        "type": "execute", "id": id,
        "code": "async () => (await kv.get(1)) + 1",
        "providers": [{"name": "kv", "tools": ["get"]}],
        "outbound": "blocked", "retainHandles": false,
    })
}

/// V8 wire format: header (0xFF 0x0F), then 'I' (int32, zigzag varint).
fn v8_int(n: u8) -> Vec<u8> {
    vec![0xFF, 0x0F, b'I', n * 2]
}

#[tokio::test]
async fn a_client_runs_programs_whose_tool_calls_it_answers() {
    let d = start(None, false, 1024);
    let port = d.server.port();
    let health = http(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(health.starts_with("HTTP/1.1 200 OK\r\n"), "{health}");
    let body: Value = serde_json::from_str(health.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["daemon"], d.server.daemon_id());
    assert_eq!(body["protocol"], PROTOCOL);
    assert_eq!(body["workers"], 1);
    assert_eq!(body["connections"], 0);
    let other = http(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(other.starts_with("HTTP/1.1 404 "), "{other}");

    let mut ws = connect_with(port, &[]).await;
    send(&mut ws, json!({"type": "hello", "protocol": PROTOCOL})).await;
    let (welcome, _) = recv(&mut ws).await;
    assert_eq!(welcome["daemon"], d.server.daemon_id());
    assert!(welcome["name"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(welcome["limits"]["maxMessageBytes"], 20 << 20);
    assert_eq!(welcome["limits"]["maxInFlight"], 1024);
    // The daemon's defaults are ceilings too, and it says which.
    assert_eq!(welcome["limits"]["timeout"], 10_000);
    assert_eq!(welcome["limits"]["memoryLimit"], 64);

    send(&mut ws, kv_execute(1)).await;
    let (call, args) = recv(&mut ws).await;
    assert_eq!(
        (&call["type"], &call["id"], &call["provider"], &call["tool"]),
        (&json!("toolCall"), &json!(1), &json!("kv"), &json!("get"))
    );
    assert!(!args.is_empty(), "the V8-serialized arguments");
    let answer = json!({"type": "toolResult", "id": 1, "callId": call["callId"], "ok": true});
    send_binary(&mut ws, answer, &v8_int(41)).await;
    let (done, result) = recv(&mut ws).await;
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["hasResult"], true);
    assert_eq!(done["stats"]["toolCalls"], 1);
    assert_eq!(result, v8_int(42));

    // A garbage text frame gets an error; the connection still works.
    ws.send(Message::text("{not json")).await.unwrap();
    let (error, _) = recv(&mut ws).await;
    assert_eq!(error["type"], "error");
    assert_eq!(error["code"], "PROTOCOL_ERROR");
    assert!(
        error["message"].as_str().unwrap().contains("not JSON"),
        "{error}"
    );
    send(&mut ws, json!({"type": "frobnicate", "id": 3})).await;
    let (error, _) = recv(&mut ws).await;
    assert_eq!(
        (&error["code"], &error["id"]),
        (&json!("PROTOCOL_ERROR"), &json!(3))
    );
    send(&mut ws, json!({"type": "stats", "id": 2})).await;
    let (stats, _) = recv(&mut ws).await;
    assert_eq!(
        (&stats["type"], &stats["connections"]),
        (&json!("stats"), &json!(1))
    );

    // A duplicate id in flight is an error naming it; the first request goes on.
    send(&mut ws, kv_execute(5)).await;
    let (call, _) = recv(&mut ws).await;
    send(&mut ws, kv_execute(5)).await;
    let (error, _) = recv(&mut ws).await;
    assert_eq!((&error["type"], &error["id"]), (&json!("error"), &json!(5)));
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("already in flight"));
    let answer = json!({"type": "toolResult", "id": 5, "callId": call["callId"], "ok": false, "message": "nope"});
    send(&mut ws, answer).await;
    let (done, _) = recv(&mut ws).await;
    assert_eq!(done["error"]["code"], "PROGRAM_ERROR", "{done}");
    assert!(done["error"]["message"].as_str().unwrap().contains("nope"));
    // An answer for a call nothing waits for is dropped silently.
    let stale = json!({"type": "toolResult", "id": 5, "callId": 999, "ok": true});
    send_binary(&mut ws, stale, &v8_int(1)).await;
    send(
        &mut ws,
        json!({"type": "closeHandles", "id": 6, "executionId": "none"}),
    )
    .await;
    let (failed, _) = recv(&mut ws).await;
    assert_eq!(
        (&failed["type"], &failed["code"]),
        (&json!("failed"), &json!("HANDLES_CLOSED"))
    );

    // A client that leaves mid-run: the run stops, the daemon serves on.
    send(&mut ws, kv_execute(7)).await;
    let (call, _) = recv(&mut ws).await;
    assert_eq!(call["type"], "toolCall");
    drop(ws);
    let until = tokio::time::Instant::now() + BOUND;
    loop {
        let s = d.server.stats();
        if s.running == 0 && s.connections == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "the abandoned run stops: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut ws = connect(port).await;
    send(
        &mut ws,
        json!({"type": "execute", "id": 1, "code": "() => 21", "outbound": "blocked"}),
    )
    .await;
    let (done, result) = recv(&mut ws).await;
    assert_eq!(done["type"], "done");
    assert_eq!(result, v8_int(21));

    // Drain: health says so, new executions are refused, and the connection closes with 1001.
    d.server.drain(Duration::from_secs(2));
    let health = http(port, "GET /healthz HTTP/1.1\r\n\r\n").await;
    assert!(health.starts_with("HTTP/1.1 503 "), "{health}");
    assert!(health.contains("\"status\":\"draining\""), "{health}");
    send(&mut ws, kv_execute(2)).await;
    let (failed, _) = recv(&mut ws).await;
    assert_eq!(
        (&failed["code"], &failed["retryable"]),
        (&json!("DRAINING"), &json!(true))
    );
    assert_eq!(close_code(&mut ws).await, 1001);
    let until = tokio::time::Instant::now() + BOUND;
    while !d.events.lock().unwrap().contains(&Event::Drained) {
        assert!(tokio::time::Instant::now() < until, "drained in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(d.server.worker_pids().is_empty());
    let log = recorded(&d.events, |e| match e {
        Event::Log(l) => Some(l.clone()),
        _ => None,
    });
    assert!(
        log[0].starts_with("listening on ws://127.0.0.1:"),
        "{log:?}"
    );
    assert!(
        log.iter().any(|l| l.contains("opened from 127.0.0.1:")),
        "{log:?}"
    );
    assert!(log.iter().any(|l| l.contains("protocol error")), "{log:?}");
    assert!(
        log.iter()
            .any(|l| l.contains("1 execution(s) in flight stopped")),
        "{log:?}"
    );
}

#[tokio::test]
async fn an_oversize_message_gets_an_error_and_close_1009() {
    let d = start(None, false, 1024);
    let mut ws = connect(d.server.port()).await;
    ws.send(Message::binary(vec![0u8; (64 << 20) + 1]))
        .await
        .unwrap();
    let (error, _) = recv(&mut ws).await;
    assert_eq!(error["code"], "PROTOCOL_ERROR");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("maxMessageBytes"),
        "{error}"
    );
    assert_eq!(close_code(&mut ws).await, 1009);
    // The daemon serves on.
    let mut ws = connect(d.server.port()).await;
    send(&mut ws, json!({"type": "stats", "id": 1})).await;
    assert_eq!(recv(&mut ws).await.0["type"], "stats");
}

#[tokio::test]
async fn the_token_refuses_before_any_message_and_admits_either_way() {
    let d = start(Some("s3cret-s3cret-s3cret"), false, 1);
    let port = d.server.port();
    let mut ws = connect_with(port, &[("authorization", "Bearer wrong".into())]).await;
    let (refused, _) = recv(&mut ws).await;
    assert_eq!(
        (&refused["type"], &refused["code"]),
        (&json!("refused"), &json!("CONNECTION_REFUSED"))
    );
    assert!(
        refused["message"].as_str().unwrap().contains("token"),
        "{refused}"
    );
    assert_eq!(close_code(&mut ws).await, 4001);
    let mut ws = connect_with(port, &[]).await;
    assert_eq!(recv(&mut ws).await.0["type"], "refused");
    assert_eq!(close_code(&mut ws).await, 4001);
    // The subprotocol form: the token in base64url, no padding.
    let offered =
        "codemode-executor, codemode-executor.token.czNjcmV0LXMzY3JldC1zM2NyZXQ".to_string();
    let mut ws = connect_with(port, &[("sec-websocket-protocol", offered)]).await;
    send(&mut ws, json!({"type": "hello", "protocol": PROTOCOL})).await;
    assert_eq!(recv(&mut ws).await.0["type"], "welcome");
    // maxInFlight 1: a second request while one waits is refused, retryably.
    send(&mut ws, kv_execute(1)).await;
    let (call, _) = recv(&mut ws).await;
    send(&mut ws, json!({"type": "stats", "id": 2})).await;
    let (failed, _) = recv(&mut ws).await;
    assert_eq!(
        (&failed["code"], &failed["retryable"]),
        (&json!("IN_FLIGHT_LIMIT"), &json!(true))
    );
    let answer = json!({"type": "toolResult", "id": 1, "callId": call["callId"], "ok": true});
    send_binary(&mut ws, answer, &v8_int(1)).await;
    assert_eq!(recv(&mut ws).await.0["type"], "done");
    let mut ws = connect_with(
        port,
        &[("authorization", "Bearer s3cret-s3cret-s3cret".into())],
    )
    .await;
    send(&mut ws, json!({"type": "hello", "protocol": 99})).await;
    let (error, _) = recv(&mut ws).await;
    assert_eq!(error["code"], "PROTOCOL_MISMATCH");
    assert!(
        error["message"].as_str().unwrap().contains("protocol 99"),
        "{error}"
    );
    assert_eq!(close_code(&mut ws).await, 4002);
}

#[tokio::test]
async fn the_hook_names_or_refuses_each_connection() {
    let d = start(None, true, 1024);
    let port = d.server.port();
    let server = Arc::new(d.server);
    let events = d.events.clone();
    // The host's side of the hook: the first connection is named, the second refused.
    let answering = {
        let server = server.clone();
        tokio::spawn(async move {
            let mut answered = 0;
            while answered < 2 {
                let connections = recorded(&events, |e| match e {
                    Event::Connection(c) => Some(c.clone()),
                    _ => None,
                });
                for c in connections.into_iter().skip(answered) {
                    assert_eq!(c.path, "/");
                    assert_eq!(c.remote_address, "127.0.0.1");
                    if answered == 0 {
                        server.admit(c.token, Some("alice".into()), None);
                    } else {
                        server.admit(c.token, None, Some("not today".into()));
                    }
                    answered += 1;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let mut ws = connect_with(port, &[]).await;
    send(&mut ws, json!({"type": "hello", "protocol": PROTOCOL})).await;
    let (welcome, _) = recv(&mut ws).await;
    assert_eq!(welcome["name"], "alice");
    let mut ws = connect_with(port, &[]).await;
    let (refused, _) = recv(&mut ws).await;
    assert!(
        refused["message"].as_str().unwrap().contains("not today"),
        "{refused}"
    );
    assert_eq!(close_code(&mut ws).await, 4003);
    answering.await.unwrap();
}

#[tokio::test]
async fn a_retained_handler_fetches_through_its_granting_connection_until_it_closes() {
    let d = start(None, false, 1024);
    let port = d.server.port();
    let mut owner = connect(port).await;
    let code = "async () => ({ fetch: async () => { const r = await fetch('https://up.test/a', { method: 'POST', body: 'hi' }); return new Response(r.status + ' ' + (await r.text())) } })";
    let execute = json!({"type": "execute", "id": 1, "code": code, "outbound": "routed", "retainHandles": true});
    send(&mut owner, execute).await;
    let (done, _) = recv(&mut owner).await;
    assert_eq!(done["type"], "done", "{done}");
    let execution_id = done["grant"]["executionId"].as_str().unwrap().to_string();
    assert_eq!(done["grant"]["handles"], json!(["fetch"]));
    // Another connection invokes; the handler's fetch comes back to the owner.
    let mut other = connect(port).await;
    let invoke = json!({"type": "invoke", "id": 1, "executionId": execution_id, "handle": "fetch",
                        "method": "GET", "url": "https://h.test/", "headers": [], "hasBody": false});
    send(&mut other, invoke.clone()).await;
    let (fetch, body) = recv(&mut owner).await;
    assert_eq!(fetch["type"], "fetch", "{fetch}");
    assert_eq!(
        (&fetch["id"], &fetch["method"]),
        (&json!(1), &json!("POST"))
    );
    assert_eq!(fetch["url"], "https://up.test/a");
    assert_eq!(fetch["executionId"], json!(execution_id));
    assert_eq!(
        (&fetch["hasBody"], body.as_slice()),
        (&json!(true), &b"hi"[..])
    );
    let answer = json!({"type": "fetchResult", "id": 1, "callId": fetch["callId"], "ok": true,
                        "status": 201, "statusText": "Created", "headers": [], "hasBody": true});
    send_binary(&mut owner, answer, b"up").await;
    let (invoked, body) = recv(&mut other).await;
    assert_eq!(
        (&invoked["type"], &invoked["status"]),
        (&json!("invoked"), &json!(200)),
        "{invoked}"
    );
    assert_eq!(body, b"201 up");
    // Once the owner is gone, the handler's fetch rejects inside the sandbox with CALLER_GONE.
    drop(owner);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut invoke = invoke;
    invoke["id"] = json!(2);
    send(&mut other, invoke).await;
    let (failed, _) = recv(&mut other).await;
    assert_eq!(
        (&failed["type"], &failed["code"]),
        (&json!("failed"), &json!("HANDLER_ERROR")),
        "{failed}"
    );
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("has disconnected"),
        "{failed}"
    );
    // Any connection may close it (it holds the only worker); the owner is gone, so no notice.
    let close = json!({"type": "closeHandles", "id": 3, "executionId": execution_id});
    send(&mut other, close).await;
    assert_eq!(recv(&mut other).await.0, json!({"type": "ack", "id": 3}));
    // A new retained execution ends with the drain: its owner hears pool-closed, then 1001.
    let execute = json!({"type": "execute", "id": 4, "code": code, "outbound": "routed", "retainHandles": true});
    send(&mut other, execute).await;
    let (done, _) = recv(&mut other).await;
    let execution_id = done["grant"]["executionId"].clone();
    d.server.drain(Duration::from_secs(2));
    let (closed, _) = recv(&mut other).await;
    assert_eq!(
        closed,
        json!({"type": "handlesClosed", "executionId": execution_id, "reason": "pool-closed"})
    );
    assert_eq!(close_code(&mut other).await, 1001);
}

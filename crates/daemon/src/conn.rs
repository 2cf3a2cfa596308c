//! One connection's task: it reads the client's messages, answers them, and writes what the
//! pool reports for this connection's executions (tool calls, routed fetches, completions,
//! closed handles), which pool threads hand over through an [`Outbox`]: never blocking a pool
//! thread, bounded in the bytes it holds for a client that does not read.
//!
//! One file for one state machine: `Conn` holds a connection's ids in flight, its calls
//! waiting for an answer and the grants it holds, and every step of its life (hello, each
//! request, each pool event, the calls it leaves when it ends) reads and changes those same
//! tables; the `Outbox` and `ExecHost` beside it are the pool's side of the same events.
//! Each message's shape and range checks live in `wire`, the HTTP gate in `http`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use codemode_pool::protocol::{
    limits, Failure, FailureCode, LogEntry, RunOutcome, WireRequest, WireResponse,
};
use codemode_pool::{CloseReason, Completion, Decision, FetchCall, Host, Pool, ToolCall};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::wire::{self, ClientMsg, ExecuteMsg, FetchResultMsg, ResumeMsg, ServerMsg};
use crate::Shared;

pub(crate) type Ws = WebSocketStream<TcpStream>;

/// How long a closing connection waits for the client to close its side.
const LINGER: Duration = Duration::from_secs(2);
/// How long a write may wait for the client to read before the connection is closed.
const WRITE_BOUND: Duration = Duration::from_secs(30);

/// The sending side of a connection's queue of pool events, shared by the pool threads that
/// report for its executions. It never blocks: it counts the bytes queued and not yet taken
/// by the connection's task, and past [`crate::Bounds::max_queued_bytes`] it refuses the event
/// (the caller answers it as for a connection that is gone) and wakes the task to close.
#[derive(Clone)]
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<ConnEvent>,
    queued: Arc<AtomicUsize>,
    limit: usize,
    overflow: Arc<tokio::sync::Notify>,
}

impl Outbox {
    pub(crate) fn new(limit: usize) -> (Outbox, mpsc::UnboundedReceiver<ConnEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let outbox = Outbox {
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
            limit,
            overflow: Arc::new(tokio::sync::Notify::new()),
        };
        (outbox, rx)
    }

    pub(crate) fn send(&self, ev: ConnEvent) -> Result<(), Box<ConnEvent>> {
        let size = ev.size();
        let before = self.queued.fetch_add(size, Ordering::AcqRel);
        if before.saturating_add(size) > self.limit && !matches!(ev, ConnEvent::Shutdown) {
            self.queued.fetch_sub(size, Ordering::AcqRel);
            self.overflow.notify_one();
            return Err(Box::new(ev));
        }
        self.tx.send(ev).map_err(|mpsc::error::SendError(ev)| {
            self.queued.fetch_sub(size, Ordering::AcqRel);
            Box::new(ev)
        })
    }

    /// The task took `ev` off the queue.
    fn taken(&self, ev: &ConnEvent) {
        self.queued.fetch_sub(ev.size(), Ordering::AcqRel);
    }
}

/// What pool threads (and the drain) hand to a connection's task.
pub(crate) enum ConnEvent {
    ToolCall {
        id: u32,
        call: ToolCall,
        /// The run's argument bytes in flight, which the answer gives back.
        held: Arc<AtomicUsize>,
    },
    Fetch {
        id: u32,
        call: FetchCall,
    },
    /// A call of a callback-mode run for the client's `decide`.
    Approve {
        id: u32,
        request: ToolCall,
    },
    Done {
        id: u32,
        exec_id: u64,
        result: Result<RunOutcome, Failure>,
    },
    Invoked {
        id: u32,
        result: Result<WireResponse, Failure>,
    },
    HandlesClosed {
        execution_id: String,
        reason: CloseReason,
    },
    /// A console entry of a run that asked for live logs.
    Log {
        id: u32,
        entry: LogEntry,
    },
    /// The daemon stopped: close with 1001 (after everything queued before this).
    Shutdown,
}

impl ConnEvent {
    /// The bytes it holds while queued (its payloads, plus a fixed share for the rest).
    fn size(&self) -> usize {
        256 + match self {
            ConnEvent::ToolCall { call, .. } => {
                call.args.len() + call.provider.len() + call.tool.len()
            }
            ConnEvent::Fetch { call, .. } => {
                let r = &call.request;
                r.url.len() + headers_len(&r.headers) + r.body.as_ref().map_or(0, Vec::len)
            }
            ConnEvent::Approve { request: r, .. } => r.args.len() + r.provider.len() + r.tool.len(),
            ConnEvent::Done { result, .. } => result.as_ref().map_or(0, |o| {
                o.result.as_ref().map_or(0, Vec::len)
                    + o.logs.iter().map(|l| l.message.len()).sum::<usize>()
                    + o.paused.as_ref().map_or(0, |p| {
                        p.token.len() + p.pending.iter().map(|c| c.args.len()).sum::<usize>()
                    })
            }),
            ConnEvent::Invoked { result, .. } => result.as_ref().map_or(0, |r| {
                headers_len(&r.headers) + r.body.as_ref().map_or(0, Vec::len)
            }),
            ConnEvent::Log { entry, .. } => entry.message.len(),
            ConnEvent::HandlesClosed { .. } | ConnEvent::Shutdown => 0,
        }
    }
}

fn headers_len(headers: &[(String, String)]) -> usize {
    headers.iter().map(|(k, v)| k.len() + v.len() + 4).sum()
}

/// The most of a client's own text (a bad message's detail, its client name) the daemon
/// repeats in its log and its answer.
const ECHO_CHARS: usize = 512;

/// `text` cut to [`ECHO_CHARS`] characters, saying how much was cut.
fn echo(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(ECHO_CHARS) {
        None => text.into(),
        Some((at, _)) => format!("{}... [{} more bytes cut]", &text[..at], text.len() - at).into(),
    }
}

/// The text a call rejects with inside the sandbox once its connection is gone.
fn caller_gone(what: &str) -> String {
    FailureCode::CallerGone.render(&[("what", what)])
}

/// The denial of a call whose `decide` went with its connection.
fn nobody_decides() -> Decision {
    Decision {
        approved: false,
        reason: Some(caller_gone("this approval")),
    }
}

/// The pool's host for one execution: everything goes to the connection its `execute` came
/// on. Once that connection is gone, tool calls and routed fetches reject at once.
struct ExecHost {
    id: u32,
    tx: Outbox,
    pool: Pool,
    /// Argument bytes of this run's tool calls sent to the client and not yet answered.
    held: Arc<AtomicUsize>,
}

impl Host for ExecHost {
    fn tool_call(&self, call: ToolCall) {
        // The same budget the client holds a run to (limits::TOOL_BYTES_IN_FLIGHT), applied
        // before the arguments are queued for the connection: a run that floods its host with
        // large calls is refused here, inside its sandbox, instead of filling the connection's
        // queue (which would drop the connection and every run on it).
        let size = call.args.len();
        let limit = limits::TOOL_BYTES_IN_FLIGHT;
        let held = self.held.load(Ordering::Acquire);
        if held > 0 && held.saturating_add(size) > limit {
            let text = FailureCode::ToolBytesInFlight.render(&[
                ("provider", &call.provider),
                ("tool", &call.tool),
                ("size", &size.to_string()),
                ("held", &held.to_string()),
                ("limit", &limit.to_string()),
            ]);
            self.pool
                .answer_tool_call(call.exec_id, call.call_id, false, text.into_bytes());
            return;
        }
        self.held.fetch_add(size, Ordering::AcqRel);
        let ev = ConnEvent::ToolCall {
            id: self.id,
            call,
            held: self.held.clone(),
        };
        if let Err(ev) = self.tx.send(ev) {
            gone(&self.pool, *ev);
        }
    }

    fn fetch(&self, call: FetchCall) {
        if let Err(ev) = self.tx.send(ConnEvent::Fetch { id: self.id, call }) {
            gone(&self.pool, *ev);
        }
    }

    fn handles_closed(&self, execution_id: &str, reason: CloseReason) {
        let _ = self.tx.send(ConnEvent::HandlesClosed {
            execution_id: execution_id.to_string(),
            reason,
        });
    }

    fn log(&self, _exec_id: u64, entry: LogEntry) {
        // Gone: nobody reads it (the run is being stopped).
        let _ = self.tx.send(ConnEvent::Log { id: self.id, entry });
    }

    fn approve(&self, request: ToolCall) {
        let ev = ConnEvent::Approve {
            id: self.id,
            request,
        };
        if let Err(ev) = self.tx.send(ev) {
            gone(&self.pool, *ev);
        }
    }
}

/// A call that reached a connection that is gone: it rejects inside the sandbox, and a run
/// that made a tool call is stopped (nobody waits for it).
fn gone(pool: &Pool, ev: ConnEvent) {
    match ev {
        ConnEvent::ToolCall { call, .. } => {
            let text = caller_gone("this tool call").into_bytes();
            pool.answer_tool_call(call.exec_id, call.call_id, false, text);
            pool.abandon(call.exec_id);
        }
        ConnEvent::Fetch { call, .. } => {
            pool.answer_fetch(call.exec_id, call.call_id, Err(caller_gone("this fetch")));
        }
        ConnEvent::Approve { request: r, .. } => {
            pool.decide(r.exec_id, r.call_id, nobody_decides());
            pool.abandon(r.exec_id);
        }
        _ => {}
    }
}

enum InFlight {
    Execute(u64),
    /// The pool's invocation number.
    Invoke(u64),
}

enum Waiting {
    Tool {
        provider: String,
        tool: String,
        /// The run's bytes in flight and this call's share of them.
        held: Arc<AtomicUsize>,
        size: usize,
    },
    Fetch {
        url: String,
    },
    /// An `approve` for the client's `decide`.
    Approval,
}

impl Waiting {
    /// The client message that answers it.
    fn answer(&self) -> &'static str {
        match self {
            Waiting::Tool { .. } => "toolResult",
            Waiting::Fetch { .. } => "fetchResult",
            Waiting::Approval => "decision",
        }
    }
}

/// A tool call or routed fetch sent to the client and not yet answered.
struct Pending {
    id: u32,
    exec_id: u64,
    call_id: u32,
    what: Waiting,
}

pub(crate) async fn websocket(stream: TcpStream, read_ahead: Vec<u8>, max_message: usize) -> Ws {
    let config = WebSocketConfig::default()
        .max_message_size(Some(max_message))
        .max_frame_size(Some(max_message));
    WebSocketStream::from_partially_read(stream, read_ahead, Role::Server, Some(config)).await
}

/// Refuses a connection before reading any message: `refused`, then the close.
pub(crate) async fn refuse(ws: &mut Ws, code: u16, reason: &str) {
    let msg = ServerMsg::Refused {
        code: FailureCode::ConnectionRefused.as_str(),
        message: FailureCode::ConnectionRefused.render(&[("reason", reason)]),
    };
    let _ = ws.send(wire::encode(&msg, None)).await;
    finish(ws, code, "refused").await;
}

/// Sends the close frame, half-closes the socket and reads until the client closes too (or
/// [`LINGER`] passes), so the bytes sent last are not lost to a reset.
pub(crate) async fn finish(ws: &mut Ws, code: u16, reason: &str) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.to_string().into(),
    };
    let _ = ws.close(Some(frame)).await;
    let tcp = ws.get_mut();
    let _ = tcp.shutdown().await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(LINGER, async {
        while let Ok(n) = tcp.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

struct Conn<'a> {
    shared: &'a Shared,
    id: u32,
    name: &'a str,
    /// The tenant its token belongs to (`serve --tenants`): every request of it acts for it.
    tenant: Option<&'a str>,
    tx: Outbox,
    greeted: bool,
    in_flight: HashMap<u32, InFlight>,
    pending: HashMap<u32, Pending>,
    next_call: u32,
    /// Retained executions this connection was granted: pool execution number to id.
    granted: HashMap<u64, String>,
    /// Messages to write, each with its payload.
    out: Vec<Message>,
}

/// Writes `out` and flushes; `false` when the socket failed.
async fn write(ws: &mut Ws, out: Vec<Message>, shared: &Shared) -> bool {
    for m in out {
        shared
            .bytes_out
            .fetch_add(m.len() as u64, std::sync::atomic::Ordering::Relaxed);
        if ws.feed(m).await.is_err() {
            return false;
        }
    }
    ws.flush().await.is_ok()
}

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until_or_never(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// How long the daemon's thread keeps polling, rather than sleeping, after a connection with
/// runs in flight sent its client a tool call or a fetch, or took the client's answer to one:
/// the answer (the client's, or the worker's next frame after it) then finds the thread awake,
/// where a sleeping one costs a wake-up (tens of microseconds on a machine whose idle CPUs
/// halt). Each poll yields to every other task of the runtime; a live log, a completion or a
/// client's other messages start none, so the poll is paced by the calls the runs make.
const SPIN: std::time::Duration =
    std::time::Duration::from_micros(codemode_pool::protocol::limits::ANSWER_POLL_US);

/// Serves an admitted connection until it closes; returns the close code seen, if any.
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    mut ws: Ws,
    id: u32,
    name: &str,
    tenant: Option<&str>,
    tx: Outbox,
    mut rx: mpsc::UnboundedReceiver<ConnEvent>,
) -> Option<u16> {
    let bounds = shared.bounds;
    let overflow = tx.overflow.clone();
    let hello_by = tokio::time::Instant::now() + bounds.hello_timeout;
    let mut active = tokio::time::Instant::now();
    let mut was_idle = false;
    let mut c = Conn {
        shared,
        id,
        name,
        tenant,
        tx,
        greeted: false,
        in_flight: HashMap::new(),
        pending: HashMap::new(),
        next_call: 1,
        granted: HashMap::new(),
        out: Vec::new(),
    };
    let mut peer_code = None;
    // Until when the daemon's thread polls instead of sleeping (see SPIN).
    let mut spin_until: Option<std::time::Instant> = None;
    let close = loop {
        let mut close = None;
        // Set when this turn sent a call to the client or took the client's answer to one: the
        // answer, or the worker's next frame after it, is likely to follow at once.
        let mut expecting = false;
        let spinning = spin_until.is_some_and(|t| std::time::Instant::now() < t);
        let idle_by = bounds
            .idle_timeout
            .filter(|_| c.greeted && c.idle())
            .map(|t| active + t);
        tokio::select! {
            () = tokio::time::sleep_until(hello_by), if !c.greeted => {
                let secs = bounds.hello_timeout.as_secs_f64();
                shared.log(format!("connection {id}: no hello within {secs} s"));
                close = Some((4008, "no hello in time"));
            }
            () = sleep_until_or_never(idle_by) => {
                shared.log(format!("connection {id} ({name}): idle, closed"));
                close = Some((1001, "idle"));
            }
            () = overflow.notified() => {
                // Nothing more is written to a client that does not read: the socket is
                // dropped (a close frame would wait behind what it left unread).
                c.overflowed();
                break None;
            }
            msg = ws.next() => match msg {
                None => break None,
                Some(Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size }))) => {
                    let detail = format!("a message of {size} bytes passes the bound of {max_size} bytes (maxMessageBytes)");
                    c.protocol_error(&detail, None);
                    close = Some((1009, "message too large"));
                }
                Some(Err(_)) => break None,
                Some(Ok(Message::Close(frame))) => {
                    peer_code = frame.map(|f| u16::from(f.code));
                }
                Some(Ok(m)) => {
                    active = tokio::time::Instant::now();
                    shared.bytes_in.fetch_add(m.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    // Only an answer starts a poll: a ping or any other message a client may
                    // send at will must not keep the thread busy.
                    let awaited = c.pending.len();
                    close = c.take(m);
                    expecting = c.pending.len() < awaited;
                }
            },
            ev = rx.recv() => match ev {
                Some(ConnEvent::Shutdown) => close = Some((1001, "the daemon stopped")),
                Some(ev) => {
                    expecting = matches!(ev, ConnEvent::ToolCall { .. } | ConnEvent::Fetch { .. });
                    c.tx.taken(&ev);
                    c.event(ev);
                }
                // Unreachable: `c.tx` keeps the channel open.
                None => break None,
            },
            () = tokio::task::yield_now(), if spinning => continue,
        }
        if expecting && !c.in_flight.is_empty() {
            spin_until = Some(std::time::Instant::now() + SPIN);
        }
        // A client that stops reading backs the writes up into its socket: the write waits,
        // bounded in time and by what the pool keeps queueing meanwhile.
        let out = std::mem::take(&mut c.out);
        let written = tokio::select! {
            w = write(&mut ws, out, shared) => w,
            () = overflow.notified() => false,
            () = tokio::time::sleep(WRITE_BOUND) => false,
        };
        if !written {
            if close.is_none() {
                c.overflowed();
            }
            break None;
        }
        if close.is_some() {
            break close;
        }
        // Idle counts from the moment nothing is held any more, not from the last message.
        let now_idle = c.idle();
        if now_idle && !was_idle {
            active = tokio::time::Instant::now();
        }
        was_idle = now_idle;
    };
    c.end(&mut rx);
    match close {
        Some((code, reason)) => {
            finish(&mut ws, code, reason).await;
            Some(code)
        }
        None => peer_code,
    }
}

impl Conn<'_> {
    /// Nothing in flight, no call waiting for an answer, no retained execution granted here.
    fn idle(&self) -> bool {
        self.in_flight.is_empty() && self.pending.is_empty() && self.granted.is_empty()
    }

    /// The client fell too far behind (or stopped reading): say so in the log.
    fn overflowed(&self) {
        self.shared.log(format!(
            "connection {} ({}): closed: it did not read what its runs produced (more than {} bytes waited, or a write waited {} s)",
            self.id,
            self.name,
            self.shared.bounds.max_queued_bytes,
            WRITE_BOUND.as_secs()
        ));
    }

    fn send(&mut self, msg: ServerMsg, payload: Option<&[u8]>) {
        self.out.push(wire::encode(&msg, payload));
    }

    fn protocol_error(&mut self, detail: &str, id: Option<u32>) {
        let detail = &*echo(detail);
        self.shared
            .log(format!("connection {}: protocol error: {detail}", self.id));
        self.send(ServerMsg::protocol_error(detail, id), None);
    }

    /// One message from the client; `Some` closes the connection with that code.
    fn take(&mut self, m: Message) -> Option<(u16, &'static str)> {
        let decoded = match m {
            Message::Text(text) => wire::decode_text(&text).map(|m| (m, Vec::new())),
            Message::Binary(bytes) => wire::decode_binary(&bytes),
            // Pings are answered by the framing layer; pongs and raw frames carry nothing.
            _ => return None,
        };
        let (msg, payload) = match decoded {
            Ok(d) => d,
            Err(e) => {
                self.protocol_error(&e.detail, e.id);
                return (!self.greeted).then_some((4002, "protocol error"));
            }
        };
        if !self.greeted {
            return self.hello(msg);
        }
        if let Some(id) = msg.request_id() {
            if id == 0 {
                self.protocol_error("a request id must be from 1 to 4294967295", Some(id));
                return None;
            }
            if self.in_flight.contains_key(&id) {
                let detail = format!("request id {id} is already in flight on this connection");
                self.protocol_error(&detail, Some(id));
                return None;
            }
            let limit = self.shared.max_in_flight;
            if self.in_flight.len() >= limit as usize {
                let f = FailureCode::InFlightLimit.failure(&[("limit", &limit.to_string())]);
                self.send(ServerMsg::failed(id, f), None);
                return None;
            }
        }
        match msg {
            ClientMsg::Hello { .. } => {
                self.protocol_error("hello was already sent on this connection", None)
            }
            ClientMsg::Execute(e) => self.execute(e),
            ClientMsg::ToolResult {
                id,
                call_id,
                ok,
                message,
                denied,
            } => self.tool_result(id, call_id, (ok, denied), message, payload),
            ClientMsg::FetchResult(r) => self.fetch_result(r, payload),
            ClientMsg::Resume(r) => self.resume(r),
            ClientMsg::Decision {
                id,
                call_id,
                approved,
                reason,
            } => {
                if let Some(p) = self.answered(id, call_id, "decision") {
                    let decision = Decision { approved, reason };
                    self.shared.pool.decide(p.exec_id, p.call_id, decision);
                }
            }
            ClientMsg::Invoke {
                id,
                execution_id,
                handle,
                method,
                url,
                headers,
                has_body,
                tenant,
            } => {
                let request = WireRequest {
                    method,
                    url,
                    headers,
                    body: has_body.then_some(payload),
                    redirect: Default::default(),
                };
                let tx = self.tx.clone();
                let done = Box::new(move |result| {
                    let _ = tx.send(ConnEvent::Invoked { id, result });
                });
                let invoked = wire::tenant_for(self.tenant, tenant).and_then(|tenant| {
                    let pool = &self.shared.pool;
                    pool.invoke_handle(&execution_id, &handle, request, tenant.as_deref(), done)
                });
                match invoked {
                    Ok(invoke_id) => {
                        self.in_flight.insert(id, InFlight::Invoke(invoke_id));
                    }
                    Err(f) => self.send(ServerMsg::failed(id, f), None),
                }
            }
            ClientMsg::CloseHandles {
                id,
                execution_id,
                tenant,
            } => {
                let closed = wire::tenant_for(self.tenant, tenant).and_then(|tenant| {
                    let pool = &self.shared.pool;
                    pool.close_handles(&execution_id, tenant.as_deref())
                });
                match closed {
                    Ok(()) => self.send(ServerMsg::Ack { id }, None),
                    Err(f) => self.send(ServerMsg::failed(id, f), None),
                }
            }
            ClientMsg::Stats { id } => {
                let counts = self.shared.counts();
                self.send(ServerMsg::Stats { id, counts }, None);
            }
            // An id no longer in flight (it just ended) is not an error: the answer crossed.
            ClientMsg::Abort { id } => match self.in_flight.get(&id) {
                Some(InFlight::Execute(exec_id)) => self.shared.pool.abort(*exec_id),
                Some(InFlight::Invoke(invoke_id)) => self.shared.pool.abort_invocation(*invoke_id),
                None => {}
            },
        }
        None
    }

    fn hello(&mut self, msg: ClientMsg) -> Option<(u16, &'static str)> {
        match msg {
            ClientMsg::Hello { protocol, client } if protocol == wire::PROTOCOL => {
                self.greeted = true;
                if let Some(client) = client {
                    let client = echo(&client);
                    self.shared
                        .log(format!("connection {}: client {client:?}", self.id));
                }
                let welcome = ServerMsg::Welcome {
                    protocol: wire::PROTOCOL,
                    daemon: self.shared.daemon_id.clone(),
                    name: self.name.to_string(),
                    limits: wire::Limits::new(
                        self.shared.max_in_flight,
                        self.shared.bounds.max_message_bytes,
                        &self.shared.ceilings,
                    ),
                };
                self.send(welcome, None);
                None
            }
            ClientMsg::Hello { protocol, .. } => {
                let (got, want) = (protocol.to_string(), wire::PROTOCOL.to_string());
                let msg = ServerMsg::Error {
                    code: FailureCode::ProtocolMismatch.as_str(),
                    message: FailureCode::ProtocolMismatch
                        .render(&[("got", &got), ("want", &want)]),
                    id: None,
                };
                self.shared.log(format!(
                    "connection {}: protocol mismatch (client {got}, daemon {want})",
                    self.id
                ));
                self.send(msg, None);
                Some((4002, "protocol mismatch"))
            }
            other => {
                let detail = format!("the first message must be hello, not {}", other.type_name());
                self.protocol_error(&detail, other.request_id());
                Some((4002, "protocol error"))
            }
        }
    }

    fn execute(&mut self, e: ExecuteMsg) {
        let id = e.id;
        if let Err(f) = self.open() {
            return self.send(ServerMsg::failed(id, f), None);
        }
        if let Err(f) = e.check_ranges() {
            return self.send(ServerMsg::failed(id, f), None);
        }
        // The daemon's own bounds are ceilings as well as defaults: whoever reaches the port
        // gets no more time, memory, network, CPU, tool calls or fetches than the operator gave.
        let admitted = match self.shared.ceilings.admit(&e) {
            Ok(a) => a,
            Err(f) => return self.send(ServerMsg::failed(id, f), None),
        };
        let mut approval = match e.approval_spec() {
            Ok(a) => a,
            Err(f) => return self.send(ServerMsg::failed(id, f), None),
        };
        if let Some(spec) = approval.as_mut() {
            if let Err(f) = self.shared.ceilings.admit_approval(&e, spec) {
                return self.send(ServerMsg::failed(id, f), None);
            }
        }
        let tenant = match wire::tenant_for(self.tenant, e.tenant.clone()) {
            Ok(t) => t,
            Err(f) => return self.send(ServerMsg::failed(id, f), None),
        };
        let spec = e.into_spec(admitted.outbound, admitted.budgets, approval, tenant);
        self.submit(id, |pool, host, done| pool.execute(spec, host, done));
    }

    /// A paused run resumed from its token: as an `execute` of the run the token describes,
    /// held to this daemon's ceilings; a token or decisions the pool refuses answer `failed`.
    fn resume(&mut self, r: ResumeMsg) {
        let id = r.id;
        if let Err(f) = self.open() {
            return self.send(ServerMsg::failed(id, f), None);
        }
        // Two steps, the ceilings between: the token is opened, held to the client's own
        // bounds (its outbound and budgets narrow the token's, as an in-process resume's
        // executor does), then to this daemon's ceilings, and only then run.
        let opened = wire::tenant_for(self.tenant, r.tenant.clone())
            .and_then(|tenant| {
                let pool = &self.shared.pool;
                pool.open_token(&r.token, r.decisions(), r.live_logs, tenant.as_deref())
            })
            .and_then(|mut run| {
                let (outbound, budgets) = r.within();
                run.hold_to(outbound, budgets);
                self.shared.ceilings.admit_resumed(run.spec())?;
                Ok(run)
            });
        let run = match opened {
            Ok(run) => run,
            Err(f) => return self.send(ServerMsg::failed(id, f), None),
        };
        let routes = r.routes;
        self.submit(id, |pool, host, done| {
            pool.run_reopened(run, routes, host, done)
        });
    }

    /// Whether a run may start now: not while the daemon drains.
    fn open(&self) -> Result<(), Failure> {
        if self
            .shared
            .draining
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(FailureCode::Draining.failure(&[]));
        }
        Ok(())
    }

    /// Submits run `id` through `submit` with this connection's host and completion; it is in
    /// flight until its `done`, or answered `failed` at once when the pool refuses it.
    fn submit(
        &mut self,
        id: u32,
        submit: impl FnOnce(&Pool, Arc<dyn Host>, Completion) -> Result<u64, Failure>,
    ) {
        let host = Arc::new(ExecHost {
            id,
            tx: self.tx.clone(),
            pool: self.shared.pool.clone(),
            held: Arc::new(AtomicUsize::new(0)),
        });
        let tx = self.tx.clone();
        let done = Box::new(move |exec_id, result| {
            // A closed connection discards the completion: nobody waits for it.
            let _ = tx.send(ConnEvent::Done {
                id,
                exec_id,
                result,
            });
        });
        match submit(&self.shared.pool, host, done) {
            Ok(exec_id) => {
                self.in_flight.insert(id, InFlight::Execute(exec_id));
            }
            Err(f) => self.send(ServerMsg::failed(id, f), None),
        }
    }

    fn fetch_result(&mut self, r: FetchResultMsg, payload: Vec<u8>) {
        let Some(p) = self.answered(r.id, r.call_id, "fetchResult") else {
            return;
        };
        let Waiting::Fetch { url } = &p.what else {
            return;
        };
        let result = r.into_response(payload, url);
        self.shared.pool.answer_fetch(p.exec_id, p.call_id, result);
    }

    /// The pending call `call_id` of request `id` that a message of type `answer` answers,
    /// removed: `None` when nothing such waits for it (the run ended, or an invented id), and
    /// then the answer is dropped.
    fn answered(&mut self, id: u32, call_id: u32, answer: &str) -> Option<Pending> {
        let p = self.pending.get(&call_id)?;
        if p.id != id || p.what.answer() != answer {
            return None;
        }
        self.pending.remove(&call_id)
    }

    /// `answer`: `ok`, and for a rejection whether it is a denial.
    fn tool_result(
        &mut self,
        id: u32,
        call_id: u32,
        answer: (bool, bool),
        message: Option<String>,
        payload: Vec<u8>,
    ) {
        let (ok, denied) = answer;
        let Some(p) = self.answered(id, call_id, "toolResult") else {
            return;
        };
        let Waiting::Tool {
            provider,
            tool,
            held,
            size,
        } = &p.what
        else {
            return;
        };
        held.fetch_sub(*size, Ordering::AcqRel);
        if !ok && denied {
            let text = message.unwrap_or_default();
            return self.shared.pool.deny_tool_call(p.exec_id, p.call_id, text);
        }
        let limit = limits::TOOL_PAYLOAD_BYTES;
        let (ok, bytes) = if !ok {
            (false, message.unwrap_or_default().into_bytes())
        } else if payload.len() > limit {
            let text = FailureCode::ToolPayloadTooLarge.render(&[
                ("what", "answer"),
                ("provider", provider),
                ("tool", tool),
                ("size", &payload.len().to_string()),
                ("limit", &limit.to_string()),
            ]);
            (false, text.into_bytes())
        } else {
            (true, payload)
        };
        self.shared
            .pool
            .answer_tool_call(p.exec_id, p.call_id, ok, bytes);
    }

    fn call_id(&mut self) -> u32 {
        let id = self.next_call;
        self.next_call = self.next_call.checked_add(1).unwrap_or(1);
        id
    }

    /// Remembers call `call_id` (the pool's `pool_call` of run `exec_id`, request `id`) until
    /// the client answers it.
    fn wait(&mut self, call_id: u32, id: u32, exec_id: u64, pool_call: u32, what: Waiting) {
        let pending = Pending {
            id,
            exec_id,
            call_id: pool_call,
            what,
        };
        self.pending.insert(call_id, pending);
    }

    /// Something the pool reported for this connection.
    fn event(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::ToolCall { id, call, held } => {
                let call_id = self.call_id();
                let size = call.args.len();
                let msg = ServerMsg::ToolCall {
                    id,
                    call_id,
                    provider: call.provider.clone(),
                    tool: call.tool.clone(),
                };
                self.send(msg, Some(&call.args));
                let what = Waiting::Tool {
                    provider: call.provider,
                    tool: call.tool,
                    held,
                    size,
                };
                self.wait(call_id, id, call.exec_id, call.call_id, what);
            }
            ConnEvent::Fetch { id, call } => {
                let call_id = self.call_id();
                let r = call.request;
                let msg = ServerMsg::Fetch {
                    id,
                    call_id,
                    execution_id: self.granted.get(&call.exec_id).cloned(),
                    method: r.method,
                    url: r.url.clone(),
                    headers: r.headers,
                    has_body: r.body.is_some(),
                    redirect: r.redirect,
                };
                self.send(msg, r.body.as_deref());
                let what = Waiting::Fetch { url: r.url };
                self.wait(call_id, id, call.exec_id, call.call_id, what);
            }
            ConnEvent::Approve { id, request } => {
                let call_id = self.call_id();
                let msg = ServerMsg::Approve {
                    id,
                    call_id,
                    provider: request.provider,
                    tool: request.tool,
                };
                self.send(msg, Some(&request.args));
                let (exec_id, pool_call) = (request.exec_id, request.call_id);
                self.wait(call_id, id, exec_id, pool_call, Waiting::Approval);
            }
            ConnEvent::Done {
                id,
                exec_id,
                result,
            } => {
                self.in_flight.remove(&id);
                // The run's tool calls died with it (a late answer is dropped), and so did its
                // routed fetches unless it retained its isolate (whose handlers fetch on).
                let retained = matches!(&result, Ok(o) if o.grant.is_some());
                self.pending.retain(|_, p| {
                    p.exec_id != exec_id || (retained && matches!(p.what, Waiting::Fetch { .. }))
                });
                if let Ok(Some(g)) = result.as_ref().map(|o| o.grant.as_ref()) {
                    self.granted.insert(exec_id, g.execution_id.clone());
                }
                let (msg, payload) = ServerMsg::completion(id, result);
                self.send(msg, payload.as_deref());
            }
            ConnEvent::Invoked { id, result } => {
                self.in_flight.remove(&id);
                match result {
                    Ok(r) => {
                        let msg = ServerMsg::Invoked {
                            id,
                            status: r.status,
                            status_text: r.status_text,
                            headers: r.headers,
                            has_body: r.body.is_some(),
                        };
                        self.send(msg, r.body.as_deref());
                    }
                    Err(f) => self.send(ServerMsg::failed(id, f), None),
                }
            }
            ConnEvent::HandlesClosed {
                execution_id,
                reason,
            } => {
                // Its handlers' routed fetches still waiting have nobody to answer them now.
                let ended: Vec<u64> = self
                    .granted
                    .iter()
                    .filter(|(_, v)| **v == execution_id)
                    .map(|(k, _)| *k)
                    .collect();
                self.pending.retain(|_, p| !ended.contains(&p.exec_id));
                self.granted.retain(|_, v| *v != execution_id);
                let msg = ServerMsg::HandlesClosed {
                    execution_id,
                    reason: reason.as_str(),
                };
                self.send(msg, None);
            }
            ConnEvent::Log { id, entry } => {
                // Only while the run is in flight here: a late entry has nobody to go to.
                if self.in_flight.contains_key(&id) {
                    let msg = ServerMsg::Log { id, entry };
                    self.send(msg, None);
                }
            }
            ConnEvent::Shutdown => {}
        }
    }

    /// The connection is gone: its running executions stop, the calls it left unanswered
    /// reject inside the sandbox, and whatever the pool still hands over is answered the same.
    fn end(&mut self, rx: &mut mpsc::UnboundedReceiver<ConnEvent>) {
        let pool = &self.shared.pool;
        let stopped = self
            .in_flight
            .values()
            .filter(|f| matches!(f, InFlight::Execute(_)))
            .count();
        for f in self.in_flight.values() {
            if let InFlight::Execute(exec_id) = f {
                pool.abandon(*exec_id);
            }
        }
        for p in self.pending.values() {
            match p.what {
                Waiting::Tool { .. } => {
                    let text = caller_gone("this tool call").into_bytes();
                    pool.answer_tool_call(p.exec_id, p.call_id, false, text);
                }
                Waiting::Fetch { .. } => {
                    pool.answer_fetch(p.exec_id, p.call_id, Err(caller_gone("this fetch")))
                }
                Waiting::Approval => pool.decide(p.exec_id, p.call_id, nobody_decides()),
            }
        }
        rx.close();
        while let Ok(ev) = rx.try_recv() {
            gone(pool, ev);
        }
        if stopped > 0 {
            self.shared.log(format!(
                "connection {} ({}): {stopped} execution(s) in flight stopped",
                self.id, self.name
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codemode_pool::protocol::WireRequest;

    #[test]
    fn a_queued_event_counts_its_url_headers_and_names_not_only_its_body() {
        let request = WireRequest {
            method: "GET".into(),
            url: format!("https://x.example/{}", "a".repeat(10_000)),
            headers: vec![("x-big".into(), "b".repeat(50_000))],
            body: None,
            ..Default::default()
        };
        let fetch = ConnEvent::Fetch {
            id: 1,
            call: FetchCall {
                exec_id: 1,
                call_id: 1,
                request,
            },
        };
        assert!(fetch.size() > 60_000, "{}", fetch.size());
        let invoked = ConnEvent::Invoked {
            id: 1,
            result: Ok(WireResponse {
                status: 200,
                status_text: String::new(),
                headers: vec![("x-big".into(), "c".repeat(70_000))],
                body: None,
                url: String::new(),
                redirected: false,
            }),
        };
        assert!(invoked.size() > 70_000, "{}", invoked.size());
    }

    #[test]
    fn a_client_s_text_is_echoed_cut() {
        let long = "é".repeat(10_000);
        let cut = echo(&long);
        assert!(cut.chars().count() < ECHO_CHARS + 40, "{}", cut.len());
        assert!(cut.ends_with("more bytes cut]"));
        assert_eq!(echo("short"), "short");
    }
}

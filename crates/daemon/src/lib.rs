//! The executor daemon: the pool core served over WebSocket, in the executor protocol
//! (docs/protocol.md). No napi: the addon's `NativeServer` and the tests drive [`Server`].
//!
//! One tokio `current_thread` runtime on one thread (named `daemon`) owns every socket: the
//! accept loop and one task per connection. The pool keeps its own threads; what it reports
//! for a connection (tool calls, routed fetches, completions, closed handles) is handed to that
//! connection's task through an unbounded channel, so a pool thread never blocks on a socket.
//! See docs/architecture.md, "The daemon".
//!
//! One file for the server's life (listen, accept with its connection caps and the bounded
//! wait for request heads, the plain HTTP routes beside the upgrade, drain, shutdown), which
//! shares the registry of connections and the drain flag; a connection's own life is conn.rs,
//! the messages wire/, the request head and the gate http.rs.

mod ceilings;
mod conn;
pub mod http;
pub mod options;
mod watch;
pub mod wire;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use codemode_pool::protocol::host::DaemonCounts;
use codemode_pool::protocol::{Budgets, Failure, FailureCode};
use codemode_pool::{Pool, PoolOptions};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{oneshot, Notify};

pub use ceilings::Ceilings;
pub use codemode_pool;

/// How long `onConnection` may take to answer before the connection is refused.
pub const HOOK_BOUND: Duration = Duration::from_secs(10);
/// How long a request head may take to arrive.
const HEAD_BOUND: Duration = Duration::from_secs(10);
/// Sockets that may be reading their request head at once. Past it the one waiting longest is
/// dropped: a client that sends its head at once (a health check) always gets through, however
/// many silent sockets pile up.
const PENDING_HEADS: usize = 512;
/// The shortest token `serve` takes: a shared secret, not a word.
pub const TOKEN_MIN_CHARS: usize = 16;
/// How long the daemon waits for its connections to close after telling them to.
const CLOSE_BOUND: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The address to listen on (`127.0.0.1` unless told otherwise).
    pub host: String,
    /// 0 picks a free port ([`Server::port`] says which).
    pub port: u16,
    /// Required from every client when set.
    pub token: Option<String>,
    /// One token per tenant, `(name, token)` (`serve --tenants`, docs/tenants.md): a client
    /// presents one, and its connection acts for that tenant. Not with `token`; each token at
    /// least [`TOKEN_MIN_CHARS`] and distinct (the pool's `tenants` holds their bounds).
    pub tenants: Vec<(String, String)>,
    pub pool: PoolOptions,
    /// Requests in flight one connection may have.
    pub max_in_flight: u32,
    /// Ask the host about each connection ([`Event::Connection`], answered by
    /// [`Server::admit`]).
    pub hook: bool,
    /// Origins whose web pages may connect; an upgrade carrying any other `Origin` is refused.
    pub allow_origins: Vec<String>,
    /// Names (besides the bound address) a request's `Host` may use (see [`http::Gate`]).
    pub allow_hosts: Vec<String>,
    pub bounds: Bounds,
    /// The most network a caller may get, and what one that names none gets (`serve
    /// --outbound`; default [`wire::Outbound::Public`]).
    pub outbound: wire::Outbound,
    /// The most CPU, tool calls and fetches a request may ask for, and what one that names
    /// none gets (`serve --cpu-limit`, `--tool-call-limit`, `--fetch-limit`); each `None`: no
    /// ceiling, and a request without that budget has none.
    pub budgets: Budgets,
    /// The most a callback-mode run's `approval.timeout` may ask for, in ms (`serve
    /// --approval-timeout`; default [`options::APPROVAL_TIMEOUT_MS`]).
    pub approval_timeout_ms: u64,
}

/// What one client may hold of the daemon (docs/protocol.md, "Bounds").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// WebSocket connections open at once, over every client.
    pub max_connections: u32,
    /// WebSocket connections open at once from one address.
    pub max_connections_per_address: u32,
    /// How long an upgraded connection may take to send `hello` (then closed with 4008).
    pub hello_timeout: Duration,
    /// How long a connection with nothing in flight, no call waiting and no retained execution
    /// may stay silent (then closed with 1001). `None`: forever.
    pub idle_timeout: Option<Duration>,
    /// The largest message a client may send.
    pub max_message_bytes: usize,
    /// Bytes queued for a connection that has not read them yet; past it the connection is
    /// closed (1008) and its runs stopped, so a slow reader cannot make the daemon hold
    /// everything its runs produce.
    pub max_queued_bytes: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        // Each default is below its range's end, which fits u32 (the table's tests).
        let n = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        Bounds {
            max_connections: n(const { options::MAX_CONNECTIONS.fixed_default() }),
            max_connections_per_address: n(const {
                options::MAX_CONNECTIONS_PER_ADDRESS.fixed_default()
            }),
            hello_timeout: Duration::from_millis(
                const { options::HELLO_TIMEOUT_MS.fixed_default() },
            ),
            idle_timeout: Some(Duration::from_millis(
                const { options::IDLE_TIMEOUT_MS.fixed_default() },
            )),
            max_message_bytes: wire::MAX_MESSAGE_BYTES,
            max_queued_bytes: 4 * wire::MAX_MESSAGE_BYTES,
        }
    }
}

/// A connection waiting for the host's `onConnection` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The key [`Server::admit`] takes (the connection's number).
    pub token: u32,
    pub id: u32,
    pub remote_address: String,
    pub remote_port: u16,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

/// What the daemon tells its host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Answer with [`Server::admit`] within [`HOOK_BOUND`].
    Connection(ConnectionInfo),
    /// One line for the daemon's log.
    Log(String),
    /// The drain is complete: every connection is closed and every worker stopped.
    Drained,
}

pub type Events = Box<dyn Fn(Event) + Send + Sync + 'static>;

/// The answer to a connection: admitted under a name, or refused with a reason.
type Admission = Result<Option<String>, String>;

pub(crate) struct Registry {
    /// Set once the drain closes connections: a connection admitted later closes at once.
    closing: bool,
    conns: HashMap<u32, conn::Outbox>,
}

pub(crate) struct Shared {
    pub pool: Pool,
    /// The pool again, as the watcher that reads its workers finds it (weakly: watch.rs).
    _watched: watch::PoolSlot,
    pub daemon_id: String,
    pub max_in_flight: u32,
    keys: http::Keys,
    hook: bool,
    events: Events,
    pub draining: AtomicBool,
    gate: http::Gate,
    pub bounds: Bounds,
    /// The pool's defaults, which are also the most a request may ask for.
    pub ceilings: Ceilings,
    connections: AtomicUsize,
    /// Open connections by client address (for [`Bounds::max_connections_per_address`]).
    per_address: Mutex<HashMap<std::net::IpAddr, u32>>,
    /// Sockets reading their head: arrival number -> what drops them.
    heads: Mutex<std::collections::BTreeMap<u64, Arc<Notify>>>,
    next_head: std::sync::atomic::AtomicU64,
    /// WebSocket message bytes received and sent, over every connection (`/metrics`).
    pub bytes_in: std::sync::atomic::AtomicU64,
    pub bytes_out: std::sync::atomic::AtomicU64,
    next_conn: AtomicU32,
    admits: Mutex<HashMap<u32, oneshot::Sender<Admission>>>,
    registry: Mutex<Registry>,
    /// Ends the accept loop (after the drain).
    stop: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here leaves its map consistent, so a poisoned lock stays usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// One line for the log. What a client sent (a serde error quotes it, a name, a header)
    /// reaches it escaped: no control character, so no client forges a line or a terminal
    /// sequence.
    pub fn log(&self, line: String) {
        (self.events)(Event::Log(printable(&line)));
    }

    pub fn counts(&self) -> DaemonCounts {
        let s = self.pool.stats();
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        DaemonCounts {
            workers: n(s.workers),
            idle: n(s.idle),
            running: n(s.running),
            queued: n(s.queued),
            retained: n(s.retained),
            connections: n(self.connections.load(Ordering::Relaxed)),
            engine: s.engine,
        }
    }

    /// `GET /metrics`: the pool's metrics, then the daemon's own, in the Prometheus text format.
    /// On a daemon with tenants (`--tenants`), a sample labelled with a tenant is shown only to
    /// a request presenting that tenant's token (`viewer`): no tenant learns another's name or
    /// load, and a request without a token sees none of them.
    pub fn metrics(&self, viewer: Option<&str>) -> String {
        use codemode_pool::{in_and_out, sample, Family};
        let mut families = self.pool.metrics();
        if self.keys.tenanted() {
            for family in &mut families {
                family.samples.retain(|s| {
                    s.labels
                        .iter()
                        .find(|(k, _)| k == "tenant")
                        .is_none_or(|(_, v)| Some(v.as_str()) == viewer)
                });
            }
        }
        families.push(Family {
            def: CONNECTIONS,
            samples: vec![sample(
                CONNECTIONS.name,
                &[],
                self.connections.load(Ordering::Relaxed) as f64,
            )],
        });
        families.push(Family {
            def: CONNECTION_BYTES,
            samples: in_and_out(CONNECTION_BYTES.name, &self.bytes_in, &self.bytes_out),
        });
        codemode_pool::render_metrics(&families)
    }
}

/// `line` with every control character escaped (`\n`, `\u{1b}`, ...).
pub fn printable(line: &str) -> String {
    if !line.chars().any(char::is_control) {
        return line.to_string();
    }
    line.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().collect::<String>()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The address a client is counted by: an IPv4 address (an IPv4-mapped IPv6 one too), or the
/// /64 of an IPv6 address, which one host usually holds whole.
fn client_key(address: std::net::IpAddr) -> std::net::IpAddr {
    match address {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.into(),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                std::net::Ipv6Addr::from(prefix).into()
            }
        },
        v4 => v4,
    }
}

/// One WebSocket connection counted against [`Bounds`]; uncounted when dropped.
pub(crate) struct Slot {
    shared: Arc<Shared>,
    address: std::net::IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.shared.connections.fetch_sub(1, Ordering::SeqCst);
        let mut per = lock(&self.shared.per_address);
        if let Some(n) = per.get_mut(&self.address) {
            *n -= 1;
            if *n == 0 {
                per.remove(&self.address);
            }
        }
    }
}

impl Shared {
    /// Counts a connection from `address`, or says which bound it would pass.
    fn take_slot(self: &Arc<Self>, address: std::net::IpAddr) -> Result<Slot, String> {
        let address = client_key(address);
        let mut per = lock(&self.per_address);
        let from = per.get(&address).copied().unwrap_or(0);
        if from >= self.bounds.max_connections_per_address {
            return Err(format!(
                "{from} connections from {address} are open, the most the daemon takes from one address (--max-connections-per-address)"
            ));
        }
        let all = self.connections.load(Ordering::SeqCst);
        if all >= self.bounds.max_connections as usize {
            return Err(format!(
                "{all} connections are open, the most the daemon takes (--max-connections)"
            ));
        }
        self.connections.fetch_add(1, Ordering::SeqCst);
        per.insert(address, from + 1);
        Ok(Slot {
            shared: self.clone(),
            address,
        })
    }
}

/// The daemon's own metrics (the pool's are defined in `codemode_pool::FAMILIES`).
pub const CONNECTIONS: codemode_pool::MetricDef = codemode_pool::MetricDef {
    name: "codemode_daemon_connections",
    kind: codemode_pool::MetricKind::Gauge,
    help: "Open client connections.",
};
pub const CONNECTION_BYTES: codemode_pool::MetricDef = codemode_pool::MetricDef {
    name: "codemode_daemon_bytes_total",
    kind: codemode_pool::MetricKind::Counter,
    help: "WebSocket message bytes over every client connection, by direction (in: from clients; out: to clients).",
};

pub struct Server {
    shared: Arc<Shared>,
    addr: SocketAddr,
    runtime: tokio::runtime::Handle,
}

/// `token` and `tenants` are each a shared secret of at least [`TOKEN_MIN_CHARS`] characters
/// without surrounding spaces; the tenants' are distinct, their names valid and each once, and
/// the two are not given together. The text names the entry at fault (never its token).
fn check_tokens(options: &ServerOptions) -> Result<(), Failure> {
    let invalid = |field: &str, problem: &str, allowed: &str| {
        FailureCode::InvalidOption.failure(&[
            ("field", field),
            ("problem", problem),
            ("allowed", allowed),
        ])
    };
    let secret = format!("a shared secret of at least {TOKEN_MIN_CHARS} characters without surrounding spaces, e.g. 32 random bytes as hex: openssl rand -hex 32");
    let weak = |token: &str| token.chars().count() < TOKEN_MIN_CHARS || token.trim() != token;
    if let Some(token) = &options.token {
        if weak(token) {
            let problem = format!("got {} characters", token.chars().count());
            return Err(invalid("token", &problem, &secret));
        }
    }
    if options.token.is_some() && !options.tenants.is_empty() {
        return Err(invalid(
            "tenants",
            "given together with a token (--token-file)",
            "one of them: a shared token, or a token per tenant",
        ));
    }
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (name, token) in &options.tenants {
        let field = format!("tenants[{name:?}]");
        if let Err(problem) = codemode_pool::tenants::check_name(name) {
            return Err(invalid(
                &field,
                &problem,
                "a tenant name: 1 to 64 of A-Z a-z 0-9 . _ -",
            ));
        }
        if weak(token) {
            let problem = format!("its token has {} characters", token.chars().count());
            return Err(invalid(&format!("{field}.token"), &problem, &secret));
        }
        if let Some(other) = seen.insert(token.as_str(), name.as_str()) {
            let problem = format!("its token is also tenant {other:?}'s");
            let allowed = "a distinct token per tenant: a token names its tenant";
            return Err(invalid(&format!("{field}.token"), &problem, allowed));
        }
    }
    let mut names = std::collections::HashSet::new();
    if let Some((name, _)) = options.tenants.iter().find(|(n, _)| !names.insert(n)) {
        let field = format!("tenants[{name:?}]");
        return Err(invalid(
            &field,
            "the tenant is listed twice",
            "each tenant once",
        ));
    }
    Ok(())
}

impl Server {
    /// Binds the address, starts the pool and the daemon thread. `LISTEN_FAILED` when the
    /// address cannot be bound; the pool's faults (`WORKER_NOT_FOUND`, `WORKER_START_FAILED`).
    pub fn start(options: ServerOptions, events: Events) -> Result<Server, Failure> {
        let address = if options.host.contains(':') {
            format!("[{}]:{}", options.host, options.port)
        } else {
            format!("{}:{}", options.host, options.port)
        };
        let listen_failed = |detail: String| {
            FailureCode::ListenFailed.failure(&[("address", &address), ("detail", &detail)])
        };
        check_tokens(&options)?;
        let listener = std::net::TcpListener::bind((options.host.as_str(), options.port))
            .map_err(|e| listen_failed(e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| listen_failed(e.to_string()))?;
        // Checked on the address actually bound, so a name that resolves off loopback counts.
        if options.token.is_none() && options.tenants.is_empty() && !addr.ip().is_loopback() {
            return Err(FailureCode::TokenRequired.failure(&[("address", &address)]));
        }
        listener
            .set_nonblocking(true)
            .map_err(|e| listen_failed(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| listen_failed(format!("no runtime: {e}")))?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|e| listen_failed(e.to_string()))?
        };
        let ceilings = Ceilings {
            timeout_ms: options.pool.timeout_ms,
            memory_limit_mib: options.pool.memory_limit_mib,
            outbound: options.outbound,
            budgets: options.budgets,
            approval_timeout_ms: options.approval_timeout_ms,
        };
        // The daemon's own thread reads the workers' output (watch.rs).
        let slot = watch::PoolSlot::default();
        let watcher = Arc::new(watch::LoopWatch::new(runtime.handle().clone(), &slot));
        let pool = Pool::start_watched(options.pool, watcher.clone())?;
        let _ = slot.set(pool.clone());
        let shared = Arc::new(Shared {
            pool: pool.clone(),
            _watched: slot,
            daemon_id: uuid::Uuid::new_v4().to_string(),
            max_in_flight: options.max_in_flight.max(1),
            keys: http::Keys::new(options.token.as_deref(), &options.tenants),
            hook: options.hook,
            events,
            draining: AtomicBool::new(false),
            gate: http::Gate::new(&options.allow_origins, &options.allow_hosts, addr.ip()),
            bounds: options.bounds,
            ceilings,
            connections: AtomicUsize::new(0),
            per_address: Mutex::new(HashMap::new()),
            heads: Mutex::new(std::collections::BTreeMap::new()),
            next_head: std::sync::atomic::AtomicU64::new(0),
            bytes_in: Default::default(),
            bytes_out: Default::default(),
            next_conn: AtomicU32::new(1),
            admits: Mutex::new(HashMap::new()),
            registry: Mutex::new(Registry {
                closing: false,
                conns: HashMap::new(),
            }),
            stop: Notify::new(),
        });
        let handle = runtime.handle().clone();
        let shared2 = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("daemon".into())
            .spawn(move || {
                runtime.block_on(accept(shared2, listener));
                watcher.stop();
            });
        if let Err(e) = spawned {
            pool.shutdown(Duration::from_secs(1));
            return Err(listen_failed(format!("no daemon thread: {e}")));
        }
        shared.log(format!(
            "listening on ws://{addr} (daemon {}, protocol {})",
            shared.daemon_id,
            wire::PROTOCOL
        ));
        Ok(Server {
            shared,
            addr,
            runtime: handle,
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn host(&self) -> String {
        self.addr.ip().to_string()
    }

    pub fn daemon_id(&self) -> &str {
        &self.shared.daemon_id
    }

    /// Answers [`Event::Connection`] `token`: `refusal` refuses it (4003) with that reason;
    /// otherwise it is admitted under `name` (default `address:port`). An unknown or late
    /// token is ignored.
    pub fn admit(&self, token: u32, name: Option<String>, refusal: Option<String>) {
        let waiting = lock(&self.shared.admits).remove(&token);
        if let Some(tx) = waiting {
            let _ = tx.send(match refusal {
                Some(reason) => Err(reason),
                None => Ok(name),
            });
        }
    }

    /// Starts the drain (docs/protocol.md, "Draining"); [`Event::Drained`] follows when it is
    /// complete. `grace` bounds the wait for the workers to exit once nothing runs. Idempotent.
    pub fn drain(&self, grace: Duration) {
        if self.shared.draining.swap(true, Ordering::SeqCst) {
            return;
        }
        self.shared.pool.close();
        self.shared
            .log("draining: new executions are refused".into());
        self.runtime.spawn(drain(self.shared.clone(), grace));
    }

    /// The pool's counts and the open connections (as `stats` and `/healthz` report them).
    pub fn stats(&self) -> DaemonCounts {
        self.shared.counts()
    }

    pub fn worker_pids(&self) -> Vec<u32> {
        self.shared.pool.worker_pids()
    }
}

impl Drop for Server {
    /// A server dropped while serving drains (it ends its workers and connections).
    fn drop(&mut self) {
        self.drain(Duration::from_secs(1));
    }
}

async fn accept(shared: Arc<Shared>, listener: tokio::net::TcpListener) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection(shared.clone(), stream, peer));
                }
                // Out of descriptors and the like: wait a little instead of spinning.
                Err(e) => {
                    shared.log(format!("accept failed: {e}"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = shared.stop.notified() => return,
        }
    }
}

async fn drain(shared: Arc<Shared>, grace: Duration) {
    // Running executions finish within their bounds (their tool calls still travel).
    loop {
        let s = shared.pool.stats();
        if s.running == 0 && s.queued == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Retained executions end (their hosts hear `pool-closed`, queued on their connections
    // before the close below), and the workers stop.
    let pool = shared.pool.clone();
    let _ = tokio::task::spawn_blocking(move || pool.shutdown(grace)).await;
    let conns: Vec<_> = {
        let mut reg = lock(&shared.registry);
        reg.closing = true;
        reg.conns.values().cloned().collect()
    };
    for tx in conns {
        let _ = tx.send(conn::ConnEvent::Shutdown);
    }
    let until = tokio::time::Instant::now() + CLOSE_BOUND;
    while shared.connections.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shared.stop.notify_one();
    shared.log("drained: every connection is closed and every worker stopped".into());
    (shared.events)(Event::Drained);
}

/// One accepted socket: plain HTTP (`/healthz`, 404) or an upgrade to a connection.
async fn connection(shared: Arc<Shared>, mut stream: TcpStream, peer: SocketAddr) {
    let head = {
        let _reading = HeadReader::enter(&shared);
        let dropped = _reading.dropped.clone();
        tokio::select! {
            head = tokio::time::timeout(HEAD_BOUND, http::read_head(&mut stream)) => match head {
                Ok(Ok(head)) => head,
                // Closed, failed or too slow: nothing to answer.
                _ => return,
            },
            // Dropped to make room for a socket that arrived later.
            () = dropped.notified() => return,
        }
    };
    let (head, rest) = match head {
        Ok(h) => h,
        Err(http::HeadError::TooLarge) => {
            let body = "The request head passes the 16 KiB bound.\n";
            return answer(stream, 431, "Request Header Fields Too Large", body).await;
        }
        Err(http::HeadError::Malformed(e)) => {
            return answer(stream, 400, "Bad Request", &format!("{e}\n")).await;
        }
    };
    let draining = shared.draining.load(Ordering::SeqCst);
    match http::route(&head) {
        http::Route::Health => {
            let body = wire::Health {
                status: if draining { "draining" } else { "ok" },
                daemon: &shared.daemon_id,
                protocol: wire::PROTOCOL,
                counts: shared.counts(),
            };
            let (status, reason) = if draining {
                (503, "Service Unavailable")
            } else {
                (200, "OK")
            };
            let body = if head.method == "HEAD" {
                String::new()
            } else {
                // Plain strings and integers: serializing cannot fail.
                serde_json::to_string(&body).unwrap_or_default()
            };
            let bytes = http::response(status, reason, "application/json", &body);
            write_and_close(stream, &bytes).await;
        }
        http::Route::Metrics => {
            let body = if head.method == "HEAD" {
                String::new()
            } else {
                shared.metrics(shared.keys.admit(&head).flatten())
            };
            let kind = "text/plain; version=0.0.4; charset=utf-8";
            let bytes = http::response(200, "OK", kind, &body);
            write_and_close(stream, &bytes).await;
        }
        http::Route::NotFound => {
            let body =
                "Not found: this port serves the executor protocol (WebSocket), GET /healthz and GET /metrics.\n";
            answer(stream, 404, "Not Found", body).await;
        }
        http::Route::BadUpgrade(why) => {
            answer(stream, 400, "Bad Request", &format!("{why}\n")).await;
        }
        http::Route::Upgrade { .. } if draining => {
            let body = "The executor daemon is shutting down.\n";
            answer(stream, 503, "Service Unavailable", body).await;
        }
        http::Route::Upgrade { .. } if shared.gate.refusal(&head).is_some() => {
            let why = shared.gate.refusal(&head).unwrap_or_default();
            shared.log(format!("upgrade from {peer} refused: {why}"));
            answer(stream, 403, "Forbidden", &format!("{why}\n")).await;
        }
        http::Route::Upgrade { key, offered } => {
            // Only a client that presents the token takes a connection slot: one without it is
            // refused right after the upgrade (4001) and must not crowd out those with it.
            let authorized = shared.keys.admit(&head).is_some();
            let slot = match authorized.then(|| shared.take_slot(peer.ip())) {
                None => None,
                Some(Ok(slot)) => Some(slot),
                Some(Err(why)) => {
                    shared.log(format!("upgrade from {peer} refused: {why}"));
                    let body = format!("{why}. Close idle connections or reuse one.\n");
                    return answer(stream, 503, "Service Unavailable", &body).await;
                }
            };
            if stream
                .write_all(&http::switching(&key, offered, &shared.daemon_id))
                .await
                .is_err()
            {
                return;
            }
            upgraded(shared, stream, rest, peer, head).await;
            drop(slot);
        }
    }
}

/// A socket reading its head, registered so that the oldest can be dropped past
/// [`PENDING_HEADS`].
struct HeadReader<'a> {
    shared: &'a Shared,
    number: u64,
    dropped: Arc<Notify>,
}

impl<'a> HeadReader<'a> {
    fn enter(shared: &'a Shared) -> Self {
        let number = shared.next_head.fetch_add(1, Ordering::Relaxed);
        let dropped = Arc::new(Notify::new());
        let mut heads = lock(&shared.heads);
        heads.insert(number, dropped.clone());
        while heads.len() > PENDING_HEADS {
            if let Some((_, oldest)) = heads.pop_first() {
                // notify_one stores a permit: the oldest ends even if it is not waiting yet.
                oldest.notify_one();
            }
        }
        HeadReader {
            shared,
            number,
            dropped,
        }
    }
}

impl Drop for HeadReader<'_> {
    fn drop(&mut self) {
        lock(&self.shared.heads).remove(&self.number);
    }
}

async fn answer(stream: TcpStream, status: u16, reason: &str, body: &str) {
    write_and_close(stream, &http::response(status, reason, "text/plain", body)).await;
}

async fn write_and_close(mut stream: TcpStream, bytes: &[u8]) {
    if stream.write_all(bytes).await.is_ok() {
        let _ = stream.shutdown().await;
    }
}

/// A WebSocket connection: the token, `onConnection`, then the protocol (conn.rs).
async fn upgraded(
    shared: Arc<Shared>,
    stream: TcpStream,
    rest: Vec<u8>,
    peer: SocketAddr,
    head: http::Head,
) {
    let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
    let mut ws = conn::websocket(stream, rest, shared.bounds.max_message_bytes).await;
    let remote = format!("{}:{}", peer.ip(), peer.port());
    let Some(tenant) = shared.keys.admit(&head) else {
        let why = "the token is missing or wrong";
        shared.log(format!("connection {id} from {remote} refused: {why}"));
        return conn::refuse(&mut ws, 4001, why).await;
    };
    let name = if shared.hook {
        let (tx, rx) = oneshot::channel();
        lock(&shared.admits).insert(id, tx);
        (shared.events)(Event::Connection(ConnectionInfo {
            token: id,
            id,
            remote_address: peer.ip().to_string(),
            remote_port: peer.port(),
            path: head.path.clone(),
            headers: head.headers.clone(),
        }));
        let answer = tokio::time::timeout(HOOK_BOUND, rx).await;
        lock(&shared.admits).remove(&id);
        match answer {
            Ok(Ok(Ok(name))) => name.unwrap_or_else(|| remote.clone()),
            Ok(Ok(Err(reason))) => {
                shared.log(format!("connection {id} from {remote} refused: {reason}"));
                return conn::refuse(&mut ws, 4003, &reason).await;
            }
            _ => {
                let why = format!(
                    "the onConnection hook did not answer within {} s",
                    HOOK_BOUND.as_secs()
                );
                shared.log(format!("connection {id} from {remote} refused: {why}"));
                return conn::refuse(&mut ws, 4003, &why).await;
            }
        }
    } else {
        remote.clone()
    };
    let (tx, rx) = conn::Outbox::new(shared.bounds.max_queued_bytes);
    let closing = {
        let mut reg = lock(&shared.registry);
        if !reg.closing {
            reg.conns.insert(id, tx.clone());
        }
        reg.closing
    };
    if closing {
        return conn::finish(&mut ws, 1001, "the daemon stopped").await;
    }
    let as_tenant = tenant
        .map(|t| format!(" for tenant {t:?}"))
        .unwrap_or_default();
    shared.log(format!(
        "connection {id} opened from {remote} as {name:?}{as_tenant}"
    ));
    let code = conn::serve(&shared, ws, id, &name, tenant, tx, rx).await;
    lock(&shared.registry).conns.remove(&id);
    let code = code.map_or_else(|| "no close code".to_string(), |c| format!("code {c}"));
    shared.log(format!("connection {id} ({name}) closed: {code}"));
}

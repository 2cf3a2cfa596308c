//! `NativeServer`: the executor daemon (`codemode-daemon`) for `serve()` in `lib/`. The daemon
//! runs on its own thread; its events (a connection for `onConnection`, a log line, the end of
//! a drain) reach JS through one weak threadsafe function. Weak, so it never keeps Node alive
//! by itself: the JS holds the event loop open while the server is up.

use std::time::Duration;

use codemode_daemon::codemode_pool::protocol::host::DaemonCounts;
use codemode_daemon::codemode_pool::protocol::{Budgets, FailureCode};
use codemode_daemon::wire::{outbound_flag, Outbound};
use codemode_daemon::{Bounds, Event, Server, ServerOptions};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;
use napi_derive::napi;

use crate::failures::{thrown, Fault};
use crate::types::NativeOptions;

/// `serve()`'s options, validated by `lib/`.
#[napi(object)]
pub struct NativeServeOptions {
    pub host: String,
    /// 0 picks a free port.
    pub port: u32,
    pub token: Option<String>,
    /// One token per tenant (`serve --tenants`): the connection presenting it acts for that
    /// tenant. The pool's `tenants` holds their bounds.
    pub tenant_tokens: Option<Vec<NativeTenantToken>>,
    pub pool: NativeOptions,
    /// Requests in flight one connection may have.
    pub max_in_flight: u32,
    /// Ask JS (`onConnection`) about each connection: a `connection` event, answered by
    /// `admit`.
    pub hook: bool,
    /// Origins whose web pages may connect.
    pub allow_origins: Vec<String>,
    /// Names a request's `Host` may use besides the bound address.
    pub allow_hosts: Vec<String>,
    /// The bounds on connections; absent fields take the daemon's defaults
    /// (`codemode_daemon::Bounds::default`).
    pub max_connections: Option<u32>,
    pub max_connections_per_address: Option<u32>,
    /// ms.
    pub hello_timeout: Option<u32>,
    /// ms; 0: never.
    pub idle_timeout: Option<u32>,
    pub max_message_bytes: Option<u32>,
    /// ms: the most a callback-mode run's `approval.timeout` may ask for here; absent: the
    /// daemon's default (`options::APPROVAL_TIMEOUT_MS`).
    pub approval_timeout: Option<u32>,
    /// The outbound ceiling: `null`, `routed`, `public` or `native` (validated by `lib/`);
    /// absent: `public`.
    pub outbound: Option<String>,
    /// The budget ceilings (validated by `lib/`): the most CPU (ms), tool calls and fetches a
    /// request may ask for, and what one without them gets; absent: none.
    pub cpu_limit: Option<u32>,
    pub tool_call_limit: Option<u32>,
    pub fetch_limit: Option<u32>,
}

/// A tenant's token, as `serve()` takes it (validated by `lib/`; checked by the daemon).
#[napi(object)]
pub struct NativeTenantToken {
    pub name: String,
    pub token: String,
}

impl NativeServeOptions {
    fn bounds(&self) -> Bounds {
        let d = Bounds::default();
        let ms = |v: u32| Duration::from_millis(u64::from(v));
        let max_message_bytes = self
            .max_message_bytes
            .map_or(d.max_message_bytes, |b| b as usize);
        Bounds {
            max_connections: self.max_connections.unwrap_or(d.max_connections),
            max_connections_per_address: self
                .max_connections_per_address
                .unwrap_or(d.max_connections_per_address),
            hello_timeout: self.hello_timeout.map_or(d.hello_timeout, ms),
            idle_timeout: match self.idle_timeout {
                None => d.idle_timeout,
                Some(0) => None,
                Some(t) => Some(ms(t)),
            },
            max_message_bytes,
            max_queued_bytes: d.max_queued_bytes.max(4 * max_message_bytes),
        }
    }
}

/// A connection waiting for `admit`.
#[napi(object)]
pub struct NativeConnectionInfo {
    /// The key `admit` takes.
    pub token: u32,
    /// The connection's number (as the log names it).
    pub id: u32,
    pub remote_address: String,
    pub remote_port: u32,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

/// What the daemon tells JS, tagged by `kind`: a connection waiting for `admit`
/// (`connection`), one line of its log (`log`), or the end of a drain (`drained`).
#[napi(discriminant = "kind", discriminant_case = "lowercase")]
pub enum NativeServerEvent {
    Connection { connection: NativeConnectionInfo },
    Log { message: String },
    Drained {},
}

impl From<Event> for NativeServerEvent {
    fn from(e: Event) -> Self {
        match e {
            Event::Connection(c) => NativeServerEvent::Connection {
                connection: NativeConnectionInfo {
                    token: c.token,
                    id: c.id,
                    remote_address: c.remote_address,
                    remote_port: u32::from(c.remote_port),
                    path: c.path,
                    headers: c.headers,
                },
            },
            Event::Log(message) => NativeServerEvent::Log { message },
            Event::Drained => NativeServerEvent::Drained {},
        }
    }
}

#[napi]
pub struct NativeServer {
    server: Server,
}

#[napi]
impl NativeServer {
    /// Binds the address and starts the workers. Throws an error whose `code` is the failure
    /// code (`LISTEN_FAILED`, `WORKER_NOT_FOUND`, `WORKER_START_FAILED`).
    #[napi(constructor)]
    pub fn new(
        options: NativeServeOptions,
        on_event: ThreadsafeFunction<
            NativeServerEvent,
            UnknownReturnValue,
            NativeServerEvent,
            Status,
            false,
            true,
        >,
    ) -> Result<Self, Fault> {
        let port = u16::try_from(options.port).map_err(|_| {
            let address = format!("{}:{}", options.host, options.port);
            thrown(FailureCode::ListenFailed.failure(&[
                ("address", &address),
                ("detail", "the port is not from 0 to 65535"),
            ]))
        })?;
        let bounds = options.bounds();
        let outbound = match options.outbound.as_deref() {
            None => Outbound::Public,
            Some(flag) => outbound_flag(flag).ok_or_else(|| {
                thrown(FailureCode::InvalidOption.failure(&[
                    ("field", "outbound"),
                    ("problem", &format!("got {flag:?}")),
                    ("allowed", "null, 'routed', 'public' or 'native'"),
                ]))
            })?,
        };
        let server = Server::start(
            ServerOptions {
                host: options.host,
                port,
                token: options.token,
                tenants: options
                    .tenant_tokens
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| (t.name, t.token))
                    .collect(),
                pool: options.pool.into(),
                max_in_flight: options.max_in_flight,
                hook: options.hook,
                allow_origins: options.allow_origins,
                allow_hosts: options.allow_hosts,
                bounds,
                outbound,
                approval_timeout_ms: options.approval_timeout.map_or(
                    const { codemode_daemon::options::APPROVAL_TIMEOUT_MS.fixed_default() },
                    u64::from,
                ),
                budgets: Budgets {
                    cpu_limit_ms: options.cpu_limit,
                    tool_call_limit: options.tool_call_limit,
                    fetch_limit: options.fetch_limit,
                },
            },
            Box::new(move |e: Event| {
                on_event.call(e.into(), ThreadsafeFunctionCallMode::NonBlocking);
            }),
        )
        .map_err(thrown)?;
        Ok(NativeServer { server })
    }

    /// The port listened on (the one picked when 0 was asked for).
    #[napi]
    pub fn port(&self) -> u32 {
        u32::from(self.server.port())
    }

    /// The address listened on.
    #[napi]
    pub fn host(&self) -> String {
        self.server.host()
    }

    /// This daemon's id (a UUID minted at start).
    #[napi]
    pub fn daemon_id(&self) -> String {
        self.server.daemon_id().to_string()
    }

    /// Answers a `connection` event: `refusal` refuses it (close 4003) with that reason;
    /// otherwise it is admitted under `name` (absent: `address:port`).
    #[napi]
    pub fn admit(&self, token: u32, name: Option<String>, refusal: Option<String>) {
        self.server.admit(token, name, refusal);
    }

    /// Starts the drain (docs/protocol.md, "Draining"); a `drained` event follows. `grace_ms`
    /// bounds the wait for the workers to exit once nothing runs. Idempotent.
    #[napi]
    pub fn drain(&self, grace_ms: u32) {
        self.server
            .drain(Duration::from_millis(u64::from(grace_ms)));
    }

    /// The pool's counts and the daemon's open connections.
    #[napi]
    pub fn stats(&self) -> DaemonCounts {
        self.server.stats()
    }

    #[napi]
    pub fn worker_pids(&self) -> Vec<u32> {
        self.server.worker_pids()
    }
}

/// The executor protocol version this addon's daemon and `connect()` speak (docs/protocol.md).
#[napi]
pub fn executor_protocol() -> u32 {
    codemode_daemon::wire::PROTOCOL
}

/// The V8 value-serializer format the worker speaks (lib/clone.js checks Node's against it).
#[napi]
pub fn value_format_version() -> u32 {
    codemode_protocol::VALUE_FORMAT_VERSION
}

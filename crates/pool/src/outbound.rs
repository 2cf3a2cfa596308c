//! Native outbound: the pool performs a run's `fetch` from its own machine (the worker has no
//! sockets: its jail refuses them), every step of it, from the address check through the
//! concurrency bounds to the answer's checks, which a request passes in order.
//!
//! - **Where** (outbound `'public'`): one agent whose resolver resolves each hop's name once and
//!   hands ureq only the addresses [`classify`] finds public, so the connection goes to a vetted
//!   address (no window for DNS rebinding), and a redirect to a private address is refused at
//!   its hop. `'native'` uses another agent (and connection pool) without that check.
//! - **How many** ([`Flights`], [`Performers`]): at most
//!   [`limits::FETCH_CONCURRENCY_PER_RUN`] native fetches of a run are performed at once, the
//!   rest wait their turn in order; a pool performs them on at most [`limits::FETCH_THREADS`]
//!   threads; a run's requests in flight (routed ones too) are held to
//!   [`limits::FETCH_BYTES_IN_FLIGHT`] bytes.
//! - **What comes back** ([`Flights::answered`], for native and routed answers alike): a body
//!   within [`limits::FETCH_BODY_BYTES`], and a redirect response rejected for a request whose
//!   `redirect` is `'error'`.
//!
//! One file over 500 lines (about a third of it its tests): the address check, the client that
//! applies it at every hop, and the flights that bound and answer each fetch are one control
//! of the host's network on a program's behalf; apart, a reader could not see that every
//! fetch, native or routed, passes each of them.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use codemode_protocol::{limits, FailureCode, Outbound, Redirect, WireRequest, WireResponse};
use ureq::http;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use ureq::ResponseExt;

/// Why an address is not public, in words that complete "<address> is …"; `None`: public
/// unicast. A pure function of the address: nothing is resolved or contacted.
pub(crate) fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_unspecified() => "the unspecified address",
        (0, _, _) => "a \"this network\" address (0.0.0.0/8)",
        (127, _, _) => "a loopback address",
        (10, _, _) | (192, 168, _) => "a private address",
        (172, 16..=31, _) => "a private address",
        (100, 64..=127, _) => "a shared (carrier-grade NAT) address",
        (169, 254, _) => "a link-local address (the range of cloud metadata services)",
        (192, 0, 0) => "a reserved address (IETF protocol assignments)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (192, 88, 99) => "a reserved address (the deprecated 6to4 relay range)",
        (198, 18..=19, _) => "a benchmarking address",
        (224..=239, _, _) => "a multicast address",
        _ if ip.is_broadcast() => "the broadcast address",
        (240..=255, _, _) => "a reserved address (240.0.0.0/4)",
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("the unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // IPv4-mapped (::ffff:a.b.c.d): a dual-stack socket reaches the IPv4 address itself.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    // IPv4-compatible (::a.b.c.d), deprecated: whatever it embeds, it is not for use.
    if s[..6] == [0; 6] {
        return Some(
            classify_v4(embedded_v4(s[6], s[7])).unwrap_or("a reserved address (IPv4-compatible)"),
        );
    }
    // NAT64 (64:ff9b::/96): the translator reaches the embedded IPv4 address.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(embedded_v4(s[6], s[7]));
    }
    // 6to4 (2002::/16): the relay reaches the IPv4 address in the next 32 bits.
    if s[0] == 0x2002 {
        return classify_v4(embedded_v4(s[1], s[2]));
    }
    Some(match s[0] {
        0xff00..=0xffff => "a multicast address",
        0xfe80..=0xfebf => "a link-local address",
        0xfec0..=0xfeff => "a site-local address",
        0xfc00..=0xfdff => "a unique-local address",
        0x2001 if s[1] == 0 => "a Teredo address",
        0x2001 if s[1] == 0x0db8 => "a documentation address",
        // 2001::/23: IETF protocol assignments (benchmarking, ORCHID, and others).
        0x2001 if s[1] < 0x0200 => "a reserved address (IETF protocol assignments)",
        0x3fff if s[1] < 0x1000 => "a documentation address",
        // Global unicast is 2000::/3; everything else is reserved or special-purpose
        // (64:ff9b:1::/48 local NAT64, 100::/64 discard, 5f00::/16 SRv6, ...).
        0x2000..=0x3fff => return None,
        _ => "a reserved address",
    })
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::from(((hi as u32) << 16) | lo as u32)
}

/// Host names that name this machine whatever DNS says (RFC 6761): `localhost` and every
/// name under it, in any case, with or without the root's dot.
fn local_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

/// The vetting of one hop: `host` as the URL names it and the addresses it resolved to. The
/// public ones are kept; none public (or a local name) is the refusal, in words for
/// `FETCH_NOT_PUBLIC`'s `{reason}`.
pub(crate) fn vet(host: &str, addrs: &[SocketAddr]) -> Result<Vec<SocketAddr>, String> {
    if local_name(host) {
        return Err(format!("{host} is a name of the local machine"));
    }
    let kept: Vec<SocketAddr> = addrs
        .iter()
        .copied()
        .filter(|a| classify(a.ip()).is_none())
        .collect();
    if !kept.is_empty() {
        return Ok(kept);
    }
    let Some(first) = addrs.first() else {
        return Err(format!("{host} resolved to no address"));
    };
    let why = classify(first.ip()).unwrap_or("not public");
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if literal.parse::<IpAddr>().is_ok_and(|ip| ip == first.ip()) {
        Err(format!("{host} is {why}"))
    } else {
        Err(format!("{host} resolves to {}, {why}", first.ip()))
    }
}

/// A hop refused by [`PublicResolver`]: the `{reason}` of `FETCH_NOT_PUBLIC`.
#[derive(Debug)]
struct NotPublic(String);

impl std::fmt::Display for NotPublic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotPublic {}

/// Resolves each hop's host once (ureq calls it for the first URL and again for every
/// redirect) and hands back only the addresses [`vet`] keeps: ureq connects to those, never
/// to a name it resolves again.
#[derive(Debug, Default)]
struct PublicResolver {
    system: DefaultResolver,
    /// Tests only: one loopback port taken for a public address, so a redirect from a "public"
    /// first hop can be tested without traffic leaving loopback.
    #[cfg(test)]
    public_port: Option<u16>,
    /// Tests only: hops resolved.
    #[cfg(test)]
    hops: Arc<AtomicUsize>,
}

impl Resolver for PublicResolver {
    fn resolve(
        &self,
        uri: &http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        #[cfg(test)]
        self.hops.fetch_add(1, Ordering::SeqCst);
        let host = uri.host().unwrap_or("");
        if local_name(host) {
            return Err(refused(vet(host, &[])));
        }
        let resolved = self.system.resolve(uri, config, timeout)?;
        #[cfg(test)]
        if let Some(port) = self.public_port {
            if resolved
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == port)
            {
                return Ok(resolved);
            }
        }
        let kept = vet(host, &resolved).map_err(|r| refused(Err(r)))?;
        let mut out = self.empty();
        for addr in kept {
            out.push(addr);
        }
        Ok(out)
    }
}

fn refused(vetted: Result<Vec<SocketAddr>, String>) -> ureq::Error {
    let reason = vetted.err().unwrap_or_default();
    ureq::Error::Other(Box::new(NotPublic(reason)))
}

pub(crate) struct NativeClient {
    /// Outbound `'native'`: any address the system resolves.
    native: ureq::Agent,
    /// Outbound `'public'`: vetted addresses only, no proxy (a proxy would resolve the names
    /// itself, past the vetting).
    public: ureq::Agent,
}

fn config(proxy: bool) -> ureq::config::Config {
    let builder = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(limits::FETCH_REDIRECTS)
        .user_agent("codemode-executor")
        .save_redirect_history(true);
    if proxy {
        builder.build()
    } else {
        builder.proxy(None).build()
    }
}

impl NativeClient {
    pub fn new() -> Self {
        Self::with_resolver(PublicResolver::default())
    }

    fn with_resolver(resolver: PublicResolver) -> Self {
        NativeClient {
            native: config(true).into(),
            public: ureq::Agent::with_parts(config(false), DefaultConnector::new(), resolver),
        }
    }

    /// Performs `req` (`public`: to public addresses only); the error is the text the
    /// sandbox's fetch rejects with.
    pub fn fetch(
        &self,
        req: WireRequest,
        public: bool,
        timeout: Duration,
    ) -> Result<WireResponse, String> {
        let url = req.url.clone();
        let failed =
            |detail: String| FailureCode::FetchFailed.render(&[("url", &url), ("detail", &detail)]);
        let method = http::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| failed(format!("\"{}\" is not an HTTP method", req.method)))?;
        let mut builder = http::Request::builder()
            .method(method)
            .uri(req.url.as_str());
        for (k, v) in &req.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let request = builder
            .body(req.body.unwrap_or_default())
            .map_err(|e| failed(e.to_string()))?;
        let agent = if public { &self.public } else { &self.native };
        let mut config = agent
            .configure_request(request)
            .timeout_global(Some(timeout))
            .allow_non_standard_methods(true);
        if req.redirect != Redirect::Follow {
            // 'manual' answers with the redirect response; 'error' rejects it (Flights::answered).
            config = config.max_redirects(0);
        }
        let response = agent
            .run(config.build())
            .map_err(|e| match not_public(&e) {
                Some(reason) => {
                    FailureCode::FetchNotPublic.render(&[("url", &url), ("reason", reason)])
                }
                None => failed(describe(&e)),
            })?;
        let final_url = response.get_uri().to_string();
        let redirected = response.get_redirect_history().is_some_and(|h| h.len() > 1);
        let status = response.status();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let limit = limits::FETCH_BODY_BYTES as u64;
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(limit + 1)
            .read_to_end(&mut body)
            .map_err(|e| failed(e.to_string()))?;
        if body.len() as u64 > limit {
            return Err(too_large(&url));
        }
        Ok(WireResponse {
            status: status.as_u16(),
            status_text: status.canonical_reason().unwrap_or("").to_string(),
            headers,
            body: Some(body),
            url: final_url,
            redirected,
        })
    }
}

fn too_large(url: &str) -> String {
    let limit = limits::FETCH_BODY_BYTES.to_string();
    FailureCode::FetchTooLarge.render(&[("what", "response"), ("url", url), ("limit", &limit)])
}

fn not_public(e: &ureq::Error) -> Option<&str> {
    match e {
        ureq::Error::Other(inner) => inner.downcast_ref::<NotPublic>().map(|n| n.0.as_str()),
        _ => None,
    }
}

fn timed_out() -> String {
    "the request timed out (the run's time bound was reached)".into()
}

fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => timed_out(),
        ureq::Error::TooManyRedirects => format!("more than {} redirects", limits::FETCH_REDIRECTS),
        ureq::Error::HostNotFound => "the host name could not be resolved".into(),
        ureq::Error::ConnectionFailed => "the connection was refused or could not be made".into(),
        other => other.to_string(),
    }
}

/// A native fetch to perform.
pub(crate) struct Task {
    pub exec_id: u64,
    pub call_id: u32,
    request: WireRequest,
    public: bool,
    deadline: Instant,
}

/// What [`Flights::admit`] decided for a fetch.
pub(crate) enum Admitted {
    /// Hand it to the host's policy.
    Route(WireRequest),
    /// Perform it now (one of the run's performing slots is its).
    Perform(Task),
    /// It waits its turn behind the run's performing fetches.
    Wait,
    /// Answer it at once with this text (blocked, or past the bytes in flight).
    Refuse(String),
}

/// One fetch in flight, as the host remembers it until it is answered.
struct Call {
    url: String,
    bytes: usize,
    redirect: Redirect,
    /// Holds one of the run's performing slots.
    performing: bool,
}

#[derive(Default)]
struct RunFlights {
    bytes: usize,
    calls: HashMap<u32, Call>,
    performing: usize,
    waiting: VecDeque<Task>,
}

/// Each run's fetches in flight (kept in the pool's state, under its lock): the bytes they
/// hold, the native ones performing and waiting. A run's entry goes when the run ends
/// ([`Flights::forget`]), with whatever still waits.
#[derive(Default)]
pub(crate) struct Flights {
    runs: HashMap<u64, RunFlights>,
}

/// The bytes a request holds while in flight.
fn request_bytes(r: &WireRequest) -> usize {
    let headers: usize = r.headers.iter().map(|(k, v)| k.len() + v.len()).sum();
    r.method.len() + r.url.len() + headers + r.body.as_ref().map_or(0, Vec::len)
}

impl Flights {
    /// Records fetch `call_id` of `exec_id` (its run's outbound mode and deadline given) and
    /// decides what becomes of it.
    pub fn admit(
        &mut self,
        exec_id: u64,
        call_id: u32,
        request: WireRequest,
        outbound: Outbound,
        deadline: Instant,
    ) -> Admitted {
        if outbound == Outbound::Blocked {
            // The worker rejects blocked fetches itself; one arriving here is answered alike.
            return Admitted::Refuse(FailureCode::NetworkClosed.template().to_string());
        }
        let run = self.runs.entry(exec_id).or_default();
        let bytes = request_bytes(&request);
        if run.bytes.saturating_add(bytes) > limits::FETCH_BYTES_IN_FLIGHT {
            let (size, limit) = (bytes.to_string(), limits::FETCH_BYTES_IN_FLIGHT.to_string());
            return Admitted::Refuse(FailureCode::FetchBytesInFlight.render(&[
                ("url", &request.url),
                ("size", &size),
                ("limit", &limit),
            ]));
        }
        let native = outbound.is_native();
        let performing = native && run.performing < limits::FETCH_CONCURRENCY_PER_RUN;
        run.bytes += bytes;
        run.calls.insert(
            call_id,
            Call {
                url: request.url.clone(),
                bytes,
                redirect: request.redirect,
                performing,
            },
        );
        if !native {
            return Admitted::Route(request);
        }
        let task = Task {
            exec_id,
            call_id,
            request,
            public: outbound == Outbound::Public,
            deadline,
        };
        if performing {
            run.performing += 1;
            Admitted::Perform(task)
        } else {
            run.waiting.push_back(task);
            Admitted::Wait
        }
    }

    /// Whether fetch `call_id` of `exec_id` is still wanted (its run has not ended).
    pub(crate) fn wanted(&self, exec_id: u64, call_id: u32) -> bool {
        self.runs
            .get(&exec_id)
            .is_some_and(|r| r.calls.contains_key(&call_id))
    }

    /// Fetch `call_id` of `exec_id` is answered with `result`: its bytes and its performing
    /// slot are released (the slot goes to the run's next waiting fetch, returned), and the
    /// answer is checked: a body within [`limits::FETCH_BODY_BYTES`] (a routed policy's
    /// answer too), and no redirect response for a request whose `redirect` is `'error'`.
    pub fn answered(
        &mut self,
        exec_id: u64,
        call_id: u32,
        result: Result<WireResponse, String>,
    ) -> (Result<WireResponse, String>, Option<Task>) {
        let mut next = None;
        let call = self.runs.get_mut(&exec_id).and_then(|run| {
            let call = run.calls.remove(&call_id)?;
            run.bytes -= call.bytes;
            if !call.performing {
                // Answered before its turn came: it no longer waits.
                run.waiting.retain(|t| t.call_id != call_id);
            } else if let Some(task) = run.waiting.pop_front() {
                // The slot passes to the next waiting fetch.
                if let Some(c) = run.calls.get_mut(&task.call_id) {
                    c.performing = true;
                }
                next = Some(task);
            } else {
                run.performing -= 1;
            }
            Some(call)
        });
        if let Some(run) = self.runs.get(&exec_id) {
            if run.calls.is_empty() && run.waiting.is_empty() {
                self.runs.remove(&exec_id);
            }
        }
        let result = result.and_then(|r| check_answer(call.as_ref(), r));
        (result, next)
    }

    /// The run `exec_id` ended: its fetches still waiting are dropped, and answers still on
    /// their way find nothing to release.
    pub fn forget(&mut self, exec_id: u64) {
        self.runs.remove(&exec_id);
    }
}

fn check_answer(call: Option<&Call>, r: WireResponse) -> Result<WireResponse, String> {
    let url = call.map_or(r.url.as_str(), |c| c.url.as_str());
    if r.body
        .as_ref()
        .is_some_and(|b| b.len() > limits::FETCH_BODY_BYTES)
    {
        return Err(too_large(url));
    }
    if call.is_some_and(|c| c.redirect == Redirect::Error) && is_redirect(r.status) {
        if let Some((_, location)) = r
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("location"))
        {
            let status = r.status.to_string();
            return Err(FailureCode::FetchRedirected.render(&[
                ("url", url),
                ("status", &status),
                ("location", location),
            ]));
        }
    }
    Ok(r)
}

/// The Fetch standard's redirect statuses.
fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The threads native fetches are performed on: started as fetches need them, at most
/// [`limits::FETCH_THREADS`], kept while the pool lives (they end when it is dropped). Tasks
/// queue in a channel; the runs' own bound ([`limits::FETCH_CONCURRENCY_PER_RUN`]) keeps it
/// to that many tasks per run with fetches in flight.
/// Whom the performer threads work for (the pool: schedule.rs). Held weakly, so the threads
/// end when the pool is dropped.
pub(crate) trait Perform: Send + Sync + 'static {
    /// Performs `task`, unless its run no longer wants it, and hands the answer to the run.
    fn perform(&self, task: Task);
    /// No thread can take `task`: the run's fetch rejects with `text`.
    fn refuse(&self, task: Task, text: String);
}

pub(crate) struct Performers {
    target: Weak<dyn Perform>,
    tx: crossbeam_channel::Sender<Task>,
    rx: crossbeam_channel::Receiver<Task>,
    spawned: Mutex<usize>,
    /// Threads waiting for a task.
    idle: Arc<AtomicUsize>,
}

impl Performers {
    pub fn new(target: Weak<dyn Perform>) -> Self {
        let (tx, rx) = crossbeam_channel::unbounded();
        Performers {
            target,
            tx,
            rx,
            spawned: Mutex::new(0),
            idle: Arc::default(),
        }
    }

    /// Queues `task` for a thread, starting one when none is free and the bound allows.
    pub fn submit(&self, task: Task) {
        // The receiver lives in `self`: the channel cannot be disconnected here.
        let _ = self.tx.send(task);
        let mut spawned = self.spawned.lock().unwrap_or_else(|p| p.into_inner());
        if *spawned >= limits::FETCH_THREADS || self.tx.len() <= self.idle.load(Ordering::SeqCst) {
            return;
        }
        let (rx, target, idle) = (self.rx.clone(), self.target.clone(), self.idle.clone());
        let started = std::thread::Builder::new()
            .name("fetch".into())
            .spawn(move || perform_loop(rx, target, idle));
        match started {
            Ok(_) => *spawned += 1,
            Err(e) => {
                eprintln!("codemode-executor: a native fetch thread could not start: {e}");
                if *spawned == 0 {
                    // No thread will take the queue: answer what waits in it.
                    drop(spawned);
                    let Some(target) = self.target.upgrade() else {
                        return;
                    };
                    while let Ok(task) = self.rx.try_recv() {
                        target.refuse(task, format!("fetch could not start: {e}"));
                    }
                }
            }
        }
    }
}

fn perform_loop(
    rx: crossbeam_channel::Receiver<Task>,
    target: Weak<dyn Perform>,
    idle: Arc<AtomicUsize>,
) {
    loop {
        idle.fetch_add(1, Ordering::SeqCst);
        let task = rx.recv();
        idle.fetch_sub(1, Ordering::SeqCst);
        let (Ok(task), Some(target)) = (task, target.upgrade()) else {
            return;
        };
        target.perform(task);
    }
}

impl NativeClient {
    /// Performs `task` within what is left of its run's time bound: the response, or the text
    /// its fetch rejects with.
    pub(crate) fn perform(&self, task: Task) -> Result<WireResponse, String> {
        let url = task.request.url.clone();
        let timeout = task.deadline.saturating_duration_since(Instant::now());
        if timeout.is_zero() {
            return Err(FailureCode::FetchFailed.render(&[("url", &url), ("detail", &timed_out())]));
        }
        self.fetch(task.request, task.public, timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn classify_refuses_every_non_public_v4_range() {
        for (addr, why) in [
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "this network"),
            ("127.0.0.1", "loopback"),
            ("127.255.255.254", "loopback"),
            ("10.0.0.1", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "carrier-grade"),
            ("100.127.255.255", "carrier-grade"),
            ("169.254.169.254", "metadata"),
            ("169.254.0.1", "link-local"),
            ("192.0.0.8", "reserved"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("192.88.99.1", "6to4"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.255", "benchmarking"),
            ("224.0.0.1", "multicast"),
            ("239.255.255.250", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
        ] {
            let got = classify(ip(addr));
            assert!(
                got.is_some_and(|w| w.contains(why)),
                "{addr}: {got:?}, expected {why}"
            );
        }
    }

    #[test]
    fn classify_refuses_every_non_public_v6_range() {
        for (addr, why) in [
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.1.2.3", "private"),
            ("::ffff:169.254.169.254", "metadata"),
            ("::127.0.0.1", "loopback"),
            ("::8.8.8.8", "IPv4-compatible"),
            ("64:ff9b::7f00:1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "metadata"),
            ("64:ff9b:1::1", "reserved"),
            ("2002:7f00:1::1", "loopback"),
            ("2002:c0a8:101::1", "private"),
            ("2001::1", "Teredo"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
            ("2001:db8::1", "documentation"),
            ("2001:2::1", "reserved"),
            ("3fff::1", "documentation"),
            ("fc00::1", "unique-local"),
            ("fd12:3456::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local"),
            ("ff02::1", "multicast"),
            ("100::1", "reserved"),
            ("5f00::1", "reserved"),
            ("4000::1", "reserved"),
        ] {
            let got = classify(ip(addr));
            assert!(
                got.is_some_and(|w| w.contains(why)),
                "{addr}: {got:?}, expected {why}"
            );
        }
    }

    #[test]
    fn classify_lets_public_unicast_through() {
        for addr in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.215.14",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.255.255",
            "198.17.255.255",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:4860:4860::8888",
        ] {
            assert_eq!(classify(ip(addr)), None, "{addr}");
        }
    }

    fn at(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn vet_keeps_public_addresses_and_names_the_refusal() {
        let mixed = [at("127.0.0.1:80"), at("8.8.8.8:80")];
        assert_eq!(vet("both.test", &mixed).unwrap(), vec![at("8.8.8.8:80")]);
        let e = vet("rebind.test", &[at("10.0.0.1:80"), at("[::1]:80")]).unwrap_err();
        assert_eq!(e, "rebind.test resolves to 10.0.0.1, a private address");
        let e = vet("[::1]", &[at("[::1]:80")]).unwrap_err();
        assert_eq!(e, "[::1] is a loopback address");
        let e = vet("127.0.0.1", &[at("127.0.0.1:80")]).unwrap_err();
        assert_eq!(e, "127.0.0.1 is a loopback address");
        for name in ["localhost", "LOCALHOST.", "foo.localhost", "a.b.LocalHost."] {
            let e = vet(name, &[at("8.8.8.8:80")]).unwrap_err();
            assert!(e.contains("local machine"), "{name}: {e}");
        }
        assert!(vet("notlocalhost.test", &[at("8.8.8.8:80")]).is_ok());
    }

    fn resolve(r: &PublicResolver, url: &str) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let uri: http::Uri = url.parse().unwrap();
        let config = ureq::config::Config::default();
        r.resolve(&uri, &config, NextTimeout::default())
    }

    #[test]
    fn the_resolver_refuses_loopback_spellings_after_resolving_them() {
        let r = PublicResolver::default();
        // What a hostile worker could send unnormalized: the system's resolver reads each of
        // these as loopback, and the vetting sees the address it resolved to.
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://0.0.0.0/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::1]/",
            "http://localhost/",
            "http://LOCALHOST./",
            "http://foo.localhost/",
        ] {
            match resolve(&r, url) {
                Err(e) => assert!(not_public(&e).is_some(), "{url}: {e}"),
                Ok(a) => panic!("{url} resolved to {a:?}"),
            }
        }
    }

    /// A loopback HTTP server answering each connection with `answer`, counting connections.
    fn serve(answer: String) -> (u16, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(4) {
                let Ok(mut stream) = stream else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        (port, seen)
    }

    fn request(url: String) -> WireRequest {
        WireRequest {
            method: "GET".into(),
            url,
            ..Default::default()
        }
    }

    #[test]
    fn a_redirect_to_loopback_is_refused_at_its_own_hop() {
        let (second, second_seen) =
            serve("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nno".into());
        let (first, first_seen) = serve(format!(
            "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{second}/secret\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        ));
        let hops = Arc::new(AtomicUsize::new(0));
        let client = NativeClient::with_resolver(PublicResolver {
            public_port: Some(first),
            hops: hops.clone(),
            ..Default::default()
        });
        let url = format!("http://127.0.0.1:{first}/start");
        let e = client
            .fetch(request(url.clone()), true, Duration::from_secs(5))
            .unwrap_err();
        assert!(
            e.contains("was refused: 127.0.0.1 is a loopback address"),
            "{e}"
        );
        assert!(e.contains(&url), "{e}");
        assert_eq!(
            first_seen.load(Ordering::SeqCst),
            1,
            "the first hop was fetched"
        );
        assert_eq!(
            second_seen.load(Ordering::SeqCst),
            0,
            "the loopback hop was reached"
        );
        assert_eq!(hops.load(Ordering::SeqCst), 2, "each hop is resolved once");
        // The same redirect under 'native' reaches the second server.
        let r = client
            .fetch(request(url), false, Duration::from_secs(5))
            .unwrap();
        assert_eq!((r.status, r.redirected), (200, true));
        assert_eq!(second_seen.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn manual_and_error_redirects_are_not_followed() {
        let (second, second_seen) =
            serve("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".into());
        let (first, _) = serve(format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:{second}/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        ));
        let client = NativeClient::new();
        let url = format!("http://127.0.0.1:{first}/");
        for redirect in [Redirect::Manual, Redirect::Error] {
            let req = WireRequest {
                redirect,
                ..request(url.clone())
            };
            let r = client.fetch(req, false, Duration::from_secs(5)).unwrap();
            assert_eq!((r.status, r.redirected), (307, false));
            let mut flights = Flights::default();
            let req = WireRequest {
                redirect,
                ..request(url.clone())
            };
            let far = Instant::now() + Duration::from_secs(5);
            assert!(matches!(
                flights.admit(1, 1, req, Outbound::Native, far),
                Admitted::Perform(_)
            ));
            let (checked, _) = flights.answered(1, 1, Ok(r));
            match redirect {
                Redirect::Manual => assert_eq!(checked.unwrap().status, 307),
                _ => {
                    let e = checked.unwrap_err();
                    assert!(e.contains("status 307") && e.contains("'error'"), "{e}");
                }
            }
        }
        assert_eq!(second_seen.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn flights_bound_performing_fetches_and_bytes_per_run() {
        let mut f = Flights::default();
        let far = Instant::now() + Duration::from_secs(5);
        let n = limits::FETCH_CONCURRENCY_PER_RUN as u32;
        for call in 0..n + 3 {
            let got = f.admit(
                7,
                call,
                request("http://a.test/".into()),
                Outbound::Public,
                far,
            );
            assert_eq!(matches!(got, Admitted::Perform(_)), call < n, "call {call}");
            assert_eq!(matches!(got, Admitted::Wait), call >= n, "call {call}");
        }
        // Another run has its own slots.
        let other = f.admit(
            8,
            0,
            request("http://a.test/".into()),
            Outbound::Native,
            far,
        );
        assert!(matches!(other, Admitted::Perform(_)));
        // An answer hands its slot to the first waiting fetch, in order.
        let ok = || Ok(WireResponse::default());
        let (_, next) = f.answered(7, 0, ok());
        assert_eq!(next.map(|t| t.call_id), Some(n));
        // A waiting call's answer (its run aborted it, say) frees no slot.
        let (_, next) = f.answered(7, n + 2, ok());
        assert!(next.is_none());
        // Bytes: a body past what is left is refused without being recorded.
        let body = |len: usize| WireRequest {
            method: "POST".into(),
            url: "http://a.test/".into(),
            body: Some(vec![0; len]),
            ..Default::default()
        };
        let half = limits::FETCH_BYTES_IN_FLIGHT / 2;
        assert!(matches!(
            f.admit(9, 0, body(half), Outbound::Routed, far),
            Admitted::Route(_)
        ));
        match f.admit(9, 1, body(half), Outbound::Routed, far) {
            Admitted::Refuse(text) => assert!(text.contains("would bring the requests"), "{text}"),
            _ => panic!("past the bytes in flight"),
        }
        let (_, _) = f.answered(9, 0, ok());
        assert!(matches!(
            f.admit(9, 1, body(half), Outbound::Routed, far),
            Admitted::Route(_)
        ));
        // A routed answer past the body bound is refused in one place for every path.
        let big = WireResponse {
            body: Some(vec![0; limits::FETCH_BODY_BYTES + 1]),
            ..Default::default()
        };
        let (checked, _) = f.answered(9, 1, Ok(big));
        assert!(checked.unwrap_err().contains("larger than"));
        // A forgotten run drops what waits.
        f.forget(7);
        assert!(!f.wanted(7, n + 1));
    }
}

//! The HTTP side of a connection: the request head (bounded), `/healthz`, the upgrade's
//! checks, the token, and the `101` that hands the socket to WebSocket framing.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// The most a request head may take (docs/protocol.md, "Bounds").
pub const HEAD_LIMIT: usize = 16 * 1024;

/// The subprotocol the daemon selects.
pub const SUBPROTOCOL: &str = "codemode-executor";
/// The prefix of the subprotocol that carries the token.
pub const TOKEN_PREFIX: &str = "codemode-executor.token.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// Every value of header `name` (case-insensitive), in order.
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn has_token(&self, name: &str, token: &str) -> bool {
        self.values(name)
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadError {
    /// Over [`HEAD_LIMIT`] (or too many headers): 431.
    TooLarge,
    /// Not HTTP: 400.
    Malformed(String),
}

/// Parses a complete head from `buf`: the head and its length, or `None` when more bytes are
/// needed.
pub fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => {
            let head = Head {
                method: req.method.unwrap_or_default().to_string(),
                path: req.path.unwrap_or_default().to_string(),
                headers: req
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect(),
            };
            Ok(Some((head, len)))
        }
        Ok(httparse::Status::Partial) if buf.len() >= HEAD_LIMIT => Err(HeadError::TooLarge),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(HeadError::TooLarge),
        Err(e) => Err(HeadError::Malformed(e.to_string())),
    }
}

/// Reads the request head: the head and any bytes read past it, or why there is none
/// (`Ok(None)`: the peer closed first).
pub async fn read_head(
    stream: &mut TcpStream,
) -> std::io::Result<Result<(Head, Vec<u8>), HeadError>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let room = (HEAD_LIMIT + 1).saturating_sub(buf.len()).min(chunk.len());
        let n = stream.read(&mut chunk[..room]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        match parse_head(&buf) {
            Ok(Some((head, len))) => return Ok(Ok((head, buf.split_off(len)))),
            Ok(None) if buf.len() > HEAD_LIMIT => return Ok(Err(HeadError::TooLarge)),
            Ok(None) => {}
            Err(e) => return Ok(Err(e)),
        }
    }
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Health,
    /// `GET /metrics`: the Prometheus text format (docs/operations.md).
    Metrics,
    NotFound,
    /// A valid WebSocket upgrade: its key, and whether the client offered [`SUBPROTOCOL`].
    Upgrade {
        key: String,
        offered: bool,
    },
    /// An upgrade request that is not a valid one: why.
    BadUpgrade(String),
}

pub fn route(head: &Head) -> Route {
    let upgrade = head.values("upgrade").next().is_some();
    if !upgrade {
        let path = head.path.split('?').next().unwrap_or("");
        return match (head.method.as_str(), path) {
            ("GET" | "HEAD", "/healthz") => Route::Health,
            ("GET" | "HEAD", "/metrics") => Route::Metrics,
            _ => Route::NotFound,
        };
    }
    if head.method != "GET" {
        return Route::BadUpgrade(format!("an upgrade must be a GET, not {}", head.method));
    }
    if !head.has_token("upgrade", "websocket") {
        return Route::BadUpgrade("the Upgrade header does not name websocket".into());
    }
    if !head.has_token("connection", "upgrade") {
        return Route::BadUpgrade("the Connection header does not name upgrade".into());
    }
    if head.values("sec-websocket-version").next().map(str::trim) != Some("13") {
        return Route::BadUpgrade("Sec-WebSocket-Version must be 13".into());
    }
    let Some(key) = head.values("sec-websocket-key").next() else {
        return Route::BadUpgrade("Sec-WebSocket-Key is missing".into());
    };
    Route::Upgrade {
        key: key.trim().to_string(),
        offered: head.has_token("sec-websocket-protocol", SUBPROTOCOL),
    }
}

/// Who may open a WebSocket from a web page, and by which names the daemon may be addressed.
///
/// Browsers apply no same-origin rule to WebSockets: any page the machine's browser shows can
/// open one to a daemon on loopback, and a name the attacker controls can be made to resolve to
/// loopback (DNS rebinding). A browser always sends `Origin` on an upgrade and always names the
/// host it resolved in `Host`; non-browser clients (`connect()`, `ws`) send no `Origin`.
#[derive(Debug, Clone)]
pub struct Gate {
    /// Origins whose pages may connect (`scheme://host[:port]`, compared case-insensitively).
    origins: Vec<String>,
    /// Host names a request may use besides the bound address (and `localhost` on loopback).
    hosts: Vec<String>,
    /// The address the daemon is bound to.
    bound: std::net::IpAddr,
}

impl Gate {
    pub fn new(origins: &[String], hosts: &[String], bound: std::net::IpAddr) -> Gate {
        let norm = |s: &String| s.trim().trim_end_matches('/').to_ascii_lowercase();
        Gate {
            origins: origins.iter().map(norm).collect(),
            hosts: hosts
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .collect(),
            bound,
        }
    }

    /// Why an upgrade must be refused (403), or `None` to let it through.
    pub fn refusal(&self, head: &Head) -> Option<String> {
        for origin in head.values("origin") {
            let given = origin.trim().trim_end_matches('/').to_ascii_lowercase();
            if !self.origins.contains(&given) {
                return Some(format!(
                    "the Origin {origin:?} is not allowed: a web page may connect only from an origin the daemon was started with (--allow-origin)"
                ));
            }
        }
        let mut names = head.values("host");
        let (Some(host), None) = (names.next(), names.next()) else {
            return Some("an upgrade must carry exactly one Host header".into());
        };
        if self.host_allowed(host) {
            None
        } else {
            Some(format!(
                "the Host {host:?} does not name this daemon's address ({}): add the name with --allow-host if a proxy or DNS name is meant to reach it",
                self.bound
            ))
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        if self.hosts.contains(&name) {
            return true;
        }
        let literal = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(&name)
            .parse::<std::net::IpAddr>()
            .ok();
        if self.bound.is_unspecified() {
            // Bound to every address: any address literal names it, and so does any name when
            // no list was given (such a daemon needs a token: see `Server::start`).
            return literal.is_some() || self.hosts.is_empty() || name == "localhost";
        }
        match literal {
            Some(ip) => ip == self.bound,
            None => name == "localhost" && self.bound.is_loopback(),
        }
    }
}

/// The host part of a `Host` value (lowercase, without the port and a trailing dot).
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if host.starts_with('[') {
        host.find(']').map_or(host, |end| &host[..=end])
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The token as the daemon expects to see it: raw (for `Authorization: Bearer`) and as the
/// subprotocol's base64url suffix.
#[derive(Debug, Clone)]
pub struct Token {
    raw: Vec<u8>,
    encoded: Vec<u8>,
}

impl Token {
    pub fn new(token: &str) -> Self {
        Token {
            raw: token.as_bytes().to_vec(),
            encoded: base64url(token.as_bytes()).into_bytes(),
        }
    }

    /// Whether the request presents the token (either way). Each candidate is compared in
    /// time that depends only on the token's length, never on where the bytes differ.
    pub fn presented_in(&self, head: &Head) -> bool {
        let mut ok = false;
        for offered in head
            .values("sec-websocket-protocol")
            .flat_map(|v| v.split(','))
        {
            if let Some(candidate) = offered.trim().strip_prefix(TOKEN_PREFIX) {
                ok |= same(candidate.as_bytes(), &self.encoded);
            }
        }
        for auth in head.values("authorization") {
            // Bytes, not a `str` slice: a client's value may hold a multibyte character at any
            // offset, and slicing a `str` there panics.
            let auth = auth.trim().as_bytes();
            if auth.len() > 7 && auth[..7].eq_ignore_ascii_case(b"bearer ") {
                ok |= same(auth[7..].trim_ascii(), &self.raw);
            }
        }
        ok
    }
}

/// The tokens a daemon takes: none (on loopback: anyone may connect), the one of `--token-file`,
/// or one per tenant (`--tenants`), which then names the connection's tenant.
#[derive(Debug, Clone, Default)]
pub struct Keys(Vec<(Token, Option<String>)>);

impl Keys {
    pub fn new(shared: Option<&str>, tenants: &[(String, String)]) -> Keys {
        let mut keys: Vec<(Token, Option<String>)> =
            shared.map(|t| (Token::new(t), None)).into_iter().collect();
        for (name, token) in tenants {
            keys.push((Token::new(token), Some(name.clone())));
        }
        Keys(keys)
    }

    /// Whether the tokens name tenants (`--tenants`).
    pub fn tenanted(&self) -> bool {
        self.0.iter().any(|(_, tenant)| tenant.is_some())
    }

    /// Whom a request may connect as: `None` when a token is required and it presents none of
    /// them; else the tenant of the token it presents (`Some(None)`: no tenant). Every token is
    /// compared, so the time taken does not say which one matched.
    pub fn admit(&self, head: &Head) -> Option<Option<&str>> {
        if self.0.is_empty() {
            return Some(None);
        }
        let mut found = None;
        for (token, tenant) in &self.0 {
            if token.presented_in(head) && found.is_none() {
                found = Some(tenant.as_deref());
            }
        }
        found
    }
}

/// Constant-time equality: the loop runs over `expected`'s length whatever `given` holds.
pub fn same(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        diff |= given.get(i).copied().unwrap_or(0) ^ e;
    }
    std::hint::black_box(diff) == 0
}

/// base64url without padding (RFC 4648 section 5).
pub fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// A whole plain HTTP response (the connection closes after it).
pub fn response(status: u16, reason: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The header by which the daemon names itself in the `101`, so a load balancer can learn which
/// server holds which daemon id and route a `?daemon=<id>` upgrade back to it
/// (docs/deployment.md).
pub const DAEMON_HEADER: &str = "X-Codemode-Daemon";

/// The `101` that completes the upgrade, naming the daemon `daemon`.
pub fn switching(key: &str, offered: bool, daemon: &str) -> Vec<u8> {
    let protocol = if offered {
        format!("Sec-WebSocket-Protocol: {SUBPROTOCOL}\r\n")
    } else {
        String::new()
    };
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{protocol}{DAEMON_HEADER}: {daemon}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        parse_head(text.as_bytes()).unwrap().unwrap().0
    }

    const UPGRADE: &str = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";

    #[test]
    fn heads_parse_in_pieces_and_are_bounded() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nHost: x\r\n"), Ok(None));
        let (h, len) = parse_head(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nrest")
            .unwrap()
            .unwrap();
        assert_eq!(len, 34);
        assert_eq!(h.path, "/healthz");
        assert_eq!(h.values("HOST").collect::<Vec<_>>(), ["x"]);
        let mut big = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
        big.resize(HEAD_LIMIT + 10, b'a');
        assert_eq!(parse_head(&big), Err(HeadError::TooLarge));
        let mut many = "GET / HTTP/1.1\r\n".to_string();
        for i in 0..100 {
            many.push_str(&format!("X-{i}: 1\r\n"));
        }
        many.push_str("\r\n");
        assert_eq!(parse_head(many.as_bytes()), Err(HeadError::TooLarge));
        assert!(matches!(
            parse_head(b"\x16\x03\x01 tls hello\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
    }

    #[test]
    fn routes() {
        assert_eq!(route(&head("GET /healthz HTTP/1.1\r\n\r\n")), Route::Health);
        assert_eq!(
            route(&head("GET /healthz?x=1 HTTP/1.1\r\n\r\n")),
            Route::Health
        );
        assert_eq!(route(&head("GET / HTTP/1.1\r\n\r\n")), Route::NotFound);
        assert_eq!(
            route(&head("POST /healthz HTTP/1.1\r\n\r\n")),
            Route::NotFound
        );
        let up = route(&head(&format!(
            "{UPGRADE}Sec-WebSocket-Protocol: codemode-executor, codemode-executor.token.eA\r\n\r\n"
        )));
        assert_eq!(
            up,
            Route::Upgrade {
                key: "dGhlIHNhbXBsZSBub25jZQ==".into(),
                offered: true
            }
        );
        let bad = route(&head(&(UPGRADE.replace("13", "8") + "\r\n")));
        assert!(
            matches!(bad, Route::BadUpgrade(ref w) if w.contains("13")),
            "{bad:?}"
        );
        let bad = route(&head(
            &(UPGRADE.replace("Sec-WebSocket-Key", "X-Key") + "\r\n"),
        ));
        assert!(matches!(bad, Route::BadUpgrade(_)));
        let s = String::from_utf8(switching("dGhlIHNhbXBsZSBub25jZQ==", true, "d-1")).unwrap();
        assert!(s.contains("X-Codemode-Daemon: d-1\r\n"));
        assert!(
            s.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
            "{s}"
        );
        assert!(s.contains("Sec-WebSocket-Protocol: codemode-executor\r\n"));
        assert!(s.ends_with("\r\n\r\n"));
    }

    #[test]
    fn a_multibyte_character_in_authorization_is_a_wrong_token_not_a_panic() {
        let token = Token::new("a long enough shared secret");
        for value in ["Beareré x", "Bearerééé", "é", "Bearer\u{1F600}", "bearer é"] {
            let h = head(&format!("{UPGRADE}Authorization: {value}\r\n\r\n"));
            assert!(!token.presented_in(&h), "{value}");
        }
    }

    #[test]
    fn the_gate_refuses_other_origins_and_names_that_are_not_the_daemon() {
        let lo: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let gate = Gate::new(&["https://App.example/".into()], &[], lo);
        let up = |extra: &str| head(&format!("GET / HTTP/1.1\r\n{extra}\r\n"));
        assert_eq!(gate.refusal(&up("Host: 127.0.0.1:8080\r\n")), None);
        assert_eq!(gate.refusal(&up("Host: 127.0.0.1\r\n")), None);
        assert_eq!(gate.refusal(&up("Host: LOCALHOST:1\r\n")), None);
        assert_eq!(gate.refusal(&up("Host: localhost.:1\r\n")), None);
        assert_eq!(
            gate.refusal(&up("Host: 127.0.0.1:1\r\nOrigin: https://app.example\r\n")),
            None
        );
        for bad in [
            "Host: evil.example:8080\r\n",
            "Host: 127.0.0.2:8080\r\n",
            "Host: 127.0.0.1.evil.example\r\n",
            "Host: [::1]:8080\r\n",
            "",
            "Host: 127.0.0.1\r\nHost: evil.example\r\n",
            "Host: 127.0.0.1\r\nOrigin: null\r\n",
            "Host: 127.0.0.1\r\nOrigin: http://evil.example\r\n",
            "Host: 127.0.0.1\r\nOrigin: https://app.example.evil\r\n",
            "Host: 127.0.0.1\r\nOrigin: https://app.example\r\nOrigin: http://evil\r\n",
        ] {
            assert!(gate.refusal(&up(bad)).is_some(), "{bad:?}");
        }
        let v6 = Gate::new(&[], &["executor.internal".into()], "::1".parse().unwrap());
        assert_eq!(v6.refusal(&up("Host: [::1]:9\r\n")), None);
        assert_eq!(v6.refusal(&up("Host: Executor.Internal:443\r\n")), None);
        assert!(v6.refusal(&up("Host: [::2]:9\r\n")).is_some());
        let any = Gate::new(&[], &[], "0.0.0.0".parse().unwrap());
        assert_eq!(any.refusal(&up("Host: whatever.example\r\n")), None);
        let named = Gate::new(
            &[],
            &["executor.internal".into()],
            "0.0.0.0".parse().unwrap(),
        );
        assert_eq!(named.refusal(&up("Host: 10.1.2.3:8080\r\n")), None);
        assert!(named.refusal(&up("Host: rebind.example\r\n")).is_some());
    }

    #[test]
    fn the_token_is_taken_from_the_subprotocol_or_the_bearer_header() {
        assert_eq!(base64url(b""), "");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        let token = Token::new("s3cret/+");
        let enc = base64url(b"s3cret/+");
        let with = |h: &str| token.presented_in(&head(&format!("{UPGRADE}{h}\r\n\r\n")));
        assert!(with(&format!(
            "Sec-WebSocket-Protocol: codemode-executor, {TOKEN_PREFIX}{enc}"
        )));
        assert!(with("Authorization: Bearer s3cret/+"));
        assert!(with("authorization: bearer s3cret/+"));
        assert!(!with("Authorization: Bearer s3cret/"));
        assert!(!with("Authorization: Basic s3cret/+"));
        assert!(!with(&format!(
            "Sec-WebSocket-Protocol: {TOKEN_PREFIX}{enc}x"
        )));
        assert!(!with("Sec-WebSocket-Protocol: codemode-executor"));
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abd", b"abc"));
        assert!(!same(b"ab", b"abc"));
        assert!(!same(b"abcd", b"abc"));
        assert!(!same(b"", b"abc"));
    }
}

//! The approval token (docs/approvals.md, "The token"): what a resume needs to replay a paused
//! run, signed with the pool's approval key. Its text is `cm2.<key id>.<body>.<mac>`: the key
//! id (8 bytes of SHA-256 of the key, hex) says which key signed it, so a token of another key
//! is refused by name before anything else is read; the body (postcard, base64url) holds the
//! run ([`Basis`]), its expiry and its ledger ([`Slot`]s); the MAC (HMAC-SHA256 over everything
//! before it, base64url) is checked in constant time before the body is decoded.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use codemode_protocol::{
    limits, Budgets, Failure, FailureCode, Outbound, ProviderDecl, Replayable, WireResponse,
};
use ring::hmac;
use serde::{Deserialize, Serialize};

/// The token's version: `cm2` since the body records the run's tenant. A `cm1` token (made
/// before) is refused by name: its body reads otherwise.
const PREFIX: &str = "cm2";
const EARLIER: &[&str] = &["cm1"];

/// An approval key: the HMAC key and its id.
pub(crate) struct Key {
    mac: hmac::Key,
    id: String,
}

impl Key {
    pub(crate) fn new(bytes: &[u8]) -> Key {
        let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
        let id = digest.as_ref()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Key {
            mac: hmac::Key::new(hmac::HMAC_SHA256, bytes),
            id,
        }
    }
}

/// The run a token replays: the request as the pool ran it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Basis {
    pub code: String,
    pub modules: Vec<(String, String)>,
    pub providers: Vec<ProviderDecl>,
    /// The tools that need approval: provider, and its listed tools (`None`: all of them).
    pub approve: Vec<(String, Option<Vec<String>>)>,
    pub timeout_ms: u64,
    pub memory_limit_mib: u32,
    pub outbound: Outbound,
    pub budgets: Budgets,
    pub replayable: Replayable,
    pub expires_in_ms: u64,
    /// The tenant the run was for: only it may resume the token.
    pub tenant: Option<String>,
}

/// A tool call's answer as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Answer {
    Ok(#[serde(with = "serde_bytes")] Vec<u8>),
    /// The host failed it: the text it rejected with.
    Err(String),
    /// Denied: the text it rejected with.
    Denied(String),
}

/// One request of the run, in the order the program made them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Slot {
    Call {
        provider: String,
        tool: String,
        #[serde(with = "serde_bytes")]
        args: Vec<u8>,
        answer: Answer,
    },
    Fetch {
        method: String,
        url: String,
        result: Result<WireResponse, String>,
    },
    /// A call that waits for a decision (`resume`'s, by this slot's index).
    Pending {
        provider: String,
        tool: String,
        #[serde(with = "serde_bytes")]
        args: Vec<u8>,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Body {
    pub issued_ms: u64,
    pub expires_ms: u64,
    pub basis: Basis,
    pub script: Vec<Slot>,
}

/// Signs `body`; `APPROVAL_LEDGER_TOO_LARGE` when it is past the bound.
pub(crate) fn seal(key: &Key, body: &Body) -> Result<String, Failure> {
    let bytes = postcard::to_allocvec(body).map_err(|e| {
        FailureCode::Internal.failure(&[("detail", &format!("encoding a token: {e}"))])
    })?;
    if bytes.len() > limits::APPROVAL_TOKEN_BYTES {
        return Err(FailureCode::ApprovalLedgerTooLarge.failure(&[
            ("size", &bytes.len().to_string()),
            ("limit", &limits::APPROVAL_TOKEN_BYTES.to_string()),
        ]));
    }
    let signed = format!("{PREFIX}.{}.{}", key.id, B64.encode(bytes));
    let tag = hmac::sign(&key.mac, signed.as_bytes());
    Ok(format!("{signed}.{}", B64.encode(tag.as_ref())))
}

/// The body of a token `key` signed, not expired at `now_ms`.
pub(crate) fn open(key: &Key, token: &str, now_ms: u64) -> Result<Body, Failure> {
    let tampered = |detail: &str| FailureCode::TokenTampered.failure(&[("detail", detail)]);
    // The bound, before anything is decoded: base64 of the largest body and the rest.
    if token.len() > limits::APPROVAL_TOKEN_BYTES / 3 * 4 + 256 {
        return Err(tampered("it is longer than any token"));
    }
    let mut parts = token.split('.');
    let (Some(prefix), Some(id), Some(body), Some(mac), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(tampered("it does not have a token's four parts"));
    };
    if EARLIER.contains(&prefix) {
        return Err(tampered(
            "it was made by an earlier version of the executor, whose tokens this one does not read; run the program again from the start",
        ));
    }
    if prefix != PREFIX {
        return Err(tampered(
            "it does not start as a token of this version does",
        ));
    }
    if id != key.id {
        return Err(FailureCode::TokenForeignKey.failure(&[]));
    }
    let signed = &token[..token.len() - mac.len() - 1];
    let tag = B64
        .decode(mac)
        .map_err(|_| tampered("its signature is not base64url"))?;
    hmac::verify(&key.mac, signed.as_bytes(), &tag)
        .map_err(|_| tampered("its signature does not match its contents"))?;
    let bytes = B64
        .decode(body)
        .map_err(|_| tampered("its body is not base64url"))?;
    let body: Body =
        postcard::from_bytes(&bytes).map_err(|_| tampered("its body does not decode"))?;
    if now_ms >= body.expires_ms {
        return Err(FailureCode::TokenExpired.failure(&[("at", &iso_time(body.expires_ms))]));
    }
    Ok(body)
}

/// `ms` since the Unix epoch as an ISO 8601 UTC time (for the expiry's text).
fn iso_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant's algorithm), for dates after 1970.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(expires_ms: u64) -> Body {
        Body {
            issued_ms: 1,
            expires_ms,
            basis: Basis {
                code: "async () => 1".into(),
                modules: vec![],
                providers: vec![],
                approve: vec![("billing".into(), Some(vec!["refund".into()]))],
                timeout_ms: 30_000,
                memory_limit_mib: 128,
                outbound: Outbound::Blocked,
                budgets: Budgets::default(),
                replayable: Replayable {
                    seed: 7,
                    epoch_ms: 1,
                },
                expires_in_ms: 10,
                tenant: Some("acme".into()),
            },
            script: vec![Slot::Call {
                provider: "billing".into(),
                tool: "list".into(),
                args: vec![1, 2],
                answer: Answer::Ok(vec![3]),
            }],
        }
    }

    #[test]
    fn a_token_opens_with_its_key_only_unaltered_and_in_time() {
        let key = Key::new(&[7; 32]);
        let token = seal(&key, &body(1000)).unwrap();
        assert_eq!(open(&key, &token, 999).unwrap().script, body(0).script);
        let code = |r: Result<Body, Failure>| r.unwrap_err().code;
        assert_eq!(code(open(&key, &token, 1000)), FailureCode::TokenExpired);
        assert_eq!(
            code(open(&Key::new(&[8; 32]), &token, 0)),
            FailureCode::TokenForeignKey
        );
        // Any byte changed in the body or the signature.
        let body_at = token.rfind('.').unwrap() - 3;
        for at in [body_at, token.len() - 2] {
            let mut bytes = token.clone().into_bytes();
            bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap();
            assert_eq!(
                code(open(&key, &altered, 0)),
                FailureCode::TokenTampered,
                "{at}"
            );
        }
        for bad in [
            "",
            "cm2",
            "x.y.z.w",
            "cm2.a.b.c.d",
            "cm1.a.b.c",
            &token[..token.len() - 5],
        ] {
            assert_ne!(code(open(&key, bad, 0)), FailureCode::Internal, "{bad}");
        }
        assert!(iso_time(1_796_000_000_000).starts_with("2026-"));
    }
}

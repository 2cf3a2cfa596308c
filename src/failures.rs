//! The failure grammar of `codemode-protocol`, as the host side reads it: the catalog, the one
//! renderer (`FailureCode::render`), and faults thrown as JS errors whose `code` is the
//! failure code.

use std::collections::HashMap;

use codemode_pool::protocol::{self, Failure, FailureCode};
use napi_derive::napi;

/// A fault thrown into JS: napi makes the status the error's `code` and the reason its
/// `message`, so `lib/errors.js` reads both as data.
pub type Fault = napi::Error<&'static str>;

pub fn thrown(f: Failure) -> Fault {
    napi::Error::new(f.code.as_str(), f.message)
}

#[napi(string_enum = "lowercase")]
pub enum FailureKind {
    Program,
    Fault,
    Sandbox,
    Log,
}

impl From<protocol::FailureKind> for FailureKind {
    fn from(kind: protocol::FailureKind) -> Self {
        match kind {
            protocol::FailureKind::Program => FailureKind::Program,
            protocol::FailureKind::Fault => FailureKind::Fault,
            protocol::FailureKind::Sandbox => FailureKind::Sandbox,
            protocol::FailureKind::Log => FailureKind::Log,
        }
    }
}

#[napi(object)]
pub struct FailureEntry {
    pub code: String,
    pub kind: FailureKind,
    pub retryable: bool,
    pub when: String,
    /// The text with its `{name}` placeholders.
    pub text: String,
}

impl From<FailureCode> for FailureEntry {
    fn from(c: FailureCode) -> Self {
        FailureEntry {
            code: c.as_str().into(),
            kind: c.kind().into(),
            retryable: c.retryable(),
            when: c.when().into(),
            text: c.template().into(),
        }
    }
}

/// The failure grammar, for `lib/errors.js` and the docs check.
#[napi]
pub fn failure_catalog() -> Vec<FailureEntry> {
    FailureCode::ALL
        .iter()
        .map(|&c| FailureEntry::from(c))
        .collect()
}

/// The text of failure `code` with its `{name}` placeholders filled from `vars` (one left as
/// written when `vars` has no such name). An unknown code renders as itself.
#[napi]
pub fn render_failure(code: String, vars: Option<HashMap<String, String>>) -> String {
    let Some(c) = FailureCode::from_code(&code) else {
        return code;
    };
    let vars = vars.unwrap_or_default();
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    c.render(&pairs)
}

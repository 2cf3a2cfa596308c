//! The approval rules of a request as JS asks them (`readApproval()`, for
//! `lib/validate/approvals.js`, once it has read the shape of what it was given): the same
//! rules the daemon holds a client's `execute` to (`codemode_pool::read_approval`), so they are
//! written once.

use codemode_pool::{read_approval as read, ApprovalMode, AskedMode, ProviderApproval};
use napi_derive::napi;

use crate::types::{NativeApproval, NativeApprovalMode};

/// One provider of the request, in its order.
#[napi(object)]
pub struct NativeApprovalProvider {
    pub name: String,
    /// Its closed tool list; absent: an open list.
    pub tools: Option<Vec<String>>,
    /// `approve: true`: every tool waits for approval.
    pub approve_all: bool,
    /// `approve: [...]`: these tools wait for approval (absent, with `approveAll` false: none).
    pub approve: Option<Vec<String>>,
}

/// What a request asks of approvals, its shape read by `lib/validate/approvals.js`.
#[napi(object)]
pub struct NativeApprovalAsk {
    pub providers: Vec<NativeApprovalProvider>,
    /// The `approval`'s mode; absent: no `approval` given.
    pub mode: Option<NativeApprovalMode>,
    /// The interrupt mode's `expiresIn` (ms), as given.
    pub expires_in: Option<f64>,
    /// The callback mode's `timeout` (ms), as given.
    pub timeout: Option<f64>,
    pub retain_handles: bool,
}

/// Why the approvals were refused: `INVALID_REQUEST`'s field, problem and allowed.
#[napi(object)]
pub struct NativeApprovalRefusal {
    pub field: String,
    pub problem: String,
    pub allowed: String,
}

/// The run's approvals (absent: none), or why they are refused.
#[napi(object)]
pub struct NativeApprovalRead {
    pub approval: Option<NativeApproval>,
    pub refused: Option<NativeApprovalRefusal>,
}

// The bounds travel as u32 milliseconds (NativeApproval): every value the rules allow fits.
const _: () = assert!(
    *codemode_protocol::limits::options::APPROVAL_EXPIRES_IN_MS.end() <= u32::MAX as u64
        && *codemode_protocol::limits::options::APPROVAL_TIMEOUT_MS.end() <= u32::MAX as u64
);

/// Holds a request's approvals to the rules (`codemode_pool::read_approval`).
#[napi]
pub fn read_approval(ask: NativeApprovalAsk) -> NativeApprovalRead {
    let providers: Vec<ProviderApproval> = ask
        .providers
        .into_iter()
        .map(|p| ProviderApproval {
            name: p.name,
            tools: p.tools,
            approve: match (p.approve_all, p.approve) {
                (true, _) => Some(None),
                (false, tools) => tools.map(Some),
            },
        })
        .collect();
    let asked = ask.mode.map(|mode| match mode {
        NativeApprovalMode::Interrupt => AskedMode::Interrupt {
            expires_in: ask.expires_in,
        },
        NativeApprovalMode::Callback => AskedMode::Callback {
            timeout: ask.timeout,
        },
    });
    match read(&providers, asked, ask.retain_handles) {
        Ok(spec) => NativeApprovalRead {
            approval: spec.map(|s| {
                // Within the ranges, which fit a u32 (asserted above).
                let ms = |v: u64| Some(u32::try_from(v).unwrap_or(u32::MAX));
                let (mode, expires_in, timeout) = match s.mode {
                    ApprovalMode::Interrupt { expires_in_ms } => {
                        (NativeApprovalMode::Interrupt, ms(expires_in_ms), None)
                    }
                    ApprovalMode::Callback { timeout_ms } => {
                        (NativeApprovalMode::Callback, None, ms(timeout_ms))
                    }
                };
                NativeApproval {
                    approve: s.approve,
                    mode,
                    expires_in,
                    timeout,
                }
            }),
            refused: None,
        },
        Err(r) => NativeApprovalRead {
            approval: None,
            refused: Some(NativeApprovalRefusal {
                field: r.field,
                problem: r.problem,
                allowed: r.allowed,
            }),
        },
    }
}

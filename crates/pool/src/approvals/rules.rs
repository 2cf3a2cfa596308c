//! The approval rules of a request, written once for every boundary that takes one: the
//! addon's (`lib/validate/approvals.js` reads the shape of what JavaScript gave, then asks
//! these through the addon's `readApproval`) and the daemon's (its wire reads the shape of the
//! JSON a client sent). What a request may ask: `approve` names tools of a closed list only,
//! `approval` comes with some `approve`, not with `retainHandles`, and its bound within its
//! range (`limits::options`), or its mode's default.

use codemode_protocol::limits::options::{
    APPROVAL_EXPIRES_IN_MS, APPROVAL_TIMEOUT_MS, DEFAULT_APPROVAL_EXPIRES_IN_MS,
    DEFAULT_APPROVAL_TIMEOUT_MS,
};
use codemode_protocol::{Failure, FailureCode};

use crate::api::{ApprovalMode, ApprovalSpec};

/// One provider of the request, in its order: its name, its closed tool list (`None`: open),
/// and what its `approve` marks (`None`: nothing; `Some(None)`: every tool; `Some(Some(t))`:
/// the tools `t`).
pub struct ProviderApproval {
    pub name: String,
    pub tools: Option<Vec<String>>,
    pub approve: Option<Option<Vec<String>>>,
}

/// The request's `approval`, its shape read: the mode, and its bound as given (a number of
/// milliseconds, checked here to be an integer in range).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AskedMode {
    Interrupt { expires_in: Option<f64> },
    Callback { timeout: Option<f64> },
}

/// Why a request's approvals are refused: `INVALID_REQUEST`'s field, problem and allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: String,
    pub problem: String,
    pub allowed: String,
}

impl Refusal {
    fn new(field: &str, problem: &str, allowed: &str) -> Refusal {
        Refusal {
            field: field.into(),
            problem: problem.into(),
            allowed: allowed.into(),
        }
    }

    /// `INVALID_REQUEST` naming the field.
    pub fn failure(&self) -> Failure {
        FailureCode::InvalidRequest.failure(&[
            ("field", &self.field),
            ("problem", &self.problem),
            ("allowed", &self.allowed),
        ])
    }

    /// A run that would retain handles and wait for approvals: one or the other.
    pub fn retained_with_approvals() -> Refusal {
        Refusal::new(
            "retainHandles",
            "true in a request with approvals",
            "retainHandles or approvals (approve on a provider, approval), not both",
        )
    }
}

/// The run's approvals by the rules (module doc), or `None` when nothing is marked `approve`
/// and no `approval` was given.
pub fn read_approval(
    providers: &[ProviderApproval],
    asked: Option<AskedMode>,
    retain_handles: bool,
) -> Result<Option<ApprovalSpec>, Refusal> {
    let mut approve = Vec::new();
    for (i, p) in providers.iter().enumerate() {
        let Some(marked) = &p.approve else { continue };
        if let (Some(tools), Some(closed)) = (marked, &p.tools) {
            if let Some(t) = tools.iter().find(|t| !closed.contains(t)) {
                return Err(Refusal::new(
                    &format!("providers[{i}].approve"),
                    &format!("\"{t}\" is not one of the provider's tools"),
                    &format!(
                        "true, or some of the provider's tools ({})",
                        closed.join(", ")
                    ),
                ));
            }
        }
        approve.push((p.name.clone(), marked.clone()));
    }
    if approve.is_empty() && asked.is_none() {
        return Ok(None);
    }
    if retain_handles {
        return Err(Refusal::retained_with_approvals());
    }
    if approve.is_empty() {
        return Err(Refusal::new(
            "approval",
            "given, but no provider marks a tool with approve",
            "approve: ['tool', ...] or approve: true on the providers whose calls need approval",
        ));
    }
    let mode = match asked.unwrap_or(AskedMode::Interrupt { expires_in: None }) {
        AskedMode::Interrupt { expires_in } => ApprovalMode::Interrupt {
            expires_in_ms: within(
                "approval.expiresIn",
                expires_in,
                &APPROVAL_EXPIRES_IN_MS,
                DEFAULT_APPROVAL_EXPIRES_IN_MS,
            )?,
        },
        AskedMode::Callback { timeout } => ApprovalMode::Callback {
            timeout_ms: within(
                "approval.timeout",
                timeout,
                &APPROVAL_TIMEOUT_MS,
                DEFAULT_APPROVAL_TIMEOUT_MS,
            )?,
        },
    };
    Ok(Some(ApprovalSpec { approve, mode }))
}

/// `given` as an integer of milliseconds in `range`, or `default` when it is absent.
fn within(
    field: &str,
    given: Option<f64>,
    range: &std::ops::RangeInclusive<u64>,
    default: u64,
) -> Result<u64, Refusal> {
    let Some(v) = given else { return Ok(default) };
    let (min, max) = (*range.start(), *range.end());
    if v.fract() == 0.0 && v >= min as f64 && v <= max as f64 {
        return Ok(v as u64);
    }
    Err(Refusal::new(
        field,
        &format!("got {}", described(v)),
        &format!("an integer from {min} to {max} (ms)"),
    ))
}

/// A refused number as JS describes one (`lib/validate/fields.js`, `describe`): `number 1.5`,
/// `number 1e+21`, `Infinity`, `NaN`, so a refusal reads the same at every boundary.
fn described(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let a = v.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        // JS's exponent form: 1e+21, 5e-324 (Rust writes 1e21, 5e-324).
        let e = format!("{v:e}");
        return format!(
            "number {}",
            e.replacen("e", if e.contains("e-") { "e" } else { "e+" }, 1)
        );
    }
    format!("number {v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(
        name: &str,
        tools: Option<&[&str]>,
        approve: Option<Option<&[&str]>>,
    ) -> ProviderApproval {
        let owned = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        ProviderApproval {
            name: name.into(),
            tools: tools.map(owned),
            approve: approve.map(|a| a.map(owned)),
        }
    }

    #[test]
    fn each_rule_refuses_naming_its_field() {
        let closed = provider("billing", Some(&["list", "refund"]), Some(Some(&["refnd"])));
        let refusal = read_approval(&[closed], None, false).unwrap_err();
        assert_eq!(refusal.field, "providers[0].approve");
        assert_eq!(
            refusal.allowed,
            "true, or some of the provider's tools (list, refund)"
        );
        let none = provider("billing", None, None);
        let asked = Some(AskedMode::Callback { timeout: None });
        assert_eq!(
            read_approval(&[none], asked, false).unwrap_err().field,
            "approval"
        );
        let all = || provider("billing", None, Some(None));
        assert_eq!(
            read_approval(&[all()], None, true).unwrap_err().field,
            "retainHandles"
        );
        for bad in [0.0, 1.5, 3_600_001.0, f64::NAN] {
            let asked = Some(AskedMode::Callback { timeout: Some(bad) });
            assert_eq!(
                read_approval(&[all()], asked, false).unwrap_err().field,
                "approval.timeout"
            );
        }
    }

    #[test]
    fn defaults_fill_what_a_request_leaves_out() {
        let all = provider("billing", Some(&["list"]), Some(None));
        let spec = read_approval(&[all], None, false).unwrap().unwrap();
        assert_eq!(spec.approve, vec![("billing".to_string(), None)]);
        assert_eq!(
            spec.mode,
            ApprovalMode::Interrupt {
                expires_in_ms: DEFAULT_APPROVAL_EXPIRES_IN_MS
            }
        );
        assert!(read_approval(&[provider("p", None, None)], None, true)
            .unwrap()
            .is_none());
    }
}

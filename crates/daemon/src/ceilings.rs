//! The daemon's ceilings: the most time, memory, network, CPU, tool calls and fetches a request
//! may ask for, which are also what a request that names none gets. Whoever reaches the port
//! gets no more than the operator gave (`serve --timeout`, `--memory-limit`, `--outbound`,
//! `--cpu-limit`, `--tool-call-limit`, `--fetch-limit`). conn.rs holds each `execute` to them
//! ([`Ceilings::admit`]), and each `resume` ([`Ceilings::admit_resumed`]: the run its token
//! describes); the welcome reports them (`wire::Limits`).

use codemode_pool::protocol::{Budgets, Failure, FailureCode};
use codemode_pool::{ApprovalMode, ApprovalSpec, ExecSpec};

use codemode_pool::protocol::limits;

use crate::wire::{reach, ApprovalMsg, ExecuteMsg, Limits, Outbound};

/// What a request may ask for at most; the time, memory and network ones are also the
/// daemon's own defaults. A budget ceiling of `None` is no ceiling: a request without that
/// budget has none.
#[derive(Debug, Clone, Copy)]
pub struct Ceilings {
    pub timeout_ms: u64,
    pub memory_limit_mib: u32,
    pub outbound: Outbound,
    pub budgets: Budgets,
    /// The most one decision of a callback-mode run may take (`approval.timeout`), in ms.
    pub approval_timeout_ms: u64,
}

/// A number a run asks for: field, the value, the ceiling, unit, flag.
type Number = (
    &'static str,
    Option<u64>,
    Option<u64>,
    &'static str,
    &'static str,
);

/// What a request may run with, once held to the ceilings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    pub outbound: Outbound,
    pub budgets: Budgets,
}

impl Ceilings {
    /// The request's outbound and budgets, each the request's own or (named by none) the
    /// ceiling; `INVALID_OPTION` naming the first field above its ceiling and the flag that set
    /// it. The ranges are checked before ([`ExecuteMsg::check_ranges`]).
    pub fn admit(&self, e: &ExecuteMsg) -> Result<Admitted, Failure> {
        let outbound = e.outbound.unwrap_or(self.outbound);
        if reach(outbound) > reach(self.outbound) {
            return Err(self.above_outbound(outbound));
        }
        let b = self.budgets;
        let numbers = self.numbers(
            e.timeout,
            e.memory_limit,
            [e.cpu_limit, e.tool_call_limit, e.fetch_limit],
        );
        for (field, got, ceiling, unit, flag) in numbers {
            if let (Some(got), Some(ceiling)) = (got, ceiling) {
                if got > ceiling {
                    return Err(above(field, &got.to_string(), ceiling, unit, flag));
                }
            }
        }
        // Each within its range (check_ranges), whose end fits u32 (codemode_protocol's
        // `budgets_fit_the_wire_fields`); a ceiling is a u32 already.
        let budget = |got: Option<u64>, ceiling: Option<u32>| {
            got.map(|v| u32::try_from(v).unwrap_or(u32::MAX))
                .or(ceiling)
        };
        Ok(Admitted {
            outbound,
            budgets: Budgets {
                cpu_limit_ms: budget(e.cpu_limit, b.cpu_limit_ms),
                tool_call_limit: budget(e.tool_call_limit, b.tool_call_limit),
                fetch_limit: budget(e.fetch_limit, b.fetch_limit),
            },
        })
    }

    /// A callback-mode run's wait for each decision held to `--approval-timeout`: one that
    /// names none gets the ceiling when it is below the default; one that names more is
    /// refused (`INVALID_OPTION` naming the flag). While a run waits on decisions only, its
    /// worker stays held and its time bound rests, so this bounds both.
    pub fn admit_approval(&self, e: &ExecuteMsg, spec: &mut ApprovalSpec) -> Result<(), Failure> {
        let ApprovalMode::Callback { timeout_ms } = &mut spec.mode else {
            return Ok(());
        };
        let asked = match e.approval {
            Some(ApprovalMsg::Callback { timeout }) => timeout,
            _ => None,
        };
        let ceiling = self.approval_timeout_ms;
        match asked {
            Some(got) if got > ceiling => Err(above(
                "approval.timeout",
                &got.to_string(),
                ceiling,
                "ms",
                "--approval-timeout",
            )),
            _ => {
                *timeout_ms = (*timeout_ms).min(ceiling);
                Ok(())
            }
        }
    }

    /// A resumed run (its time, memory, network and budgets are its token's) against the same
    /// ceilings: a token minted where they were looser (another daemon with the same key) gets
    /// no more here than a request would; `INVALID_OPTION` naming the first field above its
    /// ceiling, a budget the token leaves unlimited where this daemon sets one included.
    pub fn admit_resumed(&self, spec: &ExecSpec) -> Result<(), Failure> {
        if reach(spec.outbound) > reach(self.outbound) {
            return Err(self.above_outbound(spec.outbound));
        }
        let r = spec.budgets;
        let numbers = self.numbers(
            spec.timeout_ms,
            spec.memory_limit_mib.map(u64::from),
            [r.cpu_limit_ms, r.tool_call_limit, r.fetch_limit].map(|v| v.map(u64::from)),
        );
        for (field, got, ceiling, unit, flag) in numbers {
            let Some(ceiling) = ceiling else { continue };
            let got = match got {
                Some(got) if got <= ceiling => continue,
                Some(got) => format!("{got} in the paused run's token"),
                None => "no limit in the paused run's token".to_string(),
            };
            return Err(above(field, &got, ceiling, unit, flag));
        }
        Ok(())
    }

    /// Each number a run asks for beside this daemon's ceiling on it: its field, what it asks
    /// (`budgets`: CPU, tool calls, fetches), the ceiling, its unit and the flag that sets it.
    fn numbers(
        &self,
        timeout: Option<u64>,
        memory: Option<u64>,
        budgets: [Option<u64>; 3],
    ) -> [Number; 5] {
        let b = self.budgets;
        let [cpu, tools, fetches] = budgets;
        [
            ("timeout", timeout, Some(self.timeout_ms), "ms", "--timeout"),
            (
                "memoryLimit",
                memory,
                Some(u64::from(self.memory_limit_mib)),
                "MiB",
                "--memory-limit",
            ),
            (
                "cpuLimit",
                cpu,
                b.cpu_limit_ms.map(u64::from),
                "ms of CPU",
                "--cpu-limit",
            ),
            (
                "toolCallLimit",
                tools,
                b.tool_call_limit.map(u64::from),
                "tool calls per run",
                "--tool-call-limit",
            ),
            (
                "fetchLimit",
                fetches,
                b.fetch_limit.map(u64::from),
                "fetches per run",
                "--fetch-limit",
            ),
        ]
    }

    fn above_outbound(&self, outbound: Outbound) -> Failure {
        let ceiling = self.outbound;
        let allowed = Outbound::BY_REACH
            .into_iter()
            .filter(|m| reach(*m) <= reach(ceiling))
            .map(|m| format!("'{}'", m.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        FailureCode::InvalidOption.failure(&[
            ("field", "outbound"),
            (
                "problem",
                &format!(
                    "got '{}', above this daemon's outbound ceiling '{}' (serve --outbound)",
                    outbound.as_str(),
                    ceiling.as_str()
                ),
            ),
            (
                "allowed",
                &format!("{allowed} ('blocked' is null), or none for the ceiling"),
            ),
        ])
    }
}

/// `INVALID_OPTION`: `field` asked for `got`, above the ceiling `flag` set.
fn above(field: &str, got: &str, ceiling: u64, unit: &str, flag: &str) -> Failure {
    FailureCode::InvalidOption.failure(&[
        ("field", field),
        (
            "problem",
            &format!("got {got}, above this daemon's ceiling of {ceiling} {unit} (serve {flag})"),
        ),
        (
            "allowed",
            &format!("an integer up to {ceiling} ({unit}), or none for the ceiling"),
        ),
    ])
}

/// What `welcome` tells a client of this daemon's bounds (wire.rs, `Limits`).
impl Limits {
    pub fn new(max_in_flight: u32, max_message_bytes: usize, ceilings: &Ceilings) -> Self {
        Limits {
            max_message_bytes: max_message_bytes as u64,
            timeout: ceilings.timeout_ms,
            memory_limit: ceilings.memory_limit_mib,
            outbound: ceilings.outbound,
            cpu_limit: ceilings.budgets.cpu_limit_ms,
            tool_call_limit: ceilings.budgets.tool_call_limit,
            fetch_limit: ceilings.budgets.fetch_limit,
            approval_timeout: ceilings.approval_timeout_ms,
            max_in_flight,
            tool_payload_bytes: limits::TOOL_PAYLOAD_BYTES as u64,
            result_bytes: limits::RESULT_BYTES as u64,
            fetch_body_bytes: limits::FETCH_BODY_BYTES as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode_text, ClientMsg};

    fn execute(fields: &str) -> ExecuteMsg {
        let text = format!(r#"{{"type":"execute","id":1,"code":""{fields}}}"#);
        match decode_text(&text) {
            Ok(ClientMsg::Execute(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    fn ceilings(budgets: Budgets) -> Ceilings {
        Ceilings {
            timeout_ms: 30_000,
            memory_limit_mib: 128,
            outbound: Outbound::Public,
            budgets,
            approval_timeout_ms: 60_000,
        }
    }

    const ALL: Budgets = Budgets {
        cpu_limit_ms: Some(50),
        tool_call_limit: Some(5),
        fetch_limit: Some(3),
    };

    fn callback_spec(e: &ExecuteMsg) -> ApprovalSpec {
        e.approval_spec().unwrap().expect("an approval")
    }

    #[test]
    fn a_callback_wait_is_held_to_the_approval_timeout_ceiling() {
        let c = ceilings(ALL);
        let provider = r#","providers":[{"name":"b","tools":["r"],"approve":true}]"#;
        // None named: the request default (5 minutes) held to the ceiling (1 minute here).
        let e = execute(&format!(r#"{provider},"approval":{{"mode":"callback"}}"#));
        let mut spec = callback_spec(&e);
        c.admit_approval(&e, &mut spec).unwrap();
        assert_eq!(spec.mode, ApprovalMode::Callback { timeout_ms: 60_000 });
        // At or below: its own.
        let e = execute(&format!(
            r#"{provider},"approval":{{"mode":"callback","timeout":60000}}"#
        ));
        let mut spec = callback_spec(&e);
        c.admit_approval(&e, &mut spec).unwrap();
        assert_eq!(spec.mode, ApprovalMode::Callback { timeout_ms: 60_000 });
        // Above: refused, naming the flag.
        let e = execute(&format!(
            r#"{provider},"approval":{{"mode":"callback","timeout":3600000}}"#
        ));
        let mut spec = callback_spec(&e);
        let f = c.admit_approval(&e, &mut spec).unwrap_err();
        assert_eq!(f.code, FailureCode::InvalidOption);
        assert!(f.message.contains("approval.timeout"), "{}", f.message);
        assert!(f.message.contains("--approval-timeout"), "{}", f.message);
        // Interrupt mode waits for no one: untouched.
        let e = execute(provider);
        let mut spec = callback_spec(&e);
        c.admit_approval(&e, &mut spec).unwrap();
        assert!(matches!(spec.mode, ApprovalMode::Interrupt { .. }));
    }

    #[test]
    fn a_request_without_a_budget_gets_the_ceiling() {
        let got = ceilings(ALL).admit(&execute("")).unwrap();
        assert_eq!(got.budgets, ALL);
        assert_eq!(got.outbound, Outbound::Public);
    }

    #[test]
    fn a_request_at_or_below_a_ceiling_keeps_its_own() {
        let e = execute(r#","cpuLimit":50,"toolCallLimit":0,"fetchLimit":2"#);
        let got = ceilings(ALL).admit(&e).unwrap();
        let want = Budgets {
            cpu_limit_ms: Some(50),
            tool_call_limit: Some(0),
            fetch_limit: Some(2),
        };
        assert_eq!(got.budgets, want);
    }

    #[test]
    fn without_a_ceiling_a_request_keeps_its_budget_or_has_none() {
        let none = ceilings(Budgets::default());
        assert_eq!(
            none.admit(&execute("")).unwrap().budgets,
            Budgets::default()
        );
        let e = execute(r#","cpuLimit":2147483647,"toolCallLimit":1000000,"fetchLimit":7"#);
        let want = Budgets {
            cpu_limit_ms: Some(2_147_483_647),
            tool_call_limit: Some(1_000_000),
            fetch_limit: Some(7),
        };
        assert_eq!(none.admit(&e).unwrap().budgets, want);
    }

    #[test]
    fn a_budget_above_its_ceiling_is_refused_naming_the_flag() {
        for (fields, field, flag) in [
            (r#","cpuLimit":51"#, "cpuLimit", "--cpu-limit"),
            (
                r#","toolCallLimit":6"#,
                "toolCallLimit",
                "--tool-call-limit",
            ),
            (r#","fetchLimit":4"#, "fetchLimit", "--fetch-limit"),
            (r#","timeout":30001"#, "timeout", "--timeout"),
            (r#","memoryLimit":129"#, "memoryLimit", "--memory-limit"),
        ] {
            let f = ceilings(ALL).admit(&execute(fields)).unwrap_err();
            assert_eq!(f.code, FailureCode::InvalidOption, "{fields}");
            assert!(f.message.contains(field), "{}", f.message);
            assert!(
                f.message.contains(&format!("(serve {flag})")),
                "{}",
                f.message
            );
        }
        let f = ceilings(ALL)
            .admit(&execute(r#","cpuLimit":51"#))
            .unwrap_err();
        assert!(
            f.message
                .contains("got 51, above this daemon's ceiling of 50 ms of CPU"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_resumed_run_is_held_to_the_ceilings_too() {
        let within = ExecSpec {
            timeout_ms: Some(30_000),
            memory_limit_mib: Some(128),
            outbound: Outbound::Routed,
            budgets: ALL,
            ..ExecSpec::default()
        };
        assert!(ceilings(ALL).admit_resumed(&within).is_ok());
        let unlimited = ExecSpec {
            budgets: Budgets {
                fetch_limit: None,
                ..ALL
            },
            ..within.clone()
        };
        let f = ceilings(ALL).admit_resumed(&unlimited).unwrap_err();
        assert_eq!(f.code, FailureCode::InvalidOption);
        assert!(
            f.message.contains("no limit in the paused run's token")
                && f.message.contains("(serve --fetch-limit)"),
            "{}",
            f.message
        );
        let longer = ExecSpec {
            timeout_ms: Some(30_001),
            ..within.clone()
        };
        let f = ceilings(ALL).admit_resumed(&longer).unwrap_err();
        assert!(f.message.contains("(serve --timeout)"), "{}", f.message);
        let native = ExecSpec {
            outbound: Outbound::Native,
            ..within
        };
        let f = ceilings(ALL).admit_resumed(&native).unwrap_err();
        assert!(f.message.contains("(serve --outbound)"), "{}", f.message);
    }

    #[test]
    fn an_outbound_above_the_ceiling_is_refused() {
        let f = ceilings(ALL)
            .admit(&execute(r#","outbound":"native""#))
            .unwrap_err();
        assert_eq!(f.code, FailureCode::InvalidOption);
        assert!(f.message.contains("(serve --outbound)"), "{}", f.message);
    }
}

//! The encoding of every message, the errors a bad one gets, the range checks, and that
//! docs/protocol.md documents every message type the daemon knows.
//!
//! One file for the tests of one module (`wire`): each test reads a message through the same
//! decode/encode entry points and the same samples, and the documentation checks need every
//! message type at once.

use super::*;
use crate::Ceilings;
use codemode_pool::protocol::{CallStatus, LogLevel, PendingCall, RunError, RunStats};
use codemode_pool::ApprovalMode;

#[test]
fn text_requests_decode() {
    let m = decode_text(r#"{"type":"hello","protocol":1,"client":"x"}"#).unwrap();
    assert_eq!(
        m,
        ClientMsg::Hello {
            protocol: 1,
            client: Some("x".into())
        }
    );
    let m = decode_text(
        r#"{"type":"execute","id":7,"code":"async () => 1","modules":[["a","b"]],
           "providers":[{"name":"kv","tools":null}],"timeout":50,"outbound":"routed",
           "retainHandles":true,"future":1}"#,
    )
    .unwrap();
    let ClientMsg::Execute(e) = m else {
        panic!("{m:?}")
    };
    assert_eq!(e.id, 7);
    assert_eq!(e.modules, [("a".to_string(), "b".to_string())]);
    assert_eq!(e.providers[0].decl.tools, None);
    assert_eq!(e.timeout, Some(50));
    assert_eq!(e.memory_limit, None);
    assert_eq!(e.outbound, Some(Outbound::Routed));
    for (text, mode) in [
        ("public", Outbound::Public),
        ("native", Outbound::Native),
        ("blocked", Outbound::Blocked),
    ] {
        let m = decode_text(&format!(
            r#"{{"type":"execute","id":1,"code":"","outbound":"{text}"}}"#
        ))
        .unwrap();
        let ClientMsg::Execute(e) = m else {
            panic!("{m:?}")
        };
        assert_eq!(e.outbound, Some(mode));
        assert_eq!(outbound_flag(text), Some(mode));
    }
    let bad = decode_text(r#"{"type":"execute","id":1,"code":"","outbound":"open"}"#).unwrap_err();
    assert!(bad.detail.contains("unknown variant `open`"), "{bad:?}");
    assert!(e.retain_handles);
    let m = decode_text(r#"{"type":"closeHandles","id":3,"executionId":"e"}"#).unwrap();
    assert_eq!(m.request_id(), Some(3));
}

#[test]
fn a_request_s_ranges_are_the_executor_s() {
    let execute = |fields: &str| {
        let text = format!(r#"{{"type":"execute","id":1,"code":"",{fields}}}"#);
        match decode_text(&text).unwrap() {
            ClientMsg::Execute(e) => e.check_ranges(),
            other => panic!("{other:?}"),
        }
    };
    assert!(execute(r#""timeout":1,"memoryLimit":8"#).is_ok());
    assert!(execute(r#""timeout":2147483647,"memoryLimit":2048"#).is_ok());
    for (fields, field) in [
        (r#""timeout":0"#, "timeout"),
        (r#""timeout":2147483648"#, "timeout"),
        (r#""memoryLimit":7"#, "memoryLimit"),
        (r#""memoryLimit":2049"#, "memoryLimit"),
    ] {
        let f = execute(fields).unwrap_err();
        assert_eq!(f.code, FailureCode::InvalidRequest, "{fields}");
        assert!(f.message.contains(field), "{}", f.message);
    }
    let f = execute(r#""memoryLimit":4"#).unwrap_err();
    assert!(f.message.contains("from 8 to 2048 (MiB)"), "{}", f.message);
}

#[test]
fn a_request_s_budgets_are_decoded_and_held_to_their_ranges() {
    let execute = |fields: &str| {
        let text = format!(r#"{{"type":"execute","id":1,"code":"",{fields}}}"#);
        match decode_text(&text).unwrap() {
            ClientMsg::Execute(e) => e,
            other => panic!("{other:?}"),
        }
    };
    let e = execute(r#""cpuLimit":50,"toolCallLimit":5,"fetchLimit":0"#);
    assert_eq!(
        (e.cpu_limit, e.tool_call_limit, e.fetch_limit),
        (Some(50), Some(5), Some(0))
    );
    assert!(e.check_ranges().is_ok());
    let e = execute(r#""cpuLimit":2147483647,"toolCallLimit":1000000,"fetchLimit":1000000"#);
    assert!(e.check_ranges().is_ok());
    for (fields, field, allowed) in [
        (
            r#""cpuLimit":0"#,
            "cpuLimit",
            "from 1 to 2147483647 (ms of CPU)",
        ),
        (r#""cpuLimit":2147483648"#, "cpuLimit", "(ms of CPU)"),
        (
            r#""toolCallLimit":1000001"#,
            "toolCallLimit",
            "from 0 to 1000000 (tool calls per run)",
        ),
        (
            r#""fetchLimit":1000001"#,
            "fetchLimit",
            "from 0 to 1000000 (fetches per run)",
        ),
    ] {
        let f = execute(fields).check_ranges().unwrap_err();
        assert_eq!(f.code, FailureCode::InvalidRequest, "{fields}");
        assert!(f.message.contains(field), "{}", f.message);
        assert!(f.message.contains(allowed), "{}", f.message);
    }
    // Not an integer: the message does not fit its shape.
    let bad = decode_text(r#"{"type":"execute","id":1,"code":"","fetchLimit":-1}"#).unwrap_err();
    assert_eq!(bad.id, Some(1));
}

#[test]
fn the_welcome_reports_the_budget_ceilings_null_when_none() {
    let ceilings = |budgets| Ceilings {
        timeout_ms: 30_000,
        memory_limit_mib: 128,
        outbound: Outbound::Public,
        budgets,
        approval_timeout_ms: 300_000,
    };
    let with = codemode_pool::protocol::Budgets {
        cpu_limit_ms: Some(50),
        tool_call_limit: Some(5),
        fetch_limit: Some(0),
    };
    let json = serde_json::to_value(Limits::new(1, MAX_MESSAGE_BYTES, &ceilings(with))).unwrap();
    assert_eq!(json["cpuLimit"], 50);
    assert_eq!(json["toolCallLimit"], 5);
    assert_eq!(json["fetchLimit"], 0);
    let none = Limits::new(1, MAX_MESSAGE_BYTES, &ceilings(Default::default()));
    let json = serde_json::to_value(none).unwrap();
    for key in ["cpuLimit", "toolCallLimit", "fetchLimit"] {
        assert!(json.get(key).is_some_and(|v| v.is_null()), "{key}: {json}");
    }
}

#[test]
fn a_routed_fetch_s_status_is_the_response_rule() {
    let answer = |status: u32| {
        let text =
            format!(r#"{{"type":"fetchResult","id":1,"callId":1,"ok":true,"status":{status}}}"#);
        match decode_text(&text).unwrap() {
            ClientMsg::FetchResult(r) => r.into_response(Vec::new(), "https://a.test/"),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(answer(200).unwrap().status, 200);
    assert_eq!(answer(599).unwrap().status, 599);
    // 1xx is no final response (the Fetch standard's Response takes 200-599), nor 65736.
    for status in [0, 100, 101, 199, 600, 65_736] {
        let text = answer(status).unwrap_err();
        assert!(text.contains("outside 200-599"), "{status}: {text}");
    }
    let text = r#"{"type":"fetchResult","id":1,"callId":1,"ok":false,"message":"no"}"#;
    let ClientMsg::FetchResult(r) = decode_text(text).unwrap() else {
        panic!()
    };
    assert_eq!(r.into_response(Vec::new(), "u"), Err("no".to_string()));
}

#[test]
fn binary_messages_carry_their_payload() {
    let header = br#"{"type":"toolResult","id":1,"callId":2,"ok":true}"#;
    let mut bytes = (header.len() as u32).to_be_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0xff, 0x0f, 0x49, 0x54]);
    let (m, payload) = decode_binary(&bytes).unwrap();
    assert_eq!(
        m,
        ClientMsg::ToolResult {
            id: 1,
            call_id: 2,
            ok: true,
            message: None,
            denied: false,
        }
    );
    assert_eq!(payload, [0xff, 0x0f, 0x49, 0x54]);
    // An empty payload is the text form.
    let mut bytes = (header.len() as u32).to_be_bytes().to_vec();
    bytes.extend_from_slice(header);
    assert!(decode_binary(&bytes).unwrap().1.is_empty());
}

#[test]
fn bad_messages_say_what_is_wrong_and_keep_the_id() {
    let e = decode_text("not json").unwrap_err();
    assert!(e.detail.contains("not JSON"), "{e:?}");
    assert_eq!(e.id, None);
    let e = decode_text(r#"{"id":4}"#).unwrap_err();
    assert_eq!(
        (e.detail.as_str(), e.id),
        ("the message has no `type`", Some(4))
    );
    let e = decode_text(r#"{"type":"nope","id":5}"#).unwrap_err();
    assert!(e.detail.contains("unknown variant `nope`"), "{e:?}");
    assert_eq!(e.id, Some(5));
    let e = decode_text(r#"{"type":"execute","id":6,"outbound":"native"}"#).unwrap_err();
    assert!(e.detail.contains("missing field `code`"), "{e:?}");
    assert_eq!(e.id, Some(6));
    let e = decode_text(r#"{"type":"stats","id":-1}"#).unwrap_err();
    assert_eq!(e.id, None);
    assert!(decode_binary(&[0, 0])
        .unwrap_err()
        .detail
        .contains("shorter"));
    let e = decode_binary(&[0, 0, 0, 9, b'{', b'}']).unwrap_err();
    assert!(e.detail.contains("header is 9 bytes"), "{e:?}");
}

/// `msg` with `payload` encoded: it is the binary form; its JSON header and its payload.
fn binary_parts(msg: &ServerMsg, payload: Option<&[u8]>) -> (serde_json::Value, Vec<u8>) {
    let Message::Binary(bytes) = encode(msg, payload) else {
        panic!("a payload travels in the binary form")
    };
    let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    let header = serde_json::from_slice(&bytes[4..4 + len]).unwrap();
    (header, bytes[4 + len..].to_vec())
}

#[test]
fn daemon_messages_encode_in_both_forms() {
    let outcome = RunOutcome {
        result: Some(vec![1, 2, 3]),
        error: Some(RunError {
            code: "PROGRAM_ERROR".into(),
            message: "Error: x".into(),
            location: None,
        }),
        logs: vec![LogEntry {
            level: LogLevel::Warn,
            message: "w".into(),
        }],
        stats: RunStats {
            wall_us: 1500,
            cpu_us: 250,
            heap_peak: 10,
            buffers_peak: 0,
            tool_calls: 2,
            worker_pid: 7,
            cpu_budget_us: 200,
            fetches: 3,
        },
        grant: Some(Grant {
            execution_id: "e1".into(),
            handles: vec!["fetch".into()],
        }),
        ..RunOutcome::default()
    };
    let (msg, payload) = ServerMsg::completion(9, Ok(outcome));
    let (header, payload) = binary_parts(&msg, payload.as_deref());
    assert_eq!(payload, [1, 2, 3]);
    assert_eq!(
        header,
        serde_json::json!({
            "type": "done", "id": 9, "hasResult": true,
            "error": {"code": "PROGRAM_ERROR", "message": "Error: x"},
            "logs": [{"level": "warn", "message": "w"}],
            "stats": {"wallMs": 1.5, "cpuMs": 0.25, "heapPeakBytes": 10.0,
                      "buffersPeakBytes": 0.0, "toolCalls": 2, "workerPid": 7,
                      "cpuBudgetMs": 0.2, "fetches": 3},
            "grant": {"executionId": "e1", "handles": ["fetch"]},
            "calls": [],
        })
    );
    let (msg, _) = ServerMsg::completion(3, Err(FailureCode::QueueFull.failure(&[])));
    let Message::Text(text) = encode(&msg, None) else {
        panic!("no payload: the text form")
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "failed");
    assert_eq!(v["code"], "QUEUE_FULL");
    assert_eq!(v["retryable"], true);
    let counts = DaemonCounts {
        workers: 1,
        idle: 1,
        running: 0,
        queued: 0,
        retained: 0,
        connections: 2,
        engine: None,
    };
    let Message::Text(text) = encode(&ServerMsg::Stats { id: 1, counts }, None) else {
        panic!()
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["connections"], 2);
    assert_eq!(v["type"], "stats");
}
/// The headings of docs/protocol.md's section `title`: the message types it documents.
fn documented(title: &str) -> Vec<String> {
    let doc = include_str!("../../../../docs/protocol.md");
    let start = doc.find(title).expect("section");
    let rest = &doc[start + title.len()..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    section
        .lines()
        .filter_map(|l| l.strip_prefix("### `")?.strip_suffix('`'))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_client_message_type_is_documented() {
    // serde names every variant it knows when it meets an unknown one.
    let err = serde_json::from_str::<ClientMsg>(r#"{"type":"\u0000"}"#)
        .unwrap_err()
        .to_string();
    let known: Vec<&str> = err.split('`').skip(3).step_by(2).collect();
    assert!(known.len() >= 7, "{err}");
    let doc = documented("## Messages: client to daemon");
    for t in &known {
        assert!(
            doc.iter().any(|d| d == t),
            "`{t}` is not documented: {doc:?}"
        );
    }
    assert_eq!(
        doc.len(),
        known.len(),
        "documented {doc:?}, known {known:?}"
    );
}

#[test]
fn every_daemon_message_type_is_documented() {
    use ServerMsg as M;
    // The index makes the compiler ask for a sample of every variant added.
    fn index(m: &ServerMsg) -> usize {
        match m {
            M::Welcome { .. } => 0,
            M::Refused { .. } => 1,
            M::ToolCall { .. } => 2,
            M::Fetch { .. } => 3,
            M::Done { .. } => 4,
            M::Invoked { .. } => 5,
            M::Ack { .. } => 6,
            M::Stats { .. } => 7,
            M::Failed { .. } => 8,
            M::HandlesClosed { .. } => 9,
            M::Error { .. } => 10,
            M::Log { .. } => 11,
            M::Approve { .. } => 12,
        }
    }
    let stats = RunUsage::from(RunStats::default());
    let counts = DaemonCounts::default();
    let samples = [
        M::Welcome {
            protocol: 1,
            daemon: "d".into(),
            name: "n".into(),
            limits: Limits::new(
                1,
                MAX_MESSAGE_BYTES,
                &Ceilings {
                    timeout_ms: 30_000,
                    memory_limit_mib: 128,
                    outbound: Outbound::Public,
                    budgets: codemode_pool::protocol::Budgets {
                        cpu_limit_ms: Some(50),
                        tool_call_limit: None,
                        fetch_limit: Some(3),
                    },
                    approval_timeout_ms: 300_000,
                },
            ),
        },
        M::Refused {
            code: "CONNECTION_REFUSED",
            message: "m".into(),
        },
        M::ToolCall {
            id: 1,
            call_id: 1,
            provider: "p".into(),
            tool: "t".into(),
        },
        M::Fetch {
            id: 1,
            call_id: 1,
            execution_id: Some("e".into()),
            method: "GET".into(),
            url: "u".into(),
            headers: vec![],
            has_body: false,
            redirect: Redirect::Follow,
        },
        M::Done {
            id: 1,
            has_result: false,
            error: Some(FailureReport {
                code: "PROGRAM_ERROR".into(),
                message: "m".into(),
                line: Some(1),
                column: Some(2),
                module: Some("./a.js".into()),
            }),
            logs: vec![LogEntry {
                level: LogLevel::Log,
                message: "m".into(),
            }],
            stats,
            grant: Some(Grant {
                execution_id: "e".into(),
                handles: vec!["fetch".into()],
            }),
            calls: vec![CallRecord {
                provider: "p".into(),
                tool: "t".into(),
                status: CallStatus::Pending,
                ms: 0.0,
            }],
            paused: Some(PausedMsg {
                token: "cm1.k.b.s".into(),
                pending: vec![PendingMsg {
                    id: "0".into(),
                    provider: "p".into(),
                    tool: "t".into(),
                    args_bytes: 3,
                }],
            }),
        },
        M::Approve {
            id: 1,
            call_id: 2,
            provider: "p".into(),
            tool: "t".into(),
        },
        M::Invoked {
            id: 1,
            status: 200,
            status_text: String::new(),
            headers: vec![],
            has_body: false,
        },
        M::Ack { id: 1 },
        M::Stats { id: 1, counts },
        M::Failed {
            id: 1,
            code: "CLOSED",
            message: "m".into(),
            retryable: false,
        },
        M::HandlesClosed {
            execution_id: "e".into(),
            reason: "closed",
        },
        M::Error {
            code: "PROTOCOL_ERROR",
            message: "m".into(),
            id: None,
        },
        M::Log {
            id: 1,
            entry: LogEntry {
                level: LogLevel::Log,
                message: "m".into(),
            },
        },
    ];
    let mut seen: Vec<usize> = samples.iter().map(index).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, (0..samples.len()).collect::<Vec<_>>());
    let doc = documented("## Messages: daemon to client");
    for m in &samples {
        let json = serde_json::to_value(m).unwrap();
        let t = json["type"].as_str().unwrap().to_string();
        assert!(doc.contains(&t), "`{t}` is not documented: {doc:?}");
        // Every field the message carries, nested ones included, is named in its section.
        let text = section_of("## Messages: daemon to client", &t);
        let mut keys = Vec::new();
        keys_of(&json, &mut keys);
        for key in keys.iter().filter(|k| *k != "type") {
            assert!(
                names(&text, key),
                "`{t}`'s field `{key}` is not documented in:\n{text}"
            );
        }
    }
    assert_eq!(doc.len(), samples.len(), "documented {doc:?}");
}

/// The text of message `t`'s section (its `### \`t\`` heading to the next) under `part`.
fn section_of(part: &str, t: &str) -> String {
    let doc = include_str!("../../../../docs/protocol.md");
    let start = doc.find(part).expect("part");
    let rest = &doc[start + part.len()..];
    let rest = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    let heading = format!("### `{t}`");
    let at = rest.find(&heading).expect("heading");
    let body = &rest[at + heading.len()..];
    body[..body.find("\n### ").unwrap_or(body.len())].to_string()
}

/// Whether `text` names field `key`: as a code span (`` `key` ``) or in a `{ a, b: T }` list.
fn names(text: &str, key: &str) -> bool {
    text.match_indices(key).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = &text[at + key.len()..];
        matches!(before, Some('`' | '{' | ' '))
            && (after.starts_with(['`', ',', ':', '}']) || after.starts_with(" }"))
    })
}

/// The keys of every object in `v`.
fn keys_of(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                keys_of(v, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| keys_of(i, out)),
        _ => {}
    }
}

#[test]
fn execute_carries_approve_and_approval() {
    let e = match decode_text(
        r#"{"type":"execute","id":1,"code":"",
           "providers":[{"name":"billing","tools":["list","refund"],"approve":["refund"]},
                        {"name":"mail","tools":null,"approve":true},{"name":"kv"}],
           "approval":{"mode":"callback","timeout":500}}"#,
    ) {
        Ok(ClientMsg::Execute(e)) => e,
        other => panic!("{other:?}"),
    };
    let spec = e.approval_spec().unwrap().unwrap();
    assert_eq!(
        spec.approve,
        vec![
            ("billing".to_string(), Some(vec!["refund".to_string()])),
            ("mail".to_string(), None)
        ]
    );
    assert_eq!(spec.mode, ApprovalMode::Callback { timeout_ms: 500 });
    assert_eq!(e.provider_decls()[0].tools.as_ref().unwrap().len(), 2);
    assert_eq!(e.provider_decls()[2].tools, None);
}

#[test]
fn approval_defaults_and_refusals() {
    let spec = |fields: &str| {
        let text = format!(r#"{{"type":"execute","id":1,"code":""{fields}}}"#);
        match decode_text(&text) {
            Ok(ClientMsg::Execute(e)) => e.approval_spec(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(spec("").unwrap().map(|s| s.mode), None);
    // `approve` alone: interrupt mode with the default expiry.
    let s = spec(r#","providers":[{"name":"p","tools":null,"approve":true}]"#).unwrap();
    let want = limits::options::DEFAULT_APPROVAL_EXPIRES_IN_MS;
    assert_eq!(
        s.unwrap().mode,
        ApprovalMode::Interrupt {
            expires_in_ms: want
        }
    );
    for (fields, field) in [
        (r#","approval":{"mode":"interrupt"}"#, "approval"),
        (
            r#","providers":[{"name":"p","tools":["a"],"approve":["b"]}]"#,
            "providers[0].approve",
        ),
        (
            r#","providers":[{"name":"p","tools":null,"approve":false}]"#,
            "providers[0].approve",
        ),
        (
            r#","providers":[{"name":"p","tools":null,"approve":true}],"approval":{"mode":"interrupt","expiresIn":0}"#,
            "approval.expiresIn",
        ),
        (
            r#","providers":[{"name":"p","tools":null,"approve":true}],"approval":{"mode":"callback","timeout":4294967296}"#,
            "approval.timeout",
        ),
    ] {
        let f = spec(fields).unwrap_err();
        assert_eq!(f.code, FailureCode::InvalidRequest, "{fields}");
        assert!(f.message.contains(field), "{}", f.message);
    }
    let e = decode_text(r#"{"type":"execute","id":2,"code":"","approval":{"mode":"later"}}"#)
        .unwrap_err();
    assert_eq!(e.id, Some(2));
    assert!(e.detail.contains("later"), "{e:?}");
}

#[test]
fn resume_and_decision_decode() {
    let m = decode_text(
        r#"{"type":"resume","id":3,"token":"cm1.a.b.c",
           "decisions":[{"id":"0","approved":true},{"id":"1","approved":false,"reason":"no"}],
           "routes":true}"#,
    )
    .unwrap();
    let ClientMsg::Resume(r) = &m else {
        panic!("{m:?}")
    };
    assert_eq!(m.request_id(), Some(3));
    assert_eq!((r.routes, r.live_logs), (true, false));
    assert_eq!(
        r.decisions(),
        vec![
            (
                "0".to_string(),
                Decision {
                    approved: true,
                    reason: None
                }
            ),
            (
                "1".to_string(),
                Decision {
                    approved: false,
                    reason: Some("no".into())
                }
            ),
        ]
    );
    let m = decode_text(r#"{"type":"decision","id":3,"callId":7,"approved":false,"reason":"r"}"#)
        .unwrap();
    assert_eq!(
        m,
        ClientMsg::Decision {
            id: 3,
            call_id: 7,
            approved: false,
            reason: Some("r".into())
        }
    );
    // A decision answers a call; it is not a request of its own.
    assert_eq!(m.request_id(), None);
    assert!(decode_text(r#"{"type":"resume","id":4}"#)
        .unwrap_err()
        .detail
        .contains("missing field `token`"));
}

#[test]
fn a_paused_done_carries_calls_and_its_pending_arguments_in_the_payload() {
    let outcome = RunOutcome {
        calls: vec![
            CallRecord {
                provider: "b".into(),
                tool: "list".into(),
                status: CallStatus::Ok,
                ms: 1.5,
            },
            CallRecord {
                provider: "b".into(),
                tool: "refund".into(),
                status: CallStatus::Pending,
                ms: 0.0,
            },
        ],
        paused: Some(Paused {
            token: "cm1.k.body.sig".into(),
            pending: vec![
                PendingCall {
                    id: "1".into(),
                    provider: "b".into(),
                    tool: "refund".into(),
                    args: vec![1, 2],
                },
                PendingCall {
                    id: "2".into(),
                    provider: "b".into(),
                    tool: "refund".into(),
                    args: vec![3, 4, 5],
                },
            ],
        }),
        ..RunOutcome::default()
    };
    let (msg, payload) = ServerMsg::completion(5, Ok(outcome));
    let (header, payload) = binary_parts(&msg, payload.as_deref());
    assert_eq!(payload, [1, 2, 3, 4, 5]);
    assert_eq!(header["hasResult"], false);
    assert_eq!(
        header["calls"],
        serde_json::json!([
            {"provider": "b", "tool": "list", "status": "ok", "ms": 1.5},
            {"provider": "b", "tool": "refund", "status": "pending", "ms": 0.0},
        ])
    );
    assert_eq!(
        header["paused"],
        serde_json::json!({"token": "cm1.k.body.sig", "pending": [
            {"id": "1", "provider": "b", "tool": "refund", "argsBytes": 2},
            {"id": "2", "provider": "b", "tool": "refund", "argsBytes": 3},
        ]})
    );
    // A run that did not pause: no `paused`, and `calls` always.
    let (msg, _) = ServerMsg::completion(6, Ok(RunOutcome::default()));
    let v = serde_json::to_value(&msg).unwrap();
    assert_eq!(v["calls"], serde_json::json!([]));
    assert!(v.get("paused").is_none());
    let approve = ServerMsg::Approve {
        id: 5,
        call_id: 9,
        provider: "b".into(),
        tool: "refund".into(),
    };
    let (header, payload) = binary_parts(&approve, Some(&[7, 8]));
    assert_eq!(payload, [7, 8]);
    assert_eq!(
        header,
        serde_json::json!({"type": "approve", "id": 5, "callId": 9, "provider": "b", "tool": "refund"})
    );
}

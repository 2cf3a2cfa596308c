//! The run loop: results, console output and its bound, failures, modules, tool calls, fetch,
//! timers, cancellation.

use codemode_protocol::{
    limits, FailureCode, HostMsg, LogLevel, Outbound, WireResponse, WorkerMsg,
};

use super::{echo, execute, failed, no_host, provider, request, succeeded, EXEC_ID};

#[test]
fn returns_the_value_of_an_async_arrow() {
    let ran = succeeded("async () => 1");
    assert_eq!(ran.json.as_deref(), Some("1"));
    assert!(ran.outcome.logs.is_empty());
    assert!(ran.sent.is_empty());
    assert_eq!(ran.outcome.stats.tool_calls, 0);
}

#[test]
fn collects_console_output() {
    let ran = execute(
        request("async () => { console.log('hi', 2); console.warn({ a: 1 }); return 'ok' }"),
        no_host,
    );
    assert_eq!(ran.json.as_deref(), Some("\"ok\""));
    let logs: Vec<(LogLevel, &str)> = ran
        .outcome
        .logs
        .iter()
        .map(|l| (l.level, l.message.as_str()))
        .collect();
    assert_eq!(
        logs,
        [(LogLevel::Log, "hi 2"), (LogLevel::Warn, "{ a: 1 }")]
    );
}

/// A program that writes `0` to `n - 1` with `console[method]`, an entry each.
fn counting(method: &str, n: usize) -> String {
    format!("async () => {{ for (let i = 0; i < {n}; i++) console.{method}(i) }}")
}

#[test]
fn bounds_the_log_and_says_how_much_was_dropped() {
    let ran = succeeded(&counting("log", limits::LOG_ENTRIES + 10));
    let logs = &ran.outcome.logs;
    assert_eq!(logs.len(), limits::LOG_ENTRIES + 1);
    assert_eq!(logs[limits::LOG_ENTRIES - 1].message, "999");
    let last = &logs[limits::LOG_ENTRIES];
    assert_eq!(last.level, LogLevel::Warn);
    assert_eq!(
        last.message,
        FailureCode::LogLimit.render(&[("dropped", "10")])
    );
}

#[test]
fn live_logs_send_each_kept_entry_as_it_is_written_and_only_when_asked() {
    let code = counting("info", limits::LOG_ENTRIES + 3);
    let quiet = execute(request(&code), no_host);
    assert!(quiet.sent.is_empty(), "no Log frame without live_logs");
    let mut req = request(&code);
    req.live_logs = true;
    let ran = execute(req, no_host);
    let live: Vec<_> = ran
        .sent
        .iter()
        .map(|m| match m {
            WorkerMsg::Log { exec_id, entry } => {
                assert_eq!(*exec_id, EXEC_ID);
                entry.clone()
            }
            other => panic!("only Log frames, got {other:?}"),
        })
        .collect();
    // The same entries as the outcome, the bound's notice last.
    assert_eq!(live, ran.outcome.logs);
    assert_eq!(live.len(), limits::LOG_ENTRIES + 1);
    assert_eq!(live[0].level, LogLevel::Info);
}

#[test]
fn reports_a_thrown_error() {
    let ran = execute(
        request("async () => { throw new RangeError('boom') }"),
        no_host,
    );
    let (code, message) = ran.error();
    assert_eq!(code, "PROGRAM_ERROR");
    assert!(message.contains("RangeError: boom"), "{message}");
    assert_eq!(ran.json, None);
}

#[test]
fn reports_a_syntax_error_with_its_line() {
    let (code, message) = failed("async () => {\n  let = ;\n}");
    assert_eq!(code, "SYNTAX_ERROR");
    assert!(message.contains("(line 2, column 3)."), "{message}");
    // Not a body written without its function: no entry-shape reminder.
    assert!(!message.contains("must be one expression"), "{message}");
}

#[test]
fn refuses_a_program_that_is_not_one_expression() {
    let ran = execute(request("const x = 1; async () => x"), no_host);
    assert_eq!(ran.error().0, "ENTRY_SHAPE");
    let (code, message) = failed("42");
    assert_eq!(code, "ENTRY_SHAPE");
    assert!(message.contains("number"), "{message}");
}

#[test]
fn imports_modules_from_the_module_map() {
    let mut req = request("import { answer } from './lib/a.js'\nasync () => answer()");
    req.modules = vec![
        (
            "./lib/a.js".into(),
            "import { base } from './b.js'\nexport const answer = () => base + 2".into(),
        ),
        ("./lib/b.js".into(), "export const base = 40".into()),
    ];
    let ran = execute(req, no_host);
    assert_eq!(ran.outcome.error, None);
    assert_eq!(ran.json.as_deref(), Some("42"));

    let (code, message) = failed("import x from 'lodash'\nasync () => x");
    assert_eq!(code, "MODULE_NOT_FOUND");
    assert!(message.contains("\"lodash\""), "{message}");
}

#[test]
fn awaits_tool_calls_answered_by_the_host() {
    let mut req = request(
        "async () => { const a = await t.echo(1, 'x'); const b = await t.echo(a.length); return [a, b] }",
    );
    req.providers = vec![provider("t", Some(&["echo"]))];
    // The double answers a call with its own arguments, V8-serialized as they came.
    let ran = execute(req, echo);
    assert_eq!(ran.outcome.error, None);
    assert_eq!(ran.json.as_deref(), Some("[[1,\"x\"],[2]]"));
    assert_eq!(ran.outcome.stats.tool_calls, 2);
    let calls: Vec<(u64, u32, &str, &str)> = ran
        .sent
        .iter()
        .map(|m| match m {
            WorkerMsg::ToolCall {
                exec_id,
                call_id,
                provider,
                tool,
                ..
            } => (*exec_id, *call_id, provider.as_str(), tool.as_str()),
            other => panic!("unexpected frame {other:?}"),
        })
        .collect();
    assert_eq!(
        calls,
        [(EXEC_ID, 0, "t", "echo"), (EXEC_ID, 1, "t", "echo")]
    );
}

#[test]
fn a_failed_tool_call_rejects_and_stale_answers_are_ignored() {
    let mut req = request("async () => { try { await t.go() } catch (e) { return e.message } }");
    req.providers = vec![provider("t", None)];
    let ran = execute(req, |msg| match msg {
        WorkerMsg::ToolCall { call_id, .. } => vec![
            // An answer for an earlier run, then one for a call that does not exist.
            HostMsg::ToolResult {
                exec_id: EXEC_ID - 1,
                call_id: *call_id,
                ok: true,
                payload: Vec::new(),
            },
            HostMsg::ToolResult {
                exec_id: EXEC_ID,
                call_id: call_id + 100,
                ok: true,
                payload: Vec::new(),
            },
            HostMsg::ToolResult {
                exec_id: EXEC_ID,
                call_id: *call_id,
                ok: false,
                payload: b"the tool said no".to_vec(),
            },
        ],
        _ => Vec::new(),
    });
    assert_eq!(ran.outcome.error, None);
    assert_eq!(ran.json.as_deref(), Some("\"the tool said no\""));
}

#[test]
fn a_run_ends_when_the_host_cancels_it_or_goes_away() {
    let mut req = request("async () => { await t.wait(); return 'never' }");
    req.providers = vec![provider("t", None)];
    let cancelled = execute(req.clone(), |_| vec![HostMsg::Cancel { exec_id: EXEC_ID }]);
    assert_eq!(cancelled.error().0, "INTERNAL");
    let gone = execute(req, no_host);
    assert_eq!(gone.error().0, "INTERNAL");
    assert_eq!(gone.sent.len(), 1);
}

#[test]
fn a_promise_nothing_can_settle_ends_the_run() {
    let ran = execute(request("async () => new Promise(() => {})"), no_host);
    assert_eq!(ran.error().0, "NEVER_SETTLED");
}

#[test]
fn timers_fire_while_the_run_waits() {
    let ran =
        succeeded("async () => { await new Promise((r) => setTimeout(r, 5)); return 'later' }");
    assert_eq!(ran.json.as_deref(), Some("\"later\""));
}

#[test]
fn fetch_is_closed_when_outbound_is_blocked() {
    let ran = execute(
        request("async () => { try { await fetch('https://example.test/') } catch (e) { return [e.name, e.message] } }"),
        no_host,
    );
    let expected = format!(
        "[\"TypeError\",\"{}\"]",
        FailureCode::NetworkClosed.template()
    );
    assert_eq!(ran.json.as_deref(), Some(expected.as_str()));
    assert!(ran.sent.is_empty());
}

#[test]
fn fetch_is_answered_by_the_host_when_routed() {
    let mut req = request(
        "async () => { const r = await fetch('https://example.test/a', { method: 'POST', body: 'hi' }); return [r.status, r.headers.get('x-k'), await r.text()] }",
    );
    req.outbound = Outbound::Routed;
    let ran = execute(req, |msg| match msg {
        WorkerMsg::Fetch {
            exec_id, call_id, ..
        } => vec![HostMsg::FetchResult {
            exec_id: *exec_id,
            call_id: *call_id,
            result: Ok(WireResponse {
                status: 201,
                status_text: "Created".into(),
                headers: vec![("x-k".into(), "v".into())],
                body: Some(b"pong".to_vec()),
                url: "https://example.test/a".into(),
                redirected: false,
            }),
        }],
        _ => Vec::new(),
    });
    assert_eq!(ran.outcome.error, None);
    assert_eq!(ran.json.as_deref(), Some("[201,\"v\",\"pong\"]"));
    let [WorkerMsg::Fetch { request, .. }] = ran.sent.as_slice() else {
        panic!("one fetch frame expected, got {:?}", ran.sent);
    };
    assert_eq!(request.method, "POST");
    assert_eq!(request.url, "https://example.test/a");
    assert_eq!(request.body.as_deref(), Some(&b"hi"[..]));
    assert_eq!(ran.outcome.stats.tool_calls, 0);
}

#[test]
fn a_typescript_module_is_refused_in_the_words_of_the_failure_table() {
    let mut req = request("import { x } from './a.ts'\nasync () => x");
    req.modules = vec![("./a.ts".into(), "export const x = 1\nenum E { A }\n".into())];
    let ran = execute(req, no_host);
    let (code, message) = ran.error();
    assert_eq!(code, "SYNTAX_ERROR");
    let refusal = match codemode_typestrip::strip("export const x = 1\nenum E { A }\n") {
        Err(codemode_typestrip::StripError::Refused(r)) => r,
        other => panic!("not refused: {other:?}"),
    };
    let text = FailureCode::TypeScriptUnsupported.render(&[
        ("what", "The module \"./a.ts\""),
        ("construct", refusal.construct),
        ("line", "2"),
        ("instead", refusal.instead),
    ]);
    assert!(message.contains(&text), "{message}");
    assert!(!message.contains(".."), "{message}");
}

//! A retained execution served by the worker: the grant, invocations in order with state kept,
//! console output dropped, the dispatch gone, and the end on CloseHandles.

use codemode_protocol::{FailureCode, HostMsg, WorkerMsg};

use super::{execute, invoke, provider, request, EXEC_ID};

/// An invocation's answer: its body as text, or its failure code and text.
type Answer = Result<String, (String, String)>;

/// Invokes twice after the grant, then closes; returns the execution id and the answers.
fn serve_twice(code: &str) -> (Option<String>, Vec<Answer>) {
    let mut req = request(code);
    req.retain_handles = true;
    let ran = execute(req, |msg| match msg {
        WorkerMsg::Done { outcome, .. } if outcome.grant.is_some() => {
            vec![invoke(1, "https://x/a")]
        }
        WorkerMsg::Invoked { invoke_id: 1, .. } => vec![invoke(2, "https://x/b")],
        WorkerMsg::Invoked { invoke_id: 2, .. } => vec![HostMsg::CloseHandles { exec_id: EXEC_ID }],
        _ => vec![],
    });
    let grant = ran.outcome.grant.map(|g| g.execution_id);
    let answers = ran
        .sent
        .iter()
        .filter_map(|m| match m {
            WorkerMsg::Invoked { result, .. } => Some(match result {
                Ok(r) => Ok(String::from_utf8_lossy(r.body.as_deref().unwrap_or_default()).into()),
                Err(e) => Err((e.code.clone(), e.message.clone())),
            }),
            _ => None,
        })
        .collect();
    (grant, answers)
}

#[test]
fn a_handler_keeps_its_state_across_invocations_in_order() {
    let (grant, answers) = serve_twice(
        "async () => { let n = 0; return { fetch: (r) => { console.log('dropped'); return new Response(++n + ' ' + new URL(r.url).pathname) } } }",
    );
    let id = grant.expect("a grant");
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert_eq!(&id[14..15], "4", "version 4: {id}");
    assert_eq!(answers, [Ok("1 /a".into()), Ok("2 /b".into())]);
}

#[test]
fn a_tool_call_after_the_run_rejects_inside_the_isolate() {
    let code = "async () => async () => { try { await store.list() } catch (e) { return new Response(e.message) } }";
    let mut req = request(code);
    req.retain_handles = true;
    req.providers = vec![provider("store", None)];
    let ran = execute(req, |msg| match msg {
        WorkerMsg::Done { outcome, .. } if outcome.grant.is_some() => vec![invoke(1, "https://x/")],
        WorkerMsg::Invoked { .. } => vec![HostMsg::CloseHandles { exec_id: EXEC_ID }],
        _ => vec![],
    });
    assert!(!ran
        .sent
        .iter()
        .any(|m| matches!(m, WorkerMsg::ToolCall { .. })));
    let body = ran.sent.iter().find_map(|m| match m {
        WorkerMsg::Invoked { result: Ok(r), .. } => r.body.clone(),
        _ => None,
    });
    assert_eq!(
        body.as_deref(),
        Some(FailureCode::ExecutionCompleted.template().as_bytes())
    );
}

#[test]
fn a_value_that_is_not_a_response_and_a_throw_are_told_apart() {
    let (_, answers) = serve_twice(
        "async () => { let n = 0; return (r) => { n += 1; if (n === 1) return { status: 200 }; throw new Error('boom') } }",
    );
    assert_eq!(
        answers,
        [
            Err((
                "HANDLE_NOT_RESPONSE".into(),
                FailureCode::HandleNotResponse.template().into()
            )),
            Err(("HANDLER_ERROR".into(), "boom".into())),
        ]
    );
}

#[test]
fn other_results_grant_nothing() {
    let mut req = request("async () => ({ fetch: 1 })");
    req.retain_handles = true;
    let ran = execute(req, |_| vec![]);
    assert!(ran.outcome.grant.is_none());
    assert_eq!(ran.json.as_deref(), Some("{\"fetch\":1}"));
}

//! The run's budgets: CPU time of the program's thread (waiting for the host and for timers not
//! counted) and the counts of its tool calls and fetches, for a run and afresh for each
//! invocation of a retained execution.

use std::time::Duration;

use codemode_protocol::{FailureCode, Outbound, WorkerMsg};

use super::{echo, execute, execute_in_turn, invoke, no_host, provider, request, succeeded, Ran};

const BUDGET_MS: u32 = 50;
/// How far past its budget a stopped run's CPU may be counted: V8 checks for interrupts at
/// every function entry and loop back-edge, so the overshoot is the time to the next check plus
/// the cancel thread's wake-up. Generous, for a loaded machine; the measured p50/p99 are printed
/// by `a_busy_loop_overshoots_its_budget_by_little`.
const OVERSHOOT_BOUND_US: u64 = 50_000;

fn budgeted(code: &str) -> Ran {
    let mut req = request(code);
    req.budgets.cpu_limit_ms = Some(BUDGET_MS);
    execute(req, no_host)
}

/// Asserts the run was stopped by its CPU budget, in the grammar's words, counted within the
/// bound; returns how far past the budget it ran, in microseconds.
fn stopped_by_the_budget(ran: &Ran) -> u64 {
    let (code, message) = ran.error();
    assert_eq!(code, "CPU_LIMIT", "{message}");
    let ms = BUDGET_MS.to_string();
    assert_eq!(message, FailureCode::CpuLimit.render(&[("ms", &ms)]));
    let counted = ran.outcome.stats.cpu_budget_us;
    let budget = u64::from(BUDGET_MS) * 1000;
    assert!(counted >= budget, "stopped after {counted} us of CPU");
    let overshoot = counted - budget;
    assert!(
        overshoot < OVERSHOOT_BOUND_US,
        "{overshoot} us past the budget"
    );
    overshoot
}

#[test]
fn a_busy_loop_ends_with_the_cpu_text() {
    stopped_by_the_budget(&budgeted("async () => { for (;;) {} }"));
}

#[test]
fn the_next_run_after_a_spent_budget_is_unaffected() {
    let mut spent = request("async () => { for (;;) {} }");
    spent.budgets.cpu_limit_ms = Some(BUDGET_MS);
    // The same budget again, for a run that needs a little of it, and a run without one that
    // needs more than it.
    let mut modest =
        request("async () => { let x = 0; for (let i = 0; i < 1e5; i++) x += i; return x }");
    modest.budgets.cpu_limit_ms = Some(BUDGET_MS);
    let long = request("async () => { const end = performance.now() + 120; while (performance.now() < end); return 'done' }");
    let ran = execute_in_turn(vec![spent, modest, long], no_host);
    stopped_by_the_budget(&ran[0]);
    assert_eq!(ran[1].outcome.error, None);
    assert_eq!(ran[1].json.as_deref(), Some("4999950000"));
    assert_eq!(ran[2].outcome.error, None);
    assert_eq!(ran[2].json.as_deref(), Some("\"done\""));
    assert_eq!(ran[2].outcome.stats.cpu_budget_us, 0);
}

#[test]
fn a_microtask_loop_is_counted() {
    stopped_by_the_budget(&budgeted("async () => { for (;;) await null }"));
}

#[test]
fn a_timer_loop_is_counted() {
    // The program itself awaits a promise nothing settles; only the timers' callbacks work.
    let ran = budgeted(
        "async () => { await new Promise(() => { const tick = () => { let x = 0; for (let i = 0; i < 1e5; i++) x += i; setTimeout(tick, 1) }; setTimeout(tick, 1) }) }",
    );
    stopped_by_the_budget(&ran);
}

#[test]
fn awaiting_a_slow_tool_costs_no_budget() {
    let mut req = request("async () => { const [a] = await t.slow(1); return a + 1 }");
    req.budgets.cpu_limit_ms = Some(BUDGET_MS);
    req.providers = vec![provider("t", None)];
    // The host takes ten budgets' worth of wall time to answer.
    let ran = execute(req, |msg| {
        if matches!(msg, WorkerMsg::ToolCall { .. }) {
            std::thread::sleep(Duration::from_millis(u64::from(BUDGET_MS) * 10));
        }
        echo(msg)
    });
    assert_eq!(ran.outcome.error, None);
    assert_eq!(ran.json.as_deref(), Some("2"));
    let stats = ran.outcome.stats;
    assert!(stats.cpu_budget_us > 0 && stats.cpu_budget_us < u64::from(BUDGET_MS) * 1000);
}

#[test]
fn without_a_budget_nothing_is_counted_against_one() {
    let ran = succeeded("async () => { for (let i = 0; i < 1e6; i++); return 1 }");
    assert_eq!(ran.outcome.stats.cpu_budget_us, 0);
    assert!(ran.outcome.stats.cpu_us > 0);
}

#[test]
fn a_busy_loop_overshoots_its_budget_by_little() {
    let mut overshoots: Vec<u64> = (0..20)
        .map(|_| stopped_by_the_budget(&budgeted("async () => { for (;;) {} }")))
        .collect();
    overshoots.sort_unstable();
    let p50 = overshoots[overshoots.len() / 2];
    let p99 = overshoots[overshoots.len() - 1];
    eprintln!("cpu budget {BUDGET_MS} ms, overshoot over 20 runs: p50 {p50} us, p99 {p99} us");
}

#[test]
fn the_tool_call_past_the_limit_rejects_and_is_caught() {
    let code = "async () => { const out = []; for (let i = 0; i < 7; i++) { try { out.push((await t.echo(i))[0]) } catch (e) { out.push(e.message) } } return out }";
    let mut req = request(code);
    req.budgets.tool_call_limit = Some(5);
    req.providers = vec![provider("t", None)];
    let ran = execute(req, echo);
    assert_eq!(ran.outcome.error, None);
    let text =
        FailureCode::ToolCallLimit.render(&[("provider", "t"), ("tool", "echo"), ("limit", "5")]);
    let expected = format!("[0,1,2,3,4,{text:?},{text:?}]");
    assert_eq!(ran.json.as_deref(), Some(expected.as_str()));
    let calls = ran
        .sent
        .iter()
        .filter(|m| matches!(m, WorkerMsg::ToolCall { .. }))
        .count();
    assert_eq!(calls, 5, "the refused calls never reach the host");
    assert_eq!(ran.outcome.stats.tool_calls, 5);
}

#[test]
fn a_tool_call_limit_of_zero_refuses_every_call() {
    let mut req = request("async () => { try { await t.echo() } catch (e) { return e.message } }");
    req.budgets.tool_call_limit = Some(0);
    req.providers = vec![provider("t", None)];
    let ran = execute(req, echo);
    let text =
        FailureCode::ToolCallLimit.render(&[("provider", "t"), ("tool", "echo"), ("limit", "0")]);
    assert_eq!(ran.json, Some(format!("{text:?}")));
    assert!(ran.sent.is_empty());
}

#[test]
fn the_fetch_past_the_limit_rejects_and_is_caught() {
    let code = "async () => { const out = []; for (const p of ['a', 'b', 'c']) { try { out.push(await (await fetch('https://example.test/' + p)).text()) } catch (e) { out.push(e.name + ': ' + e.message) } } return out }";
    let mut req = request(code);
    req.outbound = Outbound::Routed;
    req.budgets.fetch_limit = Some(2);
    let ran = execute(req, echo);
    assert_eq!(ran.outcome.error, None);
    let text = FailureCode::FetchLimit.render(&[("url", "https://example.test/c"), ("limit", "2")]);
    let expected =
        format!("[\"https://example.test/a\",\"https://example.test/b\",\"TypeError: {text}\"]");
    assert_eq!(ran.json.as_deref(), Some(expected.as_str()));
    assert_eq!(ran.outcome.stats.fetches, 2);
    assert_eq!(ran.outcome.stats.tool_calls, 0);
}

#[test]
fn each_invocation_gets_fresh_budgets() {
    // The run and each invocation spend most of the CPU budget and the whole fetch limit;
    // the last invocation loops until its budget stops it, which ends the execution.
    let code = "async () => {
        const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end) {} };
        const once = async (url) => { spin(30); return (await fetch(url)).text() };
        await once('https://example.test/run');
        return { fetch: async (r) => {
            if (r.url.endsWith('/3')) for (;;) {}
            const first = await once(r.url);
            let second;
            try { await fetch(r.url) } catch (e) { second = e.message }
            return new Response(first + ' | ' + second);
        } };
    }";
    let mut req = request(code);
    req.retain_handles = true;
    req.outbound = Outbound::Routed;
    req.budgets.cpu_limit_ms = Some(BUDGET_MS);
    req.budgets.fetch_limit = Some(1);
    let ran = execute(req, |msg| match msg {
        WorkerMsg::Done { outcome, .. } if outcome.grant.is_some() => {
            vec![invoke(1, "https://x/1")]
        }
        WorkerMsg::Invoked { invoke_id, .. } if *invoke_id < 3 => {
            let next = invoke_id + 1;
            vec![invoke(next, &format!("https://x/{next}"))]
        }
        other => echo(other),
    });
    assert_eq!(ran.outcome.error, None);
    assert!(ran.outcome.grant.is_some());
    assert_eq!(ran.outcome.stats.fetches, 1);
    let answers: Vec<_> = ran
        .sent
        .iter()
        .filter_map(|m| match m {
            WorkerMsg::Invoked { result, .. } => Some(match result {
                Ok(r) => {
                    Ok(String::from_utf8_lossy(r.body.as_deref().unwrap_or_default()).into_owned())
                }
                Err(e) => Err((e.code.clone(), e.message.clone())),
            }),
            _ => None,
        })
        .collect();
    let refused = |n: u32| {
        let url = format!("https://x/{n}");
        FailureCode::FetchLimit.render(&[("url", &url), ("limit", "1")])
    };
    let ms = BUDGET_MS.to_string();
    assert_eq!(
        answers,
        [
            Ok(format!("https://x/1 | {}", refused(1))),
            Ok(format!("https://x/2 | {}", refused(2))),
            Err((
                "CPU_LIMIT".to_string(),
                FailureCode::CpuLimit.render(&[("ms", &ms)])
            )),
        ]
    );
}

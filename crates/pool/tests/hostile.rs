//! The host treats every worker as hostile: each scenario has `codemode-fake-worker` (no V8)
//! send what a worker taken over by its program might, beside a healthy worker running
//! another tenant's execution. The hostile worker is killed and replaced, its run (if it still
//! held one) fails with WORKER_VIOLATION, and the healthy run completes untouched: its tool
//! calls and fetches reach its own host only, and nothing of the hostile run reaches it.
//! Run twice: here with reader threads, and from hostile_polled.rs with a poll(2) loop calling
//! `Pool::readable` (the addon's reader); `READER` is the including crate's choice.
//!
//! One file over 500 lines: the scenarios share one pair of tenants, one scenario runner and
//! one pool setup, which both readers run unchanged.

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_pool::protocol::{limits, Budgets, Failure, FailureCode, Outbound, ProviderDecl};
use codemode_pool::{ExecSpec, FetchCall, Host, Pool, ToolCall};
use harness::{Done, Reader, TestPool};

pub(crate) mod harness;

/// The reader these scenarios run under (hostile_polled.rs declares its own).
#[allow(dead_code)]
const READER: Reader = Reader::Threads;

const FAKE: &str = env!("CARGO_BIN_EXE_codemode-fake-worker");
const BOUND: Duration = Duration::from_secs(20);

/// A tenant's host: records every call it sees; answers them when `answers` is set.
struct Tenant {
    pool: Pool,
    answers: bool,
    calls: Mutex<Vec<String>>,
}

impl Tenant {
    fn new(pool: &Pool, answers: bool) -> Arc<Tenant> {
        Arc::new(Tenant {
            pool: pool.clone(),
            answers,
            calls: Mutex::new(Vec::new()),
        })
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl Host for Tenant {
    fn tool_call(&self, call: ToolCall) {
        let args = String::from_utf8_lossy(&call.args).into_owned();
        let seen = format!("{}:{}.{}({args})", call.exec_id, call.provider, call.tool);
        self.calls.lock().unwrap().push(seen);
        if self.answers {
            let pool = self.pool.clone();
            std::thread::spawn(move || {
                let answer = format!("answer:{args}").into_bytes();
                pool.answer_tool_call(call.exec_id, call.call_id, true, answer);
            });
        }
    }

    fn fetch(&self, call: FetchCall) {
        let seen = format!("{}:GET {}", call.exec_id, call.request.url);
        self.calls.lock().unwrap().push(seen);
        if self.answers {
            harness::answer_fetch_later(&self.pool, call);
        }
    }
}

fn submit(pool: &Pool, host: &Arc<Tenant>, spec: ExecSpec) -> (u64, Done) {
    harness::submit(pool, host.clone(), spec).expect("accepted")
}

/// `kv` lists `get` only; outbound as given.
fn spec(code: &str, outbound: Outbound) -> ExecSpec {
    ExecSpec {
        code: code.into(),
        providers: vec![ProviderDecl {
            name: "kv".into(),
            tools: Some(vec!["get".into()]),
        }],
        outbound,
        ..Default::default()
    }
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let until = Instant::now() + BOUND;
    while !ok() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// How the hostile run ends.
#[derive(Clone, Copy)]
enum Expect {
    /// It fails with WORKER_VIOLATION naming this.
    Violation(&'static str),
    /// It completed before the violation (which comes after its Done).
    Completed,
}

/// A pool of `workers` fake workers, read by the including crate's reader.
fn workers(workers: usize) -> TestPool {
    let opts = harness::options(workers, PathBuf::from(FAKE), 4, 10_000);
    harness::start(opts, crate::READER)
}

fn two_workers() -> TestPool {
    workers(2)
}

/// Runs one scenario on a pool of its own: `hostile(healthy_exec_id)` is the hostile run's
/// script.
fn scenario(name: &str, hostile: impl Fn(u64) -> String, expect: Expect) {
    let pool = two_workers();
    scenario_on(&pool, name, hostile, expect);
    pool.shutdown(Duration::from_secs(2));
}

/// Runs one scenario on `pool` (two workers, both idle or about to be).
fn scenario_on(pool: &Pool, name: &str, hostile: impl Fn(u64) -> String, expect: Expect) {
    let pool = pool.clone();
    wait_for("two idle workers", || pool.stats().idle == 2);
    let before = pool.worker_pids();

    // Tenant B: a healthy run that calls a tool, waits, then fetches through its own routed
    // outbound policy while the hostile worker does its worst.
    let b = Tenant::new(&pool, true);
    let healthy = "call kv get b1; sleep 300; fetch https://b.test/; return-answer";
    let (b_id, b_done) = submit(&pool, &b, spec(healthy, Outbound::Routed));
    wait_for("the healthy run's first call", || !b.calls().is_empty());

    // Tenant A: blocked outbound, answers nothing.
    let a = Tenant::new(&pool, false);
    let (a_id, a_done) = submit(&pool, &a, spec(&hostile(b_id), Outbound::Blocked));
    let a_result = a_done
        .recv_timeout(BOUND)
        .expect("the hostile run completes");
    match expect {
        Expect::Violation(text) => violation(name, a_result.expect_err(name), text),
        Expect::Completed => {
            a_result.unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    let b_result = b_done
        .recv_timeout(BOUND)
        .expect("the healthy run completes");
    let out = b_result.unwrap_or_else(|e| panic!("{name}: the healthy run failed: {e}"));
    assert!(out.error.is_none(), "{name}: {:?}", out.error);
    assert_eq!(
        String::from_utf8(out.result.unwrap()).unwrap(),
        "201 fetched https://b.test/",
        "{name}"
    );
    assert_eq!(
        b.calls(),
        [
            format!("{b_id}:kv.get(b1)"),
            format!("{b_id}:GET https://b.test/")
        ],
        "{name}: the healthy tenant's host saw exactly its own calls"
    );
    assert!(
        a.calls().iter().all(|c| c.starts_with(&format!("{a_id}:"))),
        "{name}: the hostile tenant's host saw only its own run"
    );

    // The hostile worker is replaced; the healthy one stays.
    wait_for("a replacement", || {
        let now = pool.worker_pids();
        now.len() == 2 && now.iter().filter(|p| before.contains(p)).count() == 1
    });
    wait_for("both workers idle again", || pool.stats().idle == 2);
    let c = Tenant::new(&pool, true);
    let (_, c_done) = submit(&pool, &c, spec("return ok", Outbound::Blocked));
    let out = c_done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.result.as_deref(), Some(b"ok".as_slice()), "{name}");
}

/// Case `name` failed with `WORKER_VIOLATION` saying `text`.
fn violation(name: &str, failure: Failure, text: &str) {
    assert_eq!(
        failure.code,
        FailureCode::WorkerViolation,
        "{name}: {failure}"
    );
    assert!(
        failure.message.contains(text),
        "{name}: {:?} lacks {text:?}",
        failure.message
    );
}

#[test]
fn a_frame_naming_another_execution_kills_its_worker_and_touches_nothing_of_that_execution() {
    for kind in ["started", "call", "fetch", "done", "invoked"] {
        scenario(
            &format!("forge {kind}"),
            |b_id| format!("forge {kind} {b_id}; sleep 2000; return never"),
            Expect::Violation("for execution"),
        );
    }
}

/// Runs each scenario `(name, hostile script, expected end)` whose script does not name the
/// healthy run, each on a pool of its own.
fn scenarios(cases: &[(&str, &str, Expect)]) {
    for &(name, script, expect) in cases {
        scenario(name, |_| script.into(), expect);
    }
}

#[test]
fn frames_out_of_their_place_kill_the_worker() {
    scenarios(&[
        (
            "a second Done",
            "send-done; return again",
            Expect::Completed,
        ),
        (
            "one call id twice",
            "same-call; sleep 2000",
            Expect::Violation("already in flight"),
        ),
        (
            "a message only the host sends",
            "host-msg; sleep 2000",
            Expect::Violation("malformed frame"),
        ),
        (
            "garbage",
            "garbage; sleep 2000",
            Expect::Violation("malformed frame"),
        ),
        (
            "a truncated frame",
            "truncated",
            Expect::Violation("truncated frame"),
        ),
    ]);
}

/// CPU between runs (docs/bounds.md): a worker that holds no run and keeps a core busy is a
/// worker taken over by its program; it is killed and replaced, and the healthy one stays.
#[test]
fn a_worker_that_burns_cpu_while_it_holds_no_run_is_killed_and_replaced() {
    scenarios(&[(
        "spinning while idle",
        "spin-when-idle; return ok",
        Expect::Completed,
    )]);
}

#[test]
fn tools_the_request_did_not_declare_never_reach_dispatch() {
    scenarios(&[
        (
            "an undeclared provider",
            "call db get x; return never",
            Expect::Violation("provider \"db\""),
        ),
        (
            "an unlisted tool",
            "call kv drop x; return never",
            Expect::Violation("kv.drop"),
        ),
    ]);
}

#[test]
fn output_past_the_bounds_kills_the_worker_and_the_host_stays_small() {
    let baseline = rss_kib();
    let calls = limits::CALLS_IN_FLIGHT + 1;
    let bounds: [(&str, String, &str); 7] = [
        (
            "an oversize frame",
            "oversize; sleep 2000".into(),
            "oversize frame",
        ),
        (
            "too many calls in flight",
            format!("flood-calls {calls}; sleep 2000"),
            "in flight",
        ),
        (
            "too many log entries",
            format!("flood-logs {} 8", limits::LOG_ENTRIES + 5),
            "log entries",
        ),
        (
            "one log entry too long",
            format!("flood-logs 1 {}", limits::LOG_ENTRY_BYTES * 2),
            "a log entry",
        ),
        (
            "too many log bytes",
            format!("flood-logs 40 {}", limits::LOG_ENTRY_BYTES),
            "the logs",
        ),
        (
            "tool arguments too large",
            format!("big-args {}; sleep 2000", limits::TOOL_PAYLOAD_BYTES + 1),
            "arguments",
        ),
        (
            "a result too large",
            format!("big-result {}", limits::RESULT_BYTES + 1),
            "the result",
        ),
    ];
    for (name, code, text) in bounds {
        scenario(name, |_| code.clone(), Expect::Violation(text));
        // What crosses is bounded: at most a frame or two of the largest kind are held at once.
        let grown = rss_kib().saturating_sub(baseline);
        assert!(grown < 160 * 1024, "{name}: the host grew by {grown} KiB");
    }
}

/// A failure code is the grammar's, never the worker's free text: one a worker may not report
/// (outside the grammar, a host-measured TIMEOUT, a newline, 10 KiB long) is a violation, and
/// the executions metric's labels stay the grammar's own.
#[test]
fn a_worker_reports_only_the_failure_codes_a_program_may_end_with() {
    let pool = two_workers();
    let forged: [(&str, &str, &str); 5] = [
        ("a code outside the grammar", "error FOO forged", "\"FOO\""),
        ("a code with a newline", "bad-code newline", "\"FOO\\n\""),
        (
            "TIMEOUT, which only the host measures",
            "error TIMEOUT forged",
            "\"TIMEOUT\"",
        ),
        (
            "a fault's code",
            "error WORKER_LOST forged",
            "\"WORKER_LOST\"",
        ),
        (
            "a code of 10 KiB",
            "bad-code long",
            "a failure code of 10240 bytes",
        ),
    ];
    for (name, code, text) in forged {
        scenario_on(&pool, name, |_| code.to_string(), Expect::Violation(text));
    }
    // A program's own failures still pass, whole.
    let a = Tenant::new(&pool, true);
    let (_, done) = submit(
        &pool,
        &a,
        spec("error PROGRAM_ERROR Error: boom", Outbound::Blocked),
    );
    let out = done.recv_timeout(BOUND).unwrap().unwrap();
    let error = out.error.expect("a program error");
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("PROGRAM_ERROR", "Error: boom")
    );
    let families = pool.metrics();
    let executions = families
        .iter()
        .find(|f| f.def.name == "codemode_executions_total")
        .expect("the executions family");
    let labels: Vec<&str> = executions
        .samples
        .iter()
        .flat_map(|s| s.labels.iter().map(|(_, v)| v.as_str()))
        .collect();
    for label in &labels {
        assert!(
            *label == "OK" || FailureCode::from_code(label).is_some(),
            "a label outside the grammar: {label:?} (all: {labels:?})"
        );
    }
    assert!(labels.contains(&"WORKER_VIOLATION"), "{labels:?}");
    assert!(
        !labels.contains(&"FOO") && !labels.contains(&"TIMEOUT"),
        "{labels:?}"
    );
    pool.shutdown(Duration::from_secs(2));
}

/// A fixed, well-formed v4 UUID.
const GRANTED: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

fn retained(code: &str) -> ExecSpec {
    ExecSpec {
        retain_handles: true,
        ..spec(code, Outbound::Blocked)
    }
}

/// Invokes `id`'s `fetch` handle; the body of its answer.
fn invoke(pool: &Pool, id: &str) -> Result<String, Failure> {
    let (tx, rx) = mpsc::channel();
    pool.invoke_handle(
        id,
        "fetch",
        Default::default(),
        None,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    )?;
    let response = rx.recv_timeout(BOUND).expect("an answer")?;
    Ok(String::from_utf8(response.body.unwrap_or_default()).unwrap())
}

/// The pool keys retained executions by the id the worker's grant names: a grant whose id is
/// not a well-formed v4 UUID, or one already in use (another tenant's), is a violation, and the
/// execution that holds the id keeps it.
#[test]
fn a_grant_must_name_a_fresh_well_formed_execution_id() {
    let pool = two_workers();
    wait_for("two idle workers", || pool.stats().idle == 2);
    let b = Tenant::new(&pool, true);
    let (b_id, b_done) = submit(&pool, &b, retained(&format!("grant {GRANTED}")));
    let out = b_done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.grant.map(|g| g.execution_id).as_deref(), Some(GRANTED));
    assert_eq!(invoke(&pool, GRANTED).unwrap(), format!("invoked {b_id}"));

    let long = format!("{GRANTED}{}", "0".repeat(10 * 1024));
    let forged: [(&str, String, &str); 6] = [
        ("a neighbour's id", GRANTED.into(), "already in use"),
        ("a name, not a UUID", "tenant-b".into(), "not a v4 UUID"),
        (
            "a UUID of version 1",
            "3b241101-e2bb-1255-8caf-4136c566a962".into(),
            "not a v4 UUID",
        ),
        ("upper case", GRANTED.to_uppercase(), "not a v4 UUID"),
        ("10 KiB", long, "not a v4 UUID"),
        ("empty", String::new(), "not a v4 UUID"),
    ];
    let a = Tenant::new(&pool, false);
    for (name, id, text) in forged {
        let (_, done) = submit(&pool, &a, retained(&format!("grant {id}")));
        violation(
            name,
            done.recv_timeout(BOUND).unwrap().expect_err(name),
            text,
        );
        // The neighbour's execution is untouched: still its own, still answering.
        assert_eq!(
            invoke(&pool, GRANTED).unwrap(),
            format!("invoked {b_id}"),
            "{name}"
        );
        assert_eq!(pool.stats().retained, 1, "{name}");
        wait_for("a replacement", || pool.stats().workers == 2);
    }
    // A fresh id is granted as before.
    let fresh = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";
    let (c_id, c_done) = submit(&pool, &a, retained(&format!("grant {fresh}")));
    let out = c_done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.grant.map(|g| g.execution_id).as_deref(), Some(fresh));
    assert_eq!(invoke(&pool, fresh).unwrap(), format!("invoked {c_id}"));
    pool.close_handles(GRANTED, None).unwrap();
    pool.close_handles(fresh, None).unwrap();
    pool.shutdown(Duration::from_secs(2));
}

/// The memory ceiling: a worker that grows native memory past it dies like any crash
/// (WORKER_LOST), and the one beside it runs on.
#[test]
fn a_worker_growing_native_memory_past_its_ceiling_dies_like_any_crash() {
    let pool = workers(1);
    let a = Tenant::new(&pool, false);
    // Under the ceiling (RLIMIT_DATA, 256 MiB + 3 x 64 MiB) an allocation succeeds...
    let (_, done) = submit(&pool, &a, spec("alloc 100; return ok", Outbound::Blocked));
    let out = done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.result.as_deref(), Some(b"ok".as_slice()));
    let pids = pool.worker_pids();
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", pids[0])).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max data size"))
        .unwrap();
    let ceiling = ((256 + 3 * 64) * 1024 * 1024u64).to_string();
    assert!(line.contains(&ceiling), "{line}");
    // ...past it, the worker dies, and the run is reported lost.
    let (_, done) = submit(
        &pool,
        &a,
        spec("alloc 4096; return never", Outbound::Blocked),
    );
    let failure = done.recv_timeout(BOUND).unwrap().unwrap_err();
    assert_eq!(failure.code, FailureCode::WorkerLost, "{failure}");
    wait_for("a replacement", || {
        let now = pool.worker_pids();
        now.len() == 1 && now != pids
    });
    // A run with a larger memory limit raises its worker's ceiling.
    // Writing 2 GiB takes seconds on a loaded machine: its time bound is not what is tested.
    let big = ExecSpec {
        memory_limit_mib: Some(1024),
        timeout_ms: Some(60_000),
        ..spec("alloc 2048; return ok", Outbound::Blocked)
    };
    let (_, done) = submit(&pool, &a, big);
    let out = done.recv_timeout(Duration::from_secs(90)).unwrap().unwrap();
    assert_eq!(
        out.result.as_deref(),
        Some(b"ok".as_slice()),
        "{:?}",
        out.error
    );
    pool.shutdown(Duration::from_secs(2));
}

/// Signals by proxy: a worker makes the host the owner of its stdin, with SIGKILL as the signal
/// (`F_SETOWN`, `F_SETSIG`, `O_ASYNC`), so the kernel would kill the host on the next frame
/// the host writes to it. The real worker's jail refuses those `fcntl` commands
/// (`codemode-worker --jail-selftest`); this fake worker has no jail, so what stops it here is
/// its uid: under a root host workers run as 65534, and the kernel sends the signal only when
/// the owner's uid may signal the target. The host survives, and the run completes.
#[test]
fn a_worker_cannot_signal_the_host_through_its_stdin() {
    let pool = workers(1);
    wait_for("an idle worker", || pool.stats().idle == 1);
    let pid = pool.worker_pids()[0];
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    // SAFETY: geteuid has no arguments and cannot fail.
    let host = unsafe { libc::geteuid() };
    if host != 0 {
        // A host that is not root cannot change a worker's uid: only the jail stands between
        // a worker and its host (docs/threat-model.md), and this fake worker has none.
        assert_eq!(uid, format!("Uid:\t{host}\t{host}\t{host}\t{host}"));
        pool.shutdown(Duration::from_secs(2));
        return;
    }
    let a = Tenant::new(&pool, true);
    let script = "signal-by-proxy 9; call kv get x; call kv get y; return-answer";
    let (_, done) = submit(&pool, &a, spec(script, Outbound::Blocked));
    let out = done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.result.as_deref(), Some(b"answer:y".as_slice()));
    // Still here, and the worker too: nothing was signalled.
    assert_eq!(pool.worker_pids(), [pid]);
    assert_eq!(uid, "Uid:\t65534\t65534\t65534\t65534");
    pool.shutdown(Duration::from_secs(2));
}

fn budgeted(code: &str, outbound: Outbound, budgets: Budgets) -> ExecSpec {
    ExecSpec {
        budgets,
        ..spec(code, outbound)
    }
}

const CPU_50: Budgets = Budgets {
    cpu_limit_ms: Some(50),
    tool_call_limit: None,
    fetch_limit: None,
};

/// The CPU budget's backstop: a worker that keeps computing past its run's budget (its own
/// count broken, or its isolate taken over) is stopped by the host once its process has spent
/// twice the budget and 100 ms more, long before the time bound; the run fails with the budget's
/// text, and the worker serves the next run. The same for an invocation of a retained
/// execution, which ends with reason `cpu`.
#[test]
fn a_worker_that_computes_past_its_cpu_budget_is_stopped_by_the_host() {
    let pool = workers(1);
    wait_for("an idle worker", || pool.stats().idle == 1);
    let a = Tenant::new(&pool, true);
    let budget_text = FailureCode::CpuLimit.render(&[("ms", "50")]);
    let (_, done) = submit(
        &pool,
        &a,
        budgeted("spin 15000; return late", Outbound::Blocked, CPU_50),
    );
    let out = done.recv_timeout(BOUND).unwrap().unwrap();
    let error = out.error.expect("stopped");
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("CPU_LIMIT", budget_text.as_str())
    );
    assert!(
        out.stats.wall_us < 10_000_000,
        "stopped by the CPU backstop, not the 10 s time bound: {} us",
        out.stats.wall_us
    );
    let (_, done) = submit(&pool, &a, spec("return next", Outbound::Blocked));
    let out = done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.result.as_deref(), Some(b"next".as_slice()));

    let script = format!("invoke-spin 15000; grant {GRANTED}");
    let (_, done) = submit(
        &pool,
        &a,
        ExecSpec {
            retain_handles: true,
            ..budgeted(&script, Outbound::Blocked, CPU_50)
        },
    );
    assert!(done.recv_timeout(BOUND).unwrap().unwrap().grant.is_some());
    let failure = invoke(&pool, GRANTED).expect_err("stopped");
    assert_eq!(
        (failure.code, failure.message),
        (FailureCode::CpuLimit, budget_text)
    );
    assert_eq!(pool.stats().retained, 0);
    pool.shutdown(Duration::from_secs(2));
}

/// The backstop allows twice `ANSWER_POLL_US` more per answer the host sends: a real worker
/// polls that long for each answer before it sleeps, CPU its own count leaves out. After 2,000
/// answers a worker spending 300 ms under a 50 ms budget is within the allowance (200 ms + 800
/// ms); without the per-answer allowance it is stopped at 200 ms.
#[test]
fn the_cpu_backstop_allows_for_the_polls_of_the_answers_it_sent() {
    let pool = workers(1);
    wait_for("an idle worker", || pool.stats().idle == 1);
    let a = Tenant::new(&pool, true);
    let script = format!("{}spin 300; return done", "call kv get 1; ".repeat(2000));
    let (_, done) = submit(&pool, &a, budgeted(&script, Outbound::Blocked, CPU_50));
    let out = done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.error, None);
    assert_eq!(out.result.as_deref(), Some(b"done".as_slice()));
    pool.shutdown(Duration::from_secs(2));
}

/// A worker refuses the tool call and the fetch past its run's counts inside the sandbox; one
/// that sends them anyway breaks a rule, and the host has seen no more than the counts allow.
/// `CPU_LIMIT` is a run's ending only when the run had a CPU budget.
#[test]
fn calls_past_the_counts_and_a_cpu_limit_without_a_budget_are_violations() {
    let pool = workers(1);
    wait_for("an idle worker", || pool.stats().idle == 1);
    let counts = Budgets {
        cpu_limit_ms: None,
        tool_call_limit: Some(2),
        fetch_limit: Some(1),
    };
    let a = Tenant::new(&pool, true);
    let calls = "call kv get 1; call kv get 2; call kv get 3; return x";
    let (id, done) = submit(&pool, &a, budgeted(calls, Outbound::Routed, counts));
    let failure = done.recv_timeout(BOUND).unwrap().expect_err("violation");
    violation(
        "tool calls",
        failure,
        "tool calls past the request's limit of 2",
    );
    assert_eq!(
        a.calls(),
        [format!("{id}:kv.get(1)"), format!("{id}:kv.get(2)")]
    );

    wait_for("a replacement", || pool.stats().idle == 1);
    let b = Tenant::new(&pool, true);
    let fetches = "fetch http://127.0.0.1:9/a; fetch http://127.0.0.1:9/b; return x";
    let (id, done) = submit(&pool, &b, budgeted(fetches, Outbound::Routed, counts));
    let failure = done.recv_timeout(BOUND).unwrap().expect_err("violation");
    violation("fetches", failure, "fetches past the request's limit of 1");
    assert_eq!(b.calls(), [format!("{id}:GET http://127.0.0.1:9/a")]);

    wait_for("a replacement", || pool.stats().idle == 1);
    let forged = "error CPU_LIMIT The program used up its CPU budget";
    let (_, done) = submit(&pool, &b, spec(forged, Outbound::Blocked));
    let failure = done.recv_timeout(BOUND).unwrap().expect_err("violation");
    violation(
        "cpu",
        failure,
        "CPU_LIMIT failure for a run without a CPU budget",
    );

    // Within the counts, and CPU_LIMIT under a budget, a run ends as its worker says.
    wait_for("a replacement", || pool.stats().idle == 1);
    let within = "call kv get 1; call kv get 2; fetch http://127.0.0.1:9/a; return-answer";
    let (_, done) = submit(&pool, &b, budgeted(within, Outbound::Routed, counts));
    let out = done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(
        out.result.as_deref(),
        Some(b"201 fetched http://127.0.0.1:9/a".as_slice())
    );
    let (_, done) = submit(&pool, &b, budgeted(forged, Outbound::Blocked, CPU_50));
    let out = done.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.error.map(|e| e.code).as_deref(), Some("CPU_LIMIT"));
    pool.shutdown(Duration::from_secs(2));
}

//! The pool's supervision against `codemode-fake-worker` (no V8): each test takes well under a
//! few seconds. The fake worker's script language is described at the top of its source.
//! Run twice: here with reader threads, and from fake_polled.rs with a poll(2) loop calling
//! `Pool::readable` (the addon's reader); [`READER`] is the including crate's choice.
//!
//! One file over 500 lines: the supervision scenarios (queueing, time bounds, loss, requeue,
//! shutdown, back-pressure, abandon) against one host double and one pool setup, which both
//! readers run unchanged; split, each part would repeat the double and the setup.

pub(crate) mod harness;

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codemode_pool::protocol::{
    Failure, FailureCode, Outbound, ProviderDecl, RunOutcome, WireResponse,
};
use codemode_pool::{ExecSpec, FetchCall, Host, Pool, ToolCall, CANCEL_GRACE, PREPARE_GRACE};
use harness::{Done, Reader, TestPool};

/// The reader these scenarios run under (fake_polled.rs declares its own).
#[allow(dead_code)]
const READER: Reader = Reader::Threads;

const FAKE: &str = env!("CARGO_BIN_EXE_codemode-fake-worker");
/// The longest any single completion may take in these tests.
const BOUND: Duration = Duration::from_secs(10);

fn start(workers: usize, queue_bound: usize, worker_path: PathBuf) -> TestPool {
    let opts = harness::options(workers, worker_path, queue_bound, 5_000);
    harness::start(opts, crate::READER)
}

fn pool(workers: usize, queue_bound: usize) -> TestPool {
    start(workers, queue_bound, PathBuf::from(FAKE))
}

/// A worker path that starts the fake worker with `args` (the pool passes none).
fn wrapper(name: &str, args: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codemode-fake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    // A copy beside the script: under a root host the script runs as the workers' uid, which
    // may not traverse the checkout's directories (a private temp dir) to reach the original.
    let fake = dir.join("codemode-fake-worker");
    if !fake.exists() {
        let part = dir.join(format!("codemode-fake-worker.{name}"));
        std::fs::copy(FAKE, &part).unwrap();
        std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o755)).unwrap();
        let _ = std::fs::rename(&part, &fake);
    }
    let fake = fake.display();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\nexec '{fake}' {args}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Answers tool calls with `answer:ARGS` and routed fetches with `201 fetched URL`, each from
/// another thread, as a host's event loop would.
#[derive(Default)]
struct Answering {
    pool: Mutex<Option<Pool>>,
    calls: Mutex<Vec<String>>,
}

impl Answering {
    fn new(pool: &Pool) -> Arc<Self> {
        let host = Arc::new(Answering::default());
        *host.pool.lock().unwrap() = Some(pool.clone());
        host
    }
    fn pool(&self) -> Pool {
        self.pool.lock().unwrap().clone().unwrap()
    }
}

impl Host for Answering {
    fn tool_call(&self, call: ToolCall) {
        let args = String::from_utf8(call.args).unwrap();
        self.calls
            .lock()
            .unwrap()
            .push(format!("{}.{}({args})", call.provider, call.tool));
        let pool = self.pool();
        std::thread::spawn(move || {
            let answer = format!("answer:{args}").into_bytes();
            pool.answer_tool_call(call.exec_id, call.call_id, true, answer);
        });
    }

    fn fetch(&self, call: FetchCall) {
        self.calls
            .lock()
            .unwrap()
            .push(format!("{} {}", call.request.method, call.request.url));
        harness::answer_fetch_later(&self.pool(), call);
    }
}

fn submit(pool: &Pool, host: &Arc<Answering>, spec: ExecSpec) -> Result<Done, FailureCode> {
    submit_id(pool, host, spec).map(|(_, rx)| rx)
}

/// `submit`, also giving the execution's id (to abort it).
fn submit_id(
    pool: &Pool,
    host: &Arc<Answering>,
    spec: ExecSpec,
) -> Result<(u64, Done), FailureCode> {
    harness::submit(pool, host.clone(), spec).map_err(|f| f.code)
}

/// A run of `code` whose providers `kv` and `p` take any tool name (the scripts call them).
fn script(code: &str) -> ExecSpec {
    let open = |name: &str| ProviderDecl {
        name: name.into(),
        tools: None,
    };
    ExecSpec {
        code: code.into(),
        providers: vec![open("kv"), open("p")],
        ..Default::default()
    }
}

fn run(pool: &Pool, host: &Arc<Answering>, spec: ExecSpec) -> Result<RunOutcome, Failure> {
    let rx = submit(pool, host, spec).map_err(|c| c.failure(&[]))?;
    rx.recv_timeout(BOUND).expect("the run completes in time")
}

fn result_text(out: &RunOutcome) -> String {
    assert!(out.error.is_none(), "{:?}", out.error);
    String::from_utf8(out.result.clone().unwrap_or_default()).unwrap()
}

/// Asserts `pool` still runs a program to its result.
fn still_runs(pool: &Pool, host: &Arc<Answering>) {
    assert_eq!(
        result_text(&run(pool, host, script("return ok")).unwrap()),
        "ok"
    );
}

/// Waits until the pool's worker pids differ from `old` (a replacement started) and returns them.
fn replaced(pool: &Pool, old: &[u32]) -> Vec<u32> {
    let until = Instant::now() + BOUND;
    loop {
        let pids = pool.worker_pids();
        if !pids.is_empty() && pids.iter().all(|p| !old.contains(p)) {
            return pids;
        }
        assert!(Instant::now() < until, "no replacement for {old:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Waits until the one worker `old` is replaced; asserts it was killed and reaped, and that the
/// pool still runs.
fn replaced_and_reaped(pool: &Pool, host: &Arc<Answering>, old: &[u32]) {
    replaced(pool, old);
    assert!(!alive(old[0]), "the old worker was killed and reaped");
    still_runs(pool, host);
}

#[test]
fn results_logs_and_tool_calls_are_routed() {
    let (pool, host) = one_worker();
    let out = run(
        &pool,
        &host,
        script("log one\ncall kv get [20,22]\nlog two\nreturn-answer"),
    )
    .unwrap();
    assert_eq!(result_text(&out), "answer:[20,22]");
    let logs: Vec<&str> = out.logs.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(logs, ["one", "two"]);
    assert_eq!(host.calls.lock().unwrap().as_slice(), ["kv.get([20,22])"]);
    let out = run(&pool, &host, script("error PROGRAM_ERROR Error: x")).unwrap();
    assert_eq!(out.error.unwrap().code, "PROGRAM_ERROR");
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_routed_fetch_reaches_the_host_and_its_answer_the_run() {
    let (pool, host) = one_worker();
    let spec = ExecSpec {
        outbound: Outbound::Routed,
        ..script("fetch https://example.test/a; return-answer")
    };
    let out = run(&pool, &host, spec).unwrap();
    assert_eq!(result_text(&out), "201 fetched https://example.test/a");
    assert_eq!(
        host.calls.lock().unwrap().as_slice(),
        ["GET https://example.test/a"]
    );
    // A blocked run's fetch that reaches the pool anyway is refused there.
    let spec = ExecSpec {
        outbound: Outbound::Blocked,
        ..script("fetch https://example.test/b; return-answer")
    };
    let out = run(&pool, &host, spec).unwrap();
    assert!(result_text(&out).starts_with("rejected: fetch is closed"));
    assert_eq!(host.calls.lock().unwrap().len(), 1);
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn the_queue_bound_refuses_at_once() {
    let pool = pool(1, 1);
    let host = Answering::new(&pool);
    assert_eq!(
        result_text(&run(&pool, &host, script("return 1")).unwrap()),
        "1"
    );
    let running = submit(&pool, &host, script("sleep 300; return a")).unwrap();
    let queued = submit(&pool, &host, script("return b")).unwrap();
    let started = Instant::now();
    let full = submit(&pool, &host, script("return c")).err();
    assert_eq!(full, Some(FailureCode::QueueFull));
    assert!(started.elapsed() < Duration::from_millis(100));
    let a = running.recv_timeout(BOUND).unwrap().unwrap();
    let b = queued.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!((result_text(&a), result_text(&b)), ("a".into(), "b".into()));
    pool.close();
    assert_eq!(
        submit(&pool, &host, script("return d")).err(),
        Some(FailureCode::Closed)
    );
    pool.shutdown(Duration::from_secs(2));
}

/// A one-worker pool and its host.
fn one_worker() -> (TestPool, Arc<Answering>) {
    let pool = pool(1, 4);
    let host = Answering::new(&pool);
    (pool, host)
}

/// A one-worker pool that has answered a first run, its host, and its worker's pid.
fn warm_pool() -> (TestPool, Arc<Answering>, Vec<u32>) {
    let (pool, host) = one_worker();
    run(&pool, &host, script("return ready")).unwrap();
    let pids = pool.worker_pids();
    (pool, host, pids)
}

/// Runs `code` under a time bound of `timeout_ms`, which it must time out at; returns the
/// outcome and how long it took.
fn timed_out(
    pool: &Pool,
    host: &Arc<Answering>,
    timeout_ms: u64,
    code: &str,
) -> (RunOutcome, Duration) {
    let started = Instant::now();
    let spec = ExecSpec {
        timeout_ms: Some(timeout_ms),
        ..script(code)
    };
    let out = run(pool, host, spec).unwrap();
    let took = started.elapsed();
    let error = out.error.as_ref().expect("the run timed out");
    assert_eq!(error.code, "TIMEOUT");
    (out, took)
}

/// Asserts `failure` has `code` and says `text`.
fn failed_with(failure: &Failure, code: FailureCode, text: &str) {
    assert_eq!(failure.code, code, "{failure}");
    assert!(failure.message.contains(text), "{}", failure.message);
}

#[test]
fn a_run_past_its_bound_is_cancelled_and_times_out_on_the_same_worker() {
    let (pool, host, pids) = warm_pool();
    let (out, took) = timed_out(&pool, &host, 150, "log before; sleep 20000; return never");
    let error = out.error.unwrap();
    assert!(error.message.contains("150 ms"), "{}", error.message);
    assert_eq!(
        out.logs.len(),
        1,
        "the logs written before the cancel are kept"
    );
    assert!(
        took >= Duration::from_millis(150) && took < CANCEL_GRACE,
        "{took:?}"
    );
    // The worker obeyed Cancel, so it was kept.
    assert_eq!(pool.worker_pids(), pids);
    still_runs(&pool, &host);
    // A run waiting for a tool answer is woken by the Cancel on stdin.
    struct Silent;
    impl Host for Silent {
        fn tool_call(&self, _: ToolCall) {}
        fn fetch(&self, _: FetchCall) {}
    }
    let (tx, rx) = mpsc::channel();
    let spec = ExecSpec {
        timeout_ms: Some(100),
        ..script("call kv get x; return never")
    };
    pool.execute(
        spec,
        Arc::new(Silent),
        Box::new(move |_, r| tx.send(r).unwrap()),
    )
    .unwrap();
    let out = rx.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(out.error.unwrap().code, "TIMEOUT");
    assert_eq!(pool.worker_pids(), pids);
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_worker_that_ignores_cancel_is_killed_after_the_grace_and_replaced() {
    let (pool, host, pids) = warm_pool();
    let (_, took) = timed_out(
        &pool,
        &host,
        100,
        "ignore-cancel; sleep 20000; return never",
    );
    assert!(
        took >= CANCEL_GRACE,
        "killed after the grace, not before: {took:?}"
    );
    assert!(took < CANCEL_GRACE + Duration::from_secs(2), "{took:?}");
    replaced_and_reaped(&pool, &host, &pids);
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_worker_that_exits_mid_run_fails_only_that_run_and_is_replaced() {
    let (pool, host, pids) = warm_pool();
    let lost = submit(&pool, &host, script("log x; exit 3")).unwrap();
    let queued = submit(&pool, &host, script("return after")).unwrap();
    let failure = lost.recv_timeout(BOUND).unwrap().unwrap_err();
    failed_with(&failure, FailureCode::WorkerLost, "exited with code 3");
    assert!(failure.code.retryable());
    // The run queued behind it goes to the replacement.
    let after = queued.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(result_text(&after), "after");
    replaced(&pool, &pids);
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_garbage_frame_from_a_worker_fails_its_run_and_replaces_it() {
    let (pool, host, pids) = warm_pool();
    let failure = run(&pool, &host, script("garbage; sleep 5000")).unwrap_err();
    failed_with(&failure, FailureCode::WorkerViolation, "malformed frame");
    replaced_and_reaped(&pool, &host, &pids);
    pool.shutdown(Duration::from_secs(2));
}

/// A worker refused at its handshake fails the waiting run with WORKER_START_FAILED and is
/// not replaced in a loop; the next execute tries again and fails the same way.
fn refused_at_handshake(name: &str, args: &str, expect: &str) {
    let pool = start(2, 4, wrapper(name, args));
    let host = Answering::new(&pool);
    for _ in 0..2 {
        let failure = run(&pool, &host, script("return 1")).unwrap_err();
        failed_with(&failure, FailureCode::WorkerStartFailed, expect);
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            pool.worker_pids().is_empty(),
            "refused workers are not respawned"
        );
    }
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_worker_of_another_protocol_version_is_refused_by_name() {
    let rebuild = "rebuild or reinstall";
    refused_at_handshake("v1-layout", "--hello-v1", "speaks protocol 1");
    refused_at_handshake("v1-layout-again", "--hello-v1", rebuild);
    refused_at_handshake("v999", "--hello-version 999", "speaks protocol 999");
    refused_at_handshake(
        "exits",
        "--exit-before-hello 71",
        "code 71 before its handshake",
    );
}

/// A run submitted when every worker was refused starts one more; that worker may be refused
/// before the run is queued (its reader is quicker than the submitter under load). The run
/// still fails, at once, with the refusal: it never waits for a worker that will not come.
#[test]
fn a_run_never_waits_for_a_worker_refused_while_it_was_submitted() {
    let pool = start(1, 4, wrapper("exits-at-once", "--exit-before-hello 72"));
    let host = Answering::new(&pool);
    // Busy threads make the submitter lose its core between starting the worker and queueing
    // the run, the window the refusal used to fall into.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinners: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let mut outcome = Ok(());
    for i in 0..200 {
        let Ok(rx) = submit(&pool, &host, script("return 1")) else {
            continue;
        };
        match rx.recv_timeout(BOUND) {
            Ok(Err(f)) if f.code == FailureCode::WorkerStartFailed => {}
            other => {
                outcome = Err(format!("run {i}: {other:?}"));
                break;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    pool.shutdown(Duration::from_secs(2));
    outcome.unwrap();
}

#[test]
fn shutdown_reaps_every_worker_and_settles_every_run() {
    let pool = pool(3, 8);
    let host = Answering::new(&pool);
    run(&pool, &host, script("return ready")).unwrap();
    let runs: Vec<Done> = (0..5)
        .map(|_| submit(&pool, &host, script("ignore-cancel; sleep 20000")).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let pids = pool.worker_pids();
    assert_eq!(pids.len(), 3);
    let started = Instant::now();
    pool.shutdown(Duration::from_secs(5));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(pool.worker_pids().is_empty());
    for pid in pids {
        assert!(!alive(pid), "worker {pid} is gone");
    }
    for done in runs {
        let failure = done.recv_timeout(BOUND).unwrap().unwrap_err();
        assert!(
            matches!(failure.code, FailureCode::Closed | FailureCode::WorkerLost),
            "{failure}"
        );
    }
    assert_eq!(
        submit(&pool, &host, script("return 1")).err(),
        Some(FailureCode::Closed)
    );
}

#[test]
fn a_large_answer_to_a_worker_that_is_not_reading_does_not_block_the_sender() {
    let (pool, host) = one_worker();
    let (tx, rx) = mpsc::channel();
    let exec_id = pool
        .execute(
            script("call p t x; sleep 1500; return-answer"),
            host.clone(),
            Box::new(move |_, r| {
                let _ = tx.send(r);
            }),
        )
        .expect("accepted");
    let until = Instant::now() + BOUND;
    while host.calls.lock().unwrap().is_empty() {
        assert!(Instant::now() < until, "the tool call never came");
        std::thread::sleep(Duration::from_millis(5));
    }
    // The worker now sleeps without reading stdin; a pipe holds 64 KiB. A sender that wrote
    // the whole frame itself would wait here until the worker reads, ~1.5 s from now.
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    pool.answer_tool_call(exec_id, 99, true, vec![7u8; 8 * 1024 * 1024]);
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(700),
        "the sender was blocked for {took:?}"
    );
    // The queued frame still reaches the worker, in order, and the run completes.
    let out = rx.recv_timeout(BOUND).expect("completes").expect("ran");
    assert_eq!(result_text(&out), "answer:x");
    pool.shutdown(Duration::from_secs(2));
}

/// A fresh directory path for an `unstarted-exit-once` marker, in a directory the worker may
/// write to (under a root host, workers run as an unprivileged uid).
fn marker(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("codemode-fake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marks = dir.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&marks, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let path = marks.join(name);
    let _ = std::fs::remove_dir(&path);
    path.display().to_string()
}

#[test]
fn a_run_its_worker_never_acknowledged_is_queued_again_and_runs_on_the_replacement() {
    let (pool, host, before) = warm_pool();
    let path = marker("once");
    let out = run(
        &pool,
        &host,
        script(&format!("unstarted-exit-once {path}; return ran")),
    )
    .expect("the run is queued again, not lost");
    assert_eq!(result_text(&out), "ran");
    let after = pool.worker_pids();
    assert!(
        after.iter().all(|p| !before.contains(p)),
        "{before:?} {after:?}"
    );
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_run_no_worker_ever_acknowledges_fails_with_worker_lost_after_the_requeue_bound() {
    let (pool, host) = one_worker();
    let failure = run(&pool, &host, script("unstarted-exit")).unwrap_err();
    let times = format!("{} times", codemode_pool::REQUEUE_BOUND + 1);
    failed_with(&failure, FailureCode::WorkerLost, &times);
    // The pool still works.
    still_runs(&pool, &host);
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_run_that_started_is_lost_not_run_twice() {
    let (pool, host) = one_worker();
    let failure = run(&pool, &host, script("call p t once; exit 3")).unwrap_err();
    assert_eq!(failure.code, FailureCode::WorkerLost, "{failure}");
    assert_eq!(*host.calls.lock().unwrap(), vec!["p.t(once)".to_string()]);
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn runs_submitted_right_after_both_idle_workers_were_killed_all_succeed() {
    for _ in 0..5 {
        let pool = pool(2, 4);
        let host = Answering::new(&pool);
        let until = Instant::now() + BOUND;
        while pool.stats().idle < 2 {
            assert!(Instant::now() < until, "the workers never became idle");
            std::thread::sleep(Duration::from_millis(5));
        }
        let pids = pool.worker_pids();
        let pool2 = pool.clone();
        for pid in &pids {
            // SAFETY: SIGKILL to a worker of this pool; the test holds the pool, which has not
            // reaped them (they are alive and idle).
            unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
        }
        let runs: Vec<Done> = (0..3)
            .map(|i| submit(&pool2, &host, script(&format!("return {i}"))).unwrap())
            .collect();
        for (i, done) in runs.into_iter().enumerate() {
            let out = done.recv_timeout(BOUND).unwrap().expect("no run is lost");
            assert_eq!(result_text(&out), i.to_string());
        }
        pool.shutdown(Duration::from_secs(2));
    }
}

const OVER: usize = codemode_pool::protocol::MAX_FRAME_BYTES + 1;

#[test]
fn an_oversize_execute_is_refused_before_it_leaves_the_host() {
    let (pool, host, pids) = warm_pool();
    let refused = pool
        .execute(
            ExecSpec {
                code: "x".repeat(OVER),
                ..Default::default()
            },
            host.clone(),
            Box::new(|_, _| panic!("a refused run never completes")),
        )
        .unwrap_err();
    assert_eq!(refused.code, FailureCode::RequestTooLarge, "{refused}");
    assert!(!refused.code.retryable());
    let limit = codemode_pool::protocol::MAX_FRAME_BYTES.to_string();
    assert!(refused.message.contains(&limit), "{refused}");
    // The worker never saw it.
    assert_eq!(pool.worker_pids(), pids);
    still_runs(&pool, &host);
    pool.shutdown(Duration::from_secs(2));
}

/// Answers every tool call with a rejection text past the frame bound, and every routed fetch
/// with a body past it.
struct Oversize(Mutex<Option<Pool>>);

impl Host for Oversize {
    fn tool_call(&self, call: ToolCall) {
        let pool = self.0.lock().unwrap().clone().unwrap();
        std::thread::spawn(move || {
            pool.answer_tool_call(call.exec_id, call.call_id, false, vec![b'x'; OVER]);
        });
    }
    fn fetch(&self, call: FetchCall) {
        let pool = self.0.lock().unwrap().clone().unwrap();
        std::thread::spawn(move || {
            // Past the frame bound in its headers: a body past FETCH_BODY_BYTES is refused
            // before the frame is built (FETCH_TOO_LARGE, outbound.rs).
            let response = WireResponse {
                status: 200,
                headers: vec![("x-big".into(), "x".repeat(OVER))],
                ..Default::default()
            };
            pool.answer_fetch(call.exec_id, call.call_id, Ok(response));
        });
    }
}

#[test]
fn an_oversize_host_answer_rejects_the_call_inside_the_sandbox() {
    let pool = pool(1, 4);
    let host = Arc::new(Oversize(Mutex::new(Some(pool.clone()))));
    let pids = pool.worker_pids();
    for (code, what) in [
        ("call p t x; return-answer", "tool call"),
        ("fetch https://example.test/; return-answer", "fetch"),
    ] {
        let (tx, rx) = mpsc::channel();
        pool.execute(
            ExecSpec {
                outbound: Outbound::Routed,
                ..script(code)
            },
            host.clone(),
            Box::new(move |_, r| {
                let _ = tx.send(r);
            }),
        )
        .unwrap();
        let out = rx.recv_timeout(BOUND).unwrap().expect("the run completes");
        let text = result_text(&out);
        assert!(text.starts_with("rejected: "), "{what}: {text:.200}");
        let expected = FailureCode::AnswerTooLarge.template();
        let declared = &expected[..expected.find('{').unwrap()];
        assert!(text.contains(declared), "{text:.300}");
        let limit = codemode_pool::protocol::MAX_FRAME_BYTES.to_string();
        assert!(text.contains(&limit), "{text:.300}");
        assert!(text.contains(what), "{text:.300}");
    }
    assert_eq!(pool.worker_pids(), pids, "no worker was lost");
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn an_abandoned_run_stops_as_at_its_deadline_and_a_queued_one_leaves_the_queue() {
    let (pool, host, pids) = warm_pool();
    let started = Instant::now();
    // Each completion says which execution it completes.
    let execute = |code: &str| {
        let (tx, rx) = mpsc::channel();
        let id = pool
            .execute(
                script(code),
                host.clone(),
                Box::new(move |id, r| tx.send((id, r)).unwrap()),
            )
            .unwrap();
        (id, rx)
    };
    let (running, rx) = execute("log before; sleep 20000; return never");
    // The worker takes it once it has said Ready after the warm-up run.
    let until = Instant::now() + BOUND;
    while pool.stats().running == 0 {
        assert!(Instant::now() < until, "the run starts");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (queued, qrx) = execute("return never");
    assert_eq!(pool.stats().queued, 1);
    pool.abandon(queued);
    let (id, r) = qrx.recv_timeout(BOUND).unwrap();
    assert_eq!((id, r.unwrap_err().code), (queued, FailureCode::Closed));
    assert_eq!(pool.stats().queued, 0);
    // Abandoned, the run ends long before its 5 s bound.
    pool.abandon(running);
    let (id, r) = rx.recv_timeout(BOUND).unwrap();
    assert_eq!(id, running);
    assert_eq!(r.unwrap().error.unwrap().code, "TIMEOUT");
    assert!(started.elapsed() < Duration::from_secs(2));
    // Each completion fired once; abandoning again (a finished run) does nothing.
    pool.abandon(running);
    assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
    assert!(qrx.recv_timeout(Duration::from_millis(10)).is_err());
    assert_eq!(
        pool.worker_pids(),
        pids,
        "the worker obeyed the cancel and stays"
    );
    still_runs(&pool, &host);
    pool.shutdown(Duration::from_secs(2));
}

/// Submits `first` and, while it runs, `second` (under `timeout_ms`) on a one-worker pool: the
/// second is handed over at the first's Done, while the worker prepares its next isolate.
fn behind(
    first: &str,
    second: &str,
    timeout_ms: u64,
) -> (TestPool, Arc<Answering>, Vec<u32>, Done, Done) {
    let (pool, host, pids) = warm_pool();
    let a = submit(&pool, &host, script(first)).unwrap();
    let spec = ExecSpec {
        timeout_ms: Some(timeout_ms),
        ..script(second)
    };
    let b = submit(&pool, &host, spec).unwrap();
    (pool, host, pids, a, b)
}

#[test]
fn a_queued_run_goes_to_the_worker_that_just_finished_without_waiting_for_its_ready() {
    // The first run's worker never says Ready: the second still runs, because it was handed
    // over with the first's Done.
    let (pool, _host, _, a, b) = behind("sleep 100; no-ready; return a", "return b", 5_000);
    let out = a.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(result_text(&out), "a");
    let out = b
        .recv_timeout(BOUND)
        .expect("handed over before Ready")
        .unwrap();
    assert_eq!(result_text(&out), "b");
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_run_handed_over_while_its_worker_prepares_gets_its_whole_bound_from_its_start() {
    // The worker starts it 600 ms after the handover (less than PREPARE_GRACE): its 300 ms
    // count from Started.
    assert!(PREPARE_GRACE > Duration::from_millis(600));
    let second = "start-after 600; sleep 50; return b";
    let (pool, host, pids, a, b) = behind("sleep 100; return a", second, 300);
    assert_eq!(result_text(&a.recv_timeout(BOUND).unwrap().unwrap()), "a");
    let out = b.recv_timeout(BOUND).unwrap().unwrap();
    assert_eq!(result_text(&out), "b");
    assert!(
        out.stats.wall_us < 1_000_000,
        "wall time counts from Started: {} us",
        out.stats.wall_us
    );
    assert_eq!(pool.worker_pids(), pids);
    still_runs(&pool, &host);
    pool.shutdown(Duration::from_secs(2));
}

#[test]
fn a_run_cancelled_before_its_worker_started_it_is_cancelled_when_it_starts() {
    // Past its bound before Started (no handover: the worker is idle), and aborted before
    // Started (handed over): each Cancel reaches the worker once it knows the run, so the
    // worker stops the run and is kept. Sent earlier, the Cancel would be lost and the worker
    // killed after CANCEL_GRACE.
    let (pool, host, pids) = warm_pool();
    let starts_late = "start-after 300; sleep 20000; return never";
    let (_, took) = timed_out(&pool, &host, 50, starts_late);
    assert!(
        took < CANCEL_GRACE,
        "cancelled at its start, not killed: {took:?}"
    );
    assert_eq!(pool.worker_pids(), pids);

    // Handed over at the first run's Done, aborted before its worker starts it.
    let a = submit(&pool, &host, script("sleep 100; return a")).unwrap();
    let (id, rx) = submit_id(&pool, &host, script(starts_late)).unwrap();
    assert_eq!(result_text(&a.recv_timeout(BOUND).unwrap().unwrap()), "a");
    std::thread::sleep(Duration::from_millis(100));
    let aborted_at = Instant::now();
    pool.abort(id);
    let out = rx.recv_timeout(BOUND).unwrap();
    assert_eq!(out.unwrap_err().code, FailureCode::Aborted);
    let took = aborted_at.elapsed();
    assert!(
        took < CANCEL_GRACE,
        "cancelled at its start, not killed: {took:?}"
    );
    assert_eq!(pool.worker_pids(), pids);
    pool.shutdown(Duration::from_secs(2));
}

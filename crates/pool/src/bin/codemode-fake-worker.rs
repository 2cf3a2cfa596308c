//! `codemode-fake-worker`: a worker that speaks the protocol but has no V8, so the pool's
//! supervision can be tested in seconds (`crates/pool/tests/fake.rs`). Like the real worker it
//! says `Hello`, takes one `Execute` at a time, answers `Done` then `Ready`, reads `Cancel` on
//! the control pipe (fd 3) and exits when stdin closes. It reads and writes frames with the
//! protocol's codec, except where a script asks for malformed bytes on purpose.
//!
//! One file over 500 lines: a binary, and its script language (the commands and what each
//! sends) is one table that the tests read next to their scripts.
//!
//! Start-up options (a test points `worker_path` at a shell script that passes them):
//! - `--hello-version N`: say Hello with protocol version N instead of this build's.
//! - `--hello-v1`: write the Hello of protocol version 1, byte for byte.
//! - `--exit-before-hello CODE`: exit at once with CODE.
//!
//! An Execute's `code` is a script: one command per line (or separated by `;`), run in order.
//! The *answer* is the last tool or fetch answer, as text.
//! - `return TEXT`: finish with the bytes of TEXT as the result.
//! - `return-answer`: finish with the answer as the result.
//! - `error CODE MESSAGE`: finish with a program error.
//! - `log TEXT`: add a console entry (level `log`).
//! - `call PROVIDER TOOL ARGS`: make a tool call whose argument bytes are ARGS, wait for the
//!   answer: its payload, or `rejected: PAYLOAD`.
//! - `fetch URL`: a `GET` fetch; the answer is `STATUS BODY` or `rejected: MESSAGE`.
//! - `sleep MS`: sleep; a Cancel ends the run (error `INTERNAL`, as the real worker reports a
//!   run stopped before it settled).
//! - `grant ID`: finish by retaining the run under execution id ID, with one handle, `fetch`.
//!   Each `Invoke` is answered `200 invoked EXEC_ID`; `CloseHandles` ends it (then `Ready`).
//! - `spin MS`: keep the CPU busy for MS ms of wall time, whatever the run's CPU budget (as a
//!   worker whose count is broken, or taken over, would); a Cancel ends the run as in `sleep`.
//! - `ignore-cancel`: from here on this run ignores Cancel.
//! - `exit CODE`: exit the process at once.
//! - `garbage`: write a frame whose body is no message.
//!
//! Hostile commands: what a worker taken over by a program might send (the pool must kill the
//! worker, fail only its run, and replace it).
//! - `forge KIND ID`: a frame of KIND (`started`, `call`, `fetch`, `done`, `invoked`) naming
//!   execution ID instead of its own.
//! - `send-done`: a Done for its own run now (the script's end sends another).
//! - `same-call`: two tool calls (`kv.get`) under one call id, without waiting.
//! - `flood-calls N`: N tool calls (`kv.get`) without waiting for any answer.
//! - `flood-logs N BYTES`: N console entries of BYTES bytes each, past any bound.
//! - `big-args BYTES`: a tool call (`kv.get`) whose arguments are BYTES bytes.
//! - `big-result BYTES`: finish with a result of BYTES bytes.
//! - `bad-code WHICH`: finish with a program error whose code is `FOO\n` (`newline`), 10 KiB
//!   long (`long`), or WHICH itself.
//! - `oversize`: a length prefix past every bound, then nothing (the host must not wait for,
//!   or allocate, the body).
//! - `truncated`: a frame cut short (its prefix promises 1000 bytes, 10 follow), then exit 0.
//! - `host-msg`: a frame only the host sends (a `Cancel` of its own run).
//! - `alloc MIB`: allocate and touch MIB MiB of native memory (past the worker's ceiling, the
//!   allocation fails and the process aborts).
//! - `stderr TEXT`: write TEXT to stderr, with `\n`, `\r` and `\e` (ESC) decoded, so it can
//!   try to forge the host's own lines and steer a terminal.
//! - `stderr-flood BYTES`: write BYTES bytes to stderr, in lines of 100.
//! - `signal-by-proxy SIGNAL`: make the host the owner of this worker's stdin, with SIGNAL as
//!   the signal the kernel sends it (`F_SETOWN`, `F_SETSIG`, `O_ASYNC`): each frame the host
//!   writes then signals the host, unless the kernel refuses (the worker's uid may not signal
//!   the host's).
//!
//! A script that ends without `return` or `error` finishes with no result.
//!
//! The worker acknowledges each Execute with `Started` before running its script, unless the
//! script's first line says otherwise:
//! - `unstarted-exit`: exit at once without acknowledging (the run never started).
//! - `unstarted-exit-once PATH`: the same, unless PATH exists; creates it (a directory) first,
//!   so the worker that takes the run next runs it.
//!
//! Anywhere in the script (they act around the run, not in order):
//! - `start-after MS`: acknowledge only MS ms after reading the Execute, as a worker still
//!   preparing its isolate would, and forget a Cancel that arrived meanwhile (a worker does not
//!   know a run before it starts it).
//! - `no-ready`: send no `Ready` after this run's `Done` (the next run must come anyway).
//! - `spin-when-idle`: after this run's `Ready`, keep a core busy on a thread of its own while
//!   waiting for the next run, as a worker taken over by its program might (hostile).
//! - `invoke-spin MS`: retained, keep the CPU busy for MS ms before answering each Invoke; a
//!   Cancel ends the execution (the invocation is answered `INTERNAL`, then `Ready`).

use std::fs::File;
use std::io::{BufReader, Write};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_protocol::frame::read_frame;
use codemode_protocol::{
    Grant, HostMsg, LogEntry, LogLevel, RunError, RunOutcome, WireRequest, WireResponse, WorkerMsg,
    CONTROL_FD, PROTOCOL_VERSION,
};

/// `fcntl`'s F_SETSIG (Linux), which `libc` does not name for glibc.
const F_SETSIG: libc::c_int = 10;

fn send(msg: &WorkerMsg) {
    match msg.encode() {
        Ok(frame) => send_raw(&frame),
        Err(e) => {
            eprintln!("codemode-fake-worker: {e}");
            std::process::exit(2)
        }
    }
}

/// What a script asks of the worker around its run, from anywhere in the script.
struct Around {
    /// `start-after MS`.
    start_after: Option<Duration>,
    /// `no-ready`.
    no_ready: bool,
    /// `spin-when-idle`.
    spin_when_idle: bool,
    /// `invoke-spin MS`.
    invoke_spin: Option<Duration>,
}

fn around_run(code: &str) -> Around {
    let lines = || code.split(['\n', ';']).map(str::trim);
    Around {
        start_after: lines()
            .find_map(|l| l.strip_prefix("start-after "))
            .and_then(|ms| ms.parse().ok())
            .map(Duration::from_millis),
        no_ready: lines().any(|l| l == "no-ready"),
        spin_when_idle: lines().any(|l| l == "spin-when-idle"),
        invoke_spin: lines()
            .find_map(|l| l.strip_prefix("invoke-spin "))
            .and_then(|ms| ms.parse().ok())
            .map(Duration::from_millis),
    }
}

/// Keeps a core busy for as long as the process lives.
fn spin_forever() {
    std::thread::spawn(|| {
        let mut n = 0u64;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    });
}

/// Keeps this thread's core busy for `wall` (checked in slices of about a millisecond), or until
/// `stop` says so; whether it was stopped.
fn spin_for(wall: Duration, stop: impl Fn() -> bool) -> bool {
    let until = Instant::now() + wall;
    while Instant::now() < until {
        if stop() {
            return true;
        }
        let mut n = 0u64;
        for _ in 0..100_000 {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
    false
}

/// Whether the script's first line asks the worker to exit without acknowledging the run.
fn exits_unstarted(code: &str) -> bool {
    let first = code.split(['\n', ';']).next().unwrap_or_default().trim();
    match first.split_once(' ') {
        _ if first == "unstarted-exit" => true,
        Some(("unstarted-exit-once", path)) => std::fs::create_dir(path).is_ok(),
        _ => false,
    }
}

fn send_raw(frame: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(frame).and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}

struct Input {
    reader: BufReader<std::io::StdinLock<'static>>,
    buf: Vec<u8>,
}

impl Input {
    /// The next message; the process exits when the host closes stdin or sends garbage.
    fn next(&mut self) -> HostMsg {
        match read_frame(&mut self.reader, &mut self.buf) {
            Ok(true) => {}
            _ => std::process::exit(0),
        }
        match HostMsg::decode(&self.buf) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("codemode-fake-worker: {e}");
                std::process::exit(2)
            }
        }
    }
}

/// The exec id of the last Cancel read on the control pipe.
fn spawn_canceller() -> Arc<AtomicU64> {
    let cancelled = Arc::new(AtomicU64::new(0));
    // SAFETY: fcntl(F_GETFD) only inspects the descriptor table.
    if unsafe { libc::fcntl(CONTROL_FD, libc::F_GETFD) } < 0 {
        return cancelled;
    }
    // SAFETY: fd 3 is the control pipe the pool set up; nothing else in this process owns it.
    let control = unsafe { File::from_raw_fd(CONTROL_FD) };
    let flag = cancelled.clone();
    std::thread::spawn(move || {
        let mut input = BufReader::new(control);
        let mut buf = Vec::new();
        while let Ok(true) = read_frame(&mut input, &mut buf) {
            if let Ok(HostMsg::Cancel { exec_id }) = HostMsg::decode(&buf) {
                flag.store(exec_id, Ordering::SeqCst);
            }
        }
    });
    cancelled
}

// A step is made and matched once per script line and never stored, so the size of the
// outcome it carries moves nothing worth a box.
#[allow(clippy::large_enum_variant)]
enum Step {
    Next,
    Finish(RunOutcome),
}

fn terminated() -> Step {
    Step::Finish(RunOutcome {
        error: Some(RunError {
            code: "INTERNAL".into(),
            message:
                "Internal executor error: the run was stopped before it settled. Please report it."
                    .into(),
            location: None,
        }),
        ..Default::default()
    })
}

struct Run<'a> {
    exec_id: u64,
    input: &'a mut Input,
    cancelled: &'a AtomicU64,
    ignore_cancel: bool,
    next_call: u32,
    answer: Vec<u8>,
    logs: Vec<LogEntry>,
}

impl Run<'_> {
    fn cancelled(&self) -> bool {
        !self.ignore_cancel && self.cancelled.load(Ordering::SeqCst) == self.exec_id
    }

    /// Waits for the answer to call `call_id`; `None` when a Cancel ends the run first.
    fn wait_answer(&mut self, call_id: u32) -> Option<Vec<u8>> {
        loop {
            match self.input.next() {
                HostMsg::ToolResult {
                    exec_id,
                    call_id: c,
                    ok,
                    payload,
                } if exec_id == self.exec_id && c == call_id => {
                    return Some(if ok {
                        payload
                    } else {
                        [b"rejected: ".as_slice(), &payload].concat()
                    });
                }
                HostMsg::ToolDenied {
                    exec_id,
                    call_id: c,
                    message,
                } if exec_id == self.exec_id && c == call_id => {
                    return Some(format!("denied: {message}").into_bytes());
                }
                HostMsg::FetchResult {
                    exec_id,
                    call_id: c,
                    result,
                } if exec_id == self.exec_id && c == call_id => {
                    return Some(match result {
                        Ok(r) => {
                            let body = r.body.unwrap_or_default();
                            [format!("{} ", r.status).as_bytes(), &body].concat()
                        }
                        Err(m) => format!("rejected: {m}").into_bytes(),
                    });
                }
                HostMsg::Cancel { exec_id } if exec_id == self.exec_id && !self.ignore_cancel => {
                    return None;
                }
                _ => {}
            }
        }
    }

    fn step(&mut self, line: &str) -> Step {
        let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
        match cmd {
            "return" => Step::Finish(RunOutcome {
                result: Some(rest.as_bytes().to_vec()),
                ..Default::default()
            }),
            "return-answer" => Step::Finish(RunOutcome {
                result: Some(std::mem::take(&mut self.answer)),
                ..Default::default()
            }),
            "error" => {
                let (code, message) = rest.split_once(' ').unwrap_or((rest, ""));
                Step::Finish(RunOutcome {
                    error: Some(RunError {
                        code: code.into(),
                        message: message.into(),
                        location: None,
                    }),
                    ..Default::default()
                })
            }
            "log" => {
                self.logs.push(LogEntry {
                    level: LogLevel::Log,
                    message: rest.into(),
                });
                Step::Next
            }
            "call" | "fetch" => {
                self.next_call += 1;
                let call_id = self.next_call;
                if cmd == "call" {
                    let mut parts = rest.splitn(3, ' ');
                    let provider = parts.next().unwrap_or_default().into();
                    let tool = parts.next().unwrap_or_default().into();
                    let args = parts.next().unwrap_or_default().as_bytes().to_vec();
                    send(&WorkerMsg::ToolCall {
                        exec_id: self.exec_id,
                        call_id,
                        provider,
                        tool,
                        args,
                    });
                } else {
                    send(&WorkerMsg::Fetch {
                        exec_id: self.exec_id,
                        call_id,
                        request: WireRequest {
                            method: "GET".into(),
                            url: rest.into(),
                            ..Default::default()
                        },
                    });
                }
                match self.wait_answer(call_id) {
                    Some(answer) => {
                        self.answer = answer;
                        Step::Next
                    }
                    None => terminated(),
                }
            }
            "sleep" => {
                let until = Instant::now() + Duration::from_millis(rest.parse().unwrap_or(0));
                while Instant::now() < until {
                    if self.cancelled() {
                        return terminated();
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Step::Next
            }
            "spin" => {
                let wall = Duration::from_millis(rest.parse().unwrap_or(0));
                if spin_for(wall, || self.cancelled()) {
                    return terminated();
                }
                Step::Next
            }
            "unstarted-exit"
            | "unstarted-exit-once"
            | "start-after"
            | "no-ready"
            | "spin-when-idle"
            | "invoke-spin" => Step::Next,
            "ignore-cancel" => {
                self.ignore_cancel = true;
                Step::Next
            }
            "exit" => std::process::exit(rest.parse().unwrap_or(1)),
            "garbage" => {
                send_raw(&[3, 0, 0, 0, 0xee, 0xee, 0xee]);
                Step::Next
            }
            _ if hostile(self, cmd, rest) => Step::Next,
            "grant" => Step::Finish(RunOutcome {
                grant: Some(Grant {
                    execution_id: rest.into(),
                    handles: vec!["fetch".into()],
                }),
                ..Default::default()
            }),
            "bad-code" => {
                let code = match rest {
                    "newline" => "FOO\n".to_string(),
                    "long" => "E".repeat(10 * 1024),
                    other => other.to_string(),
                };
                Step::Finish(RunOutcome {
                    error: Some(RunError {
                        code,
                        message: "forged".into(),
                        location: None,
                    }),
                    ..Default::default()
                })
            }
            "big-result" => Step::Finish(RunOutcome {
                result: Some(vec![b'r'; rest.parse().unwrap_or(0)]),
                ..Default::default()
            }),
            other => Step::Finish(RunOutcome {
                error: Some(RunError {
                    code: "INTERNAL".into(),
                    message: format!("unknown command {other:?}"),
                    location: None,
                }),
                ..Default::default()
            }),
        }
    }
}

fn tool_call(exec_id: u64, call_id: u32, args: Vec<u8>) -> WorkerMsg {
    WorkerMsg::ToolCall {
        exec_id,
        call_id,
        provider: "kv".into(),
        tool: "get".into(),
        args,
    }
}

/// Runs a hostile command (see the top of this file); false when `cmd` is none.
fn hostile(run: &mut Run, cmd: &str, rest: &str) -> bool {
    let mut words = rest.split(' ');
    let mut num = || -> u64 { words.next().and_then(|w| w.parse().ok()).unwrap_or(0) };
    let call_id = || 1_000_000 + run.next_call;
    match cmd {
        "forge" => {
            let (kind, id) = rest.split_once(' ').unwrap_or((rest, "0"));
            let exec_id = id.parse().unwrap_or(0);
            send(&match kind {
                "started" => WorkerMsg::Started { exec_id },
                "call" => tool_call(exec_id, call_id(), b"forged".to_vec()),
                "fetch" => WorkerMsg::Fetch {
                    exec_id,
                    call_id: call_id(),
                    request: WireRequest {
                        method: "GET".into(),
                        url: "https://forged.test/".into(),
                        ..Default::default()
                    },
                },
                "done" => WorkerMsg::Done {
                    exec_id,
                    outcome: RunOutcome {
                        result: Some(b"forged".to_vec()),
                        ..Default::default()
                    },
                },
                _ => WorkerMsg::Invoked {
                    exec_id,
                    invoke_id: 1,
                    result: Ok(WireResponse::default()),
                },
            });
        }
        "send-done" => send(&WorkerMsg::Done {
            exec_id: run.exec_id,
            outcome: RunOutcome::default(),
        }),
        "same-call" => {
            send(&tool_call(run.exec_id, 77, b"a".to_vec()));
            send(&tool_call(run.exec_id, 77, b"b".to_vec()));
        }
        "flood-calls" => {
            for _ in 0..num() {
                run.next_call += 1;
                send(&tool_call(run.exec_id, run.next_call, b"flood".to_vec()));
            }
        }
        "flood-logs" => {
            let (n, bytes) = (num(), num() as usize);
            for _ in 0..n {
                run.logs.push(LogEntry {
                    level: LogLevel::Log,
                    message: "l".repeat(bytes),
                });
            }
        }
        "big-args" => {
            run.next_call += 1;
            send(&tool_call(
                run.exec_id,
                run.next_call,
                vec![b'a'; num() as usize],
            ));
        }
        "oversize" => send_raw(&u32::MAX.to_le_bytes()),
        "alloc" => {
            let held = vec![1u8; num() as usize * 1024 * 1024];
            std::hint::black_box(&held);
            std::mem::forget(held);
        }
        "truncated" => {
            let mut frame = 1000u32.to_le_bytes().to_vec();
            frame.extend_from_slice(&[0; 10]);
            send_raw(&frame);
            std::process::exit(0);
        }
        "stderr" => {
            let text = rest
                .replace("\\n", "\n")
                .replace("\\r", "\r")
                .replace("\\e", "\x1b");
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
        "stderr-flood" => {
            let line = [[b'e'; 99].as_slice(), b"\n"].concat();
            let mut err = std::io::stderr().lock();
            let mut left = num() as usize;
            while left > 0 {
                let n = left.min(line.len());
                if err.write_all(&line[..n]).is_err() {
                    break;
                }
                left -= n;
            }
        }
        "signal-by-proxy" => {
            let signal = num() as libc::c_int;
            // SAFETY: fcntl on this process's stdin with integer arguments.
            unsafe {
                libc::fcntl(0, libc::F_SETOWN, libc::getppid());
                libc::fcntl(0, F_SETSIG, signal);
                let flags = libc::fcntl(0, libc::F_GETFL);
                libc::fcntl(0, libc::F_SETFL, flags | libc::O_ASYNC);
            }
        }
        "host-msg" => send_raw(
            &HostMsg::Cancel {
                exec_id: run.exec_id,
            }
            .encode_small(),
        ),
        _ => return false,
    }
    true
}

/// A retained execution: answers its invocations until the host closes it (or cancels one
/// while `spin` keeps it busy).
fn serve_retained(input: &mut Input, exec_id: u64, spin: Option<Duration>, cancelled: &AtomicU64) {
    loop {
        match input.next() {
            HostMsg::Invoke {
                exec_id: e,
                invoke_id,
                ..
            } if e == exec_id
                && spin.is_some_and(|wall| {
                    spin_for(wall, || cancelled.load(Ordering::SeqCst) == exec_id)
                }) =>
            {
                send(&WorkerMsg::Invoked {
                    exec_id,
                    invoke_id,
                    result: match terminated() {
                        Step::Finish(RunOutcome { error: Some(e), .. }) => Err(e),
                        _ => return,
                    },
                });
                return;
            }
            HostMsg::Invoke {
                exec_id: e,
                invoke_id,
                ..
            } if e == exec_id => send(&WorkerMsg::Invoked {
                exec_id,
                invoke_id,
                result: Ok(WireResponse {
                    status: 200,
                    body: Some(format!("invoked {exec_id}").into_bytes()),
                    ..Default::default()
                }),
            }),
            HostMsg::CloseHandles { exec_id: e } if e == exec_id => return,
            _ => {}
        }
    }
}

fn main() {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args.get(i + 1).cloned().unwrap_or_default())
    };
    if let Some(code) = arg("--exit-before-hello") {
        std::process::exit(code.parse().unwrap_or(1));
    }
    let cancelled = spawn_canceller();
    let pid = std::process::id();
    if args.iter().any(|a| a == "--hello-v1") {
        let mut frame = vec![9, 0, 0, 0, 101, 1, 0, 0, 0];
        frame.extend_from_slice(&pid.to_le_bytes());
        send_raw(&frame);
    } else {
        let version = arg("--hello-version")
            .and_then(|v| v.parse().ok())
            .unwrap_or(PROTOCOL_VERSION);
        send(&WorkerMsg::Hello { version, pid });
    }
    let mut input = Input {
        reader: BufReader::new(std::io::stdin().lock()),
        buf: Vec::new(),
    };
    loop {
        let HostMsg::Execute(req) = input.next() else {
            continue;
        };
        if exits_unstarted(&req.code) {
            std::process::exit(9);
        }
        let around = around_run(&req.code);
        if let Some(delay) = around.start_after {
            std::thread::sleep(delay);
            cancelled.store(0, Ordering::SeqCst);
        }
        send(&WorkerMsg::Started {
            exec_id: req.exec_id,
        });
        let mut run = Run {
            exec_id: req.exec_id,
            input: &mut input,
            cancelled: &cancelled,
            ignore_cancel: false,
            next_call: 0,
            answer: Vec::new(),
            logs: Vec::new(),
        };
        let mut outcome = RunOutcome::default();
        for line in req.code.split(['\n', ';']).map(str::trim) {
            if line.is_empty() {
                continue;
            }
            if let Step::Finish(o) = run.step(line) {
                outcome = o;
                break;
            }
        }
        outcome.logs = std::mem::take(&mut run.logs);
        let retained = outcome.grant.is_some();
        send(&WorkerMsg::Done {
            exec_id: req.exec_id,
            outcome,
        });
        if retained {
            serve_retained(&mut input, req.exec_id, around.invoke_spin, &cancelled);
        }
        if !around.no_ready {
            send(&WorkerMsg::Ready);
        }
        if around.spin_when_idle {
            spin_forever();
        }
    }
}

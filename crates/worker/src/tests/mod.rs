//! Tests of the natives and the run loop against real prepared isolates: V8 starts once per
//! test process, each test builds its own isolate, and the host is a double in memory (frames
//! the run sends are captured; the answers it reads are made from them).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::FromRawFd;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use codemode_protocol::{
    ExecuteRequest, HostMsg, Outbound, ProviderDecl, RunOutcome, WireRequest, WireResponse,
    WorkerMsg,
};

use crate::engine::isolate::Prepared;
use crate::natives::clone;
use crate::process::io::{self, CurrentRun, Next};
use crate::process::link::HostInput;
use crate::run;
use crate::run::retained;

mod budgets;
mod globals;
mod handles;
mod memory;
mod natives;
mod replay;
mod run_loop;
mod snapshot;
mod value_format;

type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on the one thread of the test process that uses V8, as the worker does: that thread
/// starts V8 and builds the snapshot, then runs jobs one at a time. (With V8 13.0, creating an
/// isolate on a new thread after the thread of an earlier one exited crashes in
/// `WasmCodePointerTable`; and the memory meter is one per process, so runs must not overlap.)
/// A panic in `f` is re-raised in the caller.
pub fn on_v8_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    static JOBS: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    let jobs = JOBS.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::spawn(move || {
            crate::engine::platform::init_v8();
            crate::engine::snapshot::init(true);
            for job in rx {
                job();
            }
        });
        Mutex::new(tx)
    });
    let (tx, rx) = channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    jobs.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .send(job)
        .expect("the V8 thread is running");
    match rx.recv().expect("the V8 thread answers") {
        Ok(r) => r,
        Err(panic) => resume_unwind(panic),
    }
}

thread_local! {
    /// Frames the run sent and the host double has not read yet.
    static SENT: RefCell<Vec<WorkerMsg>> = const { RefCell::new(Vec::new()) };
}

/// The outbox the tests give the run: captures the frame.
fn capture(msg: &WorkerMsg) {
    SENT.with(|s| s.borrow_mut().push(msg.clone()));
}

type Respond = Box<dyn FnMut(&WorkerMsg) -> Vec<HostMsg>>;

/// The host double: answers each frame the run sent with `respond`'s messages, in order. With
/// nothing to deliver it lets a timer's wait pass, and otherwise reports the host gone.
struct Host {
    respond: Respond,
    queue: VecDeque<HostMsg>,
    sent: Vec<WorkerMsg>,
}

impl HostInput for Host {
    fn next_within(&mut self, wait: Option<Duration>, _answers: bool) -> Next {
        for msg in SENT.with(|s| std::mem::take(&mut *s.borrow_mut())) {
            self.queue.extend((self.respond)(&msg));
            self.sent.push(msg);
        }
        match (self.queue.pop_front(), wait) {
            (Some(msg), _) => Next::Msg(msg),
            (None, Some(wait)) => {
                std::thread::sleep(wait);
                Next::Timeout
            }
            (None, None) => Next::Closed,
        }
    }
}

pub const EXEC_ID: u64 = 7;

/// One run's request, to adjust before [`execute`].
pub fn request(code: &str) -> ExecuteRequest {
    ExecuteRequest {
        exec_id: EXEC_ID,
        code: code.into(),
        modules: Vec::new(),
        providers: Vec::new(),
        memory_limit_mib: 64,
        outbound: Outbound::Blocked,
        retain_handles: false,
        live_logs: false,
        budgets: Default::default(),
        replayable: None,
        hops: false,
    }
}

/// A provider for a request: `name`, offering `tools` (`None`: any tool).
pub fn provider(name: &str, tools: Option<&[&str]>) -> ProviderDecl {
    ProviderDecl {
        name: name.into(),
        tools: tools.map(|tools| tools.iter().map(|&t| t.into()).collect()),
    }
}

/// What a run produced: its outcome, the result as JSON, and every frame it sent.
pub struct Ran {
    pub outcome: RunOutcome,
    pub json: Option<String>,
    pub sent: Vec<WorkerMsg>,
}

impl Ran {
    pub fn error(&self) -> (&str, &str) {
        let e = self.outcome.error.as_ref().expect("the run failed");
        (e.code.as_str(), e.message.as_str())
    }
}

pub fn execute(
    req: ExecuteRequest,
    respond: impl FnMut(&WorkerMsg) -> Vec<HostMsg> + Send + 'static,
) -> Ran {
    on_v8_thread(move || {
        let control = Control::start();
        execute_here(req, respond, &control.current)
    })
}

/// Runs the requests one after the other as one worker does: the same run state and the same
/// control reader (which times each run's CPU budget) for all of them.
pub fn execute_in_turn(
    reqs: Vec<ExecuteRequest>,
    respond: fn(&WorkerMsg) -> Vec<HostMsg>,
) -> Vec<Ran> {
    on_v8_thread(move || {
        let control = Control::start();
        reqs.into_iter()
            .map(|req| execute_here(req, respond, &control.current))
            .collect()
    })
}

/// As in the worker, a thread of its own reads the control pipe and times the CPU budget; the
/// pipe closes (and the thread ends) when this is dropped.
struct Control {
    current: CurrentRun,
    writer: Option<File>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Control {
    fn start() -> Self {
        let current = CurrentRun::default();
        let (control, writer) = pipe();
        let reader = io::spawn_control_reader(control, current.clone()).expect("a control reader");
        Control {
            current,
            writer: Some(writer),
            reader: Some(reader),
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        drop(self.writer.take());
        if let Some(reader) = self.reader.take() {
            let ended = reader.join();
            if !std::thread::panicking() {
                ended.expect("the control reader ends with its pipe");
            }
        }
    }
}

fn execute_here(
    req: ExecuteRequest,
    respond: impl FnMut(&WorkerMsg) -> Vec<HostMsg> + 'static,
    current: &CurrentRun,
) -> Ran {
    SENT.with(|s| s.borrow_mut().clear());
    let mut host = Host {
        respond: Box::new(respond),
        queue: VecDeque::new(),
        sent: Vec::new(),
    };
    let prepared = Prepared::new(req.memory_limit_mib);
    current.expect(req.exec_id);
    let (outcome, ended) = run::run(prepared, req, &mut host, capture, current, None);
    let mut spent = match ended {
        run::Ended::Spent(spent) => spent,
        // Served until the host double has nothing more to say (its input then reads closed).
        run::Ended::Retained(retained) => {
            // As the worker's main loop does: the grant goes out, then the execution is served.
            capture(&WorkerMsg::Done {
                exec_id: EXEC_ID,
                outcome: outcome.clone(),
            });
            retained::serve(retained, &mut host, capture, current)
        }
    };
    host.sent
        .extend(SENT.with(|s| std::mem::take(&mut *s.borrow_mut())));
    let json = outcome.result.as_deref().map(|bytes| {
        in_context(&mut spent, |scope| {
            let value = clone::deserialize(scope, bytes).expect("a readable result");
            v8::json::stringify(scope, value)
                .expect("a JSON result")
                .to_rust_string_lossy(scope)
        })
    });
    Ran {
        outcome,
        json,
        sent: host.sent,
    }
}

/// Runs `code` with no host to answer it; asserts it did not fail.
pub fn succeeded(code: &str) -> Ran {
    let ran = execute(request(code), no_host);
    assert_eq!(ran.outcome.error, None);
    ran
}

/// Runs `code` with no host to answer it; its failure's code and text.
pub fn failed(code: &str) -> (String, String) {
    let ran = execute(request(code), no_host);
    let (code, message) = ran.error();
    (code.to_string(), message.to_string())
}

/// A pipe: its read end and its write end.
fn pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into the array we own.
    let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(made, 0, "a pipe: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 just opened both; each File is the only owner of its end.
    unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) }
}

pub fn no_host(_: &WorkerMsg) -> Vec<HostMsg> {
    Vec::new()
}

/// A host that answers each tool call with its own arguments (V8-serialized as they came), each
/// fetch with a 200 whose body is the request's URL, and nothing else.
pub fn echo(msg: &WorkerMsg) -> Vec<HostMsg> {
    match msg {
        WorkerMsg::ToolCall {
            exec_id,
            call_id,
            args,
            ..
        } => vec![HostMsg::ToolResult {
            exec_id: *exec_id,
            call_id: *call_id,
            ok: true,
            payload: args.clone(),
        }],
        WorkerMsg::Fetch {
            exec_id,
            call_id,
            request,
        } => vec![HostMsg::FetchResult {
            exec_id: *exec_id,
            call_id: *call_id,
            result: Ok(WireResponse {
                status: 200,
                status_text: "OK".into(),
                headers: vec![],
                body: Some(request.url.clone().into_bytes()),
                url: String::new(),
                redirected: false,
            }),
        }],
        _ => Vec::new(),
    }
}

/// An invocation of the retained execution's fetch handle: a GET of `url`.
pub fn invoke(invoke_id: u64, url: &str) -> HostMsg {
    HostMsg::Invoke {
        exec_id: EXEC_ID,
        invoke_id,
        handle: "fetch".into(),
        request: WireRequest {
            method: "GET".into(),
            url: url.into(),
            headers: vec![],
            body: None,
            redirect: Default::default(),
        },
    }
}

pub fn in_context<R>(prepared: &mut Prepared, f: impl FnOnce(&mut v8::PinScope) -> R) -> R {
    v8::scope!(let scope, &mut prepared.isolate);
    let context = v8::Local::new(scope, &prepared.context);
    let scope = &mut v8::ContextScope::new(scope, context);
    f(scope)
}

/// Runs `f` in a fresh context of a plain isolate: no snapshot, so only V8's own globals.
pub fn in_plain_context<R>(f: impl FnOnce(&mut v8::PinScope) -> R) -> R {
    let mut isolate = v8::Isolate::new(Default::default());
    v8::scope!(let scope, &mut isolate);
    let context = v8::Context::new(scope, Default::default());
    let scope = &mut v8::ContextScope::new(scope, context);
    f(scope)
}

/// The text of the exception pending in `tc` (empty when there is none).
pub fn thrown(tc: &mut v8::PinnedRef<v8::TryCatch<v8::HandleScope>>) -> String {
    tc.exception()
        .map(|e| e.to_rust_string_lossy(tc))
        .unwrap_or_default()
}

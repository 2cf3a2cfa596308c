//! Starting, feeding and reaping worker processes.
//!
//! Over 500 lines on purpose: a worker's whole life (spawn, handshake, the frames it sends,
//! loss and replacement, shutdown) is read in one place, since each step changes what the
//! others may assume. Retained executions (handles.rs) and native fetch (outbound.rs) are apart.

use std::fs::File;
use std::io::BufReader;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use codemode_protocol::{
    frame::read_frame, Failure, FailureCode, HostMsg, Outbound, RunError, RunOutcome, WireRequest,
    WireResponse, WorkerMsg, CONTROL_FD, PROTOCOL_VERSION,
};

use crate::handles;
use crate::process::Process;
use crate::{Completion, FetchCall, Inner, Job, Running, State, ToolCall, WorkerSlot};

/// A close-on-exec pipe: (read end, write end).
fn control_pipe() -> std::io::Result<(OwnedFd, File)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array we pass; we take ownership of both.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created by pipe2 and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

pub(crate) fn spawn_worker(inner: &Arc<Inner>) -> Result<(), Failure> {
    let start_failed =
        |detail: String| FailureCode::WorkerStartFailed.failure(&[("detail", &detail)]);
    let (control_read, control) =
        control_pipe().map_err(|e| start_failed(format!("no control pipe: {e}")))?;
    let control_raw = control_read.as_raw_fd();
    let mut command = Command::new(&inner.opts.worker_path);
    command
        .env(
            "CODEMODE_MEMORY_LIMIT_MIB",
            inner.opts.memory_limit_mib.to_string(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(diagnostics());
    // SAFETY: the closure runs in the forked child before exec and calls only dup2 and fcntl,
    // which are async-signal-safe; it touches no memory shared with the parent's threads.
    unsafe {
        command.pre_exec(move || {
            if control_raw == CONTROL_FD {
                // Already in place: only clear close-on-exec.
                if libc::fcntl(CONTROL_FD, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(control_raw, CONTROL_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let spawned = command.spawn();
    drop(control_read);
    let mut child =
        spawned.map_err(|e| start_failed(format!("{}: {e}", inner.opts.worker_path.display())))?;
    let (Some(stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(start_failed("its pipes could not be opened".into()));
    };
    // The key is taken before the slot exists, so the writer thread can carry it in its name.
    let key = {
        let mut st = inner.lock();
        st.next_worker += 1;
        st.next_worker - 1
    };
    let sent = inner.observe.bytes_out.clone();
    let input = match crate::input::start(stdin, format!("worker-{key}-in"), sent) {
        Ok(input) => input,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(start_failed(format!("no writer thread: {e}")));
        }
    };
    let process = Arc::new(Process::of(&child));
    inner.lock().workers.insert(
        key,
        WorkerSlot {
            process: process.clone(),
            input,
            control: Arc::new(Mutex::new(control)),
            exec: None,
        },
    );
    if let Some(watch) = &inner.watch {
        match crate::watched::watch(inner, watch.as_ref(), key, child, process.clone(), stdout) {
            Ok(()) => return Ok(()),
            // The host's loop cannot watch it: a reader thread reads it instead.
            Err((c, out)) => {
                child = c;
                stdout = out;
            }
        }
    }
    start_reader(inner, key, child, process, stdout)
        .map_err(|e| start_failed(format!("no reader thread: {e}")))
}

/// Reads a worker's frames on a thread of its own until it ends.
pub(crate) fn start_reader(
    inner: &Arc<Inner>,
    key: u64,
    child: Child,
    process: Arc<Process>,
    stdout: ChildStdout,
) -> std::io::Result<()> {
    let inner2 = inner.clone();
    let reader = std::thread::Builder::new()
        .name(format!("worker-{key}"))
        .spawn(move || read_worker(inner2, key, child, process, stdout));
    if let Err(e) = reader {
        // The child was moved into the failed closure and dropped unreaped; dropping its slot
        // closes stdin, and a worker exits when stdin closes.
        inner.lock().workers.remove(&key);
        return Err(e);
    }
    Ok(())
}

/// The worker's stderr: a duplicate of ours. Inheriting fd 2 is not enough under Node, which
/// marks its stdio close-on-exec, so the worker would start with /dev/null and its fatal
/// diagnostics (a V8 abort, a broken bootstrap) would vanish.
fn diagnostics() -> Stdio {
    use std::os::fd::AsFd;
    match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => Stdio::from(fd),
        Err(_) => Stdio::inherit(),
    }
}

/// Hands queued jobs to idle workers. Called with the lock held.
pub(crate) fn pump(inner: &Inner, st: &mut MutexGuard<'_, State>) {
    while !st.queue.is_empty() {
        let Some(worker) = st.idle.pop_front() else {
            return;
        };
        let Some(job) = st.queue.pop_front() else {
            return;
        };
        let Some(slot) = st.workers.get_mut(&worker) else {
            st.queue.push_front(job);
            continue;
        };
        slot.exec = Some(job.exec_id);
        // A broken pipe means the worker is going; its reader thread reports it lost, and the
        // run, never acknowledged, goes back to the queue.
        slot.input.send(job.frame.clone());
        st.running.insert(
            job.exec_id,
            Running {
                worker,
                unstarted: Some(job.frame),
                requeues: job.requeues,
                host: job.host,
                outbound: job.outbound,
                done: job.done,
                timeout_ms: job.timeout_ms,
                started: Instant::now(),
                deadline: Instant::now() + Duration::from_millis(job.timeout_ms),
                cancelled_at: None,
            },
        );
        inner.changed.notify_all();
    }
}

fn read_worker(
    inner: Arc<Inner>,
    key: u64,
    child: Child,
    process: Arc<Process>,
    stdout: ChildStdout,
) {
    let mut input = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::with_capacity(4096);
    let mut greeted = false;
    let why = loop {
        match read_frame(&mut input, &mut buf) {
            Ok(true) => {}
            Ok(false) => break None,
            Err(e) => break Some(format!("unreadable output: {e}")),
        }
        if let Err(why) = on_frame(&inner, key, &mut greeted, &buf) {
            break Some(why);
        }
    };
    end_worker(&inner, key, child, &process, greeted, why);
}

/// The worker is gone (or must go). Make sure, reap it (under the lock every kill of it
/// takes), and settle what it held.
pub(crate) fn end_worker(
    inner: &Inner,
    key: u64,
    mut child: Child,
    process: &Process,
    greeted: bool,
    why: Option<String>,
) {
    let status = process.kill_and_reap(&mut child);
    if greeted {
        worker_lost(inner, key, why, status);
    } else {
        let detail = why.unwrap_or_else(|| describe_exit(status) + " before its handshake");
        worker_refused(inner, key, detail);
    }
}

/// Handles one frame a worker sent (its body, without the length prefix). `Err` says why the
/// worker must go.
pub(crate) fn on_frame(
    inner: &Arc<Inner>,
    key: u64,
    greeted: &mut bool,
    frame: &[u8],
) -> Result<(), String> {
    inner.observe.read(frame.len());
    let msg = WorkerMsg::decode(frame).map_err(|e| e.to_string())?;
    if !*greeted && !matches!(msg, WorkerMsg::Hello { .. }) {
        return Err("its first frame was not a Hello".into());
    }
    match msg {
        WorkerMsg::Hello { version, .. } => {
            if *greeted {
                return Err("it said Hello twice".into());
            }
            if version != PROTOCOL_VERSION {
                return Err(format!(
                    "the worker binary speaks protocol {version}, this addon {PROTOCOL_VERSION}; rebuild or reinstall so both come from one release"
                ));
            }
            *greeted = true;
            mark_idle(inner, key);
        }
        WorkerMsg::Ready => mark_idle(inner, key),
        WorkerMsg::Log { exec_id, entry } => inner.observe.log(exec_id, entry),
        WorkerMsg::Started { exec_id } => {
            if let Some(run) = inner.lock().running.get_mut(&exec_id) {
                run.unstarted = None;
            }
        }
        WorkerMsg::Fetch {
            exec_id,
            call_id,
            request,
        } => start_fetch(inner, exec_id, call_id, request),
        WorkerMsg::ToolCall {
            exec_id,
            call_id,
            provider,
            tool,
            args,
        } => {
            let host = inner.lock().running.get(&exec_id).map(|r| r.host.clone());
            if let Some(host) = host {
                host.tool_call(ToolCall {
                    exec_id,
                    call_id,
                    provider,
                    tool,
                    args,
                });
            }
        }
        WorkerMsg::Invoked {
            exec_id,
            invoke_id,
            result,
        } => handles::invoked(inner, exec_id, invoke_id, result),
        WorkerMsg::Done {
            exec_id,
            mut outcome,
        } => {
            let finished = {
                let mut st = inner.lock();
                let run = st.running.remove(&exec_id);
                match (run, outcome.grant.take()) {
                    // The isolate is retained: the worker's slot stays taken.
                    (Some(run), Some(grant)) if run.cancelled_at.is_none() => {
                        outcome.grant = Some(grant.clone());
                        handles::grant(&mut st, exec_id, &run, grant);
                        Some(run)
                    }
                    (run, grant) => {
                        // Free, but not idle until its next isolate is prepared (Ready): a
                        // run queued now goes to a worker that can start it at once.
                        if let Some(slot) = st.workers.get_mut(&key) {
                            slot.exec = None;
                            if grant.is_some() {
                                // Granted as the deadline passed: nobody gets the handles.
                                let close = HostMsg::CloseHandles { exec_id };
                                slot.input.send(close.encode_small());
                            }
                        }
                        run
                    }
                }
            };
            if let Some(run) = finished {
                let mut outcome = match run.cancelled_at {
                    // Terminated at its deadline: whatever the worker said, it timed out.
                    Some(_) => RunOutcome {
                        stats: outcome.stats,
                        ..timed_out(run.timeout_ms, outcome.logs)
                    },
                    None => outcome,
                };
                outcome.stats.wall_us = run.started.elapsed().as_micros() as u64;
                (run.done)(exec_id, Ok(outcome));
            }
        }
    }
    Ok(())
}

/// Routes a run's fetch by its outbound mode: to the host's policy, or to the native client on
/// a thread of its own (bounded by what is left of the run's time).
fn start_fetch(inner: &Arc<Inner>, exec_id: u64, call_id: u32, request: WireRequest) {
    let found = {
        let st = inner.lock();
        match st.running.get(&exec_id) {
            Some(r) => Some((r.outbound, r.host.clone(), r.deadline)),
            // A retained execution's fetch (from a handler or a timer): bounded by the
            // invocation in flight, else by one time bound from now.
            None => st
                .retained_ids
                .get(&exec_id)
                .and_then(|id| st.retained.get(id))
                .map(|r| {
                    let deadline = r.current.as_ref().map_or_else(
                        || Instant::now() + Duration::from_millis(r.timeout_ms),
                        |c| c.deadline,
                    );
                    (r.outbound, r.host.clone(), deadline)
                }),
        }
    };
    let Some((outbound, host, deadline)) = found else {
        return;
    };
    match outbound {
        Outbound::Routed => host.fetch(FetchCall {
            exec_id,
            call_id,
            request,
        }),
        Outbound::Native => {
            let weak = Arc::downgrade(inner);
            let timeout = deadline.saturating_duration_since(Instant::now());
            let spawned = std::thread::Builder::new()
                .name("fetch".into())
                .spawn(move || {
                    let Some(inner) = weak.upgrade() else { return };
                    let result = inner.client.fetch(request, timeout);
                    answer_fetch(&inner, exec_id, call_id, result);
                });
            if let Err(e) = spawned {
                let text = format!("fetch could not start: {e}");
                answer_fetch(inner, exec_id, call_id, Err(text));
            }
        }
        // The worker rejects blocked fetches itself; one arriving here is answered the same way.
        Outbound::Blocked => answer_fetch(
            inner,
            exec_id,
            call_id,
            Err(FailureCode::NetworkClosed.template().to_string()),
        ),
    }
}

/// Writes a fetch answer to the worker running `exec_id` (or retaining it), if it still does.
pub(crate) fn answer_fetch(
    inner: &Inner,
    exec_id: u64,
    call_id: u32,
    result: Result<WireResponse, String>,
) {
    let frame = HostMsg::FetchResult {
        exec_id,
        call_id,
        result,
    }
    .encode()
    .unwrap_or_else(|e| {
        HostMsg::FetchResult {
            exec_id,
            call_id,
            result: Err(crate::answer_too_large("fetch", e)),
        }
        .encode_small()
    });
    let st = inner.lock();
    let worker = match st.running.get(&exec_id) {
        Some(run) => Some(run.worker),
        None => st
            .retained_ids
            .get(&exec_id)
            .and_then(|id| st.retained.get(id))
            .map(|r| r.worker),
    };
    if let Some(w) = worker.and_then(|w| st.workers.get(&w)) {
        w.input.send(frame);
    }
}

/// Writes `frame` to the worker running `exec_id`. A run that already ended gets nothing (no one
/// waits for the answer); a write error means the worker died, and its reader thread reports it.
pub(crate) fn send_to_run(inner: &Inner, exec_id: u64, frame: Vec<u8>) {
    let st = inner.lock();
    let Some(run) = st.running.get(&exec_id) else {
        return;
    };
    if let Some(w) = st.workers.get(&run.worker) {
        w.input.send(frame);
    }
}

fn mark_idle(inner: &Inner, key: u64) {
    let mut st = inner.lock();
    let free = st.workers.get(&key).is_some_and(|slot| slot.exec.is_none());
    if free && !st.idle.contains(&key) {
        st.idle.push_back(key);
    }
    pump(inner, &mut st);
}

fn worker_lost(inner: &Inner, key: u64, why: Option<String>, status: Option<ExitStatus>) {
    let detail = why.unwrap_or_else(|| describe_exit(status));
    let failure = FailureCode::WorkerLost.failure(&[("detail", &detail)]);
    let mut settles = Vec::new();
    let (lost, replace) = {
        let mut st = inner.lock();
        let slot = st.workers.remove(&key);
        st.idle.retain(|k| *k != key);
        let held = slot.and_then(|s| s.exec);
        if let Some(exec_id) = held {
            handles::worker_lost(inner, &mut st, exec_id, &failure, &mut settles);
        }
        let mut lost = held.and_then(|id| st.running.remove(&id).map(|r| (id, r)));
        // A run the worker never acknowledged had no effect outside it: it goes back to the
        // front of the queue, for the replacement (or another idle worker), a bounded number
        // of times. One past its deadline was cancelled: it times out below.
        if let Some((exec_id, run)) = lost.take_if(|(_, r)| {
            r.unstarted.is_some()
                && r.cancelled_at.is_none()
                && r.requeues < crate::REQUEUE_BOUND
                && !st.stopping
        }) {
            if let Some(frame) = run.unstarted {
                st.queue.push_front(Job {
                    exec_id,
                    frame,
                    requeues: run.requeues + 1,
                    outbound: run.outbound,
                    timeout_ms: run.timeout_ms,
                    host: run.host,
                    done: run.done,
                });
            }
            pump(inner, &mut st);
        }
        let replace = !st.stopping;
        inner.changed.notify_all();
        (lost, replace)
    };
    handles::run_all(settles);
    let unresponsive = lost.as_ref().is_some_and(|(_, r)| r.cancelled_at.is_some());
    if let Some((exec_id, run)) = lost {
        let result = if run.cancelled_at.is_some() {
            let mut outcome = timed_out(run.timeout_ms, Vec::new());
            outcome.stats.wall_us = run.started.elapsed().as_micros() as u64;
            Ok(outcome)
        } else if run.unstarted.is_some() && run.requeues >= crate::REQUEUE_BOUND {
            let detail = format!(
                "{detail}; the run was given to a worker {} times and none started it",
                run.requeues + 1
            );
            Err(FailureCode::WorkerLost.failure(&[("detail", &detail)]))
        } else if run.unstarted.is_some() {
            // Never started, and the pool is stopping: nothing was lost.
            Err(FailureCode::Closed.failure(&[]))
        } else {
            Err(failure)
        };
        (run.done)(exec_id, result);
    }
    if replace {
        inner.observe.restarted(status, unresponsive);
        // A closed channel means the pool is being dropped: nothing to replace for.
        let _ = inner.respawn.send(());
    }
}

/// Starts the thread that spawns replacement workers. Workers ask the kernel to kill them
/// when the thread that forked them ends (`PR_SET_PDEATHSIG` follows the parent *thread*), so
/// a replacement must not be forked by the reader thread of the worker it replaces, which ends
/// right after. This thread lives as long as the pool.
pub(crate) fn start_spawner(
    inner: &Arc<Inner>,
    requests: crossbeam_channel::Receiver<()>,
) -> Result<(), Failure> {
    let weak = Arc::downgrade(inner);
    let spawned = std::thread::Builder::new()
        .name("spawner".into())
        .spawn(move || {
            for () in requests {
                let Some(inner) = weak.upgrade() else { return };
                if inner.lock().stopping {
                    continue;
                }
                if let Err(e) = spawn_worker(&inner) {
                    eprintln!("codemode-executor: replacing a lost worker failed: {e}");
                    fail_queue_if_no_workers(&inner, e);
                }
            }
        });
    match spawned {
        Ok(_) => Ok(()),
        Err(e) => Err(FailureCode::WorkerStartFailed
            .failure(&[("detail", &format!("no spawner thread: {e}"))])),
    }
}

/// A worker that ended before completing its handshake (it exited, said another protocol
/// version, or spoke garbage) is not replaced: its binary would most likely fail the same way,
/// over and over. When no worker is left, waiting runs fail with WORKER_START_FAILED; the next
/// `execute` tries a fresh worker.
fn worker_refused(inner: &Inner, key: u64, detail: String) {
    {
        let mut st = inner.lock();
        st.workers.remove(&key);
        st.idle.retain(|k| *k != key);
        inner.changed.notify_all();
        if st.stopping {
            // Killed by shutdown while starting: nothing failed.
            return;
        }
    }
    let failure = FailureCode::WorkerStartFailed.failure(&[("detail", &detail)]);
    eprintln!("codemode-executor: {failure}");
    fail_queue_if_no_workers(inner, failure);
}

fn fail_queue_if_no_workers(inner: &Inner, failure: Failure) {
    let jobs: Vec<(u64, Completion)> = {
        let mut st = inner.lock();
        if !st.workers.is_empty() {
            return;
        }
        st.queue.drain(..).map(|j| (j.exec_id, j.done)).collect()
    };
    for (exec_id, done) in jobs {
        done(exec_id, Err(failure.clone()));
    }
}

pub(crate) fn timed_out(timeout_ms: u64, logs: Vec<codemode_protocol::LogEntry>) -> RunOutcome {
    let ms = timeout_ms.to_string();
    RunOutcome {
        result: None,
        error: Some(RunError {
            code: FailureCode::Timeout.as_str().into(),
            message: FailureCode::Timeout.render(&[("ms", &ms)]),
            location: None,
        }),
        logs,
        stats: Default::default(),
        grant: None,
    }
}

fn describe_exit(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("it exited with code {code}"),
            (None, Some(sig)) => format!("it was killed by signal {sig}"),
            _ => "it exited".into(),
        },
        None => "its exit status is unknown".into(),
    }
}

pub(crate) fn shutdown(inner: &Arc<Inner>, grace: Duration) {
    let mut settles = Vec::new();
    let (jobs, processes) = {
        let mut st = inner.lock();
        st.closed = true;
        st.stopping = true;
        handles::end_all(inner, &mut st, &mut settles);
        let processes: Vec<Arc<Process>> = st.workers.values().map(|w| w.process.clone()).collect();
        let jobs: Vec<(u64, Completion)> =
            st.queue.drain(..).map(|j| (j.exec_id, j.done)).collect();
        (jobs, processes)
    };
    handles::run_all(settles);
    for (exec_id, done) in jobs {
        done(exec_id, Err(FailureCode::Closed.failure(&[])));
    }
    // A worker holds nothing worth flushing once its runs are settled, so SIGKILL is the
    // fastest stop that cannot be ignored; each reader thread then reaps its own child.
    // A worker its reader thread reaped meanwhile is not signalled (see `Process`).
    for process in &processes {
        process.kill();
    }
    // Watched workers are read by the host's loop, which may be the thread waiting here.
    crate::watched::end_all(inner);
    let deadline = Instant::now() + grace;
    let mut st = inner.lock();
    while !st.workers.is_empty() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        st = inner
            .changed
            .wait_timeout(st, deadline - now)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
}

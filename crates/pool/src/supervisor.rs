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
    frame::read_frame_within, Failure, FailureCode, HostMsg, RunError, RunOutcome, WireRequest,
    WireResponse, WorkerMsg, CONTROL_FD, PROTOCOL_VERSION,
};

use crate::conduct::{self, Binding, Violation, WORKER_FRAME_BYTES};
use crate::handles;
use crate::outbound::Admitted;
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

/// The host variables a worker starts with (besides `CODEMODE_MEMORY_LIMIT_MIB`): the time
/// zone and locale, which V8 reads for `Date` and `Intl`, so a program sees what it sees under
/// the host's Node. Extend only with variables that hold no secret.
const PASSED_ENV: &[&str] = &["TZ", "LANG", "LANGUAGE", "LC_ALL"];

pub(crate) fn spawn_worker(inner: &Arc<Inner>) -> Result<(), Failure> {
    let start_failed =
        |detail: String| FailureCode::WorkerStartFailed.failure(&[("detail", &detail)]);
    let (control_read, control) =
        control_pipe().map_err(|e| start_failed(format!("no control pipe: {e}")))?;
    let control_raw = control_read.as_raw_fd();
    let ceiling = libc::rlimit {
        rlim_cur: crate::process::address_ceiling(inner.opts.memory_limit_mib)
            .min(crate::process::address_hard_limit()),
        rlim_max: crate::process::address_hard_limit(),
    };
    let identity = crate::process::worker_identity(inner.opts.workers);
    let mut command = Command::new(&inner.opts.worker_path);
    // Nothing of the host's environment (its API keys, its database passwords) reaches a
    // worker's memory: the variables it reads, and those that shape what a program observes
    // (time zone, locale), and nothing else. Its working directory holds nothing.
    command.env_clear().current_dir("/");
    for name in PASSED_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command
        .env(
            "CODEMODE_MEMORY_LIMIT_MIB",
            inner.opts.memory_limit_mib.to_string(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Its own pipe, drained by the pool (diagnostics.rs): never the host's stderr itself.
        .stderr(Stdio::piped());
    // Under a root host the child execs the binary through a descriptor opened here, as root,
    // after it has become the worker's identity: that identity needs to execute the file, not
    // to traverse the directories above it (an install under /root or a private temp dir).
    let by_fd = match &identity {
        Some(_) => Some(
            crate::process::ExecByFd::prepare(&inner.opts.worker_path, &command)
                .map_err(|e| start_failed(format!("{}: {e}", inner.opts.worker_path.display())))?,
        ),
        None => None,
    };
    // SAFETY: the closure runs in the forked child before exec and calls only setrlimit, dup2,
    // fcntl, prctl, (`become_identity`) setgroups, setresgid and setresuid, and
    // (`ExecByFd::exec`) execveat, which are async-signal-safe; it touches no memory shared with the parent's
    // threads and allocates nothing (the rlimit, the identity and the exec's argument arrays
    // were built before the fork and moved into it).
    unsafe {
        command.pre_exec(move || {
            // The address-space ceiling for the pool's default memory limit; each run's
            // Execute sets the one for its own limit (see `pump`).
            if libc::setrlimit(libc::RLIMIT_AS, &ceiling) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if control_raw == CONTROL_FD {
                // Already in place: only clear close-on-exec.
                if libc::fcntl(CONTROL_FD, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(control_raw, CONTROL_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // No capability crosses the exec of a host that is not root but holds some
            // (systemd's AmbientCapabilities=): the ambient set is cleared. EINVAL on a kernel
            // without ambient capabilities, which then has none to pass.
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            );
            // Last: the steps above may need root.
            if let Some(identity) = &identity {
                crate::process::become_identity(identity)?;
            }
            if let Some(by_fd) = &by_fd {
                // Returns only when the exec failed.
                return Err(by_fd.exec());
            }
            Ok(())
        });
    }
    let spawned = command.spawn();
    drop(control_read);
    let mut child = spawned.map_err(|e| {
        let path = inner.opts.worker_path.display();
        start_failed(match identity {
            Some(id) => format!(
                "{path}: {e} (the host runs as root, so workers start as uid {} and gid {}: the host needs CAP_SETUID and CAP_SETGID, both ids must exist in its user namespace, and the worker binary must be executable by that user, e.g. mode 0755)",
                id.uid, id.gid
            ),
            None => format!("{path}: {e}"),
        })
    })?;
    let (Some(stdin), Some(mut stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(start_failed("its pipes could not be opened".into()));
    };
    if let Err(e) = crate::diagnostics::drain(child.id(), stderr) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(start_failed(format!("no thread for its diagnostics: {e}")));
    }
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
    let process = Arc::new(Process::of(&child, identity));
    inner.lock().workers.insert(
        key,
        WorkerSlot {
            process: process.clone(),
            input,
            control: Arc::new(Mutex::new(control)),
            exec: None,
            bound: None,
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

/// Hands queued jobs to idle workers, else to workers preparing their next isolate (see
/// `State::preparing`). Called with the lock held.
pub(crate) fn pump(inner: &Inner, st: &mut MutexGuard<'_, State>) {
    while !st.queue.is_empty() {
        let (worker, early) = match st.idle.pop_front() {
            Some(worker) => (worker, false),
            None => match st.preparing.pop_front() {
                Some(worker) => (worker, true),
                None => return,
            },
        };
        let Some(job) = st.queue.pop_front() else {
            return;
        };
        let Some(slot) = st.workers.get_mut(&worker) else {
            st.queue.push_front(job);
            continue;
        };
        slot.exec = Some(job.exec_id);
        // Before the Execute: the worker builds the run's isolate under its ceiling. A worker
        // that is already gone fails the write below and is reported lost.
        let ceiling = crate::process::address_ceiling(job.memory_limit_mib);
        if let Err(e) = slot.process.set_address_ceiling(ceiling) {
            eprintln!("codemode-executor: could not set a worker's memory ceiling: {e}");
        }
        slot.bound = Some(Binding::new(job.exec_id, job.tools.clone()));
        // A broken pipe means the worker is going; its reader reports it lost, and the
        // run, never acknowledged, goes back to the queue.
        slot.input.send(job.frame.clone());
        let now = Instant::now();
        let mut deadline = now + Duration::from_millis(job.timeout_ms);
        if early {
            deadline += crate::PREPARE_GRACE;
        }
        st.running.insert(
            job.exec_id,
            Running {
                worker,
                unstarted: Some(job.frame),
                requeues: job.requeues,
                host: job.host,
                outbound: job.outbound,
                tools: job.tools,
                memory_limit_mib: job.memory_limit_mib,
                done: job.done,
                timeout_ms: job.timeout_ms,
                started: now,
                deadline,
                cancelled_at: None,
                rebase: early,
            },
        );
        crate::watchdog::due_by(inner, st, deadline);
    }
}

/// Why a worker's reader stopped.
pub(crate) enum End {
    /// Its output ended between frames.
    Eof,
    /// It must go, for a reason that breaks no rule (an unreadable pipe, a version mismatch).
    Lost(String),
    /// It sent what a healthy worker never sends (conduct.rs).
    Violation(Violation),
}

fn read_worker(
    inner: Arc<Inner>,
    key: u64,
    mut child: Child,
    process: Arc<Process>,
    stdout: ChildStdout,
) {
    let mut input = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::with_capacity(4096);
    let mut greeted = false;
    let end = loop {
        match read_frame_within(&mut input, &mut buf, WORKER_FRAME_BYTES) {
            Ok(true) => {}
            Ok(false) => break End::Eof,
            Err(e) => break unreadable(e, &mut child),
        }
        if let Err(end) = on_frame(&inner, key, &mut greeted, &buf) {
            break end;
        }
    };
    end_worker(&inner, key, child, &process, greeted, end);
}

/// Handles one frame a worker sent (its body, without the length prefix), whichever reader
/// read it (a reader thread, or the host's loop: watched.rs). `Err` says why the worker must
/// go.
pub(crate) fn on_frame(
    inner: &Arc<Inner>,
    key: u64,
    greeted: &mut bool,
    frame: &[u8],
) -> Result<(), End> {
    inner.observe.read(frame.len());
    let msg = match WorkerMsg::decode(frame) {
        Ok(m) => m,
        // Before the handshake, garbage is most likely no worker at all (a wrong path).
        Err(e) if !*greeted => return Err(End::Lost(e.to_string())),
        Err(e) => return Err(End::Violation(Violation(e.to_string()))),
    };
    if !*greeted && !matches!(msg, WorkerMsg::Hello { .. }) {
        return Err(End::Lost("its first frame was not a Hello".into()));
    }
    check(inner, key, &msg).map_err(End::Violation)?;
    match msg {
        WorkerMsg::Hello { version, .. } => {
            if *greeted {
                return Err(End::Violation(Violation("it said Hello twice".into())));
            }
            if version != PROTOCOL_VERSION {
                return Err(End::Lost(format!(
                    "the worker binary speaks protocol {version}, this addon {PROTOCOL_VERSION}; rebuild or reinstall so both come from one release"
                )));
            }
            *greeted = true;
            mark_idle(inner, key);
        }
        WorkerMsg::Ready => mark_idle(inner, key),
        WorkerMsg::Log { exec_id, entry } => inner.observe.log(exec_id, entry),
        WorkerMsg::Started { exec_id } => started(inner, exec_id),
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
        WorkerMsg::Done { exec_id, outcome } => {
            done(inner, key, exec_id, outcome).map_err(End::Violation)?
        }
    }
    Ok(())
}

/// The worker is gone (or must go). Make sure, reap it (under the lock every kill of it
/// takes), and settle what it held.
pub(crate) fn end_worker(
    inner: &Inner,
    key: u64,
    mut child: Child,
    process: &Process,
    greeted: bool,
    end: End,
) {
    let status = process.kill_and_reap(&mut child);
    match end {
        End::Violation(v) if greeted => violated(inner, key, process.pid(), v, status),
        _ if greeted => {
            let why = match end {
                End::Lost(why) => Some(why),
                _ => None,
            };
            worker_lost(inner, key, why, status)
        }
        _ => {
            let detail = match end {
                End::Lost(why) => why,
                End::Violation(v) => v.0,
                End::Eof => describe_exit(status) + " before its handshake",
            };
            worker_refused(inner, key, detail);
        }
    }
}

/// Checks a frame against the execution the worker is bound to (conduct.rs), under the lock.
fn check(inner: &Inner, key: u64, msg: &WorkerMsg) -> Result<(), Violation> {
    let mut st = inner.lock();
    let binding = st.workers.get_mut(&key).and_then(|s| s.bound.as_mut());
    conduct::admit(binding, msg)
}

/// Output that cannot be read as frames. A length past the bound, or a frame cut short by a
/// worker that exited normally or still lives, is a violation; a frame cut short by the
/// worker's death from a signal (the kernel's OOM killer, a memory ceiling) is a crash.
pub(crate) fn unreadable(e: std::io::Error, child: &mut Child) -> End {
    use std::io::ErrorKind;
    use std::os::unix::process::ExitStatusExt;
    match e.kind() {
        ErrorKind::InvalidData => End::Violation(Violation(format!("an oversize frame: {e}"))),
        ErrorKind::UnexpectedEof => {
            // A worker that closed its output is exiting: give it a moment to say how.
            let until = Instant::now() + Duration::from_millis(200);
            loop {
                match child.try_wait() {
                    Ok(Some(status)) if status.signal().is_some() => {
                        break End::Lost(format!(
                            "{}, in the middle of a frame",
                            describe_exit(Some(status))
                        ));
                    }
                    Ok(Some(_)) => {
                        break End::Violation(Violation(format!("a truncated frame: {e}")))
                    }
                    Ok(None) if Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    _ => break End::Violation(Violation(format!("a truncated frame: {e}"))),
                }
            }
        }
        _ => End::Lost(format!("unreadable output: {e}")),
    }
}

/// A run's `Started`: it can no longer be queued again; one handed over while its worker was
/// preparing gets its time bound from now; one cancelled before it started is cancelled now
/// (the worker knows the run from here on).
fn started(inner: &Inner, exec_id: u64) {
    let mut st = inner.lock();
    let State {
        running, workers, ..
    } = &mut *st;
    let Some(run) = running.get_mut(&exec_id) else {
        return;
    };
    run.unstarted = None;
    let mut rebased = None;
    if std::mem::take(&mut run.rebase) && run.cancelled_at.is_none() {
        let now = Instant::now();
        run.started = now;
        run.deadline = now + Duration::from_millis(run.timeout_ms);
        rebased = Some(run.deadline);
    }
    if run.cancelled_at.is_some() {
        if let Some(w) = workers.get(&run.worker) {
            crate::watchdog::send_cancel(exec_id, &w.control, &w.input);
        }
    }
    // Later than the deadline it replaces, but maybe earlier than the watchdog's next look.
    if let Some(deadline) = rebased {
        crate::watchdog::due_by(inner, &mut st, deadline);
    }
}

/// A run's Done: the outcome goes to whoever waits for it, or the isolate is retained. A grant
/// naming an execution id already in use is a violation (handles.rs), checked before anything
/// changes.
fn done(inner: &Inner, key: u64, exec_id: u64, mut outcome: RunOutcome) -> Result<(), Violation> {
    let finished = {
        let mut st = inner.lock();
        if let Some(grant) = &outcome.grant {
            handles::unused(&st, grant)?;
        }
        let run = st.running.remove(&exec_id);
        match (run, outcome.grant.take()) {
            // The isolate is retained: the worker's slot stays taken.
            (Some(run), Some(grant)) if run.cancelled_at.is_none() => {
                outcome.grant = Some(grant.clone());
                handles::grant(&mut st, exec_id, &run, grant);
                Some(run)
            }
            (run, grant) => {
                st.fetches.forget(exec_id);
                // Free, but not idle until its next isolate is prepared (Ready); a run
                // queued with no idle worker is handed to it now, to start when it can.
                if let Some(slot) = st.workers.get_mut(&key) {
                    slot.exec = None;
                    if grant.is_some() {
                        // Granted as the deadline passed: nobody gets the handles.
                        let close = HostMsg::CloseHandles { exec_id };
                        slot.input.send(close.encode_small());
                    }
                    st.preparing.push_back(key);
                    pump(inner, &mut st);
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
    Ok(())
}

/// Routes a run's fetch by its outbound mode: to the host's policy, or to the native fetch
/// threads (outbound.rs: bounded per run and per pool, in bytes in flight, and by what is left
/// of the run's time).
fn start_fetch(inner: &Arc<Inner>, exec_id: u64, call_id: u32, request: WireRequest) {
    let admitted = {
        let mut st = inner.lock();
        let found = match st.running.get(&exec_id) {
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
        };
        let Some((outbound, host, deadline)) = found else {
            return;
        };
        let admitted = st
            .fetches
            .admit(exec_id, call_id, request, outbound, deadline);
        (admitted, host)
    };
    match admitted {
        (Admitted::Route(request), host) => host.fetch(FetchCall {
            exec_id,
            call_id,
            request,
        }),
        (Admitted::Perform(task), _) => inner.performers.submit(task),
        (Admitted::Wait, _) => {}
        (Admitted::Refuse(text), _) => answer_fetch(inner, exec_id, call_id, Err(text)),
    }
}

/// Writes a fetch answer to the worker running `exec_id` (or retaining it), if it still does.
/// Every answer passes here, native or routed, in process or through the daemon: the answer is
/// checked (outbound::Flights::answered), and the run's next waiting native fetch starts.
pub(crate) fn answer_fetch(
    inner: &Inner,
    exec_id: u64,
    call_id: u32,
    result: Result<WireResponse, String>,
) {
    let (result, next) = inner.lock().fetches.answered(exec_id, call_id, result);
    if let Some(task) = next {
        inner.performers.submit(task);
    }
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
    let mut st = inner.lock();
    let worker = match st.running.get(&exec_id) {
        Some(run) => Some(run.worker),
        None => st
            .retained_ids
            .get(&exec_id)
            .and_then(|id| st.retained.get(id))
            .map(|r| r.worker),
    };
    if let Some(w) = worker.and_then(|w| st.workers.get_mut(&w)) {
        answered(w, exec_id, call_id);
        w.input.send(frame);
    }
}

/// Call `call_id` of `exec_id` is answered: no longer in flight on `slot`'s worker.
fn answered(slot: &mut WorkerSlot, exec_id: u64, call_id: u32) {
    if let Some(b) = slot.bound.as_mut().filter(|b| b.exec_id == exec_id) {
        b.answered(call_id);
    }
}

/// Writes `frame`, the answer to call `call_id`, to the worker running `exec_id`. A run that already ended gets nothing (no one
/// waits for the answer); a write error means the worker died, and its reader reports it.
pub(crate) fn send_to_run(inner: &Inner, exec_id: u64, call_id: u32, frame: Vec<u8>) {
    let mut st = inner.lock();
    let Some(worker) = st.running.get(&exec_id).map(|r| r.worker) else {
        return;
    };
    if let Some(w) = st.workers.get_mut(&worker) {
        answered(w, exec_id, call_id);
        w.input.send(frame);
    }
}

fn mark_idle(inner: &Inner, key: u64) {
    let mut st = inner.lock();
    st.preparing.retain(|k| *k != key);
    // Not free when it was handed a run while preparing: that run is already in its stdin.
    let free = st.workers.get(&key).is_some_and(|slot| slot.exec.is_none());
    if free && !st.idle.contains(&key) {
        st.idle.push_back(key);
    }
    pump(inner, &mut st);
}

fn worker_lost(inner: &Inner, key: u64, why: Option<String>, status: Option<ExitStatus>) {
    let detail = why.unwrap_or_else(|| describe_exit(status));
    let failure = FailureCode::WorkerLost.failure(&[("detail", &detail)]);
    settle_lost(inner, key, &detail, failure, status);
}

/// The worker broke a rule (conduct.rs) and was killed: the operator reads which, the run it
/// held fails with `WORKER_VIOLATION`, and a replacement starts. No other run notices.
fn violated(inner: &Inner, key: u64, pid: u32, v: Violation, status: Option<ExitStatus>) {
    let held = inner.lock().workers.get(&key).and_then(|s| s.exec);
    let run = held.map_or_else(
        || "no execution".to_string(),
        |id| format!("execution {id}"),
    );
    eprintln!(
        "codemode-executor: worker {pid} broke the host's rules and was killed: {v}. It held {run}, which fails with WORKER_VIOLATION; a replacement is starting. A healthy worker never does this: suspect a program that took control of its worker (an engine exploit), or a worker binary from another build."
    );
    let failure = FailureCode::WorkerViolation.failure(&[("detail", &v.0)]);
    settle_lost(inner, key, &v.0, failure, status);
}

/// Removes a dead worker, settles what it held with `failure`, and asks for a replacement.
fn settle_lost(
    inner: &Inner,
    key: u64,
    detail: &str,
    failure: Failure,
    status: Option<ExitStatus>,
) {
    let violated = failure.code == FailureCode::WorkerViolation;
    let mut settles = Vec::new();
    let (lost, replace) = {
        let mut st = inner.lock();
        let slot = st.workers.remove(&key);
        st.idle.retain(|k| *k != key);
        st.preparing.retain(|k| *k != key);
        let held = slot.and_then(|s| s.exec);
        if let Some(exec_id) = held {
            handles::worker_lost(inner, &mut st, exec_id, &failure, &mut settles);
        }
        let mut lost = held.and_then(|id| st.running.remove(&id).map(|r| (id, r)));
        if let Some(exec_id) = held {
            st.fetches.forget(exec_id);
        }
        // A run the worker never acknowledged had no effect outside it: it goes back to the
        // front of the queue, for the replacement (or another idle worker), a bounded number
        // of times. One past its deadline was cancelled: it times out below. One whose worker
        // broke a rule fails: what the worker did with it is unknown.
        if let Some((exec_id, run)) = lost.take_if(|(_, r)| {
            r.unstarted.is_some()
                && !violated
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
                    tools: run.tools,
                    memory_limit_mib: run.memory_limit_mib,
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
    if replace {
        // Counted before the run is settled, so whoever sees its outcome sees the restart.
        inner.observe.restarted(status, unresponsive);
    }
    if let Some((exec_id, run)) = lost {
        let result = if violated {
            Err(failure)
        } else if run.cancelled_at.is_some() {
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
        st.preparing.retain(|k| *k != key);
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
    // fastest stop that cannot be ignored; each reader thread then reaps its own child, and
    // `watched::end_all` the loop-read ones. A worker reaped meanwhile is not signalled (see
    // `Process`).
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

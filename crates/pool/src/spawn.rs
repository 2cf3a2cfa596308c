//! Starting worker processes: the command a worker runs under (its environment, its
//! memory ceiling, its identity, its control pipe), and the spawner thread that starts
//! replacements. A started worker's output goes to a reader (reader.rs, or the host's loop:
//! readiness.rs); its stdin to its writer (input.rs).

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use codemode_protocol::{Failure, FailureCode, CONTROL_FD};

use crate::lifecycle::fail_queue_if_no_workers;
use crate::process::Process;
use crate::reader::start_reader;
use crate::state::{Inner, WorkerSlot};

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

/// How many times a spawn refused with `ETXTBSY` is tried again, each after twice the last wait
/// (5 ms first: about 0.6 s over all).
const BUSY_RETRIES: u32 = 7;

/// `command.spawn()`, tried again while the kernel refuses the exec with `ETXTBSY`: the binary
/// is open for writing somewhere, typically the host's own copy or install of it not yet closed,
/// or a child another thread of the host forked in that instant and holding the writer's
/// descriptor until its own exec. The window closes by itself; any other error is final.
fn spawn_when_not_busy(command: &mut Command) -> std::io::Result<std::process::Child> {
    let mut wait = std::time::Duration::from_millis(5);
    for _ in 0..BUSY_RETRIES {
        match command.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(wait);
                wait *= 2;
            }
            done => return done,
        }
    }
    command.spawn()
}

pub(crate) fn spawn_worker(inner: &Arc<Inner>) -> Result<(), Failure> {
    let start_failed =
        |detail: String| FailureCode::WorkerStartFailed.failure(&[("detail", &detail)]);
    let (control_read, control) =
        control_pipe().map_err(|e| start_failed(format!("no control pipe: {e}")))?;
    let control_raw = control_read.as_raw_fd();
    let ceiling = libc::rlimit {
        rlim_cur: crate::process::memory_ceiling(inner.opts.memory_limit_mib)
            .min(crate::process::memory_hard_limit()),
        rlim_max: crate::process::memory_hard_limit(),
    };
    let stack = crate::process::stack_ceiling();
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
            // The memory ceiling for the pool's default memory limit; each run's Execute sets
            // the one for its own limit (see `pump`).
            if libc::setrlimit(libc::RLIMIT_DATA, &ceiling) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The main thread's stack, which RLIMIT_DATA does not count either.
            if libc::setrlimit(libc::RLIMIT_STACK, &stack) != 0 {
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
    let spawned = spawn_when_not_busy(&mut command);
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
            cordon: None,
            retiring: false,
            free_since: std::time::Instant::now(),
        },
    );
    if let Some(watch) = &inner.watch {
        match crate::readiness::watch(inner, watch.as_ref(), key, child, process.clone(), stdout) {
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
                let spawned = spawn_worker(&inner);
                {
                    let mut st = inner.lock();
                    st.respawning = st.respawning.saturating_sub(1);
                    if spawned.is_err() {
                        st.spawn_failed = Some(std::time::Instant::now());
                    }
                }
                if let Err(e) = spawned {
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

//! The worker's two pipes and its tie to the parent process.

use std::fs::File;
use std::io::{BufReader, Write};
use std::os::fd::FromRawFd;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use codemode_protocol::{frame::read_frame, HostMsg, WorkerMsg, CONTROL_FD};

/// The run in progress, so the reader thread can terminate it the moment a Cancel arrives,
/// even while the main thread is inside a synchronous loop. A Cancel for the run being started
/// (`expect`ed, its isolate not yet set) is kept, and terminates it as soon as it is set: the
/// host may hand a run over while the worker still prepares its isolate.
#[derive(Clone, Default)]
pub struct CurrentRun(Arc<Mutex<Current>>);

#[derive(Default)]
struct Current {
    exec_id: Option<u64>,
    handle: Option<v8::IsolateHandle>,
    cancelled: bool,
}

impl CurrentRun {
    /// Run `exec_id` is about to start (called before `Started` is sent).
    pub fn expect(&self, exec_id: u64) {
        if let Ok(mut g) = self.0.lock() {
            *g = Current {
                exec_id: Some(exec_id),
                handle: None,
                cancelled: false,
            };
        }
    }

    pub fn set(&self, run: Option<(u64, v8::IsolateHandle)>) {
        if let Ok(mut g) = self.0.lock() {
            *g = match run {
                Some((exec_id, handle)) => {
                    let cancelled = g.exec_id == Some(exec_id) && g.cancelled;
                    if cancelled {
                        handle.terminate_execution();
                    }
                    Current {
                        exec_id: Some(exec_id),
                        handle: Some(handle),
                        cancelled,
                    }
                }
                None => Current::default(),
            };
        }
    }

    fn cancel(&self, exec_id: u64) {
        if let Ok(mut g) = self.0.lock() {
            if g.exec_id == Some(exec_id) {
                g.cancelled = true;
                if let Some(handle) = &g.handle {
                    handle.terminate_execution();
                }
            }
        }
    }
}

/// Ask the kernel to kill this process when the parent dies, so a crashed or killed host never
/// leaves orphaned workers; stdin EOF covers the orderly case.
pub fn die_with_parent() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    // The parent may have died before the prctl took effect: then we were reparented.
    if std::os::unix::process::parent_id() == 1 {
        std::process::exit(0);
    }
}

/// Frames from the host, read on the main thread: it blocks here only while a run waits for a
/// tool answer (or between runs), so an answer reaches the isolate with a single wake-up.
pub struct Input {
    reader: BufReader<std::io::StdinLock<'static>>,
    buf: Vec<u8>,
}

impl Input {
    pub fn new() -> Self {
        Input {
            reader: BufReader::with_capacity(64 * 1024, std::io::stdin().lock()),
            buf: Vec::with_capacity(4096),
        }
    }

    /// The next message, waiting at most `wait` (forever when `None`) for one to start.
    pub fn next_within(&mut self, wait: Option<Duration>) -> Next {
        if let Some(wait) = wait {
            if self.reader.buffer().is_empty() {
                let mut fd = libc::pollfd {
                    fd: 0,
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ms = wait.as_millis().min(i32::MAX as u128) as i32;
                // Round up, so a timer is never woken a little early and re-polled at 0 ms.
                let ms = if Duration::from_millis(ms as u64) < wait {
                    ms + 1
                } else {
                    ms
                };
                // SAFETY: poll reads and writes the one pollfd we own.
                let ready = unsafe { libc::poll(&mut fd, 1, ms) };
                if ready == 0 {
                    return Next::Timeout;
                }
                if ready < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    return Next::Timeout;
                }
            }
        }
        match self.next() {
            Some(m) => Next::Msg(m),
            None => Next::Closed,
        }
    }

    /// The next message; `None` once the host closed the pipe or sent something unreadable.
    pub fn next(&mut self) -> Option<HostMsg> {
        match read_frame(&mut self.reader, &mut self.buf) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => {
                eprintln!("codemode-worker: reading a frame failed: {e}");
                return None;
            }
        }
        match HostMsg::decode(&self.buf) {
            Ok(msg) => Some(msg),
            Err(e) => {
                eprintln!("codemode-worker: {e}");
                None
            }
        }
    }
}

/// What waiting for input produced.
pub enum Next {
    Msg(HostMsg),
    Timeout,
    Closed,
}

/// The control pipe the pool passes as fd 3 carries Cancel frames. A thread of its own reads it,
/// so a run is terminated even while the main thread is inside a synchronous loop. (The same
/// Cancel also arrives on stdin, to wake a main thread blocked waiting for tool answers.)
pub fn spawn_canceller(current: CurrentRun) {
    // SAFETY: fcntl(F_GETFD) only inspects the descriptor table.
    if unsafe { libc::fcntl(CONTROL_FD, libc::F_GETFD) } < 0 {
        eprintln!("codemode-worker: no control pipe on fd {CONTROL_FD}: runs cannot be cancelled");
        return;
    }
    // SAFETY: fd 3 is the control pipe the pool set up for this process and nothing else in
    // the worker opens or owns it, so this File is its only owner.
    let control = unsafe { File::from_raw_fd(CONTROL_FD) };
    let spawned = std::thread::Builder::new()
        .name("cancel".into())
        .spawn(move || {
            let mut input = BufReader::new(control);
            let mut buf = Vec::with_capacity(64);
            while let Ok(true) = read_frame(&mut input, &mut buf) {
                if let Ok(HostMsg::Cancel { exec_id }) = HostMsg::decode(&buf) {
                    current.cancel(exec_id);
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("codemode-worker: cannot start the cancel thread: {e}");
        std::process::exit(70);
    }
}

fn stdout() -> &'static Mutex<File> {
    static OUT: OnceLock<Mutex<File>> = OnceLock::new();
    // SAFETY: fd 1 is open for the whole life of the process and only this File writes to it
    // (the worker never uses print!), so owning it here cannot close or alias another file.
    OUT.get_or_init(|| Mutex::new(unsafe { File::from_raw_fd(1) }))
}

/// Writes one frame. A host that stopped reading is gone: the worker exits. Every message is
/// bounded well below the frame bound where it is built (results, logs, tool arguments, fetch
/// bodies); one that still passes it would be refused by the host, so the worker exits rather
/// than write it.
pub fn send(msg: &WorkerMsg) {
    let frame = match msg.encode() {
        Ok(frame) => frame,
        Err(e) => {
            eprintln!("codemode-worker: refusing to send a message: {e}");
            std::process::exit(70);
        }
    };
    let ok = match stdout().lock() {
        Ok(mut out) => out.write_all(&frame).is_ok(),
        Err(_) => false,
    };
    if !ok {
        std::process::exit(0);
    }
}

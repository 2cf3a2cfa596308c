//! A worker's stdin: frames are written in order, and no sender ever blocks on a full pipe.
//!
//! The common case costs no thread hop: a sender whose frame finds nothing queued writes it
//! straight into the (non-blocking) pipe on its own thread. Only what the pipe does not take at
//! once — a worker busy in a synchronous loop while a 16 MiB tool answer arrives — is queued for
//! the worker's writer thread, which waits for the pipe to drain (`poll`) outside the lock, so
//! the JS thread, the watchdog and dispatch under the state lock never wait on a worker.

use std::collections::VecDeque;
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::process::ChildStdin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// An encoded frame. Shared, so a run's Execute frame can be kept for sending again (to a
/// replacement, when its worker was lost before acknowledging it) without a copy.
pub(crate) type Frame = Arc<Vec<u8>>;

/// The sending side, held by the worker's slot. Dropping every clone ends the writer thread,
/// which closes stdin (a worker exits when its stdin closes).
#[derive(Clone)]
pub(crate) struct WorkerInput {
    shared: Arc<Shared>,
    /// Wakes the writer thread when a backlog starts; closing it ends the thread.
    wake: crossbeam_channel::Sender<()>,
    /// The pool's count of bytes sent to workers (its metrics).
    sent: Arc<AtomicU64>,
}

struct Shared {
    state: Mutex<Pending>,
}

struct Pending {
    pipe: ChildStdin,
    /// Frames not yet fully written, oldest first; `written` bytes of the front one are out.
    backlog: VecDeque<Frame>,
    written: usize,
    /// The pipe broke: the worker is gone, and its reader reports that.
    broken: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Pending {
    /// Writes as much of the backlog as the pipe takes now. Returns true when it is empty.
    fn flush(&mut self) -> bool {
        while let Some(front) = self.backlog.front() {
            match self.pipe.write(&front[self.written..]) {
                Ok(0) => {
                    self.broken = true;
                    return true;
                }
                Ok(n) => {
                    self.written += n;
                    if self.written == front.len() {
                        self.backlog.pop_front();
                        self.written = 0;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(_) => {
                    self.broken = true;
                    self.backlog.clear();
                    return true;
                }
            }
        }
        true
    }
}

/// Makes the pipe non-blocking and starts its writer thread.
pub(crate) fn start(
    pipe: ChildStdin,
    name: String,
    sent: Arc<AtomicU64>,
) -> std::io::Result<WorkerInput> {
    let fd = pipe.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own (the parent's end of the worker's stdin); O_NONBLOCK
    // affects only this end's open file description, not the worker's read end.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let shared = Arc::new(Shared {
        state: Mutex::new(Pending {
            pipe,
            backlog: VecDeque::new(),
            written: 0,
            broken: false,
        }),
    });
    let (wake, woken) = crossbeam_channel::unbounded::<()>();
    let writer = shared.clone();
    std::thread::Builder::new()
        .name(name)
        .spawn(move || drain(writer, fd, woken))?;
    Ok(WorkerInput { shared, wake, sent })
}

impl WorkerInput {
    /// Queues `frame` behind everything sent before it; writes it now when nothing waits.
    pub(crate) fn send(&self, frame: impl Into<Frame>) {
        let frame = frame.into();
        self.sent.fetch_add(frame.len() as u64, Ordering::Relaxed);
        let mut st = self.shared.lock();
        if st.broken {
            return;
        }
        let idle = st.backlog.is_empty();
        st.backlog.push_back(frame);
        if idle && !st.flush() {
            // The pipe is full: the writer thread takes over until the backlog is gone.
            let _ = self.wake.send(());
        }
    }
}

/// The writer thread: on each wake-up, writes the backlog as the pipe drains.
fn drain(shared: Arc<Shared>, fd: i32, woken: crossbeam_channel::Receiver<()>) {
    for () in woken {
        loop {
            if shared.lock().flush() {
                break;
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: poll reads and writes the one pollfd we own; `fd` stays open while
            // `shared` (which owns the pipe) is alive, and this thread holds it.
            let ready = unsafe { libc::poll(&mut pfd, 1, 1000) };
            if ready < 0 && std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
                shared.lock().broken = true;
                break;
            }
        }
    }
}

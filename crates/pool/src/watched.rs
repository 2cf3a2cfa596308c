//! Workers whose output the host's own event loop watches (the addon: Node's loop) instead of a
//! reader thread each. A frame then wakes one thread, the one that acts on it, instead of two
//! (a reader thread, which hands it to the host's thread): a tool call's round trip loses a
//! wake-up. The daemon, whose loop is not the pool's business, keeps reader threads.
//!
//! The host's loop calls [`Pool::readable`](crate::Pool::readable) on its own thread whenever a
//! watched descriptor is readable; frames are handled there exactly as a reader thread handles
//! them (`supervisor::on_frame`). A worker's end (reaping it, settling what it held) runs on a
//! short thread of its own, so the host's thread never waits for a process to exit.

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::process::{Child, ChildStdout};
use std::sync::{Arc, Mutex, MutexGuard};

use codemode_protocol::frame::{frame_len, truncated};

use crate::conduct::WORKER_FRAME_BYTES;
use crate::process::Process;
use crate::supervisor::{end_worker, on_frame, start_reader, unreadable, End};
use crate::Inner;

/// The host's event loop, as the pool asks it to watch a worker's output.
pub trait Watch: Send + Sync + 'static {
    /// Watch `fd` (worker `key`'s output) and call `Pool::readable(key)` on the loop's thread
    /// whenever it is readable, until that returns [`Readable::Ended`]. Called on any thread.
    /// `false`: the loop cannot (it is gone); the pool then reads that worker on a thread.
    fn watch(&self, key: u64, fd: RawFd) -> bool;
}

/// What [`Pool::readable`](crate::Pool::readable) found.
pub enum Readable {
    /// Keep watching.
    Open,
    /// The worker ended: stop watching its descriptor, then drop this (which closes it). `None`:
    /// the pool did not know the key (nothing to close).
    Ended(Option<ChildStdout>),
}

/// Bytes read per `read` call, and at most this many times per `readable`, so one worker
/// streaming a large result cannot hold the host's loop for long.
const CHUNK: usize = 64 * 1024;
const CHUNKS_PER_WAKE: usize = 16;

pub(crate) struct Watched {
    /// `None` once the worker was reaped (by `shutdown`): what it still says is not read.
    child: Option<Child>,
    process: Arc<Process>,
    stdout: ChildStdout,
    /// What each `read` fills: allocated (and zeroed) once per worker, not once per wake.
    chunk: Box<[u8]>,
    /// Bytes read and not yet handled, from `start` on.
    pending: Vec<u8>,
    start: usize,
    greeted: bool,
}

#[derive(Default)]
pub(crate) struct Table(Mutex<HashMap<u64, Watched>>);

impl Table {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Watched>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn set_nonblocking(fd: RawFd, on: bool) -> bool {
    // SAFETY: fcntl on a descriptor we own (the worker's stdout pipe), reading then setting its
    // status flags; no memory is passed.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return false;
        }
        let flags = if on {
            flags | libc::O_NONBLOCK
        } else {
            flags & !libc::O_NONBLOCK
        };
        libc::fcntl(fd, libc::F_SETFL, flags) == 0
    }
}

/// Hands worker `key`'s output to the host's loop. `Err` gives the child and its output back
/// when the loop cannot take it.
pub(crate) fn watch(
    inner: &Arc<Inner>,
    watch: &dyn Watch,
    key: u64,
    child: Child,
    process: Arc<Process>,
    stdout: ChildStdout,
) -> Result<(), (Child, ChildStdout)> {
    let fd = stdout.as_raw_fd();
    if !set_nonblocking(fd, true) {
        return Err((child, stdout));
    }
    inner.watched.lock().insert(
        key,
        Watched {
            child: Some(child),
            process,
            stdout,
            chunk: vec![0; CHUNK].into_boxed_slice(),
            pending: Vec::new(),
            start: 0,
            greeted: false,
        },
    );
    if watch.watch(key, fd) {
        return Ok(());
    }
    match inner.watched.lock().remove(&key) {
        Some(Watched {
            child: Some(child),
            stdout,
            ..
        }) => {
            set_nonblocking(stdout.as_raw_fd(), false);
            Err((child, stdout))
        }
        // Unreachable: only the loop that refused it or shutdown would have touched it.
        _ => Ok(()),
    }
}

/// Reads what worker `key` wrote and handles every whole frame (see the module's comment).
pub(crate) fn readable(inner: &Arc<Inner>, key: u64) -> Readable {
    // Out of the table while it is read: frames are handled without the table's lock held.
    let Some(mut w) = inner.watched.lock().remove(&key) else {
        return Readable::Ended(None);
    };
    if w.child.is_none() {
        return Readable::Ended(Some(w.stdout));
    }
    let mut end: Option<Ending> = None;
    for _ in 0..CHUNKS_PER_WAKE {
        match w.stdout.read(&mut w.chunk) {
            Ok(0) => {
                end = Some(match partial(&w) {
                    Some((got, len)) => Ending::Unreadable(truncated(got, len)),
                    None => Ending::Now(End::Eof),
                });
                break;
            }
            Ok(n) => {
                w.pending.extend_from_slice(&w.chunk[..n]);
                if let Err(e) = handle_frames(inner, key, &mut w) {
                    end = Some(e);
                    break;
                }
                if n < CHUNK {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                end = Some(Ending::Unreadable(e));
                break;
            }
        }
    }
    let Some(ending) = end else {
        inner.watched.lock().insert(key, w);
        return Readable::Open;
    };
    if let Some(child) = w.child.take() {
        // Handed over through a slot, so a thread that cannot be started gives it back.
        let slot = Arc::new(Mutex::new(Some((child, ending))));
        let (inner2, slot2, process, greeted) =
            (inner.clone(), slot.clone(), w.process.clone(), w.greeted);
        let ending_thread = std::thread::Builder::new()
            .name(format!("worker-{key}-end"))
            .spawn(move || {
                let taken = slot2.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some((child, ending)) = taken {
                    finish(&inner2, key, child, &process, greeted, ending);
                }
            });
        if ending_thread.is_err() {
            // No thread to spare: end it here (a killed worker exits in milliseconds).
            let taken = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some((child, ending)) = taken {
                finish(inner, key, child, &w.process, w.greeted, ending);
            }
        }
    }
    Readable::Ended(Some(w.stdout))
}

/// Why a watched worker's output ended: decided, or a read error still to be judged (a frame
/// cut short is a crash or a violation depending on how the worker exits, which
/// `supervisor::unreadable` waits a moment to see, off the loop's thread).
enum Ending {
    Now(End),
    Unreadable(std::io::Error),
}

fn finish(
    inner: &Inner,
    key: u64,
    mut child: Child,
    process: &Process,
    greeted: bool,
    ending: Ending,
) {
    let end = match ending {
        Ending::Now(end) => end,
        Ending::Unreadable(e) => unreadable(e, &mut child),
    };
    end_worker(inner, key, child, process, greeted, end);
}

/// The bytes of a frame begun and not finished (`(got, announced)`), if any.
fn partial(w: &Watched) -> Option<(usize, usize)> {
    let rest = &w.pending[w.start..];
    if rest.is_empty() {
        return None;
    }
    let announced = rest
        .first_chunk::<4>()
        .map_or(4, |p| 4 + u32::from_le_bytes(*p) as usize);
    Some((rest.len().saturating_sub(4), announced.saturating_sub(4)))
}

/// Handles every whole frame in `w.pending`, keeping a partial one for the next read.
fn handle_frames(inner: &Arc<Inner>, key: u64, w: &mut Watched) -> Result<(), Ending> {
    loop {
        let rest = &w.pending[w.start..];
        let Some(prefix) = rest.first_chunk::<4>() else {
            break;
        };
        let len = frame_len(*prefix, WORKER_FRAME_BYTES).map_err(Ending::Unreadable)?;
        if rest.len() < 4 + len {
            // Grows with the bytes that arrive, as the reader thread's buffer does: a prefix
            // that promises more than the worker sends costs nothing.
            break;
        }
        let body = w.start + 4..w.start + 4 + len;
        w.start = body.end;
        on_frame(inner, key, &mut w.greeted, &w.pending[body]).map_err(Ending::Now)?;
    }
    if w.start == w.pending.len() {
        w.pending.clear();
        w.start = 0;
    } else if w.start > 0 {
        w.pending.drain(..w.start);
        w.start = 0;
    }
    Ok(())
}

/// `shutdown`: reaps every watched worker now (its loop may be the thread waiting in
/// `shutdown`) and settles what each held. Their descriptors stay open until the loop stops
/// watching them.
pub(crate) fn end_all(inner: &Arc<Inner>) {
    let ending: Vec<(u64, Child, Arc<Process>, bool)> = inner
        .watched
        .lock()
        .iter_mut()
        .filter_map(|(key, w)| {
            w.child
                .take()
                .map(|c| (*key, c, w.process.clone(), w.greeted))
        })
        .collect();
    for (key, child, process, greeted) in ending {
        end_worker(inner, key, child, &process, greeted, End::Eof);
    }
}

/// The host's loop cannot watch worker `key` after all: a reader thread reads it instead (or,
/// with no thread to spare, it ends and is replaced).
pub(crate) fn unwatch(inner: &Arc<Inner>, key: u64) {
    let Some(w) = inner.watched.lock().remove(&key) else {
        return;
    };
    let Some(child) = w.child else {
        return;
    };
    set_nonblocking(w.stdout.as_raw_fd(), false);
    if let Err(e) = start_reader(inner, key, child, w.process, w.stdout) {
        eprintln!("codemode-executor: worker {key} cannot be read ({e}); it is replaced");
    }
}

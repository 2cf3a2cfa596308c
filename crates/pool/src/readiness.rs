//! Workers whose output the host's own event loop watches (the addon: Node's loop; the daemon:
//! its tokio loop) instead of a reader thread each. A frame then wakes one thread, the one that
//! acts on it, instead of two (a reader thread, which hands it to the host's thread): a tool
//! call's round trip loses a wake-up.
//!
//! The host's loop calls [`Pool::readable`](crate::Pool::readable) on its own thread whenever a
//! watched descriptor is readable; the pipe is read and its frames handled there exactly as a
//! reader thread does (reader.rs: `Output::read`, the same codec and dispatcher), only without
//! blocking. A worker's end (reaping it, settling what it held) runs on a
//! short thread of its own, so the host's thread never waits for a process to exit.

use std::os::fd::{AsRawFd, RawFd};
use std::process::{Child, ChildStdout};
use std::sync::{Arc, Mutex};

use crate::api::{Readable, Watch};
use crate::lifecycle::{end_worker, End};
use crate::process::Process;
use crate::reader::{finish, start_reader, Ending, Progress, READ_BYTES};
use crate::state::{Inner, Output, Watched};

/// Reads (of up to `READ_BYTES` each) per `readable`, so one worker streaming a large result
/// cannot hold the host's loop for long.
const READS_PER_WAKE: usize = 16;

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
            output: Output::new(),
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

/// Whether `fd`, a watched worker's output, has bytes to read now (a poll that does not wait):
/// a loop whose readiness is edge-triggered clears it only when this says no, since
/// [`Pool::readable`](crate::Pool::readable) reads a bounded amount per call.
pub fn readable_now(fd: RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd we own; a timeout of 0 never blocks. The
    // caller's descriptor is open (the pool keeps it until `readable` hands it back).
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
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
    for _ in 0..READS_PER_WAKE {
        match w.output.read(inner, key, &mut w.stdout) {
            Ok(Progress::Read(n)) if n >= READ_BYTES => {}
            Ok(_) => break,
            Err(ending) => {
                end = Some(ending);
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
        let (inner2, slot2, process, greeted) = (
            inner.clone(),
            slot.clone(),
            w.process.clone(),
            w.output.greeted,
        );
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
                finish(inner, key, child, &w.process, w.output.greeted, ending);
            }
        }
    }
    Readable::Ended(Some(w.stdout))
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
                .map(|c| (*key, c, w.process.clone(), w.output.greeted))
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

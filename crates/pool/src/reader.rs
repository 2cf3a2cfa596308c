//! Reading a worker's output as frames, for both readers: a thread of its own that blocks on
//! the pipe ([`start_reader`]), and the host's event loop, which reads a non-blocking pipe when
//! it is readable (readiness.rs). Both fill the frame codec's buffer (`protocol::frame`) with
//! [`Output::read`] and hand every whole frame to the dispatcher, so one worker reads the same
//! whichever reads it.

use std::io::Read;
use std::process::{Child, ChildStdout};
use std::sync::Arc;

use codemode_protocol::frame::FrameBuf;

use crate::conduct::WORKER_FRAME_BYTES;
use crate::dispatch::on_frame;
use crate::lifecycle::{end_worker, unreadable, End};
use crate::process::Process;
use crate::state::{Inner, Output};

/// Room for each read: what one `read` call may take from the pipe.
pub(crate) const READ_BYTES: usize = 64 * 1024;

/// What one read found.
pub(crate) enum Progress {
    /// This many bytes were read, and every whole frame among them handled.
    Read(usize),
    /// Nothing to read now (a non-blocking pipe).
    WouldBlock,
}

/// Why a worker's output ended: decided, or a read error still to be judged (a frame cut short
/// is a crash or a violation depending on how the worker exits, which
/// [`unreadable`] waits a moment to see).
pub(crate) enum Ending {
    Now(End),
    Unreadable(std::io::Error),
}

impl Output {
    pub(crate) fn new() -> Output {
        Output {
            frames: FrameBuf::new(WORKER_FRAME_BYTES),
            greeted: false,
        }
    }

    /// Reads once from `from` and handles every whole frame it completes; `Err` when the
    /// output ended (cleanly between frames, cut short, unreadable) or the worker must go.
    pub(crate) fn read(
        &mut self,
        inner: &Arc<Inner>,
        key: u64,
        from: &mut impl Read,
    ) -> Result<Progress, Ending> {
        let n = loop {
            match self.frames.read_from(from, READ_BYTES) {
                Ok(0) => {
                    return Err(match self.frames.end() {
                        Ok(()) => Ending::Now(End::Eof),
                        Err(e) => Ending::Unreadable(e),
                    })
                }
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    return Ok(Progress::WouldBlock)
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Ending::Unreadable(e)),
            }
        };
        loop {
            match self.frames.next_frame() {
                Ok(Some(body)) => {
                    on_frame(inner, key, &mut self.greeted, body).map_err(Ending::Now)?
                }
                Ok(None) => return Ok(Progress::Read(n)),
                Err(e) => return Err(Ending::Unreadable(e)),
            }
        }
    }
}

/// The worker's output ended (`ending`): judges how, reaps it and settles what it held.
pub(crate) fn finish(
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

/// The reader thread: blocks on the pipe until the worker's output ends.
fn read_worker(
    inner: Arc<Inner>,
    key: u64,
    child: Child,
    process: Arc<Process>,
    mut stdout: ChildStdout,
) {
    let mut output = Output::new();
    let ending = loop {
        if let Err(ending) = output.read(&inner, key, &mut stdout) {
            break ending;
        }
    };
    finish(&inner, key, child, &process, output.greeted, ending);
}

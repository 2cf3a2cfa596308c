//! The worker's two pipes and its tie to the parent process.

use std::fs::File;
use std::io::{BufReader, Write};
use std::os::fd::FromRawFd;
use std::sync::{Arc, Mutex, OnceLock};

use codemode_protocol::{frame::read_frame, HostMsg, WorkerMsg};
use crossbeam_channel::{Receiver, Sender};

/// The run in progress, so the reader thread can terminate it the moment a Cancel arrives,
/// even while the main thread is inside a synchronous loop.
#[derive(Clone, Default)]
pub struct CurrentRun(Arc<Mutex<Option<(u64, v8::IsolateHandle)>>>);

impl CurrentRun {
    pub fn set(&self, run: Option<(u64, v8::IsolateHandle)>) {
        if let Ok(mut g) = self.0.lock() {
            *g = run;
        }
    }
    fn cancel(&self, exec_id: u64) {
        if let Ok(g) = self.0.lock() {
            if let Some((id, handle)) = g.as_ref() {
                if *id == exec_id {
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

/// Reads frames from stdin on its own thread. A Cancel terminates the current run here, then
/// is forwarded so a main thread blocked waiting for tool results wakes up too.
pub fn spawn_reader(current: CurrentRun) -> Receiver<HostMsg> {
    let (tx, rx): (Sender<HostMsg>, Receiver<HostMsg>) = crossbeam_channel::unbounded();
    std::thread::Builder::new()
        .name("frames-in".into())
        .spawn(move || {
            let mut input = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
            let mut buf = Vec::with_capacity(4096);
            loop {
                match read_frame(&mut input, &mut buf) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        eprintln!("codemode-worker: reading a frame failed: {e}");
                        break;
                    }
                }
                match HostMsg::decode(&buf) {
                    Ok(msg) => {
                        if let HostMsg::Cancel { exec_id } = msg {
                            current.cancel(exec_id);
                        }
                        if tx.send(msg).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        eprintln!("codemode-worker: {e}");
                        break;
                    }
                }
            }
            // Dropping `tx` ends the main loop; a run blocked on tool results sees it too.
        })
        .unwrap_or_else(|e| {
            eprintln!("codemode-worker: cannot start the reader thread: {e}");
            std::process::exit(70);
        });
    rx
}

fn stdout() -> &'static Mutex<File> {
    static OUT: OnceLock<Mutex<File>> = OnceLock::new();
    // SAFETY: fd 1 is open for the whole life of the process and only this File writes to it
    // (the worker never uses print!), so owning it here cannot close or alias another file.
    OUT.get_or_init(|| Mutex::new(unsafe { File::from_raw_fd(1) }))
}

/// Writes one frame. A host that stopped reading is gone: the worker exits.
pub fn send(msg: &WorkerMsg) {
    let frame = msg.encode();
    let ok = match stdout().lock() {
        Ok(mut out) => out.write_all(&frame).is_ok(),
        Err(_) => false,
    };
    if !ok {
        std::process::exit(0);
    }
}

//! A worker's stderr reaches the host's stderr only through the pool, bounded and marked: each
//! line prefixed with the worker's pid, escaped, cut, and at most `WORKER_STDERR_BYTES` per
//! worker. One test in its own binary: it takes over this process's stderr (fd 2) to read what
//! the host writes there.

mod common;

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use codemode_pool::protocol::{limits, Failure, RunOutcome};
use codemode_pool::{ExecSpec, FetchCall, Host, ToolCall};

struct Silent;

impl Host for Silent {
    fn tool_call(&self, _: ToolCall) {}
    fn fetch(&self, _: FetchCall) {}
}

/// Runs `code` on a fake worker while fd 2 is a pipe; returns what reached it and the pid.
fn host_stderr_while(code: &str) -> (String, u32) {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two new descriptors into the array; dup saves our stderr.
    let saved = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::dup(2)
    };
    // SAFETY: the read end is ours alone.
    let mut read_end = unsafe { File::from_raw_fd(fds[0]) };
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = read_end.read_to_end(&mut all);
        all
    });
    // SAFETY: fd 2 becomes the pipe's write end; the original copy is closed.
    unsafe {
        assert!(libc::dup2(fds[1], 2) >= 0);
        libc::close(fds[1]);
    }

    let pool = common::ready_pool(PathBuf::from(env!("CARGO_BIN_EXE_codemode-fake-worker")), 1);
    let pid = pool.worker_pids()[0];
    let (tx, rx) = mpsc::channel::<Result<RunOutcome, Failure>>();
    pool.execute(
        ExecSpec {
            code: code.into(),
            ..Default::default()
        },
        Arc::new(Silent),
        Box::new(move |_, r| {
            let _ = tx.send(r);
        }),
    )
    .expect("accepted");
    let out = rx.recv_timeout(Duration::from_secs(20)).unwrap().unwrap();
    assert_eq!(out.result.as_deref(), Some(b"ok".as_slice()));
    pool.shutdown(Duration::from_secs(2));
    // Give the pool's drain the worker's last bytes, then take fd 2 back: the pipe's last
    // write end closes once the worker is gone.
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: restores our stderr over the pipe's write end.
    unsafe {
        libc::dup2(saved, 2);
        libc::close(saved);
    }
    let all = reader.join().unwrap();
    (String::from_utf8_lossy(&all).into_owned(), pid)
}

#[test]
fn a_worker_s_stderr_reaches_the_host_bounded_prefixed_and_escaped() {
    let forged = "codemode-executor: worker 1 broke the host's rules and was killed";
    let code = format!(
        "stderr V8 is fine\\n\\n{forged}\\r\\e[2K\\n; stderr-flood {}; return ok",
        1024 * 1024
    );
    let (out, pid) = host_stderr_while(&code);
    let prefix = format!("codemode-worker {pid}: ");
    assert!(
        out.len() < limits::WORKER_STDERR_BYTES + 16 * 1024,
        "{} bytes reached the host's stderr",
        out.len()
    );
    // Every line is the worker's, marked as such; nothing steers a terminal.
    for line in out.lines() {
        assert!(line.starts_with(&prefix), "an unmarked line: {line:?}");
        assert!(
            !line.contains(['\r', '\x1b']),
            "a raw control byte: {line:?}"
        );
    }
    assert!(
        out.contains(&format!("{prefix}V8 is fine\n")),
        "{}",
        &out[..200]
    );
    assert!(
        out.contains(&format!("{prefix}{forged}\\x0d\\x1b[2K\n")),
        "the forged line, marked and escaped"
    );
    assert!(out.contains("the rest is dropped"));
}

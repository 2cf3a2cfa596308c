//! A worker's diagnostics: its stderr is a pipe the pool drains into the host's stderr, in
//! bounded form. Workers are hostile (a program that took over one writes what it likes), so
//! the host's log never receives their bytes raw:
//!
//! - each line is prefixed with `codemode-worker <pid>: ` and written whole, so a worker cannot
//!   forge a line of the host's own (`codemode-executor: ...`) or of another worker;
//! - every byte outside printable ASCII is escaped (`\xNN`): no control characters, no terminal
//!   escape sequences, no carriage return rewriting the line before it;
//! - a line is cut past `WORKER_STDERR_LINE_BYTES`, and a worker's whole output past
//!   `WORKER_STDERR_BYTES` over its life; what follows is read and dropped, so a worker that
//!   floods stderr never blocks on it (nor fills the host's log).
//!
//! What a healthy worker writes there matters: V8's fatal errors (`# Fatal error in ...`), a
//! broken bootstrap, a jail it cannot enter. Those are a few short lines, well inside the bounds.

use std::io::{Read, Write};
use std::process::ChildStderr;

use codemode_protocol::limits::{WORKER_STDERR_BYTES, WORKER_STDERR_LINE_BYTES};

/// Writes one line of worker `pid`'s diagnostics to the host's stderr, the pool's log: the only
/// way a worker's bytes reach it. `line` is escaped here; the write is one call, so lines from
/// several workers never interleave.
pub(crate) fn log(pid: u32, line: &[u8]) {
    let mut out = format!("codemode-worker {pid}: ").into_bytes();
    escape(line, &mut out);
    out.push(b'\n');
    // Nothing to do if the host's stderr is gone.
    let _ = std::io::stderr().lock().write_all(&out);
}

/// Appends `bytes` to `out` with every byte outside printable ASCII as `\xNN` (and `\` as
/// `\\`, so an escape cannot be forged either).
fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b' '..=b'~' => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
}

/// Starts the thread that drains worker `pid`'s stderr until the worker closes it (it exits).
pub(crate) fn drain(pid: u32, stderr: ChildStderr) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("worker-{pid}-err"))
        .spawn(move || Lines::new(|line: &[u8]| log(pid, line)).read_all(stderr))
        .map(|_| ())
}

/// Cuts a worker's output into bounded lines, each handed to `emit`.
struct Lines<F: FnMut(&[u8])> {
    emit: F,
    line: Vec<u8>,
    /// Bytes of the current line past the line bound, dropped.
    cut: usize,
    /// Bytes logged so far (or counted against the budget).
    logged: usize,
    /// The budget is spent: everything else is dropped.
    spent: bool,
}

impl<F: FnMut(&[u8])> Lines<F> {
    fn new(emit: F) -> Lines<F> {
        Lines {
            emit,
            line: Vec::with_capacity(256),
            cut: 0,
            logged: 0,
            spent: false,
        }
    }

    fn read_all(mut self, mut from: impl Read) {
        let mut chunk = [0u8; 4096];
        loop {
            match from.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => self.feed(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        self.end_line();
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.spent {
            let (part, rest, ended) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            let room = WORKER_STDERR_LINE_BYTES - self.line.len();
            let kept = part.len().min(room);
            self.line.extend_from_slice(&part[..kept]);
            self.cut += part.len() - kept;
            if ended {
                self.end_line();
            }
            bytes = rest;
        }
    }

    /// Logs the line collected so far (if any), within the worker's budget.
    fn end_line(&mut self) {
        if self.line.is_empty() && self.cut == 0 {
            return;
        }
        if self.cut > 0 {
            let note = format!(" [{} more bytes cut]", self.cut);
            self.line.extend_from_slice(note.as_bytes());
        }
        self.logged += self.line.len();
        if self.logged > WORKER_STDERR_BYTES {
            self.spent = true;
            let note = format!(
                "[more than {WORKER_STDERR_BYTES} bytes of diagnostics: the rest is dropped]"
            );
            (self.emit)(note.as_bytes());
        } else {
            (self.emit)(&self.line);
        }
        self.line.clear();
        self.cut = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_printable_ascii_and_marks_everything_else() {
        let mut out = Vec::new();
        escape(b"ok \\x41 \r\x1b[2K\xff\t", &mut out);
        assert_eq!(out, b"ok \\\\x41 \\x0d\\x1b[2K\\xff\\x09");
    }

    #[test]
    fn a_line_past_the_bound_is_cut_and_the_budget_is_spent_once() {
        let mut seen: Vec<Vec<u8>> = Vec::new();
        let mut lines = Lines::new(|line: &[u8]| seen.push(line.to_vec()));
        lines.feed(&vec![b'a'; WORKER_STDERR_LINE_BYTES * 3]);
        lines.feed(b"one\ntwo");
        for _ in 0..WORKER_STDERR_BYTES {
            lines.feed(&[b'b'; 100]);
            lines.feed(b"\n");
        }
        lines.feed(&[b'c'; 100_000]);
        lines.end_line();
        drop(lines);
        let mut first = vec![b'a'; WORKER_STDERR_LINE_BYTES];
        first.extend_from_slice(
            format!(" [{} more bytes cut]", 2 * WORKER_STDERR_LINE_BYTES + 3).as_bytes(),
        );
        assert_eq!(seen[0], first);
        assert_eq!(seen[1], [b"two".as_slice(), &[b'b'; 100]].concat());
        let total: usize = seen.iter().map(Vec::len).sum();
        assert!(total < WORKER_STDERR_BYTES + 200, "{total}");
        let last = String::from_utf8(seen.last().unwrap().clone()).unwrap();
        assert!(last.contains("the rest is dropped"), "{last}");
        assert_eq!(
            seen.iter().filter(|l| l.starts_with(b"[more than")).count(),
            1
        );
    }
}

//! A worker's last words when memory runs out past what a run's bounds catch.
//!
//! A run's memory is bounded three ways (engine/memory.rs, and the pool's memory ceiling):
//! V8's heap limit with the near-limit callback, which terminates the run; the metered
//! ArrayBuffer allocator, which refuses a buffer; and `RLIMIT_DATA`, past which an allocation
//! of private memory fails. One allocation can still pass them all at once: a single array
//! larger than the heap's limit and the headroom the callback grants (V8 then reports a fatal
//! out-of-memory), or a buffer of V8's own outside its heap (JSON.parse's stack of elements)
//! that meets the memory ceiling (its allocator then aborts the process). Neither can be unwound: the
//! worker cannot go on. What it can do is say why: before it dies, it answers the run (or the
//! invocation) in progress with `MEMORY_LIMIT`, so the host reports the program's failure,
//! which retrying does not cure, instead of a lost worker it would invite the caller to retry.
//! The pool replaces the worker when it exits.
//!
//! Two doors lead here: V8's out-of-memory handler (set on every isolate, isolate.rs), and a
//! handler of SIGABRT, SIGTRAP and SIGILL for a crash whose cause was an allocation that
//! failed (`errno` is ENOMEM when the handler starts: the failed `mmap`/`brk`/`mprotect` set
//! it, and nothing between it and the signal clears it). SIGTRAP and SIGILL are how V8's own
//! C++ allocator (PartitionAlloc) crashes when it gets no memory. Any other crash goes on as
//! before: the handler returns, and the process dies by its signal (the handler is reset, and
//! a trap's next instruction traps again).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use codemode_protocol::{FailureCode, RunError, RunOutcome, RunStats, WorkerMsg};

use crate::process::io;

/// The execution in progress (0: none; the pool numbers them from 1).
static EXEC: AtomicU64 = AtomicU64::new(0);
/// The frame that answers the execution in progress (or its invocation) with `MEMORY_LIMIT`,
/// built when it starts: when it is needed, memory is gone and the allocator (V8's
/// PartitionAlloc, which is also the process's malloc) may hold the lock its crash left, so
/// the last words must not allocate.
static LAST_FRAME: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// The status the worker exits with after its last words.
const EXIT_OUT_OF_MEMORY: i32 = 75;

/// Run `exec_id` (or its invocation `invoke_id`) starts, under `mib`: its last words are built
/// now (a few hundred bytes, once per run).
pub fn running(exec_id: u64, invoke_id: Option<u64>, mib: u32) {
    let mib = mib.to_string();
    let error = RunError {
        code: FailureCode::MemoryLimit.as_str().to_string(),
        message: FailureCode::MemoryLimit.render(&[("mib", &mib)]),
        location: None,
    };
    let msg = match invoke_id {
        None => WorkerMsg::Done {
            exec_id,
            outcome: RunOutcome {
                error: Some(error),
                stats: RunStats {
                    worker_pid: std::process::id(),
                    ..RunStats::default()
                },
                ..RunOutcome::default()
            },
        },
        Some(invoke_id) => WorkerMsg::Invoked {
            exec_id,
            invoke_id,
            result: Err(error),
        },
    };
    let frame = msg.encode().unwrap_or_default();
    match LAST_FRAME.lock() {
        Ok(mut last) => *last = frame,
        Err(poisoned) => *poisoned.into_inner() = frame,
    }
    EXEC.store(exec_id, Ordering::Release);
}

/// Nothing runs: memory that runs out now is the worker's own, not a program's.
pub fn idle() {
    EXEC.store(0, Ordering::Release);
}

/// Answers the execution in progress with `MEMORY_LIMIT` and exits; returns when none is in
/// progress or the answer cannot be written whole (the caller then dies as it would have).
/// Allocates nothing and takes no lock it would wait for.
fn speak() {
    if EXEC.load(Ordering::Acquire) == 0 {
        return;
    }
    let Ok(frame) = LAST_FRAME.try_lock() else {
        return;
    };
    if !frame.is_empty() && io::write_if_free(&frame) {
        // SAFETY: _exit ends the process at once, running nothing of a heap that may be
        // inconsistent; it is async-signal-safe.
        unsafe { libc::_exit(EXIT_OUT_OF_MEMORY) };
    }
}

/// V8's out-of-memory handler (isolate.rs sets it on every isolate): V8 aborts the process
/// when it returns, so it returns only when there is nothing to say.
pub extern "C" fn v8_out_of_memory(
    _location: *const std::os::raw::c_char,
    _details: &v8::OomDetails,
) {
    speak();
}

extern "C" fn on_abort(_signal: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno, readable at any time.
    let errno = unsafe { *libc::__errno_location() };
    if errno == libc::ENOMEM {
        speak();
    }
    // Returning lets abort() go on: the handler was reset (SA_RESETHAND), so it raises SIGABRT
    // again with the default action and the process dies by it.
}

/// The worker's allocator: the system's, but an allocation that fails ends the process by
/// SIGABRT with `errno` ENOMEM (so a run in progress is answered `MEMORY_LIMIT`, above) instead
/// of returning null to code that may not check it (the `v8` crate's string copies write
/// through the pointer they get: a program's huge string met the memory ceiling there
/// as a SIGSEGV, reported as a lost worker the caller would retry). Nothing in the worker
/// recovers from a failed allocation, so none is lost.
pub struct Allocator;

fn out_of_memory() -> ! {
    // SAFETY: __errno_location returns this thread's errno, which we may write.
    unsafe { *libc::__errno_location() = libc::ENOMEM };
    std::process::abort()
}

// SAFETY: every method forwards to the system allocator with the same arguments and returns
// its pointer unchanged; only a null one is not returned (the process ends instead).
unsafe impl std::alloc::GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded as the caller gave it (GlobalAlloc's contract holds for it).
        let p = unsafe { std::alloc::System.alloc(layout) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: as for alloc.
        let p = unsafe { std::alloc::System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from this allocator (so from System) with `layout`.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for dealloc; the caller upholds realloc's contract.
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }
}

/// Installs the SIGABRT handler (before the jail: `rt_sigaction` stays allowed, but the sooner
/// the better). A failure to install leaves aborts as they were.
pub fn install() {
    // SAFETY: a zeroed sigaction is a valid starting value; the handler is an extern "C" fn of
    // the signature sa_handler expects, and SA_RESETHAND makes it run at most once.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_abort as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut action.sa_mask);
        // SIGABRT: abort() after a failed allocation (ours, glibc's, V8's). SIGTRAP and SIGILL:
        // V8's own C++ allocator (PartitionAlloc) ends the process with a trap instruction
        // (int3, then ud2) when the ceiling refuses it memory.
        for signal in [libc::SIGABRT, libc::SIGTRAP, libc::SIGILL] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

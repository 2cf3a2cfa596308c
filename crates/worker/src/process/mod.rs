//! Process plumbing: the worker's pipes and its tie to the parent ([`io`]), the run's view of
//! them ([`link`]), the jail the process enters before any program runs ([`jail`]), and the CPU
//! budget the main and cancel threads enforce together ([`budget`]), and the answer a worker
//! gives before memory that ran out past every bound ends it ([`last_words`]). Nothing here knows V8
//! beyond the isolate handle a Cancel terminates and the interrupt a budget's check runs in.

pub mod budget;
pub mod io;
pub mod jail;
pub mod last_words;
pub mod link;

use std::sync::atomic::{AtomicU64, Ordering};

/// CPU the main thread spent polling for the host's answers (`io::Input::next_within`).
static SPUN_US: AtomicU64 = AtomicU64::new(0);

/// Runs `spin`, a poll for the host's answer on the main thread, and sets the CPU it cost
/// aside: waiting for the host is not the program's (docs/bounds.md, "CPU").
pub fn spun(spin: impl FnOnce()) {
    let before = thread_cpu_us();
    spin();
    SPUN_US.fetch_add(thread_cpu_us().saturating_sub(before), Ordering::Relaxed);
}

/// CPU time the main thread spent on work so far, in microseconds: its CPU time without what
/// it spent polling for the host's answers ([`spun`]). A run's count (its stats, its budget)
/// is the difference of two readings.
pub fn work_cpu_us() -> u64 {
    thread_cpu_us().saturating_sub(SPUN_US.load(Ordering::Relaxed))
}

/// CPU time of the calling thread in microseconds.
pub fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1000
}

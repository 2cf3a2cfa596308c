//! V8 itself, once per process: the flags it runs with and its start. The snapshot's fingerprint
//! covers the flags (snapshot.rs), and every isolate (isolate.rs) runs with them.

/// The flags V8 runs with, here and when the snapshot is built (a snapshot is only valid with
/// the flags it was made with; its fingerprint covers them).
///
/// - `--no-turboshaft-loop-unrolling`: V8 (13.0, and 15.2 still) can ignore
///   terminate_execution() inside optimized loops whose interrupt checks Turboshaft's loop
///   unrolling removed; a heap bomb then grows to the cage and aborts the worker. With the flag
///   termination is reliable (tests/budgets.rs keeps one test per loop shape).
/// - `--sandbox-prohibit-insecure-mode`: when the heap sandbox's address space cannot be
///   reserved in full (a squeezed address space), V8 would fall back to a partial sandbox that
///   guards nothing; with the flag it aborts at start instead, loudly.
pub const V8_FLAGS: &str = "--no-turboshaft-loop-unrolling --sandbox-prohibit-insecure-mode";

/// The V8 this worker links, as reported (`--version`, the worker's hello): its version string
/// is the same with and without the heap sandbox, so the flavour is said apart (and is part of
/// the snapshot's fingerprint).
pub const V8_FLAVOUR: &str = "sandbox";

/// The engine, as the worker names it (`--version`, its `Engine` message after `Hello`). V8's
/// version is a static string, readable before V8 starts.
pub fn engine() -> codemode_protocol::Engine {
    codemode_protocol::Engine {
        v8: v8::V8::get_version().to_string(),
        sandbox: V8_FLAVOUR == "sandbox",
    }
}

/// Seeds drawn by V8 from [`entropy`] (the jail self-test checks an isolate made in the jail
/// drew one).
static ENTROPY_DRAWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// V8's entropy source: the kernel's (`getrandom`, which the jail allows). Without one, V8 seeds
/// each isolate's random number generator (its hash seed, `Math.random`'s state, address hints)
/// from `/dev/urandom`, which the jail refuses to open, and then from the clock: weak, and
/// guessable by a program that reads the time.
fn entropy(buf: &mut [u8]) -> bool {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: getrandom writes at most `len` bytes into the buffer we own from `filled` on.
        let r =
            unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0) };
        if r <= 0 {
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        filled += r as usize;
    }
    ENTROPY_DRAWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    true
}

/// How many seeds V8 drew from [`entropy`].
pub fn entropy_drawn() -> u64 {
    ENTROPY_DRAWN.load(std::sync::atomic::Ordering::Relaxed)
}

/// Starts V8 (once per process, before anything else touches it).
pub fn init_v8() {
    init_v8_with("");
}

/// Starts V8 with flags beyond [`V8_FLAGS`] (`--bench-prepare` only: a snapshot made with the
/// shipped flags does not fit, so that process builds its own).
pub fn init_v8_with(extra_flags: &str) {
    // Before V8 starts: ICU reads its data from this embedded copy, never from a file (the
    // jail would refuse the open). It fails only on data of another ICU version, which the
    // exact pin in Cargo.toml rules out; Intl would then report "Icu error", as without data.
    if let Err(code) = v8::icu::set_common_data_78(deno_core_icudata::ICU_DATA) {
        eprintln!("codemode-worker: the embedded ICU data was refused (ICU error {code}): Intl will not work");
    }
    v8::V8::set_entropy_source(entropy);
    v8::V8::set_flags_from_string(V8_FLAGS);
    if !extra_flags.is_empty() {
        v8::V8::set_flags_from_string(extra_flags);
    }
    let platform = v8::new_default_platform(0, false).make_shared();
    v8::V8::initialize_platform(platform);
    v8::V8::initialize();
}

//! Every bound and default the layers enforce, in one place (the worker where it builds the
//! output, the pool where it checks a worker's frames, the addon and `lib/validate.js` where
//! they check a host's options and requests, the daemon where it checks a client's): a rule
//! lives here once and each enforcer reads it.

use std::ops::RangeInclusive;

/// Console entries kept per run; later ones are dropped behind one LOG_LIMIT notice.
pub const LOG_ENTRIES: usize = 1_000;
/// Tool calls an outcome lists (`outcome.calls`, the audit trail); later ones are counted in
/// `stats.toolCalls` only.
pub const CALL_RECORDS: usize = 1_000;
/// Bytes of an approval token's signed body (the program, its modules, the ledger of answers);
/// a run that would pause with more fails with `APPROVAL_LEDGER_TOO_LARGE`. In base64 it stays
/// within the daemon's message bound.
pub const APPROVAL_TOKEN_BYTES: usize = 8 * 1024 * 1024;
/// The least bytes an approval key may have.
pub const APPROVAL_KEY_MIN_BYTES: usize = 32;
/// Bytes of console text kept per run (UTF-8).
pub const LOG_BYTES: usize = 1024 * 1024;
/// Bytes one console entry may take; a longer one is cut with a visible marker.
pub const LOG_ENTRY_BYTES: usize = 64 * 1024;
/// Serialized size of a run's result.
pub const RESULT_BYTES: usize = 16 * 1024 * 1024;
/// Serialized size of a tool call's arguments, and of the host's answer.
pub const TOOL_PAYLOAD_BYTES: usize = 16 * 1024 * 1024;
/// Body size of an outbound request, and of its response.
pub const FETCH_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Redirects a native fetch follows.
pub const FETCH_REDIRECTS: u32 = 10;
/// Native fetches (outbound native or public) of one run being performed at once; the
/// run's further native fetches wait, in order, for one of these to end.
pub const FETCH_CONCURRENCY_PER_RUN: usize = 8;
/// Threads a pool performs native fetches on, for all its runs together (started as
/// needed, kept while the pool lives).
pub const FETCH_THREADS: usize = 64;
/// Bytes of requests (URL, headers and body) one run may have in flight at once: fetches
/// sent to the host and not yet answered, waiting ones included. A fetch past it rejects
/// in the sandbox with `FETCH_BYTES_IN_FLIGHT`.
pub const FETCH_BYTES_IN_FLIGHT: usize = 32 * 1024 * 1024;
/// Tool calls and fetches of one run in flight at once (awaiting the host's answer).
pub const CALLS_IN_FLIGHT: usize = 10_000;
/// Serialized argument bytes of one run's tool calls the host holds at once: calls whose
/// dispatch has not settled, running or waiting their turn. The call that would pass it
/// rejects inside the sandbox (`TOOL_BYTES_IN_FLIGHT`) before its arguments are read. At
/// least [`TOOL_PAYLOAD_BYTES`], so a single call of any allowed size always fits.
pub const TOOL_BYTES_IN_FLIGHT: usize = 2 * TOOL_PAYLOAD_BYTES;
/// Dispatches of one run the host runs at once; later calls wait, still serialized, in
/// arrival order (bounded by [`TOOL_BYTES_IN_FLIGHT`] and [`CALLS_IN_FLIGHT`]).
pub const DISPATCHES: usize = 64;

/// Microseconds a run with calls in flight polls for the host's answer before it sleeps (the
/// worker's `process/io.rs`): an answer that comes within it is read without a wake-up, which
/// costs tens of microseconds where idle CPUs halt (a virtual machine's), and a tool call over
/// a daemon comes back within it. Not counted against the run's CPU; the pool's CPU backstop
/// allows twice it for each answer it sends (`deadlines.rs`).
pub const ANSWER_POLL_US: u64 = 200;

/// CPU a worker may spend while it holds no run and no invocation in flight (idle,
/// preparing its next isolate, or serving a retained execution's timers), per
/// [`IDLE_CPU_WINDOW_MS`]: a tenth of a core. Past it, a retained execution ends (reason
/// `cpu`) and a worker holding nothing is killed and replaced (docs/bounds.md).
pub const IDLE_CPU_MS: u64 = 1_000;
/// The window [`IDLE_CPU_MS`] is counted over.
pub const IDLE_CPU_WINDOW_MS: u64 = 10_000;

/// Threads a worker runs: V8's platform pool (one per core but one, at most 16), the main
/// thread and the cancel thread. All start before the jail, which lets none start after.
pub const WORKER_THREADS: u64 = 18;
/// Under a root host, workers run as an unprivileged uid whose `RLIMIT_NPROC` is
/// `WORKER_THREADS` for each of at least this many workers. The kernel counts every task
/// of that uid (all pools' workers on the machine, and whatever else runs as it), so a pool
/// smaller than this leaves room for the others.
pub const WORKER_UID_WORKERS: u64 = 64;
/// Bytes of diagnostics (its stderr) the host logs from one worker over its life; past
/// them, the rest is read and dropped.
pub const WORKER_STDERR_BYTES: usize = 64 * 1024;
/// Bytes of one line of a worker's diagnostics the host logs; a longer one is cut.
pub const WORKER_STDERR_LINE_BYTES: usize = 1024;

/// Levels of nesting a program (and a TypeScript module) may have, counted by
/// `codemode_typestrip::nesting` before any parser reads it: oxc recurses once per level
/// without a depth check, and about 1.6 KiB of stack per level is the worst measured, so
/// this bound needs under 1 MiB of the parsing thread's stack (docs/bounds.md).
pub const NESTING_LEVELS: u32 = 500;
/// Bytes of program code the dialect adapter (`CodemodeExecutor`) normalizes on the host's
/// event loop; longer code is refused with CODE_TOO_LARGE before it is read.
pub const CODE_BYTES: usize = 1024 * 1024;

/// Bytes the worker's cut marker may add to an entry it cut at [`LOG_ENTRY_BYTES`].
pub const LOG_MARKER_BYTES: usize = 64;
/// The most bytes one log entry may carry on the wire (in `Done`'s logs or a live `Log`): the
/// kept text plus the marker.
pub const LOG_ENTRY_WIRE_BYTES: usize = LOG_ENTRY_BYTES + LOG_MARKER_BYTES;
/// The most entries a run's logs may carry on the wire: [`LOG_ENTRIES`] plus the LOG_LIMIT
/// notice that may follow them.
pub const LOG_WIRE_ENTRIES: usize = LOG_ENTRIES + 1;
/// The most bytes a run's logs may carry on the wire: the worker keeps entries until their
/// total reaches [`LOG_BYTES`], so the last kept may pass it by one entry, and the notice
/// follows it.
pub const LOG_WIRE_BYTES: usize = LOG_BYTES + 2 * LOG_ENTRY_WIRE_BYTES;

/// The status a response may carry: a retained handler's answer (checked by the pool) and a
/// routed fetch's answer from the host's policy (checked by `lib/executor-core.js`). The same
/// range the Fetch standard's `Response` constructor accepts.
pub const RESPONSE_STATUS: RangeInclusive<u16> = 200..=599;

/// An executor's options and a request's fields: the range each may take and the default an
/// omitted one gets. The addon hands them to `lib/validate.js` (`limits()`), the daemon checks
/// a client's requests and its command line against the same, and the worker's own default
/// memory limit is [`DEFAULT_MEMORY_LIMIT_MIB`].
pub mod options {
    use std::ops::RangeInclusive;

    /// Worker processes of one pool.
    pub const WORKERS: RangeInclusive<u64> = 1..=256;
    /// Runs that may wait for a worker beyond those running.
    pub const QUEUE_BOUND: RangeInclusive<u64> = 0..=1_000_000;
    /// The default [`QUEUE_BOUND`].
    pub const DEFAULT_QUEUE_BOUND: u64 = 1_024;
    /// A run's time bound in milliseconds (at most what a JS timer takes).
    pub const TIMEOUT_MS: RangeInclusive<u64> = 1..=2_147_483_647;
    /// The default [`TIMEOUT_MS`].
    pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
    /// A run's V8 heap limit in MiB. At most 2 GiB: every isolate of a worker (the running one
    /// and the one prepared while idle) lives in one 4 GiB pointer-compression cage, and a run
    /// that fills its limit is granted headroom to stop cleanly (engine/memory.rs).
    pub const MEMORY_LIMIT_MIB: RangeInclusive<u64> = 8..=2_048;
    /// The default [`MEMORY_LIMIT_MIB`].
    pub const DEFAULT_MEMORY_LIMIT_MIB: u64 = 128;
    /// How long a retained execution may go without an invocation, in milliseconds.
    pub const HANDLES_IDLE_TIMEOUT_MS: RangeInclusive<u64> = 1..=2_147_483_647;
    /// The default [`HANDLES_IDLE_TIMEOUT_MS`].
    pub const DEFAULT_HANDLES_IDLE_TIMEOUT_MS: u64 = 300_000;
    /// A run's CPU budget in milliseconds (`cpuLimit`: the program's thread, waiting for the
    /// host not counted). No default: without one, only the time bound holds.
    pub const CPU_LIMIT_MS: RangeInclusive<u64> = 1..=2_147_483_647;
    /// Tool calls one run may make (`toolCallLimit`; 0: none at all). No default.
    pub const TOOL_CALL_LIMIT: RangeInclusive<u64> = 0..=1_000_000;
    /// Fetches one run (or one invocation) may make (`fetchLimit`; 0: none at all). No default.
    pub const FETCH_LIMIT: RangeInclusive<u64> = 0..=1_000_000;
    /// How long an approval token stays good, in milliseconds (`approval.expiresIn`): up to 30
    /// days.
    pub const APPROVAL_EXPIRES_IN_MS: RangeInclusive<u64> = 1..=2_592_000_000;
    /// The default [`APPROVAL_EXPIRES_IN_MS`]: a day.
    pub const DEFAULT_APPROVAL_EXPIRES_IN_MS: u64 = 86_400_000;
    /// How long `decide` may take for one call in callback mode, in milliseconds
    /// (`approval.timeout`); past it the call is denied. It is also the most a run's time
    /// bound rests over the whole run while decisions are awaited, so it is held to an hour:
    /// longer waits are interrupt mode's.
    pub const APPROVAL_TIMEOUT_MS: RangeInclusive<u64> = 1..=3_600_000;
    /// The default [`APPROVAL_TIMEOUT_MS`]: five minutes.
    pub const DEFAULT_APPROVAL_TIMEOUT_MS: u64 = 300_000;
    /// A tenant's runs running at once (`maxRunning`, docs/tenants.md). No default: without
    /// one, as many as the pool's workers.
    pub const TENANT_MAX_RUNNING: RangeInclusive<u64> = 1..=256;
    /// A tenant's runs waiting for a worker (`maxQueued`). No default: without one, only the
    /// pool's `queueBound` holds.
    pub const TENANT_MAX_QUEUED: RangeInclusive<u64> = 0..=1_000_000;
    /// The CPU a tenant's runs may spend in any minute, in milliseconds (`cpuPerMinute`): up to
    /// 256 workers busy the whole minute. No default: without one, no CPU share.
    pub const TENANT_CPU_PER_MINUTE_MS: RangeInclusive<u64> = 1..=15_360_000;
}

/// The globals the sandbox's runtime installs on the global object (the worker's `runtime.js`
/// installs exactly these, in this order, which a worker test checks); with the language's own,
/// names a tool provider may not take (`lib/validate.js`, through the addon).
pub const RUNTIME_GLOBALS: &[&str] = &[
    "console",
    "self",
    "setTimeout",
    "setInterval",
    "clearTimeout",
    "clearInterval",
    "queueMicrotask",
    "performance",
    "DOMException",
    "Event",
    "EventTarget",
    "AbortSignal",
    "AbortController",
    "TextEncoder",
    "TextDecoder",
    "btoa",
    "atob",
    "structuredClone",
    "crypto",
    "Crypto",
    "SubtleCrypto",
    "CompressionStream",
    "DecompressionStream",
    "caches",
    "URLSearchParams",
    "URL",
    "Headers",
    "Blob",
    "ReadableStream",
    "ReadableStreamDefaultReader",
    "Request",
    "Response",
    "fetch",
];

/// The runtime's classes whose instances are platform objects: like a browser's, they do not
/// cross a boundary by structured clone (V8 would otherwise copy them as empty plain objects).
pub const PLATFORM_CLASSES: &[&str] = &[
    "Request",
    "Response",
    "Headers",
    "Blob",
    "ReadableStream",
    "ReadableStreamDefaultReader",
    "URL",
    "URLSearchParams",
    "AbortController",
    "AbortSignal",
    "EventTarget",
    "Event",
    "TextEncoder",
    "TextDecoder",
    "Crypto",
    "SubtleCrypto",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_classes_are_runtime_globals() {
        for class in PLATFORM_CLASSES {
            assert!(
                RUNTIME_GLOBALS.contains(class),
                "{class} is not a runtime global"
            );
        }
    }

    #[test]
    fn budgets_fit_the_wire_fields() {
        for range in [
            options::CPU_LIMIT_MS,
            options::TOOL_CALL_LIMIT,
            options::FETCH_LIMIT,
        ] {
            assert!(*range.end() <= u64::from(u32::MAX));
        }
    }

    #[test]
    fn defaults_lie_in_their_ranges() {
        assert!(options::TIMEOUT_MS.contains(&options::DEFAULT_TIMEOUT_MS));
        assert!(options::MEMORY_LIMIT_MIB.contains(&options::DEFAULT_MEMORY_LIMIT_MIB));
        assert!(options::QUEUE_BOUND.contains(&options::DEFAULT_QUEUE_BOUND));
        assert!(
            options::HANDLES_IDLE_TIMEOUT_MS.contains(&options::DEFAULT_HANDLES_IDLE_TIMEOUT_MS)
        );
    }
}

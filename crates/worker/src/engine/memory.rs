//! The run's memory budget. V8 enforces it on the heap (the isolate's heap limit, with a
//! near-limit callback that terminates the run instead of letting V8 abort the process), and a
//! metered ArrayBuffer allocator charges backing stores, which live outside the heap (inside
//! the heap sandbox, placed there by V8's default allocator), to the same budget: an allocation
//! is refused when buffers plus the heap's last sampled size would pass it. The heap size is sampled at safe points (each turn of the run's event loop), since
//! the allocator may not call into V8.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub struct Meter {
    /// Bytes of live ArrayBuffer backing stores.
    buffers: AtomicUsize,
    /// Peak of `buffers` during the current run.
    peak: AtomicUsize,
    /// The run's budget in bytes.
    limit: AtomicUsize,
    /// The heap's size at the last safe point.
    heap: AtomicUsize,
    /// An allocation was refused during the current run.
    refused: AtomicBool,
    /// The last allocation asked for was refused (V8 is retrying it, or has thrown for it):
    /// cleared by the next one that succeeds and at each safe point.
    refusing: AtomicBool,
    /// The heap reached its limit during the current run.
    heap_exhausted: AtomicBool,
}

pub static METER: Meter = Meter {
    buffers: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
    limit: AtomicUsize::new(usize::MAX),
    heap: AtomicUsize::new(0),
    refused: AtomicBool::new(false),
    refusing: AtomicBool::new(false),
    heap_exhausted: AtomicBool::new(false),
};

impl Meter {
    pub fn start_run(&self, limit_bytes: usize) {
        self.limit.store(limit_bytes, Ordering::Relaxed);
        self.peak
            .store(self.buffers.load(Ordering::Relaxed), Ordering::Relaxed);
        self.refused.store(false, Ordering::Relaxed);
        self.refusing.store(false, Ordering::Relaxed);
        self.heap_exhausted.store(false, Ordering::Relaxed);
    }
    /// A retained execution's next invocation: a refused allocation is counted afresh, but a
    /// heap that filled between invocations stays reported (the isolate is past its limit).
    pub fn start_invocation(&self) {
        self.refused.store(false, Ordering::Relaxed);
    }
    /// The heap's size at a safe point. A heap past the run's limit is exhausted even when V8
    /// never called the near-limit callback: V8 15.2 lets one large allocation of an array of
    /// small integers (JSON.parse of a long array, `new Array(n).fill(0)`) pass the old
    /// generation's limit without a collection, measured at twice the limit in one step.
    pub fn sample_heap(&self, used: usize) {
        self.heap.store(used, Ordering::Relaxed);
        self.refusing.store(false, Ordering::Relaxed);
        if used > self.limit.load(Ordering::Relaxed) {
            self.heap_exhausted.store(true, Ordering::Relaxed);
        }
    }
    pub fn refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }
    pub fn heap_exhausted(&self) -> bool {
        self.heap_exhausted.load(Ordering::Relaxed)
    }
    pub fn buffers_peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
    fn charge(&self, len: usize) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        let heap = self.heap.load(Ordering::Relaxed);
        let mut cur = self.buffers.load(Ordering::Relaxed);
        loop {
            let next = match cur.checked_add(len) {
                Some(n) if n.saturating_add(heap) <= limit => n,
                _ => {
                    self.refused.store(true, Ordering::Relaxed);
                    self.refusing.store(true, Ordering::Relaxed);
                    return false;
                }
            };
            match self.buffers.compare_exchange_weak(
                cur,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.refusing.store(false, Ordering::Relaxed);
                    self.peak.fetch_max(next, Ordering::Relaxed);
                    return true;
                }
                Err(actual) => cur = actual,
            }
        }
    }
    fn release(&self, len: usize) {
        // Saturating: a release past what was charged (which V8's allocator contract rules out)
        // must not wrap and refuse every later allocation.
        let _ = self
            .buffers
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |cur| {
                Some(cur.saturating_sub(len))
            });
    }
}

// The allocator shim's hooks (engine/metered_allocator.cc): every ArrayBuffer backing store of
// the process is charged here before V8's default allocator places it inside the heap sandbox.

/// Charges a backing store of `length` bytes to the run's budget; false refuses the allocation
/// (V8 then throws a RangeError in the program).
#[unsafe(no_mangle)]
pub extern "C" fn codemode_meter_charge(length: usize) -> bool {
    METER.charge(buffer_cost(length))
}

/// Returns a backing store of `length` bytes to the budget: a freed one, or a charge whose
/// allocation failed.
#[unsafe(no_mangle)]
pub extern "C" fn codemode_meter_release(length: usize) {
    METER.release(buffer_cost(length));
}

/// What a backing store of `length` bytes costs the process: the sandbox's allocator hands out
/// 128-byte granules, and V8 keeps a BackingStore and an extension object for each buffer in
/// memory of its own (PartitionAlloc, outside the heap the limit counts). Charged at face value,
/// millions of one-byte buffers cost hundreds of MiB the meter never saw and met the worker's
/// memory ceiling instead, which V8's allocator answers with a crash.
fn buffer_cost(length: usize) -> usize {
    const GRANULE: usize = 128;
    const PER_BUFFER: usize = 256;
    length
        .div_ceil(GRANULE)
        .saturating_mul(GRANULE)
        .saturating_add(PER_BUFFER)
}

unsafe extern "C" {
    /// A new metered allocator owning V8's default allocator (metered_allocator.cc); null when
    /// V8 gave none.
    fn codemode_metered_allocator_new() -> *mut v8::Allocator;
}

thread_local! {
    /// One allocator for every isolate of the thread (the worker has one V8 thread): the meter
    /// is the process's, and V8's default allocator holds no per-isolate state.
    static ALLOCATOR: v8::SharedPtr<v8::Allocator> = new_allocator();
}

/// The ArrayBuffer allocator of every isolate: V8's default (inside the sandbox), metered.
pub fn allocator() -> v8::SharedPtr<v8::Allocator> {
    ALLOCATOR.with(|a| a.clone())
}

fn new_allocator() -> v8::SharedPtr<v8::Allocator> {
    // SAFETY: the shim returns a fresh heap object implementing V8's Allocator interface (its
    // vtable declared member for member as in the pinned crate's v8-array-buffer.h), owned by
    // nobody else; the UniquePtr takes ownership and V8 deletes it through its virtual
    // destructor. A null pointer gives an empty UniquePtr, refused below.
    let unique = unsafe { v8::UniquePtr::from_raw(codemode_metered_allocator_new()) };
    if unique.is_null() {
        // V8 gives no default allocator only before its platform is initialized, which
        // engine::platform does before any isolate: this worker is broken, not a run.
        eprintln!("codemode-worker: V8 returned no ArrayBuffer allocator");
        std::process::exit(70);
    }
    unique.make_shared()
}

/// V8 calls this when the heap nears its limit. Terminating the run and granting headroom lets
/// the termination unwind instead of V8 aborting the whole worker with a fatal OOM.
///
/// V8 also calls it before its last-resort collection for an ArrayBuffer the allocator refused
/// (the heap far from its limit): that is a buffer past the budget, which the program gets as
/// a catchable `RangeError`, not the end of the run, so it is told apart and left alone.
pub extern "C" fn near_heap_limit(data: *mut c_void, current: usize, _initial: usize) -> usize {
    // SAFETY: `data` points at the boxed raw pointer of the isolate this callback was
    // registered on, owned by the same `Prepared` as the isolate and dropped after it
    // (engine/isolate.rs). V8 calls this on the isolate's thread, as an embedder callback (a
    // handle scope open, outside the collection itself), while the isolate is alive; the
    // `Isolate` made here is a non-owning view (no Drop).
    let mut isolate =
        unsafe { v8::Isolate::from_raw_isolate_ptr(*(data as *const v8::UnsafeRawIsolatePtr)) };
    if METER.refusing.load(Ordering::Relaxed) {
        let used = isolate.get_heap_statistics().used_heap_size();
        if !heap_near_its_limit(used, current) {
            return current;
        }
    }
    METER.heap_exhausted.store(true, Ordering::Relaxed);
    isolate.terminate_execution();
    near_heap_limit_grant(current)
}

/// Whether a heap of `used` bytes under a limit of `limit` is near it: past three quarters.
/// V8 calls the near-limit callback when its collections cannot keep the heap under the limit
/// (past 80% of it, or at it); a last-resort collection for a refused buffer can come at any
/// heap size.
fn heap_near_its_limit(used: usize, limit: usize) -> bool {
    used >= limit / 4 * 3
}

/// The heap limit granted to a run that reached `current`: generous, since the allocation that
/// hit the limit may be one huge object (a doubled string) and it must succeed for the
/// termination to unwind (the run ends at the next interrupt), but never past
/// [`HEAP_GRANT_CEILING`], and never below `current`.
fn near_heap_limit_grant(current: usize) -> usize {
    current
        .saturating_mul(2)
        .saturating_add(64 * 1024 * 1024)
        .min(HEAP_GRANT_CEILING.max(current))
}

/// The most heap a run is granted to stop cleanly: below the 4 GiB pointer-compression cage
/// that every isolate of the worker shares (the prepared one, V8's read-only and code spaces
/// too), so a grant never asks V8 for more than the cage holds. With the largest memory limit
/// (2048 MiB, `MEMORY_LIMIT_MIB`) the grant is this, not twice the limit.
const HEAP_GRANT_CEILING: usize = 3584 * 1024 * 1024;

#[cfg(test)]
mod grant {
    #[test]
    fn the_grant_stays_inside_the_cage() {
        const MIB: usize = 1024 * 1024;
        let grant = super::near_heap_limit_grant;
        assert_eq!(grant(32 * MIB), 128 * MIB);
        assert_eq!(grant(1024 * MIB), 2112 * MIB);
        assert_eq!(grant(2048 * MIB), 3584 * MIB);
        assert_eq!(grant(3600 * MIB), 3600 * MIB);
    }

    #[test]
    fn a_buffer_costs_its_granules_and_its_bookkeeping() {
        assert_eq!(super::buffer_cost(0), 256);
        assert_eq!(super::buffer_cost(1), 128 + 256);
        assert_eq!(super::buffer_cost(128), 128 + 256);
        assert_eq!(super::buffer_cost(129), 256 + 256);
        assert_eq!(super::buffer_cost(usize::MAX), usize::MAX);
    }

    #[test]
    fn a_heap_is_near_its_limit_past_three_quarters() {
        const MIB: usize = 1024 * 1024;
        assert!(!super::heap_near_its_limit(2 * MIB, 32 * MIB));
        assert!(!super::heap_near_its_limit(23 * MIB, 32 * MIB));
        assert!(super::heap_near_its_limit(24 * MIB, 32 * MIB));
        assert!(super::heap_near_its_limit(40 * MIB, 32 * MIB));
    }
}

//! The run's memory budget. V8 enforces it on the heap (the isolate's heap limit, with a
//! near-limit callback that terminates the run instead of letting V8 abort the process), and a
//! metered ArrayBuffer allocator charges backing stores, which live outside the heap, to the
//! same budget: an allocation is refused when buffers plus the heap's last sampled size would
//! pass it. The heap size is sampled at safe points (each turn of the run's event loop), since
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
    /// The heap reached its limit during the current run.
    heap_exhausted: AtomicBool,
}

pub static METER: Meter = Meter {
    buffers: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
    limit: AtomicUsize::new(usize::MAX),
    heap: AtomicUsize::new(0),
    refused: AtomicBool::new(false),
    heap_exhausted: AtomicBool::new(false),
};

impl Meter {
    pub fn start_run(&self, limit_bytes: usize) {
        self.limit.store(limit_bytes, Ordering::Relaxed);
        self.peak
            .store(self.buffers.load(Ordering::Relaxed), Ordering::Relaxed);
        self.refused.store(false, Ordering::Relaxed);
        self.heap_exhausted.store(false, Ordering::Relaxed);
    }
    /// A retained execution's next invocation: a refused allocation is counted afresh, but a
    /// heap that filled between invocations stays reported (the isolate is past its limit).
    pub fn start_invocation(&self) {
        self.refused.store(false, Ordering::Relaxed);
    }
    pub fn sample_heap(&self, used: usize) {
        self.heap.store(used, Ordering::Relaxed);
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
                    self.peak.fetch_max(next, Ordering::Relaxed);
                    return true;
                }
                Err(actual) => cur = actual,
            }
        }
    }
    fn release(&self, len: usize) {
        self.buffers.fetch_sub(len, Ordering::Relaxed);
    }
}

unsafe extern "C" fn allocate(meter: &Meter, len: usize) -> *mut c_void {
    if !meter.charge(len) {
        return std::ptr::null_mut();
    }
    // SAFETY: calloc with any size is sound; a null result is handed to V8, which reports an
    // allocation failure.
    let p = unsafe { libc::calloc(len.max(1), 1) };
    if p.is_null() {
        meter.release(len);
    }
    p
}

unsafe extern "C" fn allocate_uninitialized(meter: &Meter, len: usize) -> *mut c_void {
    if !meter.charge(len) {
        return std::ptr::null_mut();
    }
    // SAFETY: as for calloc.
    let p = unsafe { libc::malloc(len.max(1)) };
    if p.is_null() {
        meter.release(len);
    }
    p
}

unsafe extern "C" fn free(meter: &Meter, data: *mut c_void, len: usize) {
    meter.release(len);
    // SAFETY: V8 frees only pointers this allocator returned, with the length it asked for.
    unsafe { libc::free(data) };
}

unsafe extern "C" fn reallocate(
    meter: &Meter,
    data: *mut c_void,
    old_length: usize,
    new_length: usize,
) -> *mut c_void {
    if new_length > old_length && !meter.charge(new_length - old_length) {
        return std::ptr::null_mut();
    }
    // SAFETY: `data` came from this allocator (malloc family) with `old_length` bytes.
    let p = unsafe { libc::realloc(data, new_length.max(1)) };
    if p.is_null() {
        if new_length > old_length {
            meter.release(new_length - old_length);
        }
        return p;
    }
    if new_length < old_length {
        meter.release(old_length - new_length);
    }
    p
}

unsafe extern "C" fn drop_meter(_: *const Meter) {}

static VTABLE: v8::RustAllocatorVtable<Meter> = v8::RustAllocatorVtable {
    allocate,
    allocate_uninitialized,
    free,
    reallocate,
    drop: drop_meter,
};

pub fn allocator() -> v8::UniqueRef<v8::Allocator> {
    // SAFETY: METER is a static, so the handle outlives every allocator and isolate, and the
    // vtable's functions take exactly a `&Meter`.
    unsafe { v8::new_rust_allocator(&METER as *const Meter, &VTABLE) }
}

/// V8 calls this when the heap nears its limit. Terminating the run and granting headroom lets
/// the termination unwind instead of V8 aborting the whole worker with a fatal OOM.
pub extern "C" fn near_heap_limit(data: *mut c_void, current: usize, _initial: usize) -> usize {
    METER.heap_exhausted.store(true, Ordering::Relaxed);
    // SAFETY: `data` is the isolate this callback was registered on (see isolate.rs), and V8
    // invokes the callback on that isolate's own thread while it is alive.
    let isolate = unsafe { &mut *(data as *mut v8::Isolate) };
    isolate.terminate_execution();
    // Generous: the allocation that hit the limit may be one huge object (a doubled string),
    // and it must succeed for the termination to unwind; the run ends at the next interrupt.
    current.saturating_mul(2).saturating_add(64 * 1024 * 1024)
}

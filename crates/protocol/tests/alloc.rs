//! A corrupt list count must not make the decoder reserve memory for it. Its own test binary:
//! the counting allocator sees every allocation of the process, so nothing else may run here.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use codemode_protocol::{HostMsg, WorkerMsg};

struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; it only records sizes.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout contract is passed through as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Largest = Largest;

/// A varint of `n` in postcard's layout.
fn varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[test]
fn a_huge_list_count_in_a_tiny_frame_reserves_nothing() {
    // Done { exec 1, result None, error None, logs: <2^40 entries>, ... } in 9 bytes.
    let mut done = vec![1, 1, 0, 0];
    varint(1 << 40, &mut done);
    // Execute { exec 1, code "", modules: <2^40 entries> }.
    let mut execute = vec![0, 1, 0];
    varint(1 << 40, &mut execute);
    // Execute with one provider whose tool list claims 2^32 entries.
    let mut tools = vec![0, 1, 0, 0, 1, 1, b'p', 1];
    varint(1 << 32, &mut tools);
    LARGEST.store(0, Ordering::Relaxed);
    assert!(WorkerMsg::decode(&done).is_err());
    assert!(HostMsg::decode(&execute).is_err());
    assert!(HostMsg::decode(&tools).is_err());
    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(largest < 4096, "decoding reserved {largest} bytes");
}

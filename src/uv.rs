//! Node's event loop reads the workers' output (`codemode_pool::Watch`): a frame wakes the JS
//! thread directly instead of a reader thread that then wakes it, one wake-up fewer per tool
//! call. libuv's poll handles watch each worker's stdout; an async handle carries requests to
//! watch new workers (a replacement is started on the pool's spawner thread) to the JS thread,
//! since libuv is not thread-safe.
//!
//! libuv's symbols come from the Node binary that loads the addon, like N-API's own; Node
//! exports them for addons (`napi_get_uv_event_loop` hands out its loop). Every handle is
//! unreferenced: an idle executor never keeps Node alive (`lib/isolate-executor.js` holds the
//! loop open while executions are in flight).

use std::ffi::c_void;
use std::os::fd::RawFd;
use std::os::raw::c_int;
use std::process::ChildStdout;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use codemode_pool::{Pool, Readable, Watch};
use napi::Env;

#[repr(C)]
struct UvLoop {
    _opaque: [u8; 0],
}

#[repr(C)]
struct UvHandle {
    _opaque: [u8; 0],
}

type PollCb = unsafe extern "C" fn(*mut UvHandle, c_int, c_int);
type HandleCb = unsafe extern "C" fn(*mut UvHandle);

extern "C" {
    fn uv_handle_size(kind: c_int) -> usize;
    fn uv_poll_init(event_loop: *mut UvLoop, handle: *mut UvHandle, fd: c_int) -> c_int;
    fn uv_poll_start(handle: *mut UvHandle, events: c_int, cb: PollCb) -> c_int;
    fn uv_poll_stop(handle: *mut UvHandle) -> c_int;
    fn uv_async_init(event_loop: *mut UvLoop, handle: *mut UvHandle, cb: HandleCb) -> c_int;
    fn uv_async_send(handle: *mut UvHandle) -> c_int;
    fn uv_close(handle: *mut UvHandle, cb: HandleCb);
    fn uv_unref(handle: *mut UvHandle);
    fn uv_handle_set_data(handle: *mut UvHandle, data: *mut c_void);
    fn uv_handle_get_data(handle: *const UvHandle) -> *mut c_void;
}

/// `uv_handle_type` values (uv.h; stable across libuv 1.x).
const UV_ASYNC: c_int = 1;
const UV_POLL: c_int = 8;
/// `uv_poll_event`.
const UV_READABLE: c_int = 1;

/// Memory for one libuv handle of `kind`, aligned for any of its fields.
fn handle_memory(kind: c_int) -> Box<[u64]> {
    // SAFETY: uv_handle_size reads nothing but its argument, a valid handle type.
    let bytes = unsafe { uv_handle_size(kind) };
    vec![0u64; bytes.div_ceil(8)].into_boxed_slice()
}

/// What the loop's callbacks share: the pool (set once it has started) and the workers waiting
/// to be watched.
struct Shared {
    pool: OnceLock<Pool>,
    event_loop: usize,
    pending: Mutex<Vec<(u64, RawFd)>>,
    /// The async handle, while it is open (`None` once closed: nothing may send to it).
    wake: Mutex<Option<AsyncHandle>>,
}

struct AsyncHandle(*mut UvHandle);
// SAFETY: the pointer is only dereferenced by libuv: uv_async_send, which libuv documents as
// callable from any thread, under the `wake` lock, and uv_close on the loop's thread, under the
// same lock, after which the pointer is dropped from `wake`.
unsafe impl Send for AsyncHandle {}

/// The watcher the pool is started with. Weak: the pool holds it, and `Shared` holds the pool.
pub struct Watcher(Weak<Shared>);

impl Watch for Watcher {
    fn watch(&self, key: u64, fd: RawFd) -> bool {
        let Some(shared) = self.0.upgrade() else {
            return false;
        };
        let wake = shared.wake.lock().unwrap_or_else(|p| p.into_inner());
        let Some(handle) = wake.as_ref() else {
            return false;
        };
        shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((key, fd));
        // SAFETY: the handle is open (it is in `wake`, whose lock we hold; see AsyncHandle).
        unsafe { uv_async_send(handle.0) == 0 }
    }
}

/// The loop side of a watched pool, owned by the `NativePool`.
pub struct Reactor {
    shared: Arc<Shared>,
}

impl Reactor {
    /// Sets up the async handle on the JS thread's loop; returns the watcher to start the pool
    /// with. Call `attach` with the pool once it has started.
    pub fn new(env: &Env) -> Result<(Reactor, Watcher), String> {
        let mut event_loop = std::ptr::null_mut();
        // SAFETY: env is the live environment of the call we are in; the function writes the
        // loop pointer into our local.
        let status = unsafe { napi::sys::napi_get_uv_event_loop(env.raw(), &mut event_loop) };
        if status != napi::sys::Status::napi_ok || event_loop.is_null() {
            return Err("Node gave no event loop to watch the workers on".into());
        }
        let shared = Arc::new(Shared {
            pool: OnceLock::new(),
            event_loop: event_loop as usize,
            pending: Mutex::new(Vec::new()),
            wake: Mutex::new(None),
        });
        let memory = Box::into_raw(handle_memory(UV_ASYNC));
        let handle = memory.cast::<UvHandle>();
        // SAFETY: we are on the loop's thread (a JS call); `handle` points to zeroed memory of
        // uv_handle_size(UV_ASYNC) bytes that stays allocated until the close callback frees
        // it. The data pointer is a strong count of `shared`, released by that callback.
        let started = unsafe {
            if uv_async_init(event_loop.cast(), handle, on_wake) != 0 {
                drop(Box::from_raw(memory));
                false
            } else {
                uv_handle_set_data(handle, Arc::into_raw(shared.clone()) as *mut c_void);
                uv_unref(handle);
                true
            }
        };
        if !started {
            return Err("Node's event loop refused an async handle".into());
        }
        *shared.wake.lock().unwrap_or_else(|p| p.into_inner()) = Some(AsyncHandle(handle));
        let watcher = Watcher(Arc::downgrade(&shared));
        Ok((Reactor { shared }, watcher))
    }

    /// The pool started with this reactor's watcher.
    pub fn attach(&self, pool: Pool) {
        let _ = self.shared.pool.set(pool);
    }

    /// Closes the async handle (call on the JS thread, after the pool's shutdown): workers
    /// started from now on are read by threads. Watched workers stay watched until they end.
    pub fn close(&self) {
        let mut wake = self.shared.wake.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(handle) = wake.take() {
            // SAFETY: on the loop's thread; the handle is open (it was in `wake`) and is closed
            // once; its close callback frees its memory and the data's strong count.
            unsafe { uv_close(handle.0, on_wake_closed) };
        }
    }
}

/// Memory and data of a closed async handle.
unsafe extern "C" fn on_wake_closed(handle: *mut UvHandle) {
    // SAFETY: libuv calls this once, on the loop's thread, after the handle is closed: its data
    // is the strong count given in `Reactor::new`, and its memory the box allocated there.
    unsafe {
        let data = uv_handle_get_data(handle);
        if !data.is_null() {
            drop(Arc::from_raw(data as *const Shared));
        }
        let bytes = uv_handle_size(UV_ASYNC).div_ceil(8);
        let memory = std::ptr::slice_from_raw_parts_mut(handle.cast::<u64>(), bytes);
        drop(Box::from_raw(memory));
    }
}

/// Requests to watch new workers reached the loop's thread.
unsafe extern "C" fn on_wake(handle: *mut UvHandle) {
    // SAFETY: the data is the strong count given in `Reactor::new`, alive until the handle's
    // close callback, which cannot have run while the handle still calls back; we take a
    // count of our own from it.
    let shared = unsafe {
        let data = uv_handle_get_data(handle) as *const Shared;
        Arc::increment_strong_count(data);
        Arc::from_raw(data)
    };
    let waiting = std::mem::take(&mut *shared.pending.lock().unwrap_or_else(|p| p.into_inner()));
    for (key, fd) in waiting {
        start_poll(&shared, key, fd);
    }
}

/// One watched worker: the poll handle's memory, its context, and the descriptor to close once
/// the handle is.
struct PollCtx {
    shared: Arc<Shared>,
    key: u64,
    memory: Box<[u64]>,
    closing: Option<ChildStdout>,
}

fn start_poll(shared: &Arc<Shared>, key: u64, fd: RawFd) {
    let mut ctx = Box::new(PollCtx {
        shared: shared.clone(),
        key,
        memory: handle_memory(UV_POLL),
        closing: None,
    });
    let handle = ctx.memory.as_mut_ptr().cast::<UvHandle>();
    // SAFETY: on the loop's thread (the async callback); `handle` points to zeroed memory of
    // uv_handle_size(UV_POLL) bytes owned by `ctx`, which is leaked into the handle's data
    // until its close callback takes it back. The descriptor is the worker's stdout, which the
    // pool keeps open until `readable` hands it to us at the worker's end.
    let ok = unsafe {
        if uv_poll_init(shared.event_loop as *mut UvLoop, handle, fd) != 0 {
            false
        } else {
            uv_handle_set_data(handle, Box::into_raw(ctx) as *mut c_void);
            if uv_poll_start(handle, UV_READABLE, on_readable) != 0 {
                uv_close(handle, on_poll_closed);
                false
            } else {
                uv_unref(handle);
                true
            }
        }
    };
    if !ok {
        eprintln!("codemode-executor: Node's loop cannot watch worker {key}; it is replaced");
        if let Some(pool) = shared.pool.get() {
            pool.unwatchable(key);
        }
    }
}

unsafe extern "C" fn on_readable(handle: *mut UvHandle, _status: c_int, _events: c_int) {
    // SAFETY: the data is the PollCtx leaked in `start_poll`, alive until the close callback,
    // which cannot have run while the handle still calls back. Only this thread touches it.
    let ctx = unsafe { &mut *(uv_handle_get_data(handle) as *mut PollCtx) };
    let Some(pool) = ctx.shared.pool.get() else {
        return;
    };
    // A poll error (status < 0) is read as such by the read that follows.
    if let Readable::Ended(fd) = pool.readable(ctx.key) {
        ctx.closing = fd;
        // SAFETY: on the loop's thread; the handle is open and is closed once (no further
        // callback after uv_poll_stop); the close callback frees the context and then the
        // descriptor, after libuv stopped watching it.
        unsafe {
            uv_poll_stop(handle);
            uv_close(handle, on_poll_closed);
        }
    }
}

unsafe extern "C" fn on_poll_closed(handle: *mut UvHandle) {
    // SAFETY: libuv calls this once, after the handle is closed; its data is the PollCtx
    // leaked in `start_poll` (the handle's own memory is inside it, unused from now on).
    unsafe {
        let ctx = uv_handle_get_data(handle) as *mut PollCtx;
        if !ctx.is_null() {
            drop(Box::from_raw(ctx));
        }
    }
}

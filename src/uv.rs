//! Node's event loop reads the workers' output (`codemode_pool::Watch`): a frame wakes the JS
//! thread directly instead of a reader thread that then wakes it, one wake-up fewer per tool
//! call. libuv's poll handles watch each worker's stdout; an async handle carries requests to
//! watch new workers (a replacement is started on the pool's spawner thread) to the JS thread,
//! since libuv is not thread-safe.
//!
//! libuv's symbols come from the Node binary that loads the addon, like N-API's own; Node
//! exports them for addons (`napi_get_uv_event_loop` hands out its loop). Every handle is
//! unreferenced: an idle executor never keeps Node alive (`lib/executor-core.js`, `#holdLoop`,
//! holds the loop open while executions are in flight).
//!
//! Lifecycle: the handles close when the pool shuts down (the async handle) and when each worker
//! ends (its poll handle). An environment that goes away first (a worker thread ending without
//! `close()`) must find no handle open on its loop, so an async cleanup hook closes whatever is
//! left and tells Node once the last close callback has run.

use std::ffi::c_void;
use std::os::fd::RawFd;
use std::os::raw::c_int;
use std::process::ChildStdout;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use codemode_pool::{Pool, Readable, Watch};
use napi::sys::{napi_async_cleanup_hook_handle, Status as NapiStatus};
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

/// What the loop's callbacks share: the pool (set once it has started), the workers waiting to
/// be watched, and the handles' bookkeeping.
struct Shared {
    pool: OnceLock<Pool>,
    event_loop: usize,
    pending: Mutex<Vec<(u64, RawFd)>>,
    /// The async handle, while it is open (`None` once closed: nothing may send to it).
    wake: Mutex<Option<Handle>>,
    /// Touched on the loop's thread only (a mutex for `Sync`'s sake, never contended).
    handles: Mutex<Handles>,
}

#[derive(Default)]
struct Handles {
    /// Poll handles watching a worker.
    polls: Vec<Handle>,
    /// Handles whose close callback has not run yet (the async one and the polls).
    open: usize,
    /// The environment's cleanup hook, until it is removed (`finish`).
    hook: Option<CleanupHook>,
    /// The environment is going: no new handle, and the hook is removed once `open` is 0.
    torn_down: bool,
}

struct Handle(*mut UvHandle);
// SAFETY: the pointer is only dereferenced by libuv: uv_async_send, which libuv documents as
// callable from any thread, under the `wake` lock; everything else on the loop's thread.
unsafe impl Send for Handle {}

struct CleanupHook(napi_async_cleanup_hook_handle);
// SAFETY: an opaque token of Node's, passed back to napi_remove_async_cleanup_hook on the
// loop's thread only.
unsafe impl Send for CleanupHook {}

impl Shared {
    fn handles(&self) -> MutexGuard<'_, Handles> {
        self.handles.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(&self) -> MutexGuard<'_, Option<Handle>> {
        self.wake.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes the async handle, if it is open (on the loop's thread).
    fn close_wake(&self) {
        if let Some(handle) = self.wake().take() {
            // SAFETY: on the loop's thread; the handle is open (it was in `wake`) and is closed
            // once; its close callback frees its memory and the data's strong count.
            unsafe { uv_close(handle.0, on_wake_closed) };
        }
    }

    /// A close callback ran: once nothing is open and nothing more will open (the pool shut
    /// down, or the environment is going), the cleanup hook is removed and its count of
    /// `shared` released. The caller holds a count of its own.
    fn closed_one(self: &Arc<Self>) {
        let hook = {
            let mut h = self.handles();
            h.open = h.open.saturating_sub(1);
            let done = h.open == 0 && (h.torn_down || self.wake().is_none());
            if done {
                h.hook.take()
            } else {
                None
            }
        };
        if let Some(hook) = hook {
            // SAFETY: on the loop's thread; the token came from napi_add_async_cleanup_hook and
            // is removed once (taken out of `hook`).
            unsafe { napi::sys::napi_remove_async_cleanup_hook(hook.0) };
            // SAFETY: the hook's data was a strong count of `shared` (Reactor::new), given
            // back here exactly once; the caller's own count keeps it alive meanwhile.
            unsafe { drop(Arc::from_raw(Arc::as_ptr(self))) };
        }
    }
}

/// The watcher the pool is started with. Weak: the pool holds it, and `Shared` holds the pool.
pub struct Watcher(Weak<Shared>);

impl Watch for Watcher {
    fn watch(&self, key: u64, fd: RawFd) -> bool {
        let Some(shared) = self.0.upgrade() else {
            return false;
        };
        let wake = shared.wake();
        let Some(handle) = wake.as_ref() else {
            return false;
        };
        shared
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((key, fd));
        // SAFETY: the handle is open (it is in `wake`, whose lock we hold; see Handle).
        unsafe { uv_async_send(handle.0) == 0 }
    }
}

/// The loop side of a watched pool, owned by the `NativePool`.
pub struct Reactor {
    shared: Arc<Shared>,
}

impl Reactor {
    /// Sets up the async handle on the JS thread's loop and the environment's cleanup hook;
    /// returns the watcher to start the pool with. Call `attach` with the pool once it started.
    pub fn new(env: &Env) -> Result<(Reactor, Watcher), String> {
        let mut event_loop = std::ptr::null_mut();
        // SAFETY: env is the live environment of the call we are in; the function writes the
        // loop pointer into our local.
        let status = unsafe { napi::sys::napi_get_uv_event_loop(env.raw(), &mut event_loop) };
        if status != NapiStatus::napi_ok || event_loop.is_null() {
            return Err("Node gave no event loop to watch the workers on".into());
        }
        let shared = Arc::new(Shared {
            pool: OnceLock::new(),
            event_loop: event_loop as usize,
            pending: Mutex::new(Vec::new()),
            wake: Mutex::new(None),
            handles: Mutex::new(Handles::default()),
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
        *shared.wake() = Some(Handle(handle));
        shared.handles().open = 1;
        let mut hook = std::ptr::null_mut();
        let data = Arc::into_raw(shared.clone()) as *mut c_void;
        // SAFETY: env is live; `data` is a strong count of `shared` that the hook or
        // `closed_one` gives back exactly once; Node writes the removal token into our local.
        let status = unsafe {
            napi::sys::napi_add_async_cleanup_hook(env.raw(), Some(on_teardown), data, &mut hook)
        };
        if status != NapiStatus::napi_ok {
            // SAFETY: the count given above was not taken by Node.
            unsafe { drop(Arc::from_raw(data as *const Shared)) };
            shared.close_wake();
            return Err("Node refused a cleanup hook for the executor's event-loop handles".into());
        }
        shared.handles().hook = Some(CleanupHook(hook));
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
        self.shared.close_wake();
    }
}

/// The environment is going (a worker thread ends, Node exits): close every handle; the last
/// close callback removes the hook, which lets Node close its loop.
unsafe extern "C" fn on_teardown(_hook: napi_async_cleanup_hook_handle, data: *mut c_void) {
    // SAFETY: `data` is the strong count given in Reactor::new, still held (only `closed_one`
    // gives it back, once the hook is removed, which has not happened since Node calls us). We
    // take a count of our own for the duration of this call.
    let shared = unsafe {
        let data = data as *const Shared;
        Arc::increment_strong_count(data);
        Arc::from_raw(data)
    };
    let polls = {
        let mut h = shared.handles();
        h.torn_down = true;
        std::mem::take(&mut h.polls)
    };
    shared.close_wake();
    for poll in polls {
        // SAFETY: on the loop's thread; each handle is open (it was in `polls`, which only
        // holds open ones) and is closed once; its close callback frees its context.
        unsafe {
            uv_poll_stop(poll.0);
            uv_close(poll.0, on_poll_closed);
        }
    }
    // Nothing was open: no close callback will run to remove the hook.
    shared.handles().open += 1;
    shared.closed_one();
}

/// Memory and data of a closed async handle.
unsafe extern "C" fn on_wake_closed(handle: *mut UvHandle) {
    // SAFETY: libuv calls this once, on the loop's thread, after the handle is closed: its data
    // is the strong count given in `Reactor::new`, and its memory the box allocated there.
    let shared = unsafe {
        let data = uv_handle_get_data(handle) as *const Shared;
        let bytes = uv_handle_size(UV_ASYNC).div_ceil(8);
        let memory = std::ptr::slice_from_raw_parts_mut(handle.cast::<u64>(), bytes);
        drop(Box::from_raw(memory));
        Arc::from_raw(data)
    };
    shared.closed_one();
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
    let torn_down = shared.handles().torn_down;
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
    let ok = !torn_down
        && unsafe {
            if uv_poll_init(shared.event_loop as *mut UvLoop, handle, fd) != 0 {
                false
            } else {
                uv_handle_set_data(handle, Box::into_raw(ctx) as *mut c_void);
                shared.handles().open += 1;
                if uv_poll_start(handle, UV_READABLE, on_readable) != 0 {
                    uv_close(handle, on_poll_closed);
                    false
                } else {
                    uv_unref(handle);
                    shared.handles().polls.push(Handle(handle));
                    true
                }
            }
        };
    if !ok {
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
        ctx.shared.handles().polls.retain(|h| h.0 != handle);
        // SAFETY: on the loop's thread; the handle is open and is closed once (no further
        // callback after uv_poll_stop, and it left `polls`, so teardown will not close it
        // again); the close callback frees the context and then the descriptor, after libuv
        // stopped watching it.
        unsafe {
            uv_poll_stop(handle);
            uv_close(handle, on_poll_closed);
        }
    }
}

unsafe extern "C" fn on_poll_closed(handle: *mut UvHandle) {
    // SAFETY: libuv calls this once, after the handle is closed; its data is the PollCtx
    // leaked in `start_poll` (the handle's own memory is inside it, unused from now on).
    let ctx = unsafe { Box::from_raw(uv_handle_get_data(handle) as *mut PollCtx) };
    let shared = ctx.shared.clone();
    drop(ctx);
    shared.closed_one();
}

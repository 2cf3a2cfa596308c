//! The daemon's loop reads the workers' output (`codemode_pool::Watch`), as Node's loop does
//! in the addon: a worker's frame wakes the daemon's thread, which acts on it (a tool call goes
//! to its connection's socket), instead of a reader thread that must then wake the daemon's
//! thread. One wake-up fewer per frame a client waits for: each is tens of microseconds on a
//! machine whose idle CPUs halt (a virtual machine's).
//!
//! The watcher holds the pool weakly (the pool holds the watcher): the daemon's `Shared` keeps
//! the slot it is set in. Workers are started only while the pool lives, and the pool shuts
//! down (in the drain) before the daemon's thread returns; a worker the watcher is asked for
//! after that is refused, and the pool reads it on a thread of its own.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use codemode_pool::{Pool, Readable, Watch};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::runtime::Handle;

/// Where the daemon keeps its pool for the watcher (set once the pool has started).
pub(crate) type PoolSlot = Arc<OnceLock<Pool>>;

/// The watcher the daemon's pool starts with.
pub(crate) struct LoopWatch {
    runtime: Handle,
    pool: Weak<OnceLock<Pool>>,
    /// The runtime stopped: a task spawned now would never run.
    stopped: AtomicBool,
}

impl LoopWatch {
    pub(crate) fn new(runtime: Handle, pool: &PoolSlot) -> LoopWatch {
        LoopWatch {
            runtime,
            pool: Arc::downgrade(pool),
            stopped: AtomicBool::new(false),
        }
    }

    /// The runtime stopped (the daemon's thread returned): workers started from now on are
    /// read by threads of their own.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}

/// A worker's output descriptor, owned by the pool until `readable` hands it back.
struct Output(RawFd);

impl AsRawFd for Output {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Watch for LoopWatch {
    fn watch(&self, key: u64, fd: RawFd) -> bool {
        if self.stopped.load(Ordering::SeqCst) {
            return false;
        }
        self.runtime.spawn(read(self.pool.clone(), key, fd));
        true
    }
}

/// The pool, once it has started; `None` once it is gone.
async fn started(slot: &Weak<OnceLock<Pool>>) -> Option<Pool> {
    loop {
        let slot = slot.upgrade()?;
        if let Some(pool) = slot.get() {
            return Some(pool.clone());
        }
        drop(slot);
        // The pool reaches its watcher while it starts, before it is set in the slot.
        tokio::task::yield_now().await;
    }
}

/// Reads worker `key`'s output on the daemon's thread whenever it is readable, until it ends.
async fn read(slot: Weak<OnceLock<Pool>>, key: u64, fd: RawFd) {
    let Some(pool) = started(&slot).await else {
        return;
    };
    // SAFETY: `fd` is worker `key`'s output pipe, which the pool keeps open (and means nothing
    // else by) until `readable` hands it back as `Ended`; the registration is dropped before
    // then (below, and before `unwatchable` hands the pipe to a thread), and `Output` always
    // returns this one descriptor.
    let registered = unsafe { AsyncFd::register_with_interest(Output(fd), Interest::READABLE) };
    let Ok(output) = registered else {
        return pool.unwatchable(key);
    };
    loop {
        let Ok(mut ready) = output.readable().await else {
            drop(output);
            return pool.unwatchable(key);
        };
        match pool.readable(key) {
            Readable::Open => {
                // The pool reads a bounded amount per call: readiness is cleared only once the
                // pipe is empty (a later write sets it again).
                if !codemode_pool::readable_now(fd) {
                    ready.clear_ready();
                }
            }
            Readable::Ended(stdout) => {
                drop(ready);
                drop(output);
                drop(stdout);
                return;
            }
        }
    }
}

//! What the fake-worker scenarios (fake.rs, hostile.rs) share: submitting a run, answering a
//! routed fetch, and the two ways a pool's workers' output is read, for the scenarios to run
//! under each: reader threads (`Pool::start`: the daemon), and the host's event loop
//! (`Pool::start_watched`: the addon, src/uv.rs). The loop here is the addon's without libuv:
//! a thread that waits on every watched descriptor with poll(2) and calls `Pool::readable`
//! when one is readable, until it says the worker ended, as the addon's `on_readable` does.
//! fake.rs and hostile.rs run under threads; fake_polled.rs and hostile_polled.rs run the same
//! scenarios under this loop.

use std::io::ErrorKind;
use std::ops::Deref;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;

use codemode_pool::protocol::{Failure, RunOutcome, WireResponse};
use codemode_pool::{ExecSpec, FetchCall, Host, Pool, PoolOptions, Readable, Watch};

/// Where a run's completion arrives.
pub type Done = std::sync::mpsc::Receiver<Result<RunOutcome, Failure>>;

/// Queues `spec` for `host`: its execution id and where its completion arrives, or the failure
/// it was refused with at once.
pub fn submit(pool: &Pool, host: Arc<dyn Host>, spec: ExecSpec) -> Result<(u64, Done), Failure> {
    let (tx, rx) = std::sync::mpsc::channel();
    let done = Box::new(move |_, r| {
        let _ = tx.send(r);
    });
    let id = pool.execute(spec, host, done)?;
    Ok((id, rx))
}

/// Answers a routed fetch with `201 fetched URL`, from another thread, as a host's event loop
/// would.
pub fn answer_fetch_later(pool: &Pool, call: FetchCall) {
    let pool = pool.clone();
    std::thread::spawn(move || {
        let response = WireResponse {
            status: 201,
            body: Some(format!("fetched {}", call.request.url).into_bytes()),
            ..Default::default()
        };
        pool.answer_fetch(call.exec_id, call.call_id, Ok(response));
    });
}

/// Which reader a test pool uses. Each test binary names one (`READER`), so the other is
/// unused in it.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// A thread per worker blocks on its output.
    Threads,
    /// One poll(2) loop reads every worker through `Pool::readable`.
    Polled,
}

/// The options the scenarios share: `workers` workers of `worker_path`, 64 MiB, a 5-minute
/// idle bound for retained executions.
pub fn options(
    workers: usize,
    worker_path: PathBuf,
    queue_bound: usize,
    timeout_ms: u64,
) -> PoolOptions {
    PoolOptions {
        workers,
        worker_path,
        queue_bound,
        timeout_ms,
        memory_limit_mib: 64,
        handles_idle_timeout_ms: 300_000,
        approval_key: None,
        hops: false,
        tenants: Default::default(),
    }
}

/// A pool under test, and the loop that reads its workers when it is polled (stopped when this
/// is dropped; the pool itself lives on in its clones).
pub struct TestPool {
    pool: Pool,
    polled: Option<(Arc<Shared>, Option<JoinHandle<()>>)>,
}

impl Deref for TestPool {
    type Target = Pool;

    fn deref(&self) -> &Pool {
        &self.pool
    }
}

impl Drop for TestPool {
    fn drop(&mut self) {
        if let Some((shared, thread)) = self.polled.as_mut() {
            shared.stop.store(true, Ordering::SeqCst);
            shared.wake();
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
            // The scenario ran on the loop's reader: the workers' frames came through it.
            if !std::thread::panicking() {
                assert!(
                    shared.reads.load(Ordering::SeqCst) > 0,
                    "no worker was polled"
                );
            }
        }
    }
}

/// Starts a pool read by `reader`.
pub fn start(opts: PoolOptions, reader: Reader) -> TestPool {
    if reader == Reader::Threads {
        let pool = Pool::start(opts).expect("pool starts");
        return TestPool { pool, polled: None };
    }
    let (wake_read, wake_write) = pipe();
    let shared = Arc::new(Shared {
        pool: OnceLock::new(),
        pending: Mutex::new(Vec::new()),
        wake_write,
        stop: AtomicBool::new(false),
        reads: AtomicUsize::new(0),
    });
    let watcher = Arc::new(Watcher(Arc::downgrade(&shared)));
    let looping = shared.clone();
    let thread = std::thread::Builder::new()
        .name("poll-loop".into())
        .spawn(move || poll_loop(&looping, wake_read))
        .expect("the poll loop starts");
    let pool = Pool::start_watched(opts, watcher).expect("pool starts");
    let _ = shared.pool.set(pool.clone());
    // Workers that asked to be watched before the loop had the pool are read from now on.
    shared.wake();
    TestPool {
        pool,
        polled: Some((shared, Some(thread))),
    }
}

/// What the pool's watcher and the loop share.
struct Shared {
    /// Set once the pool started: the loop reads nothing before.
    pool: OnceLock<Pool>,
    /// Descriptors the pool asked the loop to watch, not yet taken by it.
    pending: Mutex<Vec<(u64, RawFd)>>,
    /// Wakes the loop (a new descriptor, or the end).
    wake_write: OwnedFd,
    stop: AtomicBool,
    /// `Pool::readable` calls so far.
    reads: AtomicUsize,
}

impl Shared {
    fn wake(&self) {
        // SAFETY: writes one byte from a live local to the pipe's write end, which `self` owns.
        unsafe { libc::write(self.wake_write.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }
}

/// Weak, as the addon's: the pool holds the watcher, and the loop holds the pool.
struct Watcher(Weak<Shared>);

impl Watch for Watcher {
    fn watch(&self, key: u64, fd: RawFd) -> bool {
        let Some(shared) = self.0.upgrade() else {
            return false;
        };
        shared.pending.lock().unwrap().push((key, fd));
        shared.wake();
        true
    }
}

/// A close-on-exec pipe (read end, write end); the read end does not block.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two new descriptors into the array we pass.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just created and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// The loop: waits on the wake pipe and every watched descriptor, and hands each readable one
/// to `Pool::readable`; a worker's descriptor is closed once that says it ended.
fn poll_loop(shared: &Shared, wake_read: OwnedFd) {
    let mut watched: Vec<(u64, RawFd)> = Vec::new();
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let pool = shared.pool.get();
        if pool.is_some() {
            watched.append(&mut shared.pending.lock().unwrap());
        }
        let mut fds: Vec<libc::pollfd> = std::iter::once(wake_read.as_raw_fd())
            .chain(watched.iter().map(|(_, fd)| *fd))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structures for the call's length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(e.kind(), ErrorKind::Interrupted, "poll: {e}");
            continue;
        }
        if fds[0].revents != 0 {
            let mut sink = [0u8; 64];
            // SAFETY: reads into a live local buffer of its length from the wake pipe's
            // non-blocking read end, which this function owns.
            while unsafe { libc::read(wake_read.as_raw_fd(), sink.as_mut_ptr().cast(), 64) } > 0 {}
        }
        let Some(pool) = pool else { continue };
        let ready: Vec<u64> = fds[1..]
            .iter()
            .zip(&watched)
            .filter(|(p, _)| p.revents != 0)
            .map(|(_, (key, _))| *key)
            .collect();
        for key in ready {
            shared.reads.fetch_add(1, Ordering::SeqCst);
            if let Readable::Ended(stdout) = pool.readable(key) {
                watched.retain(|(k, _)| *k != key);
                drop(stdout);
            }
        }
    }
}

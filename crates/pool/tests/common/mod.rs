//! What several pool test files share: a pool whose workers are all ready.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use codemode_pool::{Pool, PoolOptions};

/// A pool of `workers` workers of `worker_path` (queue bound 1, 10 s, 64 MiB), returned once
/// every one of them is idle (at most 30 s).
pub fn ready_pool(worker_path: PathBuf, workers: usize) -> Pool {
    let pool = Pool::start(PoolOptions {
        workers,
        worker_path,
        queue_bound: 1,
        timeout_ms: 10_000,
        memory_limit_mib: 64,
        handles_idle_timeout_ms: 300_000,
        approval_key: None,
        hops: false,
        tenants: Default::default(),
    })
    .expect("pool starts");
    let until = Instant::now() + Duration::from_secs(30);
    while pool.stats().idle < workers {
        assert!(Instant::now() < until, "the workers never became ready");
        std::thread::sleep(Duration::from_millis(5));
    }
    pool
}

//! Under a root host, workers run as an unprivileged uid and gid (65534) with no supplementary
//! groups, and under a bound on the tasks (threads) of that uid. A host that is not root keeps
//! its own uid for its workers (nothing else is possible without privileges).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use codemode_pool::protocol::limits;
use codemode_pool::{Pool, PoolOptions};

fn pool_of(worker_path: PathBuf, workers: usize) -> Pool {
    let pool = Pool::start(PoolOptions {
        workers,
        worker_path,
        queue_bound: 1,
        timeout_ms: 10_000,
        memory_limit_mib: 64,
        handles_idle_timeout_ms: 300_000,
    })
    .expect("pool starts");
    let until = Instant::now() + Duration::from_secs(30);
    while pool.stats().idle < workers {
        assert!(Instant::now() < until, "the workers never became ready");
        std::thread::sleep(Duration::from_millis(5));
    }
    pool
}

/// The value of `field` in /proc/<pid>/status, whitespace-normalised.
fn status(pid: u32, field: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in the status of {pid}"));
    line[field.len() + 1..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The soft and hard limit of `name` in /proc/<pid>/limits.
fn limit(pid: u32, name: &str) -> (String, String) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text.lines().find(|l| l.starts_with(name)).unwrap();
    let mut fields = line[name.len()..].split_whitespace();
    let soft = fields.next().unwrap().to_string();
    let hard = fields.next().unwrap().to_string();
    (soft, hard)
}

#[test]
fn workers_of_a_root_host_run_unprivileged_with_a_bound_on_their_threads() {
    let real =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/codemode-worker");
    let fake = PathBuf::from(env!("CARGO_BIN_EXE_codemode-fake-worker"));
    // SAFETY: geteuid and getegid have no arguments and cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    for path in [fake, real.clone()] {
        let workers = 2;
        let pool = pool_of(path.clone(), workers);
        let what = path.display();
        for pid in pool.worker_pids() {
            if uid == 0 {
                assert_eq!(status(pid, "Uid"), "65534 65534 65534 65534", "{what}");
                assert_eq!(status(pid, "Gid"), "65534 65534 65534 65534", "{what}");
                assert_eq!(status(pid, "Groups"), "", "{what}");
                // Root's capabilities went with the uid.
                assert_eq!(status(pid, "CapEff"), "0000000000000000", "{what}");
                assert_eq!(status(pid, "CapPrm"), "0000000000000000", "{what}");
                let tasks = (limits::WORKER_THREADS * limits::WORKER_UID_WORKERS).to_string();
                assert_eq!(
                    limit(pid, "Max processes"),
                    (tasks.clone(), tasks),
                    "{what}"
                );
            } else {
                assert_eq!(status(pid, "Uid"), format!("{uid} {uid} {uid} {uid}"));
                assert_eq!(status(pid, "Gid"), format!("{gid} {gid} {gid} {gid}"));
            }
            if path == real {
                // Every thread a worker runs is there once it is ready; the jail adds none.
                let threads: u64 = status(pid, "Threads").parse().unwrap();
                assert!(threads <= limits::WORKER_THREADS, "{threads} threads");
                assert_eq!(status(pid, "Seccomp"), "2");
            }
        }
        pool.shutdown(Duration::from_secs(2));
    }
}

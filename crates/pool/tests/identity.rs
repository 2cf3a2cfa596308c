//! Under a root host, workers run as an unprivileged uid and gid (65534) with no supplementary
//! groups, and under a bound on the tasks (threads) of that uid. A host that is not root keeps
//! its own uid for its workers (nothing else is possible without privileges).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use codemode_pool::protocol::limits;
use codemode_pool::Pool;

fn pool_of(worker_path: PathBuf, workers: usize) -> Pool {
    common::ready_pool(worker_path, workers)
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

/// A root host installed where the workers' uid cannot look (under /root, or a private temp
/// dir, mode 0700): the worker is executed through a descriptor the host opened, so it still
/// starts, as that uid.
#[test]
fn a_worker_installed_under_a_private_directory_starts_under_a_root_host() {
    use std::os::unix::fs::PermissionsExt;
    let fake = PathBuf::from(env!("CARGO_BIN_EXE_codemode-fake-worker"));
    let dir = std::env::temp_dir().join(format!("codemode-private-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("inner")).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let copy = dir.join("inner/codemode-fake-worker");
    std::fs::copy(&fake, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pool = pool_of(copy, 1);
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let pid = pool.worker_pids()[0];
        assert_eq!(status(pid, "Uid"), "65534 65534 65534 65534");
    }
    pool.shutdown(Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A worker binary still open for writing somewhere (the host's own copy or install of it not
/// yet closed, or a child another thread of the host forked in that instant, holding the
/// writer's descriptor until its own exec) cannot be executed: `ETXTBSY`. The window closes by
/// itself, so the pool tries again for a short while instead of failing the start.
#[test]
fn a_worker_binary_still_open_for_writing_for_a_moment_starts_once_it_is_closed() {
    use std::os::unix::fs::PermissionsExt;
    let fake = PathBuf::from(env!("CARGO_BIN_EXE_codemode-fake-worker"));
    let dir = std::env::temp_dir().join(format!("codemode-busy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.join("codemode-fake-worker");
    std::fs::copy(&fake, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let writer = std::fs::OpenOptions::new().write(true).open(&copy).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(40));
        drop(writer);
    });
    let pool = pool_of(copy, 1);
    closer.join().unwrap();
    assert_eq!(pool.worker_pids().len(), 1);
    pool.shutdown(Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(&dir);
}

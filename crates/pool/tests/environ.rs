//! Workers start in `/` with only `CODEMODE_MEMORY_LIMIT_MIB` and, when the host has them, its
//! time zone and locale (`TZ`, `LANG`, `LANGUAGE`, `LC_ALL`, which shape what `Date` and `Intl`
//! show): the host's secrets (model API keys, database passwords) never sit in a worker's
//! memory.
//! One test in its own binary: it sets a variable in this process.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use codemode_pool::Pool;

const MARKER: &str = "CODEMODE_TEST_HOST_SECRET";

fn workers_of(worker_path: PathBuf) -> (Pool, Vec<u32>) {
    let pool = common::ready_pool(worker_path, 1);
    let pids = pool.worker_pids();
    (pool, pids)
}

fn environment(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).expect("the host reads the environ");
    raw.split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

#[test]
fn a_worker_sees_none_of_the_host_s_environment_and_works_in_the_root() {
    // The only test of this binary: no other thread reads the environment meanwhile.
    std::env::set_var(MARKER, "sk-do-not-leak");
    std::env::set_var("TZ", "UTC");
    let real =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/codemode-worker");
    let fake = PathBuf::from(env!("CARGO_BIN_EXE_codemode-fake-worker"));
    for path in [fake, real] {
        let (pool, pids) = workers_of(path.clone());
        for pid in pids {
            let env = environment(pid);
            assert!(
                !env.iter().any(|v| v.starts_with(MARKER)
                    || v.starts_with("PATH=")
                    || v.starts_with("HOME=")),
                "{}: {env:?}",
                path.display()
            );
            let names: Vec<&str> = env.iter().filter_map(|v| v.split('=').next()).collect();
            let passed = [
                "CODEMODE_MEMORY_LIMIT_MIB",
                "TZ",
                "LANG",
                "LANGUAGE",
                "LC_ALL",
            ];
            assert!(
                names.iter().all(|n| passed.contains(n)),
                "{}: {names:?}",
                path.display()
            );
            assert!(names.contains(&"TZ") && names.contains(&"CODEMODE_MEMORY_LIMIT_MIB"));
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
            assert_eq!(cwd, PathBuf::from("/"), "{}", path.display());
        }
        pool.shutdown(Duration::from_secs(2));
    }
}

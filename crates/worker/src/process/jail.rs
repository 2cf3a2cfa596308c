//! The worker jail (Linux). V8 bugs are exploited in the wild, so the process is the real
//! boundary: after V8 is initialised and before any untrusted code runs, the worker
//!
//! - closes every inherited descriptor except its three pipes and the control pipe,
//! - caps resources: no core dumps, a handful of descriptors,
//! - sets `no_new_privs` (no privilege gain through exec, and a prerequisite of seccomp),
//! - installs a seccomp filter on every thread that allows exactly the system calls a jailed
//!   worker makes ([`ALLOWED`]) and refuses every other with EPERM, the way browsers and
//!   workerd confine their renderers. A few are allowed only with harmless arguments
//!   ([`conditional`]): signals only to this process, `prlimit64` only to read its own limits,
//!   `fcntl` only to read flags (never to make the kernel signal someone: `F_SETOWN`,
//!   `F_SETSIG`, `O_ASYNC`), `prctl` only for thread names (never to clear the death signal),
//!   `madvise` never to poison pages, clocks only this process's; and no new thread at all.
//!
//! Refused with EPERM rather than killed: V8 and glibc probe a few files after the jail
//! (`/proc/self/maps` for a thread's stack bounds, `/dev/urandom` as a fallback) and take the
//! error path when refused, as they always have here. A kill would turn a missed benign call
//! into a lost worker; a refusal turns it into a failed call, and a compromised worker still
//! gets nothing outside the list.
//!
//! The list was observed, not guessed: every system call workers made after entering the jail
//! while the whole test suite ran under `strace -f` (vitest with its WPT data and the
//! differential testbed), plus the calls of the paths a suite rarely takes (V8's fatal error
//! and abort, `std::thread::sleep`, a thread's exit). To extend it: run
//! `bash scripts/jail-trace.sh` (the suite with every worker under strace), which prints the
//! calls made after the jail that were refused; add the ones that belong to V8, glibc or the
//! worker (never a file, socket, process or privilege call) to [`ALLOWED`] with the reason, and
//! run `codemode-worker --jail-selftest` and the suite.
//!
//! The arguments [`conditional`] allows were read off the same trace: once jailed, workers made
//! no `fcntl` and no `clone` at all, `prctl` only with `PR_SET_NAME` (a thread started just
//! before the jail naming itself), `madvise` with `MADV_DONTNEED` and `MADV_DONTFORK`, and
//! system-call clocks only `CLOCK_THREAD_CPUTIME_ID` (the others are read through the vDSO).

pub mod selftest;

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// System calls a jailed worker may make, whatever their arguments (see [`conditional`] for
/// those allowed only with some arguments).
#[cfg(target_os = "linux")]
const ALLOWED: &[i64] = &[
    // Its pipes: frames in and out, the control pipe's poll, diagnostics on stderr.
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_close,
    libc::SYS_fstat,
    libc::SYS_lseek,
    // Memory: V8's heap, code space and cage, the allocator, memory protection keys.
    libc::SYS_brk,
    libc::SYS_munmap,
    libc::SYS_mprotect,
    libc::SYS_pkey_mprotect,
    libc::SYS_pkey_alloc,
    libc::SYS_pkey_free,
    libc::SYS_membarrier,
    // Threads and their synchronisation (V8's platform threads, the cancel thread; all of them
    // started before the jail, which lets none start after it).
    libc::SYS_futex,
    libc::SYS_set_robust_list,
    libc::SYS_rseq,
    libc::SYS_sched_yield,
    libc::SYS_sched_getaffinity,
    libc::SYS_getcpu,
    libc::SYS_gettid,
    libc::SYS_getpid,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_restart_syscall,
    // Time (timers, the host's deadline), randomness. Clocks are in `conditional`.
    libc::SYS_nanosleep,
    libc::SYS_gettimeofday,
    libc::SYS_getrandom,
    libc::SYS_getrusage,
    // Signals: V8's fatal-error path and abort, alternate stacks.
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_sigaltstack,
];

/// Calls allowed only with these arguments (each rule lists conditions that must all hold; a
/// call passes when one of its rules does). Every other argument is refused with EPERM, like
/// an unlisted call:
///
/// - no `clone`/`clone3` at all: every thread a worker runs (V8's platform pool, at most 16,
///   created with the platform; the main and cancel threads) exists before the jail, and the
///   suite traced none started after it. So a compromised worker cannot add a thread: its
///   thread count is bounded where it stands, whatever its uid;
/// - signals only to this process (`kill`, `tgkill`);
/// - a thread's scheduling policy and priority only of this process's own threads
///   (`sched_getscheduler`, `sched_getparam`);
/// - `prlimit64` only to read, and only this process's limits;
/// - `fcntl` only to read a descriptor's flags (`F_GETFD`, `F_GETFL`). Its other commands
///   reach outside: `F_SETOWN`/`F_SETOWN_EX` with `F_SETSIG` and `O_ASYNC` (`F_SETFL`) make
///   the kernel send any signal, SIGKILL included, to any process the worker names each time
///   the host writes to the worker's pipe (signals by proxy); leases and directory notices
///   signal their holder too, and a pipe's size is kernel memory;
/// - `prctl` only to name and read a thread's name (V8 and std name their threads as they
///   start, which may fall after the jail). Refused: `PR_SET_PDEATHSIG` (clearing it lets a
///   worker outlive the host), `PR_SET_DUMPABLE`, `PR_SET_PTRACER` and the rest;
/// - `mmap` only for private mappings that do not grow down (`RLIMIT_DATA`, the memory ceiling,
///   counts neither shared nor stack-like mappings), and no `mremap` at all;
/// - `madvise` only with advice below `MADV_HWPOISON`: poisoning and soft-offlining take
///   physical pages from the whole machine;
/// - clocks only by their standard ids (`clock_gettime`, `clock_getres`, `clock_nanosleep`):
///   a negative id names another process's or thread's CPU clock, a view of what it does.
#[cfg(target_os = "linux")]
fn conditional(pid: u32, threads: &[u64]) -> Result<Vec<(i64, Vec<SeccompRule>)>, String> {
    use SeccompCmpArgLen::{Dword, Qword};
    use SeccompCmpOp::{Eq, Lt, MaskedEq};
    let rule = |conditions: Vec<(u8, SeccompCmpOp, u64)>| {
        conditions
            .into_iter()
            // Every argument tested is an int or a pid (32 bits); its upper half is ignored,
            // as the kernel ignores it.
            .map(|(arg, op, value)| SeccompCondition::new(arg, Dword, op, value))
            .collect::<Result<Vec<_>, _>>()
            .and_then(SeccompRule::new)
            .map_err(|e| format!("{e}"))
    };
    let own = u64::from(pid);
    let values = |arg: u8, values: &[u64]| {
        values
            .iter()
            .map(|&v| rule(vec![(arg, Eq, v)]))
            .collect::<Result<Vec<_>, _>>()
    };
    // The kernel's clock ids run from 0 to MAX_CLOCKS (16); CPU clocks of a pid are negative.
    let standard_clock = || Ok::<_, String>(vec![rule(vec![(0, Lt, 16)])?]);
    Ok(vec![
        // kill(pid, sig) and tgkill(tgid, tid, sig) name this process.
        (libc::SYS_kill, values(0, &[own])?),
        // A thread's scheduling policy and priority, read by V8's mutexes (its abseil logs
        // "pthread_getschedparam failed" when refused): only this process's own threads, every
        // one of which exists before the jail (`threads`; 0 is the caller), never another
        // process's (reading them would also tell which pids exist).
        (libc::SYS_sched_getscheduler, values(0, threads)?),
        (libc::SYS_sched_getparam, values(0, threads)?),
        (libc::SYS_tgkill, values(0, &[own])?),
        // prlimit64(pid, resource, new, old): pid 0 is this process; no new limit. `new` is a
        // pointer: all 64 bits are compared, or a limit at a 4 GiB-aligned address would pass
        // as a null one and raise the memory ceiling.
        (libc::SYS_prlimit64, {
            let read_only = |pid: u64| {
                SeccompRule::new(vec![
                    SeccompCondition::new(0, Dword, Eq, pid).map_err(|e| format!("{e}"))?,
                    SeccompCondition::new(2, Qword, Eq, 0).map_err(|e| format!("{e}"))?,
                ])
                .map_err(|e| format!("{e}"))
            };
            vec![read_only(0)?, read_only(own)?]
        }),
        (
            libc::SYS_fcntl,
            values(1, &[libc::F_GETFD as u64, libc::F_GETFL as u64])?,
        ),
        (
            libc::SYS_prctl,
            values(0, &[libc::PR_SET_NAME as u64, libc::PR_GET_NAME as u64])?,
        ),
        (
            libc::SYS_madvise,
            vec![rule(vec![(2, Lt, libc::MADV_HWPOISON as u64)])?],
        ),
        // mremap is not allowed at all: growing the stack's mapping (or any growing-down one)
        // with it makes memory RLIMIT_DATA does not count; glibc's realloc falls back to a new
        // allocation and a copy when it is refused, and V8 remaps nothing once started.
        // mmap(addr, len, prot, flags, fd, off): private mappings only, never one that grows
        // down. The worker's memory ceiling is RLIMIT_DATA (the heap sandbox's reservation rules
        // out RLIMIT_AS), which counts private writable memory and neither shared mappings nor
        // stack-like ones: without this rule a compromised worker could map and touch gigabytes
        // of MAP_SHARED or MAP_GROWSDOWN anonymous memory past its ceiling. V8, glibc and the
        // worker map only private memory once jailed (threads' stacks are made before it).
        (
            libc::SYS_mmap,
            vec![rule(vec![(
                3,
                MaskedEq((libc::MAP_SHARED | libc::MAP_GROWSDOWN) as u64),
                0,
            )])?],
        ),
        (libc::SYS_clock_gettime, standard_clock()?),
        (libc::SYS_clock_getres, standard_clock()?),
        (libc::SYS_clock_nanosleep, standard_clock()?),
    ])
}

/// The descriptors a worker keeps: stdin, stdout, stderr and the control pipe.
const KEEP_FDS: i32 = 4;

/// Closes inherited descriptors (a host may leak some without close-on-exec).
pub fn close_inherited_fds() {
    // SAFETY: close_range only closes descriptors; every one at or above KEEP_FDS is foreign.
    let r = unsafe { libc::syscall(libc::SYS_close_range, KEEP_FDS as u32, u32::MAX, 0u32) };
    if r != 0 {
        // Kernels before 5.9: close them one by one.
        for fd in KEEP_FDS..4096 {
            // SAFETY: as above; closing a descriptor that is not open is a harmless EBADF.
            unsafe { libc::close(fd) };
        }
    }
}

/// A filter that gives `matched` to the calls in `rules` and `otherwise` to the rest.
fn filter(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    otherwise: SeccompAction,
    matched: SeccompAction,
) -> Result<BpfProgram, String> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| format!("unsupported architecture: {e:?}"))?;
    SeccompFilter::new(rules, otherwise, matched, arch)
        .and_then(|f| f.try_into())
        .map_err(|e| format!("{e}"))
}

/// Applies rlimits, no_new_privs and the seccomp filters to the whole process.
/// Address space a worker may map after the jail closes, beyond what it holds then: more than
/// the largest memory ceiling (256 MiB + 3 x 2048 MiB, crates/pool `memory_ceiling`), since V8's
/// heaps and buffers live in the sandbox reserved before it, and other mappings are the
/// ceiling's.
const ADDRESS_HEADROOM: u64 = 8 << 30;

/// This process's address space now, in bytes (`VmSize` of `/proc/self/status`), read before
/// the jail, which opens no file.
fn address_space() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// The ids of this process's threads, 0 (the calling thread) and the pid among them: read from
/// `/proc/self/task` before the jail, which lets no thread start after it and no file open.
fn own_threads() -> Vec<u64> {
    let mut ids = vec![0, u64::from(std::process::id())];
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) {
                if !ids.contains(&tid) {
                    ids.push(tid);
                }
            }
        }
    }
    ids
}

pub fn enter() -> Result<(), String> {
    let set_limit = |resource, value: libc::rlim_t| {
        let lim = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(resource, &lim) } != 0 {
            return Err(format!("setrlimit: {}", std::io::Error::last_os_error()));
        }
        Ok(())
    };
    set_limit(libc::RLIMIT_CORE, 0)?;
    set_limit(libc::RLIMIT_NOFILE, 64)?;
    // Address space: what V8 reserved at start (the heap sandbox, ~1.4 TiB) plus room for every
    // run's memory (ADDRESS_HEADROOM). RLIMIT_DATA, the pool's ceiling, counts private writable
    // memory only; this bounds the rest a compromised worker could map (read-only mappings,
    // whose page tables are kernel memory) to the headroom.
    if let Some(size) = address_space() {
        set_limit(libc::RLIMIT_AS, size.saturating_add(ADDRESS_HEADROOM))?;
    }

    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
    }

    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALLOWED.iter().map(|&nr| (nr, Vec::new())).collect();
    rules.extend(conditional(std::process::id(), &own_threads())?);
    let main = filter(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
    )?;
    seccompiler::apply_filter_all_threads(&main).map_err(|e| format!("seccomp: {e}"))?;
    Ok(())
}

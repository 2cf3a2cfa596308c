//! The worker jail (Linux). V8 bugs are exploited in the wild, so the process is the real
//! boundary: after V8 is initialised and before any untrusted code runs, the worker
//!
//! - closes every inherited descriptor except its three pipes and the control pipe,
//! - caps resources: no core dumps, a handful of descriptors,
//! - sets `no_new_privs` (no privilege gain through exec, and a prerequisite of seccomp),
//! - installs a seccomp filter on every thread that allows exactly the system calls a jailed
//!   worker makes ([`ALLOWED`]) and refuses every other with EPERM, the way browsers and
//!   workerd confine their renderers. A few are allowed only with harmless arguments: `clone`
//!   only to make a thread, `kill`/`tgkill` only to signal this process, `prlimit64` only to
//!   read a limit, never to set one.
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
    libc::SYS_fcntl,
    // Memory: V8's heap, code space and cage, the allocator, memory protection keys.
    libc::SYS_brk,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_pkey_mprotect,
    libc::SYS_pkey_alloc,
    libc::SYS_pkey_free,
    libc::SYS_madvise,
    libc::SYS_membarrier,
    // Threads and their synchronisation (V8's platform threads, the cancel thread).
    libc::SYS_futex,
    libc::SYS_set_robust_list,
    libc::SYS_rseq,
    libc::SYS_sched_yield,
    libc::SYS_sched_getaffinity,
    libc::SYS_getcpu,
    libc::SYS_gettid,
    libc::SYS_getpid,
    libc::SYS_prctl,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_restart_syscall,
    // Time (the run's CPU clock, timers, the host's deadline), randomness.
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_clock_nanosleep,
    libc::SYS_nanosleep,
    libc::SYS_gettimeofday,
    libc::SYS_getrandom,
    libc::SYS_getrusage,
    // Signals: V8's fatal-error path and abort, alternate stacks.
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_sigaltstack,
    // seccompiler installs the clone3 filter after this one (and a filter only narrows).
    libc::SYS_seccomp,
];

/// Calls allowed only with these arguments: `clone` only to make a thread (V8's own), signals
/// only to this process, `prlimit64` only to read (its new-limit pointer null). `clone3`'s
/// flags sit in a struct a filter cannot read: it passes this filter and the second one answers
/// ENOSYS, so libc falls back to `clone`.
#[cfg(target_os = "linux")]
fn conditional(pid: u32) -> Result<Vec<(i64, Vec<SeccompRule>)>, String> {
    let rule = |conditions: Vec<(u8, SeccompCmpOp, u64)>| {
        conditions
            .into_iter()
            .map(|(arg, op, value)| SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value))
            .collect::<Result<Vec<_>, _>>()
            .and_then(SeccompRule::new)
            .map_err(|e| format!("{e}"))
    };
    let thread = libc::CLONE_THREAD as u64;
    let own = u64::from(pid);
    Ok(vec![
        (
            libc::SYS_clone,
            vec![rule(vec![(0, SeccompCmpOp::MaskedEq(thread), thread)])?],
        ),
        (libc::SYS_clone3, Vec::new()),
        // kill(pid, sig) and tgkill(tgid, tid, sig) name this process; the pid is 32 bits.
        (
            libc::SYS_kill,
            vec![rule(vec![(0, SeccompCmpOp::MaskedEq(0xffff_ffff), own)])?],
        ),
        (
            libc::SYS_tgkill,
            vec![rule(vec![(0, SeccompCmpOp::MaskedEq(0xffff_ffff), own)])?],
        ),
        (
            libc::SYS_prlimit64,
            vec![rule(vec![(2, SeccompCmpOp::Eq, 0)])?],
        ),
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

    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
    }

    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        ALLOWED.iter().map(|&nr| (nr, Vec::new())).collect();
    rules.extend(conditional(std::process::id())?);
    let main = filter(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
    )?;
    let clone3 = filter(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
    )?;
    seccompiler::apply_filter_all_threads(&main).map_err(|e| format!("seccomp: {e}"))?;
    seccompiler::apply_filter_all_threads(&clone3).map_err(|e| format!("seccomp: {e}"))?;
    Ok(())
}

/// `codemode-worker --jail-selftest`: jails itself as a worker does, then tries what the jail
/// must refuse and what it must still allow, printing one line per probe: `name refused|allowed
/// errno`. Used by the test suite; it runs no untrusted code.
pub fn selftest() -> i32 {
    let probe = |name: &str, r: libc::c_long| {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let verdict = if r < 0 { "refused" } else { "allowed" };
        println!("{name} {verdict} {errno}");
    };
    let path = c"/etc/hostname";
    // SAFETY (all probes below): raw syscalls with valid pointers to static C strings or
    // null; each either fails with an errno or does something harmless that is undone.
    unsafe {
        probe(
            "open",
            libc::syscall(libc::SYS_open, path.as_ptr(), libc::O_RDONLY),
        );
        probe(
            "openat",
            libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_RDONLY,
            ),
        );
        probe(
            "socket",
            libc::syscall(libc::SYS_socket, libc::AF_INET, libc::SOCK_STREAM, 0),
        );
        let argv = [c"/bin/true".as_ptr(), std::ptr::null()];
        let envp = [std::ptr::null::<libc::c_char>()];
        probe(
            "execve",
            libc::syscall(
                libc::SYS_execve,
                c"/bin/true".as_ptr(),
                argv.as_ptr(),
                envp.as_ptr(),
            ),
        );
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(0);
        }
        probe("fork", pid as libc::c_long);
        let child = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0);
        if child == 0 {
            libc::_exit(0);
        }
        probe("clone-process", child);
        probe(
            "ptrace",
            libc::syscall(libc::SYS_ptrace, libc::PTRACE_TRACEME, 0, 0, 0),
        );
        probe(
            "unshare",
            libc::syscall(libc::SYS_unshare, libc::CLONE_NEWUSER),
        );
        probe(
            "mkdir",
            libc::syscall(libc::SYS_mkdir, c"/tmp/codemode-jail-probe".as_ptr(), 0o700),
        );
        let mut byte = 0u8;
        let local = libc::iovec {
            iov_base: (&mut byte as *mut u8).cast(),
            iov_len: 1,
        };
        let remote = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 1,
        };
        probe(
            "process_vm_readv",
            libc::syscall(
                libc::SYS_process_vm_readv,
                libc::getppid(),
                &local as *const libc::iovec,
                1,
                &remote as *const libc::iovec,
                1,
                0,
            ),
        );
        // Signal 0 only checks that the target exists: harmless either way.
        probe(
            "kill-parent",
            libc::syscall(libc::SYS_kill, libc::getppid(), 0),
        );
        probe("kill-init", libc::syscall(libc::SYS_kill, 1, 0));
        probe(
            "tgkill-other",
            libc::syscall(libc::SYS_tgkill, libc::getppid(), libc::getppid(), 0),
        );
        probe(
            "mount",
            libc::syscall(
                libc::SYS_mount,
                c"none".as_ptr(),
                c"/tmp".as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null::<libc::c_void>(),
            ),
        );
        probe(
            "bpf",
            libc::syscall(libc::SYS_bpf, 0, std::ptr::null::<libc::c_void>(), 0),
        );
        probe(
            "perf_event_open",
            libc::syscall(
                libc::SYS_perf_event_open,
                std::ptr::null::<libc::c_void>(),
                0,
                -1,
                -1,
                0,
            ),
        );
        probe("userfaultfd", libc::syscall(libc::SYS_userfaultfd, 0));
        probe(
            "io_uring_setup",
            libc::syscall(
                libc::SYS_io_uring_setup,
                1,
                std::ptr::null_mut::<libc::c_void>(),
            ),
        );
        let raise = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        probe(
            "prlimit-set",
            libc::syscall(
                libc::SYS_prlimit64,
                0,
                libc::RLIMIT_NOFILE,
                &raise as *const libc::rlimit,
                std::ptr::null_mut::<libc::rlimit>(),
            ),
        );
        // What the jail must still allow.
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        probe(
            "prlimit-get",
            libc::syscall(
                libc::SYS_prlimit64,
                0,
                libc::RLIMIT_NOFILE,
                std::ptr::null::<libc::rlimit>(),
                &mut lim as *mut libc::rlimit,
            ),
        );
        probe(
            "kill-self",
            libc::syscall(libc::SYS_kill, libc::getpid(), 0),
        );
        probe(
            "tgkill-self",
            libc::syscall(
                libc::SYS_tgkill,
                libc::getpid(),
                libc::syscall(libc::SYS_gettid),
                0,
            ),
        );
        let mut random = [0u8; 8];
        probe(
            "getrandom",
            libc::syscall(libc::SYS_getrandom, random.as_mut_ptr(), random.len(), 0),
        );
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        probe("mmap", if page == libc::MAP_FAILED { -1 } else { 0 });
        if page != libc::MAP_FAILED {
            probe(
                "mprotect",
                libc::syscall(libc::SYS_mprotect, page, 4096, libc::PROT_READ),
            );
            libc::munmap(page, 4096);
        }
        // An unlisted call of no harm at all is refused too: the list is closed.
        probe("getppid", libc::syscall(libc::SYS_getppid));
    }
    let thread = std::thread::spawn(|| 1).join().map(|_| 0).unwrap_or(-1);
    probe("thread", thread);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut lim) };
    println!("core-limit {}", lim.rlim_max);
    0
}

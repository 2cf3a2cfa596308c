//! The worker jail (Linux). V8 bugs are exploited in the wild, so the process is the real
//! boundary: after V8 is initialised and before any untrusted code runs, the worker
//!
//! - closes every inherited descriptor except its three pipes and the control pipe,
//! - caps resources: no core dumps, a handful of descriptors,
//! - sets `no_new_privs` (no privilege gain through exec, and a prerequisite of seccomp),
//! - installs a seccomp filter on every thread that refuses, with EPERM, what a worker never
//!   needs: opening files, sockets, exec, new processes (clone without CLONE_THREAD, fork),
//!   ptrace and cross-process memory access, mounts and namespaces, kernel keyrings, BPF,
//!   io_uring, module loading. Threads stay possible: V8's own need clone with CLONE_THREAD.
//!
//! The filter is a deny-list: V8 and the allocator use many ordinary syscalls (mmap, mprotect,
//! madvise, futex, clock_gettime, getrandom, ...) whose exact set changes between releases, and
//! an allow-list that misses one kills the worker in the field.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// Syscalls refused outright.
#[cfg(target_os = "linux")]
const DENIED: &[i64] = &[
    // files
    libc::SYS_open,
    libc::SYS_openat,
    libc::SYS_openat2,
    libc::SYS_creat,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_unlink,
    libc::SYS_unlinkat,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    libc::SYS_rmdir,
    libc::SYS_link,
    libc::SYS_linkat,
    libc::SYS_symlink,
    libc::SYS_symlinkat,
    libc::SYS_chmod,
    libc::SYS_fchmodat,
    libc::SYS_chown,
    libc::SYS_fchownat,
    libc::SYS_lchown,
    libc::SYS_truncate,
    libc::SYS_mknod,
    libc::SYS_mknodat,
    libc::SYS_chdir,
    libc::SYS_chroot,
    // network
    libc::SYS_socket,
    libc::SYS_socketpair,
    libc::SYS_connect,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_accept,
    libc::SYS_accept4,
    libc::SYS_sendto,
    libc::SYS_sendmsg,
    libc::SYS_sendmmsg,
    libc::SYS_recvfrom,
    libc::SYS_recvmsg,
    libc::SYS_recvmmsg,
    // programs and processes
    libc::SYS_execve,
    libc::SYS_execveat,
    libc::SYS_fork,
    libc::SYS_vfork,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_getfd,
    // the system
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_setuid,
    libc::SYS_setgid,
    libc::SYS_setreuid,
    libc::SYS_setregid,
    libc::SYS_setresuid,
    libc::SYS_setresgid,
    libc::SYS_personality,
];

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

fn filter(rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, String> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| format!("unsupported architecture: {e:?}"))?;
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
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
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    // clone is refused unless it makes a thread.
    let no_thread = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64),
        0,
    )
    .and_then(|c| SeccompRule::new(vec![c]))
    .map_err(|e| format!("{e}"))?;
    rules.insert(libc::SYS_clone, vec![no_thread]);
    let main = filter(rules, libc::EPERM)?;
    // clone3's flags sit in a struct a filter cannot read: answer ENOSYS, so libc falls back
    // to clone, which the rule above inspects.
    let clone3 = filter(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        libc::ENOSYS,
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

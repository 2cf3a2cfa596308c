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
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
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
/// - `prlimit64` only to read, and only this process's limits;
/// - `fcntl` only to read a descriptor's flags (`F_GETFD`, `F_GETFL`). Its other commands
///   reach outside: `F_SETOWN`/`F_SETOWN_EX` with `F_SETSIG` and `O_ASYNC` (`F_SETFL`) make
///   the kernel send any signal, SIGKILL included, to any process the worker names each time
///   the host writes to the worker's pipe (signals by proxy); leases and directory notices
///   signal their holder too, and a pipe's size is kernel memory;
/// - `prctl` only to name and read a thread's name (V8 and std name their threads as they
///   start, which may fall after the jail). Refused: `PR_SET_PDEATHSIG` (clearing it lets a
///   worker outlive the host), `PR_SET_DUMPABLE`, `PR_SET_PTRACER` and the rest;
/// - `madvise` only with advice below `MADV_HWPOISON`: poisoning and soft-offlining take
///   physical pages from the whole machine;
/// - clocks only by their standard ids (`clock_gettime`, `clock_getres`, `clock_nanosleep`):
///   a negative id names another process's or thread's CPU clock, a view of what it does.
#[cfg(target_os = "linux")]
fn conditional(pid: u32) -> Result<Vec<(i64, Vec<SeccompRule>)>, String> {
    use SeccompCmpArgLen::{Dword, Qword};
    use SeccompCmpOp::{Eq, Lt};
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
    seccompiler::apply_filter_all_threads(&main).map_err(|e| format!("seccomp: {e}"))?;
    Ok(())
}

/// `fcntl` commands of the generic Linux ABI that `libc` does not name for glibc.
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_PID: libc::c_int = 1;
/// `ioctl` twin of `F_SETOWN` (asm-generic/sockios.h).
const FIOSETOWN: libc::c_ulong = 0x8901;

/// `struct f_owner_ex` (fcntl.h), for the `F_SETOWN_EX` probe.
#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// What a self-test probe must find.
#[derive(Clone, Copy, PartialEq)]
enum Must {
    Refuse,
    Allow,
}

/// The self-test's report: one line per probe, `<name> refused|allowed`.
#[derive(Default)]
struct Probes {
    wrong: Vec<&'static str>,
}

impl Probes {
    fn report(&mut self, name: &'static str, must: Must, refused: bool) {
        println!("{name} {}", if refused { "refused" } else { "allowed" });
        if refused != (must == Must::Refuse) {
            self.wrong.push(name);
        }
    }
}

/// Whether the call that returned `r` (just now: errno is read here) was refused by the
/// filter, whose answer is EPERM. Success or any other error means the call reached the kernel:
/// the filter let it through.
fn refused(r: libc::c_long) -> bool {
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    r == -1 && errno == libc::EPERM
}

/// `codemode-worker --jail-selftest`: jails itself as a worker does, then tries what the jail
/// must refuse and what it must still allow, printing one line per probe, `<name>
/// refused|allowed` (refused: the filter answered EPERM). `v8` says whether V8 still runs
/// jailed. `parent` is the parent's pid, read before the jail (`getppid` is not on the list).
/// Exits non-zero when a probe that must be refused is allowed, or one that must be allowed is
/// refused. Used by the test suite; it runs no untrusted code.
pub fn selftest(parent: u32, v8: impl FnOnce() -> bool) -> i32 {
    use Must::{Allow, Refuse};
    let mut p = Probes::default();
    let parent = parent as libc::pid_t;
    let path = c"/etc/hostname";
    // SAFETY (all probes below): raw syscalls with valid pointers to static C strings, to
    // structs we own, or null; each either fails with an errno or does something harmless
    // (on this process only, and undone where it changes anything) if the jail lets it
    // through.
    unsafe {
        let r = libc::syscall(libc::SYS_open, path.as_ptr(), libc::O_RDONLY);
        p.report("open", Refuse, refused(r));
        let r = libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::O_RDONLY,
        );
        p.report("openat", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_socket, libc::AF_INET, libc::SOCK_STREAM, 0);
        p.report("socket", Refuse, refused(r));
        let argv = [c"/bin/true".as_ptr(), std::ptr::null()];
        let envp = [std::ptr::null::<libc::c_char>()];
        let r = libc::syscall(
            libc::SYS_execve,
            c"/bin/true".as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
        );
        p.report("execve", Refuse, refused(r));
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(0);
        }
        p.report("fork", Refuse, refused(pid as libc::c_long));
        let child = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0);
        if child == 0 {
            libc::_exit(0);
        }
        p.report("clone-process", Refuse, refused(child));
        let r = libc::syscall(libc::SYS_ptrace, libc::PTRACE_TRACEME, 0, 0, 0);
        p.report("ptrace", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_unshare, libc::CLONE_NEWUSER);
        p.report("unshare", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_mkdir, c"/tmp/codemode-jail-probe".as_ptr(), 0o700);
        p.report("mkdir", Refuse, refused(r));
        let mut byte = 0u8;
        let local = libc::iovec {
            iov_base: (&mut byte as *mut u8).cast(),
            iov_len: 1,
        };
        let remote = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 1,
        };
        let r = libc::syscall(
            libc::SYS_process_vm_readv,
            parent,
            &local as *const libc::iovec,
            1,
            &remote as *const libc::iovec,
            1,
            0,
        );
        p.report("process_vm_readv", Refuse, refused(r));
        // Signal 0 only checks that the target exists: harmless either way.
        let r = libc::syscall(libc::SYS_kill, parent, 0);
        p.report("kill-parent", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_kill, 1, 0);
        p.report("kill-init", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_tgkill, parent, parent, 0);
        p.report("tgkill-other", Refuse, refused(r));
        let r = libc::syscall(
            libc::SYS_mount,
            c"none".as_ptr(),
            c"/tmp".as_ptr(),
            c"tmpfs".as_ptr(),
            0,
            std::ptr::null::<libc::c_void>(),
        );
        p.report("mount", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_bpf, 0, std::ptr::null::<libc::c_void>(), 0);
        p.report("bpf", Refuse, refused(r));
        let r = libc::syscall(
            libc::SYS_perf_event_open,
            std::ptr::null::<libc::c_void>(),
            0,
            -1,
            -1,
            0,
        );
        p.report("perf_event_open", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_userfaultfd, 0);
        p.report("userfaultfd", Refuse, refused(r));
        let r = libc::syscall(
            libc::SYS_io_uring_setup,
            1,
            std::ptr::null_mut::<libc::c_void>(),
        );
        p.report("io_uring_setup", Refuse, refused(r));
        let raise = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        let r = libc::syscall(
            libc::SYS_prlimit64,
            0,
            libc::RLIMIT_NOFILE,
            &raise as *const libc::rlimit,
            std::ptr::null_mut::<libc::rlimit>(),
        );
        p.report("prlimit-set", Refuse, refused(r));
        // The same with the new limit at a 4 GiB-aligned address, whose low 32 bits are zero:
        // a filter comparing only those would take it for no new limit.
        let high = libc::mmap(
            0x1_0000_0000 as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        );
        let r = if high as usize == 0x1_0000_0000 {
            // The limit as it is: the kernel takes it from anyone, so only the filter refuses.
            let mut same = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::syscall(
                libc::SYS_prlimit64,
                0,
                libc::RLIMIT_NOFILE,
                std::ptr::null::<libc::rlimit>(),
                &mut same as *mut libc::rlimit,
            );
            std::ptr::write(high as *mut libc::rlimit, same);
            let r = libc::syscall(
                libc::SYS_prlimit64,
                0,
                libc::RLIMIT_NOFILE,
                high as *const libc::rlimit,
                std::ptr::null_mut::<libc::rlimit>(),
            );
            libc::munmap(high, 4096);
            r
        } else {
            // The address is taken: the probe cannot be made, which must not read as refused.
            0
        };
        p.report("prlimit-set-high", Refuse, refused(r));
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // Reading another process's limits: a look outside the process.
        let r = libc::syscall(
            libc::SYS_prlimit64,
            parent,
            libc::RLIMIT_NOFILE,
            std::ptr::null::<libc::rlimit>(),
            &mut lim as *mut libc::rlimit,
        );
        p.report("prlimit-other", Refuse, refused(r));

        // Signals by proxy: a descriptor's owner receives SIGIO (or the signal F_SETSIG
        // names, SIGKILL included) whenever the other end of the pipe is written, sent by the
        // kernel on behalf of whoever set the owner. On stdin, that is each frame the host
        // writes. Each probe names this process only, and is undone if it passes.
        let me = libc::getpid();
        let r = libc::syscall(libc::SYS_fcntl, 0, libc::F_SETOWN, me);
        let setown = refused(r);
        if r == 0 {
            libc::syscall(libc::SYS_fcntl, 0, libc::F_SETOWN, 0);
        }
        p.report("fcntl-setown", Refuse, setown);
        let owner = FOwnerEx {
            kind: F_OWNER_PID,
            pid: me,
        };
        let r = libc::syscall(libc::SYS_fcntl, 0, F_SETOWN_EX, &owner as *const FOwnerEx);
        let setown_ex = refused(r);
        if r == 0 {
            libc::syscall(libc::SYS_fcntl, 0, libc::F_SETOWN, 0);
        }
        p.report("fcntl-setown-ex", Refuse, setown_ex);
        // Signal 0 is the default, SIGIO: nothing changes.
        let r = libc::syscall(libc::SYS_fcntl, 0, F_SETSIG, 0);
        p.report("fcntl-setsig", Refuse, refused(r));
        let flags = libc::syscall(libc::SYS_fcntl, 0, libc::F_GETFL);
        p.report("fcntl-getfl", Allow, refused(flags));
        let r = libc::syscall(
            libc::SYS_fcntl,
            0,
            libc::F_SETFL,
            flags | libc::O_ASYNC as i64,
        );
        let async_ = refused(r);
        if r == 0 {
            libc::syscall(libc::SYS_fcntl, 0, libc::F_SETFL, flags);
        }
        p.report("fcntl-async", Refuse, async_);
        // Leases and directory notices signal their holder too; a pipe has neither (EINVAL,
        // ENOTDIR when the filter lets them through).
        let r = libc::syscall(libc::SYS_fcntl, 0, libc::F_SETLEASE, libc::F_UNLCK);
        p.report("fcntl-setlease", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_fcntl, 0, libc::F_NOTIFY, 0);
        p.report("fcntl-notify", Refuse, refused(r));
        // Pipe buffers are kernel memory charged to the user: 64 KiB is the default size.
        let r = libc::syscall(libc::SYS_fcntl, 0, libc::F_SETPIPE_SZ, 65536);
        p.report("fcntl-setpipe-sz", Refuse, refused(r));
        // The ioctl twins of F_SETOWN and O_ASYNC (ioctl is not on the list at all).
        let r = libc::syscall(libc::SYS_ioctl, 0, FIOSETOWN, &me as *const libc::pid_t);
        p.report("ioctl-setown", Refuse, refused(r));
        let off: libc::c_int = 0;
        let r = libc::syscall(
            libc::SYS_ioctl,
            0,
            libc::FIOASYNC,
            &off as *const libc::c_int,
        );
        p.report("ioctl-async", Refuse, refused(r));

        // prctl: the death signal (0 would let the worker outlive the host; SIGKILL is
        // already set, so nothing changes), dumpability and Yama's ptracer (who may inspect
        // the worker), and the thread name V8 and std set, which must pass.
        let r = libc::syscall(
            libc::SYS_prctl,
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL,
            0,
            0,
            0,
        );
        p.report("prctl-pdeathsig", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_prctl, libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        p.report("prctl-dumpable", Refuse, refused(r));
        let r = libc::syscall(libc::SYS_prctl, libc::PR_SET_PTRACER, 0, 0, 0, 0);
        p.report("prctl-ptracer", Refuse, refused(r));
        let r = libc::syscall(
            libc::SYS_prctl,
            libc::PR_SET_NAME,
            c"codemode-worker".as_ptr(),
            0,
            0,
            0,
        );
        p.report("prctl-name", Allow, refused(r));

        // Clocks of other processes: their CPU time, to the nanosecond (a look outside).
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let parent_cpu = (!(parent) << 3) | 2;
        let r = libc::syscall(
            libc::SYS_clock_gettime,
            parent_cpu,
            &mut ts as *mut libc::timespec,
        );
        p.report("clock-other", Refuse, refused(r));
        let r = libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_THREAD_CPUTIME_ID,
            &mut ts as *mut libc::timespec,
        );
        p.report("clock-thread", Allow, refused(r));

        // What the jail must still allow.
        let r = libc::syscall(
            libc::SYS_prlimit64,
            0,
            libc::RLIMIT_NOFILE,
            std::ptr::null::<libc::rlimit>(),
            &mut lim as *mut libc::rlimit,
        );
        p.report("prlimit-get", Allow, refused(r));
        let r = libc::syscall(libc::SYS_kill, libc::getpid(), 0);
        p.report("kill-self", Allow, refused(r));
        let r = libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            libc::syscall(libc::SYS_gettid),
            0,
        );
        p.report("tgkill-self", Allow, refused(r));
        let mut random = [0u8; 8];
        let r = libc::syscall(libc::SYS_getrandom, random.as_mut_ptr(), random.len(), 0);
        p.report("getrandom", Allow, refused(r));
        let page = libc::syscall(
            libc::SYS_mmap,
            std::ptr::null_mut::<libc::c_void>(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        p.report("mmap", Allow, refused(page));
        if page != -1 {
            let r = libc::syscall(libc::SYS_mprotect, page, 4096, libc::PROT_READ);
            p.report("mprotect", Allow, refused(r));
            let r = libc::syscall(libc::SYS_madvise, page, 4096, libc::MADV_DONTNEED);
            p.report("madvise-dontneed", Allow, refused(r));
            // Poisoning takes a physical page from the whole machine. A zero length makes the
            // kernel return before acting, so only the filter's answer is seen.
            let r = libc::syscall(libc::SYS_madvise, page, 0, libc::MADV_HWPOISON);
            p.report("madvise-hwpoison", Refuse, refused(r));
            libc::syscall(libc::SYS_munmap, page, 4096);
        }
        // An unlisted call of no harm at all is refused too: the list is closed.
        let r = libc::syscall(libc::SYS_getppid);
        p.report("getppid", Refuse, refused(r));
    }
    // Threads: every one a worker runs starts before the jail.
    let thread = std::thread::Builder::new()
        .spawn(|| ())
        .map(|t| t.join().is_ok());
    let no_thread = match thread {
        Ok(_) => false,
        Err(e) => e.raw_os_error() == Some(libc::EPERM),
    };
    p.report("thread", Refuse, no_thread);
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut lim) };
    p.report("core-dump", Refuse, lim.rlim_max == 0);
    p.report("v8", Allow, !v8());
    if p.wrong.is_empty() {
        return 0;
    }
    eprintln!(
        "codemode-worker: the jail is not what it must be: {}",
        p.wrong.join(", ")
    );
    1
}

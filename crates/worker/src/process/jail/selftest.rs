//! `codemode-worker --jail-selftest`: once the worker has entered the jail as before a run
//! (main.rs), it probes what the jail must refuse (files, sockets, processes, signals by proxy, new threads,
//! each argument filter of `conditional`) and what it must still allow (V8, its own pipes),
//! one line per probe. The test suite runs it and checks every line; one file, because the
//! probes are one list read against the filter in jail.rs.

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
/// jailed; `entropy_drawn` counts the seeds V8 drew from the kernel (engine/platform.rs), so
/// the process layer needs nothing of the engine's. `parent` is the parent's pid, read before the jail (`getppid` is not on the list).
/// Exits non-zero when a probe that must be refused is allowed, or one that must be allowed is
/// refused. Used by the test suite; it runs no untrusted code.
pub fn selftest(parent: u32, v8: impl FnOnce() -> bool, entropy_drawn: impl Fn() -> u64) -> i32 {
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
        // a filter comparing only those would take it for no new limit. The first free one of
        // a few candidates (V8's pointer-compression cage and heap sandbox take large aligned
        // regions, 4 GiB among them).
        let high = (1..=256usize)
            .map(|k| {
                let want = k << 32;
                let got = libc::mmap(
                    want as *mut libc::c_void,
                    4096,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                    -1,
                    0,
                );
                (want, got)
            })
            .find(|&(want, got)| got as usize == want)
            .map(|(_, got)| got);
        let r = if let Some(high) = high {
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
            // Every address is taken: the probe cannot be made, which must not read as refused.
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

        // Scheduling parameters: a thread's own, not another process's (which would also say
        // whether a pid exists).
        let mut param = libc::sched_param { sched_priority: 0 };
        let r = libc::syscall(
            libc::SYS_sched_getparam,
            parent,
            &mut param as *mut libc::sched_param,
        );
        p.report("sched-other", Refuse, refused(r));

        // Memory the ceiling (RLIMIT_DATA) would not count: shared, and growing-down, anonymous
        // mappings. Each is unmapped again if it was made.
        for (name, flags) in [
            ("mmap-shared", libc::MAP_SHARED | libc::MAP_ANONYMOUS),
            (
                "mmap-growsdown",
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_GROWSDOWN,
            ),
        ] {
            let m = libc::syscall(
                libc::SYS_mmap,
                std::ptr::null_mut::<libc::c_void>(),
                1usize << 20,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            );
            let refusal = refused(m);
            if m != -1 {
                libc::munmap(m as *mut libc::c_void, 1 << 20);
            }
            p.report(name, Refuse, refusal);
        }
        // Growing a mapping in place of a new one: the stack's, say, which RLIMIT_DATA would
        // not count. Tried on a private page of its own.
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        let r = libc::syscall(
            libc::SYS_mremap,
            page,
            4096usize,
            8192usize,
            libc::MREMAP_MAYMOVE,
        );
        let refusal = refused(r);
        if r != -1 {
            libc::munmap(r as *mut libc::c_void, 8192);
        } else {
            libc::munmap(page, 4096);
        }
        p.report("mremap", Refuse, refusal);
        // Address space past the headroom the jail leaves (RLIMIT_AS): 64 GiB, reserved only.
        let big = libc::mmap(
            std::ptr::null_mut(),
            64usize << 30,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        let over = big == libc::MAP_FAILED
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOMEM);
        if big != libc::MAP_FAILED {
            libc::munmap(big, 64usize << 30);
        }
        p.report("address-space", Refuse, over);

        let r = libc::syscall(
            libc::SYS_sched_getparam,
            libc::syscall(libc::SYS_gettid),
            &mut param as *mut libc::sched_param,
        );
        p.report("sched-self", Allow, refused(r));

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
    let drawn = entropy_drawn();
    p.report("v8", Allow, !v8());
    // The isolate made in the jail seeded its random number generator from the kernel, not
    // from the clock (engine/platform.rs, `entropy`).
    p.report("v8-entropy", Allow, entropy_drawn() <= drawn);
    if p.wrong.is_empty() {
        return 0;
    }
    eprintln!(
        "codemode-worker: the jail is not what it must be: {}",
        p.wrong.join(", ")
    );
    1
}

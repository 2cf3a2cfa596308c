//! A worker process as the threads that may kill it see it. Every signal addresses the process
//! itself, never a number the kernel may already have handed to another process:
//!
//! - a pidfd (`pidfd_open` right after the spawn, while the child cannot have been reaped: only
//!   its reader thread waits for it) names the process, and `pidfd_send_signal` to a process
//!   that has exited and been reaped fails with `ESRCH` instead of reaching anyone else;
//! - a kernel without pidfds (before Linux 5.3) gets `kill(pid)`, and then the same lock guards
//!   every kill and the reaping, so a kill either happens before the reap or not at all.
//!
//! Both hold at once: the lock is taken in either case (kills are rare; nothing waits on it
//! but a killer racing the reap for the few milliseconds a killed worker takes to exit).

use std::os::fd::AsRawFd;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub(crate) struct Process {
    pid: u32,
    pidfd: Option<OwnedFd>,
    /// The identity it runs as, when not the host's.
    identity: Option<Identity>,
    /// True once the child is reaped; held while signalling and while reaping.
    reaped: Mutex<bool>,
    /// The memory ceiling last set (0: none yet): the worker cannot change it (its filter lets
    /// `prlimit64` only read), so setting the same one again is skipped.
    ceiling: AtomicU64,
}

impl Process {
    /// Call right after the spawn, before anything can reap `child`, which runs as `identity`
    /// (`None`: as the host).
    pub(crate) fn of(child: &Child, identity: Option<Identity>) -> Process {
        let pid = child.id();
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor (or -1); the
        // child is ours and unreaped (only its reader thread, not started yet, waits for it),
        // so the pid names it.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        let pidfd = (fd >= 0).then(|| {
            // SAFETY: the descriptor was just created by pidfd_open and nobody else owns it.
            unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
        });
        Process {
            pid,
            pidfd,
            identity,
            reaped: Mutex::new(false),
            ceiling: AtomicU64::new(0),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends SIGKILL to the process, if it has not been reaped. Returns whether a signal was
    /// sent (false: it is gone, and nothing else was signalled).
    pub(crate) fn kill(&self) -> bool {
        let reaped = self.reaped.lock().unwrap_or_else(|p| p.into_inner());
        if *reaped {
            return false;
        }
        let sent = match &self.pidfd {
            // SAFETY: pidfd_send_signal takes our open pidfd, a signal number, a null siginfo
            // and flags 0; it touches no memory of ours. The pidfd names this process and no
            // other, whether or not it has been reaped.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                ) == 0
            },
            // SAFETY: kill(2) with plain integers. `reaped` is false and we hold its lock, and
            // reaping takes the same lock, so the child is at worst a zombie: its pid cannot
            // have been given to another process.
            None => unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGKILL) == 0 },
        };
        drop(reaped);
        sent
    }

    /// Sets the process's memory ceiling (`RLIMIT_DATA`, soft limit; the hard limit stays the
    /// host's, so a later run may get a higher one), if it has not been reaped: under the lock
    /// reaping takes, the pid cannot have been handed to another process. The jailed worker
    /// cannot raise it itself (its filter lets `prlimit64` only read).
    /// Most runs ask for the ceiling their worker already has: then no system call is made (a
    /// host without `CAP_SYS_RESOURCE` would make six, on the execute's path).
    pub(crate) fn set_memory_ceiling(&self, bytes: u64) -> std::io::Result<()> {
        if self.ceiling.load(Ordering::Relaxed) == bytes {
            return Ok(());
        }
        let reaped = self.reaped.lock().unwrap_or_else(|p| p.into_inner());
        if *reaped {
            return Ok(());
        }
        let hard = memory_hard_limit();
        let limit = libc::rlimit {
            rlim_cur: bytes.min(hard),
            rlim_max: hard,
        };
        let set = || {
            // SAFETY: prlimit reads the struct we pass and writes nothing (null old-limit
            // pointer); the pid names our unreaped child (see above).
            let r = unsafe {
                libc::prlimit(
                    self.pid as libc::pid_t,
                    libc::RLIMIT_DATA,
                    &limit,
                    std::ptr::null_mut(),
                )
            };
            match r {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        };
        let result = match (set(), &self.identity) {
            // A root host without CAP_SYS_RESOURCE (a container's default) may set the limits
            // of another uid's process only as that uid: see `as_real_ids`.
            (Err(e), Some(id)) if e.raw_os_error() == Some(libc::EPERM) => as_real_ids(id, set),
            (result, _) => result,
        };
        if result.is_ok() {
            self.ceiling.store(bytes, Ordering::Relaxed);
        }
        drop(reaped);
        result
    }

    /// The CPU time the process has used so far (every thread, user and system), read from its
    /// CPU-time clock (nanoseconds). `None` when it is reaped or being reaped (the lock is
    /// held: this never waits for a reap), or the clock cannot be read. Under the lock, the pid
    /// names this process and no recycled one.
    pub(crate) fn cpu_time(&self) -> Option<std::time::Duration> {
        let reaped = match self.reaped.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        if *reaped {
            return None;
        }
        let mut clock: libc::clockid_t = 0;
        // SAFETY: clock_getcpuclockid writes a clock id into the variable we own; the pid names
        // our unreaped child (see above).
        if unsafe { libc::clock_getcpuclockid(self.pid as libc::pid_t, &mut clock) } != 0 {
            return None;
        }
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the struct we own.
        let read = unsafe { libc::clock_gettime(clock, &mut now) };
        drop(reaped);
        (read == 0).then(|| {
            std::time::Duration::new(
                u64::try_from(now.tv_sec).unwrap_or(0),
                u32::try_from(now.tv_nsec).unwrap_or(0),
            )
        })
    }

    /// Kills the child (it may still run) and reaps it, under the lock every kill takes.
    pub(crate) fn kill_and_reap(&self, child: &mut Child) -> Option<ExitStatus> {
        let mut reaped = self.reaped.lock().unwrap_or_else(|p| p.into_inner());
        // The child is ours and unreaped (we hold the lock, and only this call reaps), so
        // Child::kill addresses it.
        let _ = child.kill();
        let status = child.wait().ok();
        *reaped = true;
        status
    }
}

/// Runs `f` on this thread with the real uid and gid of `identity`, then restores them.
/// `prlimit` on another process is allowed to a caller with `CAP_SYS_RESOURCE` or whose real
/// ids are the target's; a container's root usually lacks the capability. Only the real ids
/// change, and only on this thread (raw system calls; glibc's wrappers would change every
/// thread): its effective uid stays 0, so it keeps its capabilities and never gives up root.
/// For these few system calls, a process of that uid may signal this thread (the kernel allows
/// a signal to a matching real uid); a jailed worker cannot signal anything but itself.
fn as_real_ids(
    identity: &Identity,
    f: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    const KEEP: libc::c_long = -1;
    let set_real = |gid: libc::gid_t, uid: libc::uid_t| {
        // SAFETY: setresgid/setresuid with plain integers (-1 keeps an id), on this thread
        // only; they touch no memory.
        unsafe {
            if libc::syscall(libc::SYS_setresgid, gid, KEEP, KEEP) != 0
                || libc::syscall(libc::SYS_setresuid, uid, KEEP, KEEP) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: getuid and getgid have no arguments and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let switched = set_real(identity.gid, identity.uid);
    let result = switched.and_then(|()| f());
    // Back (also after a half-done switch). The effective uid is still 0, with CAP_SETUID and
    // CAP_SETGID: this cannot fail, and the thread must not go on under another real uid.
    if set_real(gid, uid).is_err() {
        std::process::abort();
    }
    result
}

/// The host's own hard `RLIMIT_DATA`, which a worker inherits and cannot pass.
pub(crate) fn memory_hard_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_DATA, &mut lim) } != 0 {
        return libc::RLIM_INFINITY;
    }
    lim.rlim_max
}

/// A worker's memory ceiling for runs of `memory_limit_mib`, as `RLIMIT_DATA`: since Linux 4.7
/// it counts the process's private writable mappings (its heap, its anonymous memory, V8's
/// committed pages), not address space merely reserved. The heap sandbox reserves about a
/// terabyte of address space, which `RLIMIT_AS` cannot allow without allowing everything; this
/// ceiling bounds what is written instead. [`WORKER_BASE_MIB`] for V8 and the worker with no
/// run, plus three times the limit (a run that
/// fills its limit peaks near twice it: the heap's headroom granted to stop it cleanly, and the
/// metered buffers), plus slack. Native memory a compromised worker grows outside V8 stops here;
/// the worker dies (its allocation fails) and the pool reports it like any crash.
pub(crate) fn memory_ceiling(memory_limit_mib: u32) -> u64 {
    const MIB: u64 = 1024 * 1024;
    (WORKER_BASE_MIB + 3 * u64::from(memory_limit_mib)) * MIB
}

/// The most a worker's main-thread stack may grow: `RLIMIT_STACK`, which bounds it and which
/// `RLIMIT_DATA` does not count (a host started with `ulimit -s unlimited` would otherwise
/// hand a compromised worker unbounded memory below its stack). 8 MiB, the usual default and
/// eight times what V8 lets JavaScript use (its own stack limit is about 1 MiB); a host's lower
/// limit stays. The jail refuses other memory the ceiling does not count: shared and
/// growing-down mappings (crates/worker `process/jail.rs`).
pub(crate) fn stack_ceiling() -> libc::rlimit {
    const STACK: libc::rlim_t = 8 * 1024 * 1024;
    let mut host = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit writes into the struct we own; on failure it stays infinite.
    unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut host) };
    let max = host.rlim_max.min(STACK);
    libc::rlimit {
        rlim_cur: host.rlim_cur.min(max),
        rlim_max: max,
    }
}

/// What a worker counts against `RLIMIT_DATA` before any run, with room to spare: measured on
/// V8 15.2 with the heap sandbox, an idle worker with its prepared isolate has 140 MiB of
/// private writable mappings (V8's code range among them: under 96 MiB V8 cannot reserve it and
/// aborts at start), of which ~15 MiB resident. See [`memory_ceiling`].
pub(crate) const WORKER_BASE_MIB: u64 = 256;

/// Who a worker runs as. Under a root host, workers take an unprivileged identity: the jail
/// refuses what they may not do, and the uid takes from them what root could still do through
/// an allowed call (a signal the kernel sends on their behalf checks their uid, not the
/// filter), along with root's capabilities. A host that is not root cannot change uids:
/// workers keep the host's, and the jail alone confines them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(crate) uid: libc::uid_t,
    pub(crate) gid: libc::gid_t,
    /// `RLIMIT_NPROC`: every task (thread) of `uid`, all workers' together.
    pub(crate) tasks: u64,
}

/// An exec through a descriptor: the worker binary opened by the host (as root) and everything
/// `execveat` takes, built before the fork so the child only makes the call.
pub(crate) struct ExecByFd {
    file: std::fs::File,
    _strings: Vec<std::ffi::CString>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into `_strings`, which the struct owns and never changes; they are
// only read, by the kernel, in the forked child.
unsafe impl Send for ExecByFd {}
// SAFETY: as above: nothing is ever written through the pointers.
unsafe impl Sync for ExecByFd {}

impl ExecByFd {
    /// Opens `path` and takes the program name, arguments and environment `command` was given.
    pub(crate) fn prepare(
        path: &std::path::Path,
        command: &std::process::Command,
    ) -> std::io::Result<ExecByFd> {
        use std::ffi::CString;
        use std::os::fd::{AsRawFd, FromRawFd};
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::OpenOptionsExt;
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)?;
        // Above the descriptors the child sets up (0-2 and the control pipe's 3), so none of
        // its dup2s replaces the binary even if the host's own low descriptors were closed.
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a descriptor we own returns a new one or -1.
        let high = unsafe { libc::fcntl(opened.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
        if high < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `high` was just returned by fcntl and is owned by nobody else.
        let file = unsafe { std::fs::File::from_raw_fd(high) };
        drop(opened);
        let nul = |b: &[u8]| {
            CString::new(b).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
        };
        let mut strings = vec![nul(path.as_os_str().as_bytes())?];
        for arg in command.get_args() {
            strings.push(nul(arg.as_bytes())?);
        }
        let args = strings.len();
        for (k, v) in command.get_envs() {
            if let Some(v) = v {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                strings.push(nul(&kv)?);
            }
        }
        let ptr = |c: &CString| c.as_ptr();
        let mut argv: Vec<_> = strings[..args].iter().map(ptr).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<_> = strings[args..].iter().map(ptr).collect();
        envp.push(std::ptr::null());
        Ok(ExecByFd {
            file,
            _strings: strings,
            argv,
            envp,
        })
    }

    /// Replaces this (forked) process with the binary; returns only the error of a failed exec.
    pub(crate) fn exec(&self) -> std::io::Error {
        use std::os::fd::AsRawFd;
        let fd = self.file.as_raw_fd();
        // SAFETY: the descriptor is open, the path is an empty NUL-terminated string, and both
        // arrays are NULL-terminated arrays of NUL-terminated strings owned by `self`.
        let execveat = || unsafe {
            libc::syscall(
                libc::SYS_execveat,
                fd,
                c"".as_ptr(),
                self.argv.as_ptr(),
                self.envp.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        execveat();
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOENT) {
            return e;
        }
        // A script (a wrapper around the worker): its interpreter reads it as /dev/fd/N, which a
        // close-on-exec descriptor would no longer be. Kept open, the worker's jail closes it.
        // SAFETY: fcntl(F_SETFD) on a descriptor we own.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
            return std::io::Error::last_os_error();
        }
        execveat();
        std::io::Error::last_os_error()
    }
}

/// nobody/nogroup: an identity that owns nothing.
pub(crate) const WORKER_UID: libc::uid_t = 65534;
pub(crate) const WORKER_GID: libc::gid_t = 65534;

/// The identity workers of a pool of `workers` take, `None` when the host is not root.
pub(crate) fn worker_identity(workers: usize) -> Option<Identity> {
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let workers = (workers as u64).max(codemode_protocol::limits::WORKER_UID_WORKERS);
    let mut host = libc::rlimit {
        rlim_cur: 0,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit writes into the struct we own. A worker may lower its limit, never
    // raise it past the host's hard one (that takes CAP_SYS_RESOURCE).
    unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut host) };
    Some(Identity {
        uid: WORKER_UID,
        gid: WORKER_GID,
        tasks: (codemode_protocol::limits::WORKER_THREADS * workers).min(host.rlim_max),
    })
}

/// In the forked child, before exec: caps the identity's tasks, then drops every group and
/// takes the identity's gid and uid (real, effective and saved, so nothing can take root
/// back; root's capabilities go with the uid). Raw system calls only: async-signal-safe.
///
/// # Safety
/// Call only in a child between fork and exec.
pub(crate) unsafe fn become_identity(identity: &Identity) -> std::io::Result<()> {
    let tasks = libc::rlimit {
        rlim_cur: identity.tasks,
        rlim_max: identity.tasks,
    };
    let (uid, gid) = (identity.uid, identity.gid);
    let failed = || Err(std::io::Error::last_os_error());
    if libc::setrlimit(libc::RLIMIT_NPROC, &tasks) != 0 {
        return failed();
    }
    if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0 {
        return failed();
    }
    if libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0 {
        return failed();
    }
    if libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0 {
        return failed();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_kill_reaches_the_live_process_and_is_a_no_op_once_it_is_reaped() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let process = Process::of(&child, None);
        assert!(process.pidfd.is_some(), "this kernel has pidfds");
        assert!(process.kill(), "the live child is signalled");
        use std::os::unix::process::ExitStatusExt;
        let status = process.kill_and_reap(&mut child).unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        // Reaped: its pid may now belong to anyone; the kill signals nothing.
        assert!(!process.kill());
        assert!(!process.kill());
    }

    #[test]
    fn the_pidfd_addresses_only_its_own_process_even_after_the_pid_is_freed() {
        // Reaped behind the lock's back (as the old code could): the pidfd still refuses, it
        // never turns into "whoever has this pid now".
        let mut child = Command::new("true").spawn().unwrap();
        let process = Process::of(&child, None);
        child.wait().unwrap();
        assert!(
            !process.kill(),
            "a pidfd of a reaped process signals nothing"
        );
    }

    #[test]
    fn the_cpu_clock_counts_a_busy_process_and_not_a_sleeping_one() {
        let mut busy = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let mut idle = Command::new("sleep").arg("30").spawn().unwrap();
        let (b, i) = (Process::of(&busy, None), Process::of(&idle, None));
        let (b0, i0) = (b.cpu_time().unwrap(), i.cpu_time().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(600));
        let (b1, i1) = (b.cpu_time().unwrap(), i.cpu_time().unwrap());
        assert!(
            b1 - b0 >= std::time::Duration::from_millis(100),
            "{b0:?} {b1:?}"
        );
        assert!(
            i1 - i0 < std::time::Duration::from_millis(20),
            "{i0:?} {i1:?}"
        );
        b.kill_and_reap(&mut busy);
        i.kill_and_reap(&mut idle);
        // Reaped: nothing is read from a pid that may now be anyone's.
        assert_eq!(b.cpu_time(), None);
    }
}

//! The worker's two pipes and its tie to the parent process.

use std::ffi::c_void;
use std::fs::File;
use std::io::{BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use codemode_protocol::{frame::read_frame, HostMsg, WorkerMsg, CONTROL_FD};

/// The run in progress, so the reader thread can terminate it the moment a Cancel arrives,
/// even while the main thread is inside a synchronous loop. A Cancel for the run being started
/// (`expect`ed, its isolate not yet set) is kept, and terminates it as soon as it is set: the
/// host may hand a run over while the worker still prepares its isolate. It also carries the
/// run's CPU budget while one is armed (budget.rs), which the reader thread times.
#[derive(Clone, Default)]
pub struct CurrentRun(Arc<Shared>);

#[derive(Default)]
struct Shared {
    state: Mutex<Current>,
    /// Budgets armed so far (each arming's generation).
    armed: AtomicU64,
    /// The write end of the pipe that wakes the reader thread to time a budget afresh.
    waker: OnceLock<OwnedFd>,
}

#[derive(Default)]
struct Current {
    exec_id: Option<u64>,
    handle: Option<v8::IsolateHandle>,
    cancelled: bool,
    budget: Option<Armed>,
}

impl CurrentRun {
    fn lock(&self) -> Option<MutexGuard<'_, Current>> {
        self.0.state.lock().ok()
    }

    /// Run `exec_id` is about to start (called before `Started` is sent).
    pub fn expect(&self, exec_id: u64) {
        if let Some(mut g) = self.lock() {
            *g = Current {
                exec_id: Some(exec_id),
                ..Current::default()
            };
        }
    }

    pub fn set(&self, run: Option<(u64, v8::IsolateHandle)>) {
        if let Some(mut g) = self.lock() {
            *g = match run {
                Some((exec_id, handle)) => {
                    let cancelled = g.exec_id == Some(exec_id) && g.cancelled;
                    if cancelled {
                        handle.terminate_execution();
                    }
                    Current {
                        exec_id: Some(exec_id),
                        handle: Some(handle),
                        cancelled,
                        budget: None,
                    }
                }
                None => Current::default(),
            };
        }
    }

    fn cancel(&self, exec_id: u64) {
        if let Some(mut g) = self.lock() {
            if g.exec_id == Some(exec_id) {
                g.cancelled = true;
                if let Some(handle) = &g.handle {
                    handle.terminate_execution();
                }
            }
        }
    }

    /// A budget of `left` starts for the run set, checked on the main thread by the interrupt
    /// `check` (budget.rs); returns its generation.
    pub(crate) fn arm_budget(&self, left: Duration, check: Interrupt) -> u64 {
        let generation = self.0.armed.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(mut g) = self.lock() {
            g.budget = Some(Armed::new(generation, left, check));
        }
        self.wake();
        generation
    }

    /// Budget `generation` still had `left` a moment ago (its interrupt's answer).
    pub(crate) fn budget_left(&self, generation: u64, left: Duration) {
        if let Some(mut g) = self.lock() {
            if let Some(b) = g.budget.as_mut().filter(|b| b.generation == generation) {
                *b = Armed::new(generation, left, b.check);
            }
        }
        self.wake();
    }

    /// Budget `generation` is no longer counted.
    pub(crate) fn disarm_budget(&self, generation: u64) {
        if let Some(mut g) = self.lock() {
            if g.budget
                .as_ref()
                .is_some_and(|b| b.generation == generation)
            {
                g.budget = None;
            }
        }
    }

    /// The reader thread's turn: asks for the budget's check when it may be spent; returns how
    /// long to wait before the next turn (`None`: until woken).
    fn budget_tick(&self) -> Option<Duration> {
        let mut g = self.lock()?;
        let Current { handle, budget, .. } = &mut *g;
        let (Some(handle), Some(budget)) = (handle.as_ref(), budget.as_mut()) else {
            return None;
        };
        if budget.asked {
            return None;
        }
        let now = Instant::now();
        if now < budget.due() {
            return Some(budget.due() - now);
        }
        // Asked once per answer: the callback's answer (or the run's end) decides what next.
        // An isolate already disposed has nothing left to count.
        if budget.ask(handle) {
            budget.asked = true;
        } else {
            g.budget = None;
        }
        None
    }

    /// Wakes the reader thread so it times the budget afresh.
    fn wake(&self) {
        if let Some(fd) = self.0.waker.get() {
            // SAFETY: writes one byte from a local to the pipe this run owns; the pipe is
            // non-blocking, and a full one already holds a wake-up.
            unsafe { libc::write(fd.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        }
    }
}
/// A V8 interrupt callback (the `v8` crate's `InterruptCallback`, which it does not export).
pub(crate) type Interrupt = unsafe extern "C" fn(v8::UnsafeRawIsolatePtr, *mut c_void);

/// A budget being enforced, as the cancel thread sees it.
struct Armed {
    /// Which arming this is: an interrupt asked for an earlier one does nothing.
    pub generation: u64,
    /// CPU the run still had to spend at `since`.
    pub left: Duration,
    pub since: Instant,
    /// An interrupt is asked for and has not answered yet.
    pub asked: bool,
    /// The interrupt that checks it on the main thread (budget.rs), given the generation.
    check: Interrupt,
}

impl Armed {
    fn new(generation: u64, left: Duration, check: Interrupt) -> Self {
        Armed {
            generation,
            left,
            since: Instant::now(),
            asked: false,
            check,
        }
    }

    /// Asks the isolate behind `handle` to check this budget on its own thread.
    fn ask(&self, handle: &v8::IsolateHandle) -> bool {
        // The generation travels as the pointer's value; nothing is pointed to.
        handle.request_interrupt(self.check, self.generation as usize as *mut c_void)
    }

    /// When the budget may first be spent (wall time).
    fn due(&self) -> Instant {
        self.since + self.left
    }
}

/// Ask the kernel to kill this process when the parent dies, so a crashed or killed host never
/// leaves orphaned workers; stdin EOF covers the orderly case.
pub fn die_with_parent() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    // The parent may have died before the prctl took effect: then we were reparented.
    if std::os::unix::process::parent_id() == 1 {
        std::process::exit(0);
    }
}

/// Frames from the host, read on the main thread: it blocks here only while a run waits for a
/// tool answer (or between runs), so an answer reaches the isolate with a single wake-up.
pub struct Input {
    reader: BufReader<std::io::StdinLock<'static>>,
    buf: Vec<u8>,
}

impl Input {
    pub fn new() -> Self {
        Input {
            reader: BufReader::with_capacity(64 * 1024, std::io::stdin().lock()),
            buf: Vec::with_capacity(4096),
        }
    }

    /// The next message, waiting at most `wait` (forever when `None`) for one to start.
    ///
    /// When the run waits for the host's answers (`answers`: it has calls in flight), it first
    /// polls for up to [`SPIN`] before it sleeps, since a sleeping thread is woken on a CPU that
    /// may have to be woken first (tens of microseconds on a virtual machine, where an idle
    /// virtual CPU halts), while an answer that comes within the spin is read at once. Each
    /// turn of the spin yields the CPU to whatever else waits for it (the host's own thread
    /// may), and the CPU it costs is not the program's ([`super::spun`]); the pool's backstop
    /// of the CPU budget allows for it, per answer (crates/pool `deadlines.rs`). A wait for a
    /// timer alone never polls: nothing is on its way.
    pub fn next_within(&mut self, wait: Option<Duration>, answers: bool) -> Next {
        let mut wait = wait;
        if answers && self.reader.buffer().is_empty() {
            let spin = wait.map_or(SPIN, |w| w.min(SPIN));
            let started = Instant::now();
            super::spun(|| spin_until_readable(spin));
            // A timer's wait counts from the call, the poll included.
            wait = wait.map(|w| w.saturating_sub(started.elapsed()));
        }
        if let Some(wait) = wait {
            if self.reader.buffer().is_empty() {
                let ready = stdin_ready(poll_ms(wait));
                if ready == 0 {
                    return Next::Timeout;
                }
                if ready < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    return Next::Timeout;
                }
            }
        }
        match self.next() {
            Some(m) => Next::Msg(m),
            None => Next::Closed,
        }
    }

    /// The next message; `None` once the host closed the pipe or sent something unreadable.
    pub fn next(&mut self) -> Option<HostMsg> {
        match read_frame(&mut self.reader, &mut self.buf) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => {
                eprintln!("codemode-worker: reading a frame failed: {e}");
                return None;
            }
        }
        match HostMsg::decode(&self.buf) {
            Ok(msg) => Some(msg),
            Err(e) => {
                eprintln!("codemode-worker: {e}");
                None
            }
        }
    }
}

/// How long a run polls for the host's answer before it sleeps ([`Input::next_within`]):
/// `limits::ANSWER_POLL_US`.
pub const SPIN: Duration = Duration::from_micros(codemode_protocol::limits::ANSWER_POLL_US);

/// Polls stdin until it is readable or `spin` has passed, yielding the CPU between polls.
fn spin_until_readable(spin: Duration) {
    let until = Instant::now() + spin;
    while stdin_ready(0) == 0 && Instant::now() < until {
        yield_cpu();
    }
}

/// poll(2) on stdin for input, waiting at most `ms` (0: not at all): what poll returned.
fn stdin_ready(ms: i32) -> i32 {
    let mut fd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one pollfd we own.
    unsafe { libc::poll(&mut fd, 1, ms) }
}

/// What waiting for input produced.
pub enum Next {
    Msg(HostMsg),
    Timeout,
    Closed,
}

/// The control pipe the pool passes as fd 3 carries Cancel frames. A thread of its own reads it,
/// so a run is terminated even while the main thread is inside a synchronous loop. (The same
/// Cancel also arrives on stdin, to wake a main thread blocked waiting for tool answers.)
pub fn spawn_canceller(current: CurrentRun) {
    // SAFETY: fcntl(F_GETFD) only inspects the descriptor table.
    if unsafe { libc::fcntl(CONTROL_FD, libc::F_GETFD) } < 0 {
        eprintln!("codemode-worker: no control pipe on fd {CONTROL_FD}: runs cannot be cancelled");
        return;
    }
    // SAFETY: fd 3 is the control pipe the pool set up for this process and nothing else in
    // the worker opens or owns it, so this File is its only owner.
    let control = unsafe { File::from_raw_fd(CONTROL_FD) };
    if let Err(e) = spawn_control_reader(control, current) {
        eprintln!("codemode-worker: cannot start the cancel thread: {e}");
        std::process::exit(70);
    }
}

/// Starts the thread that reads Cancel frames from `control` and times `current`'s CPU budget,
/// until `control` closes. Called before the jail (it opens a pipe and starts a thread).
pub fn spawn_control_reader(
    control: File,
    current: CurrentRun,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 just opened both; each OwnedFd is the only owner of its end.
    let (wakes, waker) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    if current.0.waker.set(waker).is_err() {
        return Err(std::io::Error::other(
            "the run already has a control reader",
        ));
    }
    std::thread::Builder::new()
        .name("cancel".into())
        .spawn(move || read_control(control, wakes, current))
}

fn read_control(control: File, wakes: OwnedFd, current: CurrentRun) {
    let control_fd = control.as_raw_fd();
    let mut input = BufReader::new(control);
    let mut buf = Vec::with_capacity(64);
    loop {
        if input.buffer().is_empty() {
            let wait = current.budget_tick();
            let mut fds = [
                libc::pollfd {
                    fd: control_fd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: wakes.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // To the microsecond (ppoll's timespec): a budget is checked when it may be spent,
            // not at the next whole millisecond.
            let timeout = wait.map(|w| libc::timespec {
                tv_sec: w.as_secs().min(i32::MAX as u64) as libc::time_t,
                tv_nsec: libc::c_long::from(w.subsec_nanos() as i32),
            });
            let timeout_ptr = timeout.as_ref().map_or(std::ptr::null(), |t| t as *const _);
            // SAFETY: ppoll reads and writes the two pollfds we own and reads the timespec
            // (or none: wait until woken); no signal mask is passed.
            let ready = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, timeout_ptr, std::ptr::null()) };
            if ready <= 0 {
                continue;
            }
            if fds[1].revents != 0 {
                let mut drain = [0u8; 64];
                // SAFETY: reads into a local buffer from the non-blocking pipe we own.
                while unsafe { libc::read(wakes.as_raw_fd(), drain.as_mut_ptr().cast(), 64) } > 0 {}
            }
            if fds[0].revents == 0 {
                continue;
            }
        }
        match read_frame(&mut input, &mut buf) {
            Ok(true) => {
                if let Ok(HostMsg::Cancel { exec_id }) = HostMsg::decode(&buf) {
                    current.cancel(exec_id);
                }
            }
            Ok(false) | Err(_) => return,
        }
    }
}

/// A wait in poll's milliseconds, rounded up, so a timer is never woken a little early and
/// re-polled at 0 ms.
fn poll_ms(wait: Duration) -> i32 {
    let ms = wait.as_millis().min(i32::MAX as u128 - 1) as i32;
    if Duration::from_millis(ms as u64) < wait {
        ms + 1
    } else {
        ms
    }
}

fn stdout() -> &'static Mutex<File> {
    static OUT: OnceLock<Mutex<File>> = OnceLock::new();
    // SAFETY: fd 1 is open for the whole life of the process and only this File writes to it
    // (the worker never uses print!), so owning it here cannot close or alias another file.
    OUT.get_or_init(|| Mutex::new(unsafe { File::from_raw_fd(1) }))
}

/// Writes one frame. A host that stopped reading is gone: the worker exits. Every message is
/// bounded well below the frame bound where it is built (results, logs, tool arguments, fetch
/// bodies); one that still passes it would be refused by the host, so the worker exits rather
/// than write it.
pub fn send(msg: &WorkerMsg) {
    let frame = match msg.encode() {
        Ok(frame) => frame,
        Err(e) => {
            eprintln!("codemode-worker: refusing to send a message: {e}");
            std::process::exit(70);
        }
    };
    let ok = match stdout().lock() {
        Ok(mut out) => out.write_all(&frame).is_ok(),
        Err(_) => false,
    };
    if !ok {
        std::process::exit(0);
    }
}

/// Lets a thread this process just woke run first when it waits for this CPU (the host's,
/// after an answer): the scheduler would otherwise keep it waiting until this thread's slice
/// ends, which the work that follows an answer (a dispose, the next preparation) outlasts. A
/// no-op when nothing else waits for the CPU.
pub fn yield_cpu() {
    // SAFETY: sched_yield takes no arguments and touches no memory of ours.
    unsafe { libc::sched_yield() };
}

/// Writes one encoded frame if no other frame is being written (the lock is free): for a
/// worker about to die (last_words.rs), which must not wait on a lock its own thread may hold,
/// nor write into the middle of another frame, nor allocate. Whether the whole frame was
/// written.
pub fn write_if_free(frame: &[u8]) -> bool {
    match stdout().try_lock() {
        Ok(mut out) => out.write_all(frame).is_ok(),
        Err(_) => false,
    }
}

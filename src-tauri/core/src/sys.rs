//! The few Linux calls std does not wrap.

use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

/// Opens a pidfd for `pid`: it becomes readable when the process exits, so a conflicting
/// presenter can be watched without polling.
#[allow(unsafe_code)]
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1; no memory is shared.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = i32::try_from(fd).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    // SAFETY: the kernel just returned this fd to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sends `signal` to the process behind `pidfd`: only that process, even if its pid
/// has since named another (the reason pidfds exist). `ESRCH` once it has exited.
#[allow(unsafe_code)]
pub fn pidfd_send_signal(pidfd: std::os::fd::BorrowedFd<'_>, signal: i32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal takes an fd, a signal number, a null siginfo and flags 0;
    // the fd is borrowed, so it stays open for the call, and no memory is shared.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the process behind `pidfd` has exited (its pidfd polls readable then; a
/// zombie has exited).
pub fn pidfd_exited(pidfd: std::os::fd::BorrowedFd<'_>) -> bool {
    pidfd_poll(pidfd, 0)
}

/// Blocks until the process behind `pidfd` has exited (or polling it fails).
pub fn pidfd_wait_exit(pidfd: std::os::fd::BorrowedFd<'_>) {
    while !pidfd_poll(pidfd, -1) {
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Polls `pidfd` for its process's exit, waiting at most `timeout_ms` (-1: for ever).
#[allow(unsafe_code)]
fn pidfd_poll(pidfd: std::os::fd::BorrowedFd<'_>, timeout_ms: i32) -> bool {
    use std::os::fd::AsRawFd;
    let mut fds = [libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: poll reads and writes the one pollfd in `fds`, which outlives the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 1, timeout_ms) };
    n > 0 && fds[0].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
}

/// Whether the peer of a connected socket has already closed it and sent nothing: a
/// non-blocking one-byte `MSG_PEEK` reads EOF (or the connection was reset). Data
/// waiting, nothing yet, or any other answer: false.
#[allow(unsafe_code)]
pub fn peer_hung_up(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    let mut byte = 0u8;
    // SAFETY: recv writes at most one byte into `byte`, which outlives the call; the fd is
    // borrowed, so it stays open for the call.
    let n = unsafe {
        libc::recv(
            fd.as_raw_fd(),
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n == 0 || (n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ECONNRESET))
}

/// Writes what the socket takes of `bytes` now, without waiting however the socket is
/// set (`MSG_DONTWAIT`), and without a `SIGPIPE` when the peer is gone (`MSG_NOSIGNAL`):
/// `WouldBlock` when it takes nothing.
#[allow(unsafe_code)]
pub fn send_now(fd: std::os::fd::BorrowedFd<'_>, bytes: &[u8]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: send reads at most `bytes.len()` bytes from `bytes`, which outlives the
        // call; the fd is borrowed, so it stays open for the call.
        let n = unsafe {
            libc::send(
                fd.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Raises this process's soft limit on open files to its hard limit, once: each query
/// connection is a descriptor, and a desktop session's soft limit (often 1,024) would
/// have `accept` fail, for everyone, after a thousand idle connections from anyone.
/// Returns the soft limit now in force.
#[allow(unsafe_code)]
pub fn raise_open_files_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `limit`, which outlives the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit from `raised`, which outlives the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    limit.rlim_cur
}

/// An epoll set, level-triggered: a socket with bytes left unread is reported again at
/// the next wait, so one read per report is enough and nothing is ever left behind.
#[derive(Debug)]
pub struct Epoll(OwnedFd);

/// One readiness report of [`Epoll::wait`].
#[derive(Debug, Clone, Copy)]
pub struct Ready {
    /// The token the fd was registered with.
    pub token: u64,
    /// Bytes to read, end of file, or an error (a read tells which).
    pub readable: bool,
    /// Room to write.
    pub writable: bool,
}

impl Epoll {
    /// A new, empty set.
    #[allow(unsafe_code)]
    pub fn new() -> io::Result<Self> {
        // SAFETY: no pointers; a non-negative result is a new fd we own.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned to us and nobody else holds it.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches `fd` for reading (always) and writing (when `write`), reporting `token`.
    pub fn add(&self, fd: std::os::fd::BorrowedFd<'_>, token: u64, write: bool) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_ADD, fd, token, write)
    }

    /// Changes what `fd` is watched for.
    pub fn modify(
        &self,
        fd: std::os::fd::BorrowedFd<'_>,
        token: u64,
        write: bool,
    ) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_MOD, fd, token, write)
    }

    /// Stops watching `fd` (before it is closed).
    pub fn delete(&self, fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_DEL, fd, 0, false)
    }

    #[allow(unsafe_code)]
    fn control(
        &self,
        op: libc::c_int,
        fd: std::os::fd::BorrowedFd<'_>,
        token: u64,
        write: bool,
    ) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut events = libc::EPOLLIN | libc::EPOLLRDHUP;
        if write {
            events |= libc::EPOLLOUT;
        }
        let mut event = libc::epoll_event {
            events: events as u32,
            u64: token,
        };
        // SAFETY: `event` outlives the call; both fds are open for the call (one owned,
        // one borrowed).
        let r = unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd.as_raw_fd(), &mut event) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether any fd of the set is ready now: one `epoll_wait` for a single report,
    /// without waiting (a hot path's "anything new?", with nothing to collect).
    #[allow(unsafe_code)]
    pub fn ready_now(&self) -> io::Result<bool> {
        use std::os::fd::AsRawFd;
        let mut event = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: `event` has room for the one report asked for and outlives the call;
        // the epoll fd is ours and open.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), &mut event, 1, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n > 0)
    }

    /// Waits up to `timeout` (for ever with None) for fds to be ready; appends what is
    /// ready to `out` (at most 256 at once). An interrupted wait returns with none.
    #[allow(unsafe_code)]
    pub fn wait(
        &self,
        out: &mut Vec<Ready>,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        const MAX: usize = 256;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; MAX];
        let millis = match timeout {
            None => -1,
            // Rounded up: a wait that ends early only to find nothing due spins.
            Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int,
        };
        // SAFETY: the kernel writes at most MAX events into `events`, which outlives the
        // call; the epoll fd is ours and open.
        let n = unsafe {
            libc::epoll_wait(
                self.0.as_raw_fd(),
                events.as_mut_ptr(),
                MAX as libc::c_int,
                millis,
            )
        };
        if n < 0 {
            let error = io::Error::last_os_error();
            return match error.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(error),
            };
        }
        let hangup = (libc::EPOLLHUP | libc::EPOLLERR | libc::EPOLLRDHUP) as u32;
        out.extend(events[..n as usize].iter().map(|e| {
            let flags = e.events;
            Ready {
                token: e.u64,
                readable: flags & (libc::EPOLLIN as u32 | hangup) != 0,
                writable: flags & libc::EPOLLOUT as u32 != 0,
            }
        }));
        Ok(())
    }
}

/// An eventfd: one thread's wake-up that any other can raise.
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new one, not raised, non-blocking.
    #[allow(unsafe_code)]
    pub fn new() -> io::Result<Self> {
        // SAFETY: no pointers; a non-negative result is a new fd we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned to us and nobody else holds it.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Raises it (a raised one stays raised until cleared).
    #[allow(unsafe_code)]
    pub fn raise(&self) {
        use std::os::fd::AsRawFd;
        let one = 1u64;
        // SAFETY: writes 8 bytes from `one`, which outlives the call. It fails only when
        // the counter is near overflow, and then it is raised already.
        let _ = unsafe { libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Lowers it.
    #[allow(unsafe_code)]
    pub fn clear(&self) {
        use std::os::fd::AsRawFd;
        let mut count = 0u64;
        // SAFETY: reads 8 bytes into `count`, which outlives the call; non-blocking, so a
        // counter already at zero returns EAGAIN at once.
        let _ = unsafe { libc::read(self.0.as_raw_fd(), (&mut count as *mut u64).cast(), 8) };
    }

    /// The fd, to watch in an epoll set.
    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.0.as_fd()
    }
}

/// Has the C allocator map every block of 128 KiB or more on its own and unmap it when it
/// is freed. Without it glibc raises that threshold after the first such block is freed,
/// and later ones are carved from the heap of the thread that asked; with a thread per
/// connection (each long line's buffer is one) that space then stays with each thread's
/// heap, which `malloc_trim` does not give back. Process-wide, set once.
#[allow(unsafe_code)]
pub fn map_large_blocks() {
    #[cfg(target_env = "gnu")]
    {
        static SET: std::sync::Once = std::sync::Once::new();
        // SAFETY: mallopt only changes the allocator's parameters.
        SET.call_once(|| unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        });
    }
}

/// Hands the C allocator's free memory back to the system (glibc's `malloc_trim`): what a
/// destroyed window freed would otherwise stay counted against the idle process.
#[allow(unsafe_code)]
pub fn release_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes a size and only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The real uid of this process.
#[allow(unsafe_code)]
pub fn uid() -> u32 {
    // SAFETY: getuid cannot fail and touches no memory.
    unsafe { libc::getuid() }
}

/// Resolves when process `pid` exits (its pidfd turns readable). Must run in a tokio runtime.
pub async fn wait_for_exit(pid: u32) -> io::Result<()> {
    let fd = pidfd_open(pid)?;
    #[allow(unsafe_code)]
    // SAFETY: `fd` is an OwnedFd moved into the AsyncFd, so it stays open and keeps its
    // number for the AsyncFd's whole lifetime.
    let fd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    }
    .map_err(|e| e.into_parts().1)?;
    let _ = fd.readable().await?;
    Ok(())
}

/// Lets `fd` survive `exec` (clears `FD_CLOEXEC`), so a child started next inherits it under
/// the same number: how the launcher hands landstrip its trap socket.
#[allow(unsafe_code)]
pub fn inheritable(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor the borrow keeps open; F_GETFD/F_SETFD touch no memory.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFD) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(raw, libc::F_SETFD, flags & !libc::FD_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends signal `signal` to process `pid` (the launcher forwards what it receives).
#[allow(unsafe_code)]
pub fn send_signal(pid: u32, signal: i32) -> io::Result<()> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    if pid <= 0 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill takes a positive pid (never a group) and a signal number; no memory.
    if unsafe { libc::kill(pid, signal) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A signal taken off a [`SignalReceiver`], with who sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceivedSignal {
    /// The signal number.
    pub signal: i32,
    /// The process that sent it with `kill` (or `sigqueue`, `tgkill`); `None` when the
    /// kernel did, as a terminal does for Ctrl-C, Ctrl-\ and a hang-up: to the whole
    /// foreground process group at once.
    pub sender: Option<u32>,
}

/// Where the signal handler writes what it caught (the write end of a pipe), or -1.
static CAUGHT_PIPE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// One caught signal as the handler writes it: number, `si_code`, sender pid.
const RECORD: usize = 3 * std::mem::size_of::<i32>();

/// Signals caught by a handler that only notes them (with who sent each, which a handler
/// installed through tokio does not say) for a [`SignalReceiver`] to read. A handler, not a
/// blocked mask and a signalfd: libraries linked into the binary start threads of their own
/// before `main` (WebKitGTK's JavaScriptCore does), and a signal aimed at the process goes
/// to any thread that does not block it. Caught signals are reset to the default action
/// by `exec`, so children get them as usual.
#[derive(Debug)]
pub struct CaughtSignals {
    read: OwnedFd,
}

impl CaughtSignals {
    /// Installs the handler for `signals` (once per process: a second call fails).
    #[allow(unsafe_code)]
    pub fn catch(signals: &[i32]) -> io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned these fds to us and nothing else owns them.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        use std::os::fd::IntoRawFd;
        let write = write.into_raw_fd();
        if CAUGHT_PIPE
            .compare_exchange(
                -1,
                write,
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
            )
            .is_err()
        {
            // SAFETY: `write` came from into_raw_fd above and is owned by nobody else.
            drop(unsafe { OwnedFd::from_raw_fd(write) });
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "signals are already caught",
            ));
        }
        for &signal in signals {
            // SAFETY: a zeroed sigaction is valid; its mask is emptied and its handler set
            // before it is installed.
            let failed = unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_sigaction = note_signal as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigaction(signal, &action, std::ptr::null_mut()) < 0
            };
            if failed {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(Self { read })
    }

    /// The signals as they arrive; needs a tokio runtime.
    pub fn receiver(self) -> io::Result<SignalReceiver> {
        #[allow(unsafe_code)]
        // SAFETY: the OwnedFd is moved into the AsyncFd, so it stays open and keeps its
        // number for the AsyncFd's whole lifetime.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(
                self.read,
                tokio::io::Interest::READABLE,
            )
        }
        .map_err(|e| e.into_parts().1)?;
        Ok(SignalReceiver { fd })
    }
}

/// The handler: writes one record to the pipe (write(2) is async-signal-safe; errno is
/// kept for the code it interrupted). A full pipe drops the record.
#[allow(unsafe_code)]
extern "C" fn note_signal(signal: i32, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    let fd = CAUGHT_PIPE.load(std::sync::atomic::Ordering::Relaxed);
    if fd < 0 {
        return;
    }
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO; errno is this thread's.
    unsafe {
        let (code, pid) = if info.is_null() {
            (libc::SI_KERNEL, 0)
        } else {
            ((*info).si_code, (*info).si_pid())
        };
        let record = [signal, code, pid];
        let errno = *libc::__errno_location();
        libc::write(fd, record.as_ptr().cast(), RECORD);
        *libc::__errno_location() = errno;
    }
}

/// The asynchronous end of [`CaughtSignals`].
#[derive(Debug)]
pub struct SignalReceiver {
    fd: tokio::io::unix::AsyncFd<OwnedFd>,
}

impl SignalReceiver {
    /// The next caught signal.
    pub async fn recv(&mut self) -> io::Result<ReceivedSignal> {
        loop {
            let mut ready = self.fd.readable().await?;
            match ready.try_io(|fd| read_record(fd.get_ref())) {
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }
}

#[allow(unsafe_code)]
fn read_record(fd: &OwnedFd) -> io::Result<ReceivedSignal> {
    use std::os::fd::AsRawFd;
    let mut record = [0i32; 3];
    // SAFETY: reads at most RECORD bytes into `record`, which has room for exactly that.
    let read = unsafe { libc::read(fd.as_raw_fd(), record.as_mut_ptr().cast(), RECORD) };
    if read < 0 {
        return Err(io::Error::last_os_error());
    }
    // Records are written whole (well under PIPE_BUF), so they are read whole.
    if usize::try_from(read).ok() != Some(RECORD) {
        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
    }
    let [signal, code, pid] = record;
    // SI_USER (0), SI_QUEUE (-1), SI_TKILL (-6)…: sent by a process; positive: the kernel.
    let sender = (code <= 0).then(|| u32::try_from(pid).ok()).flatten();
    Ok(ReceivedSignal { signal, sender })
}

/// Makes this process the parent of its descendants that lose theirs
/// (`PR_SET_CHILD_SUBREAPER`): the launcher waits for a program that outlives landstrip.
#[allow(unsafe_code)]
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer flag; no memory.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Collects the exit status of child `pid` if it has ended (so it leaves no zombie);
/// whether it had.
#[allow(unsafe_code)]
pub fn reap(pid: u32) -> io::Result<bool> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    if pid <= 0 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let mut status = 0;
    // SAFETY: waitpid on one positive pid writes only the status it is given.
    let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if reaped < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(reaped == pid)
}

/// The process group of process `pid` (0: this process).
#[allow(unsafe_code)]
pub fn process_group(pid: u32) -> io::Result<u32> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: getpgid takes a pid and returns a group id or -1; no memory.
    let group = unsafe { libc::getpgid(pid) };
    if group < 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(group).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))
}

/// Ends (SIGTERM) this process's own children whose name (`comm`, at most 15 bytes) is
/// `name`; returns how many were signalled.
pub fn end_children_named(name: &str) -> io::Result<usize> {
    let children = children_named(name)?;
    Ok(children
        .iter()
        .filter(|fd| pidfd_send_signal(fd.as_fd(), libc::SIGTERM).is_ok())
        .count())
}

/// Pidfds of this process's own children whose name (`comm`, at most 15 bytes) is `name`
/// (reads /proc: blocking). Each is checked to be our child again after it was opened, so
/// a pid reused meanwhile is never among them, and a signal sent through it later
/// ([`pidfd_terminate`]) reaches that process or none.
pub fn children_named(name: &str) -> io::Result<Vec<OwnedFd>> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if !is_child_named(pid, me, name) {
            continue;
        }
        let Ok(fd) = pidfd_open(pid) else { continue };
        if is_child_named(pid, me, name) {
            found.push(fd);
        }
    }
    Ok(found)
}

/// Process `pid` is `parent`'s child named `name` (from /proc/PID/status).
fn is_child_named(pid: u32, parent: u32, name: &str) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
    };
    field("Name:") == Some(name) && field("PPid:") == Some(parent.to_string().as_str())
}

/// Ends (SIGTERM) the process behind pidfd `fd`: never another that took its pid.
pub fn pidfd_terminate(fd: &OwnedFd) -> io::Result<()> {
    pidfd_send_signal(fd.as_fd(), libc::SIGTERM)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn only_our_children_of_that_name_are_ended() {
        // A copy of sleep under a name no other test uses: its comm is that name.
        let dir = tempfile::tempdir().expect("tempdir");
        let program = dir.path().join("lt-end-me");
        std::fs::copy("/bin/sleep", &program).expect("copy sleep");
        let mut other = std::process::Command::new("/bin/sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let mut child = std::process::Command::new(&program)
            .arg("30")
            .spawn()
            .expect("spawn the copy");
        // spawn can return before the child has exec'd (its comm is still this thread's
        // name then), and the parent gets no event for the exec: look, bounded.
        let comm = format!("/proc/{}/comm", child.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(&comm)
            .map(|c| c.trim() != "lt-end-me")
            .unwrap_or(true)
        {
            assert!(std::time::Instant::now() < deadline, "the copy never ran");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(end_children_named("lt-end-me").expect("scan /proc"), 1);
        let status = child.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGTERM));
        assert!(
            other.try_wait().expect("try_wait").is_none(),
            "sleep ended too"
        );
        other.kill().expect("kill sleep");
        let _ = other.wait();
    }
}

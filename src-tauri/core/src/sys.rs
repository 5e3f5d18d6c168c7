//! The few Linux calls std does not wrap.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

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

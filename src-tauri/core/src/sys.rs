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

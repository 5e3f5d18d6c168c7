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

/// Ends (SIGTERM) this process's own children whose name (`comm`, at most 15 bytes) is
/// `name`; returns how many were signalled.
pub fn end_children_named(name: &str) -> io::Result<usize> {
    let children = children_named(name)?;
    Ok(children
        .iter()
        .filter(|fd| pidfd_signal(fd, libc::SIGTERM).is_ok())
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
    pidfd_signal(fd, libc::SIGTERM)
}

/// Sends `signal` to the process behind pidfd `fd` (pidfd_send_signal).
#[allow(unsafe_code)]
fn pidfd_signal(fd: &OwnedFd, signal: i32) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal takes an open pidfd (the borrow keeps it open), a signal
    // number, a null siginfo and no flags; no memory is shared.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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

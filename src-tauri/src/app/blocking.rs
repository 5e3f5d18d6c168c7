//! The one way a command runs blocking core work (file I/O, policy writes): on the blocking
//! pool, so it never holds one of the async runtime's two workers, with its error as the
//! sentence the page shows. (The operations of the core's table hop by themselves.)

use super::commands::IpcError;

/// Runs `work` on the blocking pool; its error becomes [`IpcError::Refused`] with its
/// sentence, and a panic there "internal error: …".
pub async fn on_blocking_pool<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, IpcError>
where
    T: Send + 'static,
    E: std::fmt::Display,
{
    tauri::async_runtime::spawn_blocking(move || work().map_err(|e| e.to_string()))
        .await
        .map_err(|e| format!("internal error: {e}"))
        .and_then(|done| done)
        .map_err(IpcError::Refused)
}

//! The one way a command runs blocking core work (file I/O, policy writes): on the blocking
//! pool, so it never holds one of the async runtime's two workers, with its error as the
//! sentence the page shows.

/// Runs `work` on the blocking pool; its error becomes its sentence, and a panic there
/// "internal error: …".
pub async fn on_blocking_pool<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, String>
where
    T: Send + 'static,
    E: std::fmt::Display,
{
    tauri::async_runtime::spawn_blocking(move || work().map_err(|e| e.to_string()))
        .await
        .map_err(|e| format!("internal error: {e}"))?
}

//! landstrip-tray: the Tauri shell around the headless core.

pub mod app;

pub use app::run;

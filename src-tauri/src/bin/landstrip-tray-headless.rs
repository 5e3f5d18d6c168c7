//! `landstrip-tray --headless` runs this binary (exec): the same command line, served
//! without a display. It never references the windowed app, so the linker leaves GTK and
//! WebKit out of it (`readelf -d` lists only libc, libm and libgcc_s); tests/tests/headless.rs
//! checks that, and docs/BENCHMARKS.md has its memory beside the windowed app's.

fn main() -> std::process::ExitCode {
    landstrip_tray::run(None)
}

//! What the benchmarks under `tests/benches/` share: landstrip's query line and the
//! statistics they print.

use std::time::Duration;

/// A write query for `dir/f<id>` by `exe`, as landstrip 0.19.2 writes it (every field).
pub fn write_query_line(id: u64, dir: &str, exe: &str) -> String {
    format!(
        concat!(
            r#"{{"kind":"filesystem","code":"FILESYSTEM_DENIED","state":"query","query_id":"{id}","operation":"write","#,
            r#""path":"{dir}/f{id}","requested_path":"{dir}/f{id}","syscall":"openat","errno":"EACCES","#,
            r#""flags":["O_WRONLY","O_CREAT","O_TRUNC"],"reason":"allow_miss","suggested_grant":{{"allowWrite":"{dir}/f{id}"}},"#,
            r#""process":{{"pid":2434,"exe":"{exe}","cwd":"/home/dev/proj"}},"mechanism":"seccomp"}}"#,
            "\n"
        ),
        id = id,
        dir = dir,
        exe = exe
    )
}

/// The value at quantile `p` (0–1) of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// A duration in microseconds.
pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// A count from the environment variable `name` (a bench's knob), or `default`.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The median (the upper one of an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

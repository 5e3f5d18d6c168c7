//! The app's logging: every `tracing` line goes to stderr (as before) and to a file in
//! the platform log directory (`$XDG_STATE_HOME/landstrip-tray/logs`, see
//! `AppPaths::log_dir`), one file a day (`landstrip-tray.YYYY-MM-DD.log`), at most
//! [`MAX_FILES`] kept and at most [`MAX_FILE_BYTES`] written to each, so the directory
//! never holds more than [`MAX_TOTAL_BYTES`]. A line past a day's budget goes to stderr
//! only. The file writer runs on its own thread (`tracing_appender::non_blocking`): no
//! file I/O on the async workers.

use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing_appender::non_blocking::{NonBlocking, WorkerGuard};
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The log files' name: `landstrip-tray.YYYY-MM-DD.log`.
pub const PREFIX: &str = "landstrip-tray";
/// The log files' extension.
pub const SUFFIX: &str = "log";
/// How many daily files are kept (older ones are removed as a new day's is opened).
pub const MAX_FILES: usize = 5;
/// How much one day's file may take.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most the log directory holds.
pub const MAX_TOTAL_BYTES: u64 = MAX_FILES as u64 * MAX_FILE_BYTES;

const SECS_PER_DAY: u64 = 86_400;

/// Keeps the file writer's thread until the app exits, so its last lines are written.
static GUARD: Mutex<Option<WorkerGuard>> = Mutex::new(None);

/// Sets up logging to stderr and, when the directory can be made, to the log files.
/// `RUST_LOG` filters both (default `info`). Says on stderr if the files cannot be used.
pub fn init(log_dir: &Path) {
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(io::stderr)
        .with_filter(filter());
    let (file, problem) = match file_writer(log_dir) {
        Ok((writer, guard)) => {
            *GUARD.lock().unwrap_or_else(PoisonError::into_inner) = Some(guard);
            let layer = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(writer)
                .with_filter(filter());
            (Some(layer), None)
        }
        Err(e) => (None, Some(e)),
    };
    tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .init();
    match problem {
        Some(e) => tracing::warn!("no log files in {}: {e}", log_dir.display()),
        None => tracing::info!(
            "landstrip-tray {} starting; logs in {}",
            env!("CARGO_PKG_VERSION"),
            log_dir.display()
        ),
    }
}

/// Writes what the file writer still holds: called as the app exits.
pub fn flush() {
    drop(GUARD.lock().unwrap_or_else(PoisonError::into_inner).take());
}

/// The rolling appender, bounded, behind its writer thread.
fn file_writer(log_dir: &Path) -> io::Result<(Capped<NonBlocking>, WorkerGuard)> {
    use std::os::unix::fs::DirBuilderExt;
    // Paths and programs in the log say what the user works on: private.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(log_dir)?;
    let appender = rolling(log_dir)?;
    let today = day(SystemTime::now());
    let used = std::fs::metadata(log_dir.join(file_name(today)))
        .map(|m| m.len())
        .unwrap_or(0);
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let budget = Budget {
        day: today,
        used,
        max: MAX_FILE_BYTES,
        full: false,
    };
    Ok((
        Capped {
            inner: writer,
            budget: Arc::new(Mutex::new(budget)),
        },
        guard,
    ))
}

/// The appender with the rotation and the number of files kept.
fn rolling(log_dir: &Path) -> io::Result<RollingFileAppender> {
    RollingFileAppender::builder()
        .rotation(Rotation::DAILY)
        .filename_prefix(PREFIX)
        .filename_suffix(SUFFIX)
        .max_log_files(MAX_FILES)
        .build(log_dir)
        .map_err(io::Error::other)
}

/// Days since the epoch (UTC, as the appender names its files).
fn day(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) / SECS_PER_DAY
}

/// The appender's file name for a day: `landstrip-tray.YYYY-MM-DD.log`.
fn file_name(day: u64) -> String {
    let (y, m, d) = civil(day);
    format!("{PREFIX}.{y:04}-{m:02}-{d:02}.{SUFFIX}")
}

/// The proleptic Gregorian date (year, month, day) of a day since 1970-01-01: the log
/// files' names and `ctl`'s times (UTC; no time-zone database here).
pub fn civil(day: u64) -> (u64, u64, u64) {
    // Howard Hinnant's days-to-civil, for days on or after the epoch.
    let z = day + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// What one day's file may still take.
#[derive(Debug)]
struct Budget {
    day: u64,
    used: u64,
    max: u64,
    /// A line did not fit today (and the file says so).
    full: bool,
}

/// What to do with a line.
#[derive(Debug, PartialEq, Eq)]
enum Take {
    Write,
    /// The first line over the budget: say so in the file once, then drop.
    Full,
    Drop,
}

impl Budget {
    /// Accounts for a line of `len` bytes on `day`; a new day starts a new budget. Once a
    /// line did not fit, nothing more is written that day.
    fn take(&mut self, day: u64, len: usize) -> Take {
        if day != self.day {
            self.day = day;
            self.used = 0;
            self.full = false;
        }
        let len = len as u64;
        if self.full {
            Take::Drop
        } else if self.used + len <= self.max {
            self.used += len;
            Take::Write
        } else {
            self.full = true;
            Take::Full
        }
    }
}

/// A writer that stops at the day's budget.
#[derive(Clone)]
struct Capped<W> {
    inner: W,
    budget: Arc<Mutex<Budget>>,
}

const FULL_LINE: &[u8] = b"(today's log file is full; further lines go to stderr only)\n";

impl<'a, W: MakeWriter<'a>> MakeWriter<'a> for Capped<W> {
    type Writer = CappedWriter<W::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        CappedWriter {
            inner: self.inner.make_writer(),
            budget: Arc::clone(&self.budget),
        }
    }
}

/// One line's writer.
struct CappedWriter<W> {
    inner: W,
    budget: Arc<Mutex<Budget>>,
}

impl<W: Write> Write for CappedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let take = self
            .budget
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(day(SystemTime::now()), buf.len());
        match take {
            Take::Write => self.inner.write_all(buf)?,
            Take::Full => self.inner.write_all(FULL_LINE)?,
            Take::Drop => {}
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A few files of a few days, a few MB in all.
    const _: () = assert!(MAX_FILES >= 2 && MAX_FILES <= 10);
    const _: () = assert!(MAX_TOTAL_BYTES <= 8 << 20);

    #[test]
    fn a_days_file_stops_at_its_budget() {
        let dir = tempfile::tempdir().expect("tempdir");
        let capped = Capped {
            inner: rolling(dir.path()).expect("appender"),
            budget: Arc::new(Mutex::new(Budget {
                day: day(SystemTime::now()),
                used: 0,
                max: MAX_FILE_BYTES,
                full: false,
            })),
        };
        let line = [b'x'; 1023];
        let mut lines = 0u64;
        while lines * 1024 < 2 * MAX_FILE_BYTES {
            let mut writer = capped.make_writer();
            writer.write_all(&line).expect("write");
            writer.write_all(b"\n").expect("write");
            lines += 1;
        }
        let file = dir.path().join(file_name(day(SystemTime::now())));
        let size = std::fs::metadata(&file).expect("today's file").len();
        assert!(
            size <= MAX_FILE_BYTES + FULL_LINE.len() as u64,
            "{size} bytes written"
        );
        assert!(size >= MAX_FILE_BYTES / 2, "{size} bytes written");
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(text.ends_with(std::str::from_utf8(FULL_LINE).expect("utf-8")));
    }

    #[test]
    fn a_days_budget_stops_writing_once_and_a_new_day_starts_again() {
        let mut budget = Budget {
            day: 10,
            used: 0,
            max: 100,
            full: false,
        };
        assert_eq!(budget.take(10, 60), Take::Write);
        assert_eq!(budget.take(10, 40), Take::Write);
        assert_eq!(budget.take(10, 1), Take::Full);
        assert_eq!(budget.take(10, 1), Take::Drop);
        assert_eq!(budget.take(11, 90), Take::Write);
        let mut nearly = Budget {
            day: 1,
            used: 95,
            max: 100,
            full: false,
        };
        assert_eq!(nearly.take(1, 10), Take::Full);
    }

    #[test]
    fn the_file_name_is_the_appenders() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_513), (2026, 3, 1));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(file_name(20_513), "landstrip-tray.2026-03-01.log");
        // The appender names today's file the same way.
        let dir = tempfile::tempdir().expect("tempdir");
        let mut appender = rolling(dir.path()).expect("appender");
        appender.write_all(b"x\n").expect("write");
        appender.flush().expect("flush");
        let today = file_name(day(SystemTime::now()));
        assert!(dir.path().join(&today).is_file(), "{today}");
    }

    #[test]
    fn old_files_beyond_the_count_are_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let today = day(SystemTime::now());
        for back in 1..=8 {
            std::fs::write(dir.path().join(file_name(today - back)), "old\n").expect("write");
        }
        let mut appender = rolling(dir.path()).expect("appender");
        appender.write_all(b"new\n").expect("write");
        appender.flush().expect("flush");
        let kept = std::fs::read_dir(dir.path()).expect("read_dir").count();
        assert!(kept <= MAX_FILES, "{kept} files kept");
    }
}

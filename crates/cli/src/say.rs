//! What goes to stderr besides errors and warnings: notes, summaries and progress, all
//! silenced by the global `--quiet`.

use std::sync::atomic::{AtomicBool, Ordering};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Sets `--quiet` for the whole run (called once, by `main`).
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given: no notes, summaries or progress on stderr.
pub(crate) fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// `eprintln!` unless `--quiet`: for notes, "wrote …" lines, mode choices and summaries (not
/// for warnings or errors, which always print).
macro_rules! note {
    ($($arg:tt)*) => {
        if !$crate::say::quiet() {
            eprintln!($($arg)*);
        }
    };
}
pub(crate) use note;

/// Standard output, whose write errors say where they happened (`cannot write to stdout: No
/// space left on device`) and keep their kind: a closed pipe stays one, which `main` takes as
/// done (`jitterlab … | head`).
pub(crate) struct Stdout(std::io::StdoutLock<'static>);

/// The command's answer goes here.
pub(crate) fn stdout() -> Stdout {
    Stdout(std::io::stdout().lock())
}

fn named(err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("cannot write to stdout: {err}"))
}

impl std::io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(named)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.write_all(buf).map_err(named)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(named)
    }
}

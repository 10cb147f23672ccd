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

//! Where tests find the team's shared data set (real captures and link traces, never copied
//! into the project).

use std::path::PathBuf;

/// The directory `JITTERLAB_SHARED_DATA` points to, for tests over the shared data.
///
/// Unset: prints that the test skipped and returns `None` (a user's clone). Set: returns the
/// directory (relative paths are taken from the repository root).
///
/// # Panics
/// When the variable is set but the directory does not exist: CI must not skip silently.
pub fn shared_data() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("JITTERLAB_SHARED_DATA") else {
        eprintln!("skipped: JITTERLAB_SHARED_DATA is not set (point it at shared/data)");
        return None;
    };
    let mut dir = PathBuf::from(dir);
    if dir.is_relative() {
        dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(dir);
    }
    assert!(
        dir.is_dir(),
        "JITTERLAB_SHARED_DATA={} is not a directory",
        dir.display()
    );
    Some(dir)
}

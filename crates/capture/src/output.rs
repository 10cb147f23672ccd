//! Output files that are never passed off as complete when they are not.
//!
//! [`AtomicFile`] writes to a hidden temporary file beside the destination and renames it into
//! place only on [`AtomicFile::commit`]; dropped without a commit (an error, a panic), it removes
//! the temporary file, so a half-written output never takes the final name. A destination that
//! exists and is not a regular file (`/dev/stdout`, a FIFO) is written directly instead: it is
//! never replaced by a rename, and write errors on it are errors. The path `-` is standard
//! output, written directly too (no temporary file, `force` does not matter), so that every
//! command writing through [`AtomicFile`] takes `-o -`; such a command must print nothing
//! else on standard output ([`AtomicFile::is_stdout`] tells it so).
//!
//! Every I/O error names the destination (`cannot write /dev/full: No space left on device`,
//! `cannot write standard output: …`), with its kind kept, so callers need add no context of
//! their own.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::Error;

/// A file written in full, then renamed into place.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    /// The temporary file renamed into place on commit; `None` when writing a device directly.
    tmp: Option<PathBuf>,
    out: Option<BufWriter<Sink>>,
}

/// Where the bytes go: a file, or standard output.
#[derive(Debug)]
enum Sink {
    File(File),
    Stdout(io::Stdout),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::File(f) => f.write(buf),
            Self::Stdout(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::File(f) => f.flush(),
            Self::Stdout(s) => s.flush(),
        }
    }
}

impl AtomicFile {
    /// Starts writing `dest`. Without `force`, an existing regular file `dest` is an
    /// [`Error::Exists`]; an existing device or FIFO is written directly, and so is standard
    /// output for the path `-`.
    ///
    /// # Errors
    /// The destination exists (without `force`), or its directory is not writable.
    pub fn create(dest: impl AsRef<Path>, force: bool) -> Result<Self, Error> {
        let dest = dest.as_ref().to_path_buf();
        if crate::source::is_stdio(&dest) {
            return Ok(Self {
                dest,
                tmp: None,
                out: Some(BufWriter::with_capacity(
                    1 << 16,
                    Sink::Stdout(io::stdout()),
                )),
            });
        }
        if let Ok(meta) = fs::metadata(&dest)
            && !meta.is_file()
            && !meta.is_dir()
        {
            // A device or FIFO: write to it (renaming over it would replace the device, and
            // writing to one never destroys a file, so `--force` is not needed).
            let file = OpenOptions::new().write(true).open(&dest).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot open {}: {e}", dest.display()))
            })?;
            return Ok(Self {
                dest,
                tmp: None,
                out: Some(BufWriter::with_capacity(1 << 16, Sink::File(file))),
            });
        }
        if !force && dest.exists() {
            return Err(Error::Exists {
                path: dest.display().to_string(),
            });
        }
        let name = dest.file_name().ok_or_else(|| Error::NotAFileName {
            path: dest.display().to_string(),
        })?;
        let tmp = dest.with_file_name(format!(
            ".{}.partial-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot create {}: {e}", dest.display()))
            })?;
        Ok(Self {
            dest,
            tmp: Some(tmp),
            out: Some(BufWriter::with_capacity(1 << 16, Sink::File(file))),
        })
    }

    /// The final path (`-` for standard output).
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Whether this writes to standard output (the path `-`).
    pub fn is_stdout(&self) -> bool {
        crate::source::is_stdio(&self.dest)
    }

    /// Flushes, syncs and renames the file into place (flushes, for a device or standard
    /// output).
    ///
    /// # Errors
    /// I/O errors; the temporary file is removed on failure.
    pub fn commit(mut self) -> Result<(), Error> {
        let out = self.out.take().expect("commit is called once");
        let sink = out
            .into_inner()
            .map_err(|e| named(&self.dest, e.into_error()))?;
        let (Sink::File(file), Some(tmp)) = (sink, &self.tmp) else {
            return Ok(());
        };
        file.sync_all().map_err(|e| named(&self.dest, e))?;
        drop(file);
        fs::rename(tmp, &self.dest).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot rename {} to {}: {e}",
                    tmp.display(),
                    self.dest.display()
                ),
            )
        })?;
        Ok(())
    }
}

/// `err` as `cannot write DEST: err`, of the same kind (a closed pipe stays one).
fn named(dest: &Path, err: io::Error) -> io::Error {
    let what = if crate::source::is_stdio(dest) {
        "standard output".to_owned()
    } else {
        dest.display().to_string()
    };
    io::Error::new(err.kind(), format!("cannot write {what}: {err}"))
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let out = self.out.as_mut().expect("not committed");
        out.write(buf).map_err(|e| named(&self.dest, e))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        // One error for the whole buffer (the default would name the path once per retry).
        let out = self.out.as_mut().expect("not committed");
        out.write_all(buf).map_err(|e| named(&self.dest, e))
    }

    fn flush(&mut self) -> io::Result<()> {
        let out = self.out.as_mut().expect("not committed");
        out.flush().map_err(|e| named(&self.dest, e))
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.out.take().is_some()
            && let Some(tmp) = &self.tmp
        {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Writes `bytes` to `dest` atomically (see [`AtomicFile`]).
///
/// # Errors
/// As [`AtomicFile::create`] and [`AtomicFile::commit`].
pub fn write_atomic(dest: impl AsRef<Path>, bytes: &[u8], force: bool) -> Result<(), Error> {
    let mut file = AtomicFile::create(dest, force)?;
    file.write_all(bytes)?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device is written, not replaced, and its write errors are errors.
    #[cfg(unix)]
    #[test]
    fn a_full_device_is_an_error_and_stays_a_device() {
        use std::os::unix::fs::FileTypeExt;
        let full = Path::new("/dev/full");
        if !fs::metadata(full).is_ok_and(|m| m.file_type().is_char_device()) {
            eprintln!("skipped: no /dev/full character device here");
            return;
        }
        let mut f = AtomicFile::create(full, false).unwrap();
        f.write_all(b"some bytes").unwrap();
        let err = f.commit().unwrap_err().to_string();
        assert!(err.contains("No space left on device"), "{err}");
        assert!(err.contains("cannot write /dev/full"), "{err}");
        assert!(fs::metadata(full).unwrap().file_type().is_char_device());
        let mut null = AtomicFile::create("/dev/null", false).unwrap();
        null.write_all(b"gone").unwrap();
        null.commit().unwrap();
    }

    /// `-` is standard output: no file named `-`, no temporary file, `force` not needed.
    #[test]
    fn a_dash_is_standard_output() {
        let stdout = AtomicFile::create("-", false).unwrap();
        assert!(stdout.is_stdout() && stdout.tmp.is_none());
        stdout.commit().unwrap();
        assert!(!Path::new("-").exists());
        assert!(!AtomicFile::create("out-", true).unwrap().is_stdout());
    }

    #[test]
    fn uncommitted_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.jtr");
        {
            let mut f = AtomicFile::create(&dest, false).unwrap();
            f.write_all(b"half").unwrap();
        }
        assert!(!dest.exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn commit_renames_and_refuses_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.jtr");
        write_atomic(&dest, b"one", false).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"one");
        assert!(matches!(
            write_atomic(&dest, b"two", false),
            Err(Error::Exists { .. })
        ));
        write_atomic(&dest, b"two", true).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"two");
    }
}

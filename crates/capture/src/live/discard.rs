//! What a failed live command leaves behind: nothing, unless it recorded something.

use std::fs::{self, File};
use std::io::BufReader;
use std::path::Path;

use crate::trace::{Reader, RecordKind};

/// After a capture or a send logging into `path` failed: removes `path` when it is a regular
/// file that holds no datagram (nothing, a header, or stats records only), so that a command
/// that failed before recording anything leaves no output behind. A file that holds datagrams
/// is kept: what a long capture recorded before, say, the disk filled stays readable. Devices,
/// FIFOs and files that cannot be read are never removed. Whether `path` was removed.
pub fn discard_if_empty(path: &Path) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_file() || holds_datagrams(path) {
        return false;
    }
    fs::remove_file(path).is_ok()
}

/// Whether the trace at `path` holds a record other than a stats record (or cannot be read,
/// so cannot be said not to).
fn holds_datagrams(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return true;
    };
    // No header, or a header cut short: nothing was recorded.
    let Ok(mut reader) = Reader::new(BufReader::new(file)) else {
        return false;
    };
    loop {
        match reader.read_record() {
            Ok(Some(r)) if r.kind() == RecordKind::Stats => {}
            Ok(Some(_)) | Err(_) => return true,
            Ok(None) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;
    use crate::trace::{CaptureStats, Clock, Header, Record, Source, Writer};

    fn trace(records: &[Record]) -> Vec<u8> {
        let header = Header::new(
            Clock {
                name: "CLOCK_REALTIME".into(),
                realtime_offset_ns: Some(0),
            },
            Source {
                kind: "live".into(),
                detail: String::new(),
            },
        );
        let mut w = Writer::new(Vec::new(), &header).unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        w.into_inner()
    }

    /// Empty files, bare headers and stats-only traces go; a datagram, a device, a missing
    /// path and a directory stay.
    #[test]
    fn only_files_without_datagrams_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let stats = CaptureStats::default().to_record(Nanos(1));
        let datagram = Record::received(Nanos(2), vec![1, 2, 3]);
        let cases: [(&str, Vec<u8>, bool); 5] = [
            ("empty", Vec::new(), true),
            ("header", trace(&[]), true),
            ("cut", trace(&[])[..5].to_vec(), true),
            ("stats", trace(&[stats.clone(), stats.clone()]), true),
            ("datagram", trace(&[stats, datagram]), false),
        ];
        for (name, bytes, removed) in cases {
            let path = dir.path().join(name);
            fs::write(&path, bytes).unwrap();
            assert_eq!(discard_if_empty(&path), removed, "{name}");
            assert_eq!(path.exists(), !removed, "{name}");
        }
        assert!(!discard_if_empty(&dir.path().join("missing")));
        assert!(!discard_if_empty(dir.path()));
        if cfg!(unix) {
            assert!(!discard_if_empty(Path::new("/dev/null")));
            assert!(Path::new("/dev/null").exists());
        }
    }
}

//! Reading ahead on a second thread: while the caller's thread decodes a batch of records,
//! the reader thread reads and parses the next ones, so reading and decoding overlap on two
//! cores.
//!
//! Batches are handed over a bounded channel and handed back to be filled again: memory stays
//! at a few batches whatever the trace's length, and nothing is allocated per record once the
//! batches have grown to their working size.

use std::io::Read;
use std::sync::mpsc;

use crate::Error;
use crate::trace::{Reader, RecordRef};

/// Records per batch: enough that handing a batch over costs little per record, few enough
/// that a batch (about 200 KB of a probe trace) stays in the cache between the two threads.
const BATCH_RECORDS: usize = 1024;
/// Filled batches waiting for the consumer at most.
const WAITING: usize = 2;

/// Records read ahead: their fields, with the payloads laid end to end in one buffer.
#[derive(Default)]
struct Batch {
    /// Each record with an empty payload; its payload is `bytes[ends[i - 1]..ends[i]]`.
    records: Vec<RecordRef<'static>>,
    ends: Vec<usize>,
    bytes: Vec<u8>,
    /// Set on the last batch: why reading stopped (the end, or an error).
    end: Option<Result<(), Error>>,
}

impl Batch {
    fn push(&mut self, rec: &RecordRef<'_>) {
        self.bytes.extend_from_slice(rec.payload);
        self.ends.push(self.bytes.len());
        self.records.push(RecordRef {
            payload: &[],
            ..*rec
        });
    }

    fn clear(&mut self) {
        self.records.clear();
        self.ends.clear();
        self.bytes.clear();
        self.end = None;
    }
}

/// Calls `each` with every record `reader` has left, in file order, while a second thread
/// reads and parses the records after them; returns how reading ended (as
/// [`Reader::next_ref`] would have: `Ok` at the end of the file, after every complete
/// record, or the first error). The reader's counters ([`Reader::records`],
/// [`Reader::trailing_bytes`]) are up to date when it returns.
///
/// On a machine with one core, or when no thread can be started, the records are read on the
/// caller's thread instead (the same records, in the same order).
///
/// # Errors
/// As [`Reader::next_ref`].
pub fn read_ahead<R: Read + Send>(
    reader: &mut Reader<R>,
    mut each: impl FnMut(&RecordRef<'_>),
) -> Result<(), Error> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cores < 2 {
        while let Some(rec) = reader.next_ref()? {
            each(&rec);
        }
        return Ok(());
    }
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(WAITING);
    let (free_tx, free_rx) = mpsc::channel::<Batch>();
    std::thread::scope(|scope| {
        let ahead = &mut *reader;
        let spawned = std::thread::Builder::new()
            .name("trace reader".into())
            .spawn_scoped(scope, move || fill(ahead, &full_tx, &free_rx));
        if spawned.is_err() {
            // No second thread, so nothing was read yet: read on this one instead.
            return None;
        }
        for mut batch in &full_rx {
            let mut start = 0;
            for (rec, &end) in batch.records.iter().zip(&batch.ends) {
                each(&RecordRef {
                    payload: &batch.bytes[start..end],
                    ..*rec
                });
                start = end;
            }
            if let Some(end) = batch.end.take() {
                return Some(end);
            }
            // The reader may have stopped already; then the batch is simply dropped.
            let _ = free_tx.send(batch);
        }
        // The reader thread ended without its last batch: it panicked, and the scope
        // re-raises that panic when it ends.
        Some(Ok(()))
    })
    .unwrap_or_else(|| {
        while let Some(rec) = reader.next_ref()? {
            each(&rec);
        }
        Ok(())
    })
}

/// The reader thread: fills batches (reusing those handed back) until the file ends.
fn fill<R: Read>(
    reader: &mut Reader<R>,
    full: &mpsc::SyncSender<Batch>,
    free: &mpsc::Receiver<Batch>,
) {
    loop {
        let mut batch = free.try_recv().unwrap_or_default();
        batch.clear();
        while batch.records.len() < BATCH_RECORDS {
            // Hand on what was read before a read that may block: a live pipe's records reach
            // the consumer as they come, not a batch later.
            if !batch.records.is_empty() && !reader.next_is_buffered() {
                break;
            }
            match reader.next_ref() {
                Ok(Some(rec)) => batch.push(&rec),
                Ok(None) => {
                    batch.end = Some(Ok(()));
                    break;
                }
                Err(e) => {
                    batch.end = Some(Err(e));
                    break;
                }
            }
        }
        let last = batch.end.is_some();
        if full.send(batch).is_err() || last {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;
    use crate::trace::{Clock, Header, Record, Source, Writer};

    fn trace(records: usize) -> (Vec<u8>, Vec<Record>) {
        let header = Header::at(Clock::default(), Source::default(), 0);
        let mut w = Writer::new(Vec::new(), &header).unwrap();
        let recs: Vec<Record> = (0..records)
            .map(|i| Record::received(Nanos(i as i64), vec![i as u8; i % 300]))
            .collect();
        for r in &recs {
            w.write(r).unwrap();
        }
        (w.into_inner(), recs)
    }

    #[test]
    fn every_record_in_order_across_batches() {
        let (bytes, want) = trace(3 * BATCH_RECORDS + 17);
        let mut reader = Reader::new(&bytes[..]).unwrap();
        let mut got = Vec::new();
        read_ahead(&mut reader, |r| got.push(r.to_record())).unwrap();
        assert_eq!(got, want);
        assert_eq!(reader.records(), want.len() as u64);
        assert_eq!(reader.trailing_bytes(), 0);
    }

    #[test]
    fn a_cut_tail_and_a_corrupt_record_end_as_the_reader_would() {
        let (bytes, want) = trace(BATCH_RECORDS + 5);
        let cut = &bytes[..bytes.len() - 3];
        let mut reader = Reader::new(cut).unwrap();
        let mut n = 0;
        read_ahead(&mut reader, |_| n += 1).unwrap();
        assert_eq!(n, want.len() - 1);
        assert!(reader.trailing_bytes() > 0);

        let mut damaged = bytes.clone();
        let at = reader.valid_len() as usize;
        damaged[at] = 0xa3; // the last record's array marker made a string marker
        let mut reader = Reader::new(&damaged[..]).unwrap();
        let mut n = 0;
        let err = read_ahead(&mut reader, |_| n += 1).unwrap_err();
        assert!(matches!(err, Error::CorruptRecord { .. }), "{err}");
        assert_eq!(n, want.len() - 1);
    }

    /// A pipe that stays open after a few records: they reach the consumer before the reader
    /// blocks on the next read, not when a batch fills (`info - --every` on a live capture).
    #[test]
    fn records_before_a_blocking_read_are_handed_on() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

        /// Gives its bytes, then blocks until the consumer has seen `want` records (or 10 s
        /// have passed, noted in `timed_out`), then ends.
        struct Gate {
            data: Vec<u8>,
            pos: usize,
            seen: Arc<AtomicUsize>,
            want: usize,
            timed_out: Arc<AtomicBool>,
        }
        impl Read for Gate {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.pos < self.data.len() {
                    let n = buf.len().min(self.data.len() - self.pos);
                    buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
                    self.pos += n;
                    return Ok(n);
                }
                let start = std::time::Instant::now();
                while self.seen.load(Ordering::SeqCst) < self.want {
                    if start.elapsed() > std::time::Duration::from_secs(10) {
                        self.timed_out.store(true, Ordering::SeqCst);
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Ok(0)
            }
        }
        let (bytes, want) = trace(10);
        let seen = Arc::new(AtomicUsize::new(0));
        let timed_out = Arc::new(AtomicBool::new(false));
        let mut reader = Reader::new(Gate {
            data: bytes,
            pos: 0,
            seen: Arc::clone(&seen),
            want: want.len(),
            timed_out: Arc::clone(&timed_out),
        })
        .unwrap();
        read_ahead(&mut reader, |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), want.len());
        assert!(
            !timed_out.load(Ordering::SeqCst),
            "the records waited for the pipe to end"
        );
    }
}

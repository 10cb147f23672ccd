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
use crate::trace::read::Step;
use crate::trace::{Reader, RecordRef};

/// Records per batch: enough that handing a batch over costs little per record, few enough
/// that a batch (about 200 KB of a probe trace) stays in the cache between the two threads.
const BATCH_RECORDS: usize = 1024;
/// Filled batches waiting for the consumer at most.
const WAITING: usize = 2;

/// Records read ahead: their fields, with the payloads laid end to end in one buffer, and
/// on the last batch what the producer returned.
struct Batch<T> {
    /// Each record with an empty payload; its payload is `bytes[ends[i - 1]..ends[i]]`.
    records: Vec<RecordRef<'static>>,
    ends: Vec<usize>,
    bytes: Vec<u8>,
    /// Set on the last batch: how reading ended.
    end: Option<T>,
}

impl<T> Default for Batch<T> {
    fn default() -> Self {
        Self {
            records: Vec::new(),
            ends: Vec::new(),
            bytes: Vec::new(),
            end: None,
        }
    }
}

impl<T> Batch<T> {
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

/// Where a producer hands its records, in order: to the consumer's thread in batches, or
/// straight to the consumer where no second thread runs.
pub trait Feed {
    /// Hands on one record; `false` when the consumer is gone (it panicked): the producer
    /// should stop.
    fn push(&mut self, rec: &RecordRef<'_>) -> bool;
    /// Hands on the records pushed so far now, not when a batch fills: called before a read
    /// that may block (a live pipe's records reach the consumer as they come).
    fn flush(&mut self) -> bool;
}

/// The consumer itself, on the producer's thread.
struct Direct<F>(F);

impl<F: FnMut(&RecordRef<'_>)> Feed for Direct<F> {
    fn push(&mut self, rec: &RecordRef<'_>) -> bool {
        (self.0)(rec);
        true
    }
    fn flush(&mut self) -> bool {
        true
    }
}

/// Batches on their way to the consumer's thread.
struct Batches<'a, T> {
    batch: Batch<T>,
    full: &'a mpsc::SyncSender<Batch<T>>,
    free: &'a mpsc::Receiver<Batch<T>>,
}

impl<T> Batches<'_, T> {
    fn send(&mut self) -> bool {
        let next = self.free.try_recv().unwrap_or_default();
        let batch = std::mem::replace(&mut self.batch, next);
        self.batch.clear();
        self.full.send(batch).is_ok()
    }
}

impl<T> Feed for Batches<'_, T> {
    fn push(&mut self, rec: &RecordRef<'_>) -> bool {
        self.batch.push(rec);
        self.batch.records.len() < BATCH_RECORDS || self.send()
    }
    fn flush(&mut self) -> bool {
        self.batch.records.is_empty() || self.send()
    }
}

/// Runs `produce` on a second thread, and `each` on this one with every record it feeds, in
/// order, while it reads and parses the next ones; returns what `produce` returned. Memory
/// stays at a few batches of records however many there are.
///
/// On a machine with one core, or when no thread can be started, `produce` runs on the
/// caller's thread and feeds `each` directly (the same records, in the same order).
pub fn ahead<T: Send>(
    produce: impl FnOnce(&mut dyn Feed) -> T + Send,
    mut each: impl FnMut(&RecordRef<'_>),
) -> T {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cores < 2 {
        return produce(&mut Direct(each));
    }
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch<T>>(WAITING);
    let (free_tx, free_rx) = mpsc::channel::<Batch<T>>();
    let mut produce = Some(produce);
    let ended = std::thread::scope(|scope| {
        let work = &mut produce;
        let spawned = std::thread::Builder::new()
            .name("trace reader".into())
            .spawn_scoped(scope, move || {
                let Some(produce) = work.take() else {
                    return;
                };
                let mut feed = Batches {
                    batch: Batch::default(),
                    full: &full_tx,
                    free: &free_rx,
                };
                let end = produce(&mut feed);
                feed.batch.end = Some(end);
                // The consumer may be gone (it panicked); the scope re-raises that.
                let _ = full_tx.send(feed.batch);
            });
        if spawned.is_err() {
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
            // The producer may have stopped already; then the batch is simply dropped.
            let _ = free_tx.send(batch);
        }
        // The producer ended without its last batch: it panicked, and the scope re-raises
        // that panic when it ends.
        None
    });
    match (ended, produce) {
        (Some(end), _) => end,
        // No second thread was started, so nothing was produced yet: produce on this one.
        (None, Some(produce)) => produce(&mut Direct(each)),
        (None, None) => unreachable!("the producer thread panicked and the scope re-raised it"),
    }
}

/// Calls `each` with every record `reader` has left, in file order, while a second thread
/// reads and parses the records after them ([`ahead`]); returns how reading ended (as
/// [`Reader::next_ref`] would have: `Ok` at the end of the file, after every complete
/// record, or the first error). The reader's counters ([`Reader::records`],
/// [`Reader::trailing_bytes`]) are up to date when it returns.
///
/// # Errors
/// As [`Reader::next_ref`].
pub fn read_ahead<R: Read + Send>(
    reader: &mut Reader<R>,
    each: impl FnMut(&RecordRef<'_>),
) -> Result<(), Error> {
    ahead(|feed| fill(reader, feed), each)
}

/// The producer: feeds every record, handing on what was read before a read that may block.
fn fill<R: Read>(reader: &mut Reader<R>, feed: &mut dyn Feed) -> Result<(), Error> {
    loop {
        let rec = match reader.next_ref_buffered()? {
            Step::Record(rec) => rec,
            Step::End => return Ok(()),
            Step::WouldRead => {
                if !feed.flush() {
                    return Ok(());
                }
                match reader.next_ref()? {
                    Some(rec) => rec,
                    None => return Ok(()),
                }
            }
        };
        if !feed.push(&rec) {
            return Ok(());
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

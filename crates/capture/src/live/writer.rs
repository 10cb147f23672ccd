//! The writer thread: drains the receivers' queue into the trace, feeds the status line,
//! writes a stats record every second and flushes on a timer.

use std::fs::File;
use std::io::{self, BufWriter};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use crate::Error;
use crate::live::FLUSH_INTERVAL;
use crate::live::shared::Shared;
use crate::live::socket::realtime;
use crate::live::status::LiveStats;
use crate::trace::{Record, Writer};

/// Writes every record the receivers queue until the queue closes, then the last stats
/// record, and syncs the file; the number of records written.
pub(super) fn write_loop(
    mut w: Writer<BufWriter<File>>,
    rx: &Receiver<Record>,
    shared: &Shared,
    live: &Mutex<LiveStats>,
) -> Result<u64, Error> {
    let result = write_records(&mut w, rx, shared, live);
    let records = w.records();
    // A full disk or a vanished output: say how much the file holds. Records are written
    // whole into the buffer, so the file is every complete record up to the failure (the
    // reader reports a cut-off last record as trailing bytes).
    let written = |e: Error| match e {
        Error::Io(io) => Error::Io(io::Error::new(
            io.kind(),
            format!(
                "{io}; the file holds the {records} records written before the failure and reads back"
            ),
        )),
        other => other,
    };
    result.map_err(written)?;
    let file = w
        .into_inner()
        .into_inner()
        .map_err(|e| written(Error::Io(e.into_error())))?;
    file.sync_all().map_err(|e| written(Error::Io(e)))?;
    Ok(records)
}

/// A batch this large means the writer is behind: no pause before the next.
const WRITER_BATCH: usize = 256;
/// The writer's pause between small batches.
const WRITER_PAUSE: Duration = Duration::from_millis(1);

fn write_records(
    w: &mut Writer<BufWriter<File>>,
    rx: &Receiver<Record>,
    shared: &Shared,
    live: &Mutex<LiveStats>,
) -> Result<(), Error> {
    let mut last_flush = Instant::now();
    let mut last_stats = Instant::now();
    let mut batch = Vec::with_capacity(4096);
    loop {
        let first = match rx.recv_timeout(FLUSH_INTERVAL / 2) {
            Ok(r) => Some(r),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        batch.extend(first);
        batch.extend(rx.try_iter().take(4095));
        if let Ok(mut l) = live.lock() {
            for r in &batch {
                l.push(r);
            }
        }
        let busy = batch.len() >= WRITER_BATCH;
        for r in batch.drain(..) {
            w.write(&r)?;
        }
        if !busy {
            // Let datagrams gather instead of waking for each one: at 100,000/s a wake-up per
            // datagram costs the receiving thread more than the datagram itself. The queue
            // holds far more than arrives in this pause.
            thread::sleep(WRITER_PAUSE);
        }
        if last_stats.elapsed() >= Duration::from_secs(1) {
            last_stats = Instant::now();
            w.write(&shared.counters.stats(false).to_record(realtime()))?;
        }
        if last_flush.elapsed() >= FLUSH_INTERVAL {
            last_flush = Instant::now();
            w.flush()?;
        }
    }
    w.write(&shared.counters.stats(true).to_record(realtime()))
}

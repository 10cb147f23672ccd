//! What the receiver threads share: the counters behind the stats records and the summary,
//! the stop flag, and the bounded queue to the writer.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};

use crate::live::socket::{Datagram, monotonic, realtime};
use crate::trace::{CaptureStats, Direction, Endpoint, Record, flags};

#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) received: AtomicU64,
    pub(super) kernel_drops: AtomicU64,
    pub(super) queue_drops: AtomicU64,
    pub(super) user_timestamps: AtomicU64,
    pub(super) kernel_timestamps: AtomicU64,
    pub(super) forwarded: AtomicU64,
    pub(super) impaired_drops: AtomicU64,
    pub(super) duplicates_added: AtomicU64,
    pub(super) unforwarded: AtomicU64,
    pub(super) send_failures: AtomicU64,
    pub(super) unreleased: AtomicU64,
}

impl Counters {
    pub(super) fn stats(&self, last: bool) -> CaptureStats {
        CaptureStats {
            realtime_ns: realtime().as_nanos(),
            monotonic_ns: monotonic().as_nanos(),
            received: self.received.load(Ordering::Relaxed),
            kernel_drops: self.kernel_drops.load(Ordering::Relaxed),
            queue_drops: self.queue_drops.load(Ordering::Relaxed),
            user_timestamps: self.user_timestamps.load(Ordering::Relaxed),
            last,
        }
    }
}

/// Everything the receiver threads share.
pub(super) struct Shared {
    pub(super) counters: Counters,
    pub(super) stop: AtomicBool,
    /// Taken away at the end so the writer sees the queue close.
    pub(super) tx: Mutex<Option<SyncSender<Record>>>,
    pub(super) count: Option<u64>,
}

impl Shared {
    /// Queues a record; a full queue is counted, never waited on.
    pub(super) fn push(&self, rec: Record) {
        let sent = match self.tx.lock() {
            Ok(tx) => match tx.as_ref().map(|tx| tx.try_send(rec)) {
                Some(Ok(())) => true,
                Some(Err(TrySendError::Full(_) | TrySendError::Disconnected(_))) | None => false,
            },
            Err(_) => false,
        };
        if !sent {
            self.counters.queue_drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts an ingress datagram; stops the capture once `count` is reached.
    pub(super) fn received(&self, d: &Datagram) {
        let c = &self.counters;
        c.kernel_drops
            .fetch_add(u64::from(d.new_drops), Ordering::Relaxed);
        if d.kernel {
            c.kernel_timestamps.fetch_add(1, Ordering::Relaxed);
        } else {
            c.user_timestamps.fetch_add(1, Ordering::Relaxed);
        }
        let n = c.received.fetch_add(1, Ordering::Relaxed) + 1;
        if self.count.is_some_and(|max| n >= max) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The record of a datagram as received.
pub(super) fn record(
    d: &Datagram,
    payload: &[u8],
    src: SocketAddr,
    dst: SocketAddr,
    dir: Direction,
) -> Record {
    let mut rec = Record::received(d.time, payload.to_vec());
    rec.flags = if d.kernel { flags::KERNEL_TIMESTAMP } else { 0 };
    rec.direction = dir;
    rec.src = Some(Endpoint(src));
    rec.dst = Some(Endpoint(dst));
    rec.orig_len = u32::try_from(d.orig_len).unwrap_or(u32::MAX);
    rec
}

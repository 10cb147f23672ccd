//! The live decode behind the status line: streams, loss and jitter as the writer sees them.

use std::time::Duration;

use crate::decode::{DecoderConfig, StreamDecoder};
use crate::stats::Jitter;
use crate::trace::{Record, RecordKind};

/// What the status line shows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Status {
    /// Time since the capture started.
    pub elapsed: Duration,
    /// Datagrams received from the sockets.
    pub packets: u64,
    /// Streams seen.
    pub streams: usize,
    /// Sequence numbers missing so far, summed over streams.
    pub lost: u64,
    /// RFC 3550 jitter of the busiest stream, ms.
    pub jitter_ms: f64,
    /// Kernel and queue drops so far.
    pub drops: u64,
}

/// One stream's running figures for the status line, as far as the writer has seen it.
#[derive(Clone, Debug)]
struct StreamStatus {
    /// RFC 3550 interarrival jitter so far.
    jitter: Jitter,
    /// The lowest sequence number seen.
    first_seq: i64,
    /// The highest sequence number seen.
    last_seq: i64,
    /// Packets decoded (duplicates included).
    received: u64,
}

impl Default for StreamStatus {
    /// A stream with nothing seen yet: the sequence range is empty until the first packet.
    fn default() -> Self {
        Self {
            jitter: Jitter::default(),
            first_seq: i64::MAX,
            last_seq: i64::MIN,
            received: 0,
        }
    }
}

impl StreamStatus {
    /// Sequence numbers in the range seen that did not arrive (0 when duplicates outnumber
    /// them).
    fn lost(&self) -> u64 {
        u64::try_from(self.last_seq - self.first_seq + 1)
            .unwrap_or(0)
            .saturating_sub(self.received)
    }
}

/// Streams, loss and jitter as the writer sees them, for the status line.
pub(super) struct LiveStats {
    decoder: Option<StreamDecoder>,
    config: Option<DecoderConfig>,
    /// Indexed by the decoder's stream number.
    streams: Vec<StreamStatus>,
}

impl LiveStats {
    pub(super) fn new(config: Option<DecoderConfig>) -> Self {
        Self {
            decoder: None,
            config,
            streams: Vec::new(),
        }
    }

    /// Counts one record: received packets only; the decoder is picked at the first one.
    pub(super) fn push(&mut self, rec: &Record) {
        if rec.kind != RecordKind::Received {
            return;
        }
        let config = &self.config;
        let decoder = self.decoder.get_or_insert_with(|| {
            let config = config
                .clone()
                .unwrap_or_else(|| DecoderConfig::sniff(&rec.payload));
            StreamDecoder::new(config, Vec::new())
        });
        let Ok(sample) = decoder.decode(rec) else {
            return;
        };
        let i = sample.stream as usize;
        if i >= self.streams.len() {
            self.streams.resize(i + 1, StreamStatus::default());
        }
        let s = &mut self.streams[i];
        s.jitter.push(sample.send, sample.arrival, !sample.marker);
        s.first_seq = s.first_seq.min(sample.seq);
        s.last_seq = s.last_seq.max(sample.seq);
        s.received += 1;
    }

    /// The decoded part of the status (streams, loss, jitter); the caller fills in the rest.
    pub(super) fn status(&self) -> Status {
        let lost = self.streams.iter().map(StreamStatus::lost).sum();
        let jitter_ms = self
            .streams
            .iter()
            .max_by_key(|s| s.received)
            .map_or(0.0, |s| s.jitter.current_ms());
        Status {
            streams: self.streams.len(),
            lost,
            jitter_ms,
            ..Status::default()
        }
    }
}

//! Records in, a [`Decoded`](super::Decoded) out: the collector behind `decode_trace` and the capture imports.

use std::io::Read;

use super::{Decoded, DecoderConfig, DecoderKind, StreamDecoder};
use crate::Error;
use crate::sdp::RtpMap;
use crate::trace::{Header, Reader, Record, RecordKind};

/// The most skip reasons kept as examples.
const MAX_SKIP_EXAMPLES: usize = 5;

/// Decodes records one by one into a [`Decoded`], as [`decode_trace`] and capture imports do.
#[derive(Debug)]
pub struct Collector {
    /// `None` until the first packet when the header names no decoder (live captures without
    /// `--decoder`): the first payload then picks probe (by its magic) or RTP.
    decoder: Option<StreamDecoder>,
    header: Header,
    channels: Vec<String>,
    /// Payload maps found before the decoder exists.
    pending_maps: Vec<RtpMap>,
    out: Decoded,
    records: u64,
}

impl Collector {
    /// A collector for a trace with `header`; `config` overrides the decoder it names.
    ///
    /// # Errors
    /// The header names no usable decoder and none is given.
    pub fn new(header: &Header, config: Option<DecoderConfig>) -> Result<Self, Error> {
        let config = match config {
            Some(c) => Some(c),
            None if header.decoder.is_none() => None,
            None => Some(DecoderConfig::from_header(header)?),
        };
        let mut channels: Vec<String> = header
            .hints
            .get("channels")
            .map(|c| {
                c.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(DecoderKind::Layout(l)) = config.as_ref().map(|c| &c.kind)
            && channels.is_empty()
        {
            channels = l.channels();
        }
        Ok(Self {
            decoder: config.map(|c| StreamDecoder::new(c, channels.clone())),
            header: header.clone(),
            channels,
            pending_maps: Vec::new(),
            out: Decoded::default(),
            records: 0,
        })
    }

    /// Adds payload maps found while reading (see [`StreamDecoder::add_rtpmaps`]).
    pub fn add_rtpmaps(&mut self, maps: Vec<RtpMap>) {
        if maps.is_empty() {
            return;
        }
        match &mut self.decoder {
            Some(d) => d.add_rtpmaps(maps),
            None => self.pending_maps.extend(maps),
        }
    }

    /// Decodes one record (skips and counts what cannot be decoded).
    pub fn push(&mut self, rec: &Record) {
        let index = self.records;
        self.records += 1;
        let kind = rec.kind();
        match kind {
            RecordKind::Other(_) => {
                self.out.unknown_records += 1;
                return;
            }
            RecordKind::Stats => {
                match crate::trace::CaptureStats::from_record(rec) {
                    Some(stats) => self.out.capture_stats = Some(stats),
                    None => self.out.unknown_records += 1,
                }
                return;
            }
            RecordKind::Received | RecordKind::Sent => {}
        }
        let (channels, header, pending) = (&self.channels, &self.header, &mut self.pending_maps);
        let decoder = self.decoder.get_or_insert_with(|| {
            let mut config = DecoderConfig::sniff(&rec.payload);
            config.add_hints(header);
            config.rtpmaps.append(pending);
            StreamDecoder::new(config, channels.clone())
        });
        match decoder.decode(rec) {
            Ok(sample) if kind == RecordKind::Sent => self.out.truth.push(sample),
            Ok(sample) => self.out.samples.push(sample),
            Err(err) => {
                self.out.skipped += 1;
                if self.out.skip_examples.len() < MAX_SKIP_EXAMPLES {
                    self.out
                        .skip_examples
                        .push(format!("record {index}: {err}"));
                }
            }
        }
    }

    /// The decoded trace.
    pub fn finish(mut self) -> Decoded {
        self.out.streams = self
            .decoder
            .map(StreamDecoder::into_streams)
            .unwrap_or_default();
        self.out
    }
}

/// Reads a whole trace and decodes it.
///
/// `config` overrides the decoder named in the header.
///
/// # Errors
/// Trace read errors ([`Error::CorruptRecord`], I/O) and a header with no usable decoder.
pub fn decode_trace<R: Read>(
    mut reader: Reader<R>,
    config: Option<DecoderConfig>,
) -> Result<Decoded, Error> {
    let mut collector = Collector::new(reader.header(), config)?;
    while let Some(rec) = reader.read_record()? {
        collector.push(&rec);
    }
    let mut out = collector.finish();
    out.trailing_bytes = reader.trailing_bytes();
    Ok(out)
}

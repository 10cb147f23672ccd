//! Records in, a [`Decoded`](super::Decoded) out: the collector behind `decode_trace` and the
//! capture imports.
//!
//! Without a decoder named (captures, and live traces recorded without `--decoder`), each flow
//! is judged by its first packets (see [`super::flow`]); its packets wait, in arrival order,
//! until it is decided (at most [`flow::MAX_WAITING`] of them). Samples come out in arrival
//! order whatever the decisions.
//!
//! Each record's samples are handed, as soon as they are decoded, to the collector's
//! [`SampleSink`]: [`KeepAll`] keeps them all (what [`Collector::finish`] returns as a
//! [`Decoded`]); a streaming consumer (`jitterlab info`'s [`crate::stats::Accumulator`]) folds
//! them into per-stream state and lets them go, and takes the trace's bookkeeping from
//! [`Collector::finish_parts`]. The post-passes that need whole streams (send and clock-rate
//! inference) are then the consumer's to do on what it kept; the renumbering of streams needs
//! only the per-stream counts the collector keeps itself ([`Finished::new_id`]).

use std::collections::{HashMap, VecDeque};

use super::flow::{self, Evidence, FlowClass, FlowSummary};
use super::stream::{Read, StreamDecoder};
use super::{Decoded, DecoderConfig, DecoderKind, Sample, SendInference, StreamInfo, clock};
use crate::Error;
use crate::sdp::RtpMap;
use crate::trace::{Endpoint, Header, Reader, Record, RecordKind, RecordRef};

/// The most skip reasons kept as examples.
const MAX_SKIP_EXAMPLES: usize = 5;

/// A flow: one direction of a 5-tuple, apart for received and ground-truth records.
type FlowKey = (Option<Endpoint>, Option<Endpoint>, bool);

/// What is known of one flow.
#[derive(Debug)]
struct Flow {
    /// How its packets are read, once decided.
    read: Option<Read>,
    /// The evidence while undecided.
    evidence: Option<Evidence>,
    /// Its summary in [`Decoded::flows`] (received records only).
    summary: Option<usize>,
    /// Its number in the stream decoder (shared by received and ground-truth records).
    pair: u32,
}

/// Where a [`Collector`] puts the samples it decodes, record by record, in arrival order.
pub trait SampleSink {
    /// The samples one record carried (none, one, or several for a transport's datagram), all
    /// received (`truth` false) or all ground truth; `streams` are the streams known so far,
    /// indexed by [`Sample::stream`] (the numbers before [`Finished::new_id`] renumbers them).
    /// The sink takes what it wants out of `samples`; whatever is left is dropped.
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, streams: &[StreamInfo]);
}

/// The sink that keeps every sample: what [`Collector::finish`] returns in a [`Decoded`].
#[derive(Debug, Default)]
pub struct KeepAll {
    samples: Vec<Sample>,
    truth: Vec<Sample>,
}

impl SampleSink for KeepAll {
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, _: &[StreamInfo]) {
        if truth {
            self.truth.append(samples);
        } else {
            self.samples.append(samples);
        }
    }
}

/// What a [`Collector`] knows at the end of a trace, apart from the samples its sink took.
#[derive(Debug)]
pub struct Finished<S> {
    /// The trace's streams (renumbered: see [`Self::new_id`]), flows and counts; `samples`
    /// and `truth` are empty (the samples went to the sink).
    pub decoded: Decoded,
    /// The sink.
    pub sink: S,
    /// Per stream number as the sink saw it, its number in `decoded.streams`, or `u32::MAX`
    /// for a stream dropped as a stray (a few RTP-looking packets inside another flow).
    pub new_id: Vec<u32>,
    /// Per stream number as the sink saw it, whether any of its transport messages came
    /// without a send time (its send times are then inferred from its sequence numbers).
    pub unstamped: Vec<bool>,
    /// Per stream number as the sink saw it, the received samples decoded.
    pub counts: Vec<u64>,
}

/// Decodes records one by one into a [`Decoded`], as [`decode_trace`] and capture imports do,
/// or into any other [`SampleSink`].
#[derive(Debug)]
pub struct Collector<S = KeepAll> {
    decoder: StreamDecoder,
    keys: HashMap<FlowKey, usize>,
    /// The previous record's flow, per kind (received, sent): most records belong to the same
    /// flow as the one of their kind before (a trace with ground truth alternates the two).
    last: [Option<(FlowKey, usize)>; 2],
    flows: Vec<Flow>,
    /// Records whose flow is undecided, and those after them, in arrival order, with their
    /// index in the input and flow.
    waiting: VecDeque<(Record, u64, usize)>,
    out: Decoded,
    records: u64,
    sink: S,
    /// One record's samples, on their way to the sink.
    scratch: Vec<Sample>,
    /// Per stream, the received samples decoded.
    counts: Vec<u64>,
}

impl Collector<KeepAll> {
    /// A collector for a trace with `header` that keeps every sample; `config` overrides the
    /// decoder it names. A header that names none (and no `config`) has every flow judged by
    /// its packets.
    ///
    /// # Errors
    /// The header names an unknown decoder.
    pub fn new(header: &Header, config: Option<DecoderConfig>) -> Result<Self, Error> {
        Self::with_sink(header, config, KeepAll::default())
    }

    /// The decoded trace: every flow decided, every waiting record decoded, and clock rates
    /// inferred for RTP streams that have none.
    pub fn finish(self) -> Decoded {
        let (finished, judged) = self.finish_raw();
        let Finished {
            mut decoded,
            sink,
            unstamped,
            counts,
            ..
        } = finished;
        decoded.samples = sink.samples;
        decoded.truth = sink.truth;
        // Before the renumbering, while stream ids are indices.
        infer_sends(&mut decoded, &unstamped);
        let new_id = tidy_streams(&mut decoded, &counts, judged);
        if new_id
            .iter()
            .enumerate()
            .any(|(old, &new)| old as u32 != new)
        {
            for list in [&mut decoded.samples, &mut decoded.truth] {
                list.retain(|s| new_id[s.stream as usize] != u32::MAX);
                for s in list.iter_mut() {
                    s.stream = new_id[s.stream as usize];
                }
            }
        }
        infer_clock_rates(&mut decoded);
        decoded
    }
}

impl<S: SampleSink> Collector<S> {
    /// A collector for a trace with `header` that hands each record's samples to `sink`;
    /// `config` as in [`Collector::new`].
    ///
    /// # Errors
    /// The header names an unknown decoder.
    pub fn with_sink(
        header: &Header,
        config: Option<DecoderConfig>,
        sink: S,
    ) -> Result<Self, Error> {
        let config = match config {
            Some(c) => c,
            None if header.decoder.is_none() => {
                let mut c = DecoderConfig::new(DecoderKind::Auto);
                c.add_hints(header);
                c
            }
            None => DecoderConfig::from_header(header)?,
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
        if let DecoderKind::Layout(l) = &config.kind
            && channels.is_empty()
        {
            channels = l.channels();
        }
        Ok(Self {
            decoder: StreamDecoder::new(config, channels),
            keys: HashMap::new(),
            last: [None; 2],
            flows: Vec::new(),
            waiting: VecDeque::new(),
            out: Decoded::default(),
            records: 0,
            sink,
            scratch: Vec::new(),
            counts: Vec::new(),
        })
    }

    /// The sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The sink, to take what it gathered so far.
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    /// What is known so far apart from the samples, for a running summary: the streams as
    /// numbered so far, the flows and counts (no inference, no renumbering; records still
    /// waiting for their flow to be decided are not counted yet).
    pub fn peek(&self) -> Decoded {
        Decoded {
            streams: self.decoder.streams().to_vec(),
            flows: self.out.flows.clone(),
            skipped: self.out.skipped,
            skip_examples: self.out.skip_examples.clone(),
            unknown_records: self.out.unknown_records,
            capture_stats: self.out.capture_stats,
            ..Decoded::default()
        }
    }

    /// Per stream (numbered as the sink sees them), the received samples decoded so far.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Records pushed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Adds payload maps found while reading (see [`StreamDecoder::add_rtpmaps`]).
    pub fn add_rtpmaps(&mut self, maps: Vec<RtpMap>) {
        if !maps.is_empty() {
            self.decoder.add_rtpmaps(maps);
        }
    }

    /// How a flow is read when the decoder is named (`None` for `auto`: judged by evidence).
    fn named_read(&self) -> Option<(Read, &'static str)> {
        Some(match &self.decoder.config().kind {
            DecoderKind::Rtp => (Read::Media, "rtp"),
            DecoderKind::Probe => (Read::Probe, "probe"),
            DecoderKind::Layout(_) => (Read::Layout, "layout"),
            DecoderKind::Transport(t) => (Read::Transport(*t), t.name()),
            DecoderKind::Udp => (Read::Plain, "udp"),
            DecoderKind::Periodic => (Read::Plain, "periodic"),
            DecoderKind::Auto => return None,
        })
    }

    fn flow_of(&mut self, rec: &RecordRef<'_>) -> usize {
        let key = (rec.src, rec.dst, rec.kind() == RecordKind::Sent);
        if let Some((k, i)) = self.last[usize::from(key.2)]
            && k == key
        {
            return i;
        }
        let i = match self.keys.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.flows.len();
                let summary = (!key.2).then(|| {
                    self.out.flows.push(FlowSummary::new(rec.src, rec.dst));
                    self.out.flows.len() - 1
                });
                let named = self.named_read();
                if let (Some(s), Some((_, name))) = (summary, named) {
                    self.out.flows[s].protocol = name;
                }
                let pair = self.decoder.pair_of(rec.src, rec.dst);
                self.flows.push(Flow {
                    read: named.map(|(r, _)| r),
                    evidence: named.is_none().then(Evidence::new),
                    summary,
                    pair,
                });
                self.keys.insert(key, i);
                i
            }
        };
        self.last[usize::from(key.2)] = Some((key, i));
        i
    }

    /// Decides flow `i` on the evidence it has.
    fn decide(&mut self, i: usize) {
        let flow = &mut self.flows[i];
        let Some(evidence) = flow.evidence.take() else {
            return;
        };
        let (read, name) = match evidence.decide() {
            FlowClass::Media => (Read::Media, evidence.media_name()),
            FlowClass::Probe => (Read::Probe, "probe"),
            FlowClass::Transport(t) => (Read::Transport(t), t.name()),
            FlowClass::Udp => (Read::Plain, "udp"),
        };
        flow.read = Some(read);
        if let Some(s) = flow.summary {
            self.out.flows[s].protocol = name;
        }
    }

    /// Decodes one record (skips and counts what cannot be decoded).
    pub fn push(&mut self, rec: &Record) {
        self.push_ref(&rec.view());
    }

    /// Decodes one borrowed record, as [`Self::push`] (the payload is copied only while its
    /// flow waits to be judged).
    pub fn push_ref(&mut self, rec: &RecordRef<'_>) {
        let index = self.records;
        self.records += 1;
        match rec.kind() {
            RecordKind::Other(_) => {
                self.out.unknown_records += 1;
                return;
            }
            RecordKind::Stats => {
                match crate::trace::CaptureStats::from_payload(rec.payload) {
                    Some(stats) => self.out.capture_stats = Some(stats),
                    None => self.out.unknown_records += 1,
                }
                return;
            }
            RecordKind::Received | RecordKind::Sent => {}
        }
        let i = self.flow_of(rec);
        if let Some(s) = self.flows[i].summary {
            let summary = &mut self.out.flows[s];
            summary.packets += 1;
            summary.bytes += u64::from(rec.orig_len.max(rec.payload.len() as u32));
            summary.first = summary.first.min(rec.time);
            summary.last = summary.last.max(rec.time);
        }
        if let Some(e) = &mut self.flows[i].evidence {
            e.push(rec.payload);
            if e.packets() >= flow::EVIDENCE {
                self.decide(i);
            }
        }
        if self.waiting.is_empty() && self.flows[i].read.is_some() {
            self.decode(rec, index, i);
            return;
        }
        self.waiting.push_back((rec.to_record(), index, i));
        if self.waiting.len() > flow::MAX_WAITING
            && let Some(&(_, _, oldest)) = self.waiting.front()
        {
            self.decide(oldest);
        }
        self.drain();
    }

    /// Decodes the waiting records whose flows are decided, up to the first that is not.
    fn drain(&mut self) {
        while let Some((_, _, i)) = self.waiting.front() {
            if self.flows[*i].read.is_none() {
                return;
            }
            if let Some((rec, index, i)) = self.waiting.pop_front() {
                self.decode(&rec.view(), index, i);
            }
        }
    }

    fn decode(&mut self, rec: &RecordRef<'_>, index: u64, i: usize) {
        let Some(read) = self.flows[i].read else {
            return;
        };
        let summary = self.flows[i].summary;
        let flows = &mut self.out.flows;
        // A packet that fails leaves no sample behind.
        let out = &mut self.scratch;
        out.clear();
        let pair = self.flows[i].pair;
        let result = self.decoder.decode_all(read, rec, pair, out, |what| {
            if let Some(s) = summary {
                *flows[s].counted.entry(what).or_default() += 1;
            }
        });
        if let Err(err) = result {
            out.clear();
            if let Some(s) = summary {
                let f = &mut self.out.flows[s];
                f.skipped += 1;
                f.skip_example
                    .get_or_insert_with(|| format!("record {index}: {err}"));
            }
            self.out.skipped += 1;
            if self.out.skip_examples.len() < MAX_SKIP_EXAMPLES {
                self.out
                    .skip_examples
                    .push(format!("record {index}: {err}"));
            }
            return;
        }
        let truth = rec.kind() == RecordKind::Sent;
        if !truth {
            for s in out.iter() {
                let id = s.stream as usize;
                if id >= self.counts.len() {
                    self.counts.resize(id + 1, 0);
                }
                self.counts[id] += 1;
            }
        }
        if !out.is_empty() {
            self.sink.samples(out, truth, self.decoder.streams());
        }
    }

    /// Every flow decided and every waiting record decoded: the trace's streams (stray RTP
    /// SSRCs dropped, plain UDP flows numbered last, as [`Collector::finish`] numbers them),
    /// flows and counts, and the sink. Send and clock-rate
    /// inference are left to the caller ([`Collector::finish`] does them on the samples it
    /// kept).
    pub fn finish_parts(self) -> Finished<S> {
        let (mut finished, judged) = self.finish_raw();
        finished.new_id = tidy_streams(&mut finished.decoded, &finished.counts, judged);
        finished
    }

    /// As [`Self::finish_parts`] before the renumbering (`new_id` empty), and whether flows
    /// were judged by their packets.
    fn finish_raw(mut self) -> (Finished<S>, bool) {
        for i in 0..self.flows.len() {
            self.decide(i);
        }
        self.drain();
        let judged = matches!(self.decoder.config().kind, DecoderKind::Auto);
        let (streams, unstamped) = self.decoder.into_parts();
        self.out.streams = streams;
        let mut counts = self.counts;
        counts.resize(self.out.streams.len(), 0);
        let finished = Finished {
            decoded: self.out,
            sink: self.sink,
            new_id: Vec::new(),
            unstamped,
            counts,
        };
        (finished, judged)
    }
}

/// Send times for streams whose packets do not all carry one: a transport's lanes that
/// number every message but stamp few or none (from their sequence numbers), and the flows
/// read with `--decoder periodic` (from their arrivals). Runs before any renumbering, while
/// stream ids are indices.
fn infer_sends(out: &mut Decoded, unstamped: &[bool]) {
    for id in 0..out.streams.len() {
        let info = &out.streams[id];
        let periodic = info.protocol == "periodic";
        if !periodic && !unstamped.get(id).copied().unwrap_or(false) {
            continue;
        }
        let at: Vec<usize> = (0..out.samples.len())
            .filter(|&i| out.samples[i].stream as usize == id)
            .collect();
        let inferred = if periodic {
            let mut mine: Vec<Sample> = at.iter().map(|&i| out.samples[i].clone()).collect();
            let estimate = super::periodic::assign(&mut mine);
            for (&i, s) in at.iter().zip(mine) {
                out.samples[i] = s;
            }
            estimate.map_or(SendInference::NoPeriod, SendInference::Periodic)
        } else {
            let points: Vec<(i64, crate::Nanos)> = at
                .iter()
                .map(|&i| (out.samples[i].seq, out.samples[i].arrival))
                .collect();
            let rate = clock::envelope_slope(&points);
            if points.len() < clock::MIN_PACKETS || rate <= 0.0 {
                out.streams[id].send_times = false;
                continue;
            }
            let period_ns = 1e9 / rate;
            for &i in &at {
                let s = &mut out.samples[i];
                s.send = crate::Nanos((s.seq as f64 * period_ns).round() as i64);
            }
            SendInference::Sequence { period_ns }
        };
        let info = &mut out.streams[id];
        info.send_times = !matches!(inferred, SendInference::NoPeriod);
        info.send_inferred = Some(inferred);
    }
}

/// When flows were `judged` (no decoder named), drops the RTP "streams" of a few packets that
/// appear inside a media flow (random payloads whose first byte falls in RTP's range parse as
/// RTP, each with a new SSRC), counting their packets as skipped on their flow with the reason
/// (`--decoder rtp` keeps every SSRC, as asked); then numbers the streams decoded from
/// packets (RTP, probe, layout, transports) before the plain UDP flows, each group in order of
/// first appearance: a capture's media keep the numbers they had when nothing but media made
/// a stream, and signalling flows (SIP, DNS) come last.
///
/// Needs only each stream's count of received samples (`counts`, by stream number); returns,
/// per old number, the new one (`u32::MAX` for a dropped stray). The samples are the caller's
/// to renumber.
fn tidy_streams(out: &mut Decoded, counts: &[u64], judged: bool) -> Vec<u32> {
    let stray = |info: &StreamInfo| {
        judged && info.protocol == "rtp" && counts[info.id as usize] < flow::MIN_RTP_PACKETS as u64
    };
    for info in out.streams.iter().filter(|i| stray(i)) {
        let n = counts[info.id as usize];
        let why = format!(
            "{}: {n} packet(s) of stray SSRC {:#010X}, too few for a stream (not RTP)",
            info.flow(),
            info.ssrc.unwrap_or(0)
        );
        out.skipped += n;
        if let Some(f) = out
            .flows
            .iter_mut()
            .find(|f| f.src == info.src && f.dst == info.dst)
        {
            f.skipped += n;
            f.skip_example.get_or_insert_with(|| why.clone());
        }
        if out.skip_examples.len() < MAX_SKIP_EXAMPLES {
            out.skip_examples.push(why);
        }
    }
    let plain = |s: &StreamInfo| s.protocol == "udp";
    let mut order: Vec<usize> = (0..out.streams.len())
        .filter(|&i| !stray(&out.streams[i]))
        .collect();
    order.sort_by_key(|&i| plain(&out.streams[i]));
    if order.iter().enumerate().all(|(new, &old)| new == old) && order.len() == out.streams.len() {
        return (0..out.streams.len() as u32).collect();
    }
    let mut new_id = vec![u32::MAX; out.streams.len()];
    for (new, &old) in order.iter().enumerate() {
        new_id[old] = new as u32;
    }
    let mut streams: Vec<Option<StreamInfo>> = std::mem::take(&mut out.streams)
        .into_iter()
        .map(Some)
        .collect();
    out.streams = order
        .iter()
        .enumerate()
        .filter_map(|(new, &old)| {
            let mut info = streams[old].take()?;
            info.id = new as u32;
            Some(info)
        })
        .collect();
    new_id
}

/// For each RTP stream whose clock rate is unknown (a dynamic payload type with no
/// `--clock-rate` and no SDP), infers it from the stream's timestamps and, when one is found,
/// gives its samples their send times (not a Wireshark clock: its figures stay as tshark's).
fn infer_clock_rates(out: &mut Decoded) {
    for info in &mut out.streams {
        let (None, Some(pt)) = (info.clock_rate, info.payload_type) else {
            continue;
        };
        if info.ssrc.is_none() {
            continue;
        }
        let points: Vec<(i64, crate::Nanos)> = out
            .samples
            .iter()
            .filter(|s| s.stream == info.id && s.payload_type == Some(pt))
            .map(|s| (s.rtp_timestamp, s.arrival))
            .collect();
        let inferred = clock::infer(&points);
        info.clock_inferred = Some(inferred);
        let Some(hz) = inferred.hz else {
            continue;
        };
        info.clock_rate = Some(hz);
        for s in out.samples.iter_mut().chain(out.truth.iter_mut()) {
            if s.stream == info.id && s.payload_type == Some(pt) {
                // `rtp_clock` stays 0: Wireshark's figures know no rate here either.
                s.send = super::stream::send_time(s.rtp_timestamp, hz);
            }
        }
    }
}

/// Reads a whole trace and decodes it.
///
/// `config` overrides the decoder named in the header.
///
/// # Errors
/// Trace read errors ([`Error::CorruptRecord`], I/O) and a header naming an unknown decoder.
pub fn decode_trace<R: std::io::Read>(
    mut reader: Reader<R>,
    config: Option<DecoderConfig>,
) -> Result<Decoded, Error> {
    let mut collector = Collector::new(reader.header(), config)?;
    while let Some(rec) = reader.next_ref()? {
        collector.push_ref(&rec);
    }
    let mut out = collector.finish();
    out.trailing_bytes = reader.trailing_bytes();
    Ok(out)
}

//! Decoding on the reader's thread: a trace's records are read, parsed and decoded into
//! samples on a second thread while the caller's sink (a streaming replay, `info`'s
//! accumulator) takes them on its own, so the two halves of one pass run on two cores.
//!
//! The reader thread runs a [`Collector`] whose sink, [`Forward`], only gathers the samples
//! (and the streams first seen) into batches; the caller's thread hands each sample to its
//! own sink with the streams as the collector knew them then. The sink sees the samples in
//! the same order, with the same stream list, as it would as the collector's own sink (the
//! streams a sink is shown are only ever appended to while records are read). Memory stays at
//! a few batches whatever the trace's length.

use std::io::Read;
use std::sync::mpsc;

use crate::Error;
use crate::decode::{Collector, Finished, Sample, SampleSink, StreamInfo, Values};
use crate::trace::read::Step;
use crate::trace::{Reader, RecordRef};

/// Samples per batch handed over.
const BATCH_SAMPLES: usize = 1024;
/// Filled batches waiting for the consumer at most.
const WAITING: usize = 2;

/// The sink of a collector on the reader's thread: gathers what it is given, to be handed to
/// the real sink on the caller's thread.
#[derive(Debug, Default)]
pub struct Forward {
    gathered: Gathered,
    /// How many streams were seen so far.
    known: usize,
}

/// Samples and streams gathered for one hand-over.
#[derive(Debug, Default)]
struct Gathered {
    /// Samples without their values, which are laid end to end in `values`.
    samples: Vec<(Sample, bool)>,
    values: Vec<f64>,
    /// Each sample's count of values, and how many streams were known when it came.
    counts: Vec<(u32, u32)>,
    /// Streams first seen since the last hand-over, in order.
    streams: Vec<StreamInfo>,
}

impl Gathered {
    fn is_empty(&self) -> bool {
        self.samples.is_empty() && self.streams.is_empty()
    }
}

impl SampleSink for Forward {
    fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, streams: &[StreamInfo]) {
        let g = &mut self.gathered;
        if streams.len() > self.known {
            g.streams.extend_from_slice(&streams[self.known..]);
            self.known = streams.len();
        }
        // Values kept inline travel with their sample. More than that travel in one flat
        // buffer: memory allocated on one thread and freed on the other is slow (the
        // allocator's per-thread caches never see it come back), so each side allocates and
        // frees its own.
        for mut s in samples.drain(..) {
            let flat = if s.values.spilled() {
                g.values.extend_from_slice(&s.values);
                let n = s.values.len() as u32;
                s.values = Values::new();
                n
            } else {
                0
            };
            g.counts.push((flat, streams.len() as u32));
            g.samples.push((s, truth));
        }
    }
}

/// One hand-over, and on the last one how the pass ended.
#[derive(Default)]
struct Batch {
    gathered: Gathered,
    end: Option<Result<(Finished<()>, u64), Error>>,
}

/// The caller's side: its sink and the streams as the collector has shown them so far.
struct Mirror<S> {
    sink: S,
    streams: Vec<StreamInfo>,
    one: Vec<Sample>,
}

impl<S: SampleSink> Mirror<S> {
    fn take(&mut self, g: &mut Gathered) {
        let mut infos = g.streams.drain(..);
        let mut at = 0;
        for ((mut s, truth), &(n, known)) in g.samples.drain(..).zip(&g.counts) {
            // The streams as they were when the sample came.
            while self.streams.len() < known as usize
                && let Some(info) = infos.next()
            {
                self.streams.push(info);
            }
            let n = n as usize;
            if n > 0 {
                s.values = Values::from_slice(&g.values[at..at + n]);
                at += n;
            }
            self.one.push(s);
            self.sink.samples(&mut self.one, truth, &self.streams);
            self.one.clear();
        }
        self.streams.extend(infos);
        g.values.clear();
        g.counts.clear();
    }

    fn finish(self, finished: Finished<()>) -> Finished<S> {
        Finished {
            decoded: finished.decoded,
            sink: self.sink,
            new_id: finished.new_id,
            unstamped: finished.unstamped,
            counts: finished.counts,
        }
    }
}

/// How the records a collector decodes become its [`Finished`], with how many it took.
pub type Collected<S> = (Finished<S>, u64);

/// Reads every record `reader` has left into `collector` (those `keep` accepts), decoding on
/// a second thread while `sink` takes the samples on this one; then finishes the collector
/// ([`Collector::finish_parts`]) and returns what it finished with, its sink being `sink`,
/// and how many records the collector took. The reader's counters are up to date when it
/// returns.
///
/// On a machine with one core, or when no thread can be started, everything runs on the
/// caller's thread (the same samples, in the same order).
///
/// # Errors
/// As [`Reader::next_ref`]: every record before the error was decoded and handed to `sink`.
pub fn collect_ahead<R: Read + Send, S: SampleSink>(
    reader: &mut Reader<R>,
    collector: Collector<Forward>,
    keep: impl FnMut(&RecordRef<'_>) -> bool + Send,
    sink: S,
) -> Result<Collected<S>, Error> {
    let mut mirror = Mirror {
        sink,
        streams: Vec::new(),
        one: Vec::with_capacity(1),
    };
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let mut work = Some((collector, keep));
    if cores >= 2 {
        let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(WAITING);
        let (free_tx, free_rx) = mpsc::channel::<Batch>();
        let work = &mut work;
        let ended = std::thread::scope(|scope| {
            let ahead = &mut *reader;
            let spawned = std::thread::Builder::new()
                .name("trace decoder".into())
                .spawn_scoped(scope, move || {
                    let Some((mut collector, mut keep)) = work.take() else {
                        return;
                    };
                    let mut hand = |forward: &mut Forward, flush: bool| {
                        let g = &mut forward.gathered;
                        let due = g.samples.len() >= BATCH_SAMPLES || (flush && !g.is_empty());
                        if !due {
                            return true;
                        }
                        let mut batch = free_rx.try_recv().unwrap_or_default();
                        std::mem::swap(&mut batch.gathered, g);
                        full_tx.send(batch).is_ok()
                    };
                    let result = read_into(ahead, &mut collector, &mut keep, &mut hand);
                    let mut last = Batch::default();
                    match result {
                        Ok(records) => {
                            let (finished, forward) = finish(collector);
                            last.gathered = forward.gathered;
                            last.end = Some(Ok((finished, records)));
                        }
                        Err(e) => last.end = Some(Err(e)),
                    }
                    // The consumer may be gone (it panicked); the scope re-raises that.
                    let _ = full_tx.send(last);
                });
            if spawned.is_err() {
                return None;
            }
            for mut batch in &full_rx {
                mirror.take(&mut batch.gathered);
                if let Some(end) = batch.end.take() {
                    return Some(end);
                }
                // The decoder may have stopped already; then the batch is simply dropped.
                let _ = free_tx.send(batch);
            }
            // The decoder thread ended without its last batch: it panicked, and the scope
            // re-raises that panic when it ends.
            None
        });
        if let Some(end) = ended {
            let (finished, records) = end?;
            return Ok((mirror.finish(finished), records));
        }
    }
    // One core, or no thread could be started (nothing was read yet): all on this thread.
    let Some((mut collector, mut keep)) = work else {
        unreachable!("the decoder thread panicked and the scope re-raised it")
    };
    let mut hand = |forward: &mut Forward, _: bool| {
        mirror.take(&mut forward.gathered);
        true
    };
    let records = read_into(reader, &mut collector, &mut keep, &mut hand)?;
    let (finished, mut forward) = finish(collector);
    mirror.take(&mut forward.gathered);
    Ok((mirror.finish(finished), records))
}

/// Decodes every record `keep` accepts into `collector`, calling `hand` after each record
/// (and with `flush` before a read that may block, so a live pipe's samples are handed on as
/// they come); stops early when `hand` says the consumer is gone. Returns how many records
/// the collector took.
fn read_into<R: Read>(
    reader: &mut Reader<R>,
    collector: &mut Collector<Forward>,
    keep: &mut impl FnMut(&RecordRef<'_>) -> bool,
    hand: &mut impl FnMut(&mut Forward, bool) -> bool,
) -> Result<u64, Error> {
    loop {
        let rec = match reader.next_ref_buffered()? {
            Step::Record(rec) => rec,
            Step::End => break,
            Step::WouldRead => {
                if !hand(collector.sink_mut(), true) {
                    break;
                }
                match reader.next_ref()? {
                    Some(rec) => rec,
                    None => break,
                }
            }
        };
        if keep(&rec) {
            collector.push_ref(&rec);
            if !hand(collector.sink_mut(), false) {
                break;
            }
        }
    }
    Ok(collector.records())
}

/// The collector finished (its waiting records decoded), without its sink, and the sink with
/// what it gathered last.
fn finish(collector: Collector<Forward>) -> (Finished<()>, Forward) {
    let Finished {
        decoded,
        sink,
        new_id,
        unstamped,
        counts,
    } = collector.finish_parts();
    (
        Finished {
            decoded,
            sink: (),
            new_id,
            unstamped,
            counts,
        },
        sink,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Nanos;
    use crate::decode::probe::Probe;
    use crate::trace::{Clock, Endpoint, Header, Record, Source, Writer};

    /// What a sink saw: every sample with its truth flag and the stream list's length then,
    /// and the channels of the stream it belongs to.
    #[derive(Default)]
    struct Seen(Vec<String>);

    impl SampleSink for Seen {
        fn samples(&mut self, samples: &mut Vec<Sample>, truth: bool, streams: &[StreamInfo]) {
            for s in samples.iter() {
                let info = &streams[s.stream as usize];
                self.0.push(format!(
                    "{s:?} {truth} {} {:?} {:?}",
                    streams.len(),
                    info.src,
                    info.channels
                ));
            }
        }
    }

    /// A trace of probe packets over `streams` streams from as many addresses, with ground
    /// truth for every third, and a few records that are not probes.
    fn trace(records: usize, streams: u32) -> Vec<u8> {
        let header = Header::at(Clock::default(), Source::default(), 0);
        let mut w = Writer::new(Vec::new(), &header).unwrap();
        for i in 0..records {
            let stream = i as u32 % streams;
            let probe = Probe {
                stream,
                tick: i as u64 / u64::from(streams),
                send: Nanos(i as i64 * 1_000_000),
                state: 0,
                event: None,
                values: (0..i % 5).map(|k| (i * 10 + k) as f64).collect(),
            };
            let at = Nanos(i as i64 * 1_000_000 + 40_000_000);
            let endpoint = |port: u16| Some(Endpoint(([10, 0, 0, 1], port).into()));
            let mut rec = if i % 97 == 13 {
                Record::received(at, b"not a probe".to_vec())
            } else {
                Record::received(at, probe.emit())
            };
            rec.src = endpoint(5000 + stream as u16);
            rec.dst = endpoint(6000);
            if i % 3 == 0 {
                let mut sent = Record::sent(probe.send, probe.emit());
                sent.src = rec.src;
                sent.dst = rec.dst;
                w.write(&sent).unwrap();
            }
            w.write(&rec).unwrap();
        }
        w.into_inner()
    }

    /// The collector on this thread with `Seen` as its own sink: what `collect_ahead` must give.
    fn direct(
        bytes: &[u8],
        keep: impl Fn(&RecordRef<'_>) -> bool,
    ) -> (Result<String, String>, Seen) {
        let mut reader = Reader::new(bytes).unwrap();
        let mut collector = Collector::with_sink(reader.header(), None, Seen::default()).unwrap();
        let mut result = Ok(());
        loop {
            match reader.next_ref() {
                Ok(Some(rec)) if keep(&rec) => collector.push_ref(&rec),
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    result = Err(e.to_string());
                    break;
                }
            }
        }
        let records = collector.records();
        let finished = collector.finish_parts();
        let shown = shown(&finished, records, &reader);
        (result.map(|()| shown), finished.sink)
    }

    /// Everything a pass finished with but the sink, and the reader's cut tail.
    fn shown<S>(finished: &Finished<S>, records: u64, reader: &Reader<&[u8]>) -> String {
        format!(
            "{:?} {:?} {:?} {:?} {records} {}",
            finished.decoded,
            finished.new_id,
            finished.unstamped,
            finished.counts,
            reader.trailing_bytes()
        )
    }

    fn ahead(
        bytes: &[u8],
        keep: impl Fn(&RecordRef<'_>) -> bool + Send,
    ) -> (Result<String, String>, Vec<String>) {
        let mut reader = Reader::new(bytes).unwrap();
        let collector = Collector::with_sink(reader.header(), None, Forward::default()).unwrap();
        match collect_ahead(&mut reader, collector, keep, Seen::default()) {
            Ok((finished, records)) => (Ok(shown(&finished, records, &reader)), finished.sink.0),
            Err(e) => (Err(e.to_string()), Vec::new()),
        }
    }

    /// Equal, or the first place they differ.
    fn same(got: &[String], want: &[String]) {
        let at = got.iter().zip(want).position(|(a, b)| a != b);
        assert!(
            at.is_none() && got.len() == want.len(),
            "{} vs {} samples; first difference at {at:?}: {:?} vs {:?}",
            got.len(),
            want.len(),
            at.map(|i| &got[i]),
            at.map(|i| &want[i])
        );
    }

    #[test]
    fn the_sink_sees_what_the_collectors_own_sink_would() {
        let bytes = trace(5 * BATCH_SAMPLES + 31, 7);
        let (want, seen) = direct(&bytes, |_| true);
        assert!(seen.0.len() > 5 * BATCH_SAMPLES, "{}", seen.0.len());
        let (got, got_seen) = ahead(&bytes, |_| true);
        assert_eq!(got, want);
        same(&got_seen, &seen.0);

        // Filtered: only two of the streams' addresses.
        let keep = |r: &RecordRef<'_>| r.src.is_some_and(|e| e.0.port() % 7 < 2);
        let (want, seen) = direct(&bytes, keep);
        let (got, got_seen) = ahead(&bytes, keep);
        assert_eq!(got, want);
        same(&got_seen, &seen.0);
    }

    #[test]
    fn a_cut_tail_and_a_corrupt_record_end_as_the_collector_would() {
        let bytes = trace(3 * BATCH_SAMPLES, 3);
        let cut = &bytes[..bytes.len() - 5];
        let (want, seen) = direct(cut, |_| true);
        let (got, got_seen) = ahead(cut, |_| true);
        assert_eq!(got, want);
        same(&got_seen, &seen.0);
        assert!(want.unwrap().ends_with(&format!(
            " {}",
            bytes.len() - 5 - {
                let mut r = Reader::new(cut).unwrap();
                while r.next_ref().unwrap().is_some() {}
                r.valid_len() as usize
            }
        )));

        let mut damaged = bytes.clone();
        let mut r = Reader::new(&bytes[..]).unwrap();
        for _ in 0..2000 {
            r.next_ref().unwrap();
        }
        damaged[r.valid_len() as usize] = 0xa3;
        let (want, _) = direct(&damaged, |_| true);
        let (got, _) = ahead(&damaged, |_| true);
        assert!(want.is_err());
        assert_eq!(got, want);
    }

    /// A pipe that stays open after a few records: their samples reach the sink before the
    /// decoder blocks on the next read, not when a batch fills.
    #[test]
    fn samples_before_a_blocking_read_are_handed_on() {
        use std::io::Read;
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

        /// Gives its bytes, then blocks until the sink has seen `want` samples (or 10 s have
        /// passed, noted in `timed_out`), then ends.
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
        struct Count(Arc<AtomicUsize>);
        impl SampleSink for Count {
            fn samples(&mut self, samples: &mut Vec<Sample>, _: bool, _: &[StreamInfo]) {
                self.0.fetch_add(samples.len(), Ordering::SeqCst);
            }
        }
        let bytes = trace(12, 2);
        let seen = Arc::new(AtomicUsize::new(0));
        let timed_out = Arc::new(AtomicBool::new(false));
        // 12 received probes and 4 of ground truth.
        let want = 12 + 4;
        let mut reader = Reader::new(Gate {
            data: bytes,
            pos: 0,
            seen: Arc::clone(&seen),
            want,
            timed_out: Arc::clone(&timed_out),
        })
        .unwrap();
        let probe = crate::decode::DecoderConfig::parse("probe").unwrap();
        let collector =
            Collector::with_sink(reader.header(), Some(probe), Forward::default()).unwrap();
        collect_ahead(&mut reader, collector, |_| true, Count(Arc::clone(&seen))).unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), want);
        assert!(
            !timed_out.load(Ordering::SeqCst),
            "the samples waited for the pipe to end"
        );
    }
}

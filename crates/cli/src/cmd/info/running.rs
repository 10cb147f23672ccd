//! `jitterlab info --every DURATION`: running summaries while a trace is read, for a live
//! capture on a pipe (`tcpdump -U -w - | jitterlab info - --every 10s`) or a long file. The
//! reading runs on a thread of its own, so that a summary is
//! printed on time even while the input is quiet, and Ctrl-C or SIGTERM prints the last one
//! before leaving.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Result;
use jitterlab_capture::decode::Collector;
use jitterlab_capture::sdp::RtpMap;
use jitterlab_capture::stats::Accumulator;
use jitterlab_capture::trace::RecordRef;

use super::{Args, finish_summary, print, refine};
use crate::input::{Push, read_trace};

/// The collector, shared between the reading thread and the one that prints; `None` once
/// the printing one has taken it for the last summary.
type Shared = Arc<Mutex<Option<Collector<Accumulator>>>>;

fn lock(shared: &Shared) -> MutexGuard<'_, Option<Collector<Accumulator>>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The reading thread's end of [`Shared`].
struct Feed(Shared);

impl Push for Feed {
    fn add_rtpmaps(&mut self, maps: Vec<RtpMap>) {
        if let Some(c) = lock(&self.0).as_mut() {
            c.add_rtpmaps(maps);
        }
    }
    fn push(&mut self, rec: &RecordRef<'_>) {
        if let Some(c) = lock(&self.0).as_mut() {
            c.push_ref(rec);
        }
    }
}

/// How often the printing thread looks at the clock, the reader and the signals.
const POLL: Duration = Duration::from_millis(50);

pub(super) fn run(args: &Args, every: Duration) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    #[cfg(feature = "live")]
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let shared: Shared = Arc::new(Mutex::new(None));
    let reader = {
        let shared = Arc::clone(&shared);
        let path = args.trace.clone();
        let decode = args.decode.clone();
        std::thread::spawn(move || {
            read_trace(&path, &decode, false, |header, config| {
                let collector = Collector::with_sink(header, config, Accumulator::default())?;
                *lock(&shared) = Some(collector);
                Ok(Feed(Arc::clone(&shared)))
            })
            .map(|read| (read.capture, read.trailing_bytes))
        })
    };
    let mut next = Instant::now() + every;
    while !reader.is_finished() {
        if stop.load(Ordering::Relaxed) {
            // Interrupted: the summary of what was read, the reader left blocked in its read.
            let Some(collector) = lock(&shared).take() else {
                return Ok(());
            };
            let (mut summary, second) = Accumulator::summarize(collector.finish_parts(), args.json);
            if let Some(second) = second {
                summary.notes.push(format!(
                    "the inter-arrival percentiles of {} stream(s) are estimates (within \
                     1/2048): the reading was interrupted",
                    second.streams()
                ));
            }
            let summary = finish_summary(&args.trace, &args.decode, None, summary)?;
            return print(args, &summary, Some(true));
        }
        let now = Instant::now();
        if now >= next {
            let running = lock(&shared)
                .as_ref()
                .map(|c| c.sink().peek(c.peek(), args.json));
            if let Some(mut summary) = running {
                let before: Vec<u32> = summary.decoded.streams.iter().map(|s| s.id).collect();
                let display = crate::input::shown(&args.trace);
                // A stream selected that has not appeared yet: nothing to show so far.
                if args
                    .decode
                    .select
                    .apply(&mut summary.decoded, &display)
                    .is_ok()
                {
                    summary.retain_listed(&before);
                    print(args, &summary, Some(false))?;
                }
            }
            while next <= now {
                next += every;
            }
        }
        std::thread::sleep(POLL.min(next.saturating_duration_since(Instant::now())));
    }
    let (capture, trailing_bytes) = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reading thread panicked"))??;
    let Some(collector) = lock(&shared).take() else {
        return Ok(());
    };
    let records = collector.records();
    let (mut summary, second) = Accumulator::summarize(collector.finish_parts(), args.json);
    summary.decoded.trailing_bytes = trailing_bytes;
    if let Some(second) = second {
        refine(&args.trace, &args.decode, records, second, &mut summary)?;
    }
    let summary = finish_summary(&args.trace, &args.decode, capture, summary)?;
    print(args, &summary, Some(true))
}

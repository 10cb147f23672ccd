//! Quality figures over the team's real RTP captures (`../shared/data/pcap`; never copied into
//! the project): the codec each stream names, and the figures' invariants under fixed and
//! NetEq playout. Skipped, saying so, when `JITTERLAB_SHARED_DATA` is unset; failing when it
//! is set but a capture is missing.

use std::fs::File;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{Collector, Decoded, DecoderConfig, DecoderKind};
use jitterlab_capture::pcap::{header_for, read_capture_all};
use jitterlab_capture::testdata::shared_data;
use jitterlab_replay::playout::{Media, PlayoutRun, PlayoutStream, playout_slots};
use jitterlab_replay::quality::{self, Meter};
use jitterlab_replay::{ClockMapping, Policy, streams};

fn decode(path: &std::path::Path) -> Decoded {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (records, summary) = read_capture_all(file, None).unwrap();
    let header = header_for("test", &summary, "auto");
    let mut config = DecoderConfig::new(DecoderKind::Auto);
    config.add_hints(&header);
    let mut collector = Collector::new(&header, Some(config)).unwrap();
    for r in &records {
        collector.push(r);
    }
    collector.finish()
}

#[test]
fn real_calls_give_consistent_figures() {
    let Some(data) = shared_data() else { return };
    let neteq: Policy = "neteq".parse().unwrap();
    // The AMR-NB capture has no SDP and dynamic payload types: its codec is unknown, and
    // the E-model says it assumed G.711.
    for (name, codec, assumed) in [
        ("saghul-sipp-scenarios_g711a.pcap", "g711", false),
        ("saghul-sipp-scenarios_g722.pcap", "g722", false),
        ("hdiniz-rtpdump_sample1_ipv4_amr-nb.pcap", "g711", true),
    ] {
        let decoded = decode(&data.join("pcap").join(name));
        let mut audio = 0;
        for view in streams::views(&decoded, None) {
            let Ok(view) = view else { continue };
            let info = decoded.streams.iter().find(|s| s.id == view.id).unwrap();
            let media = Media::of(info);
            if !media.is_audio() {
                continue;
            }
            audio += 1;
            let offset = ClockMapping::Hindsight.offset(&view.samples);
            let stream = PlayoutStream::new(view.id, &view.samples, media, offset);
            let meter = Meter::new(&stream, None, Nanos::from_millis(20));
            let mut last_concealed = u64::MAX;
            for delay in [0, 20, 60, 200] {
                let d = Nanos::from_millis(delay);
                let run = PlayoutRun::fixed(playout_slots(stream.slots(), d, offset), d);
                let q = meter.measure(&run);
                assert_eq!(q.emodel.codec, codec, "{name}");
                assert_eq!(q.emodel.codec_assumed, assumed, "{name}");
                let w = &q.webrtc;
                // Fixed playout stretches nothing: every slot's samples are emitted or concealed.
                assert_eq!(
                    w.jitter_buffer_emitted_count + w.concealed_samples,
                    w.total_samples_received,
                    "{name} at {delay} ms"
                );
                assert!(
                    w.concealed_samples <= last_concealed,
                    "{name}: more delay, less concealment"
                );
                last_concealed = w.concealed_samples;
                let b = &q.burst_gap;
                assert_eq!(b.burst_packets + b.gap_packets, stream.slots().len() as u64);
                assert!(
                    (1.0..=4.5).contains(&q.emodel.mos),
                    "{name}: {:?}",
                    q.emodel
                );
                let vm = q.voipmonitor.mos.unwrap();
                assert!((1.0..=4.5).contains(&vm), "{name}: {:?}", q.voipmonitor);
                assert_eq!(
                    q,
                    quality::measure(&stream, &run, None, Nanos::from_millis(20))
                );
            }
            if let Some(run) = neteq.playout(&stream) {
                let q = meter.measure(&run);
                assert_eq!(q.skipped_events, 0, "{name}");
                // A target is reported exactly when the policy records one.
                assert_eq!(
                    q.webrtc.jitter_buffer_target_delay.is_some(),
                    run.target(0).is_some() || run.events.is_empty(),
                    "{name}"
                );
                assert!(
                    (1.0..=4.5).contains(&q.emodel.mos),
                    "{name}: {:?}",
                    q.emodel
                );
            }
        }
        assert!(audio > 0, "{name}: no audio stream");
    }
}

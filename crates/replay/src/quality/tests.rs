//! Hand-built streams shared by the quality tests, and tests of the aggregate.

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::{MediaKind, Sample};

use super::*;
use crate::playout::{Media, PlayoutRun, PlayoutStream, Targets, playout_slots};

/// A PCMA (payload type 8; 13 for comfort noise) packet at 8 kHz.
pub(crate) fn packet(seq: i64, send_ms: i64, arrival_ms: i64, pt: u8) -> Sample {
    Sample {
        payload_type: Some(pt),
        rtp_clock: 8000,
        size: 160,
        ..Sample::new(
            0,
            seq,
            Nanos::from_millis(send_ms),
            Nanos::from_millis(arrival_ms),
        )
    }
}

/// PCMA at 8 kHz.
pub(crate) fn pcma() -> Media {
    Media {
        kind: Some(MediaKind::Audio),
        clock_rate: Some(8000),
        encoding: Some("PCMA".into()),
        payload_type: Some(8),
    }
}

/// `n` packets of 20 ms sent from 0; `arrival(seq)` gives each one's transit in ms (`None`:
/// lost), `cn(seq)` whether it is comfort noise. In arrival order, offset 0.
pub(crate) fn samples(
    n: i64,
    transit: impl Fn(i64) -> Option<i64>,
    cn: impl Fn(i64) -> bool,
) -> Vec<Sample> {
    let mut v: Vec<Sample> = (0..n)
        .filter_map(|i| {
            transit(i).map(|t| packet(i, i * 20, i * 20 + t, if cn(i) { 13 } else { 8 }))
        })
        .collect();
    v.sort_by_key(|s| (s.arrival, s.seq));
    v
}

/// Fixed-delay playout of `stream` at `delay_ms`.
pub(crate) fn fixed(stream: &PlayoutStream<'_>, delay_ms: i64) -> PlayoutRun {
    let d = Nanos::from_millis(delay_ms);
    PlayoutRun::fixed(playout_slots(stream.slots(), d, stream.offset), d)
}

/// The webrtc test's stream: 20 slots, transit 10 ms, slot 3 arriving 80 ms after it was
/// sent, slots 8–15 lost, slot 17 comfort noise and 18 lost after it.
pub(crate) fn twenty() -> Vec<Sample> {
    samples(
        20,
        |i| match i {
            3 => Some(80),
            8..=15 | 18 => None,
            _ => Some(10),
        },
        |i| i == 17,
    )
}

/// Everything at once equals every module on its own.
#[test]
fn measure_is_each_module_in_one_pass() {
    let s = twenty();
    let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
    let run = fixed(&stream, 50);
    let q = measure(&stream, &run, None, Nanos::from_millis(30));
    assert_eq!(q.webrtc, webrtc::measure(&stream, &run));
    assert_eq!(
        q.emodel,
        emodel::measure(&stream, &run, None, Nanos::from_millis(30))
    );
    assert_eq!(q.voipmonitor, voipmonitor::measure(&stream, &run));
    assert_eq!(q.burst_gap, rfc3611::measure(&stream, &run));
    assert_eq!(q.skipped_events, 0);
}

/// The E-model's inputs from the twenty-slot stream, by hand: 10 of 20 slots concealed
/// (Ppl 50 %); transitions PP 6, PC 3, CP 3, CC 7 give p = 1/3, q = 3/10, BurstR =
/// 1/(1/3 + 3/10); the mouth-to-ear delay is the 50 ms playout delay above the fastest
/// packet + 20 ms packetisation + the 30 ms assumed network delay.
#[test]
fn emodel_inputs_from_a_hand_built_stream() {
    let s = twenty();
    let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
    let e = emodel::measure(&stream, &fixed(&stream, 50), None, Nanos::from_millis(30));
    assert_eq!(e.codec, "g711");
    assert!(!e.codec_assumed);
    assert_eq!(e.ppl, 50.0);
    assert!(
        (e.burst_r - 1.0 / (1.0 / 3.0 + 0.3)).abs() < 1e-12,
        "{}",
        e.burst_r
    );
    assert!(
        (e.mouth_to_ear_ms - 100.0).abs() < 1e-9,
        "{}",
        e.mouth_to_ear_ms
    );
    let want = emodel::rating(&emodel::Params {
        t: 100.0,
        ta: 100.0,
        tr: 200.0,
        ie: 0.0,
        bpl: 25.1,
        ppl: 50.0,
        burst_r: e.burst_r,
        ..emodel::Params::default()
    });
    assert_eq!(e.r_factor, want.r);
    assert_eq!(e.mos, emodel::mos(want.r));
    // A codec given overrides the stream's; the stream's own is G.711.
    let g729 = emodel::measure(&stream, &fixed(&stream, 50), Some(Codec::G729), Nanos::ZERO);
    assert_eq!(g729.codec, "g729");
    assert!(g729.mos < e.mos);
    assert!(
        (g729.mouth_to_ear_ms - 75.0).abs() < 1e-9,
        "look-ahead 5 ms"
    );
}

/// A stream whose media names no codec is scored as G.711, and says so.
#[test]
fn an_unknown_codec_is_assumed_g711() {
    let s = twenty();
    let media = Media {
        encoding: Some("X-PROPRIETARY".into()),
        payload_type: Some(101),
        ..pcma()
    };
    let stream = PlayoutStream::new(0, &s, media, Nanos::ZERO);
    let e = emodel::measure(&stream, &fixed(&stream, 50), None, Nanos::ZERO);
    assert!(e.codec_assumed);
    assert_eq!(e.codec, "g711");
}

/// Two streams: counts add, means re-weight by emitted samples, MOS keeps the worse stream.
#[test]
fn merge_adds_counts_and_keeps_the_worst_mos() {
    let clean = samples(50, |_| Some(10), |_| false);
    let lossy = twenty();
    let a_stream = PlayoutStream::new(0, &clean, pcma(), Nanos::ZERO);
    let b_stream = PlayoutStream::new(1, &lossy, pcma(), Nanos::ZERO);
    let a = measure(&a_stream, &fixed(&a_stream, 30), None, Nanos::ZERO);
    let b = measure(&b_stream, &fixed(&b_stream, 50), None, Nanos::ZERO);
    let mut m = a;
    m.merge(&b);
    assert_eq!(m.webrtc.jitter_buffer_emitted_count, 50 * 160 + 10 * 160);
    assert_eq!(m.webrtc.concealed_samples, b.webrtc.concealed_samples);
    // Waits: 20 ms for 50 slots, 40 ms for 10: (50·20 + 10·40)/60.
    let mean = (50.0 * 20.0 + 10.0 * 40.0) / 60.0;
    assert!((m.webrtc.mean_jitter_buffer_delay_ms - mean).abs() < 1e-9);
    assert_eq!(m.emodel, b.emodel);
    let worst = b.voipmonitor.mos.unwrap().min(a.voipmonitor.mos.unwrap());
    assert_eq!(m.voipmonitor.mos, Some(worst));
    assert_eq!(m.burst_gap.bursts, a.burst_gap.bursts + b.burst_gap.bursts);
    assert_eq!(m.burst_gap.gaps, a.burst_gap.gaps + b.burst_gap.gaps);
    assert!(m.emodel.mos < a.emodel.mos);
}

/// An event naming no slot is left out and counted, not a panic.
#[test]
fn events_outside_the_stream_are_counted() {
    let s = twenty();
    let stream = PlayoutStream::new(0, &s, pcma(), Nanos::ZERO);
    let mut run = fixed(&stream, 50);
    run.events.push(PlayoutEvent::Played {
        seq: 999,
        at: Nanos::from_secs(9),
    });
    run.events.push(PlayoutEvent::Played {
        seq: -5,
        at: Nanos::from_secs(9),
    });
    run.targets = Targets::Unknown;
    let q = measure(&stream, &run, None, Nanos::ZERO);
    assert_eq!(q.skipped_events, 2);
    assert_eq!(q.webrtc.jitter_buffer_target_delay, None);
    // An empty stream scores nothing and does not panic.
    let empty: Vec<Sample> = Vec::new();
    let none = PlayoutStream::new(0, &empty, pcma(), Nanos::ZERO);
    let q = measure(&none, &PlayoutRun::default(), None, Nanos::ZERO);
    assert_eq!(q.voipmonitor.mos, None);
    assert_eq!(q.webrtc.total_samples_received, 0);
}

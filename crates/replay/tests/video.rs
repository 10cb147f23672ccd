//! Video played as frames, on the shared real captures (read from `JITTERLAB_SHARED_DATA`,
//! never copied into the project; skipped, saying so, when it is unset; failing when it is set
//! but a file is missing).
//!
//! The H.264 call (`saghul-sipp-scenarios_h264`, 3896 packets, one lost) played with a fixed
//! 100 ms delay: which frames are late is worked out here from the raw packets alone (grouped
//! by RTP timestamp, each frame's last packet arrival against its send time from the 90 kHz
//! timestamp, through the clock mapping's offset), and the playout must agree frame by frame.
//! The late share is then a share of frames, not the per-packet 33 % that playing every packet
//! as a unit gave.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use jitterlab_capture::decode::{Collector, Decoded, MediaKind};
use jitterlab_capture::pcap::{self, CaptureSummary};
use jitterlab_capture::testdata::shared_data;
use jitterlab_capture::{Nanos, sdp};
use jitterlab_replay::playout::{PlayoutEvent, Targets, summarize};
use jitterlab_replay::{
    ClockMapping, FrameClock, Media, PlayoutStream, Policy, Replay, VideoStats,
};

/// Decodes a capture as `jitterlab` does: every flow judged by its packets, SDP applied to
/// the packets after it.
fn decode(path: &Path) -> Decoded {
    let header = pcap::header_for("", &CaptureSummary::default(), "auto");
    let mut collector = Collector::new(&header, None).unwrap();
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    pcap::read_capture(file, None, |rec| {
        if let (Some(src), Some(dst)) = (rec.src, rec.dst) {
            collector.add_rtpmaps(sdp::scan_sip(src.0, dst.0, &rec.payload, rec.time));
        }
        collector.push(&rec);
        Ok(())
    })
    .unwrap();
    collector.finish()
}

/// One frame as the raw packets give it.
#[derive(Debug, Default)]
struct RawFrame {
    seqs: Vec<i64>,
    marker_on_last: bool,
    last_arrival: Nanos,
}

/// What a capture's video stream gave at 100 ms.
#[derive(Debug)]
struct Figures {
    packets: usize,
    slots: usize,
    complete: u64,
    incomplete: u64,
    late: usize,
    late_packets: usize,
}

/// The whole check on one capture: returns the figures it printed.
fn late_frames_at_100_ms(path: &Path, media_from_capture: Option<MediaKind>) -> Figures {
    let decoded = decode(path);
    let info = decoded
        .streams
        .iter()
        .find(|s| s.ssrc.is_some())
        .unwrap_or_else(|| panic!("{}: no RTP stream", path.display()));
    assert_eq!(
        info.media,
        media_from_capture,
        "{}: StreamInfo.media",
        path.display()
    );
    let media = Media::of(info);
    assert!(media.is_video(), "{}: {media:?}", path.display());
    let samples: Vec<_> = decoded.stream_samples(info.id).cloned().collect();
    let clock = ClockMapping::default();
    // The clock mapping's offset is taken over the frames (a frame's transit runs to its last
    // packet): the least send − arrival of any complete frame, worked out from the packets.
    let stream = PlayoutStream::with_clock(info.id, &samples, media, clock);
    let offset = stream.offset;
    let fastest_frame = {
        let mut by_ts: BTreeMap<i64, Nanos> = BTreeMap::new();
        for p in &samples {
            let last = by_ts.entry(p.rtp_timestamp).or_insert(p.arrival);
            *last = (*last).max(p.arrival);
        }
        by_ts
            .iter()
            .map(|(&ts, &arrival)| Nanos(ts * 1_000_000_000 / 90_000) - arrival)
            .max()
    };
    assert!(
        fastest_frame.is_some_and(|f| (f - offset).as_nanos().abs() < 1_000_000),
        "offset {offset:?} against the fastest frame {fastest_frame:?}"
    );
    let policy: Policy = "fixed:delay=100ms".parse().unwrap();
    let run = policy.playout(&stream).unwrap();
    assert_eq!(run.targets, Targets::Constant(Nanos::from_millis(100)));
    let delay = Nanos::from_millis(100);

    // Independently, from the raw packets: frames by timestamp, in timestamp order.
    let hz = i64::from(info.clock_rate.unwrap());
    assert_eq!(hz, 90_000);
    let mut raw: BTreeMap<i64, RawFrame> = BTreeMap::new();
    for p in &samples {
        let f = raw.entry(p.rtp_timestamp).or_default();
        if f.seqs.last().is_none_or(|&l| p.seq > l) {
            f.marker_on_last = p.marker;
        }
        f.seqs.push(p.seq);
        f.last_arrival = f.last_arrival.max(p.arrival);
    }
    let send_of = |ts: i64| Nanos(ts * 1_000_000_000 / hz);
    // Every frame here is whole: contiguous sequence numbers ending with the marker.
    for (ts, f) in raw.iter_mut() {
        f.seqs.sort_unstable();
        let contiguous = f.seqs.windows(2).all(|w| w[1] == w[0] + 1);
        assert!(
            contiguous && f.marker_on_last,
            "{}: frame {ts}",
            path.display()
        );
    }
    // The playout's slot for each frame, by send time.
    let events: BTreeMap<Nanos, &PlayoutEvent> = stream
        .slots()
        .iter()
        .zip(&run.events)
        .map(|(s, e)| (s.send, e))
        .collect();
    let mut late = 0;
    for (&ts, f) in &raw {
        let send = send_of(ts);
        let due = send - offset + delay;
        let is_late = f.last_arrival > due;
        late += usize::from(is_late);
        let e = events
            .get(&send)
            .unwrap_or_else(|| panic!("{}: no slot for frame {ts}", path.display()));
        match (is_late, e) {
            (false, PlayoutEvent::Played { at, .. }) => assert_eq!(*at, due, "frame {ts}"),
            (
                true,
                PlayoutEvent::Concealed {
                    at,
                    arrived_late: true,
                    ..
                },
            ) => assert_eq!(*at, due, "frame {ts}"),
            _ => panic!(
                "{}: frame {ts} (last packet {}, due {due}) late={is_late} but {e:?}",
                path.display(),
                f.last_arrival
            ),
        }
    }
    // Slots with no frame of their own are frames lost whole (never arrived).
    let lost: Vec<&PlayoutEvent> = events
        .iter()
        .filter(|(send, _)| !raw.keys().any(|&ts| send_of(ts) == **send))
        .map(|(_, e)| *e)
        .collect();
    assert!(lost.iter().all(|e| matches!(
        e,
        PlayoutEvent::Concealed {
            arrived_late: false,
            ..
        }
    )));
    let summary = summarize(&run.events);
    assert_eq!(summary.late as usize, late);
    assert_eq!(summary.frames as usize, raw.len() + lost.len());

    // What playing every packet as a unit counted: packets arriving after their own due time.
    let late_packets = samples
        .iter()
        .filter(|p| p.arrival > send_of(p.rtp_timestamp) - offset + delay)
        .count();
    let assembly = stream.frames.as_ref().unwrap();
    let video = VideoStats::measure(&stream, &run);
    assert_eq!(video.late as usize, late);
    assert_eq!(video.frames as usize, summary.frames as usize);
    let figures = Figures {
        packets: samples.len(),
        slots: run.events.len(),
        complete: assembly.complete,
        incomplete: assembly.incomplete,
        late,
        late_packets,
    };
    eprintln!(
        "{}: {} packets → {} frames ({} complete, {} incomplete: {:?}); fixed 100 ms: {} late = \
         {:.2} % of frames ({} of {} packets late = {:.2} % per packet); offset {offset}; \
         freezes {} ({:.0} ms), pauses {}, inter-frame delay {:.3} s",
        path.display(),
        figures.packets,
        assembly.total,
        assembly.complete,
        assembly.incomplete,
        assembly.incomplete_reasons,
        late,
        100.0 * late as f64 / figures.slots as f64,
        late_packets,
        figures.packets,
        100.0 * late_packets as f64 / figures.packets as f64,
        video.freeze_count,
        video.total_freezes_duration_ms,
        video.pause_count,
        video.total_inter_frame_delay,
    );

    // The trace-level route gives the same run and the video figures beside it.
    let played = Replay::new(FrameClock::Fps(60.0))
        .clock(clock)
        .playout(&decoded, Some(info.id), &policy)
        .unwrap();
    assert_eq!(played.streams[0].run.events, run.events);
    assert_eq!(played.streams[0].video, Some(video));
    assert_eq!(played.video, Some(video));
    assert_eq!(
        played.streams[0]
            .frames
            .as_ref()
            .map(|a| (a.total, a.complete)),
        Some((assembly.total, assembly.complete))
    );

    // libwebrtc's timing on the same call: every slot once, in order.
    let webrtc: Policy = "webrtc-video".parse().unwrap();
    let w = webrtc.playout(&stream).unwrap();
    assert_eq!(w.events.len(), run.events.len());
    let ws = VideoStats::measure(&stream, &w);
    eprintln!(
        "{}: webrtc-video: {} late = {:.2} % of frames; freezes {} ({:.0} ms); {}",
        path.display(),
        ws.late,
        100.0 * ws.late_ratio(),
        ws.freeze_count,
        ws.total_freezes_duration_ms,
        w.detail.as_ref().map_or(String::new(), |d| d.describe())
    );
    figures
}

#[test]
fn the_h264_call_is_late_frame_by_frame_not_packet_by_packet() {
    let Some(data) = shared_data() else { return };
    let with_sdp = late_frames_at_100_ms(
        &data.join("pcap/withsdp/saghul-sipp-scenarios_h264.withsdp.pcapng"),
        Some(MediaKind::Video),
    );
    // 3896 packets in 2036 timestamps, and seq 20539 lost between two frames whose
    // timestamps are two frame spacings apart: one frame lost whole.
    assert_eq!(with_sdp.packets, 3896);
    assert_eq!(
        (with_sdp.slots, with_sdp.complete, with_sdp.incomplete),
        (2037, 2036, 1)
    );
    let frame_share = with_sdp.late as f64 / with_sdp.slots as f64;
    let packet_share = with_sdp.late_packets as f64 / with_sdp.packets as f64;
    assert!(
        (packet_share - 0.33).abs() < 0.01,
        "per packet {packet_share}"
    );
    assert!(frame_share < packet_share - 0.05, "per frame {frame_share}");
    // The same RTP without SDP: payload type 96 at an inferred 90 kHz clock, video by its
    // clock; the same frames are late.
    let plain = late_frames_at_100_ms(&data.join("pcap/saghul-sipp-scenarios_h264.pcap"), None);
    assert_eq!((plain.slots, plain.late), (with_sdp.slots, with_sdp.late));
}

#[test]
fn the_h263_capture_plays_as_frames() {
    let Some(data) = shared_data() else { return };
    // Payload type 34 is H263 in the static table: video without SDP.
    let f = late_frames_at_100_ms(
        &data.join("pcap/wiresharkwiki_h263-over-rtp.pcap"),
        Some(MediaKind::Video),
    );
    assert_eq!((f.packets, f.slots, f.complete), (45, 10, 10));
}

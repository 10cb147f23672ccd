//! The per-packet table of a decoded trace, for notebooks and dashboards
//! (`jitterlab export --packets`).
//!
//! One row per decoded sample: first every received one, in arrival (file) order, then every
//! ground-truth one (`kind` = `sent`), in file order. Columns, in order (units in the names):
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `stream` | u32 | the stream's index, as `jitterlab info` and `--stream N` use it |
//! | `flow` | text or null | `SRC-DST` as `--flow` takes it; null when the trace has no addresses |
//! | `protocol` | text | `rtp`, `probe`, `layout`, `enet`, `kcp`, `raknet`, `periodic`, `udp` |
//! | `sequence` | i64 | sequence number or tick, extended past wrap-around |
//! | `send_ns` | i64 or null | send time on the sender's clock, ns; null when the stream carries none |
//! | `arrival_ns` | i64 | arrival time on the trace's clock, ns (for `sent` rows: the local send time) |
//! | `transit_ms` | f64 or null | `arrival − send` in ms: one-way delay plus the offset between the two clocks |
//! | `size` | u32 | payload bytes (RTP: after the header and padding; others: the datagram's payload; 0 when unknown) |
//! | `marker` | bool | the RTP marker bit (false for other protocols) |
//! | `payload_type` | u32 or null | the RTP payload type |
//! | `kind` | text | `received` or `sent` (ground truth) |
//! | `direction` | text | `unknown`, `to-upstream`, `to-client` (relay traces) |
//! | `utc_ns` | i64 or null | `arrival_ns` as Unix time (the trace clock's realtime offset added), ns |
//! | `utc` | text or null | the same instant as RFC 3339 UTC text with nanoseconds |
//!
//! `utc_ns` and `utc` are null when the trace's clock has no known realtime offset (synthetic
//! traces, CSV logs): nothing is made up.

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use jitterlab_capture::{Decoded, Sample, StreamInfo};
use polars::prelude::*;

use crate::Error;

/// The column names, in order.
pub const COLUMNS: [&str; 14] = [
    "stream",
    "flow",
    "protocol",
    "sequence",
    "send_ns",
    "arrival_ns",
    "transit_ms",
    "size",
    "marker",
    "payload_type",
    "kind",
    "direction",
    "utc_ns",
    "utc",
];

/// The rows of one column set, filled sample by sample.
#[derive(Default)]
struct Rows {
    stream: Vec<u32>,
    flow: Vec<Option<String>>,
    protocol: Vec<&'static str>,
    sequence: Vec<i64>,
    send_ns: Vec<Option<i64>>,
    arrival_ns: Vec<i64>,
    transit_ms: Vec<Option<f64>>,
    size: Vec<u32>,
    marker: Vec<bool>,
    payload_type: Vec<Option<u32>>,
    kind: Vec<&'static str>,
    direction: Vec<String>,
    utc_ns: Vec<Option<i64>>,
    utc: Vec<Option<String>>,
}

/// RFC 3339 text with nanoseconds for Unix nanoseconds (`None` before the epoch).
fn rfc3339(unix_ns: i64) -> Option<String> {
    let ns = u64::try_from(unix_ns).ok()?;
    let t = UNIX_EPOCH + Duration::from_nanos(ns);
    Some(humantime::format_rfc3339_nanos(t).to_string())
}

impl Rows {
    fn push(
        &mut self,
        s: &Sample,
        info: Option<&StreamInfo>,
        kind: &'static str,
        offset: Option<i64>,
    ) {
        let send = info
            .is_some_and(StreamInfo::has_send_times)
            .then_some(s.send);
        self.stream.push(s.stream);
        self.flow.push(
            info.filter(|i| i.src.is_some() || i.dst.is_some())
                .map(StreamInfo::flow),
        );
        self.protocol.push(info.map_or("udp", |i| i.protocol));
        self.sequence.push(s.seq);
        self.send_ns.push(send.map(|t| t.as_nanos()));
        self.arrival_ns.push(s.arrival.as_nanos());
        self.transit_ms
            .push(send.map(|t| s.arrival.saturating_sub(t).as_millis_f64()));
        self.size.push(s.size);
        self.marker.push(s.marker);
        self.payload_type.push(s.payload_type.map(u32::from));
        self.kind.push(kind);
        self.direction
            .push(info.map_or_else(|| "unknown".to_owned(), |i| i.direction.name().into_owned()));
        let utc_ns = offset.and_then(|o| s.arrival.as_nanos().checked_add(o));
        self.utc_ns.push(utc_ns);
        self.utc.push(utc_ns.and_then(rfc3339));
    }

    fn into_frame(self) -> Result<DataFrame, Error> {
        let c = |name: &str, col: Column| col.with_name(name.into());
        let columns = vec![
            c("stream", Column::new("".into(), self.stream)),
            c("flow", Column::new("".into(), self.flow)),
            c("protocol", Column::new("".into(), self.protocol)),
            c("sequence", Column::new("".into(), self.sequence)),
            c("send_ns", Column::new("".into(), self.send_ns)),
            c("arrival_ns", Column::new("".into(), self.arrival_ns)),
            c("transit_ms", Column::new("".into(), self.transit_ms)),
            c("size", Column::new("".into(), self.size)),
            c("marker", Column::new("".into(), self.marker)),
            c("payload_type", Column::new("".into(), self.payload_type)),
            c("kind", Column::new("".into(), self.kind)),
            c("direction", Column::new("".into(), self.direction)),
            c("utc_ns", Column::new("".into(), self.utc_ns)),
            c("utc", Column::new("".into(), self.utc)),
        ];
        Ok(DataFrame::new_infer_height(columns)?)
    }
}

/// The per-packet table of `decoded` (see the module documentation); `realtime_offset_ns` is
/// the trace header's `CLOCK_REALTIME − clock`, when known.
///
/// `progress` is called once per row written (for a progress bar over
/// `decoded.samples.len() + decoded.truth.len()` rows).
///
/// # Errors
/// Polars failures (none expected).
pub fn packet_table(
    decoded: &Decoded,
    realtime_offset_ns: Option<i64>,
    progress: &dyn Fn(),
) -> Result<DataFrame, Error> {
    let streams: HashMap<u32, &StreamInfo> = decoded.streams.iter().map(|s| (s.id, s)).collect();
    let mut rows = Rows::default();
    for (samples, kind) in [(&decoded.samples, "received"), (&decoded.truth, "sent")] {
        for s in samples {
            rows.push(s, streams.get(&s.stream).copied(), kind, realtime_offset_ns);
            progress();
        }
    }
    rows.into_frame()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_capture::Nanos;
    use jitterlab_capture::trace::Endpoint;

    fn decoded() -> Decoded {
        let info = StreamInfo {
            src: Some(Endpoint("10.0.0.1:5004".parse().unwrap())),
            dst: Some(Endpoint("10.0.0.2:5004".parse().unwrap())),
            clock_rate: Some(8000),
            ssrc: Some(7),
            protocol: "rtp",
            ..probe_like()
        };
        let mut a = Sample::new(0, 1, Nanos::from_millis(20), Nanos::from_millis(1_000_045));
        a.marker = true;
        a.payload_type = Some(8);
        a.size = 160;
        Decoded {
            streams: vec![info],
            samples: vec![a.clone()],
            truth: vec![Sample {
                arrival: Nanos::from_millis(1_000_020),
                ..a
            }],
            ..Decoded::default()
        }
    }

    fn probe_like() -> StreamInfo {
        crate::test_support::probe_stream(&[])
    }

    #[test]
    fn columns_units_and_utc() {
        let df = packet_table(&decoded(), Some(1_700_000_000_000_000_000), &|| ()).unwrap();
        let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
        assert_eq!(names, COLUMNS);
        assert_eq!(df.height(), 2);
        let transit = df.column("transit_ms").unwrap().f64().unwrap();
        assert_eq!(transit.get(0), Some(1_000_025.0));
        assert_eq!(transit.get(1), Some(1_000_000.0));
        let utc = df.column("utc").unwrap().str().unwrap();
        assert_eq!(utc.get(0), Some("2023-11-14T22:30:00.045000000Z"));
        let kinds = df.column("kind").unwrap().str().unwrap();
        assert_eq!(
            (kinds.get(0), kinds.get(1)),
            (Some("received"), Some("sent"))
        );
        assert_eq!(
            df.column("flow").unwrap().str().unwrap().get(0),
            Some("10.0.0.1:5004-10.0.0.2:5004")
        );
        assert_eq!(
            df.column("payload_type").unwrap().u32().unwrap().get(0),
            Some(8)
        );
        let none = packet_table(&decoded(), None, &|| ()).unwrap();
        assert_eq!(none.column("utc").unwrap().null_count(), 2);
    }
}

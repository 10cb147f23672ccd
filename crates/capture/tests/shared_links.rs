//! Network models over the team's real link traces in `../shared/data/traces` (never copied
//! into the project). Skipped, saying so, when `JITTERLAB_SHARED_DATA` is unset; failing when it
//! is set but the directory is missing.

use jitterlab_capture::Nanos;
use jitterlab_capture::netmodel::{Model, read_delay_series, read_mahimahi};
use jitterlab_capture::testdata::shared_data;

#[test]
fn mahimahi_driving_trace_loads_and_its_outages_become_delay() {
    let Some(data) = shared_data() else { return };
    let path = data.join("traces/mahimahi/ATT-LTE-driving.down");
    let opportunities = read_mahimahi(&path).unwrap();
    assert_eq!(opportunities.len(), 338_895);
    assert_eq!(*opportunities.last().unwrap(), Nanos::from_millis(786_112));
    // 20 Hz of 116-byte packets through the link. Where capacity collapses for seconds, the
    // queue builds: an independent event-driven simulation of the same trace (each opportunity
    // drains 1500 bytes, FIFO) finds at most 3863 ms of queueing, for the packet sent at 26.25 s.
    let mut model = Model::new(
        format!("delay=20ms,link={},queue=1000", path.display())
            .parse()
            .unwrap(),
        1,
    )
    .unwrap();
    let mut worst = Nanos::ZERO;
    for i in 0..20 * 786 {
        let t = Nanos::from_millis(i * 50);
        let d = model.transmit(t, 116).arrivals[0].unwrap() - t;
        worst = worst.max(d);
    }
    assert_eq!(worst, Nanos::from_millis(3863 + 20), "worst {worst}");
}

#[test]
fn real_5g_ping_series_reads_as_delays() {
    let Some(data) = shared_data() else { return };
    let series =
        read_delay_series(&data.join("traces/deterministic6g_ping/ping-cloud-ORAN-upd.csv"))
            .unwrap();
    assert_eq!(series.len(), 1772);
    let max = series.iter().max().unwrap();
    assert!((max.as_millis_f64() - 637.0).abs() < 1.0, "max {max}");
}

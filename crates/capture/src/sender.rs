//! The probe sender: `probe` packets at a steady rate with a known motion, and a log of exactly
//! what was sent (ground truth, including packets the network will lose).
//!
//! Send times follow absolute deadlines (`start + i / rate`), so sleep overshoot never
//! accumulates into drift.

use std::fs::File;
use std::io::BufWriter;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::Error;
use crate::decode::probe::Probe;
use crate::live::{FLUSH_INTERVAL, realtime};
use crate::synth::{Motion, Mover};
use crate::trace::{Clock, Direction, Endpoint, Header, Record, Source, Writer};

/// What to send.
#[derive(Clone, Copy, Debug)]
pub struct SendConfig {
    /// The destination.
    pub to: SocketAddr,
    /// Packets per second.
    pub rate_hz: f64,
    /// How long to send.
    pub duration: Duration,
    /// The motion the values follow.
    pub motion: Motion,
    /// Seed for the random walk.
    pub seed: u64,
    /// The probe stream id.
    pub stream: u32,
}

/// What was sent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SendSummary {
    /// Packets sent.
    pub sent: u64,
    /// Sends the socket refused (e.g. nothing listening yet on loopback).
    pub refused: u64,
    /// Actual span from the first to the last send.
    pub span: Duration,
    /// `span / intended span − 1`: the rate's relative drift.
    pub drift: f64,
    /// The largest lateness of one send behind its deadline.
    pub max_late: Duration,
}

/// The header of a sender log.
pub fn log_header(config: &SendConfig, local: SocketAddr) -> Header {
    let mut h = Header::new(
        Clock {
            name: "CLOCK_REALTIME".into(),
            realtime_offset_ns: Some(0),
        },
        Source {
            kind: "sender".into(),
            detail: format!(
                "jitterlab send {local} → {} at {} Hz, motion {}, seed {}",
                config.to,
                config.rate_hz,
                config.motion.name(),
                config.seed
            ),
        },
    );
    h.decoder = Some("probe".into());
    h.hints
        .insert("channels".into(), "x,y,z,qx,qy,qz,qw".into());
    h
}

/// Sends until the duration passes or `stop` is set; logs every packet to `log` if given.
///
/// # Errors
/// Invalid rate or duration, socket errors other than a refused send, log write errors.
pub fn send(
    config: &SendConfig,
    log: Option<File>,
    stop: &AtomicBool,
) -> Result<SendSummary, Error> {
    if !(config.rate_hz > 0.0 && config.rate_hz <= 1_000_000.0) {
        return Err(Error::Invalid(format!(
            "--rate {}: must be above 0 and at most 1000000 packets/s",
            config.rate_hz
        )));
    }
    let bind: SocketAddr = if config.to.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(bind)?;
    sock.connect(config.to)
        .map_err(|e| Error::Invalid(format!("cannot send to {}: {e}", config.to)))?;
    let local = sock.local_addr()?;
    let mut log = match log {
        Some(f) => {
            let mut w = Writer::new(BufWriter::new(f), &log_header(config, local))?;
            w.flush()?;
            Some(w)
        }
        None => None,
    };
    let interval = 1.0 / config.rate_hz;
    let count = (config.duration.as_secs_f64() * config.rate_hz).round() as u64;
    let mut mover = Mover::new(config.motion, config.seed);
    let mut summary = SendSummary::default();
    let start = Instant::now();
    let mut last_flush = start;
    let mut first_sent = None;
    let mut last_sent = start;
    for tick in 0..count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let offset = Duration::from_secs_f64(tick as f64 * interval);
        let deadline = start + offset;
        let now = Instant::now();
        if deadline > now {
            thread::sleep(deadline - now);
        }
        let (values, state, event) = mover.at(offset.as_secs_f64());
        let send = realtime();
        let payload = Probe {
            stream: config.stream,
            tick,
            send,
            state,
            event,
            values: values.to_vec(),
        }
        .emit();
        let at = Instant::now();
        match sock.send(&payload) {
            Ok(_) => summary.sent += 1,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => summary.refused += 1,
            Err(e) => return Err(e.into()),
        }
        summary.max_late = summary.max_late.max(at.saturating_duration_since(deadline));
        first_sent.get_or_insert(at);
        last_sent = at;
        if let Some(w) = &mut log {
            let mut rec = Record::sent(send, payload);
            rec.direction = Direction::Unknown.code();
            rec.src = Some(Endpoint(local));
            rec.dst = Some(Endpoint(config.to));
            w.write(&rec)?;
            if last_flush.elapsed() >= FLUSH_INTERVAL {
                last_flush = Instant::now();
                w.flush()?;
            }
        }
    }
    if let Some(w) = log {
        let file = w
            .into_inner()
            .into_inner()
            .map_err(|e| Error::Io(e.into_error()))?;
        file.sync_all()?;
    }
    let n = summary.sent + summary.refused;
    if let Some(first) = first_sent
        && n > 1
    {
        summary.span = last_sent - first;
        let intended = (n - 1) as f64 * interval;
        summary.drift = summary.span.as_secs_f64() / intended - 1.0;
    }
    Ok(summary)
}

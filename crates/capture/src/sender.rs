//! The probe sender: `probe` packets at a steady rate with a known motion, and a log of exactly
//! what was sent (ground truth, including packets the network will lose).
//!
//! Send times follow absolute deadlines (`start + i / rate`), so sleep overshoot never
//! accumulates into drift.

use std::fs::File;
use std::io::BufWriter;
use std::io::IoSlice;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::socket::{ControlMessage, MsgFlags, MultiHeaders, SockaddrStorage, sendmmsg};

use crate::Error;
use crate::decode::probe::Probe;
use crate::live::{FLUSH_INTERVAL, realtime};
use crate::synth::{Motion, Mover};
use crate::time::Nanos;
use crate::trace::{Clock, Direction, Endpoint, Header, Record, Source, Writer};

/// The most datagrams handed to the kernel in one `sendmmsg` call.
const BATCH: usize = 64;

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
    /// Pad each datagram with zeros to this many bytes (0: the probe's natural 88 bytes).
    pub size: usize,
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
    if config.size > 65_507 {
        return Err(Error::Setting {
            setting: "size",
            value: config.size.to_string(),
            reason: "a UDP datagram carries at most 65507 bytes".into(),
        });
    }
    if !(config.rate_hz > 0.0 && config.rate_hz <= 1_000_000.0) {
        return Err(Error::Setting {
            setting: "rate",
            value: config.rate_hz.to_string(),
            reason: "must be above 0 and at most 1000000 packets/s".into(),
        });
    }
    let bind: SocketAddr = if config.to.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(bind)?;
    sock.connect(config.to)
        .map_err(|source| Error::Unreachable {
            to: config.to,
            source,
        })?;
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
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(BATCH, None);
    let mut batch: Vec<(Vec<u8>, Nanos, Instant)> = Vec::with_capacity(BATCH);
    let deadline = |tick: u64| start + Duration::from_secs_f64(tick as f64 * interval);
    let mut tick = 0;
    while tick < count && !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if deadline(tick) > now {
            thread::sleep(deadline(tick) - now);
        }
        // Everything already due goes out in one sendmmsg call: at high rates the sender
        // keeps up without drifting, at low rates batches are one packet.
        let now = Instant::now();
        while tick < count && batch.len() < BATCH && deadline(tick) <= now {
            let offset = tick as f64 * interval;
            let (values, state, event) = mover.at(offset);
            let send = realtime();
            let mut payload = Probe {
                stream: config.stream,
                tick,
                send,
                state,
                event,
                values: values.to_vec(),
            }
            .emit();
            if payload.len() < config.size {
                payload.resize(config.size, 0);
            }
            batch.push((payload, send, deadline(tick)));
            tick += 1;
        }
        let at = Instant::now();
        let mut done = 0;
        while done < batch.len() {
            let iovs: Vec<[IoSlice<'_>; 1]> = batch[done..]
                .iter()
                .map(|(p, _, _)| [IoSlice::new(p)])
                .collect();
            let addrs = vec![None; iovs.len()];
            let none: [ControlMessage<'_>; 0] = [];
            match sendmmsg(
                sock.as_raw_fd(),
                &mut headers,
                &iovs,
                addrs,
                none,
                MsgFlags::empty(),
            ) {
                Ok(results) => {
                    let n = results.count().max(1);
                    summary.sent += n as u64;
                    done += n;
                }
                Err(nix::errno::Errno::ECONNREFUSED) => {
                    // Nothing listening (yet): that datagram is gone; the log still has it.
                    summary.refused += 1;
                    done += 1;
                }
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(Error::Io(e.into())),
            }
        }
        for (payload, send, due) in batch.drain(..) {
            summary.max_late = summary.max_late.max(at.saturating_duration_since(due));
            if let Some(w) = &mut log {
                let mut rec = Record::sent(send, payload);
                rec.direction = Direction::Unknown;
                rec.src = Some(Endpoint(local));
                rec.dst = Some(Endpoint(config.to));
                w.write(&rec)?;
            }
        }
        first_sent.get_or_insert(at);
        last_sent = at;
        if let Some(w) = &mut log
            && last_flush.elapsed() >= FLUSH_INTERVAL
        {
            last_flush = Instant::now();
            w.flush()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(to: SocketAddr, rate_hz: f64, ms: u64) -> SendConfig {
        SendConfig {
            to,
            rate_hz,
            duration: Duration::from_millis(ms),
            motion: Motion::Circle,
            seed: 1,
            stream: 3,
            size: 200,
        }
    }

    #[test]
    fn every_datagram_is_sent_once_and_counted() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let to = rx.local_addr().unwrap();
        // 5000 Hz for 100 ms: batches of several due packets at once; read as they come.
        let reader = thread::spawn(move || {
            let mut buf = [0u8; 512];
            let mut got = Vec::new();
            while let Ok(n) = rx.recv(&mut buf) {
                let p = Probe::parse(&buf[..n]).unwrap();
                got.push((n, p.tick, p.stream));
                if got.len() == 500 {
                    break;
                }
            }
            got
        });
        let s = send(&config(to, 5000.0, 100), None, &AtomicBool::new(false)).unwrap();
        assert_eq!((s.sent, s.refused), (500, 0));
        let got = reader.join().unwrap();
        let want: Vec<_> = (0..500u64).map(|t| (200, t, 3)).collect();
        assert_eq!(got, want);
        // How closely the sends kept to the schedule depends on the machine's load: measured,
        // not asserted (no timed assertions in tests).
        assert!(s.drift.is_finite(), "{s:?}");
    }

    #[test]
    fn a_closed_port_counts_refusals_not_sends() {
        let port = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let s = send(&config(port, 200.0, 100), None, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.sent + s.refused, 20, "{s:?}");
        assert!(s.refused > 0, "{s:?}");
    }
}

//! RTP payload maps from SDP (RFC 8866) found in SIP packets of a capture.
//!
//! Dynamic payload types (96–127) have no fixed clock rate: the call's SDP says it, e.g.
//! `a=rtpmap:99 opus/48000/2`. An SDP also says where media is received (`c=` address and `m=`
//! port), so two calls that both use payload type 99 at different rates are told apart by
//! endpoint and by time, the way Wireshark ties SDP to RTP conversations.

use std::net::{IpAddr, SocketAddr};

use crate::time::Nanos;

/// One `a=rtpmap` line with where and when it was announced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtpMap {
    /// When the SDP was seen (capture clock).
    pub time: Nanos,
    /// The media endpoint (`c=` address, `m=` port) the map applies to, when given.
    pub endpoint: Option<SocketAddr>,
    /// The payload type.
    pub payload_type: u8,
    /// Encoding name, e.g. `opus`, `telephone-event`.
    pub encoding: String,
    /// RTP clock rate in Hz.
    pub clock_rate: u32,
    /// The media line's kind (`audio`, `video`, …), when the map follows one.
    pub media: Option<String>,
}

impl RtpMap {
    /// The header hint value: `TIME_NS ENDPOINT|- PT ENCODING/RATE [MEDIA]`.
    pub fn to_hint(&self) -> String {
        let endpoint = self
            .endpoint
            .map_or_else(|| "-".to_owned(), |e| e.to_string());
        let mut hint = format!(
            "{} {endpoint} {} {}/{}",
            self.time.as_nanos(),
            self.payload_type,
            self.encoding,
            self.clock_rate
        );
        if let Some(m) = &self.media {
            hint.push(' ');
            hint.push_str(m);
        }
        hint
    }

    /// Parses [`RtpMap::to_hint`]'s form (traces written before the media kind was kept end
    /// after the rate).
    pub fn from_hint(text: &str) -> Option<Self> {
        let mut parts = text.split_whitespace();
        let time = Nanos(parts.next()?.parse().ok()?);
        let endpoint = match parts.next()? {
            "-" => None,
            e => Some(e.parse().ok()?),
        };
        let payload_type = parts.next()?.parse().ok().filter(|pt| *pt < 128)?;
        let (encoding, rate) = parts.next()?.rsplit_once('/')?;
        let clock_rate = rate.parse().ok().filter(|r| *r > 0)?;
        let media = parts.next().map(str::to_owned);
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            time,
            endpoint,
            payload_type,
            encoding: encoding.to_owned(),
            clock_rate,
            media,
        })
    }

    /// Whether this is RFC 4733 `telephone-event` (DTMF), whose timestamps mark the event start.
    pub fn is_telephone_event(&self) -> bool {
        self.encoding.eq_ignore_ascii_case("telephone-event")
    }
}

/// The rtpmaps of a datagram that looks like SIP (port 5060, or a request/response line).
pub fn scan_sip(src: SocketAddr, dst: SocketAddr, payload: &[u8], time: Nanos) -> Vec<RtpMap> {
    let sip = src.port() == 5060
        || dst.port() == 5060
        || payload.starts_with(b"INVITE")
        || payload.starts_with(b"SIP/2.0");
    if sip && payload.len() > 16 {
        scan(payload, time)
    } else {
        Vec::new()
    }
}

/// Finds the rtpmap lines of an SDP body inside a UDP payload (a SIP message), if any.
pub fn scan(payload: &[u8], time: Nanos) -> Vec<RtpMap> {
    let Some(start) = find(payload, b"v=0") else {
        return Vec::new();
    };
    if find(payload, b"a=rtpmap:").is_none() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&payload[start..]);
    let mut out = Vec::new();
    let mut session_addr: Option<IpAddr> = None;
    let mut media: Option<(u16, Option<IpAddr>)> = None;
    let mut kind: Option<String> = None;
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(c) = line.strip_prefix("c=") {
            let addr = c
                .split_whitespace()
                .nth(2)
                .and_then(|a| a.split('/').next()?.parse().ok());
            match &mut media {
                Some((_, m)) => *m = addr,
                None => session_addr = addr,
            }
        } else if let Some(m) = line.strip_prefix("m=") {
            kind = m.split_whitespace().next().map(str::to_owned);
            let port = m
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.split('/').next()?.parse().ok());
            media = port.map(|p| (p, None));
        } else if let Some(map) = line.strip_prefix("a=rtpmap:") {
            let Some((pt, rest)) = map.split_once(' ') else {
                continue;
            };
            let mut enc = rest.trim().split('/');
            let (Some(name), Some(rate)) = (enc.next(), enc.next()) else {
                continue;
            };
            let (Ok(pt), Ok(rate)) = (pt.trim().parse::<u8>(), rate.trim().parse::<u32>()) else {
                continue;
            };
            if pt > 127 || rate == 0 {
                continue;
            }
            let endpoint = media
                .and_then(|(port, addr)| addr.or(session_addr).map(|ip| SocketAddr::new(ip, port)));
            out.push(RtpMap {
                time,
                endpoint,
                payload_type: pt,
                encoding: name.to_owned(),
                clock_rate: rate,
                media: kind.clone(),
            });
        }
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Picks the map for a packet of payload type `pt` between `src` and `dst` first seen at `at`,
/// among announcements made at or before `at` (as Wireshark applies SDP to later packets
/// only): the latest for one of its endpoints, else the latest that names no endpoint, else any
/// announcement of `pt` if they all agree.
pub fn lookup<'a>(
    maps: &'a [RtpMap],
    pt: u8,
    src: Option<SocketAddr>,
    dst: Option<SocketAddr>,
    at: Nanos,
) -> Option<&'a RtpMap> {
    let pick = |candidates: Vec<&'a RtpMap>| candidates.into_iter().max_by_key(|m| m.time);
    let of_pt = || {
        maps.iter()
            .filter(move |m| m.payload_type == pt && m.time <= at)
    };
    let by_endpoint: Vec<_> = of_pt()
        .filter(|m| m.endpoint.is_some() && (m.endpoint == src || m.endpoint == dst))
        .collect();
    if let Some(m) = pick(by_endpoint) {
        return Some(m);
    }
    if let Some(m) = pick(of_pt().filter(|m| m.endpoint.is_none()).collect()) {
        return Some(m);
    }
    let first = of_pt().next()?;
    of_pt()
        .all(|m| m.clock_rate == first.clock_rate && m.encoding == first.encoding)
        .then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INVITE: &str = "INVITE sip:bob@example.com SIP/2.0\r\nContent-Type: application/sdp\r\n\r\n\
        v=0\r\no=- 1 1 IN IP4 10.0.2.15\r\ns=-\r\nc=IN IP4 10.0.2.15\r\nt=0 0\r\n\
        m=audio 16984 RTP/AVP 99 101\r\na=rtpmap:99 speex/16000\r\n\
        a=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\n\
        m=video 5006 RTP/AVP 96\r\nc=IN IP4 10.0.2.16\r\na=rtpmap:96 H264/90000\r\n";

    #[test]
    fn rtpmaps_carry_their_media_endpoint() {
        let maps = scan(INVITE.as_bytes(), Nanos(7));
        let got: Vec<String> = maps.iter().map(RtpMap::to_hint).collect();
        assert_eq!(
            got,
            [
                "7 10.0.2.15:16984 99 speex/16000 audio",
                "7 10.0.2.15:16984 101 telephone-event/8000 audio",
                "7 10.0.2.16:5006 96 H264/90000 video",
            ]
        );
        for m in &maps {
            assert_eq!(RtpMap::from_hint(&m.to_hint()).as_ref(), Some(m));
        }
        assert!(maps[1].is_telephone_event());
        // A hint from before the media kind was kept still reads.
        let old = RtpMap::from_hint("7 - 96 H264/90000").unwrap();
        assert_eq!((old.media, old.clock_rate), (None, 90_000));
        assert!(RtpMap::from_hint("7 - 96 H264/90000 video extra").is_none());
        assert!(scan(b"not sdp at all", Nanos(0)).is_empty());
    }

    #[test]
    fn lookup_prefers_endpoint_then_latest_before() {
        let ep = |s: &str| Some(s.parse().unwrap());
        let map = |t: i64, e: &str, rate: u32| RtpMap {
            time: Nanos(t),
            endpoint: ep(e),
            payload_type: 99,
            encoding: "speex".into(),
            clock_rate: rate,
            media: None,
        };
        let maps = [
            map(0, "10.0.0.2:6000", 8000),
            map(100, "10.0.0.2:6000", 16000),
            map(200, "10.0.0.2:6000", 32000),
        ];
        let rate = |at| {
            lookup(&maps, 99, ep("10.0.0.1:1"), ep("10.0.0.2:6000"), Nanos(at))
                .map(|m| m.clock_rate)
        };
        assert_eq!(rate(-1), None, "an SDP applies to later packets only");
        assert_eq!(rate(50), Some(8000));
        assert_eq!(rate(150), Some(16000));
        assert_eq!(rate(999), Some(32000));
        // Another endpoint: once the maps announced so far disagree, no guess.
        let other = |at| {
            lookup(&maps, 99, ep("10.9.9.9:1"), ep("10.9.9.9:2"), Nanos(at)).map(|m| m.clock_rate)
        };
        assert_eq!(other(0), Some(8000));
        assert_eq!(other(999), None);
        assert_eq!(lookup(&maps, 98, None, None, Nanos(0)), None);
    }
}

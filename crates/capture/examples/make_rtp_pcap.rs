//! Writes a synthetic RTP capture for benchmarks: `make_rtp_pcap OUT.pcap [PACKETS]`.
//!
//! One G.711 µ-law stream (PT 0, 20 ms, 160-byte payload) over Ethernet/IPv4/UDP with seeded
//! arrival jitter: 1,000,000 packets make a 230 MB file, the size the capture issue's
//! benchmark names.

use std::fs::File;
use std::io::{BufWriter, Write};

use jitterlab_capture::rng::Rng;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: make_rtp_pcap OUT.pcap [PACKETS]");
    let n: u32 = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("PACKETS is a number"));
    let mut w = BufWriter::with_capacity(1 << 20, File::create(out)?);
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65_535, 1] {
        w.write_all(&v.to_le_bytes())?;
    }
    let mut rng = Rng::new(7);
    let mut frame = vec![0u8; 14 + 20 + 8 + 12 + 160];
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut frame[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(20u16 + 8 + 172).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
    let udp = &mut frame[34..42];
    udp[0..2].copy_from_slice(&5004u16.to_be_bytes());
    udp[2..4].copy_from_slice(&6000u16.to_be_bytes());
    udp[4..6].copy_from_slice(&(8u16 + 172).to_be_bytes());
    frame[42] = 0x80;
    frame[50..54].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    let start = 1_700_000_000_000_000u64; // µs
    for i in 0..n {
        let jitter = (rng.exponential(2_000.0)) as u64;
        let t = start + u64::from(i) * 20_000 + jitter;
        let (sec, usec) = ((t / 1_000_000) as u32, (t % 1_000_000) as u32);
        frame[44..46].copy_from_slice(&(i as u16).to_be_bytes());
        frame[46..50].copy_from_slice(&(i.wrapping_mul(160)).to_be_bytes());
        for v in [sec, usec, frame.len() as u32, frame.len() as u32] {
            w.write_all(&v.to_le_bytes())?;
        }
        w.write_all(&frame)?;
    }
    w.flush()
}

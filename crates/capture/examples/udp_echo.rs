//! A UDP echo server for relay benchmarks: `udp_echo PORT [IDLE_SECS] [sink]` echoes every
//! datagram back to its sender on 127.0.0.1:PORT (or, with `sink`, only counts it), and after
//! IDLE_SECS (default 3) without traffic prints how many it echoed and exits.

use std::net::UdpSocket;
use std::time::Duration;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args
        .next()
        .and_then(|p| p.parse().ok())
        .expect("usage: udp_echo PORT [IDLE_SECS]");
    let idle: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let sink = args.next().is_some_and(|a| a == "sink");
    let sock = UdpSocket::bind(("127.0.0.1", port))?;
    // A receive buffer as large as the capture's, so the echo is not the bottleneck.
    let _ = socket2::SockRef::from(&sock).set_recv_buffer_size(8 << 20);
    sock.set_read_timeout(Some(Duration::from_secs(idle)))?;
    let mut buf = vec![0u8; 65_536];
    let (mut echoed, mut failed) = (0u64, 0u64);
    loop {
        match sock.recv_from(&mut buf) {
            Ok(_) if sink => echoed += 1,
            Ok((n, from)) => match sock.send_to(&buf[..n], from) {
                Ok(_) => echoed += 1,
                Err(_) => failed += 1,
            },
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if echoed + failed > 0 {
                    break;
                }
            }
            Err(e) => return Err(e),
        }
    }
    let what = if sink { "received" } else { "echoed" };
    println!("{what} {echoed}, failed {failed}");
    Ok(())
}

//! Receiving where the platform gives no kernel receive timestamp (Windows among others): the
//! standard library's `recv_from` into a buffer that holds any datagram whole, stamped in user
//! space by the caller as soon as it returns.

use std::io;
use std::net::UdpSocket;

use super::{Raw, TimestampSource, is_timeout};
use crate::Error;

/// The receive state: none beyond the socket.
#[derive(Debug)]
pub(super) struct Receiver;

impl Receiver {
    /// Where this receiver's timestamps come from.
    #[cfg_attr(test, allow(dead_code))]
    pub(super) const SOURCE: TimestampSource = TimestampSource::UserSpace;

    /// Asks for an 8 MiB receive buffer (the system may give less: Windows' default is small
    /// enough to drop bursts, and nothing counts those drops).
    pub(super) fn new(sock: &UdpSocket) -> Result<Self, Error> {
        let sock = socket2::SockRef::from(sock);
        for size in super::RECEIVE_BUFFERS {
            if sock.set_recv_buffer_size(size).is_ok() {
                break;
            }
        }
        Ok(Self)
    }

    /// A whole datagram, so the full length is known whatever the snap length.
    pub(super) fn buffer_len(_snaplen: usize) -> usize {
        super::MAX_DATAGRAM
    }

    /// Receives one datagram into `buf`; `Ok(None)` when the read timed out. The time is
    /// left to the caller (user space).
    pub(super) fn recv(&mut self, sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<Raw>> {
        match sock.recv_from(buf) {
            Ok((orig_len, from)) => Ok(Some(Raw {
                orig_len,
                from,
                time: None,
                new_drops: 0,
            })),
            Err(e) if is_timeout(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::live::socket::MAX_DATAGRAM;

    /// The receiver used where there are no kernel timestamps, exercised on this platform: full
    /// lengths, sources, no kernel time, and a timeout that is not an error.
    #[test]
    fn receives_whole_datagrams_without_a_kernel_time() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut receiver = Receiver::new(&rx).unwrap();
        let mut buf = vec![0; Receiver::buffer_len(16)];
        assert_eq!(buf.len(), MAX_DATAGRAM);
        assert!(receiver.recv(&rx, &mut buf).unwrap().is_none(), "timeout");
        let big = vec![7u8; 60_000];
        tx.send_to(&big, rx.local_addr().unwrap()).unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let raw = receiver.recv(&rx, &mut buf).unwrap().unwrap();
        assert_eq!(raw.orig_len, 60_000);
        assert_eq!(raw.from, tx.local_addr().unwrap());
        assert_eq!((raw.time, raw.new_drops), (None, 0));
        assert!(buf[..60_000].iter().all(|&b| b == 7));
    }
}

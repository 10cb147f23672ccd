//! A UDP socket that reports kernel receive timestamps (`SO_TIMESTAMPNS`) and receive-queue
//! drops (`SO_RXQ_OVFL`), and the clocks live capture reads.

use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{SystemTime, UNIX_EPOCH};

use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt,
};
use nix::sys::time::TimeSpec;
use nix::time::{ClockId, clock_gettime};

use crate::Error;
use crate::live::POLL;
use crate::time::Nanos;

/// `CLOCK_REALTIME` now.
pub fn realtime() -> Nanos {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Nanos(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

pub(super) fn monotonic() -> Nanos {
    clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(Nanos::ZERO, |t| {
        Nanos(t.tv_sec() * 1_000_000_000 + t.tv_nsec())
    })
}

/// A UDP socket that reports kernel receive timestamps and queue drops.
#[derive(Debug)]
pub struct StampedSocket {
    sock: UdpSocket,
    buf: Vec<u8>,
    cmsg: Vec<u8>,
    last_ovfl: u32,
}

/// One datagram as received.
#[derive(Clone, Copy, Debug)]
pub struct Datagram {
    /// Bytes received into the buffer (at most the snap length).
    pub len: usize,
    /// The datagram's full length.
    pub orig_len: usize,
    /// Who sent it.
    pub from: SocketAddr,
    /// Arrival time, `CLOCK_REALTIME`.
    pub time: Nanos,
    /// Whether `time` came from the kernel.
    pub kernel: bool,
    /// Kernel drops since the previous datagram.
    pub new_drops: u32,
}

impl StampedSocket {
    /// Wraps a bound socket: enables `SO_TIMESTAMPNS` and `SO_RXQ_OVFL`, asks for an 8 MiB
    /// receive buffer and a short read timeout.
    ///
    /// # Errors
    /// The socket options cannot be set.
    pub fn new(sock: UdpSocket, snaplen: usize) -> Result<Self, Error> {
        setsockopt(&sock, sockopt::ReceiveTimestampns, &true).map_err(|e| Error::SocketOption {
            option: "SO_TIMESTAMPNS",
            source: e.into(),
        })?;
        setsockopt(&sock, sockopt::RxqOvfl, &1).map_err(|e| Error::SocketOption {
            option: "SO_RXQ_OVFL",
            source: e.into(),
        })?;
        // The kernel caps this at net.core.rmem_max; a smaller buffer only means earlier drops,
        // which SO_RXQ_OVFL reports.
        let _ = setsockopt(&sock, sockopt::RcvBuf, &(8 << 20));
        sock.set_read_timeout(Some(POLL))?;
        Ok(Self {
            sock,
            // MSG_TRUNC reports the real length; one spare byte is not needed then.
            buf: vec![0; snaplen.max(1)],
            cmsg: nix::cmsg_space!(TimeSpec, u32),
            last_ovfl: 0,
        })
    }

    /// The underlying socket (for sending).
    pub fn socket(&self) -> &UdpSocket {
        &self.sock
    }

    /// The last datagram's payload.
    pub fn payload(&self, d: &Datagram) -> &[u8] {
        &self.buf[..d.len]
    }

    /// Receives one datagram; `Ok(None)` when the read timed out.
    ///
    /// # Errors
    /// Socket errors other than a timeout or an interrupted call.
    pub fn recv(&mut self) -> io::Result<Option<Datagram>> {
        let fd = self.sock.as_raw_fd();
        let mut iov = [IoSliceMut::new(&mut self.buf)];
        let msg = match recvmsg::<SockaddrStorage>(
            fd,
            &mut iov,
            Some(&mut self.cmsg),
            MsgFlags::MSG_TRUNC,
        ) {
            Ok(m) => m,
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => return Ok(None),
            Err(e) => return Err(io::Error::from(e)),
        };
        let mut time = None;
        let mut ovfl = None;
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                match c {
                    ControlMessageOwned::ScmTimestampns(ts) => {
                        time = Some(Nanos(ts.tv_sec() * 1_000_000_000 + ts.tv_nsec()));
                    }
                    ControlMessageOwned::RxqOvfl(n) => ovfl = Some(n),
                    _ => {}
                }
            }
        }
        let from = msg
            .address
            .and_then(|a| {
                a.as_sockaddr_in()
                    .map(|v4| SocketAddr::from(std::net::SocketAddrV4::from(*v4)))
                    .or_else(|| {
                        a.as_sockaddr_in6()
                            .map(|v6| SocketAddr::from(std::net::SocketAddrV6::from(*v6)))
                    })
            })
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
        let orig_len = msg.bytes;
        let new_drops = match ovfl {
            Some(n) => {
                let d = n.wrapping_sub(self.last_ovfl);
                self.last_ovfl = n;
                d
            }
            None => 0,
        };
        let kernel = time.is_some();
        Ok(Some(Datagram {
            len: orig_len.min(self.buf.len()),
            orig_len,
            from,
            time: time.unwrap_or_else(realtime),
            kernel,
            new_drops,
        }))
    }
}

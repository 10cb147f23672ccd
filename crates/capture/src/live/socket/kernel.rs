//! Receiving through `recvmsg` with the kernel's receive timestamp: `SO_TIMESTAMPNS`
//! (nanoseconds) and the `SO_RXQ_OVFL` drop counter on Linux and Android, `SO_TIMESTAMP`
//! (microseconds) on macOS, iOS and the BSDs.

use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt,
};

use super::{Raw, TimestampSource, is_timeout};
use crate::Error;
use crate::time::Nanos;

/// The receive state: the control-message buffer and the last drop count.
#[derive(Debug)]
pub(super) struct Receiver {
    cmsg: Vec<u8>,
    last_ovfl: u32,
}

impl Receiver {
    /// Where this receiver's timestamps come from.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) const SOURCE: TimestampSource = TimestampSource::KernelNanos;
    /// Where this receiver's timestamps come from.
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) const SOURCE: TimestampSource = TimestampSource::KernelMicros;

    /// Enables receive timestamps (and on Linux the drop counter) on `sock`, and asks for an
    /// 8 MiB receive buffer.
    pub(super) fn new(sock: &UdpSocket) -> Result<Self, Error> {
        let option = |option: &'static str| {
            move |e: nix::errno::Errno| Error::SocketOption {
                option,
                source: e.into(),
            }
        };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let cmsg = {
            setsockopt(sock, sockopt::ReceiveTimestampns, &true)
                .map_err(option("SO_TIMESTAMPNS"))?;
            setsockopt(sock, sockopt::RxqOvfl, &1).map_err(option("SO_RXQ_OVFL"))?;
            nix::cmsg_space!(nix::sys::time::TimeSpec, u32)
        };
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let cmsg = {
            setsockopt(sock, sockopt::ReceiveTimestamp, &true).map_err(option("SO_TIMESTAMP"))?;
            nix::cmsg_space!(nix::sys::time::TimeVal)
        };
        // Linux caps this silently (net.core.rmem_max); macOS and the BSDs refuse more than
        // kern.ipc.maxsockbuf allows, so smaller sizes are tried. A smaller buffer only means
        // earlier drops.
        for size in super::RECEIVE_BUFFERS {
            if setsockopt(sock, sockopt::RcvBuf, &size).is_ok() {
                break;
            }
        }
        Ok(Self { cmsg, last_ovfl: 0 })
    }

    /// The buffer to receive into: the snap length on Linux, whose `MSG_TRUNC` still reports
    /// the full length; a whole datagram elsewhere, so the full length is known.
    pub(super) fn buffer_len(snaplen: usize) -> usize {
        if cfg!(any(target_os = "linux", target_os = "android")) {
            snaplen
        } else {
            super::MAX_DATAGRAM
        }
    }

    /// Receives one datagram into `buf`; `Ok(None)` when the read timed out.
    pub(super) fn recv(&mut self, sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<Raw>> {
        let flags = if cfg!(any(target_os = "linux", target_os = "android")) {
            MsgFlags::MSG_TRUNC
        } else {
            MsgFlags::empty()
        };
        let mut iov = [IoSliceMut::new(buf)];
        let msg = match recvmsg::<SockaddrStorage>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut self.cmsg),
            flags,
        ) {
            Ok(m) => m,
            Err(e) => {
                let e = io::Error::from(e);
                return if is_timeout(&e) { Ok(None) } else { Err(e) };
            }
        };
        let mut time = None;
        // Only Linux reports drops.
        #[cfg_attr(
            not(any(target_os = "linux", target_os = "android")),
            allow(unused_mut)
        )]
        let mut ovfl: Option<u32> = None;
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                match c {
                    #[cfg(any(target_os = "linux", target_os = "android"))]
                    ControlMessageOwned::ScmTimestampns(ts) => {
                        time = Some(Nanos(ts.tv_sec() * 1_000_000_000 + ts.tv_nsec()));
                    }
                    #[cfg(any(target_os = "linux", target_os = "android"))]
                    ControlMessageOwned::RxqOvfl(n) => ovfl = Some(n),
                    #[cfg(not(any(target_os = "linux", target_os = "android")))]
                    ControlMessageOwned::ScmTimestamp(tv) => {
                        use nix::sys::time::TimeValLike;
                        time = Some(Nanos(tv.num_nanoseconds()));
                    }
                    _ => {}
                }
            }
        }
        let from = msg
            .address
            .and_then(|a| {
                a.as_sockaddr_in()
                    .map(|v4| SocketAddr::from(SocketAddrV4::from(*v4)))
                    .or_else(|| {
                        a.as_sockaddr_in6()
                            .map(|v6| SocketAddr::from(SocketAddrV6::from(*v6)))
                    })
            })
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
        let new_drops = match ovfl {
            Some(n) => {
                let d = n.wrapping_sub(self.last_ovfl);
                self.last_ovfl = n;
                d
            }
            None => 0,
        };
        Ok(Some(Raw {
            orig_len: msg.bytes,
            from,
            time,
            new_drops,
        }))
    }
}

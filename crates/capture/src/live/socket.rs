//! A UDP socket that stamps every datagram with its arrival time, taken by the kernel where the
//! platform gives one, and counts the kernel's receive-queue drops where the platform reports
//! them; and the clocks live capture reads.
//!
//! One receiver per platform, chosen when jitterlab is built ([`TIMESTAMPS`] says which):
//! - Linux and Android (`kernel`): `recvmsg` with `SO_TIMESTAMPNS` (nanoseconds) and
//!   `SO_RXQ_OVFL` (the kernel's drop counter).
//! - macOS, iOS and the BSDs (`kernel`): `recvmsg` with `SO_TIMESTAMP` (microseconds); these
//!   kernels do not count a socket's drops.
//! - Everything else, Windows among them (`portable`): the standard library's `recv_from`,
//!   stamped in user space as soon as it returns. Those records have no
//!   [`flags::KERNEL_TIMESTAMP`] and are counted in [`CaptureStats::user_timestamps`].
//!
//! [`flags::KERNEL_TIMESTAMP`]: crate::trace::flags::KERNEL_TIMESTAMP
//! [`CaptureStats::user_timestamps`]: crate::trace::CaptureStats::user_timestamps

use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::Error;
use crate::time::Nanos;

#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly"
))]
mod kernel;
// Built on every platform for its tests; used where no kernel receiver exists.
#[cfg(any(
    test,
    not(any(
        target_os = "linux",
        target_os = "android",
        target_vendor = "apple",
        target_os = "freebsd",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "dragonfly"
    ))
))]
mod portable;

#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly"
))]
use kernel::Receiver;
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly"
)))]
use portable::Receiver;

/// The largest UDP payload (65,535 bytes less the IPv4 and UDP headers), plus one byte: a
/// buffer this long receives any datagram whole.
const MAX_DATAGRAM: usize = 65_536;

/// The receive buffer sizes asked for, largest first: the first the system accepts is kept.
const RECEIVE_BUFFERS: [usize; 4] = [8 << 20, 4 << 20, 2 << 20, 1 << 20];

/// Where live capture takes arrival times from on a platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimestampSource {
    /// The kernel, in nanoseconds (`SO_TIMESTAMPNS`), with the socket's receive-queue drops
    /// counted (`SO_RXQ_OVFL`): Linux and Android.
    KernelNanos,
    /// The kernel, in microseconds (`SO_TIMESTAMP`); the kernel does not count the socket's
    /// drops: macOS, iOS and the BSDs.
    KernelMicros,
    /// User space, as soon as the read returns (scheduling delays included); no drop counter:
    /// Windows and any other platform.
    UserSpace,
}

impl TimestampSource {
    /// Whether arrival times come from the kernel.
    pub fn is_kernel(self) -> bool {
        self != Self::UserSpace
    }

    /// Whether the kernel's receive-queue drops are counted
    /// ([`CaptureStats::kernel_drops`](crate::trace::CaptureStats::kernel_drops)).
    pub fn counts_kernel_drops(self) -> bool {
        self == Self::KernelNanos
    }
}

impl fmt::Display for TimestampSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::KernelNanos => "kernel timestamps (SO_TIMESTAMPNS, ns) and drop counts",
            Self::KernelMicros => {
                "kernel timestamps (SO_TIMESTAMP, µs); this platform does not count kernel drops"
            }
            Self::UserSpace => {
                "user-space timestamps (this platform gives no kernel receive timestamps) and \
                 no kernel drop counts"
            }
        })
    }
}

/// Where this build's live capture takes arrival times from.
pub const TIMESTAMPS: TimestampSource = Receiver::SOURCE;

/// `CLOCK_REALTIME` now.
pub fn realtime() -> Nanos {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Nanos(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// `CLOCK_MONOTONIC` now.
#[cfg(unix)]
pub(super) fn monotonic() -> Nanos {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(Nanos::ZERO, |t| {
        Nanos(t.tv_sec() * 1_000_000_000 + t.tv_nsec())
    })
}

/// A monotonic clock (the standard library's) counted from its first reading in this process:
/// only differences between readings mean anything, as for `CLOCK_MONOTONIC`.
#[cfg(not(unix))]
pub(super) fn monotonic() -> Nanos {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    let elapsed = START.get_or_init(Instant::now).elapsed();
    Nanos(i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX))
}

/// What a platform's receiver read: one datagram in the buffer.
#[derive(Clone, Copy, Debug)]
struct Raw {
    /// The datagram's full length (more than the buffer holds when it was cut).
    orig_len: usize,
    /// Who sent it.
    from: SocketAddr,
    /// The kernel's receive timestamp, `CLOCK_REALTIME`, when it gave one.
    time: Option<Nanos>,
    /// Kernel drops since the previous datagram.
    new_drops: u32,
}

/// A UDP socket that reports kernel receive timestamps and queue drops where the platform has
/// them.
#[derive(Debug)]
pub struct StampedSocket {
    sock: UdpSocket,
    buf: Vec<u8>,
    snaplen: usize,
    receiver: Receiver,
}

/// One datagram as received.
#[derive(Clone, Copy, Debug)]
pub struct Datagram {
    /// Bytes of payload kept (at most the snap length).
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
    /// Wraps a bound socket: enables the platform's receive timestamps and drop counter (see
    /// [`TIMESTAMPS`]), asks for an 8 MiB receive buffer (less where the system refuses that)
    /// and a short read timeout.
    ///
    /// # Errors
    /// The socket options cannot be set.
    pub fn new(sock: UdpSocket, snaplen: usize) -> Result<Self, Error> {
        let receiver = Receiver::new(&sock)?;
        sock.set_read_timeout(Some(super::POLL))?;
        let snaplen = snaplen.max(1);
        Ok(Self {
            sock,
            buf: vec![0; Receiver::buffer_len(snaplen)],
            snaplen,
            receiver,
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

    /// Receives one datagram; `Ok(None)` when the read timed out or was interrupted.
    ///
    /// # Errors
    /// Socket errors other than a timeout or an interrupted call.
    pub fn recv(&mut self) -> io::Result<Option<Datagram>> {
        let Some(raw) = self.receiver.recv(&self.sock, &mut self.buf)? else {
            return Ok(None);
        };
        Ok(Some(Datagram {
            len: raw.orig_len.min(self.snaplen).min(self.buf.len()),
            orig_len: raw.orig_len,
            from: raw.from,
            kernel: raw.time.is_some(),
            time: raw.time.unwrap_or_else(realtime),
            new_drops: raw.new_drops,
        }))
    }
}

/// Whether a receive error only says that the read timed out or was interrupted.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

//! Live capture from UDP sockets, and the recording relay.
//!
//! Arrival times come from the kernel (`SO_TIMESTAMPNS`): the record's
//! [`flags::KERNEL_TIMESTAMP`] says so; when the kernel gives none the time is taken in user
//! space and counted. Kernel receive-queue drops are read with `SO_RXQ_OVFL`.
//!
//! Receiving never waits on the disk: receiver threads hand records to a bounded queue; a
//! writer thread appends them to the trace and flushes at least every 100 ms, so a `kill -9`
//! loses at most that much. If the queue ever fills, the loss is counted
//! ([`CaptureStats::queue_drops`]), never silent. A [`RecordKind::Stats`] record with the
//! counters and a (realtime, monotonic) clock pair is written every second and at the end.
//!
//! The relay ([`Config::forward`]) sits between real clients and one upstream server: each
//! client gets its own upstream socket; datagrams are forwarded both ways and recorded with their
//! [`Direction`]. With an impairment model ([`Config::impair`]) each direction runs its own
//! seeded [`Model`]: the trace holds a ground-truth `Sent` record at ingress for every datagram
//! and a `Received` record when the relay actually forwarded each copy, so what the relay
//! dropped, delayed or duplicated is in the trace. The relay only ever sends to its upstream
//! and to clients that sent to it.
//!
//! [`RecordKind::Stats`]: crate::trace::RecordKind::Stats

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{self, BufWriter, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt,
};
use nix::sys::time::TimeSpec;
use nix::time::{ClockId, clock_gettime};

use crate::Error;
use crate::decode::{DecoderConfig, StreamDecoder};
use crate::netmodel::{Model, ModelSpec};
use crate::stats::Jitter;
use crate::time::Nanos;
use crate::trace::{CaptureStats, Direction, Endpoint, Header, Record, Writer, flags};

/// How often the writer flushes to the file: the most a `kill -9` can lose.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// How long a blocking receive waits before checking whether to stop.
const POLL: Duration = Duration::from_millis(20);

/// The most clients the relay keeps an upstream socket for.
const MAX_CLIENTS: usize = 1024;

/// What to capture and where to send it.
#[derive(Clone, Debug)]
pub struct Config {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// Relay mode: the one upstream server to forward to.
    pub forward: Option<SocketAddr>,
    /// Relay mode: the impairment model applied to both directions.
    pub impair: Option<ModelSpec>,
    /// Bytes of payload kept per datagram (longer ones are truncated, their length kept).
    pub snaplen: usize,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after this many datagrams received.
    pub count: Option<u64>,
    /// Records the writer queue holds before it counts drops.
    pub queue: usize,
    /// Decoder for the live status (jitter, loss); `None` picks probe or RTP from the first
    /// datagram.
    pub decoder: Option<DecoderConfig>,
}

impl Config {
    /// A plain listener on `listen` with defaults (65535-byte snap length, 262144-record queue).
    pub fn listen(listen: SocketAddr) -> Self {
        Self {
            listen,
            forward: None,
            impair: None,
            snaplen: 65_535,
            duration: None,
            count: None,
            queue: 1 << 18,
            decoder: None,
        }
    }
}

/// What the status line shows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Status {
    /// Time since the capture started.
    pub elapsed: Duration,
    /// Datagrams received from the sockets.
    pub packets: u64,
    /// Streams seen.
    pub streams: usize,
    /// Sequence numbers missing so far, summed over streams.
    pub lost: u64,
    /// RFC 3550 jitter of the busiest stream, ms.
    pub jitter_ms: f64,
    /// Kernel and queue drops so far.
    pub drops: u64,
}

/// The end-of-capture summary.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// The last status.
    pub status: Status,
    /// Final counters (also the trace's last stats record).
    pub stats: CaptureStats,
    /// Records written to the file (datagrams, ground truth and stats records).
    pub records: u64,
    /// Relay: datagrams forwarded (copies included).
    pub forwarded: u64,
    /// Relay: datagrams the impairment model dropped.
    pub impaired_drops: u64,
    /// Relay: duplicates the impairment model added.
    pub duplicates_added: u64,
    /// Relay: datagrams from clients beyond the first 1024, recorded but not forwarded.
    pub unforwarded: u64,
    /// Relay: sends the kernel refused (the peer's port closed, or the loopback backlog full):
    /// recorded as received, not forwarded.
    pub send_failures: u64,
    /// Relay: datagrams the impairment still held, due more than 5 s after the capture
    /// stopped: recorded at ingress, never sent.
    pub unreleased: u64,
    /// Whether any datagram got a kernel timestamp.
    pub kernel_timestamps: bool,
}

#[derive(Debug, Default)]
struct Counters {
    received: AtomicU64,
    kernel_drops: AtomicU64,
    queue_drops: AtomicU64,
    user_timestamps: AtomicU64,
    kernel_timestamps: AtomicU64,
    forwarded: AtomicU64,
    impaired_drops: AtomicU64,
    duplicates_added: AtomicU64,
    unforwarded: AtomicU64,
    send_failures: AtomicU64,
    unreleased: AtomicU64,
}

impl Counters {
    fn stats(&self, last: bool) -> CaptureStats {
        CaptureStats {
            realtime_ns: realtime().as_nanos(),
            monotonic_ns: monotonic().as_nanos(),
            received: self.received.load(Ordering::Relaxed),
            kernel_drops: self.kernel_drops.load(Ordering::Relaxed),
            queue_drops: self.queue_drops.load(Ordering::Relaxed),
            user_timestamps: self.user_timestamps.load(Ordering::Relaxed),
            last,
        }
    }
}

/// `CLOCK_REALTIME` now.
pub fn realtime() -> Nanos {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Nanos(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn monotonic() -> Nanos {
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
        setsockopt(&sock, sockopt::ReceiveTimestampns, &true)
            .map_err(|e| Error::Invalid(format!("cannot enable SO_TIMESTAMPNS: {e}")))?;
        setsockopt(&sock, sockopt::RxqOvfl, &1)
            .map_err(|e| Error::Invalid(format!("cannot enable SO_RXQ_OVFL: {e}")))?;
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

/// Everything the receiver threads share.
struct Shared {
    counters: Counters,
    stop: AtomicBool,
    /// Taken away at the end so the writer sees the queue close.
    tx: Mutex<Option<SyncSender<Record>>>,
    count: Option<u64>,
}

impl Shared {
    /// Queues a record; a full queue is counted, never waited on.
    fn push(&self, rec: Record) {
        let sent = match self.tx.lock() {
            Ok(tx) => match tx.as_ref().map(|tx| tx.try_send(rec)) {
                Some(Ok(())) => true,
                Some(Err(TrySendError::Full(_) | TrySendError::Disconnected(_))) | None => false,
            },
            Err(_) => false,
        };
        if !sent {
            self.counters.queue_drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts an ingress datagram; stops the capture once `count` is reached.
    fn received(&self, d: &Datagram) {
        let c = &self.counters;
        c.kernel_drops
            .fetch_add(u64::from(d.new_drops), Ordering::Relaxed);
        if d.kernel {
            c.kernel_timestamps.fetch_add(1, Ordering::Relaxed);
        } else {
            c.user_timestamps.fetch_add(1, Ordering::Relaxed);
        }
        let n = c.received.fetch_add(1, Ordering::Relaxed) + 1;
        if self.count.is_some_and(|max| n >= max) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

fn record(
    d: &Datagram,
    payload: &[u8],
    src: SocketAddr,
    dst: SocketAddr,
    dir: Direction,
) -> Record {
    let mut rec = Record::received(d.time, payload.to_vec());
    rec.flags = if d.kernel { flags::KERNEL_TIMESTAMP } else { 0 };
    rec.direction = dir.code();
    rec.src = Some(Endpoint(src));
    rec.dst = Some(Endpoint(dst));
    rec.orig_len = u32::try_from(d.orig_len).unwrap_or(u32::MAX);
    rec
}

/// A datagram waiting in the impairment scheduler.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    due: Instant,
    order: u64,
    to_upstream: bool,
    client: SocketAddr,
    duplicate: bool,
    payload: Vec<u8>,
}

#[derive(Default)]
struct Schedule {
    heap: BinaryHeap<Reverse<Pending>>,
    order: u64,
    closed: bool,
}

/// Runs a capture (or relay) until `stop` is set, the duration passes or the count is reached.
/// `on_status` is called about 4 times a second from the calling thread.
///
/// `out` receives the header at once and records as they arrive; it is flushed at least every
/// [`FLUSH_INTERVAL`] and synced at the end.
///
/// # Errors
/// Binding or socket option errors before the capture starts; write errors (the capture stops
/// at the first one, and what was written stays readable).
pub fn run(
    config: &Config,
    out: File,
    header: &Header,
    stop: &AtomicBool,
    mut on_status: impl FnMut(&Status),
) -> Result<Summary, Error> {
    if let Some(spec) = &config.impair
        && spec.has_receiver_keys()
    {
        return Err(Error::Invalid(
            "--impair: offset, drift and pause describe a receiver's clock; a relay cannot apply them"
                .into(),
        ));
    }
    let listen = UdpSocket::bind(config.listen)
        .map_err(|e| Error::Invalid(format!("cannot listen on {}: {e}", config.listen)))?;
    let local = listen.local_addr()?;
    let models = match &config.impair {
        Some(spec) if config.forward.is_some() => {
            let seed = spec.seed.unwrap_or(1);
            let new = |seed| {
                Model::new(spec.clone(), seed)
                    .map(Mutex::new)
                    .map_err(|e| Error::Invalid(format!("--impair: {e}")))
            };
            Some([new(seed)?, new(seed ^ 0x9e37_79b9_7f4a_7c15)?])
        }
        _ => None,
    };
    let listener = StampedSocket::new(listen, config.snaplen)?;
    let (tx, rx) = mpsc::sync_channel(config.queue.max(1));
    let shared = Arc::new(Shared {
        counters: Counters::default(),
        stop: AtomicBool::new(false),
        tx: Mutex::new(Some(tx)),
        count: config.count,
    });
    let live = Arc::new(Mutex::new(LiveStats::new(config.decoder.clone())));
    let writer = {
        let shared = Arc::clone(&shared);
        let live = Arc::clone(&live);
        let mut w = Writer::new(BufWriter::with_capacity(1 << 20, out), header)?;
        w.flush()?;
        thread::Builder::new()
            .name("jitterlab-writer".into())
            .spawn(move || write_loop(w, &rx, &shared, &live))?
    };
    let start = Instant::now();
    let mut threads: Vec<JoinHandle<Result<(), Error>>> = Vec::new();
    let schedule = Arc::new((Mutex::new(Schedule::default()), Condvar::new()));
    match config.forward {
        None => {
            let shared = Arc::clone(&shared);
            threads.push(
                thread::Builder::new()
                    .name("jitterlab-recv".into())
                    .spawn(move || listen_loop(listener, local, &shared))?,
            );
        }
        Some(upstream) => {
            let listener = Arc::new(Mutex::new(listener));
            let send_sock = listener.lock().map_err(poisoned)?.socket().try_clone()?;
            let relay = Arc::new(Relay {
                upstream,
                send_to_client: send_sock,
                clients: Mutex::new(HashMap::new()),
                schedule: config.impair.as_ref().map(|_| Arc::clone(&schedule)),
                models,
                start,
                snaplen: config.snaplen,
            });
            {
                let shared = Arc::clone(&shared);
                let relay = Arc::clone(&relay);
                threads.push(
                    thread::Builder::new()
                        .name("jitterlab-relay".into())
                        .spawn(move || relay.client_loop(&listener, &shared))?,
                );
            }
            if relay.schedule.is_some() {
                let shared = Arc::clone(&shared);
                let relay = Arc::clone(&relay);
                threads.push(
                    thread::Builder::new()
                        .name("jitterlab-impair".into())
                        .spawn(move || relay.release_loop(&shared))?,
                );
            }
            let relay_for_join = Arc::clone(&relay);
            let shared_for_join = Arc::clone(&shared);
            threads.push(thread::spawn(move || {
                // Upstream receivers are spawned per client by the client loop; wait for them.
                while !shared_for_join.stopping() {
                    thread::sleep(POLL);
                }
                let handles: Vec<_> = relay_for_join
                    .clients
                    .lock()
                    .map_err(poisoned)?
                    .values_mut()
                    .filter_map(|(_, h)| h.take())
                    .collect();
                for h in handles {
                    h.join()
                        .map_err(|_| Error::Invalid("an upstream thread panicked".into()))??;
                }
                Ok(())
            }));
        }
    }
    // The status loop.
    let mut last_status = Instant::now() - Duration::from_secs(1);
    while !shared.stopping() {
        if stop.load(Ordering::Relaxed) || config.duration.is_some_and(|d| start.elapsed() >= d) {
            shared.stop.store(true, Ordering::Relaxed);
            break;
        }
        if threads.iter().any(JoinHandle::is_finished) || writer.is_finished() {
            shared.stop.store(true, Ordering::Relaxed);
            break;
        }
        if last_status.elapsed() >= Duration::from_millis(250) {
            last_status = Instant::now();
            on_status(&current_status(&shared, &live, start));
        }
        thread::sleep(Duration::from_millis(10));
    }
    {
        let (lock, cvar) = &*schedule;
        lock.lock().map_err(poisoned)?.closed = true;
        cvar.notify_all();
    }
    let mut first_error = None;
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(Error::Invalid("a receiver thread panicked".into()));
            }
        }
    }
    // Closing the queue ends the writer once it is drained.
    shared.tx.lock().map_err(poisoned)?.take();
    let records = match writer.join() {
        Ok(r) => r?,
        Err(_) => return Err(Error::Invalid("the writer thread panicked".into())),
    };
    if let Some(e) = first_error {
        return Err(e);
    }
    let c = &shared.counters;
    Ok(Summary {
        status: current_status(&shared, &live, start),
        stats: c.stats(true),
        records,
        forwarded: c.forwarded.load(Ordering::Relaxed),
        impaired_drops: c.impaired_drops.load(Ordering::Relaxed),
        duplicates_added: c.duplicates_added.load(Ordering::Relaxed),
        unforwarded: c.unforwarded.load(Ordering::Relaxed),
        send_failures: c.send_failures.load(Ordering::Relaxed),
        unreleased: c.unreleased.load(Ordering::Relaxed),
        kernel_timestamps: c.kernel_timestamps.load(Ordering::Relaxed) > 0,
    })
}

fn poisoned<T>(_: T) -> Error {
    Error::Invalid("internal lock poisoned".into())
}

fn current_status(shared: &Shared, live: &Mutex<LiveStats>, start: Instant) -> Status {
    let c = &shared.counters;
    let mut s = live.lock().map(|l| l.status()).unwrap_or_default();
    s.elapsed = start.elapsed();
    s.packets = c.received.load(Ordering::Relaxed);
    s.drops = c.kernel_drops.load(Ordering::Relaxed) + c.queue_drops.load(Ordering::Relaxed);
    s
}

fn listen_loop(mut sock: StampedSocket, local: SocketAddr, shared: &Shared) -> Result<(), Error> {
    while !shared.stopping() {
        let Some(d) = sock.recv()? else { continue };
        shared.received(&d);
        let rec = record(&d, sock.payload(&d), d.from, local, Direction::Unknown);
        shared.push(rec);
    }
    Ok(())
}

/// A client's upstream socket and its receiver thread (taken when the relay stops; the
/// socket stays for the impairment scheduler to drain through).
type ClientEntry = (Arc<UdpSocket>, Option<JoinHandle<Result<(), Error>>>);

struct Relay {
    upstream: SocketAddr,
    send_to_client: UdpSocket,
    clients: Mutex<HashMap<SocketAddr, ClientEntry>>,
    schedule: Option<Arc<(Mutex<Schedule>, Condvar)>>,
    /// Per direction: [to upstream, to client].
    models: Option<[Mutex<Model>; 2]>,
    start: Instant,
    snaplen: usize,
}

impl Relay {
    /// Receives from clients and forwards to the upstream (through the client's own socket).
    fn client_loop(
        self: &Arc<Self>,
        listener: &Mutex<StampedSocket>,
        shared: &Arc<Shared>,
    ) -> Result<(), Error> {
        let mut sock = listener.lock().map_err(poisoned)?;
        while !shared.stopping() {
            let Some(d) = sock.recv()? else { continue };
            let client = d.from;
            shared.received(&d);
            let Some(up) = self.upstream_for(client, shared)? else {
                // Too many clients: recorded, counted, not forwarded.
                shared.counters.unforwarded.fetch_add(1, Ordering::Relaxed);
                let (src, dst) = (client, self.upstream);
                shared.push(record(
                    &d,
                    sock.payload(&d),
                    src,
                    dst,
                    Direction::ToUpstream,
                ));
                continue;
            };
            let payload = sock.payload(&d).to_vec();
            self.pass(&d, payload, client, true, &up, shared)?;
        }
        Ok(())
    }

    /// The client's upstream socket, created (with its receiver thread) on first contact.
    fn upstream_for(
        self: &Arc<Self>,
        client: SocketAddr,
        shared: &Arc<Shared>,
    ) -> Result<Option<Arc<UdpSocket>>, Error> {
        let mut clients = self.clients.lock().map_err(poisoned)?;
        if let Some((s, _)) = clients.get(&client) {
            return Ok(Some(Arc::clone(s)));
        }
        if clients.len() >= MAX_CLIENTS {
            return Ok(None);
        }
        let bind: SocketAddr = if self.upstream.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = UdpSocket::bind(bind)?;
        sock.connect(self.upstream)?;
        let send = Arc::new(sock.try_clone()?);
        let stamped = StampedSocket::new(sock, self.snaplen)?;
        let relay = Arc::clone(self);
        let shared = Arc::clone(shared);
        let handle = thread::Builder::new()
            .name("jitterlab-upstream".into())
            .spawn(move || relay.upstream_loop(stamped, client, &shared))?;
        clients.insert(client, (Arc::clone(&send), Some(handle)));
        Ok(Some(send))
    }

    /// Receives from the upstream on one client's socket and forwards to that client.
    fn upstream_loop(
        &self,
        mut sock: StampedSocket,
        client: SocketAddr,
        shared: &Shared,
    ) -> Result<(), Error> {
        let up = Arc::new(sock.socket().try_clone()?);
        while !shared.stopping() {
            let Some(d) = sock.recv()? else { continue };
            if d.from != self.upstream {
                continue; // connected sockets only see the upstream; belt and braces
            }
            shared.received(&d);
            let payload = sock.payload(&d).to_vec();
            self.pass(&d, payload, client, false, &up, shared)?;
        }
        Ok(())
    }

    /// Records a datagram and forwards it now, or hands it to the impairment scheduler.
    fn pass(
        &self,
        d: &Datagram,
        payload: Vec<u8>,
        client: SocketAddr,
        to_upstream: bool,
        up: &UdpSocket,
        shared: &Shared,
    ) -> Result<(), Error> {
        let (src, dst, dir) = self.route(to_upstream, client);
        let (Some(models), Some(schedule)) = (&self.models, &self.schedule) else {
            shared.push(record(d, &payload, src, dst, dir));
            let _ = self.send(to_upstream, client, Some(up), &payload, shared);
            return Ok(());
        };
        let mut truth = record(d, &payload, src, dst, dir);
        truth.kind = crate::trace::RecordKind::Sent.code();
        shared.push(truth);
        let since = Nanos(i64::try_from(self.start.elapsed().as_nanos()).unwrap_or(i64::MAX));
        let bytes = u32::try_from(payload.len() + 28).unwrap_or(u32::MAX);
        let outcome = models[usize::from(!to_upstream)]
            .lock()
            .map_err(poisoned)?
            .transmit(since, bytes);
        if outcome.lost {
            shared
                .counters
                .impaired_drops
                .fetch_add(1, Ordering::Relaxed);
        }
        let (lock, cvar) = &**schedule;
        let mut s = lock.lock().map_err(poisoned)?;
        let mut earliest = false;
        for (copy, arrival) in outcome.arrivals.iter().enumerate() {
            let Some(at) = arrival else { continue };
            s.order += 1;
            let order = s.order;
            let due = self.start + Duration::from_nanos(u64::try_from(at.as_nanos()).unwrap_or(0));
            earliest |= s.heap.peek().is_none_or(|Reverse(p)| due < p.due);
            s.heap.push(Reverse(Pending {
                due,
                order,
                to_upstream,
                client,
                duplicate: copy > 0,
                payload: payload.clone(),
            }));
        }
        // The release thread sleeps until the earliest due time: wake it only when that moves
        // earlier (a wake-up per datagram cost more than the datagram at high rates).
        if earliest {
            cvar.notify_one();
        }
        Ok(())
    }

    /// Source, destination and direction of a datagram between `client` and the upstream.
    fn route(&self, to_upstream: bool, client: SocketAddr) -> (SocketAddr, SocketAddr, Direction) {
        if to_upstream {
            (client, self.upstream, Direction::ToUpstream)
        } else {
            (self.upstream, client, Direction::ToClient)
        }
    }

    /// Forwards one datagram (toward the upstream through the client's socket `up`, which is
    /// gone once the relay has stopped); whether the kernel took it (failures are counted).
    fn send(
        &self,
        to_upstream: bool,
        client: SocketAddr,
        up: Option<&UdpSocket>,
        payload: &[u8],
        shared: &Shared,
    ) -> bool {
        let sent = if to_upstream {
            up.is_some_and(|up| up.send(payload).is_ok())
        } else {
            self.send_to_client.send_to(payload, client).is_ok()
        };
        // A refused send (the peer's port is closed, the loopback backlog full) is counted;
        // the datagram is in the trace as received either way.
        if sent {
            shared.counters.forwarded.fetch_add(1, Ordering::Relaxed);
        } else {
            shared
                .counters
                .send_failures
                .fetch_add(1, Ordering::Relaxed);
        }
        sent
    }

    /// Sends one scheduled copy and records it as it leaves; a copy that could not be sent
    /// never left the relay and gets no egress record.
    fn release(&self, p: Pending, shared: &Shared) -> Result<(), Error> {
        let up = self
            .clients
            .lock()
            .map_err(poisoned)?
            .get(&p.client)
            .map(|(u, _)| Arc::clone(u));
        if !self.send(p.to_upstream, p.client, up.as_deref(), &p.payload, shared) {
            return Ok(());
        }
        let (src, dst, dir) = self.route(p.to_upstream, p.client);
        let mut rec = Record::received(realtime(), p.payload);
        rec.direction = dir.code();
        rec.src = Some(Endpoint(src));
        rec.dst = Some(Endpoint(dst));
        if p.duplicate {
            rec.flags |= flags::INJECTED_DUPLICATE;
            shared
                .counters
                .duplicates_added
                .fetch_add(1, Ordering::Relaxed);
        }
        shared.push(rec);
        Ok(())
    }

    /// Sends impaired datagrams when they are due and records each copy as it leaves.
    fn release_loop(&self, shared: &Shared) -> Result<(), Error> {
        let Some(schedule) = &self.schedule else {
            return Ok(());
        };
        let (lock, cvar) = &**schedule;
        let mut s = lock.lock().map_err(poisoned)?;
        loop {
            let now = Instant::now();
            match s.heap.peek() {
                Some(Reverse(p)) if p.due <= now => {
                    let Some(Reverse(p)) = s.heap.pop() else {
                        continue;
                    };
                    drop(s);
                    self.release(p, shared)?;
                    s = lock.lock().map_err(poisoned)?;
                }
                Some(Reverse(p)) => {
                    if s.closed && shared.stopping() && p.due > now + Duration::from_secs(5) {
                        // Do not hold the capture open for absurd delays; what is left is
                        // counted, not silently dropped.
                        let left = s.heap.len() as u64;
                        shared
                            .counters
                            .unreleased
                            .fetch_add(left, Ordering::Relaxed);
                        break;
                    }
                    let wait = p.due - now;
                    s = cvar.wait_timeout(s, wait.min(POLL)).map_err(poisoned)?.0;
                }
                None if s.closed => break,
                None => s = cvar.wait_timeout(s, POLL).map_err(poisoned)?.0,
            }
        }
        Ok(())
    }
}

/// Streams, loss and jitter as the writer sees them, for the status line.
struct LiveStats {
    decoder: Option<StreamDecoder>,
    config: Option<DecoderConfig>,
    streams: Vec<(Jitter, i64, i64, u64)>,
}

impl LiveStats {
    fn new(config: Option<DecoderConfig>) -> Self {
        Self {
            decoder: None,
            config,
            streams: Vec::new(),
        }
    }

    fn push(&mut self, rec: &Record) {
        if rec.kind != 0 {
            return;
        }
        let config = &self.config;
        let decoder = self.decoder.get_or_insert_with(|| {
            let config = config
                .clone()
                .unwrap_or_else(|| DecoderConfig::sniff(&rec.payload));
            StreamDecoder::new(config, Vec::new())
        });
        let Ok(sample) = decoder.decode(rec) else {
            return;
        };
        let i = sample.stream as usize;
        if i >= self.streams.len() {
            self.streams
                .resize(i + 1, (Jitter::default(), i64::MAX, i64::MIN, 0));
        }
        let s = &mut self.streams[i];
        s.0.push(sample.send, sample.arrival, !sample.marker);
        s.1 = s.1.min(sample.seq);
        s.2 = s.2.max(sample.seq);
        s.3 += 1;
    }

    fn status(&self) -> Status {
        let lost = self
            .streams
            .iter()
            .map(|s| {
                u64::try_from(s.2 - s.1 + 1)
                    .unwrap_or(0)
                    .saturating_sub(s.3)
            })
            .sum();
        let jitter_ms = self
            .streams
            .iter()
            .max_by_key(|s| s.3)
            .map_or(0.0, |s| s.0.current_ms());
        Status {
            streams: self.streams.len(),
            lost,
            jitter_ms,
            ..Status::default()
        }
    }
}

fn write_loop(
    mut w: Writer<BufWriter<File>>,
    rx: &Receiver<Record>,
    shared: &Shared,
    live: &Mutex<LiveStats>,
) -> Result<u64, Error> {
    let result = write_records(&mut w, rx, shared, live);
    let records = w.records();
    // A full disk or a vanished output: say how much the file holds. Records are written
    // whole into the buffer, so the file is every complete record up to the failure (the
    // reader reports a cut-off last record as trailing bytes).
    let written = |e: Error| match e {
        Error::Io(io) => Error::Io(io::Error::new(
            io.kind(),
            format!(
                "{io}; the file holds the {records} records written before the failure and reads back"
            ),
        )),
        other => other,
    };
    result.map_err(written)?;
    let file = w
        .into_inner()
        .into_inner()
        .map_err(|e| written(Error::Io(e.into_error())))?;
    file.sync_all().map_err(|e| written(Error::Io(e)))?;
    Ok(records)
}

/// A batch this large means the writer is behind: no pause before the next.
const WRITER_BATCH: usize = 256;
/// The writer's pause between small batches.
const WRITER_PAUSE: Duration = Duration::from_millis(1);

fn write_records(
    w: &mut Writer<BufWriter<File>>,
    rx: &Receiver<Record>,
    shared: &Shared,
    live: &Mutex<LiveStats>,
) -> Result<(), Error> {
    let mut last_flush = Instant::now();
    let mut last_stats = Instant::now();
    let mut batch = Vec::with_capacity(4096);
    loop {
        let first = match rx.recv_timeout(FLUSH_INTERVAL / 2) {
            Ok(r) => Some(r),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        batch.extend(first);
        batch.extend(rx.try_iter().take(4095));
        if let Ok(mut l) = live.lock() {
            for r in &batch {
                l.push(r);
            }
        }
        let busy = batch.len() >= WRITER_BATCH;
        for r in batch.drain(..) {
            w.write(&r)?;
        }
        if !busy {
            // Let datagrams gather instead of waking for each one: at 100,000/s a wake-up per
            // datagram costs the receiving thread more than the datagram itself. The queue
            // holds far more than arrives in this pause.
            thread::sleep(WRITER_PAUSE);
        }
        if last_stats.elapsed() >= Duration::from_secs(1) {
            last_stats = Instant::now();
            w.write(&shared.counters.stats(false).to_record(realtime()))?;
        }
        if last_flush.elapsed() >= FLUSH_INTERVAL {
            last_flush = Instant::now();
            w.flush()?;
        }
    }
    w.write(&shared.counters.stats(true).to_record(realtime()))
}

//! Live capture from UDP sockets, and the recording relay.
//!
//! Arrival times come from the kernel where the platform gives them (Linux: `SO_TIMESTAMPNS`,
//! macOS and the BSDs: `SO_TIMESTAMP`): the record's [`flags::KERNEL_TIMESTAMP`] says so; when
//! the kernel gives none (Windows: never) the time is taken in user space and counted
//! ([`CaptureStats::user_timestamps`]). Kernel receive-queue drops are read with `SO_RXQ_OVFL`
//! on Linux; other platforms do not report them. [`TIMESTAMPS`] says which applies to this
//! build.
//!
//! [`Capture::bind`] binds and sets up the socket before anything is written, so a command can
//! fail on an address it cannot use before it announces a capture or creates a file;
//! [`Capture::run`] then receives.
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
//! One job per file: `addr` ([`resolve`]: addresses and host names), `discard` (what a failed
//! command leaves: [`discard_if_empty`]), [`socket`] (timestamps
//! and drop counts, per platform), `shared` (the counters and
//! the queue the receiver threads share), `relay` (forwarding between clients and the
//! upstream), `impair` (the impairment scheduler), `status` (the live decode behind the status
//! line) and `writer` (the thread that appends to the file). This file starts and stops them.
//!
//! [`RecordKind::Stats`]: crate::trace::RecordKind::Stats
//! [`flags::KERNEL_TIMESTAMP`]: crate::trace::flags::KERNEL_TIMESTAMP

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::Error;
use crate::decode::DecoderConfig;
use crate::netmodel::{Model, ModelSpec};
use crate::trace::{CaptureStats, Direction, Header, Writer};

mod addr;
mod discard;
mod impair;
mod relay;
mod shared;
pub mod socket;
mod status;
mod writer;

pub use addr::resolve;
pub use discard::discard_if_empty;
use impair::Schedule;
use relay::Relay;
use shared::{Counters, Shared, record};
pub use socket::{Datagram, StampedSocket, TIMESTAMPS, TimestampSource, realtime};
use status::LiveStats;
pub use status::Status;
use writer::write_loop;

/// How often the writer flushes to the file: the most a `kill -9` can lose.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// How long a blocking receive waits before checking whether to stop.
const POLL: Duration = Duration::from_millis(20);

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

/// A capture (or relay) whose socket is bound and set up, not yet receiving: binding first lets
/// a command fail on an address it cannot use before it announces anything or creates a file.
#[derive(Debug)]
pub struct Capture {
    config: Config,
    listener: StampedSocket,
    local: SocketAddr,
    models: Option<[Mutex<Model>; 2]>,
}

impl Capture {
    /// Binds the listening socket and enables its timestamps; in relay mode also checks that
    /// the upstream can be reached (a route exists) and builds the impairment models.
    ///
    /// # Errors
    /// An impairment with receiver keys, an address that cannot be bound ([`Error::Listen`]),
    /// socket options that cannot be set, an upstream with no route ([`Error::Unreachable`]).
    pub fn bind(config: &Config) -> Result<Self, Error> {
        if let Some(spec) = &config.impair
            && spec.has_receiver_keys()
        {
            return Err(Error::Impairment(Box::new(Error::ReceiverKeys)));
        }
        let listen = UdpSocket::bind(config.listen).map_err(|source| Error::Listen {
            addr: config.listen,
            source,
        })?;
        let local = listen.local_addr()?;
        if let Some(upstream) = config.forward {
            // The relay opens a socket per client toward the upstream; one that cannot even be
            // connected (no route) would only fail at the first client.
            UdpSocket::bind(unspecified(upstream))
                .and_then(|s| s.connect(upstream))
                .map_err(|source| Error::Unreachable {
                    to: upstream,
                    source,
                })?;
        }
        let models = match &config.impair {
            Some(spec) if config.forward.is_some() => {
                let seed = spec.seed.unwrap_or(1);
                let new = |seed| {
                    Model::new(spec.clone(), seed)
                        .map(Mutex::new)
                        .map_err(|e| Error::Impairment(Box::new(e)))
                };
                Some([new(seed)?, new(seed ^ 0x9e37_79b9_7f4a_7c15)?])
            }
            _ => None,
        };
        let listener = StampedSocket::new(listen, config.snaplen)?;
        Ok(Self {
            config: config.clone(),
            listener,
            local,
            models,
        })
    }

    /// The address the capture listens on (with the port the system picked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Writes the header to `out` and starts receiving; [`Running::wait`] then runs the
    /// capture to its end. A header that cannot be written fails here, before any thread
    /// starts, so a command can announce the capture only once it is under way.
    ///
    /// `out` receives records as they arrive; it is flushed at least every [`FLUSH_INTERVAL`]
    /// and synced at the end.
    ///
    /// # Errors
    /// The header cannot be written; a thread cannot be started.
    pub fn start(self, out: File, header: &Header) -> Result<Running, Error> {
        let Self {
            config,
            listener,
            local,
            models,
        } = self;
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
                        h.join().map_err(|_| Error::Panicked {
                            thread: "an upstream thread",
                        })??;
                    }
                    Ok(())
                }));
            }
        }
        Ok(Running {
            config,
            shared,
            live,
            writer,
            threads,
            schedule,
            start,
        })
    }

    /// Starts ([`Capture::start`]) and runs the capture until `stop` is set, the duration
    /// passes or the count is reached ([`Running::wait`]).
    ///
    /// # Errors
    /// As [`Capture::start`] and [`Running::wait`].
    pub fn run(
        self,
        out: File,
        header: &Header,
        stop: &AtomicBool,
        on_status: impl FnMut(&Status),
    ) -> Result<Summary, Error> {
        self.start(out, header)?.wait(stop, on_status)
    }
}

/// A capture under way: its threads receive and write until [`Running::wait`] stops them.
pub struct Running {
    config: Config,
    shared: Arc<Shared>,
    live: Arc<Mutex<LiveStats>>,
    writer: JoinHandle<Result<u64, Error>>,
    threads: Vec<JoinHandle<Result<(), Error>>>,
    schedule: Arc<(Mutex<Schedule>, Condvar)>,
    start: Instant,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("config", &self.config)
            .field("elapsed", &self.start.elapsed())
            .finish_non_exhaustive()
    }
}

impl Running {
    /// Runs the capture until `stop` is set, the duration passes or the count is reached.
    /// `on_status` is called about 4 times a second from the calling thread.
    ///
    /// # Errors
    /// Write errors (the capture stops at the first one, and what was written stays
    /// readable); socket errors while receiving.
    pub fn wait(
        self,
        stop: &AtomicBool,
        mut on_status: impl FnMut(&Status),
    ) -> Result<Summary, Error> {
        let Self {
            config,
            shared,
            live,
            writer,
            threads,
            schedule,
            start,
        } = self;
        // The status loop.
        let mut last_status = Instant::now() - Duration::from_secs(1);
        while !shared.stopping() {
            if stop.load(Ordering::Relaxed) || config.duration.is_some_and(|d| start.elapsed() >= d)
            {
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
                    first_error.get_or_insert(Error::Panicked {
                        thread: "a receiver thread",
                    });
                }
            }
        }
        // Closing the queue ends the writer once it is drained.
        shared.tx.lock().map_err(poisoned)?.take();
        let records = match writer.join() {
            Ok(r) => r?,
            Err(_) => {
                return Err(Error::Panicked {
                    thread: "the writer thread",
                });
            }
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
}

/// The wildcard address of `peer`'s family, port 0: where a socket toward `peer` binds.
pub(crate) fn unspecified(peer: SocketAddr) -> SocketAddr {
    if peer.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    }
}

/// Binds ([`Capture::bind`]) and runs ([`Capture::run`]) a capture (or relay) until `stop` is
/// set, the duration passes or the count is reached.
///
/// # Errors
/// As [`Capture::bind`] and [`Capture::run`].
pub fn run(
    config: &Config,
    out: File,
    header: &Header,
    stop: &AtomicBool,
    on_status: impl FnMut(&Status),
) -> Result<Summary, Error> {
    Capture::bind(config)?.run(out, header, stop, on_status)
}

pub(crate) fn poisoned<T>(_: T) -> Error {
    Error::Poisoned
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

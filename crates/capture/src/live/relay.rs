//! The recording relay: datagrams between real clients and one upstream server, forwarded
//! both ways through a socket per client and recorded with their [`Direction`].

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use crate::Error;
use crate::live::impair::Schedule;
use crate::live::shared::{Shared, record};
use crate::live::socket::{Datagram, StampedSocket};
use crate::live::{poisoned, unspecified};
use crate::netmodel::Model;
use crate::trace::{Direction, RecordKind};

/// Whether a receive error is the kernel reporting an earlier send refused by the peer (ICMP
/// port unreachable): `ECONNREFUSED` on Unix, `WSAECONNRESET` on Windows.
fn refused(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset
    )
}

/// The most clients the relay keeps an upstream socket for.
const MAX_CLIENTS: usize = 1024;

/// A client's upstream socket and its receiver thread (taken when the relay stops; the
/// socket stays for the impairment scheduler to drain through).
pub(super) type ClientEntry = (Arc<UdpSocket>, Option<JoinHandle<Result<(), Error>>>);

/// The relay's state, shared by its receiver threads and the impairment scheduler.
pub(super) struct Relay {
    pub(super) upstream: SocketAddr,
    pub(super) send_to_client: UdpSocket,
    pub(super) clients: Mutex<HashMap<SocketAddr, ClientEntry>>,
    pub(super) schedule: Option<Arc<(Mutex<Schedule>, Condvar)>>,
    /// Per direction: [to upstream, to client].
    pub(super) models: Option<[Mutex<Model>; 2]>,
    pub(super) start: Instant,
    pub(super) snaplen: usize,
}

impl Relay {
    /// Receives from clients and forwards to the upstream (through the client's own socket).
    pub(super) fn client_loop(
        self: &Arc<Self>,
        listener: &Mutex<StampedSocket>,
        shared: &Arc<Shared>,
    ) -> Result<(), Error> {
        let mut sock = listener.lock().map_err(poisoned)?;
        while !shared.stopping() {
            let d = match sock.recv() {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                // Windows reports an earlier send to a client that was refused (its port
                // closed) on the next receive, even on an unconnected socket: counted, as on
                // the upstream side.
                Err(e) if refused(&e) => {
                    shared
                        .counters
                        .send_failures
                        .fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
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
    pub(super) fn upstream_for(
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
        let sock = UdpSocket::bind(unspecified(self.upstream))?;
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
            let d = match sock.recv() {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                // The kernel reporting that an earlier datagram to the upstream was refused
                // (ICMP port unreachable: the server closed its port). Counted with the sends
                // refused, and the relay carries on, as the server may come back.
                Err(e) if refused(&e) => {
                    shared
                        .counters
                        .send_failures
                        .fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
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
        truth.kind = RecordKind::Sent;
        shared.push(truth);
        self.impair(models, schedule, payload, client, to_upstream, shared)
    }

    /// Source, destination and direction of a datagram between `client` and the upstream.
    pub(super) fn route(
        &self,
        to_upstream: bool,
        client: SocketAddr,
    ) -> (SocketAddr, SocketAddr, Direction) {
        if to_upstream {
            (client, self.upstream, Direction::ToUpstream)
        } else {
            (self.upstream, client, Direction::ToClient)
        }
    }

    /// Forwards one datagram (toward the upstream through the client's socket `up`, which is
    /// gone once the relay has stopped); whether the kernel took it (failures are counted).
    pub(super) fn send(
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
}

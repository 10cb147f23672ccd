//! The relay's impairment scheduler: each datagram goes through its direction's seeded
//! network model, and the copies the model delivers wait in a heap until they are due.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::Error;
use crate::live::relay::Relay;
use crate::live::shared::Shared;
use crate::live::socket::realtime;
use crate::live::{POLL, poisoned};
use crate::netmodel::Model;
use crate::time::Nanos;
use crate::trace::{Endpoint, Record, flags};

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
/// The datagrams waiting to be released, earliest first.
pub(super) struct Schedule {
    heap: BinaryHeap<Reverse<Pending>>,
    order: u64,
    pub(super) closed: bool,
}

impl Relay {
    /// Runs one ingress datagram through its direction's model and schedules the copies the
    /// model delivers (none when it lost the datagram).
    pub(super) fn impair(
        &self,
        models: &[Mutex<Model>; 2],
        schedule: &(Mutex<Schedule>, Condvar),
        payload: Vec<u8>,
        client: SocketAddr,
        to_upstream: bool,
        shared: &Shared,
    ) -> Result<(), Error> {
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
        let (lock, cvar) = schedule;
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
        rec.direction = dir;
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
    pub(super) fn release_loop(&self, shared: &Shared) -> Result<(), Error> {
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

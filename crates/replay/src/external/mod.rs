//! External policies (`exec:CMD`): a user's own buffer, in any language, run as a child
//! process and driven over a batched protocol on its standard input and output, in JSON Lines
//! or length-prefixed MessagePack (`docs/external-policy.md`).
//!
//! This is the one part of the crate that does I/O: the rest stays sans-IO. The engine
//! ([`ExecEngine`]) is given the whole replay before it runs ([`Script`]: frames and
//! arrivals do not depend on what a buffer picks), sends it to the child in batches of frames
//! (each frame with the packets pushed before it), keeps a few batches in flight so the pipe
//! does not dominate, and reads back one pick per frame. Replies are checked: a crash, a
//! timeout, a malformed reply, a wrong count or a pick of a packet that has not arrived yet is
//! an [`Error::External`] naming the policy and the batch, frame or packet. The child is
//! killed and reaped whatever happens.

mod json;
mod msgpack;
mod msgpack_reply;
mod process;
mod protocol;

pub use protocol::Format;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use jitterlab_capture::Nanos;
use jitterlab_capture::decode::Sample;

use crate::Error;
use crate::buffer::{Counters, Factor, HoldReason, Mode, Packet, Pick};
use crate::engine::{Applied, Engine};
use process::{Process, WaitError};
use protocol::{HoldMsg, ModeMsg, Origin, PickMsg, Reply};

/// The default reply timeout, in ms (see [`set_default_timeout`]).
static DEFAULT_TIMEOUT_MS: AtomicU64 = AtomicU64::new(5000);

/// Sets the timeout of external policies that do not give their own (`exec(timeout=…)`):
/// how long jitterlab waits for each reply line (and for the child to exit at the end).
pub fn set_default_timeout(timeout: Duration) {
    let ms = u64::try_from(timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    DEFAULT_TIMEOUT_MS.store(ms, Ordering::Relaxed);
}

/// The timeout of external policies that do not give their own.
pub fn default_timeout() -> Duration {
    Duration::from_millis(DEFAULT_TIMEOUT_MS.load(Ordering::Relaxed))
}

/// One frame of a replay, as the replay loop will go through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptFrame {
    /// Local render time.
    pub at: Nanos,
    /// The sender-clock time at this frame (`at` + the clock offset).
    pub now: Nanos,
    /// How many packets of [`Script::packets`] are pushed before this frame's sample.
    pub pushed: usize,
}

/// Every packet and frame of one replay, in the replay loop's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Script {
    /// The packets in the order they are pushed, each with its local arrival time.
    pub packets: Vec<(Packet, Nanos)>,
    /// The frames, in order.
    pub frames: Vec<ScriptFrame>,
}

/// How an external policy runs: the command, and how jitterlab talks to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecOptions {
    /// The command line, run through the shell (`sh -c`, `cmd /C` on Windows).
    pub command: String,
    /// How long to wait for each reply; `None`: [`default_timeout`].
    pub timeout: Option<Duration>,
    /// Frames per batch.
    pub batch: usize,
    /// Batches sent ahead of the replies read.
    pub window: usize,
    /// Whether pushes carry the samples' values (a buffer that decides by times alone does
    /// not need them; jitterlab computes what is shown from the pick).
    pub values: bool,
    /// How messages are framed: JSON Lines or MessagePack.
    pub format: Format,
    /// The policy string, for error messages.
    pub policy: String,
}

/// An engine whose decisions come from a child process (see the module docs).
pub struct ExecEngine {
    options: ExecOptions,
    /// Each frame's timeline and pick, read from the child.
    answers: Vec<(Applied, Pick)>,
    /// The newest send time arrived before each frame.
    newest: Vec<Option<Nanos>>,
    next: usize,
    current_newest: Option<Nanos>,
    counters: Counters,
}

impl ExecEngine {
    /// An engine that will run `options.command` when given its script.
    pub fn new(options: ExecOptions) -> Self {
        Self {
            options,
            answers: Vec::new(),
            newest: Vec::new(),
            next: 0,
            current_newest: None,
            counters: Counters::default(),
        }
    }

    fn error(&self, at: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::External {
            policy: self.options.policy.clone(),
            at: at.into(),
            reason: reason.into(),
        }
    }

    /// Runs the child over `script` and keeps its answers.
    fn run(&mut self, samples: &[Sample], script: &Script) -> Result<(), Error> {
        let timeout = self.options.timeout.unwrap_or_else(default_timeout);
        let format = self.options.format;
        let mut child = Process::spawn(&self.options.command, format).map_err(|e| {
            self.error(
                "start",
                format!("cannot run `{}`: {e}", self.options.command),
            )
        })?;
        let origin = Origin::of(script);
        let encoder = protocol::Encoder {
            samples,
            script,
            origin,
            values: self.options.values,
        };
        let per = self.options.batch.max(1);
        let batches: Vec<(usize, usize)> = (0..script.frames.len())
            .step_by(per)
            .map(|s| (s, (s + per).min(script.frames.len())))
            .collect();
        let first_packet = |frame: usize| {
            if frame == 0 {
                0
            } else {
                script.frames[frame - 1].pushed
            }
        };
        child.send(protocol::hello(format, self.options.values));
        let mut sent = 0usize;
        let window = self.options.window.max(1);
        // Which packets have arrived (by sample index), for "a pick from the future".
        let mut arrived = vec![false; samples.len()];
        let mut pushed = 0usize;
        let mut newest: Option<Nanos> = None;
        // Send times arrived, sorted, for the depth of a child that does not give it.
        let mut sends: Vec<Nanos> = Vec::new();
        self.answers.reserve(script.frames.len());
        self.newest.reserve(script.frames.len());
        // The batches are encoded on a thread of their own, up to `window` ahead of those
        // sent, while this one reads and checks the replies. Returning (an error) drops
        // `ready`, which stops the encoder, so that the scope's join never waits long.
        let recycled = child.recycled();
        std::thread::scope(|scope| -> Result<(), Error> {
            let (ready_tx, ready) = mpsc::sync_channel::<Result<Vec<u8>, String>>(window);
            let all = &batches;
            let encoding = std::thread::Builder::new()
                .name("exec-encoder".into())
                .spawn_scoped(scope, move || {
                    for (i, &(s, e)) in all.iter().enumerate() {
                        let mut message = recycled.try_recv().unwrap_or_default();
                        let encoded = encoder
                            .batch(
                                format,
                                &mut message,
                                i as u64,
                                &script.frames[s..e],
                                first_packet(s),
                            )
                            .map(|()| message);
                        if ready_tx.send(encoded).is_err() {
                            return;
                        }
                    }
                });
            if let Err(e) = encoding {
                return Err(self.error("start", format!("cannot start the encoder thread: {e}")));
            }
            for (b, &(start, end)) in batches.iter().enumerate() {
                while sent < batches.len() && sent < b + window {
                    let message = ready
                        .recv()
                        .map_err(|_| self.error(format!("batch {sent}"), "the encoder stopped"))?
                        .map_err(|r| self.error(format!("batch {sent}"), r))?;
                    child.send(message);
                    sent += 1;
                }
                if sent == batches.len() {
                    child.close_input();
                }
                let where_ = || {
                    format!(
                        "batch {b} (frames {start}..{end}, packets {}..{})",
                        first_packet(start),
                        script.frames[end - 1].pushed
                    )
                };
                let text = match child.recv(timeout) {
                    Ok(t) => t,
                    Err(e) => {
                        let reason = match e {
                            WaitError::Timeout => format!(
                                "no complete reply within {} (a child that hangs, or a reply that never ends)",
                                jitterlab_capture::spec::format_duration(Nanos(
                                    i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX)
                                ))
                            ),
                            WaitError::TooLong => match format {
                                Format::Json => format!(
                                    "reply longer than {} MiB without a newline",
                                    process::MAX_LINE >> 20
                                ),
                                Format::Msgpack => format!(
                                    "reply's length prefix announces more than {} MiB",
                                    process::MAX_LINE >> 20
                                ),
                            },
                            WaitError::Unframed(head) => format!(
                                "reply is not a MessagePack message: text where its 4-byte length was due, '{}' (a JSON Lines child? exec(format=json) speaks JSON Lines)",
                                String::from_utf8_lossy(&head)
                            ),
                            WaitError::Io(e) => format!("cannot read its output: {e}"),
                            WaitError::Ended(status) => {
                                let status =
                                    status.map_or("did not exit".into(), |s| s.to_string());
                                let mut r = format!("the child's output ended ({status})");
                                if let Some(w) = child.write_error() {
                                    r.push_str(&format!("; writing to it failed: {w}"));
                                }
                                let tail = child.stderr_tail();
                                if !tail.is_empty() {
                                    r.push_str(&format!("; its stderr: {tail}"));
                                }
                                r
                            }
                        };
                        return Err(self.error(where_(), reason));
                    }
                };
                let reply: Reply = protocol::decode_reply(format, &text).map_err(|e| {
                    let reason = match format {
                        Format::Json => {
                            let shown: String =
                                String::from_utf8_lossy(&text).chars().take(80).collect();
                            format!("reply is not a protocol line ({e}): '{shown}'")
                        }
                        Format::Msgpack => {
                            let shown: Vec<String> =
                                text.iter().take(24).map(|b| format!("{b:02x}")).collect();
                            format!(
                                "reply is not a protocol message ({e}): {} bytes, {}{}",
                                text.len(),
                                shown.join(" "),
                                if text.len() > 24 { " …" } else { "" }
                            )
                        }
                    };
                    self.error(where_(), reason)
                })?;
                if reply.batch != b as u64 {
                    return Err(self.error(
                        where_(),
                        format!(
                            "reply answers batch {} (replies come in order)",
                            reply.batch
                        ),
                    ));
                }
                if reply.picks.len() != end - start {
                    return Err(self.error(
                        where_(),
                        format!(
                            "reply has {} picks for {} frames (one per frame)",
                            reply.picks.len(),
                            end - start
                        ),
                    ));
                }
                for (i, msg) in reply.picks.iter().enumerate() {
                    let f = start + i;
                    let frame = script.frames[f];
                    for &(p, _) in &script.packets[pushed..frame.pushed] {
                        arrived[p.idx as usize] = true;
                        if p.repeat != Some(true) {
                            insert_sorted(&mut sends, p.send);
                        }
                        newest = Some(newest.map_or(p.send, |n: Nanos| n.max(p.send)));
                    }
                    pushed = frame.pushed;
                    let answer = self
                        .check(samples, &arrived, newest, &sends, frame, msg)
                        .map_err(|r| {
                            self.error(
                                format!(
                                    "frame {f} (at {} ms, now {} ms)",
                                    (frame.at - origin.local).as_millis_f64(),
                                    (frame.now - origin.send).as_millis_f64()
                                ),
                                r,
                            )
                        })?;
                    self.answers.push(answer);
                    self.newest.push(newest);
                }
                if let Some(c) = reply.counters {
                    self.counters = Counters {
                        inserted: c.inserted,
                        duplicates: c.duplicates,
                        late: c.late,
                        stale: c.stale,
                        evicted: c.evicted,
                        refused: c.refused,
                    };
                }
            }
            Ok(())
        })?;
        if batches.is_empty() {
            child.close_input();
        }
        if self.counters == Counters::default() {
            // The child keeps no counters: what jitterlab knows (a tick seen before is a
            // duplicate, every other packet was taken).
            let repeats = script
                .packets
                .iter()
                .filter(|(p, _)| p.repeat == Some(true))
                .count();
            self.counters.duplicates = repeats as u64;
            self.counters.inserted = (script.packets.len() - repeats) as u64;
        }
        child.finish(timeout);
        Ok(())
    }

    /// One pick, checked against what has arrived.
    fn check(
        &self,
        samples: &[Sample],
        arrived: &[bool],
        newest: Option<Nanos>,
        sends: &[Nanos],
        frame: ScriptFrame,
        msg: &PickMsg,
    ) -> Result<(Applied, Pick), String> {
        if msg.delay < 0 {
            return Err(format!(
                "delay {} ns is negative: a target after now, a sample from the future",
                msg.delay
            ));
        }
        let delay = Nanos(msg.delay);
        let target = frame.now - delay;
        let applied = Applied {
            delay,
            target,
            frozen: msg.frozen,
            scaled: msg.scaled,
        };
        let id = |name: &str, v: Option<u32>| -> Result<u32, String> {
            let v = v.ok_or_else(|| format!("mode {} needs \"{name}\"", msg.mode.name()))?;
            match arrived.get(v as usize) {
                Some(true) => Ok(v),
                Some(false) => Err(format!(
                    "{name} is packet {v}, which has not arrived yet: a sample from the future"
                )),
                None => Err(format!(
                    "{name} is packet {v}, which does not exist ({} packets)",
                    samples.len()
                )),
            }
        };
        let absent = |name: &str, v: Option<u32>| -> Result<(), String> {
            match v {
                Some(_) => Err(format!("mode {} takes no \"{name}\"", msg.mode.name())),
                None => Ok(()),
            }
        };
        let send = |i: u32| samples[i as usize].send;
        // By default: the packets arrived at or after the target.
        let depth = msg.depth.unwrap_or_else(|| at_or_after(sends, target));
        let pick = match msg.mode {
            ModeMsg::Empty => {
                absent("from", msg.from)?;
                absent("to", msg.to)?;
                Pick::empty(depth)
            }
            ModeMsg::Hold => {
                let from = id("from", msg.from)?;
                absent("to", msg.to)?;
                let reason = match msg.hold {
                    Some(HoldMsg::Gap) => HoldReason::Gap,
                    Some(HoldMsg::AfterNewest) => HoldReason::AfterNewest,
                    Some(HoldMsg::BeforeOldest) => HoldReason::BeforeOldest,
                    None if target <= send(from) => HoldReason::BeforeOldest,
                    None if newest.is_some_and(|n| n > send(from)) => HoldReason::Gap,
                    None => HoldReason::AfterNewest,
                };
                Pick::held(from, send(from), reason, depth)
            }
            ModeMsg::Interpolate | ModeMsg::Extrapolate => {
                let from = id("from", msg.from)?;
                let to = id("to", msg.to)?;
                let alpha = msg
                    .alpha
                    .ok_or_else(|| format!("mode {} needs \"alpha\"", msg.mode.name()))?;
                let inside = (0.0..=1.0).contains(&alpha);
                if !alpha.is_finite()
                    || (msg.mode == ModeMsg::Interpolate && !inside)
                    || alpha < 0.0
                {
                    return Err(format!(
                        "alpha {alpha} is out of range ({})",
                        if msg.mode == ModeMsg::Interpolate {
                            "0 to 1 when interpolating"
                        } else {
                            "0 or more"
                        }
                    ));
                }
                let mut pick = Pick::between_by(from, to, Factor::Value(alpha), target, depth);
                if msg.mode == ModeMsg::Extrapolate {
                    pick.mode = Mode::Extrapolate;
                }
                pick
            }
        };
        Ok((applied, pick))
    }
}

/// Inserts `send` into the sorted `sends`: at the end in one step for a packet in order.
fn insert_sorted(sends: &mut Vec<Nanos>, send: Nanos) {
    if sends.last().is_none_or(|&last| last <= send) {
        sends.push(send);
    } else {
        let at = sends.partition_point(|&s| s <= send);
        sends.insert(at, send);
    }
}

/// How many of the sorted `sends` are at or after `target`, searched from the end (where a
/// target usually is) in steps that double, then by bisection.
fn at_or_after(sends: &[Nanos], target: Nanos) -> usize {
    let n = sends.len();
    let mut step = 1;
    // sends[n - lo..] are all at or after the target.
    let mut lo = 0;
    while step <= n && sends[n - step] >= target {
        lo = step;
        step *= 2;
    }
    let hi = step.min(n);
    // The answer is in lo..=hi: bisect sends[n - hi..n - lo].
    lo + sends[n - hi..n - lo]
        .len()
        .saturating_sub(sends[n - hi..n - lo].partition_point(|&s| s < target))
}

impl Engine for ExecEngine {
    fn push(&mut self, _sample: &Sample, p: Packet, _at: Nanos) -> bool {
        p.repeat.unwrap_or(false)
    }

    fn frame(&mut self, _at: Nanos, now: Nanos) -> (Applied, Pick) {
        let Some(&answer) = self.answers.get(self.next) else {
            // Only without a script (an engine used outside the replay loop): nothing shown.
            self.current_newest = None;
            let applied = Applied {
                delay: Nanos::ZERO,
                target: now,
                frozen: false,
                scaled: false,
            };
            return (applied, Pick::empty(0));
        };
        self.current_newest = self.newest[self.next];
        self.next += 1;
        answer
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn newest_send(&self) -> Option<Nanos> {
        self.current_newest
    }

    fn needs_script(&self) -> bool {
        true
    }

    fn load_script(&mut self, samples: &[Sample], script: &Script) -> Result<(), Error> {
        self.answers.clear();
        self.newest.clear();
        self.next = 0;
        self.run(samples, script)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_depth_search_from_the_end_counts_as_bisection_does() {
        let mut sends = Vec::new();
        // A deterministic shuffle of mostly increasing times, with ties.
        let mut x: i64 = 17;
        for i in 0..300 {
            x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
            insert_sorted(&mut sends, Nanos(i * 10 - x % 40));
            assert!(sends.windows(2).all(|w| w[0] <= w[1]));
            for t in [-100, 0, i * 10 - 35, i * 10 - 5, i * 10, i * 10 + 1, 5_000] {
                let t = Nanos(t);
                let naive = sends.iter().filter(|&&s| s >= t).count();
                assert_eq!(at_or_after(&sends, t), naive, "target {t:?} over {sends:?}");
            }
        }
        assert_eq!(at_or_after(&[], Nanos(0)), 0);
    }
}

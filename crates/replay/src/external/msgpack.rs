//! The MessagePack framing of the external-policy protocol (`exec(format=msgpack)`,
//! `docs/external-policy.md`): each message is its length in bytes as 4 bytes, big-endian,
//! then that many bytes of MessagePack holding the same document as the JSON Lines framing
//! (maps with the same string keys, integers as integers, values as float 64, `nil` for a value
//! that is not finite). Batches are written with `rmp`'s encoders field by field (no serde on
//! the critical path); replies are read with `rmp-serde`.

use jitterlab_capture::decode::Lifecycle;
use rmp::encode;

use super::ScriptFrame;
use super::protocol::{Encoder, VERSION};

/// The length prefix: 4 bytes, big-endian.
pub(super) const PREFIX: usize = 4;

/// Drops the result of a write into a `Vec`, which cannot fail.
fn ok<T, E>(_: Result<T, E>) {}

fn key(out: &mut Vec<u8>, name: &str) {
    ok(encode::write_str(out, name));
}

fn int(out: &mut Vec<u8>, n: i64) {
    ok(encode::write_sint(out, n));
}

fn len(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Appends batch `batch` to `out`, its length prefix included; an error when the message
/// would not fit the 4-byte prefix.
pub(super) fn encode_batch(
    out: &mut Vec<u8>,
    e: &Encoder<'_>,
    batch: u64,
    frames: &[ScriptFrame],
    mut first_packet: usize,
) -> Result<(), String> {
    let Encoder {
        samples,
        script,
        origin,
        values,
    } = *e;
    let start = out.len();
    out.extend_from_slice(&[0; PREFIX]);
    ok(encode::write_map_len(out, 4));
    key(out, "v");
    int(out, i64::from(VERSION));
    key(out, "batch");
    ok(encode::write_uint(out, batch));
    key(out, "n");
    int(out, frames.len() as i64);
    key(out, "frames");
    ok(encode::write_array_len(out, len(frames.len())));
    for frame in frames {
        ok(encode::write_map_len(out, 3));
        key(out, "at");
        int(out, (frame.at - origin.local).as_nanos());
        key(out, "now");
        int(out, (frame.now - origin.send).as_nanos());
        key(out, "push");
        let pushed = &script.packets[first_packet..frame.pushed];
        ok(encode::write_array_len(out, len(pushed.len())));
        for &(p, arrival) in pushed {
            let s = &samples[p.idx as usize];
            let repeat = p.repeat == Some(true);
            let fields = 4
                + usize::from(values)
                + usize::from(repeat)
                + usize::from(s.state.is_some())
                + usize::from(s.event.is_some());
            ok(encode::write_map_len(out, len(fields)));
            key(out, "id");
            int(out, i64::from(p.idx));
            key(out, "seq");
            int(out, p.seq);
            key(out, "send");
            int(out, (p.send - origin.send).as_nanos());
            key(out, "arrival");
            int(out, (arrival - origin.local).as_nanos());
            if values {
                key(out, "values");
                ok(encode::write_array_len(out, len(s.values.len())));
                for &v in s.values.iter() {
                    if v.is_finite() {
                        ok(encode::write_f64(out, v));
                    } else {
                        ok(encode::write_nil(out));
                    }
                }
            }
            if repeat {
                key(out, "repeat");
                ok(encode::write_bool(out, true));
            }
            if let Some(state) = s.state {
                key(out, "state");
                int(out, i64::from(state));
            }
            if let Some(event) = s.event {
                key(out, "event");
                key(
                    out,
                    match event {
                        Lifecycle::Spawn => "spawn",
                        Lifecycle::Teleport => "teleport",
                        Lifecycle::Despawn => "despawn",
                    },
                );
            }
        }
        first_packet = frame.pushed;
    }
    let body = out.len() - start - PREFIX;
    let n = u32::try_from(body).map_err(|_| {
        format!("batch {batch} is {body} bytes, more than MessagePack framing's 4 GiB (use a smaller batch=)")
    })?;
    out[start..start + PREFIX].copy_from_slice(&n.to_be_bytes());
    Ok(())
}

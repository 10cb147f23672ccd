//! The JSON Lines framing of the external-policy protocol: each batch one line of JSON
//! (`docs/external-policy.md`). Written by hand with itoa and ryu rather than through serde or
//! `write!`: the encoder is on the benchmark's critical path (`bench/exec.sh`), and `fmt` is
//! several times slower for numbers.

use jitterlab_capture::decode::Lifecycle;

use super::ScriptFrame;
use super::protocol::{Encoder, VERSION};

/// Appends batch `batch` to `out` as one line, its newline included.
pub(super) fn encode_batch(
    out: &mut Vec<u8>,
    e: &Encoder<'_>,
    batch: u64,
    frames: &[ScriptFrame],
    mut first_packet: usize,
) {
    let Encoder {
        samples,
        script,
        origin,
        values,
    } = *e;
    let mut int = itoa::Buffer::new();
    let mut float = ryu::Buffer::new();
    let mut num = |out: &mut Vec<u8>, n: i64| out.extend_from_slice(int.format(n).as_bytes());
    out.extend_from_slice(b"{\"v\":");
    num(out, i64::from(VERSION));
    out.extend_from_slice(b",\"batch\":");
    num(out, i64::try_from(batch).unwrap_or(i64::MAX));
    out.extend_from_slice(b",\"n\":");
    num(out, frames.len() as i64);
    out.extend_from_slice(b",\"frames\":[");
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"at\":");
        num(out, (frame.at - origin.local).as_nanos());
        out.extend_from_slice(b",\"now\":");
        num(out, (frame.now - origin.send).as_nanos());
        out.extend_from_slice(b",\"push\":[");
        for (j, &(p, arrival)) in script.packets[first_packet..frame.pushed]
            .iter()
            .enumerate()
        {
            if j > 0 {
                out.push(b',');
            }
            let s = &samples[p.idx as usize];
            out.extend_from_slice(b"{\"id\":");
            num(out, i64::from(p.idx));
            out.extend_from_slice(b",\"seq\":");
            num(out, p.seq);
            out.extend_from_slice(b",\"send\":");
            num(out, (p.send - origin.send).as_nanos());
            out.extend_from_slice(b",\"arrival\":");
            num(out, (arrival - origin.local).as_nanos());
            if values {
                out.extend_from_slice(b",\"values\":[");
                for (k, v) in s.values.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    if v.is_finite() {
                        out.extend_from_slice(float.format_finite(*v).as_bytes());
                    } else {
                        out.extend_from_slice(b"null");
                    }
                }
                out.push(b']');
            }
            if p.repeat == Some(true) {
                out.extend_from_slice(b",\"repeat\":true");
            }
            if let Some(state) = s.state {
                out.extend_from_slice(b",\"state\":");
                num(out, i64::from(state));
            }
            if let Some(event) = s.event {
                let text: &[u8] = match event {
                    Lifecycle::Spawn => b",\"event\":\"spawn\"",
                    Lifecycle::Teleport => b",\"event\":\"teleport\"",
                    Lifecycle::Despawn => b",\"event\":\"despawn\"",
                };
                out.extend_from_slice(text);
            }
            out.push(b'}');
        }
        first_packet = frame.pushed;
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"]}\n");
}

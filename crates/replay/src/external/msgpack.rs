//! The MessagePack framing of the external-policy protocol (`exec(format=msgpack)`,
//! `docs/external-policy.md`): each message is its length in bytes as 4 bytes, big-endian,
//! then that many bytes of MessagePack holding the same document as the JSON Lines framing
//! (maps with the same string keys, integers as integers, values as float 64, `nil` for a value
//! that is not finite). Batches are written field by field (integers, keys and floats by hand,
//! the rest with `rmp`'s encoders), and replies
//! read marker by marker ([`super::msgpack_reply`]): no serde on the critical path.

use jitterlab_capture::decode::Lifecycle;
use rmp::encode;

use super::ScriptFrame;
use super::protocol::{Encoder, VERSION};

/// The length prefix: 4 bytes, big-endian.
pub(super) const PREFIX: usize = 4;

/// Drops the result of a write into a `Vec`, which cannot fail.
fn ok<T, E>(_: Result<T, E>) {}

/// A key (or a short string): a fixstr, its marker and bytes in one go.
fn key(out: &mut Vec<u8>, name: &str) {
    debug_assert!(name.len() < 32);
    out.push(0xa0 | name.len() as u8);
    out.extend_from_slice(name.as_bytes());
}

/// An integer in the fewest bytes MessagePack allows for its sign (by hand: `rmp`'s
/// `write_sint` goes through `io::Write` for every byte, and integers are most of a batch).
fn int(out: &mut Vec<u8>, n: i64) {
    if (0..128).contains(&n) {
        out.push(n as u8);
    } else if (-32..0).contains(&n) {
        out.push(n as i8 as u8);
    } else if let Ok(v) = u16::try_from(n) {
        out.push(0xcd);
        out.extend_from_slice(&v.to_be_bytes());
    } else if let Ok(v) = u32::try_from(n) {
        out.push(0xce);
        out.extend_from_slice(&v.to_be_bytes());
    } else if let Ok(v) = i32::try_from(n) {
        out.push(0xd2);
        out.extend_from_slice(&v.to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
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
                        out.push(0xcb);
                        out.extend_from_slice(&v.to_bits().to_be_bytes());
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

#[cfg(test)]
mod tests {
    use jitterlab_capture::Nanos;
    use jitterlab_capture::decode::{Lifecycle, Sample};

    use super::super::protocol::{Encoder, Format, Origin, decode_reply};
    use super::super::{Script, ScriptFrame};
    use crate::buffer::Packet;

    fn packet(idx: u32, seq: i64, send_ms: i64, repeat: bool) -> Packet {
        Packet {
            send: Nanos::from_millis(send_ms),
            seq,
            idx,
            cuts_before: false,
            cuts_after: false,
            repeat: repeat.then_some(true),
        }
    }

    /// Samples with all the optional fields (state, event, a value that is not finite, a
    /// repeat, a negative time and a large one), and a script over them.
    fn fixture() -> (Vec<Sample>, Script) {
        let mut samples: Vec<Sample> = (0..5)
            .map(|i| {
                Sample::new(
                    0,
                    i,
                    Nanos::from_millis(i * 50),
                    Nanos::from_millis(i * 50 + 7),
                )
                .with_values(vec![i as f64 * 0.1, -1.5e300, 3.0])
            })
            .collect();
        samples[1].state = Some(4);
        samples[2].event = Some(Lifecycle::Teleport);
        samples[3].values[1] = f64::NAN;
        samples[4].values.clear();
        let script = Script {
            packets: vec![
                (packet(0, 0, 0, false), Nanos::from_millis(7)),
                (packet(2, 2, 100, false), Nanos::from_millis(107)),
                (packet(1, 1, 50, false), Nanos::from_millis(108)),
                (packet(1, 1, 50, true), Nanos::from_millis(109)),
                (packet(3, 3, 150, false), Nanos::from_millis(157)),
                (packet(4, 4, 200, false), Nanos::from_secs_f64(9e4)),
            ],
            frames: vec![
                ScriptFrame {
                    at: Nanos::from_millis(5),
                    now: Nanos::from_millis(-3),
                    pushed: 0,
                },
                ScriptFrame {
                    at: Nanos::from_millis(110),
                    now: Nanos::from_millis(100),
                    pushed: 4,
                },
                ScriptFrame {
                    at: Nanos::from_secs_f64(9e4),
                    now: Nanos::from_secs_f64(9e4),
                    pushed: 6,
                },
            ],
        };
        (samples, script)
    }

    /// One batch in `format`, read back as a document (framing removed).
    fn document(format: Format, values: bool) -> serde_json::Value {
        let (samples, script) = fixture();
        let e = Encoder {
            samples: &samples,
            script: &script,
            origin: Origin::of(&script),
            values,
        };
        let mut out = vec![1, 2, 3];
        e.batch(format, &mut out, 7, &script.frames, 0).unwrap();
        match format {
            Format::Json => {
                assert_eq!(out.last(), Some(&b'\n'));
                serde_json::from_slice(&out).unwrap()
            }
            Format::Msgpack => {
                let n = u32::from_be_bytes(out[..4].try_into().unwrap()) as usize;
                assert_eq!(n, out.len() - 4, "the prefix is the message's length");
                rmp_serde::from_slice(&out[4..]).unwrap()
            }
        }
    }

    #[test]
    fn messagepack_carries_the_json_document_key_for_key() {
        for values in [true, false] {
            let json = document(Format::Json, values);
            let mp = document(Format::Msgpack, values);
            assert_eq!(mp, json, "values={values}");
            // The fixture's optional fields are all there.
            let text = json.to_string();
            for needle in [
                "\"repeat\":true",
                "\"state\":4",
                "\"event\":\"teleport\"",
                "\"v\":2",
                "\"batch\":7",
            ] {
                assert!(text.contains(needle), "{needle} in {text}");
            }
            assert_eq!(text.contains("null"), values, "{text}");
        }
    }

    #[test]
    fn integers_read_back_at_every_width_boundary() {
        let mut ns = vec![
            0, 1, 127, 128, 255, 256, 65_535, 65_536, -1, -32, -33, -128, -129,
        ];
        ns.extend([
            i64::from(u32::MAX),
            i64::from(u32::MAX) + 1,
            i64::from(i32::MIN),
        ]);
        ns.extend([i64::from(i32::MIN) - 1, i64::MAX, i64::MIN]);
        for n in ns {
            let mut out = Vec::new();
            super::int(&mut out, n);
            let mut rd = &out[..];
            assert_eq!(rmp::decode::read_int::<i64, _>(&mut rd).unwrap(), n);
            assert!(rd.is_empty(), "{n}: {out:02x?}");
            let fewest = if (-32..128).contains(&n) { 1 } else { 3 };
            assert!(out.len() >= fewest && out.len() <= 9, "{n}: {out:02x?}");
        }
    }

    #[test]
    fn messagepack_values_are_float64_bit_for_bit() {
        let mp = document(Format::Msgpack, true);
        let v = &mp["frames"][1]["push"][0]["values"];
        assert_eq!(v[1].as_f64(), Some(-1.5e300));
        assert_eq!(v[0].as_f64().map(f64::to_bits), Some(0.0f64.to_bits()));
    }

    #[test]
    fn replies_decode_alike_in_both_framings() {
        let json = br#"{"batch":3,"picks":[{"mode":"interpolate","from":1,"to":2,"alpha":0.25,"delay":5,"frozen":true,"extra":[1,{"x":null}]},{"mode":"hold","from":0,"delay":0,"hold":"gap","depth":2}],"counters":{"inserted":4}}"#;
        let doc: serde_json::Value = serde_json::from_slice(json).unwrap();
        let mp = rmp_serde::to_vec_named(&doc).unwrap();
        let a = decode_reply(Format::Json, json).unwrap();
        let b = decode_reply(Format::Msgpack, &mp).unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_eq!(b.batch, 3);
        assert_eq!(b.picks[0].alpha, Some(0.25));
        assert!(b.picks[0].frozen);
        assert_eq!(b.picks[1].depth, Some(2));
        assert_eq!(b.counters.map(|c| c.inserted), Some(4));
        // An integer alpha, as a child may write 0 or 1.
        let one = rmp_serde::to_vec_named(&serde_json::json!({"batch":0,"picks":[{"mode":"interpolate","from":0,"to":1,"alpha":1,"delay":0}]})).unwrap();
        assert_eq!(
            decode_reply(Format::Msgpack, &one).unwrap().picks[0].alpha,
            Some(1.0)
        );
        assert!(decode_reply(Format::Msgpack, b"\x93\x01\x02\x03").is_err());
        assert!(decode_reply(Format::Msgpack, json).is_err());
    }

    #[test]
    fn the_hello_is_one_json_line_naming_the_format() {
        for (format, values) in [(Format::Json, true), (Format::Msgpack, false)] {
            let hello = super::super::protocol::hello(format, values);
            assert_eq!(hello.iter().filter(|&&b| b == b'\n').count(), 1);
            let doc: serde_json::Value = serde_json::from_slice(&hello).unwrap();
            assert_eq!(
                doc,
                serde_json::json!({"protocol": "jitterlab-exec", "v": 2, "format": format.name(), "values": values})
            );
        }
    }
}

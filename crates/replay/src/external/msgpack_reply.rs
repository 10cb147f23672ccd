//! Reading a MessagePack reply (`docs/external-policy.md`) by hand, marker by marker with
//! `rmp`'s [`Marker`]: rmp-serde's generic path was half of what jitterlab spent on an external
//! policy's replies (`bench/exec.sh`). It reads what rmp-serde would read into the same
//! [`Reply`]: any integer width, float 32 or 64 (or an integer) for `alpha`, `nil` for an
//! absent optional field, unknown keys skipped whatever they hold.

use rmp::Marker;

use super::protocol::{CountersMsg, HoldMsg, ModeMsg, PickMsg, Reply};

/// How deep an unknown value may nest before the reply is refused (no stack overflow).
const MAX_DEPTH: usize = 64;

/// A cursor over one message.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

type Res<T> = Result<T, String>;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Res<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| format!("the message ends inside a value (at byte {})", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn be<const N: usize>(&mut self) -> Res<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn marker(&mut self) -> Res<Marker> {
        Ok(Marker::from_u8(self.be::<1>()?[0]))
    }

    fn peek_nil(&mut self) -> bool {
        if self.bytes.get(self.at) == Some(&0xc0) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn len(&mut self, m: Marker) -> Res<Option<usize>> {
        Ok(Some(match m {
            Marker::U8 | Marker::Str8 | Marker::Bin8 => usize::from(self.be::<1>()?[0]),
            Marker::Str16 | Marker::Bin16 | Marker::Array16 | Marker::Map16 => {
                usize::from(u16::from_be_bytes(self.be()?))
            }
            Marker::Str32 | Marker::Bin32 | Marker::Array32 | Marker::Map32 => {
                u32::from_be_bytes(self.be()?) as usize
            }
            _ => return Ok(None),
        }))
    }

    fn int(&mut self, what: &str) -> Res<i64> {
        let m = self.marker()?;
        let n = match m {
            Marker::FixPos(v) => i64::from(v),
            Marker::FixNeg(v) => i64::from(v),
            Marker::U8 => i64::from(self.be::<1>()?[0]),
            Marker::U16 => i64::from(u16::from_be_bytes(self.be()?)),
            Marker::U32 => i64::from(u32::from_be_bytes(self.be()?)),
            Marker::U64 => i64::try_from(u64::from_be_bytes(self.be()?))
                .map_err(|_| format!("{what} is out of range"))?,
            Marker::I8 => i64::from(i8::from_be_bytes(self.be()?)),
            Marker::I16 => i64::from(i16::from_be_bytes(self.be()?)),
            Marker::I32 => i64::from(i32::from_be_bytes(self.be()?)),
            Marker::I64 => i64::from_be_bytes(self.be()?),
            other => return Err(format!("{what} is {}, not an integer", kind(other))),
        };
        Ok(n)
    }

    fn unsigned<T: TryFrom<i64>>(&mut self, what: &str) -> Res<T> {
        let n = self.int(what)?;
        T::try_from(n).map_err(|_| format!("{what} {n} is out of range"))
    }

    fn float(&mut self, what: &str) -> Res<f64> {
        match Marker::from_u8(*self.bytes.get(self.at).unwrap_or(&0xc1)) {
            Marker::F32 => {
                self.at += 1;
                Ok(f64::from(f32::from_be_bytes(self.be()?)))
            }
            Marker::F64 => {
                self.at += 1;
                Ok(f64::from_be_bytes(self.be()?))
            }
            // An integer, as a child may write 0 or 1 (i64 to f64: exact for such values).
            _ => self.int(what).map(|n| n as f64),
        }
    }

    fn bool(&mut self, what: &str) -> Res<bool> {
        match self.marker()? {
            Marker::True => Ok(true),
            Marker::False | Marker::Null => Ok(false),
            other => Err(format!("{what} is {}, not a boolean", kind(other))),
        }
    }

    fn str(&mut self, what: &str) -> Res<&'a [u8]> {
        let m = self.marker()?;
        let n = match m {
            Marker::FixStr(n) => usize::from(n),
            Marker::Str8 | Marker::Str16 | Marker::Str32 => self.len(m)?.unwrap_or(0),
            other => return Err(format!("{what} is {}, not a string", kind(other))),
        };
        self.take(n)
    }

    fn map(&mut self, what: &str) -> Res<usize> {
        let m = self.marker()?;
        match m {
            Marker::FixMap(n) => Ok(usize::from(n)),
            Marker::Map16 | Marker::Map32 => Ok(self.len(m)?.unwrap_or(0)),
            other => Err(format!("{what} is {}, not a map", kind(other))),
        }
    }

    fn array(&mut self, what: &str) -> Res<usize> {
        let m = self.marker()?;
        match m {
            Marker::FixArray(n) => Ok(usize::from(n)),
            Marker::Array16 | Marker::Array32 => Ok(self.len(m)?.unwrap_or(0)),
            other => Err(format!("{what} is {}, not an array", kind(other))),
        }
    }

    /// Skips one value of any kind.
    fn skip(&mut self, depth: usize) -> Res<()> {
        if depth > MAX_DEPTH {
            return Err(format!("values nest deeper than {MAX_DEPTH}"));
        }
        let m = self.marker()?;
        let (bytes, items) = match m {
            Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True | Marker::False => {
                (0, 0)
            }
            Marker::Reserved => return Err("marker 0xc1 is reserved".into()),
            Marker::U8 | Marker::I8 => (1, 0),
            Marker::U16 | Marker::I16 => (2, 0),
            Marker::U32 | Marker::I32 | Marker::F32 => (4, 0),
            Marker::U64 | Marker::I64 | Marker::F64 => (8, 0),
            Marker::FixStr(n) => (usize::from(n), 0),
            Marker::Str8 | Marker::Str16 | Marker::Str32 | Marker::Bin8 | Marker::Bin16 => {
                (self.len(m)?.unwrap_or(0), 0)
            }
            Marker::Bin32 => (self.len(m)?.unwrap_or(0), 0),
            Marker::FixArray(n) => (0, usize::from(n)),
            Marker::FixMap(n) => (0, 2 * usize::from(n)),
            Marker::Array16 | Marker::Array32 => (0, self.len(m)?.unwrap_or(0)),
            Marker::Map16 | Marker::Map32 => (0, 2 * self.len(m)?.unwrap_or(0)),
            Marker::FixExt1 => (2, 0),
            Marker::FixExt2 => (3, 0),
            Marker::FixExt4 => (5, 0),
            Marker::FixExt8 => (9, 0),
            Marker::FixExt16 => (17, 0),
            Marker::Ext8 => (usize::from(self.be::<1>()?[0]) + 1, 0),
            Marker::Ext16 => (usize::from(u16::from_be_bytes(self.be()?)) + 1, 0),
            Marker::Ext32 => (u32::from_be_bytes(self.be()?) as usize + 1, 0),
        };
        self.take(bytes)?;
        for _ in 0..items {
            self.skip(depth + 1)?;
        }
        Ok(())
    }

    fn optional<T>(&mut self, read: impl FnOnce(&mut Self) -> Res<T>) -> Res<Option<T>> {
        if self.peek_nil() {
            Ok(None)
        } else {
            read(self).map(Some)
        }
    }
}

fn kind(m: Marker) -> &'static str {
    match m {
        Marker::FixPos(_)
        | Marker::FixNeg(_)
        | Marker::U8
        | Marker::U16
        | Marker::U32
        | Marker::U64
        | Marker::I8
        | Marker::I16
        | Marker::I32
        | Marker::I64 => "an integer",
        Marker::F32 | Marker::F64 => "a float",
        Marker::Null => "nil",
        Marker::True | Marker::False => "a boolean",
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => "a string",
        Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => "binary",
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "an array",
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
        Marker::Reserved => "the reserved marker 0xc1",
        _ => "an extension",
    }
}

fn shown(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

fn pick(r: &mut Reader<'_>) -> Res<PickMsg> {
    let mut mode = None;
    let mut delay = None;
    let mut msg = PickMsg {
        mode: ModeMsg::Empty,
        delay: 0,
        from: None,
        to: None,
        alpha: None,
        hold: None,
        depth: None,
        frozen: false,
        scaled: false,
    };
    for _ in 0..r.map("a pick")? {
        match r.str("a key")? {
            b"mode" => {
                mode = Some(match r.str("mode")? {
                    b"interpolate" => ModeMsg::Interpolate,
                    b"hold" => ModeMsg::Hold,
                    b"extrapolate" => ModeMsg::Extrapolate,
                    b"empty" => ModeMsg::Empty,
                    other => {
                        return Err(format!(
                            "unknown variant `{}`, expected one of `interpolate`, `hold`, `extrapolate`, `empty`",
                            shown(other)
                        ));
                    }
                });
            }
            b"delay" => delay = Some(r.int("delay")?),
            b"from" => msg.from = r.optional(|r| r.unsigned("from"))?,
            b"to" => msg.to = r.optional(|r| r.unsigned("to"))?,
            b"alpha" => msg.alpha = r.optional(|r| r.float("alpha"))?,
            b"hold" => {
                msg.hold = r.optional(|r| match r.str("hold")? {
                    b"gap" => Ok(HoldMsg::Gap),
                    b"after_newest" => Ok(HoldMsg::AfterNewest),
                    b"before_oldest" => Ok(HoldMsg::BeforeOldest),
                    other => Err(format!(
                        "unknown variant `{}`, expected one of `gap`, `after_newest`, `before_oldest`",
                        shown(other)
                    )),
                })?;
            }
            b"depth" => msg.depth = r.optional(|r| r.unsigned("depth"))?,
            b"frozen" => msg.frozen = r.bool("frozen")?,
            b"scaled" => msg.scaled = r.bool("scaled")?,
            _ => r.skip(0)?,
        }
    }
    msg.mode = mode.ok_or("missing field `mode`")?;
    msg.delay = delay.ok_or("missing field `delay`")?;
    Ok(msg)
}

fn counters(r: &mut Reader<'_>) -> Res<CountersMsg> {
    let mut c = CountersMsg::default();
    for _ in 0..r.map("counters")? {
        let key = r.str("a key")?;
        let slot = match key {
            b"inserted" => &mut c.inserted,
            b"duplicates" => &mut c.duplicates,
            b"late" => &mut c.late,
            b"stale" => &mut c.stale,
            b"evicted" => &mut c.evicted,
            b"refused" => &mut c.refused,
            _ => {
                r.skip(0)?;
                continue;
            }
        };
        *slot = r.unsigned(&shown(key))?;
    }
    Ok(c)
}

/// One reply, from a whole message; the error says where it is not one.
pub(super) fn decode(bytes: &[u8]) -> Res<Reply> {
    let mut r = Reader { bytes, at: 0 };
    let mut batch = None;
    let mut picks = None;
    let mut counters_msg = None;
    for _ in 0..r.map("the reply")? {
        match r.str("a key")? {
            b"batch" => batch = Some(r.unsigned("batch")?),
            b"picks" => {
                let n = r.array("picks")?;
                // Not more than the message could hold (a pick is at least 2 bytes).
                let mut v = Vec::with_capacity(n.min(bytes.len() / 2));
                for i in 0..n {
                    v.push(pick(&mut r).map_err(|e| format!("pick {i}: {e}"))?);
                }
                picks = Some(v);
            }
            b"counters" => counters_msg = r.optional(counters)?,
            _ => r.skip(0)?,
        }
    }
    if r.at != bytes.len() {
        return Err(format!("{} bytes after the reply", bytes.len() - r.at));
    }
    Ok(Reply {
        batch: batch.ok_or("missing field `batch`")?,
        picks: picks.ok_or("missing field `picks`")?,
        counters: counters_msg,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::decode;
    use crate::external::protocol::Reply;

    /// The hand reader and rmp-serde read `bytes` alike (both succeed with the same reply, or
    /// both fail).
    fn alike(bytes: &[u8]) -> Option<Reply> {
        let ours = decode(bytes);
        let serde: Result<Reply, _> = rmp_serde::from_slice(bytes);
        match (&ours, &serde) {
            (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
            (Err(_), Err(_)) => {}
            _ => panic!("{bytes:02x?}: ours {ours:?}, rmp-serde {serde:?}"),
        }
        ours.ok()
    }

    #[test]
    fn reads_what_rmp_serde_reads() {
        let docs = [
            json!({"batch": 0, "picks": []}),
            json!({"batch": 70000, "picks": [{"mode": "empty", "delay": 0}], "counters": null}),
            json!({"batch": 1, "picks": [
                {"mode": "interpolate", "from": 300, "to": 70000, "alpha": 0.125, "delay": 5_000_000_000i64},
                {"mode": "extrapolate", "from": 1, "to": 2, "alpha": 1, "delay": 3, "depth": 4, "scaled": true},
                {"mode": "hold", "from": 0, "delay": 0, "hold": "after_newest", "frozen": false, "x": [1, {"y": "z"}]},
                {"mode": "hold", "from": 0, "delay": 0, "hold": null, "to": null, "alpha": null}],
                "counters": {"inserted": 5, "duplicates": 1, "late": 0, "stale": 2, "evicted": 3, "refused": 4, "other": -1},
                "note": "unknown keys are skipped"}),
            // What fails for both: a negative batch, a missing delay, an unknown mode.
            json!({"batch": -1, "picks": []}),
            json!({"batch": 0, "picks": [{"mode": "empty"}]}),
            json!({"batch": 0, "picks": [{"mode": "wait", "delay": 0}]}),
            json!({"picks": []}),
        ];
        let mut read = 0;
        for doc in &docs {
            let bytes = rmp_serde::to_vec_named(doc).unwrap();
            read += usize::from(alike(&bytes).is_some());
        }
        assert_eq!(read, 3);
    }

    #[test]
    fn any_integer_width_and_float_32_are_read() {
        use rmp::encode as mp;
        let mut b = Vec::new();
        mp::write_map_len(&mut b, 2).unwrap();
        mp::write_str(&mut b, "batch").unwrap();
        mp::write_u64(&mut b, 9).unwrap();
        mp::write_str(&mut b, "picks").unwrap();
        mp::write_array_len(&mut b, 1).unwrap();
        mp::write_map_len(&mut b, 6).unwrap();
        mp::write_str(&mut b, "mode").unwrap();
        mp::write_str(&mut b, "interpolate").unwrap();
        mp::write_str(&mut b, "from").unwrap();
        mp::write_i64(&mut b, 2).unwrap();
        mp::write_str(&mut b, "to").unwrap();
        mp::write_u16(&mut b, 3).unwrap();
        mp::write_str(&mut b, "alpha").unwrap();
        mp::write_f32(&mut b, 0.5).unwrap();
        mp::write_str(&mut b, "delay").unwrap();
        mp::write_i32(&mut b, 1000).unwrap();
        // An unknown key holding binary and an extension.
        mp::write_str(&mut b, "blob").unwrap();
        mp::write_array_len(&mut b, 2).unwrap();
        mp::write_bin(&mut b, &[1, 2, 3]).unwrap();
        mp::write_ext_meta(&mut b, 4, 7).unwrap();
        b.extend_from_slice(&[0; 4]);
        let reply = alike(&b).unwrap();
        assert_eq!(reply.batch, 9);
        let p = &reply.picks[0];
        assert_eq!(
            (p.from, p.to, p.alpha, p.delay),
            (Some(2), Some(3), Some(0.5), 1000)
        );
    }

    #[test]
    fn broken_messages_are_refused_with_a_reason() {
        let good =
            rmp_serde::to_vec_named(&json!({"batch": 0, "picks": [{"mode": "empty", "delay": 0}]}))
                .unwrap();
        // Cut anywhere: refused, never a panic.
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(decode(&longer).unwrap_err(), "1 bytes after the reply");
        // A value nested far deeper than a reply needs.
        let mut deep = vec![0x81, 0xa1, b'x'];
        deep.extend(std::iter::repeat_n(0x91, 1000));
        deep.push(0);
        let mut bomb = vec![0x83];
        bomb.extend_from_slice(&good[1..]);
        bomb.extend_from_slice(&deep[1..]);
        assert!(decode(&bomb).unwrap_err().contains("nest deeper"));
        // An array that claims more picks than the message holds.
        let huge = [
            0x81, 0xa5, b'p', b'i', b'c', b'k', b's', 0xdd, 0xff, 0xff, 0xff, 0xff,
        ];
        assert!(decode(&huge).is_err());
        assert!(decode(b"{\"batch\":0}").unwrap_err().contains("not a map"));
    }
}

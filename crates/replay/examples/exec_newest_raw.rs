//! The trivial external policy of `exec_newest.rs` (holds the newest packet by send time, no
//! delay), over MessagePack only, its batches read by hand with `rmp::decode` rather than
//! through serde: what a child costs when its parsing is fast (`bench/exec.sh`,
//! BENCHMARKS.md). It reads `id` and `send` of every push and skips every other value.
//!
//! ```sh
//! cargo build --release -p jitterlab-replay --example exec_newest_raw
//! jitterlab replay trace.jtr --policy 'exec(format=msgpack):target/release/examples/exec_newest_raw'
//! ```

use std::io::{self, BufRead, Read, Write};

use rmp::Marker;
use rmp::decode as de;
use rmp::encode as mp;

fn bad(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// A cursor over one batch.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(bad("the batch ends inside a value"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn map(&mut self) -> io::Result<u32> {
        de::read_map_len(&mut self.0).map_err(bad)
    }

    fn array(&mut self) -> io::Result<u32> {
        de::read_array_len(&mut self.0).map_err(bad)
    }

    fn key(&mut self) -> io::Result<&'a [u8]> {
        let n = de::read_str_len(&mut self.0).map_err(bad)?;
        self.take(n as usize)
    }

    fn int(&mut self) -> io::Result<i64> {
        de::read_int(&mut self.0).map_err(bad)
    }

    /// Skips one value (the trivial buffer reads only `id` and `send`).
    fn skip(&mut self) -> io::Result<()> {
        let marker = de::read_marker(&mut self.0).map_err(|_| bad("no marker"))?;
        let be = |b: &[u8]| b.iter().fold(0usize, |n, &x| n << 8 | usize::from(x));
        let (bytes, items) = match marker {
            Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True | Marker::False => {
                (0, 0)
            }
            Marker::U8 | Marker::I8 => (1, 0),
            Marker::U16 | Marker::I16 => (2, 0),
            Marker::U32 | Marker::I32 | Marker::F32 => (4, 0),
            Marker::U64 | Marker::I64 | Marker::F64 => (8, 0),
            Marker::FixStr(n) => (usize::from(n), 0),
            Marker::Str8 | Marker::Bin8 => (be(self.take(1)?), 0),
            Marker::Str16 | Marker::Bin16 => (be(self.take(2)?), 0),
            Marker::Str32 | Marker::Bin32 => (be(self.take(4)?), 0),
            Marker::FixArray(n) => (0, usize::from(n)),
            Marker::Array16 => (0, be(self.take(2)?)),
            Marker::Array32 => (0, be(self.take(4)?)),
            Marker::FixMap(n) => (0, 2 * usize::from(n)),
            Marker::Map16 => (0, 2 * be(self.take(2)?)),
            Marker::Map32 => (0, 2 * be(self.take(4)?)),
            other => return Err(bad(format!("unexpected {other:?} in a batch"))),
        };
        self.take(bytes)?;
        for _ in 0..items {
            self.skip()?;
        }
        Ok(())
    }
}

/// Drops the result of a write into a `Vec`, which cannot fail.
fn ok<T, E>(_: Result<T, E>) {}

/// Reads one batch and writes its reply into `reply` (length prefix included).
fn answer(message: &[u8], newest: &mut Option<(i64, u32)>, reply: &mut Vec<u8>) -> io::Result<()> {
    let mut r = Reader(message);
    let mut batch = 0;
    reply.clear();
    reply.extend_from_slice(&[0; 4]);
    for _ in 0..r.map()? {
        match r.key()? {
            b"batch" => batch = r.int()?,
            b"frames" => {
                let frames = r.array()?;
                ok(mp::write_map_len(reply, 2));
                ok(mp::write_str(reply, "picks"));
                ok(mp::write_array_len(reply, frames));
                for _ in 0..frames {
                    for _ in 0..r.map()? {
                        if r.key()? != b"push" {
                            r.skip()?;
                            continue;
                        }
                        for _ in 0..r.array()? {
                            let (mut id, mut send) = (None, None);
                            for _ in 0..r.map()? {
                                match r.key()? {
                                    b"id" => id = Some(r.int()?),
                                    b"send" => send = Some(r.int()?),
                                    _ => r.skip()?,
                                }
                            }
                            let (Some(id), Some(send)) = (id, send) else {
                                return Err(bad("a push without id or send"));
                            };
                            if newest.is_none_or(|(s, _)| send > s) {
                                *newest = Some((send, u32::try_from(id).map_err(bad)?));
                            }
                        }
                    }
                    match *newest {
                        Some((_, id)) => {
                            ok(mp::write_map_len(reply, 3));
                            ok(mp::write_str(reply, "mode"));
                            ok(mp::write_str(reply, "hold"));
                            ok(mp::write_str(reply, "from"));
                            ok(mp::write_uint(reply, u64::from(id)));
                        }
                        None => {
                            ok(mp::write_map_len(reply, 2));
                            ok(mp::write_str(reply, "mode"));
                            ok(mp::write_str(reply, "empty"));
                        }
                    }
                    ok(mp::write_str(reply, "delay"));
                    ok(mp::write_uint(reply, 0));
                }
            }
            _ => r.skip()?,
        }
    }
    // The batch number is the last entry of the reply's map (after the picks).
    ok(mp::write_str(reply, "batch"));
    ok(mp::write_sint(reply, batch));
    let n = u32::try_from(reply.len() - 4).map_err(bad)?;
    reply[..4].copy_from_slice(&n.to_be_bytes());
    Ok(())
}

fn main() -> io::Result<()> {
    let mut input = io::BufReader::with_capacity(1 << 16, io::stdin().lock());
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut hello = String::new();
    input.read_line(&mut hello)?;
    if !hello.contains("\"format\":\"msgpack\"") {
        return Err(bad(
            "this child speaks MessagePack: run it with exec(format=msgpack)",
        ));
    }
    let (mut message, mut reply) = (Vec::new(), Vec::new());
    let mut newest = None;
    loop {
        let mut head = [0u8; 4];
        match input.read_exact(&mut head) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            r => r?,
        }
        message.resize(u32::from_be_bytes(head) as usize, 0);
        input.read_exact(&mut message)?;
        answer(&message, &mut newest, &mut reply)?;
        out.write_all(&reply)?;
        out.flush()?;
    }
}

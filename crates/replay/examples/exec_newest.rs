//! A trivial external policy in Rust (`docs/external-policy.md`): holds the newest packet by
//! send time, with no delay. It reads the hello, then parses every packet of every batch in
//! the framing the hello names: JSON Lines (serde_json) or length-prefixed MessagePack
//! (rmp-serde). The exec benchmark runs it (`bench/exec.sh`):
//!
//! ```sh
//! cargo build --release -p jitterlab-replay --example exec_newest
//! jitterlab replay trace.jtr --policy exec:target/release/examples/exec_newest
//! jitterlab replay trace.jtr --policy 'exec(format=msgpack):target/release/examples/exec_newest'
//! ```

use std::io::{self, BufRead, Write};

use serde::Deserialize;

/// jitterlab's first message, always one JSON line.
#[derive(Deserialize)]
struct Hello {
    protocol: String,
    format: String,
}

#[derive(Deserialize)]
struct Batch {
    batch: u64,
    frames: Vec<Frame>,
}

#[derive(Deserialize)]
struct Frame {
    push: Vec<Push>,
}

/// The fields this policy reads; serde skips the others (values, seq, arrival…).
#[derive(Deserialize)]
struct Push {
    id: u32,
    send: i64,
}

/// The buffer: the newest packet by send time.
#[derive(Default)]
struct Newest(Option<(i64, u32)>);

impl Newest {
    /// One pick per frame of `batch`: the held packet's id, if any.
    fn picks<'a>(&'a mut self, batch: &'a Batch) -> impl Iterator<Item = Option<u32>> + 'a {
        batch.frames.iter().map(move |frame| {
            for p in &frame.push {
                if self.0.is_none_or(|(send, _)| p.send > send) {
                    self.0 = Some((p.send, p.id));
                }
            }
            self.0.map(|(_, id)| id)
        })
    }
}

fn bad(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

fn json(mut input: impl BufRead, mut out: impl Write) -> io::Result<()> {
    let mut newest = Newest::default();
    let (mut line, mut reply) = (Vec::new(), Vec::new());
    let mut int = itoa::Buffer::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let batch: Batch = serde_json::from_slice(&line).map_err(bad)?;
        reply.clear();
        reply.extend_from_slice(b"{\"batch\":");
        reply.extend_from_slice(int.format(batch.batch).as_bytes());
        reply.extend_from_slice(b",\"picks\":[");
        for (i, pick) in newest.picks(&batch).enumerate() {
            if i > 0 {
                reply.push(b',');
            }
            match pick {
                Some(id) => {
                    reply.extend_from_slice(b"{\"mode\":\"hold\",\"from\":");
                    reply.extend_from_slice(int.format(id).as_bytes());
                    reply.extend_from_slice(b",\"delay\":0}");
                }
                None => reply.extend_from_slice(b"{\"mode\":\"empty\",\"delay\":0}"),
            }
        }
        reply.extend_from_slice(b"]}\n");
        out.write_all(&reply)?;
        out.flush()?;
    }
}

/// Drops the result of a write into a `Vec`, which cannot fail.
fn ok<T, E>(_: Result<T, E>) {}

fn msgpack(mut input: impl BufRead, mut out: impl Write) -> io::Result<()> {
    use rmp::encode as mp;
    let mut newest = Newest::default();
    let (mut message, mut reply) = (Vec::new(), Vec::new());
    loop {
        let mut head = [0u8; 4];
        match input.read_exact(&mut head) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            r => r?,
        }
        message.resize(u32::from_be_bytes(head) as usize, 0);
        input.read_exact(&mut message)?;
        let batch: Batch = rmp_serde::from_slice(&message).map_err(bad)?;
        // The reply's length is patched in when it is written.
        reply.clear();
        reply.extend_from_slice(&[0; 4]);
        ok(mp::write_map_len(&mut reply, 2));
        ok(mp::write_str(&mut reply, "batch"));
        ok(mp::write_uint(&mut reply, batch.batch));
        ok(mp::write_str(&mut reply, "picks"));
        ok(mp::write_array_len(&mut reply, batch.frames.len() as u32));
        for pick in newest.picks(&batch) {
            match pick {
                Some(id) => {
                    ok(mp::write_map_len(&mut reply, 3));
                    ok(mp::write_str(&mut reply, "mode"));
                    ok(mp::write_str(&mut reply, "hold"));
                    ok(mp::write_str(&mut reply, "from"));
                    ok(mp::write_uint(&mut reply, u64::from(id)));
                }
                None => {
                    ok(mp::write_map_len(&mut reply, 2));
                    ok(mp::write_str(&mut reply, "mode"));
                    ok(mp::write_str(&mut reply, "empty"));
                }
            }
            ok(mp::write_str(&mut reply, "delay"));
            ok(mp::write_uint(&mut reply, 0));
        }
        let n = (reply.len() - 4) as u32;
        reply[..4].copy_from_slice(&n.to_be_bytes());
        out.write_all(&reply)?;
        out.flush()?;
    }
}

fn main() -> io::Result<()> {
    let mut input = io::BufReader::with_capacity(1 << 16, io::stdin().lock());
    let out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut line = Vec::new();
    input.read_until(b'\n', &mut line)?;
    let hello: Hello = serde_json::from_slice(&line).map_err(bad)?;
    if hello.protocol != "jitterlab-exec" {
        return Err(bad(format!("not jitterlab's hello: {}", hello.protocol)));
    }
    match hello.format.as_str() {
        "json" => json(input, out),
        "msgpack" => msgpack(input, out),
        other => Err(bad(format!("unknown format {other}"))),
    }
}

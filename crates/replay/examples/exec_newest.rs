//! A trivial external policy in Rust (`docs/external-policy.md`): holds the newest packet by
//! send time, with no delay. It parses every packet of every batch; the exec benchmark runs it
//! (`bench/exec.sh`):
//!
//! ```sh
//! cargo build --release -p jitterlab-replay --example exec_newest
//! jitterlab replay trace.jtr --policy exec:target/release/examples/exec_newest
//! ```

use std::io::{BufRead, Write};

use serde::Deserialize;

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

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut newest: Option<(i64, u32)> = None;
    let mut reply = String::new();
    for line in stdin.lines() {
        let batch: Batch = serde_json::from_str(&line?)?;
        reply.clear();
        reply.push_str(&format!("{{\"batch\":{},\"picks\":[", batch.batch));
        for (i, frame) in batch.frames.iter().enumerate() {
            for p in &frame.push {
                if newest.is_none_or(|(send, _)| p.send > send) {
                    newest = Some((p.send, p.id));
                }
            }
            if i > 0 {
                reply.push(',');
            }
            match newest {
                Some((_, id)) => {
                    reply.push_str(&format!("{{\"mode\":\"hold\",\"from\":{id},\"delay\":0}}"))
                }
                None => reply.push_str("{\"mode\":\"empty\",\"delay\":0}"),
            }
        }
        reply.push_str("]}\n");
        out.write_all(reply.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

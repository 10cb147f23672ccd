//! Writes a trace of one seeded synthetic protocol (see `discover::synthetic`), to try
//! `jitterlab discover` on: `cargo run -p jitterlab-capture --example synthetic_protocol --
//! SEED PACKETS OUT.jtr`, then `jitterlab discover OUT.jtr`. Prints the true specs.

use jitterlab_capture::discover::synthetic::Protocol;
use jitterlab_capture::trace::{Clock, Endpoint, Source};
use jitterlab_capture::{Header, Record, Writer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [seed, packets, out] = args.as_slice() else {
        return Err("usage: synthetic_protocol SEED PACKETS OUT.jtr".into());
    };
    let proto = Protocol::new(seed.parse()?);
    let header = Header::at(
        Clock {
            name: "synthetic".into(),
            realtime_offset_ns: None,
        },
        Source {
            kind: "synthetic".into(),
            detail: format!("discover::synthetic seed {seed}"),
        },
        0,
    );
    let mut w = Writer::new(std::fs::File::create(out)?, &header)?;
    let (src, dst) = ("10.0.0.1:5000".parse()?, "10.0.0.2:6000".parse()?);
    for g in proto.packets(packets.parse()?) {
        let mut r = Record::received(g.arrival, g.payload);
        (r.src, r.dst) = (Some(Endpoint(src)), Some(Endpoint(dst)));
        w.write(&r)?;
    }
    w.flush()?;
    println!("{}", proto.describe());
    Ok(())
}

#!/usr/bin/env python3
"""The trivial external policy of the exec benchmark (crates/replay/benches/exec.rs), in Python:
holds the newest packet by send time, with no delay. It speaks the framing jitterlab's hello
names: JSON Lines, or length-prefixed MessagePack (`exec(format=msgpack):…`, with the `msgpack`
package). Protocol: docs/external-policy.md."""
import json
import sys

stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
hello = json.loads(stdin.readline())
newest = None  # (send, id)


def picks(batch):
    global newest
    out = []
    for frame in batch["frames"]:
        for p in frame["push"]:
            if newest is None or p["send"] > newest[0]:
                newest = (p["send"], p["id"])
        out.append({"mode": "empty", "delay": 0} if newest is None
                   else {"mode": "hold", "from": newest[1], "delay": 0})
    return {"batch": batch["batch"], "picks": out}


if hello["format"] == "msgpack":
    import msgpack

    while len(head := stdin.read(4)) == 4:
        body = msgpack.packb(picks(msgpack.unpackb(stdin.read(int.from_bytes(head, "big")))))
        stdout.write(len(body).to_bytes(4, "big") + body)
        stdout.flush()
else:
    for line in stdin:
        stdout.write(json.dumps(picks(json.loads(line))).encode() + b"\n")
        stdout.flush()

#!/usr/bin/env python3
"""Seed 003's Unity SnapshotBuffer (../shared/seeds/003_…: capacity 32, stale drop, pruning),
its buffer logic written in Python, driven by jitterlab over the external-policy protocol
(docs/external-policy.md):

    jitterlab replay TRACE --policy 'exec(max_delay=100ms):python3 examples/external/seed003_unity_buffer.py 100'

The argument is the render delay in ms (the sample's RemotePlayer adapts it from an RFC 3550
jitter estimate; here it is fixed, so that the buffer logic can be compared with a built-in
configuration). Times on the wire are integer nanoseconds. It speaks either framing, the one
jitterlab's hello names: add `format=msgpack` to the options for MessagePack (with Python's
`msgpack` package).
"""
import json
import sys

MAX_SIZE = 32


class SnapshotBuffer:
    """Seed 003's buffer: sorted by server time, stale and duplicate times dropped on arrival,
    the oldest removed beyond 32, the snapshots behind the bracketing pair pruned on sample."""

    def __init__(self):
        self.buffer = []  # (time, id), oldest first

    def add(self, time, ident):
        # Too old (not after the oldest held): dropped. Otherwise inserted in time order.
        if self.buffer and time <= self.buffer[0][0]:
            return "stale"
        i = len(self.buffer)
        while i > 0 and self.buffer[i - 1][0] > time:
            i -= 1
        if i > 0 and self.buffer[i - 1][0] == time:
            return "duplicate"
        self.buffer.insert(i, (time, ident))
        if len(self.buffer) > MAX_SIZE:
            del self.buffer[0]
            return "evicted"
        return "inserted"

    def sample(self, render_time):
        """(from, to, alpha) when interpolating, (held, None, None) otherwise, None when empty."""
        if not self.buffer:
            return None
        for i in range(len(self.buffer) - 1):
            a, b = self.buffer[i], self.buffer[i + 1]
            if a[0] <= render_time <= b[0]:
                t = (render_time - a[0]) / (b[0] - a[0])
                if i > 0:
                    del self.buffer[:i]  # keep a
                return (a[1], b[1], t)
        # Too early (not enough buffered) or starved (nothing new): hold an end.
        held = self.buffer[0] if render_time < self.buffer[0][0] else self.buffer[-1]
        return (held[1], None, None)


def messages():
    """jitterlab's batches, in the framing its hello names (JSON Lines or MessagePack), and
    a function writing one reply in that framing."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    hello = json.loads(stdin.readline())
    if hello.get("protocol") != "jitterlab-exec":
        sys.exit(f"not jitterlab's hello: {hello}")
    if hello["format"] == "json":
        def reply(doc):
            stdout.write(json.dumps(doc).encode() + b"\n")
            stdout.flush()
        return (json.loads(line) for line in stdin), reply
    if hello["format"] != "msgpack":
        sys.exit(f"unknown format {hello['format']}")
    import msgpack  # only needed for exec(format=msgpack)

    def batches():
        while len(head := stdin.read(4)) == 4:
            yield msgpack.unpackb(stdin.read(int.from_bytes(head, "big")))

    def reply(doc):
        body = msgpack.packb(doc)
        stdout.write(len(body).to_bytes(4, "big") + body)
        stdout.flush()
    return batches(), reply


def main():
    delay = int(float(sys.argv[1] if len(sys.argv) > 1 else "100") * 1e6)
    buf = SnapshotBuffer()
    counters = {"inserted": 0, "duplicates": 0, "stale": 0, "evicted": 0}
    batches, reply = messages()
    for batch in batches:
        picks = []
        for frame in batch["frames"]:
            for p in frame["push"]:
                outcome = buf.add(p["send"], p["id"])
                if outcome == "evicted":
                    counters["inserted"] += 1
                    counters["evicted"] += 1
                elif outcome == "inserted":
                    counters["inserted"] += 1
                else:
                    counters[outcome + "s" if outcome == "duplicate" else outcome] += 1
            s = buf.sample(frame["now"] - delay)
            if s is None:
                picks.append({"mode": "empty", "delay": delay})
            elif s[1] is None:
                picks.append({"mode": "hold", "from": s[0], "delay": delay})
            else:
                picks.append({"mode": "interpolate", "from": s[0], "to": s[1], "alpha": s[2], "delay": delay})
        reply({"batch": batch["batch"], "picks": picks, "counters": counters})


if __name__ == "__main__":
    main()

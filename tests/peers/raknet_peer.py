#!/usr/bin/env python3
"""A RakNet server and client exchanging game traffic, for jitterlab's RakNet decoder test.

Uses the real RakNet 4.081 (facebookarchive/RakNet, through the `raknet` bindings on PyPI:
`pip install raknet==0.3.0`). The server listens on 127.0.0.1:SERVER_PORT; the client connects
to 127.0.0.1:CONNECT_PORT, which is `jitterlab capture --listen CONNECT_PORT --forward
127.0.0.1:SERVER_PORT` in the test, so that every datagram passes through the recording relay.

Traffic (after the connection is up, for --seconds):
- server -> client, 30 Hz `snapshot`: UNRELIABLE_SEQUENCED on ordering channel 0, 120 bytes,
  prefixed by ID_TIMESTAMP and the server's send time (ms, u64 big-endian);
- server -> client, 1 Hz `state`: RELIABLE_ORDERED on channel 1, 4,000 bytes (RakNet splits it
  into several datagrams);
- client -> server, 60 Hz `input`: UNRELIABLE, 24 bytes;
- client -> server, 2 Hz `chat`: RELIABLE (unordered), 40 bytes.

Each application message starts with its RakNet message id and a u32 big-endian counter per
kind. The JSON log (--log) lists, per side, what the application sent and received:
{"server": {"sent": {"snapshot": [0, 1, ...], ...}, "received": {"input": [...], ...}},
 "client": {...}, "seconds": ..., "connected": true}

Exit status 0 when both sides connected and shut down; 2 otherwise (with a message).
"""

import argparse
import json
import struct
import sys
import threading
import time

try:
    from raknet import MessageIdentifiers as Id
    from raknet import PacketPriority, PacketReliability, RakPeer
except ImportError as err:  # The test skips on this exit code unless peers are required.
    print(f"raknet bindings are not installed: {err} (pip install raknet==0.3.0)", file=sys.stderr)
    sys.exit(3)

USER = Id.ID_USER_PACKET_ENUM
KINDS = {
    "snapshot": USER + 1,
    "state": USER + 2,
    "input": USER + 3,
    "chat": USER + 4,
}
BY_ID = {v: k for k, v in KINDS.items()}


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def message(kind: str, n: int, size: int) -> bytes:
    body = bytes([KINDS[kind]]) + struct.pack(">I", n)
    return body + bytes((n + i) % 251 for i in range(size - len(body)))


def app_kind(data: bytes):
    """The kind and counter of an application message (ID_TIMESTAMP prefix skipped)."""
    if data and data[0] == Id.ID_TIMESTAMP:
        data = data[9:]
    if len(data) >= 5 and data[0] in BY_ID:
        return BY_ID[data[0]], struct.unpack(">I", data[1:5])[0]
    return None


class Side:
    def __init__(self, name: str):
        self.name = name
        self.peer = RakPeer()
        self.sent = {}
        self.received = {}
        self.remote = None
        self.events = []
        self.lock = threading.Lock()

    def send(self, kind, n, size, reliability, channel, stamp=False):
        data = message(kind, n, size)
        if stamp:
            data = bytes([Id.ID_TIMESTAMP]) + struct.pack(">Q", now_ms()) + data
        self.peer.send(data, PacketPriority.HIGH_PRIORITY, reliability, channel, self.remote)
        self.sent.setdefault(kind, []).append(n)

    def poll(self):
        while True:
            packet = self.peer.receive()
            if packet is None:
                return
            data = packet.data
            got = app_kind(data)
            if got is not None:
                self.received.setdefault(got[0], []).append(got[1])
                continue
            if data[0] in (Id.ID_NEW_INCOMING_CONNECTION, Id.ID_CONNECTION_REQUEST_ACCEPTED):
                self.remote = packet.system_address
            self.events.append(data[0])

    def log(self):
        return {"sent": self.sent, "received": self.received, "events": self.events}


def run(args) -> int:
    server, client = Side("server"), Side("client")
    server.peer.max_incoming_connections = 4
    server.peer.startup("127.0.0.1", args.server_port, max_connections=4)
    client.peer.startup("127.0.0.1", 0, max_connections=1)
    client.peer.connect("127.0.0.1", args.connect_port)

    deadline = time.monotonic() + 10
    while server.remote is None or client.remote is None:
        server.poll()
        client.poll()
        if time.monotonic() > deadline:
            print("raknet: the client never connected", file=sys.stderr)
            return 2
        time.sleep(0.001)

    start = time.monotonic()
    counts = {k: 0 for k in KINDS}
    rates = {"snapshot": 30, "state": 1, "input": 60, "chat": 2}
    end = start + args.seconds
    while True:
        t = time.monotonic()
        if t >= end:
            break
        for kind, hz in rates.items():
            # Absolute deadlines: message n is due at start + n / hz.
            while counts[kind] * (1.0 / hz) <= t - start:
                n = counts[kind]
                if kind == "snapshot":
                    server.send(kind, n, 120, PacketReliability.UNRELIABLE_SEQUENCED, 0, True)
                elif kind == "state":
                    server.send(kind, n, 4000, PacketReliability.RELIABLE_ORDERED, 1)
                elif kind == "input":
                    client.send(kind, n, 24, PacketReliability.UNRELIABLE, 0)
                else:
                    client.send(kind, n, 40, PacketReliability.RELIABLE, 0)
                counts[kind] += 1
        server.poll()
        client.poll()
        time.sleep(0.002)

    # Let reliable messages that the relay dropped be retransmitted and delivered: at least
    # `linger` seconds, and on a loaded machine (retransmission timeouts grow) until every
    # reliable message sent has been received, for at most 10 s more.
    def delivered():
        return len(client.received.get("state", [])) == counts["state"] and len(
            server.received.get("chat", [])
        ) == counts["chat"]

    linger = time.monotonic() + args.linger
    cap = linger + 10
    while time.monotonic() < linger or (not delivered() and time.monotonic() < cap):
        server.poll()
        client.poll()
        time.sleep(0.002)
    client.peer.shutdown(0.3)
    server.peer.shutdown(0.3)
    with open(args.log, "w") as out:
        json.dump(
            {
                "seconds": args.seconds,
                "server": server.log(),
                "client": client.log(),
                # RakNet gave up on a reliable message the wire carried (its peers stalled on a
                # loaded machine): the applications' logs then lack it.
                "undelivered_at_end": not delivered(),
            },
            out,
        )
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server-port", type=int, required=True)
    p.add_argument("--connect-port", type=int, required=True)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--linger", type=float, default=1.5)
    p.add_argument("--log", required=True)
    return run(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())

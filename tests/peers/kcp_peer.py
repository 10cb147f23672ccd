#!/usr/bin/env python3
"""A real KCP server and client (the `kcp` package from PyPI, which wraps the reference
ikcp.c) exchanging game traffic on loopback for jitterlab's transport tests.

Each side is one KCP control block over its own UDP socket, driven from one loop with the
same millisecond clock. The server listens on --server-port; the client sends to --connect
(the jitterlab relay in front of the server). For --seconds:
  - the server sends 30 Hz snapshots to the client (40 bytes: a little-endian u32
    application sequence number, then padding): each is one KCP message, one PUSH segment;
  - the client sends 60 Hz inputs to the server (16 bytes, same layout).
KCP is reliable: afterwards both sides keep running until every message is acknowledged (at
most 5 s), so that what the relay dropped has been retransmitted. The JSON log (--log) says
what each application sent and received, in order. Exits 0 only if both sides received
everything.
"""

import argparse
import json
import socket
import struct
import sys
import time

from kcp import KCP

CONV = 0x4A4C
SNAPSHOT_HZ = 30
INPUT_HZ = 60


def now_ms(start):
    return int((time.monotonic() - start) * 1000) & 0xFFFFFFFF


def hold_sockets():
    """Says "done" and keeps the sockets open until stdin closes, so that the relay can be
    stopped first: a datagram it forwards to a port already closed would come back as an
    ICMP port unreachable."""
    print("done", flush=True)
    sys.stdin.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-port", type=int, required=True)
    ap.add_argument("--connect", type=int, required=True, help="port the client sends to")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()

    server_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server_sock.bind(("127.0.0.1", args.server_port))
    server_sock.setblocking(False)
    client_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client_sock.bind(("127.0.0.1", 0))
    client_sock.setblocking(False)

    # no_delay with a 10 ms interval, fast resend after 2 duplicate acks: the settings games
    # use (kcp2k's defaults are the same).
    opts = dict(no_delay=True, update_interval=10, resend_count=2, no_congestion_control=True)
    server = KCP(CONV, **opts)
    client = KCP(CONV, **opts)
    peer = {"addr": None}

    @server.outbound_handler
    def _(_kcp, data):
        if peer["addr"] is not None:
            server_sock.sendto(data, peer["addr"])

    @client.outbound_handler
    def _(_kcp, data):
        client_sock.sendto(data, ("127.0.0.1", args.connect))

    log = {"snapshots_sent": [], "snapshots_received": [], "inputs_sent": [], "inputs_received": []}
    start = time.monotonic()

    def pump():
        for sock, kcp, is_server in ((server_sock, server, True), (client_sock, client, False)):
            while True:
                try:
                    data, addr = sock.recvfrom(65536)
                except BlockingIOError:
                    break
                if is_server:
                    peer["addr"] = addr
                kcp.receive(data)
            for msg in kcp.get_all_received():
                (seq,) = struct.unpack_from("<I", bytes(msg), 0)
                log["inputs_received" if is_server else "snapshots_received"].append(seq)
        t = now_ms(start)
        server.update(t)
        client.update(t)

    t0 = time.monotonic()
    next_snap = next_input = t0
    snap = inp = 0
    end = t0 + args.seconds
    while time.monotonic() < end:
        now = time.monotonic()
        # The server can only answer once the client has spoken: inputs start at once.
        if now >= next_input:
            client.enqueue(struct.pack("<I", inp) + bytes(12))
            log["inputs_sent"].append(inp)
            inp += 1
            next_input += 1 / INPUT_HZ
        if now >= next_snap and peer["addr"] is not None:
            server.enqueue(struct.pack("<I", snap) + bytes(36))
            log["snapshots_sent"].append(snap)
            snap += 1
            next_snap += 1 / SNAPSHOT_HZ
        pump()
        time.sleep(0.001)

    drain = time.monotonic() + 5
    while time.monotonic() < drain:
        pump()
        done = (
            len(log["snapshots_received"]) == len(log["snapshots_sent"])
            and len(log["inputs_received"]) == len(log["inputs_sent"])
            and server.get_outbound_packets() == 0
            and client.get_outbound_packets() == 0
        )
        if done:
            break
        time.sleep(0.001)
    # A last round so the final acknowledgements go out.
    for _ in range(30):
        pump()
        time.sleep(0.001)

    with open(args.log, "w") as f:
        json.dump(log, f)
    hold_sockets()
    ok = (
        log["snapshots_received"] == log["snapshots_sent"]
        and log["inputs_received"] == log["inputs_sent"]
        and log["snapshots_sent"]
    )
    if not ok:
        print("kcp_peer: not everything was delivered", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A real ENet server and client (pyenet, which bundles the reference C library) exchanging
game traffic on loopback for jitterlab's transport tests.

The server listens on --server-port; the client connects to --connect (the jitterlab relay
in front of the server). Once connected, for --seconds:
  - the server sends 30 Hz snapshots to the client, unreliable, on channel 0 (40 bytes:
    a little-endian u32 application sequence number, then padding), and a 3,000-byte
    "world" message twice a second, unreliable and fragmented
    (PACKET_FLAG_UNRELIABLE_FRAGMENT), on channel 1;
  - the client sends 60 Hz inputs to the server, unreliable, on channel 0 (16 bytes, same
    layout).
Then both sides keep servicing for a second so that late datagrams land, the client
disconnects, and the JSON log (--log) says what each application sent and received:
application sequence numbers in order, per kind. The script exits 0 only if the connection
came up and the exchange ran.
"""

import argparse
import json
import struct
import sys
import time

import enet

SNAPSHOT_HZ = 30
INPUT_HZ = 60
WORLD_HZ = 2
WORLD_BYTES = 3000


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

    server = enet.Host(enet.Address(b"127.0.0.1", args.server_port), 4, 2, 0, 0)
    client = enet.Host(None, 1, 2, 0, 0)
    to_server = client.connect(enet.Address(b"127.0.0.1", args.connect), 2)

    log = {
        "snapshots_sent": [],
        "snapshots_received": [],
        "worlds_sent": [],
        "worlds_received": [],
        "inputs_sent": [],
        "inputs_received": [],
        "client_connected": False,
        "server_connected": False,
    }
    to_client = None

    def pump(host, is_server):
        nonlocal to_client
        # service(0) handles one event at a time: drain them all.
        event = host.service(0)
        while event.type != enet.EVENT_TYPE_NONE:
            if event.type == enet.EVENT_TYPE_CONNECT:
                if is_server:
                    to_client = event.peer
                    log["server_connected"] = True
                else:
                    log["client_connected"] = True
            elif event.type == enet.EVENT_TYPE_RECEIVE:
                data = event.packet.data
                (seq,) = struct.unpack_from("<I", data, 0)
                if is_server:
                    log["inputs_received"].append(seq)
                elif event.channelID == 1:
                    assert len(data) == WORLD_BYTES, len(data)
                    log["worlds_received"].append(seq)
                else:
                    log["snapshots_received"].append(seq)
            event = host.service(0)

    deadline = time.monotonic() + 10
    while not (log["client_connected"] and log["server_connected"]):
        if time.monotonic() > deadline:
            print("enet_peer: no connection within 10 s", file=sys.stderr)
            return 1
        pump(server, True)
        pump(client, False)
        time.sleep(0.001)

    start = time.monotonic()
    next_snap = next_input = next_world = start
    snap = inp = world = 0
    end = start + args.seconds
    while True:
        now = time.monotonic()
        if now >= end:
            break
        # Absolute deadlines, so sleep overshoot does not accumulate.
        if now >= next_snap:
            body = struct.pack("<I", snap) + bytes(36)
            to_client.send(0, enet.Packet(body, 0))
            log["snapshots_sent"].append(snap)
            snap += 1
            next_snap += 1 / SNAPSHOT_HZ
        if now >= next_world:
            body = struct.pack("<I", world) + bytes(WORLD_BYTES - 4)
            to_client.send(1, enet.Packet(body, enet.PACKET_FLAG_UNRELIABLE_FRAGMENT))
            log["worlds_sent"].append(world)
            world += 1
            next_world += 1 / WORLD_HZ
        if now >= next_input:
            body = struct.pack("<I", inp) + bytes(12)
            to_server.send(0, enet.Packet(body, 0))
            log["inputs_sent"].append(inp)
            inp += 1
            next_input += 1 / INPUT_HZ
        pump(server, True)
        pump(client, False)
        time.sleep(0.001)

    settle = time.monotonic() + 1.0
    while time.monotonic() < settle:
        pump(server, True)
        pump(client, False)
        time.sleep(0.001)
    log["client_packet_throttle"] = to_server.packetThrottle
    log["server_packet_throttle"] = to_client.packetThrottle
    to_server.disconnect_now(0)
    client.flush()

    with open(args.log, "w") as f:
        json.dump(log, f)
    hold_sockets()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Median latency the recording relay adds on loopback (no impairment).

    bench/relay_latency.py [PINGS]        (default 5000; needs target/release/jitterlab)

A UDP echo server runs in this process. Round-trip times are measured directly to the echo and
through `jitterlab capture --forward` (which forwards both ways); the relay adds the difference
of the medians twice (one pass each way), so half of it is the one-way added latency.
"""
import os, socket, statistics, subprocess, sys, tempfile, threading, time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
J = os.path.join(os.path.dirname(__file__), "..", "target", "release", "jitterlab")

echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
echo.bind(("127.0.0.1", 0))
echo_port = echo.getsockname()[1]
def serve():
    while True:
        data, addr = echo.recvfrom(2048)
        if data == b"quit":
            return
        echo.sendto(data, addr)
threading.Thread(target=serve, daemon=True).start()

def rtts(port):
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.connect(("127.0.0.1", port))
    c.settimeout(2)
    out = []
    payload = b"x" * 172
    for _ in range(N):
        t = time.perf_counter_ns()
        c.send(payload)
        c.recv(2048)
        out.append((time.perf_counter_ns() - t) / 1000.0)
    return out

direct = rtts(echo_port)
with tempfile.TemporaryDirectory() as d:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    relay_port = probe.getsockname()[1]
    probe.close()
    relay = subprocess.Popen([J, "capture", "--listen", str(relay_port), "--forward", str(echo_port),
                              "-o", os.path.join(d, "relay.jtr")], stderr=subprocess.PIPE)
    time.sleep(0.5)
    via = rtts(relay_port)
    relay.send_signal(2)
    relay.wait()
md, mv = statistics.median(direct), statistics.median(via)
print(f"{N} pings of 172 bytes: median RTT direct {md:.1f} us, through the relay {mv:.1f} us")
print(f"relay adds {mv - md:.1f} us per round trip (two passes), {(mv - md) / 2:.1f} us one way (median)")

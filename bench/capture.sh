#!/usr/bin/env bash
# Live capture throughput, side by side with tcpdump on the same stream (loopback).
#
#   bench/capture.sh [RATE_PPS] [SECONDS]      (default 100000 10)
#
# `jitterlab send` sends 200-byte probe datagrams at RATE; `jitterlab capture` and
# `tcpdump -w` capture the same stream at once. Reports what the sender sent, what each
# capture holds, and the drops each reports (jitterlab: kernel SO_RXQ_OVFL and its own queue;
# tcpdump: "dropped by kernel"). Needs tcpdump (apt-get install tcpdump) and root for tcpdump.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-100000}
SECS=${2:-10}
J=target/release/jitterlab
cargo build --release -q
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
PORT=$((40000 + RANDOM % 20000))
$J capture --listen "$PORT" -o "$DIR/cap.jtr" 2> "$DIR/cap.err" &
CAP=$!
HAVE_TCPDUMP=0
if command -v tcpdump > /dev/null; then
  tcpdump -i lo -n -w "$DIR/dump.pcap" "udp dst port $PORT" 2> "$DIR/tcpdump.err" &
  TD=$!
  HAVE_TCPDUMP=1
fi
sleep 1
$J send --to "$PORT" --rate "$RATE" --duration "${SECS}s" --size 200 2> "$DIR/send.err"
sleep 1
kill -INT "$CAP"
wait "$CAP" || true
if [ "$HAVE_TCPDUMP" = 1 ]; then kill -INT "$TD"; wait "$TD" || true; fi
echo "rate $RATE pkt/s for $SECS s, 200-byte datagrams"
sed 's/^/  sender:   /' "$DIR/send.err"
grep captured "$DIR/cap.err" | sed 's/^/  jitterlab: /'
$J info --json "$DIR/cap.jtr" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("  jitterlab trace: %d datagrams, %d lost in sequence, stats %s" % (d["packets"], sum(s["lost"] for s in d["streams"]), d["capture_stats"]))'
if [ "$HAVE_TCPDUMP" = 1 ]; then
  grep -E "captured|dropped" "$DIR/tcpdump.err" | sed 's/^/  tcpdump:  /'
  $J info --json --decoder probe "$DIR/dump.pcap" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("  tcpdump pcap: %d datagrams, %d lost in sequence" % (d["packets"], sum(s["lost"] for s in d["streams"])))'
fi

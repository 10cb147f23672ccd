#!/usr/bin/env bash
# Load soak on loopback: capture, or the relay, at RATE datagrams/s for SECONDS, with memory
# sampled every second.
#
#   bench/soak.sh capture [RATE] [SECONDS]   (default 100000 60)
#   bench/soak.sh relay   [RATE] [SECONDS]
#
# capture: `jitterlab send` → `jitterlab capture`. Reports what was sent, what the socket
#   received, what the file holds, kernel and queue drops, and RSS over time (peak = VmHWM).
#   "Zero loss between socket and file" means datagrams received == datagrams in the file.
# relay: `jitterlab send` → `jitterlab capture --forward --impair delay=1ms` (which records
#   both legs: a Sent record at ingress, a Received record as each datagram leaves) →
#   `jitterlab capture`. Reports the relay's counters, both legs in its trace, what the
#   listener holds, and the relay's RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-capture}
RATE=${2:-100000}
SECS=${3:-60}
J=target/release/jitterlab
cargo build --release -q
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
PORT=$((40000 + RANDOM % 10000))
UP=$((PORT + 10000))

sample_rss() { # PID OUT: VmRSS in kB once a second while PID lives
  while kill -0 "$1" 2>/dev/null; do
    awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null >> "$2" || true
    sleep 1
  done
}
peak_rss() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }
info() { $J info --json "$1" 2>/dev/null; }

if [ "$MODE" = capture ]; then
  $J capture --listen "$PORT" -o "$DIR/cap.jtr" 2> "$DIR/cap.err" &
  CAP=$!
  WATCH=$CAP
else
  $J capture --listen "$UP" -o "$DIR/listen.jtr" 2> "$DIR/listen.err" &
  LISTEN=$!
  $J capture --listen "$PORT" --forward "127.0.0.1:$UP" --impair delay=1ms \
    -o "$DIR/relay.jtr" 2> "$DIR/cap.err" &
  CAP=$!
  WATCH=$CAP
fi
sleep 1
sample_rss "$WATCH" "$DIR/rss" &
$J send --to "$PORT" --rate "$RATE" --duration "${SECS}s" --size 200 2> "$DIR/send.err"
sleep 1
PEAK=$(peak_rss "$WATCH")
kill -INT "$CAP"; wait "$CAP" || true
if [ "$MODE" = relay ]; then kill -INT "$LISTEN"; wait "$LISTEN" || true; fi
echo "$MODE soak: $RATE pkt/s for $SECS s, 200-byte datagrams"
sed 's/^/  sender:    /' "$DIR/send.err"
grep captured "$DIR/cap.err" | sed "s|$DIR/||; s/^/  $MODE:   /"
python3 - "$DIR/rss" "$PEAK" <<'PY'
import sys
rss = [int(x) for x in open(sys.argv[1]).read().split()]
n = len(rss)
picks = sorted({0, min(4, n - 1), n // 2, n - 1})
print("  RSS (MB) at " + ", ".join("%d s: %.1f" % (i + 1, rss[i] / 1024) for i in picks)
      + "; peak (VmHWM) %.1f MB" % (int(sys.argv[2]) / 1024))
PY
if [ "$MODE" = capture ]; then
  info "$DIR/cap.jtr" | python3 -c '
import json, sys
d = json.load(sys.stdin); c = d["capture_stats"]
print("  file: %d datagrams; socket received %d; socket→file lost %d; kernel drops %d; queue drops %d"
      % (d["packets"], c["received"], c["received"] - d["packets"], c["kernel_drops"], c["queue_drops"]))'
else
  grep captured "$DIR/listen.err" | sed "s|$DIR/||; s/^/  listener:  /"
  R=$(info "$DIR/relay.jtr"); L=$(info "$DIR/listen.jtr")
  python3 -c '
import json, sys
r, l = json.loads(sys.argv[1]), json.loads(sys.argv[2]); c = r["capture_stats"]
print("  relay trace: %d ingress (Sent) records, %d egress (Received) records; relay socket received %d, kernel drops %d, queue drops %d"
      % (r["truth_packets"], r["packets"], c["received"], c["kernel_drops"], c["queue_drops"]))
print("  listener file: %d datagrams (kernel drops %d)" % (l["packets"], l["capture_stats"]["kernel_drops"]))
print("  lost inside the relay (ingress - egress): %d" % (r["truth_packets"] - r["packets"]))' "$R" "$L"
fi

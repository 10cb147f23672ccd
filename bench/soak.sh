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
# relay: `jitterlab send` → `jitterlab capture --forward` → a UDP echo server
#   (crates/capture/examples/udp_echo.rs) → back through the relay to the sender, so the relay
#   carries and records both legs (to the upstream and back to the client). Reports the relay's
#   counters, the records per direction, what the echo server echoed, and the relay's RSS.
#   SINK=1 makes the upstream a sink that only counts (one leg, half the load on the relay).
#   IMPAIR=SPEC adds `--impair SPEC` (the impairment scheduler; see BENCHMARKS.md for the rate
#   it sustains).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-capture}
RATE=${2:-100000}
SECS=${3:-60}
J=target/release/jitterlab
cargo build --release -q --bins --examples
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
  target/release/examples/udp_echo "$UP" 3 ${SINK:+sink} > "$DIR/echo.out" &
  ECHO=$!
  $J capture --listen "$PORT" --forward "127.0.0.1:$UP" ${IMPAIR:+--impair "$IMPAIR"} \
    -o "$DIR/relay.jtr" 2> "$DIR/cap.err" &
  CAP=$!
  WATCH=$CAP
fi
sleep 1
sample_rss "$WATCH" "$DIR/rss" &
SAMPLER=$!
$J send --to "$PORT" --rate "$RATE" --duration "${SECS}s" --size 200 2> "$DIR/send.err"
sleep 1
PEAK=$(peak_rss "$WATCH")
kill "$SAMPLER" 2>/dev/null || true
kill -INT "$CAP"; wait "$CAP" || true
if [ "$MODE" = relay ]; then wait "$ECHO" || true; fi
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
  sed 's/^/  echo:      /' "$DIR/echo.out"
  info "$DIR/relay.jtr" | python3 -c '
import json, sys
up = sys.argv[1]
d = json.load(sys.stdin); c = d["capture_stats"]
legs = {"to upstream": 0, "to client": 0}
for s in d["streams"]:
    legs["to upstream" if s["dst"].endswith(":" + up) else "to client"] += s["packets"]
print("  relay trace: %d records to the upstream, %d back to the client; socket received %d, kernel drops %d, queue drops %d"
      % (legs["to upstream"], legs["to client"], c["received"], c["kernel_drops"], c["queue_drops"]))' "$UP"
fi

#!/usr/bin/env bash
# The whole `jitterlab replay` command against seed 000's JavaScript SnapshotBuffer loop in
# Node, side by side on the same trace, alternating for several rounds; medians printed.
#
#   bench/seed_js.sh [PACKETS] [ROUNDS]     (default 1000000 snapshots, 7 rounds; needs node)
#
# The trace: `jitterlab synth` at 20 Hz (the seed's rate; default profile and motion) for
# PACKETS/20 seconds, sampled at 60 fps. jitterlab: the whole command, end to end (start-up,
# reading, decoding, preparing, replaying, metrics, JSON), timed from outside:
#   jitterlab replay TRACE --policy fixed:delay=100ms,max_gap=120ms,capacity=8 --json
# The peer: the seed's class as printed (from examples/external/seed000_snapshot_buffer.mjs)
# in bench/seed_js_loop.mjs, fed the same trace's received packets from memory (exported once
# with `jitterlab export --packets`, parsed before timing), push and sample at 60 fps, no I/O;
# each Node run makes 3 passes and the best is taken (JIT warm), which favours the peer.
# Packets/s = the trace's received packets / time, for both.
#
# Environment: JITTERLAB=BINARY (default: target/release/jitterlab, built first), OLD=BINARY
# (another build, timed in the same rounds, its metrics checked equal),
# BENCH_DATA=DIR for the trace (default: a temporary directory, removed at the end),
# TRACE=FILE to reuse a trace made the same way instead of making one.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
ROUNDS=${2:-7}
if [ -z "${JITTERLAB:-}" ]; then
  nice -n 10 cargo build --release -q -p jitterlab
  J=target/release/jitterlab
else
  J=$JITTERLAB
fi
command -v node > /dev/null || { echo "bench/seed_js.sh: node is not installed" >&2; exit 2; }
DIR=$(mktemp -d "${BENCH_DATA:-${TMPDIR:-/tmp}}/seed_js.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
T=${TRACE:-$DIR/seed20.jtr}
[ -n "${TRACE:-}" ] || $J synth -o "$T" --rate 20 --duration "$(( (N + 19) / 20 ))s" -q
$J export "$T" --packets -o "$DIR/packets.csv" -q
# The seed's class, as printed, then the driver.
sed -n '/---- seed 000, as printed ----/,/---- end of seed 000 ----/p' \
  examples/external/seed000_snapshot_buffer.mjs > "$DIR/loop.mjs"
cat bench/seed_js_loop.mjs >> "$DIR/loop.mjs"
RECEIVED=$($J info --json "$T" | python3 -c 'import json,sys; print(json.load(sys.stdin)["packets"])')
POLICY='fixed:delay=100ms,max_gap=120ms,capacity=8'
echo "trace: $N snapshots at 20 Hz, $RECEIVED received, $(stat -c %s "$T") bytes; frames at 60 fps"
echo "load: $(uptime)"
now() { date +%s.%N; }
: > "$DIR/rows"
for r in $(seq 1 "$ROUNDS"); do
  JS=$(node "$DIR/loop.mjs" "$DIR/packets.csv" 3 | sed -n 's/^pass [0-9]*: \([0-9.]*\) s.*/\1/p' | sort -g | head -1)
  T0=$(now)
  $J replay "$T" --policy "$POLICY" --json > "$DIR/replay.json"
  T1=$(now)
  OLDT=nan
  if [ -n "${OLD:-}" ]; then
    T2=$(now)
    "$OLD" replay "$T" --policy "$POLICY" --json > "$DIR/replay-old.json"
    OLDT=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$T2" "$(now)")
    cmp -s <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"])' "$DIR/replay.json") \
           <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"])' "$DIR/replay-old.json") \
      || echo "warning: the old binary's metrics differ" >&2
  fi
  python3 - "$RECEIVED" "$JS" "$T0" "$T1" "$r" "$OLDT" >> "$DIR/rows" <<'PY'
import sys
n, js, t0, t1, r, old = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], float(sys.argv[6])
jl = t1 - t0
print(f"{r} {js:.4f} {n / js / 1e6:.3f} {jl:.4f} {n / jl / 1e6:.3f} {js / jl:.3f} {old:.4f} {n / old / 1e6:.3f}")
PY
  tail -1 "$DIR/rows" | awk '{printf "round %s: seed JS loop %s s = %s M packets/s | jitterlab replay (end to end) %s s = %s M packets/s | ratio %s×", $1, $2, $3, $4, $5, $6; if ($7 != "nan") printf " | old binary %s s = %s M packets/s", $7, $8; printf "\n"}'
done
node "$DIR/loop.mjs" "$DIR/packets.csv" 1 | sed 's/^pass 1:/seed JS outcome:/'
python3 - "$DIR/rows" <<'PY'
import math, statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
col = lambda i: statistics.median(float(r[i]) for r in rows)
print(f"median of {len(rows)} rounds: seed JS loop {col(2):.3f} M packets/s ({col(1):.4f} s), "
      f"jitterlab replay end to end {col(4):.3f} M packets/s ({col(3):.4f} s); "
      f"median per-round ratio {col(5):.2f}× (target ≥ 2×)")
if not math.isnan(col(6)):
    print(f"old binary: {col(7):.3f} M packets/s ({col(6):.4f} s) end to end")
PY

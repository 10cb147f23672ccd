#!/usr/bin/env bash
# Replay and sweep at 1,000,000 and 10,000,000 packets: time per packet and peak RSS, to show
# that cost per packet does not grow with the trace and memory grows only with the decoded
# input.
#
#   bench/scale.sh [SMALL] [LARGE]     (default 1000000 10000000 snapshots)
#
# Traces: `jitterlab synth` at 60 Hz through the `wifi` profile with a walking motion (the
# replay and sweep benchmarks' trace), ground truth included. For each size:
#   replay: `jitterlab replay --policy fixed:delay=100ms --json`, wall time and peak RSS
#           (reading, decoding and replaying);
#   sweep:  `jitterlab sweep --sweep fixed:delay=0..270ms/30ms` (10 configurations) on one
#           thread, the replay phase as sweep reports it, and peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL=${1:-1000000}
LARGE=${2:-10000000}
J=target/release/jitterlab
cargo build --release -q
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
for N in "$SMALL" "$LARGE"; do
  T="$DIR/t$N.jtr"
  SECS=$(( (N + 59) / 60 ))
  $J synth -o "$T" --rate 60 --duration "${SECS}s" --profile wifi --motion walk > /dev/null 2>&1
  RECEIVED=$($J info --json "$T" | python3 -c 'import json,sys; print(json.load(sys.stdin)["packets"])')
  /usr/bin/time -f '%e %M' -o "$DIR/time" $J replay "$T" --policy fixed:delay=100ms --json > /dev/null
  read -r WALL RSS < "$DIR/time"
  /usr/bin/time -f '%e %M' -o "$DIR/stime" $J sweep "$T" --sweep 'fixed:delay=0..270ms/30ms' \
    --threads 1 -q -o "$DIR/rows$N.csv" 2> "$DIR/sweep.err" > /dev/null
  read -r SWALL SRSS < "$DIR/stime"
  PHASE=$(grep -o 'in [0-9.]* s after' "$DIR/sweep.err" | grep -o '[0-9.]*')
  python3 - "$N" "$RECEIVED" "$(stat -c %s "$T")" "$WALL" "$RSS" "$PHASE" "$SWALL" "$SRSS" <<'PY'
import sys
n, recv, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
wall, rss, phase, swall, srss = map(float, sys.argv[4:9])
print(f"{n:>10,} snapshots ({recv:,} received, trace {size / 1e6:.0f} MB)")
print(f"  replay: {wall:.2f} s wall = {wall / recv * 1e9:.0f} ns/packet; peak RSS {rss / 1024:.0f} MB "
      f"= {rss * 1024 / recv:.0f} B/packet")
print(f"  sweep (10 configs, 1 thread): replay phase {phase:.2f} s = {phase / recv / 10 * 1e9:.1f} ns/step; "
      f"{swall:.2f} s wall; peak RSS {srss / 1024:.0f} MB")
PY
  rm -f "$T"
done

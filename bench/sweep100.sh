#!/usr/bin/env bash
# A sweep of 100 fixed configurations over a 10,000,000-packet trace on 2 threads, the whole
# command timed (reading, decoding and preparing included): packet·configurations per second.
# Target (issue 17): at least 40 M/s. With OLD=BINARY, that binary's sweep runs in alternate
# turns on the same trace (before/after, side by side).
#
#   bench/sweep100.sh [PACKETS] [ROUNDS]     (default 10000000 snapshots, 3 rounds)
#
# The trace: `jitterlab synth --rate 60 --profile wifi --motion walk` (the sweep benchmark's
# trace in BENCHMARKS.md, about 2.1 GB at 10 M packets), its ground truth included. The grid:
# `fixed:delay=0..297ms/3ms` (100 configurations). Printed per run: the wall time, the replay
# phase as `sweep` reports it, and peak RSS.
#
# Environment: JITTERLAB=BINARY (default: target/release/jitterlab, built first), OLD=BINARY,
# BENCH_DATA=DIR for the trace (default: a temporary directory, removed at the end),
# TRACE=FILE to reuse a trace made the same way instead of making one.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000000}
ROUNDS=${2:-3}
if [ -z "${JITTERLAB:-}" ]; then
  nice -n 10 cargo build --release -q -p jitterlab
  J=target/release/jitterlab
else
  J=$JITTERLAB
fi
DIR=$(mktemp -d "${BENCH_DATA:-${TMPDIR:-/tmp}}/sweep100.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
T=${TRACE:-$DIR/sweep60.jtr}
[ -n "${TRACE:-}" ] || $J synth -o "$T" --rate 60 --duration "$(( (N + 59) / 60 ))s" --profile wifi --motion walk -q
RECEIVED=$($J info --json "$T" | python3 -c 'import json,sys; print(json.load(sys.stdin)["packets"])')
echo "trace: $N snapshots at 60 Hz, $RECEIVED received, $(stat -c %s "$T") bytes"
echo "load: $(uptime)"
BINARIES="new=$J"
[ -n "${OLD:-}" ] && BINARIES="old=$OLD $BINARIES"
: > "$DIR/rows"
for r in $(seq 1 "$ROUNDS"); do
  for nb in $BINARIES; do
    name=${nb%%=*}; bin=${nb#*=}
    rm -f "$DIR/rows.csv"
    /usr/bin/time -f '%e %M' -o "$DIR/time" "$bin" sweep "$T" --sweep 'fixed:delay=0..297ms/3ms' \
      --threads 2 -o "$DIR/rows.csv" > /dev/null 2> "$DIR/sweep.err"
    read -r WALL RSS < "$DIR/time"
    PHASE=$(grep -o 'in [0-9.]* s after' "$DIR/sweep.err" | grep -o '[0-9.]*' || echo nan)
    python3 - "$r" "$name" "$RECEIVED" "$WALL" "$RSS" "$PHASE" >> "$DIR/rows" <<'PY'
import sys
r, name, n, wall, rss, phase = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
print(f"{r} {name} {wall:.2f} {n * 100 / wall / 1e6:.2f} {phase:.2f} {rss / 1024:.0f}")
PY
    tail -1 "$DIR/rows" | awk '{printf "round %s %s: %s s wall = %s M packet·configurations/s end to end; replay phase %s s; peak RSS %s MB\n", $1, $2, $3, $4, $5, $6}'
  done
done
python3 - "$DIR/rows" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for name in dict.fromkeys(r[1] for r in rows):
    mine = [r for r in rows if r[1] == name]
    med = lambda i: statistics.median(float(r[i]) for r in mine)
    print(f"{name}: median of {len(mine)}: {med(2):.2f} s wall, {med(3):.2f} M packet·configurations/s "
          f"(target ≥ 40), replay phase {med(4):.2f} s, peak RSS {med(5):.0f} MB")
PY

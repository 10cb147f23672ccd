#!/usr/bin/env bash
# Issue 17's long-trace targets: `info`, `replay` (fixed policy) and a 100-configuration `sweep`
# on 1 M, 10 M and 100 M-snapshot probe traces, one streaming pass each: wall time, time per
# packet and peak RSS (`/usr/bin/time`), and the in-memory path (`--in-memory`) beside them up
# to 10 M (at 100 M it does not fit in this machine's memory).
#
#   bench/stream100m.sh BINARY [DIR] [SIZES]
#
# Traces: `jitterlab synth` at 60 Hz through the `wifi` profile with a walking motion, ground
# truth included (the replay benchmarks' trace; ~210 bytes a snapshot, 21 GB at 100 M), written
# under DIR (default /work/bench-data/stream) one at a time and deleted after use. SIZES
# defaults to "1000000 10000000 100000000".
set -euo pipefail
BIN=$1
DIR=${2:-/work/bench-data/stream}
SIZES=${3:-1000000 10000000 100000000}
mkdir -p "$DIR"
trap 'rm -f "$DIR"/*.jtr "$DIR"/time "$DIR"/rows.parquet' EXIT
uptime
run() { # args... -> "wall rss_kb"
  /usr/bin/time -f '%e %M' -o "$DIR/time" "$@" > /dev/null 2>&1
  cat "$DIR/time"
}
report() { # label packets wall rss
  printf '%-34s %11d packets %8.2f s %7.0f ns/packet %7.0f MB\n' "$1" "$2" "$3" \
    "$(echo "$3 * 1000000000 / $2" | bc -l)" "$(( $4 / 1024 ))"
}
for N in $SIZES; do
  T="$DIR/probe$N.jtr"
  "$BIN" synth -o "$T" --force --rate 60 --duration "$(( (N + 59) / 60 ))s" --profile wifi \
    --motion walk > /dev/null 2>&1
  echo "probe trace, $N snapshots: $(stat -c %s "$T") bytes"
  read -r w r < <(run "$BIN" info "$T")
  report "info" "$N" "$w" "$r"
  read -r w r < <(run "$BIN" replay "$T" --policy fixed:delay=100ms --json)
  report "replay fixed (stream)" "$N" "$w" "$r"
  if [ "$N" -le 10000000 ]; then
    read -r w r < <(run "$BIN" replay "$T" --policy fixed:delay=100ms --json --in-memory)
    report "replay fixed (in memory)" "$N" "$w" "$r"
  fi
  read -r w r < <(run "$BIN" sweep "$T" --sweep 'fixed:delay=0..495ms/5ms' -o "$DIR/rows.parquet" --force)
  report "sweep 100 fixed (stream)" "$N" "$w" "$r"
  echo "  = $(echo "$N * 100 / $w / 1000000" | bc -l | cut -c1-5) M packet-configurations/s"
  if [ "$N" -le 10000000 ]; then
    read -r w r < <(run "$BIN" sweep "$T" --sweep 'fixed:delay=0..495ms/5ms' -o "$DIR/rows.parquet" --force --in-memory)
    report "sweep 100 fixed (in memory)" "$N" "$w" "$r"
    echo "  = $(echo "$N * 100 / $w / 1000000" | bc -l | cut -c1-5) M packet-configurations/s"
  fi
  rm -f "$T"
done

#!/usr/bin/env bash
# Issue 17's report target: the report of bench/report.sh (three configurations replayed frame
# by frame, a sweep's results for the Pareto figure and heat map, every figure, the tables and
# the index) drawn in passes over the file (`--streaming`) on 1 M and 100 M-snapshot probe
# traces, and in memory (`--in-memory`) beside it at 1 M (at 100 M it does not fit): wall time,
# time per packet and peak RSS (`/usr/bin/time`), ROUNDS runs each, the sizes alternating.
#
#   bench/report_stream.sh BINARY [DIR] [SIZES] [ROUNDS]
#
# Traces: `jitterlab synth --rate 60 --profile wifi --motion walk --seed 1` (~211 bytes a
# snapshot, 21 GB at 100 M), written once under DIR (default /work/bench-data) as
# report-N.jtr and kept for later runs (delete them by hand). The sweep's results
# (`fixed:delay=50..250ms/50ms,max_gap=120ms|250ms`, 10 rows) are made from the 1 M trace.
set -euo pipefail
BIN=$1
DIR=${2:-/work/bench-data}
SIZES=${3:-1000000 100000000}
ROUNDS=${4:-3}
mkdir -p "$DIR"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
uptime
for N in $SIZES; do
  T="$DIR/report-$N.jtr"
  if [ ! -f "$T" ]; then
    "$BIN" synth -o "$T" --rate 60 --duration "$(( (N + 59) / 60 ))s" --profile wifi \
      --motion walk --seed 1 > /dev/null 2>&1
  fi
  echo "trace $T: $(stat -c %s "$T") bytes"
done
FIRST=${SIZES%% *}
"$BIN" sweep "$DIR/report-$FIRST.jtr" --sweep 'fixed:delay=50..250ms/50ms,max_gap=120ms|250ms' \
  -q -o "$OUT/rows.parquet" > /dev/null 2>&1
report() { # label packets wall rss
  printf '%-28s %11d packets %8.2f s %7.0f ns/packet %7.0f MB\n' "$1" "$2" "$3" \
    "$(echo "$3 * 1000000000 / $2" | bc -l)" "$(( $4 / 1024 ))"
}
for round in $(seq "$ROUNDS"); do
  for N in $SIZES; do
    for mode in --streaming --in-memory; do
      if [ "$mode" = --in-memory ] && [ "$N" -gt 10000000 ]; then continue; fi
      rm -rf "$OUT/report"
      /usr/bin/time -f '%e %M' -o "$OUT/time" "$BIN" report "$DIR/report-$N.jtr" "$mode" \
        --policy fixed:delay=100ms --policy fixed:delay=150ms --policy jitter \
        --results "$OUT/rows.parquet" -o "$OUT/report" -q > /dev/null
      read -r w r < "$OUT/time"
      report "round $round report $mode" "$N" "$w" "$r"
    done
  done
done

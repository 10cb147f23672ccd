#!/usr/bin/env bash
# Issue 17's "100 M within 20 % of 1 M per packet" for `info` and `replay` (fixed policy, one
# streaming pass): the two sizes alternate in every round, so both see the same machine.
#
#   bench/long_pair.sh BINARY SMALL.jtr LARGE.jtr [ROUNDS]
#
# The traces: `jitterlab synth --rate 60 --profile wifi --motion walk --seed 1` at 1 M and
# 100 M snapshots (bench/report_stream.sh makes and keeps them as report-N.jtr). Prints each
# run's wall time, time per received packet and peak RSS.
set -euo pipefail
BIN=$1
SMALL=$2
LARGE=$3
ROUNDS=${4:-3}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
uptime
count() { "$BIN" info --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["packets"])'; }
NS=$(count "$SMALL")
NL=$(count "$LARGE")
for round in $(seq "$ROUNDS"); do
  for cmd in info replay; do
    for pair in "$SMALL:$NS" "$LARGE:$NL"; do
      T=${pair%:*}
      N=${pair##*:}
      if [ "$cmd" = info ]; then
        /usr/bin/time -f '%e %M' -o "$OUT/time" "$BIN" info "$T" > /dev/null
      else
        /usr/bin/time -f '%e %M' -o "$OUT/time" "$BIN" replay "$T" --policy fixed:delay=100ms --json > /dev/null
      fi
      read -r w r < "$OUT/time"
      printf 'round %d %-6s %11d packets %8.2f s %6.0f ns/packet %5d MB\n' "$round" "$cmd" "$N" "$w" \
        "$(echo "$w * 1000000000 / $N" | bc -l)" "$(( r / 1024 ))"
    done
  done
done

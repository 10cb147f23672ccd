#!/usr/bin/env bash
# `jitterlab info` before and after the streaming pass (issue 17): wall time and peak RSS of
# `info` and `info --json` on 1 M and 10 M-snapshot probe traces, and on a trace of 100,000
# two-packet streams, two binaries side by side, three runs each, medians.
#
#   bench/info_stream.sh OLD_BINARY NEW_BINARY [DIR]
#
# Traces go under DIR (default /work/bench-data/info; about 2.4 GB) and are deleted at the end.
# Traces: `jitterlab synth` at 60 Hz through the `wifi` profile with a walking motion (the
# replay benchmarks' trace), ground truth included.
set -euo pipefail
OLD=$1
NEW=$2
DIR=${3:-/work/bench-data/info}
mkdir -p "$DIR"
trap 'rm -f "$DIR"/*.jtr "$DIR"/*.csv "$DIR"/time' EXIT
uptime
run() { # binary args... -> "wall rss_kb"
  /usr/bin/time -f '%e %M' -o "$DIR/time" "$@" > /dev/null 2>&1
  cat "$DIR/time"
}
median() { sort -n | sed -n 2p; }
bench() { # label trace
  local label=$1 t=$2
  for mode in text json; do
    local extra=()
    [ "$mode" = json ] && extra=(--json)
    for bin in OLD NEW; do
      local b=${!bin}
      : > "$DIR/w"; : > "$DIR/r"
      for _ in 1 2 3; do
        read -r w r < <(run "$b" info "$t" "${extra[@]}")
        echo "$w" >> "$DIR/w"; echo "$r" >> "$DIR/r"
      done
      printf '%-28s %-5s %-4s median %7.2f s  %8.0f MB   (runs: %s s)\n' "$label" "$mode" "$bin" \
        "$(median < "$DIR/w")" "$(( $(median < "$DIR/r") / 1024 ))" "$(tr '\n' ' ' < "$DIR/w")"
    done
  done
}
for N in 1000000 10000000; do
  T="$DIR/probe$N.jtr"
  "$NEW" synth -o "$T" --force --rate 60 --duration "$(( (N + 59) / 60 ))s" --profile wifi \
    --motion walk > /dev/null 2>&1
  echo "probe trace, $N snapshots: $(stat -c %s "$T") bytes"
  bench "probe $N" "$T"
  rm -f "$T"
done
# 100,000 streams of two packets each, through `import` (CSV columns stream,seq,send_ms,arrival_ms).
python3 - "$DIR/tiny.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("stream,seq,send_ms,arrival_ms,x\n")
    for tick in range(2):
        for s in range(100_000):
            send = tick * 50.0
            f.write(f"{s},{tick},{send},{send + 3 + (s % 1000) / 1000},1\n")
PY
"$NEW" import "$DIR/tiny.csv" -o "$DIR/tiny.jtr" --force > /dev/null 2>&1
echo "tiny streams trace: $(stat -c %s "$DIR/tiny.jtr") bytes"
bench "100,000 streams x 2" "$DIR/tiny.jtr"
uptime

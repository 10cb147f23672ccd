#!/usr/bin/env bash
# `jitterlab info` on the 1,000,000-packet RTP benchmark capture against `tshark -z rtp,streams`
# and `cat FILE > /dev/null`, side by side, alternating for several rounds; medians printed.
#
#   bench/info.sh [PACKETS] [ROUNDS]     (default 1000000 packets, 5 rounds; needs tshark)
#
# The capture: crates/capture/examples/make_rtp_pcap.rs (one G.711 stream, 172-byte RTP over
# Ethernet/IPv4/UDP, seeded arrival jitter; about 230 MB), as bench/pcap.sh makes it. The
# page cache is warmed first, so every contender reads from memory. Targets (issue 17):
# jitterlab ≥ 30× faster than tshark, and within 3× of cat.
#
# Environment: JITTERLAB=BINARY (default: target/release/jitterlab, built first), OLD=BINARY
# (another build, timed in the same rounds, its output checked equal),
# BENCH_DATA=DIR for the capture (default: a temporary directory, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
ROUNDS=${2:-5}
nice -n 10 cargo build --release -q --example make_rtp_pcap -p jitterlab-capture
if [ -z "${JITTERLAB:-}" ]; then
  nice -n 10 cargo build --release -q -p jitterlab
  J=target/release/jitterlab
else
  J=$JITTERLAB
fi
command -v tshark > /dev/null || { echo "bench/info.sh: tshark is not installed (apt-get install tshark)" >&2; exit 2; }
DIR=$(mktemp -d "${BENCH_DATA:-${TMPDIR:-/tmp}}/info.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
P="$DIR/rtp.pcap"
target/release/examples/make_rtp_pcap "$P" "$N"
cat "$P" > /dev/null
echo "capture: $(stat -c %s "$P") bytes, $N packets"
echo "load: $(uptime)"
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.4f}')" "$@"; }
: > "$DIR/rows"
for r in $(seq 1 "$ROUNDS"); do
  T0=$(now); cat "$P" > /dev/null; T1=$(now)
  $J info --json "$P" > "$DIR/info.json"; T2=$(now)
  tshark -n -r "$P" -q -o rtp.heuristic_rtp:TRUE -z rtp,streams > "$DIR/tshark.txt"; T3=$(now)
  C=$(secs "$T0" "$T1"); I=$(secs "$T1" "$T2"); S=$(secs "$T2" "$T3")
  O=nan
  if [ -n "${OLD:-}" ]; then
    T4=$(now); "$OLD" info --json "$P" > "$DIR/info-old.json"; O=$(secs "$T4" "$(now)")
    cmp -s "$DIR/info.json" "$DIR/info-old.json" || echo "warning: the old binary's info differs" >&2
  fi
  echo "$r $C $I $S $O" >> "$DIR/rows"
  echo "round $r: cat $C s | jitterlab info $I s | tshark rtp,streams $S s | old binary $O s"
done
python3 - "$DIR/rows" <<'PY'
import statistics, sys
rows = [[float(x) for x in line.split()] for line in open(sys.argv[1])]
med = lambda i: statistics.median(r[i] for r in rows)
cat, info, tshark = med(1), med(2), med(3)
vs_tshark = statistics.median(r[3] / r[2] for r in rows)
vs_cat = statistics.median(r[2] / r[1] for r in rows)
print(f"median of {len(rows)} rounds: cat {cat:.4f} s, jitterlab info {info:.4f} s, tshark {tshark:.4f} s")
print(f"jitterlab vs tshark: {vs_tshark:.1f}× faster (per-round median; target ≥ 30×); "
      f"jitterlab vs cat: {vs_cat:.1f}× slower (target ≤ 3×)")
if rows[0][4] == rows[0][4]:
    print(f"old binary: median {med(4):.4f} s ({statistics.median(r[3] / r[4] for r in rows):.1f}× faster than tshark)")
PY
grep -A3 "SSRC" "$DIR/tshark.txt" | head -4
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["streams"][0]; print("jitterlab:", d["packets"], "packets;", {k: s.get(k) for k in ("ssrc", "packets", "lost")})' "$DIR/info.json" || true

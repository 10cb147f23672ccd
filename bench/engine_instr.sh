#!/usr/bin/env bash
# The replay engine's own cost in instructions (valgrind callgrind), to show a change elsewhere
# does not regress it: instructions per frame of `Replay::metrics`, fixed delay, metrics path,
# from the difference between a 400,000- and a 200,000-packet run of
# crates/replay/examples/speed.rs (as in BENCHMARKS.md, "After the re-housing").
#
#   bench/engine_instr.sh [OLD_SPEED_BINARY]
#
# Builds the example (release profile: symbols are kept, which is all callgrind's toggle
# needs); with OLD_SPEED_BINARY (the same example built at another commit), both are counted.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind > /dev/null || { echo "bench/engine_instr.sh: valgrind is not installed" >&2; exit 2; }
nice -n 10 cargo build --release -q -p jitterlab-replay --example speed
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
count() { # BINARY PACKETS -> instructions inside Replay::metrics
  valgrind --tool=callgrind --callgrind-out-file="$DIR/cg.out" --toggle-collect='*Replay::metrics*' \
    "$1" fixed:delay=100ms "$2" 1 > /dev/null 2> "$DIR/cg.err"
  grep -o 'Collected : [0-9]*' "$DIR/cg.err" | grep -o '[0-9]*'
}
for bin in ${1:-} target/release/examples/speed; do
  A=$(count "$bin" 200000)
  B=$(count "$bin" 400000)
  python3 -c "import sys; a, b = int(sys.argv[2]), int(sys.argv[3]); print(f'{sys.argv[1]}: {a:,} instructions at 200,000 packets, {b:,} at 400,000: {(b - a) / 200000:.1f} per frame (one frame per packet at 60 Hz)')" "$bin" "$A" "$B"
done

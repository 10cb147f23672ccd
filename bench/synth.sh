#!/usr/bin/env bash
# Generating 1,000,000 synthetic packets (target: under 1 s), written to a trace file.
# Usage: bench/synth.sh [PROFILE]   (run from the repository root)
set -euo pipefail
profile="${1:-wifi}"
cargo build --release --quiet
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for i in 1 2 3; do
  /usr/bin/time -f "run $i: %e s wall, %M KB peak RSS" \
    target/release/jitterlab synth -o "$out/big-$i.jtr" --rate 1000 --duration 1000s --profile "$profile" --seed "$i"
done
ls -l "$out"/big-1.jtr | awk '{print "trace size:", $5, "bytes"}'

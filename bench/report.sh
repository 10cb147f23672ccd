#!/usr/bin/env bash
# Render benchmark: the full report of a 1,000,000-packet trace (3 configurations and a sweep's
# Pareto figure and heat map), wall time and peak RSS.
#
#   bench/report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
J=target/release/jitterlab
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
$J synth -o "$DIR/big.jtr" --rate 60 --duration 16667s --profile wifi --motion walk --seed 1 2> /dev/null
$J sweep "$DIR/big.jtr" --sweep 'fixed:delay=50..250ms/50ms,max_gap=120ms|250ms' -q -o "$DIR/rows.parquet" 2> /dev/null > /dev/null
for i in 1 2 3; do
  rm -rf "$DIR/report"
  /usr/bin/time -f "run $i: %e s wall, %M KB peak RSS" $J report "$DIR/big.jtr" \
    --policy fixed:delay=100ms --policy fixed:delay=150ms --policy jitter \
    --sweep "$DIR/rows.parquet" -o "$DIR/report" -q > /dev/null
done

#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600) on nightly, one after another, then
# minimises each corpus. Prints one summary line per target: executions and crashes.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-600}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
mkdir -p logs
for t in "${targets[@]}"; do
    log=logs/$t.log
    status=0
    cargo +nightly fuzz run "$t" -- -max_total_time="$secs" -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 >"$log" 2>&1 || status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    crashes=$(ls artifacts/"$t" 2>/dev/null | wc -l)
    echo "$t: ${secs}s, $execs executions, exit $status, $crashes artifacts"
    cargo +nightly fuzz cmin "$t" >>"$log" 2>&1 || true
done

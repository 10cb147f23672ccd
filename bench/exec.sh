#!/bin/sh
# External-policy throughput (`--policy exec:CMD`): 1M packets through a trivial child in Rust
# (crates/replay/examples/exec_newest.rs with serde; exec_newest_raw.rs parsing MessagePack by
# hand), Python (examples/external/trivial_newest.py) and Node
# (examples/external/trivial_newest.mjs), over JSON Lines and MessagePack, with and without the
# values, protocol and pipes included. Figures in BENCHMARKS.md.
#
# First all of them side by side, round robin, RUNS times each (default 3): the median wall
# time, packets per second and CPU seconds of both processes (exec_throughput); then the
# criterion bench, its arguments passed on (a name filter: `bench/exec.sh trivial_rust`).
# Set EXEC_CRITERION=0 to skip the criterion part.
set -eu
cd "$(dirname "$0")/.."
nice -n 10 cargo build --release -q -p jitterlab-replay --example exec_newest --example exec_newest_raw \
  --example exec_throughput
rust=target/release/examples/exec_newest
raw=target/release/examples/exec_newest_raw
py="python3 examples/external/trivial_newest.py"
js="node examples/external/trivial_newest.mjs"
policies="exec:$rust|exec(values=false):$rust|exec(format=msgpack):$rust|exec(format=msgpack,values=false):$rust"
policies="$policies|exec(format=msgpack):$raw|exec(format=msgpack,values=false):$raw"
if command -v python3 > /dev/null; then
  policies="$policies|exec:$py|exec(values=false):$py"
  if python3 -c "import msgpack" 2> /dev/null; then
    policies="$policies|exec(format=msgpack):$py|exec(format=msgpack,values=false):$py"
  else
    echo "skipped the Python child over MessagePack: pip install msgpack" >&2
  fi
fi
if command -v node > /dev/null; then
  policies="$policies|exec:$js|exec(values=false):$js"
fi
echo "load before: $(uptime)"
IFS='|'
# shellcheck disable=SC2086
target/release/examples/exec_throughput "${RUNS:-3}" $policies
unset IFS
echo "load after: $(uptime)"
if [ "${EXEC_CRITERION:-1}" != 0 ]; then
  cargo bench -q -p jitterlab-replay --bench exec -- "$@"
  echo "load after criterion: $(uptime)"
fi

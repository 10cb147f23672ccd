#!/bin/sh
# External-policy throughput (`--policy exec:CMD`): 1M packets through a trivial child in Rust
# (crates/replay/examples/exec_newest.rs) and in Node (examples/external/trivial_newest.mjs),
# protocol and pipes included. Figures in BENCHMARKS.md.
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q -p jitterlab-replay --example exec_newest
cargo bench -q -p jitterlab-replay --bench exec -- "$@"

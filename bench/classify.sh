#!/usr/bin/env bash
# What judging flows costs `jitterlab info`: the 1,000,000-packet RTP benchmark capture (about
# 230 MB, crates/capture/examples/make_rtp_pcap.rs) read by a binary built before flow
# classification and by this one, in alternating rounds (wall time, page cache warm), plus
# instruction counts under callgrind (repeatable whatever else the machine does).
#
#   bench/classify.sh OLD_BINARY [ROUNDS] [PACKETS]
#
# OLD_BINARY: `jitterlab` built from a commit before flow classification, e.g.
#   git worktree add /tmp/old e742400 && cargo build --release --manifest-path /tmp/old/Cargo.toml
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: bench/classify.sh OLD_BINARY [ROUNDS] [PACKETS]}
ROUNDS=${2:-7}
N=${3:-1000000}
cargo build --release -q --bin jitterlab
cargo build --release -q --example make_rtp_pcap -p jitterlab-capture
NEW=target/release/jitterlab
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
target/release/examples/make_rtp_pcap "$DIR/rtp.pcap" "$N"
cat "$DIR/rtp.pcap" > /dev/null
t() { /usr/bin/time -f "%e %M" "$@" 2>&1 > /dev/null | tail -1; }
# The same figures from both (the old binary has no flows, so compare the streams' keys).
"$OLD" info --json "$DIR/rtp.pcap" | python3 -c 'import json,sys; s=json.load(sys.stdin)["streams"][0]; print("old:", s["packets"], s["lost"], s["jitter_ms"]["mean"])'
"$NEW" info --json "$DIR/rtp.pcap" | python3 -c 'import json,sys; s=json.load(sys.stdin)["streams"][0]; print("new:", s["packets"], s["lost"], s["jitter_ms"]["mean"], s["protocol"])'
for i in $(seq "$ROUNDS"); do
  echo "round $i: old $(t "$OLD" info --json "$DIR/rtp.pcap") | new $(t "$NEW" info --json "$DIR/rtp.pcap") | new --decoder rtp $(t "$NEW" info --json --decoder rtp "$DIR/rtp.pcap")   (s, KB peak)"
done
if command -v valgrind > /dev/null; then
  ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 > /dev/null | sed -n 's/.*Collected : //p'; }
  echo "instructions: old $(ir "$OLD" info --json "$DIR/rtp.pcap") | new $(ir "$NEW" info --json "$DIR/rtp.pcap") | new --decoder rtp $(ir "$NEW" info --json --decoder rtp "$DIR/rtp.pcap")"
fi

#!/usr/bin/env bash
# pcap import + info against tshark and cat, side by side on one 1,000,000-packet RTP capture
# (about 230 MB, made by crates/capture/examples/make_rtp_pcap.rs), and trace size vs pcap size.
#
#   bench/pcap.sh [PACKETS]          (default 1000000; needs tshark: apt-get install tshark)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
cargo build --release -q
cargo build --release -q --example make_rtp_pcap -p jitterlab-capture
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
target/release/examples/make_rtp_pcap "$DIR/rtp.pcap" "$N"
cat "$DIR/rtp.pcap" > /dev/null   # warm the page cache for every contender
t() { /usr/bin/time -f "%e" "$@" 2>&1 > /dev/null | tail -1; }
echo "capture: $(stat -c %s "$DIR/rtp.pcap") bytes, $N packets"
for i in 1 2 3; do
  echo "run $i: cat $(t cat "$DIR/rtp.pcap") s | dd bs=1M $(t dd if="$DIR/rtp.pcap" of=/dev/null bs=1M) s" \
       "| jitterlab info $(t target/release/jitterlab info --json "$DIR/rtp.pcap") s" \
       "| tshark rtp,streams $(t tshark -n -r "$DIR/rtp.pcap" -q -o rtp.heuristic_rtp:TRUE -z rtp,streams) s"
done
target/release/jitterlab import "$DIR/rtp.pcap" -o "$DIR/rtp.jtr" 2> /dev/null
echo "trace: $(stat -c %s "$DIR/rtp.jtr") bytes for the same packets with full payloads"

#!/usr/bin/env bash
# Playout sweep throughput (issue 16's target: >= 10 M packet-configurations per second on
# 2 cores for `fixed` and `gstreamer`), over the shared real calls, three alternating runs, and
# the real rtpjitterbuffer's own speed on one of them for comparison (one latency, one core).
#
#   bench/playout.sh [BINARY]        (default: target/release/jitterlab; build it first)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/jitterlab}
DATA=${JITTERLAB_SHARED_DATA:-$(cd .. && pwd)/shared/data}/pcap
CALLS=("$DATA/saghul-sipp-scenarios_g711a.pcap" "$DATA/saghul-sipp-scenarios_g722.pcap"
  "$DATA/sipp_g711a.pcap" "$DATA/wiresharkwiki_sip-rtp-opus.pcap" "$DATA/ndpi_KakaoTalk_talk.pcap"
  "$DATA/wiresharkwiki_nb6-telephone.pcap" "$DATA/wiresharkwiki_sip-rtp-g726.pcap")
for run in 1 2 3; do
  echo "run $run"
  "$BIN" sweep "${CALLS[@]}" --playout --sweep "fixed:delay=0ms..1000ms/0.1ms" -q 2>&1 | grep playouts
  if "$BIN" replay "${CALLS[0]}" --playout --policy gstreamer --json > /dev/null 2>&1; then
    "$BIN" sweep "${CALLS[@]}" --playout --sweep "gstreamer:latency=0ms..1000ms/1ms" -q 2>&1 | grep playouts
  fi
done
GST=../shared/tools/gst_jitterbuffer.py
# The peer runs on the system Python, where python3-gi is installed (its shebang).
PY=${PYTHON:-/usr/bin/python3}
if [ -x "$PY" ] && [ -f "$GST" ] && "$PY" -c "import gi" 2> /dev/null; then
  packets=$("$BIN" info "${CALLS[0]}" --json | python3 -c "import json,sys; print(sum(s['packets'] for s in json.load(sys.stdin)['streams']))")
  ssrc=$("$BIN" info "${CALLS[0]}" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['streams'][0]['ssrc'])")
  start=$(date +%s.%N)
  "$PY" "$GST" "${CALLS[0]}" --ssrc "$ssrc" --latency 200 --summary > /dev/null
  end=$(date +%s.%N)
  python3 -c "print(f'real rtpjitterbuffer (gst_jitterbuffer.py, one latency, one stream of $packets packets in total): {$packets / ($end - $start) / 1e6:.3f} M packets/s')"
fi

// The driver of bench/seed_js.sh: seed 000's SnapshotBuffer (its class, as printed, is put in
// front of this file by the script, from examples/external/seed000_snapshot_buffer.mjs) fed a
// trace's arrivals in memory, push and sample at 60 fps, no I/O inside the timed loop.
//
//   node LOOP.mjs PACKETS.csv [PASSES]
//
// PACKETS.csv is `jitterlab export TRACE --packets -o PACKETS.csv` of the same trace jitterlab
// replays: its `received` rows (arrival order) give each snapshot's tick (`sequence`), send time
// (`send_ns`) and arrival (`arrival_ns`). They are parsed into typed arrays before any timing.
// Frames run every 1/60 s from the first arrival to the last; each frame first pushes every
// packet that has arrived by then, then samples at the frame's time on the sender's clock (the
// trace's smallest arrival − send taken as the clock offset, the hindsight mapping), as the
// seed's probe does with `now`. Times are integer nanoseconds in doubles (exact), delay 100 ms,
// max gap 120 ms, capacity 8 (the class's own constant), as `jitterlab replay --policy
// fixed:delay=100ms,max_gap=120ms,capacity=8`.
//
// Prints one line per pass: `pass N: SECONDS s PACKETS packets FRAMES frames MPPS M packets/s`
// and a checksum of what the buffer returned (so no work can be optimised away); the script
// takes the best pass of each run (the JIT warm), which favours the peer.
import { readFileSync } from 'node:fs';

const [path, passesArg] = process.argv.slice(2);
const passes = Number(passesArg ?? 3);
const text = readFileSync(path, 'utf8');
let lineEnd = text.indexOf('\n');
const names = text.slice(0, lineEnd).trim().split(',');
const col = (name) => {
  const i = names.indexOf(name);
  if (i < 0) throw new Error(`${path}: no column ${name} (columns: ${names.join(',')})`);
  return i;
};
const [iSeq, iSend, iArrival, iKind] = ['sequence', 'send_ns', 'arrival_ns', 'kind'].map(col);
let seqs = new Float64Array(1 << 20);
let sends = new Float64Array(1 << 20);
let arrivals = new Float64Array(1 << 20);
let n = 0;
for (let start = lineEnd + 1; start < text.length; start = lineEnd + 1) {
  lineEnd = text.indexOf('\n', start);
  if (lineEnd < 0) lineEnd = text.length;
  const f = text.slice(start, lineEnd).split(',');
  if (f.length < names.length || f[iKind] !== 'received' || f[iSend] === '') continue;
  if (n === seqs.length) {
    const grow = (a) => { const b = new Float64Array(a.length * 2); b.set(a); return b; };
    seqs = grow(seqs); sends = grow(sends); arrivals = grow(arrivals);
  }
  seqs[n] = Number(f[iSeq]);
  sends[n] = Number(f[iSend]);
  arrivals[n] = Number(f[iArrival]);
  n++;
}
if (n === 0) throw new Error(`${path}: no received packets with send times`);
let offset = Infinity;
for (let i = 0; i < n; i++) offset = Math.min(offset, arrivals[i] - sends[i]);
const frameNs = 1e9 / 60;

function pass() {
  const buffer = new SnapshotBuffer(100e6, 120e6);
  let next = 0;
  let frames = 0;
  let interpolated = 0;
  let held = 0;
  let empty = 0;
  let sum = 0;
  const last = arrivals[n - 1];
  for (let t = arrivals[0]; t <= last; t += frameNs) {
    while (next < n && arrivals[next] <= t) {
      buffer.push({ tick: seqs[next], timeMs: sends[next], value: seqs[next] });
      next++;
    }
    const s = buffer.sample(t - offset);
    frames++;
    if (s.value === null) empty++;
    else {
      if (s.mode === 'interpolate') interpolated++;
      else held++;
      sum += s.value;
    }
  }
  return { frames, interpolated, held, empty, sum };
}

for (let p = 1; p <= passes; p++) {
  const t0 = process.hrtime.bigint();
  const r = pass();
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(
    `pass ${p}: ${secs.toFixed(4)} s ${n} packets ${r.frames} frames ` +
      `${(n / secs / 1e6).toFixed(3)} M packets/s ` +
      `(interpolated ${r.interpolated}, held ${r.held}, empty ${r.empty}, checksum ${r.sum})`,
  );
}

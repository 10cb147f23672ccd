// Seed 000's SnapshotBuffer (../shared/seeds/000_…: capacity 8, delay 100 ms, max gap 120 ms),
// as printed, driven by jitterlab over the external-policy protocol (docs/external-policy.md):
//   jitterlab replay TRACE --policy 'exec(max_delay=100ms):node examples/external/seed000_snapshot_buffer.mjs'
// Times on the wire are integer nanoseconds, so the buffer is built with 100e6 and 120e6: its
// arithmetic is the same whatever the unit (and exact in a double).
import { createInterface } from 'node:readline';

// ---- seed 000, as printed ----
class SnapshotBuffer {
  constructor(delayMs, maxGapMs) {
    this.delayMs = delayMs;
    this.maxGapMs = maxGapMs;
    this.items = [];
  }

  push(snapshot) {
    if (this.items.some(x => x.tick === snapshot.tick)) return false;
    this.items.push(snapshot);
    this.items.sort((a, b) => a.timeMs - b.timeMs);
    if (this.items.length > 8) this.items.shift();
    return true;
  }

  sample(nowMs) {
    const target = nowMs - this.delayMs;
    if (this.items.length === 0) {
      return { mode: 'hold', value: null };
    }
    const right = this.items.findIndex(x => x.timeMs >= target);
    if (right === -1) {
      return { mode: 'hold', value: this.items.at(-1).value };
    }
    if (right === 0) {
      return { mode: 'hold', value: this.items[0].value };
  }
  const a = this.items[right - 1];
  const b = this.items[right];
  const gap = b.timeMs - a.timeMs;
  if (gap > this.maxGapMs) {
    return { mode: 'hold', value: a.value };
  }
  const t = (target - a.timeMs) / gap;
  return {
    mode: 'interpolate',
    value: a.value + (b.value - a.value) * t,
    alpha: t
  };
}
}
// ---- end of seed 000 ----

const delay = 100e6;
const buffer = new SnapshotBuffer(delay, 120e6);
const counters = { inserted: 0, duplicates: 0, evicted: 0 };
// Each snapshot's value is the packet's id: a held value names the packet held, and
// jitterlab computes the shown values from the pair and alpha.
let hello = null;
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  // The first line is jitterlab's hello; this child speaks JSON Lines only.
  if (hello === null) {
    hello = JSON.parse(line);
    if (hello.format !== 'json') throw new Error(`this child speaks JSON Lines, not ${hello.format}`);
    continue;
  }
  const batch = JSON.parse(line);
  const picks = batch.frames.map(frame => {
    for (const p of frame.push) {
      const full = buffer.items.length === 8;
      if (buffer.push({ tick: p.seq, timeMs: p.send, value: p.id })) {
        counters.inserted++;
        if (full) counters.evicted++;
      } else counters.duplicates++;
    }
    const s = buffer.sample(frame.now);
    if (s.value === null) return { mode: 'empty', delay };
    if (s.mode === 'hold') return { mode: 'hold', from: s.value, delay };
    // The pair the seed interpolated between: the first item at or after the target, and the one before.
    const right = buffer.items.findIndex(x => x.timeMs >= frame.now - delay);
    return { mode: 'interpolate', from: buffer.items[right - 1].value, to: buffer.items[right].value, alpha: s.alpha, delay };
  });
  process.stdout.write(JSON.stringify({ batch: batch.batch, picks, counters }) + '\n');
}

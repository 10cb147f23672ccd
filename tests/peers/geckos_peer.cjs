// Drives the real @geckos.io/snapshot-interpolation package (npm) over a replay's frames, for
// the `geckos` preset's agreement test (crates/replay/tests/geckos_peer.rs).
//
// Usage: node geckos_peer.cjs DIR   (DIR holds node_modules/@geckos.io/snapshot-interpolation)
// Standard input: one JSON document {fps, autoCorrect, frames: [{at, add: [{id, time, x}]}]},
// times in milliseconds. Standard output: one JSON array, per frame null (the library returned
// nothing) or {older, newer, p, x}: the snapshot ids, the percentage and the interpolated x.
'use strict';
const path = require('path');
const dir = process.argv[2];
const { SnapshotInterpolation } = require(
  path.join(dir, 'node_modules', '@geckos.io', 'snapshot-interpolation'));

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  const job = JSON.parse(input);
  // The library reads the client clock through its static Now(): the replay's frame time.
  let clock = 0;
  SnapshotInterpolation.Now = () => clock;
  const si = job.fps ? new SnapshotInterpolation(job.fps, { autoCorrectTimeOffset: job.autoCorrect })
    : new SnapshotInterpolation(undefined, { autoCorrectTimeOffset: job.autoCorrect });
  const out = [];
  for (const frame of job.frames) {
    clock = frame.at;
    for (const s of frame.add) {
      si.snapshot.add({ id: s.id, time: s.time, state: [{ id: 'e', x: s.x }] });
    }
    const r = si.calcInterpolation('x');
    out.push(r ? { older: r.older, newer: r.newer, p: r.percentage, x: r.state[0].x } : null);
  }
  process.stdout.write(JSON.stringify(out));
});

// The trivial external policy of the exec benchmark (crates/replay/benches/exec.rs): holds the
// newest packet by send time, with no delay. Protocol: docs/external-policy.md.
import { createInterface } from 'node:readline';

let newest = null;
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
    for (const p of frame.push) if (newest === null || p.send > newest.send) newest = p;
    return newest === null ? { mode: 'empty', delay: 0 } : { mode: 'hold', from: newest.id, delay: 0 };
  });
  process.stdout.write(JSON.stringify({ batch: batch.batch, picks }) + '\n');
}

/**
 * Run by fsync-floor.ts as its own process: in the folder argv[2], for argv[3] ms, overwrites
 * 8 KiB of a 1 MiB file and fdatasyncs it, timing the pair, then sleeps argv[4] ms; prints
 * [when (epoch ms), took (ms)] of every sample as one JSON array. Synchronous calls, so each is
 * timed alone, and in a process of its own, so they block neither the benchmark's event loop nor
 * its load. The file is unlinked as soon as it is open (writes and flushes work the same on an
 * open file), so nothing is left behind however the process ends.
 */
import { closeSync, fdatasyncSync, openSync, unlinkSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";

const [dir = ".", forMsArg = "0", pauseMsArg = "10"] = process.argv.slice(2);
const PAGE = 8192;
const PAGES = 128;
const file = join(dir, `.fsync-probe-${process.pid}`);
const fd = openSync(file, "w");
unlinkSync(file);
const samples: Array<[number, number]> = [];
try {
  // Allocated and durable first, so each sample rewrites blocks the file already has (as the WAL's
  // preallocated segments are) and flushes data, not new metadata.
  writeSync(fd, Buffer.alloc(PAGE * PAGES), 0, PAGE * PAGES, 0);
  fdatasyncSync(fd);
  const end = performance.now() + Number(forMsArg);
  const page = randomBytes(PAGE);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; performance.now() < end; i++) {
    const t0 = performance.now();
    writeSync(fd, page, 0, PAGE, (i % PAGES) * PAGE);
    fdatasyncSync(fd);
    samples.push([Date.now(), performance.now() - t0]);
    Atomics.wait(pause, 0, 0, Number(pauseMsArg));
  }
} finally {
  closeSync(fd);
}
process.stdout.write(JSON.stringify(samples));

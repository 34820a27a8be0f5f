/**
 * Workspace snapshots (apps/sandbox-broker/src/workspaces/), the three figures issue 29 asks for,
 * each beside a floor measured in the same run:
 * - what a snapshot costs a tool call that changes 1 MiB of a 100 MiB workspace (1,000 files of
 *   100 KiB), from the broker's own "workspace snapshot" log line and as the call's duration with
 *   and without a store; the floor is the same call on a broker without a store that also runs a
 *   bare scan of the tree and a copy of the changed MiB (find + cp), the least any incremental
 *   snapshot does;
 * - restoring that workspace from the local store into a new sandbox after a broker restart (the
 *   broker's "workspace restored" line, and the whole replaced call); the floor is `cp` of the
 *   same chunk files (the same bytes, the same count) from the store into a fresh tmpfs folder;
 * - the store's bytes after 100 sessions of one repository (this repository's tracked files, given
 *   to each sandbox at Provision); the floor is one copy of those files.
 *
 * Real bubblewrap, real Postgres, a `dir:` store in the temporary folder (so the page cache serves
 * both the restore and its floor). Standalone: `npx tsx bench/workspaces.ts` from test/;
 * MH_BENCH_WS_SESSIONS sets the session count (100).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chunkKey, decodeManifest } from "@metaharness/sandbox-broker";
import { LogCapture } from "../support/log-capture.js";
import { provision, run, startTestBroker, type BrokerClient, type RunningBroker } from "../support/sandbox-broker.js";
import { LATENCY_COLUMNS, atMost, latencyCells, ms, type Bench, type BenchReport, type Check, runIfMain } from "./lib/report.js";
import { nowMs, summarize, type Summary } from "./lib/stats.js";

const MiB = 1024 * 1024;
const CHANGES = 40;
const RESTORES = 10;
const SESSIONS = Number(process.env["MH_BENCH_WS_SESSIONS"] ?? 100);
const AT_ONCE = 4;
const DISK = { diskBytes: 192 * MiB, memoryBytes: 64 * MiB };
/** 100 MiB: 10 folders of 100 files of 100 KiB. */
const FILL = "for d in 0 1 2 3 4 5 6 7 8 9; do mkdir -p src/$d; for i in $(seq 0 99); do head -c 102400 /dev/urandom > src/$d/$i; done; done; mkdir -p change";
const change = (i: number): string => `head -c 1048576 /dev/urandom > change/${i % 10}.bin`;
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface LogLine {
  readonly msg?: string;
  readonly duration_ms?: number;
  readonly call_id?: string;
  readonly kind?: string;
}

function logged(capture: LogCapture, msg: string): LogLine[] {
  return capture.lines.flatMap((l) => {
    try {
      const line = JSON.parse(l) as LogLine;
      return line.msg === msg ? [line] : [];
    } catch {
      return [];
    }
  });
}

async function ok(client: BrokerClient, id: string, command: string): Promise<number> {
  const res = await run(client, id, "bash", { command });
  if (res.isError) throw new Error(`${command.slice(0, 60)}: ${res.output}`);
  return res.durationMs;
}

async function bytesUnder(dir: string): Promise<{ bytes: number; files: number }> {
  let bytes = 0;
  let files = 0;
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    bytes += (await stat(join(e.parentPath, e.name))).size;
    files++;
  }
  return { bytes, files };
}

interface SnapshotFigures {
  readonly first: number;
  readonly snapshot: Summary;
  readonly withStore: Summary;
  readonly alone: Summary;
  readonly bare: Summary;
}

/** 1 MiB changed per call, with a store and without (the floor). */
async function snapshots(withStore: RunningBroker, capture: LogCapture, without: RunningBroker): Promise<{ figures: SnapshotFigures; id: string }> {
  const id = await provision(withStore.client, "sesn_bench_ws", DISK);
  const floorId = await provision(without.client, "sesn_bench_ws_floor", DISK);
  await ok(withStore.client, id, FILL);
  const first = logged(capture, "workspace snapshot").at(-1)?.duration_ms ?? Number.NaN;
  await ok(without.client, floorId, FILL);
  const stored: number[] = [];
  const alone: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < CHANGES; i++) {
    stored.push(await ok(withStore.client, id, change(i)));
    alone.push(await ok(without.client, floorId, change(i)));
    bare.push(await ok(without.client, floorId, `${change(i)} && find . -printf '%s %T@ %C@ %i %p\\n' > /dev/null && cp change/${i % 10}.bin /tmp/copy`));
  }
  const lines = logged(capture, "workspace snapshot").slice(-CHANGES);
  if (lines.some((l) => l.kind !== "saved")) throw new Error("a changing call's snapshot was not saved");
  await without.client.release({ sandboxId: floorId, sessionId: "" });
  return {
    id,
    figures: {
      first,
      snapshot: summarize(lines.map((l) => l.duration_ms ?? Number.NaN)),
      withStore: summarize(stored),
      alone: summarize(alone),
      bare: summarize(bare),
    },
  };
}

interface RestoreFigures {
  readonly restore: Summary;
  readonly replacedCall: Summary;
  readonly floor: Summary;
  readonly bytes: number;
  readonly files: number;
}

/** The chunk files of the session's last snapshot, as paths in the store (its listing read as the broker reads it). */
async function lastSnapshotChunks(dir: string, session: string): Promise<{ paths: string[]; bytes: number; files: number }> {
  const manifests = (await readdir(join(dir, "sessions", session))).sort();
  const bytes = await readFile(join(dir, "sessions", session, manifests.at(-1)!));
  const manifest = await decodeManifest(bytes, (hash) => readFile(join(dir, chunkKey(hash))), () => false);
  if (typeof manifest === "string") throw new Error(`the last snapshot of ${session} does not decode: ${manifest}`);
  const hashes = new Set(manifest.entries.flatMap((e) => (e[0] === "f" ? e[5] : [])));
  return { paths: [...hashes].map((h) => join(dir, chunkKey(h))), bytes: manifest.bytes, files: manifest.files };
}

/** A broker restart, then the first call: the sandbox comes back from the store. */
async function restores(
  start: () => Promise<{ broker: RunningBroker; stop: () => Promise<void> }>,
  capture: LogCapture,
  id: string,
  dir: string,
  first: { stop: () => Promise<void> },
): Promise<RestoreFigures> {
  const restore: number[] = [];
  const replaced: number[] = [];
  const floor: number[] = [];
  let stop = first.stop;
  const chunks = await lastSnapshotChunks(dir, "sesn_bench_ws");
  for (let i = 0; i < RESTORES; i++) {
    await stop();
    const next = await start();
    stop = next.stop;
    const t0 = nowMs();
    const res = await run(next.broker.client, id, "bash", { command: "ls src | wc -l" });
    replaced.push(nowMs() - t0);
    if (res.isError || !res.output.includes("was replaced")) throw new Error(`no restore: ${res.output}`);
    restore.push(logged(capture, "workspace restored").at(-1)?.duration_ms ?? Number.NaN);
    // The floor: the same chunk files copied from the store into a fresh tmpfs folder.
    const into = await mkdtemp("/dev/shm/mh-bench-ws-");
    const t1 = nowMs();
    const cp = spawnSync("cp", ["-t", into, ...chunks.paths]);
    floor.push(nowMs() - t1);
    await rm(into, { recursive: true, force: true });
    if (cp.status !== 0) throw new Error(`cp failed: ${cp.stderr.toString()}`);
  }
  await stop();
  return { restore: summarize(restore), replacedCall: summarize(replaced), floor: summarize(floor), bytes: chunks.bytes, files: chunks.files };
}

/** This repository's tracked files (no symlinks), as Provision's files. */
async function repository(): Promise<Array<{ path: string; content: Buffer; mode: number }>> {
  const listed = execFileSync("git", ["ls-files", "-s", "-z"], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * MiB }).split("\0").filter((l) => l !== "");
  const files: Array<{ path: string; content: Buffer; mode: number }> = [];
  for (const line of listed) {
    const [mode, , , path] = line.split(/\s+/, 4) as [string, string, string, string];
    const tab = line.indexOf("\t");
    const name = tab < 0 ? path : line.slice(tab + 1);
    if (mode === "120000") continue;
    try {
      files.push({ path: `repo/${name}`, content: await readFile(join(ROOT, name)), mode: mode === "100755" ? 0o755 : 0o644 });
    } catch {
      // Deleted in the work tree since: not part of the copy.
    }
  }
  return files;
}

interface DedupeFigures {
  readonly sessions: number;
  readonly oneCopy: { bytes: number; files: number };
  readonly afterOne: { chunks: number; manifests: number };
  readonly afterAll: { chunks: number; chunkFiles: number; manifests: number };
  readonly seconds: number;
}

async function dedupe(broker: RunningBroker, dir: string): Promise<DedupeFigures> {
  const files = await repository();
  const oneCopy = { bytes: files.reduce((s, f) => s + f.content.length, 0), files: files.length };
  const session = async (i: number): Promise<void> => {
    const id = await provision(broker.client, `sesn_bench_ws_repo_${i}`, { ...DISK, files });
    await ok(broker.client, id, "true"); // a changing tool: the snapshot after it records the repository
    await broker.client.release({ sandboxId: id, sessionId: "" });
  };
  const t0 = nowMs();
  await session(0);
  const afterOne = { chunks: (await bytesUnder(join(dir, "chunks"))).bytes, manifests: (await bytesUnder(join(dir, "sessions"))).bytes };
  for (let i = 1; i < SESSIONS; i += AT_ONCE) {
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, SESSIONS - i) }, (_, k) => session(i + k)));
  }
  const chunks = await bytesUnder(join(dir, "chunks"));
  const manifests = await bytesUnder(join(dir, "sessions"));
  if (manifests.files !== SESSIONS) throw new Error(`${manifests.files} snapshots for ${SESSIONS} sessions`);
  return { sessions: SESSIONS, oneCopy, afterOne, afterAll: { chunks: chunks.bytes, chunkFiles: chunks.files, manifests: manifests.bytes }, seconds: (nowMs() - t0) / 1000 };
}

async function runBench(): Promise<BenchReport> {
  const dir = await mkdtemp(join(tmpdir(), "mh-bench-ws-"));
  const repoDir = await mkdtemp(join(tmpdir(), "mh-bench-ws-repo-"));
  const capture = new LogCapture();
  const env = { MH_WORKSPACE_STORE: `dir:${dir}`, MH_LOG_LEVEL: "debug" };
  const stored = await startTestBroker(env, {}, capture.logger("sandbox-broker"));
  const bare = await startTestBroker();
  let snap: SnapshotFigures;
  let restore: RestoreFigures;
  let repo: DedupeFigures;
  try {
    const taken = await snapshots(stored, capture, bare);
    snap = taken.figures;
    await bare.stop();
    const again = async (): Promise<{ broker: RunningBroker; stop: () => Promise<void> }> => {
      const broker = await stored.start();
      return { broker, stop: () => broker.handle.stop() };
    };
    restore = await restores(again, capture, taken.id, dir, { stop: () => stored.handle.stop() });
    const deduped = await startTestBroker({ MH_WORKSPACE_STORE: `dir:${repoDir}` });
    try {
      repo = await dedupe(deduped, repoDir);
    } finally {
      await deduped.stop();
    }
  } finally {
    await bare.stop();
    await stored.stop();
    await rm(dir, { recursive: true, force: true });
    await rm(repoDir, { recursive: true, force: true });
  }
  const mib = (b: number): string => (b / MiB).toFixed(2);
  const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}x`;
  const storeAll = repo.afterAll.chunks + repo.afterAll.manifests;
  const checks: Check[] = [
    atMost("restore of a 100 MiB workspace from the local store, p50", restore.restore.p50, 1000, "ms"),
    atMost(`chunk bytes for ${repo.sessions} sessions of one repository, as copies of it`, repo.afterAll.chunks / repo.oneCopy.bytes, 1.05, "copies"),
    atMost(`store bytes (chunks and manifests) for ${repo.sessions} sessions, as copies`, storeAll / repo.oneCopy.bytes, 1.5, "copies"),
  ];
  return {
    name: "workspaces",
    title: "workspace snapshots: cost per tool call, restore, store bytes for many sessions",
    tables: [
      {
        title: `a tool call changing 1 MiB of a 100 MiB workspace (1,000 files of 100 KiB), ${CHANGES} calls; in-broker durations`,
        columns: ["what", ...LATENCY_COLUMNS, "p50 vs floor"],
        rows: [
          ["the snapshot alone (its log line)", ...latencyCells(snap.snapshot), ratio(snap.snapshot.p50, snap.bare.p50 - snap.alone.p50)],
          ["the call with a store (call + snapshot)", ...latencyCells(snap.withStore), ""],
          ["the call without a store", ...latencyCells(snap.alone), ""],
          ["floor: the call + find of the tree + cp of the MiB, no store", ...latencyCells(snap.bare), ""],
        ],
      },
      {
        title: `restore after a broker restart, ${RESTORES} times: ${mib(restore.bytes)} MiB in ${restore.files} files`,
        columns: ["what", ...LATENCY_COLUMNS, "p50 vs floor"],
        rows: [
          ["restore into the new sandbox (its log line)", ...latencyCells(restore.restore), ratio(restore.restore.p50, restore.floor.p50)],
          ["the first call, end to end (start + restore + call)", ...latencyCells(restore.replacedCall), ratio(restore.replacedCall.p50, restore.floor.p50)],
          ["floor: cp of the same chunk files into a fresh tmpfs folder", ...latencyCells(restore.floor), ""],
        ],
      },
      {
        title: `store bytes: ${repo.sessions} sessions of this repository (${repo.oneCopy.files} files), ${ms(repo.seconds)} s`,
        columns: ["what", "MiB", "as copies of the repository"],
        rows: [
          ["floor: one copy of the repository's files", mib(repo.oneCopy.bytes), "1.00"],
          ["after 1 session: chunks (file content and the listing's blocks)", mib(repo.afterOne.chunks), (repo.afterOne.chunks / repo.oneCopy.bytes).toFixed(2)],
          ["after 1 session: its manifest (block names and mtimes)", mib(repo.afterOne.manifests), (repo.afterOne.manifests / repo.oneCopy.bytes).toFixed(2)],
          [`after ${repo.sessions} sessions: chunks (${repo.afterAll.chunkFiles} files)`, mib(repo.afterAll.chunks), (repo.afterAll.chunks / repo.oneCopy.bytes).toFixed(2)],
          [`after ${repo.sessions} sessions: manifests`, mib(repo.afterAll.manifests), (repo.afterAll.manifests / repo.oneCopy.bytes).toFixed(2)],
          [`after ${repo.sessions} sessions: the store`, mib(storeAll), (storeAll / repo.oneCopy.bytes).toFixed(2)],
          [`without dedupe: ${repo.sessions} copies`, mib(repo.oneCopy.bytes * repo.sessions), String(repo.sessions)],
        ],
      },
    ],
    checks,
    notes: [
      `the first snapshot of the 100 MiB workspace (every file read and stored) took ${ms(snap.first)} ms`,
      "the snapshot's floor is the bare row's p50 minus the plain call's (what find + cp add to a call); the store and restore are a dir: store in the temporary folder, served from the page cache",
      "the restore floor copies the chunk files (one per 100 KiB file) with one cp process; the restore also writes directories and modes and checks each chunk's hash",
    ],
    data: { snapshot: snap, restore, repository: repo },
  };
}

export const workspacesBench: Bench = {
  name: "workspaces",
  title: "workspace snapshots: snapshot cost per call, restore time, store bytes for 100 sessions",
  run: runBench,
};

runIfMain(workspacesBench, import.meta.url);

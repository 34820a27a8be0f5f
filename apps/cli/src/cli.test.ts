/**
 * The command line's contracts: exit codes are distinct and all documented in `mh --help`; the
 * local API key is made once and kept private; a deployment is chosen by flag, then MH_URL /
 * MH_API_KEY, then the local `mh dev` default; one mh dev per data directory; the README documents
 * the exit codes as --help does.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEV_URL, resolveTarget } from "./client/connect.js";
import { parseDevArgs } from "./commands/dev.js";
import { EXIT, EXIT_CODE_HELP, exitCodeFor, type Ending } from "./exit-codes.js";
import { ensureDevKey, readDevKey } from "./stack/dev-key.js";
import { LOCK_FILE, lockDataDir } from "./stack/dev-lock.js";
import { USAGE } from "./usage.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "mh-cli-test-"));
  dirs.push(d);
  return d;
}

describe("exit codes", () => {
  it("are distinct, and each is in mh --help", () => {
    const codes = Object.values(EXIT);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(EXIT_CODE_HELP).toMatch(new RegExp(`^  ${code}\\s`, "m"));
    expect(USAGE).toContain(EXIT_CODE_HELP);
  });

  it("tell the endings of a run apart", () => {
    const endings: Ending[] = ["end_turn", "requires_action", "budget_reached", "retries_exhausted", "interrupted", "refusal"];
    expect(new Set(endings.map(exitCodeFor)).size).toBe(endings.length);
    expect(exitCodeFor("end_turn")).toBe(0);
    expect(exitCodeFor("interrupted")).toBe(130);
  });
});

describe("the local API key", () => {
  it("is created once, readable by its owner only, and kept", async () => {
    const dir = join(await tempDir(), "dev");
    const first = await ensureDevKey(dir);
    expect(first.created).toBe(true);
    expect(first.key).toMatch(/^mh-local-[A-Za-z0-9_-]{32}$/);
    expect((await stat(first.path)).mode & 0o777).toBe(0o600);
    const again = await ensureDevKey(dir);
    expect(again).toEqual({ key: first.key, path: first.path, created: false });
    expect(await readDevKey(dir)).toBe(first.key);
  });
});

describe("choosing the deployment", () => {
  it("prefers flags, then MH_URL / MH_API_KEY, then the local mh dev", async () => {
    const dir = await tempDir();
    const { key } = await ensureDevKey(dir);
    expect(await resolveTarget({}, { MH_DEV_DIR: dir })).toEqual({ url: DEV_URL, apiKey: key });
    expect(await resolveTarget({}, { MH_DEV_DIR: dir, MH_URL: "http://h:1/", MH_API_KEY: "k".repeat(20) })).toEqual({ url: "http://h:1", apiKey: "k".repeat(20) });
    expect(await resolveTarget({ url: "http://f:2", apiKey: "f".repeat(20) }, { MH_DEV_DIR: dir, MH_URL: "http://h:1" })).toEqual({
      url: "http://f:2",
      apiKey: "f".repeat(20),
    });
  });

  it("says where the key would be when there is none", async () => {
    const dir = await tempDir();
    await expect(resolveTarget({}, { MH_DEV_DIR: join(dir, "none") })).rejects.toThrow(/--api-key.*MH_API_KEY/);
  });
});

describe("mh dev options", () => {
  it("has defaults and checks what it is given", () => {
    expect(parseDevArgs([], {})).toEqual({ host: "127.0.0.1", port: 8080, dataDir: join(".local", "dev"), memory: false, logLevel: "error" });
    expect(parseDevArgs(["--port", "0", "--memory", "--data-dir", "/x"], {})).toMatchObject({ port: 0, memory: true, dataDir: "/x" });
    expect(() => parseDevArgs(["--port", "70000"], {})).toThrow(/--port/);
    expect(() => parseDevArgs(["--log-level", "loud"], {})).toThrow(/--log-level/);
  });
});

describe("the README", () => {
  it("documents the exit codes as mh --help prints them", async () => {
    const readme = await readFile(new URL("../README.md", import.meta.url), "utf8");
    expect(readme).toContain(EXIT_CODE_HELP);
  });
});

describe("the data directory lock", () => {
  it("refuses a directory a live mh dev holds, and takes over a stale one", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, LOCK_FILE), `${process.ppid}\n`);
    await expect(lockDataDir(dir)).rejects.toThrow(/another mh dev \(pid \d+\) uses/);
    await writeFile(join(dir, LOCK_FILE), "999999999\n");
    const unlock = await lockDataDir(dir);
    expect((await readFile(join(dir, LOCK_FILE), "utf8")).trim()).toBe(String(process.pid));
    await unlock();
    await expect(stat(join(dir, LOCK_FILE))).rejects.toThrow(/ENOENT/);
  });
});

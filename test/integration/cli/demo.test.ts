/**
 * `mh demo` as the README runs it, as its own process on the embedded default (PGlite in memory,
 * the in-process bus, the real bubblewrap broker and credential vault proxy, the offline model): a
 * local git server serves the project; the broker clones it into the sandbox through the proxy;
 * the agent's text arrives token by token, every tool call of the fix is shown with its result,
 * the fix is pushed, and the push is on the server: `mh demo` shows it, and this test reads the
 * repository it kept (--repo-dir) with git itself. The exit code says the turn ended normally.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { boundariesWithin, mh } from "./mh.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe("mh demo", () => {
  it("clones the repository into a real sandbox, fixes the bug and pushes, streamed live", async () => {
    const started = Date.now();
    const repoDir = await mkdtemp(join(tmpdir(), "mh-demo-repo-"));
    dirs.push(repoDir);
    const demo = mh(["demo", "--repo-dir", repoDir]);
    const code = await demo.exited;
    const out = demo.stdout();
    expect(code, `${out}\n${demo.stderr()}`).toBe(0);

    expect(out).toMatch(/embedded stack ready in .*: PGlite in memory, in-process bus, bubblewrap sandboxes, offline model/);
    expect(out).toMatch(/^◆ sandbox sbx_\S+ ready \(bubblewrap, /m);
    // The repository was cloned at provisioning; origin reaches it through the proxy, without a token.
    expect(out).toMatch(/│ [0-9a-f]{7} stats: sum, mean, max/);
    expect(out).toMatch(/│ mh::http:\/\/127\.0\.0\.1:\d+\/stats\.git$/m);
    expect(out).not.toMatch(/^✓ write /m);
    // The tool calls, each with its duration, and what they printed.
    expect(out).toMatch(/^✗ bash  cd \/workspace\/stats && bash test\.sh  [\d.]+ m?s$/m);
    expect(out).toContain("│ FAIL max -7 -2 -5: expected -2, got 0");
    expect(out).toMatch(/^✓ grep  \^max\\\(\\\) in stats /m);
    expect(out).toMatch(/^✓ edit  stats\/lib\/stats\.sh /m);
    expect(out).toContain("│ 4 passed, 0 failed");
    expect(out).toMatch(/^✓ bash  cd \/workspace\/stats && git commit .* git push /m);
    expect(out).toMatch(/the fix is pushed to the repository \([0-9a-f]{7} max: start from the first value/);
    expect(out).toMatch(/^── end_turn · 7 tool calls \(1 failed\) · 8 model requests · tokens in [\d,]+ .*· out [\d,]+ (?:· ≈ \$[\d.]+ )?· [\d.]+ s$/m);

    // The push landed: mh demo shows the server's side, and the kept repository says the same.
    expect(out).toMatch(/^── pushed: main of http:\/\/127\.0\.0\.1:\d+\/stats\.git, on the git server's side/m);
    expect(out).toMatch(/^ {2}Author: mh demo <demo@metaharness\.invalid>$/m);
    expect(out).toMatch(/^ {3}lib\/stats\.sh \| 2 \+-$/m);
    const git = (...args: string[]) => execFileSync("git", ["--git-dir", join(repoDir, "stats.git"), ...args], { encoding: "utf8" });
    expect(git("log", "--format=%s", "main").trim().split("\n")).toEqual(["max: start from the first value, so lists of negatives work", "stats: sum, mean, max"]);
    expect(git("show", "main:lib/stats.sh")).toContain("local best=$1 n");

    // Tokens as they come: the explanation reached stdout in many pieces, not as one block.
    expect(boundariesWithin(demo.chunks, "max() starts its running maximum at 0 instead of at its first argument")).toBeGreaterThanOrEqual(3);
    expect(demo.stderr()).toBe("");
    process.stdout.write(`mh demo: ${Date.now() - started} ms wall\n`);
  }, 180_000);

  it("refuses a --repo-dir that already holds the demo's repository", async () => {
    const repoDir = await mkdtemp(join(tmpdir(), "mh-demo-repo-"));
    dirs.push(repoDir);
    execFileSync("git", ["init", "-q", "--bare", join(repoDir, "stats.git")]);
    const demo = mh(["demo", "--repo-dir", repoDir]);
    expect(await demo.exited).toBe(2);
    expect(demo.stderr()).toMatch(/--repo-dir: .*stats\.git exists already/);
  });
});

/**
 * The demo's project really has the bug the scenario fixes: its test script, run by bash alone,
 * fails as written and passes with the fix; and the scenario is one the offline model accepts.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { StepSpec } from "@metaharness/offline-model";
import { afterAll, describe, expect, it } from "vitest";
import { BUG, PROJECT_FILES } from "./demo/project.js";
import { DEMO_SCENARIO, demoScenario } from "./demo/scenario.js";

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function project(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "mh-demo-test-"));
  dirs.push(root);
  for (const f of PROJECT_FILES) {
    await mkdir(dirname(join(root, f.path)), { recursive: true });
    await writeFile(join(root, f.path), f.content);
  }
  return root;
}

async function tests(root: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout } = await run("/bin/bash", ["test.sh"], { cwd: root, env: { PATH: "/usr/bin:/bin" } });
    return { code: 0, output: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, output: e.stdout };
  }
}

describe("the demo project", () => {
  it("fails one test as written, and passes them all with the fix", async () => {
    const root = await project();
    const before = await tests(root);
    expect(before.code).toBe(1);
    expect(before.output).toContain("FAIL max -7 -2 -5: expected -2, got 0");
    expect(before.output).toContain("3 passed, 1 failed");

    const file = join(root, BUG.file);
    const source = await readFile(file, "utf8");
    expect(source.split(BUG.before)).toHaveLength(2);
    await writeFile(file, source.replace(BUG.before, BUG.after));
    const after = await tests(root);
    expect(after).toEqual({ code: 0, output: expect.stringContaining("4 passed, 0 failed") as unknown });
  });
});

describe("the demo scenario", () => {
  it("is a valid offline-model scenario that pushes the fix", () => {
    const scenario = demoScenario();
    expect(scenario.name).toBe(DEMO_SCENARIO);
    expect(scenario.steps.length).toBeGreaterThan(5);
    // It starts from the repository the broker cloned: no project written by the agent.
    const first = scenario.steps[0] as StepSpec;
    expect(first.toolUses?.map((t) => t.input["command"])).toEqual([expect.stringContaining("git log --oneline -3 && git remote get-url origin")]);
  });
});

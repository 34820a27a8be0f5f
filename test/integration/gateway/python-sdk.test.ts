/**
 * The official Python SDK against the gateway: test/python/scenarios.py (agents, environments,
 * sessions, events send/list/stream, vaults and credentials, archive and delete) in the
 * virtualenv infra/python-sdk/up.sh makes (scripts/test-all.sh makes it first and passes its
 * python as MH_PYTHON_SDK; run alone, this file makes it), against a stack started here. While
 * the conformance records are kept (MH_CONFORMANCE_DIR), its requests go through a recording
 * proxy, so what the Python SDK reads is checked against the SDK's types like the rest.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, startStack, type Stack } from "../../support/gateway.js";
import { startRecordingProxy, type RecordingProxy } from "../../conformance/recording-proxy.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

let stack: Stack;
let proxy: RecordingProxy | undefined;
let python: string;

beforeAll(async () => {
  python = process.env["MH_PYTHON_SDK"] ?? (await run("bash", [`${ROOT}infra/python-sdk/up.sh`], { timeout: 300_000 })).stdout.trim();
  stack = await startStack({ scenarios: [defineScenario("hello", [{ text: "Hello from the offline model." }], { onExhausted: "repeat-last" })] });
  proxy = await startRecordingProxy(stack.gateway.url);
}, 360_000);
afterAll(async () => {
  await proxy?.close();
  await stack?.stop();
});

describe("the official Python SDK", () => {
  it("runs the scenarios of the TypeScript SDK's tests", async () => {
    const out = await run(python, [`${ROOT}test/python/scenarios.py`], {
      env: { PATH: process.env["PATH"] ?? "", MH_URL: proxy!.url, MH_API_KEY: KEY_A },
      timeout: 120_000,
    }).catch((err: { stdout?: string; stderr?: string; message: string }) => ({ stdout: err.stdout ?? "", stderr: `${err.stderr ?? ""}\n${err.message}` }));
    // On failure the scenario's traceback is in the message.
    expect(out.stdout, `${out.stdout}\n${out.stderr}`).toMatch(/^python-sdk: 5 passed, 0 failed$/m);
    expect(out.stdout).not.toContain("FAIL");
  });
});

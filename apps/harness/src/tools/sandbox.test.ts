/**
 * SandboxPort against a broker that is away (UNAVAILABLE, as while it restarts): the call is asked
 * again until the broker answers, and becomes a tool error only once the retry window has passed.
 * A sandbox handed to another session (Transfer) is forgotten and the call runs in a new one.
 * The broker here is a client object answering from a script: the subject is the harness's side.
 */
import { MhError } from "@metaharness/errors";
import { SandboxState } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { SandboxPort, type BrokerClient } from "./sandbox.js";

/** A broker whose first `downFor` calls fail UNAVAILABLE; it counts every call. */
function broker(downFor: number): { client: BrokerClient; calls: string[] } {
  const calls: string[] = [];
  const answer = <T>(name: string, value: T): Promise<T> => {
    calls.push(name);
    return calls.length <= downFor ? Promise.reject(new MhError("UNAVAILABLE", "connect ECONNREFUSED")) : Promise.resolve(value);
  };
  const client = {
    listSandboxes: () => answer("listSandboxes", { sandboxes: [{ sandboxId: "sbx_1", state: SandboxState.SANDBOX_STATE_READY, driver: "bubblewrap" }] }),
    execute: () => answer("execute", { output: "hi\n", isError: false, exitCode: 0 }),
  } as unknown as BrokerClient;
  return { client, calls };
}

describe("SandboxPort with a broker that is restarting", () => {
  it("asks again until the broker answers", async () => {
    const b = broker(3);
    const port = new SandboxPort(b.client, "sesn_1", undefined, 10_000);
    const out = await port.execute("bash", { command: "echo hi" }, "call_1", new AbortController().signal);
    expect(out).toEqual({ output: "hi\n", isError: false, exitCode: 0 });
    expect(b.calls).toEqual(["listSandboxes", "listSandboxes", "listSandboxes", "listSandboxes", "execute"]);
  });

  it("is a tool error once the retry window has passed", async () => {
    const b = broker(Number.POSITIVE_INFINITY);
    const port = new SandboxPort(b.client, "sesn_1", undefined, 300);
    const out = await port.execute("bash", { command: "echo hi" }, "call_1", new AbortController().signal);
    expect(out).toEqual({ output: "sandbox error (UNAVAILABLE): connect ECONNREFUSED", isError: true });
    expect(b.calls.length).toBeGreaterThan(1);
  });

  it("stops asking when the turn is cancelled", async () => {
    const b = broker(Number.POSITIVE_INFINITY);
    const port = new SandboxPort(b.client, "sesn_1", undefined, 60_000);
    const stop = new AbortController();
    const pending = port.execute("bash", { command: "echo hi" }, "call_1", stop.signal);
    stop.abort();
    await expect(pending).rejects.toMatchObject({ code: "CANCELLED" });
  });
});

describe("SandboxPort when its sandbox was handed to another session", () => {
  it("forgets it and runs the call in a new sandbox, saying so; the next call goes there", async () => {
    const calls: string[] = [];
    let transferred = false;
    const client = {
      // Once transferred, sbx_1 is listed under the other session only.
      listSandboxes: () => Promise.resolve({ sandboxes: transferred ? [] : [{ sandboxId: "sbx_1", state: SandboxState.SANDBOX_STATE_READY, driver: "bubblewrap" }] }),
      provision: () => {
        calls.push("provision");
        return Promise.resolve({ sandbox: { sandboxId: "sbx_2" }, repositoryFailures: [] });
      },
      execute: (req: { sandboxId: string }) => {
        calls.push(`execute ${req.sandboxId}`);
        // sbx_1 is transferred after the first call: the broker refuses it to this session.
        if (req.sandboxId === "sbx_1" && calls.filter((c) => c === "execute sbx_1").length > 1) transferred = true;
        return transferred && req.sandboxId === "sbx_1"
          ? Promise.reject(new MhError("PERMISSION_DENIED", "sandbox sbx_1 is held by another session, not sesn_1", { field: "session_id" }))
          : Promise.resolve({ output: `ran in ${req.sandboxId}`, isError: false, exitCode: 0 });
      },
    } as unknown as BrokerClient;
    const port = new SandboxPort(client, "sesn_1", undefined, 1_000);
    const signal = new AbortController().signal;
    expect((await port.execute("bash", { command: "true" }, "call_1", signal)).output).toBe("ran in sbx_1");
    expect(await port.execute("bash", { command: "true" }, "call_2", signal)).toEqual({
      output: "[sandbox sbx_1 was handed to another session, with its files; this call ran in a new sandbox]\nran in sbx_2",
      isError: false,
      exitCode: 0,
    });
    expect((await port.execute("bash", { command: "true" }, "call_3", signal)).output).toBe("ran in sbx_2");
    expect(calls).toEqual(["execute sbx_1", "execute sbx_1", "provision", "execute sbx_2", "execute sbx_2"]);
  });
});

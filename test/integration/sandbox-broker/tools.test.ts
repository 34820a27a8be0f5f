/**
 * Every sandbox tool through the real broker and real bubblewrap; Execute's idempotency by
 * call_id; bad tool input and unknown tools are tool results, not gRPC failures.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callId, provision, rejection, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";

let broker: TestBroker;
let sandboxId: string;
const sessionId = "sesn_tools";

beforeAll(async () => {
  broker = await startTestBroker();
  sandboxId = await provision(broker.client, sessionId, {
    files: [
      { path: "README.md", content: Buffer.from("# hello\n"), mode: 0 },
      { path: "bin/hello.sh", content: Buffer.from("#!/bin/sh\necho hello from a script\n"), mode: 0o755 },
    ],
  });
});
afterAll(async () => {
  await broker?.stop();
});

describe("tools", () => {
  it("bash runs in /workspace as the sandbox user, with the provisioned files", async () => {
    const res = await run(broker.client, sandboxId, "bash", { command: "id -u; pwd; cat README.md; ./bin/hello.sh" });
    expect(res.isError).toBe(false);
    expect(res.exitCode).toBe(0);
    expect(res.output).toBe("65534\n/workspace\n# hello\nhello from a script");
  });

  it("bash reports a failing command with its exit code, and keeps cwd and exports across calls", async () => {
    const failing = await run(broker.client, sandboxId, "bash", { command: "echo oops >&2; exit 3" });
    expect(failing).toMatchObject({ isError: true, exitCode: 3, output: "oops" });
    await run(broker.client, sandboxId, "bash", { command: "mkdir -p deep/er && cd deep/er && export GREETING=hi" });
    const later = await run(broker.client, sandboxId, "bash", { command: 'pwd; echo "$GREETING"' });
    expect(later.output).toBe("/workspace/deep/er\nhi");
    const fresh = await run(broker.client, sandboxId, "bash", { command: 'pwd; echo "[$GREETING]"', restart: true });
    expect(fresh.output).toBe("/workspace\n[]");
  });

  it("bash: a background job that redirects its output outlives the call; one holding the output does not", async () => {
    const started = Date.now();
    const daemon = await run(broker.client, sandboxId, "bash", { command: "nohup sleep 300 > /dev/null 2>&1 & echo started" });
    expect(daemon.output).toBe("started");
    const holder = await run(broker.client, sandboxId, "bash", { command: "sleep 200 & echo started too" });
    expect(holder.output).toBe("started too");
    // Neither waited for its sleep (200 s and more): 30 s is a busy machine's margin.
    expect(Date.now() - started).toBeLessThan(30_000);
    const ps = await run(broker.client, sandboxId, "bash", { command: "ps -e --no-headers -o args | grep '^sleep' | sort" });
    expect(ps.output).toBe("sleep 300");
  });

  it("write, read (whole and by lines) and edit", async () => {
    const written = await run(broker.client, sandboxId, "write", { file_path: "src/app.ts", content: "one\ntwo\nthree\n" });
    expect(written).toMatchObject({ isError: false, output: "wrote 14 bytes to src/app.ts" });
    expect((await run(broker.client, sandboxId, "read", { file_path: "src/app.ts" })).output).toBe("one\ntwo\nthree\n");
    expect((await run(broker.client, sandboxId, "read", { file_path: "src/app.ts", view_range: [2, 3] })).output).toBe("two\nthree");
    expect((await run(broker.client, sandboxId, "read", { path: "/workspace/src/app.ts", offset: 2, limit: 1 })).output).toBe("two");
    // Lines past 2^32-1 would wrap around on the way to the helper (2^32+1 read as line 1).
    const wrapped = await run(broker.client, sandboxId, "read", { file_path: "src/app.ts", view_range: [2 ** 32 + 1, 2 ** 32 + 1] });
    expect(wrapped).toMatchObject({ isError: true, output: expect.stringContaining("view_range lines go up to") as unknown });

    const edited = await run(broker.client, sandboxId, "edit", { file_path: "src/app.ts", old_string: "two", new_string: "2" });
    expect(edited).toMatchObject({ isError: false, output: "edited src/app.ts (1 replacement(s))" });
    await run(broker.client, sandboxId, "write", { path: "src/dup.txt", content: "a a a" });
    const ambiguous = await run(broker.client, sandboxId, "edit", { path: "src/dup.txt", old_string: "a", new_string: "b" });
    expect(ambiguous.isError).toBe(true);
    expect(ambiguous.output).toContain("appears 3 times");
    const all = await run(broker.client, sandboxId, "edit", { path: "src/dup.txt", old_string: "a", new_string: "$&b", replace_all: true });
    expect(all.output).toContain("3 replacement(s)");
    expect((await run(broker.client, sandboxId, "read", { path: "src/dup.txt" })).output).toBe("$&b $&b $&b");
  });

  it("glob lists matching files newest first; grep finds lines", async () => {
    await run(broker.client, sandboxId, "bash", {
      command: "mkdir -p g/a/b node_modules/x && echo 'let x = 1' > g/a/b/old.ts && sleep 0.05 && echo 'let y = 2' > g/new.ts && echo z > g/c.md && echo 'let z' > node_modules/x/i.ts",
    });
    const globbed = await run(broker.client, sandboxId, "glob", { pattern: "**/*.ts", path: "g" });
    expect(globbed.output.split("\n")).toEqual(["/workspace/g/new.ts", "/workspace/g/a/b/old.ts"]);
    expect((await run(broker.client, sandboxId, "glob", { pattern: "*.md", path: "g" })).output).toBe("/workspace/g/c.md");
    expect((await run(broker.client, sandboxId, "glob", { pattern: "*.py" })).output).toBe("no matches");

    const grepped = await run(broker.client, sandboxId, "grep", { pattern: "let\\s+[xy]", path: "g" });
    expect(grepped.output.split("\n").sort()).toEqual(["/workspace/g/a/b/old.ts:1:let x = 1", "/workspace/g/new.ts:1:let y = 2"]);
    const files = await run(broker.client, sandboxId, "grep", { pattern: "LET", case_insensitive: true, glob: "*.ts", output_mode: "files_with_matches" });
    expect(files.output.split("\n").sort()).toEqual(["/workspace/g/a/b/old.ts", "/workspace/g/new.ts"]);
    expect((await run(broker.client, sandboxId, "grep", { pattern: "nothing-like-this" })).output).toBe("no matches");
  });

  it("bad input and unknown tools are tool errors the model can read", async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["bash", {}, "bash: command is required"],
      ["bash", { command: 42 }, "bash: command must be a string"],
      ["read", { file_path: "missing.txt" }, "No such file or directory"],
      ["read", { file_path: "src" }, "not a regular file"],
      ["edit", { file_path: "src/app.ts", old_string: "absent", new_string: "x" }, "old_string not found"],
      ["glob", { pattern: "../*" }, '".." is not permitted'],
      ["grep", { pattern: "(" }, "grep:"],
      ["teleport", {}, 'unknown tool "teleport"'],
    ];
    for (const [name, input, message] of cases) {
      const res = await run(broker.client, sandboxId, name, input);
      expect(res.isError, `${name} ${JSON.stringify(input)}`).toBe(true);
      expect(res.output).toContain(message);
    }
  });

  it("an unknown sandbox is NOT_FOUND; a missing call_id is INVALID_ARGUMENT", async () => {
    const missing = await rejection(run(broker.client, "sbx_nope", "bash", { command: "true" }));
    expect(missing.code).toBe("NOT_FOUND");
    const noCall = await rejection(run(broker.client, sandboxId, "bash", { command: "true" }, { callId: "" }));
    expect(noCall).toMatchObject({ code: "INVALID_ARGUMENT", field: "call_id" });
  });
});

describe("idempotency by call_id", () => {
  it("a repeated call returns the first outcome and runs nothing", async () => {
    const id = callId();
    const first = await run(broker.client, sandboxId, "bash", { command: "echo x >> count.txt; wc -l < count.txt" }, { callId: id });
    const again = await run(broker.client, sandboxId, "bash", { command: "echo x >> count.txt; wc -l < count.txt" }, { callId: id });
    expect(first).toMatchObject({ output: "1", replayed: false });
    expect(again).toMatchObject({ output: "1", replayed: true, durationMs: first.durationMs });
    expect((await run(broker.client, sandboxId, "read", { path: "count.txt" })).output).toBe("x\n");
  });

  it("a repeat while the first attempt runs waits for it", async () => {
    const id = callId();
    const input = { command: "sleep 0.3; echo $RANDOM$RANDOM >> runs.txt; cat runs.txt" };
    const [a, b] = await Promise.all([
      run(broker.client, sandboxId, "bash", input, { callId: id }),
      run(broker.client, sandboxId, "bash", input, { callId: id }),
    ]);
    expect(a.output).toBe(b.output);
    expect([a.replayed, b.replayed].sort()).toEqual([false, true]);
    expect(a.output.split("\n")).toHaveLength(1);
  });
});

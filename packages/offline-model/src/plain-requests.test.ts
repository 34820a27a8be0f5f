/**
 * The default scenario without an API key: plain requests become a tool call of a tool the request
 * offers, and its result the answer; anything else an echo that says what the offline model can
 * do. Through the server, with the official SDK, as a harness calls it.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { plainToolUse } from "./plain-requests.js";
import { body, sdk, useOfflineModel, user } from "./testing.js";

const sandboxTools: Anthropic.Tool[] = [
  { name: "bash", input_schema: { type: "object", properties: { command: { type: "string" } } } },
  { name: "read", input_schema: { type: "object", properties: { path: { type: "string" } } } },
];
const workerRead: Anthropic.Tool[] = [{ name: "read", input_schema: { type: "object", properties: { file_path: { type: "string" } } } }];

const server = useOfflineModel();

describe("plain requests", () => {
  it("become the tool call they ask for", () => {
    const cases: Array<[string, unknown]> = [
      ["list the files", { name: "bash", input: { command: "ls -la" } }],
      ["list the files of the sandbox", { name: "bash", input: { command: "ls -la" } }],
      ["Please list the files in /usr/share", { name: "bash", input: { command: "ls -la /usr/share" } }],
      ["ls", { name: "bash", input: { command: "ls -la" } }],
      ["run uname -a", { name: "bash", input: { command: "uname -a" } }],
      ["run the command `echo hi && date`", { name: "bash", input: { command: "echo hi && date" } }],
      ["read /usr/lib/os-release", { name: "read", input: { path: "/usr/lib/os-release" } }],
      ["read README.md", { name: "read", input: { path: "/workspace/README.md" } }],
    ];
    for (const [text, use] of cases) expect(plainToolUse(text, sandboxTools), text).toEqual(use);
    expect(plainToolUse("read notes.txt", workerRead)).toEqual({ name: "read", input: { file_path: "/workspace/notes.txt" } });
  });

  it("are left to words when they name no command, or the tool is not offered", () => {
    for (const text of ["hello there", "run the tests", "read the docs", "fix the failing test", "list\nthe files"]) expect(plainToolUse(text, sandboxTools), text).toBeUndefined();
    expect(plainToolUse("list the files", undefined)).toBeUndefined();
    expect(plainToolUse("run ls", workerRead)).toBeUndefined();
  });

  it("call the tool, then answer with its output, the same way on every resend", async () => {
    const client = sdk(server.get());
    const ask = body([user("run uname -a")], { tools: sandboxTools });
    const first = await client.messages.create(ask);
    expect(first.stop_reason).toBe("tool_use");
    const use = first.content.find((b) => b.type === "tool_use");
    expect(use).toMatchObject({ name: "bash", input: { command: "uname -a" } });
    expect(await client.messages.create(ask)).toEqual(first);

    const answer = await client.messages.create(
      body(
        [
          user("run uname -a"),
          { role: "assistant", content: first.content },
          { role: "user", content: [{ type: "tool_result", tool_use_id: use!.type === "tool_use" ? use!.id : "", content: "Linux sandbox 6.1 x86_64" }] },
        ],
        { tools: sandboxTools },
      ),
    );
    expect(answer.stop_reason).toBe("end_turn");
    expect(answer.content).toEqual([expect.objectContaining({ type: "text", text: "`uname -a` printed:\n\nLinux sandbox 6.1 x86_64" })]);
  });

  it("otherwise echo, saying what works offline and how to reach Claude", async () => {
    const reply = await sdk(server.get()).messages.create(body([user("hello there")], { tools: sandboxTools }));
    const text = reply.content[0]?.type === "text" ? reply.content[0].text : "";
    expect(text).toContain('You said: "hello there"');
    expect(text).toContain('"list the files", "run uname -a" or "read /usr/lib/os-release"; set ANTHROPIC_API_KEY to talk to Claude.');
  });
});

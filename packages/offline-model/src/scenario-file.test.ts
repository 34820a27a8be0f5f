/**
 * Scenarios defined as data: checked where they are written (defineScenario names the bad field),
 * loaded from a JSON file with placeholders or from an ES module with step functions.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MhError } from "@metaharness/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario, type StepSpec } from "./scenario.js";
import { loadScenarioFile } from "./scenario-file.js";
import { startOfflineModel } from "./server.js";
import { body, sdk, user, weatherTool } from "./testing.js";

let dir = "";
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "offline-model-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("defineScenario", () => {
  it.each([
    [[{ text: 1 }], "s.steps[0].text"],
    [[{ toolUses: [{ name: "bad name", input: {} }] }], "s.steps[0].toolUses[0].name"],
    [[{ failFirst: { times: 1, status: 418 } }], "s.steps[0].failFirst.status"],
    [[{ txt: "typo" }], "s.steps[0].txt"],
    [[], "s.steps"],
  ])("rejects %j naming %s", (steps, field) => {
    const err = (() => {
      try {
        defineScenario("s", steps as unknown as StepSpec[]);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(MhError);
    expect((err as MhError).code).toBe("INVALID_ARGUMENT");
    expect((err as MhError).field).toBe(field);
  });
});

describe("scenario files", () => {
  it("loads JSON scenarios whose text can quote the request", async () => {
    const file = join(dir, "scenarios.json");
    await writeFile(
      file,
      JSON.stringify({
        echo: [
          { text: "calling", toolUses: [{ name: "get_weather", input: { city: "{{last_user_text}}" } }] },
          { text: "tool said {{last_tool_result}}" },
        ],
        loop: { steps: [{ text: "again" }], onExhausted: "repeat-last" },
      }),
    );
    const model = await startOfflineModel({ scenarioFile: file });
    try {
      const client = sdk(model);
      const ask = [user("[scenario:echo] Paris")];
      const first = await client.messages.create(body(ask, { tools: [weatherTool] }));
      expect(first.content[1]).toMatchObject({ type: "tool_use", input: { city: "Paris" } });
      const id = first.content[1]?.type === "tool_use" ? first.content[1].id : "";
      const second = await client.messages.create(
        body(
          [...ask, { role: "assistant", content: first.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "rain" }] }],
          { tools: [weatherTool] },
        ),
      );
      expect(second.content[0]).toMatchObject({ text: "tool said rain" });
      const third = await client.messages.create(
        body([user("[scenario:loop] a"), { role: "assistant", content: "again" }, user("b")]),
      );
      expect(third.content[0]).toMatchObject({ text: "again" });
    } finally {
      await model.close();
    }
  });

  it("loads step functions from an ES module", async () => {
    const file = join(dir, "scenarios.mjs");
    await writeFile(file, 'export default { shout: [(ctx) => ({ text: ctx.lastUserText.toUpperCase() })] };\n');
    const [scenario] = await loadScenarioFile(file);
    expect(scenario?.name).toBe("shout");
    expect(typeof scenario?.steps[0]).toBe("function");
  });

  it("reports a bad file with its path", async () => {
    const file = join(dir, "bad.json");
    await writeFile(file, JSON.stringify({ broken: [{ stopReason: "maybe" }] }));
    await expect(loadScenarioFile(file)).rejects.toThrow(`${file}: broken.steps[0].stopReason: must be one of`);
  });
});

/**
 * An agent's context management from its metadata: compaction by default, a named strategy and
 * a window as given, and a bad value refused naming its key.
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors/api-error.js";
import { contextConfig } from "./context-config.js";

describe("contextConfig", () => {
  it("defaults to compaction with the model's window", () => {
    expect(contextConfig({})).toEqual({ contextStrategy: "compaction", contextWindowTokens: 0 });
  });

  it("takes a strategy and a window from the documented keys", () => {
    expect(contextConfig({ "mh.context_strategy": "windowed", "mh.context_window_tokens": "50000" })).toEqual({ contextStrategy: "windowed", contextWindowTokens: 50_000 });
  });

  it("refuses an unknown strategy or a window that is not a whole number in range, naming the key", () => {
    for (const [metadata, field] of [
      [{ "mh.context_strategy": "summarize" }, "metadata.mh.context_strategy"],
      [{ "mh.context_window_tokens": "12.5" }, "metadata.mh.context_window_tokens"],
      [{ "mh.context_window_tokens": "10" }, "metadata.mh.context_window_tokens"],
    ] as const) {
      const err = (() => {
        try {
          contextConfig(metadata);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).message).toContain(field);
    }
  });
});

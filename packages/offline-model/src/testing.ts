/**
 * Helpers for tests only, behind the package's `/testing` export (never its index; lint keeps
 * production code from importing it): a server per test file on port 0 that is closed even when a
 * test fails, the real SDK pointed at it, and small builders for requests.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll } from "vitest";
import { startOfflineModel, type OfflineModel, type OfflineModelOptions } from "./server.js";

export const MODEL = "claude-offline-test";

/** Starts a server before the file's tests and closes it after them; `get()` returns it. */
export function useOfflineModel(opts: OfflineModelOptions = {}): { get(): OfflineModel } {
  let model: OfflineModel | undefined;
  beforeAll(async () => {
    model = await startOfflineModel(opts);
  });
  afterAll(async () => {
    await model?.close();
  });
  return {
    get(): OfflineModel {
      if (model === undefined) throw new Error("offline model not started");
      return model;
    },
  };
}

/** The real SDK, without its own retries so each failure surfaces as it is. */
export function sdk(model: OfflineModel, opts: { apiKey?: string; maxRetries?: number } = {}): Anthropic {
  return new Anthropic({ baseURL: model.url, apiKey: opts.apiKey ?? "offline", maxRetries: opts.maxRetries ?? 0 });
}

export function user(text: string): Anthropic.MessageParam {
  return { role: "user", content: text };
}

/** A non-streaming request body with the usual defaults. */
export function body(
  messages: Anthropic.MessageParam[],
  extra: Partial<Anthropic.MessageCreateParamsNonStreaming> = {},
): Anthropic.MessageCreateParamsNonStreaming {
  return { model: MODEL, max_tokens: 1024, messages, ...extra };
}

/** Raw POST to the server, for what the SDK would refuse to send. */
export async function post(
  model: OfflineModel,
  path: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: unknown }> {
  const res = await fetch(`${model.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "offline", "anthropic-version": "2023-06-01", ...headers },
    body: typeof payload === "string" ? payload : JSON.stringify(payload),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

export const weatherTool: Anthropic.Tool = {
  name: "get_weather",
  description: "Current weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

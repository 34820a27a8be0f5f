/**
 * Helpers for this package's tests only (not exported from the index): an offline model per test
 * file on port 0, closed even when a test fails, and a client for it with short retry delays.
 */
import { startOfflineModel, type OfflineModel, type Scenario } from "@metaharness/offline-model";
import { afterAll, beforeAll } from "vitest";
import { createModelClient, type ModelClient } from "./client.js";
import type { ModelClientOptions } from "./options.js";

export function useOfflineModel(scenarios: readonly Scenario[], opts: { apiKey?: string } = {}): { get(): OfflineModel } {
  let model: OfflineModel | undefined;
  beforeAll(async () => {
    model = await startOfflineModel({ scenarios, ...opts });
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

export function client(model: OfflineModel, opts: Partial<ModelClientOptions> = {}): ModelClient {
  return createModelClient({
    baseURL: model.url,
    apiKey: "offline",
    model: "claude-offline-test",
    maxTokens: 2048,
    retry: { maxAttempts: 5, initialDelayMs: 5, maxDelayMs: 20 },
    ...opts,
  });
}

/** A one-message conversation that selects `scenario`; `nonce` keeps attempt counters apart. */
export function ask(scenario: string, nonce = ""): { messages: [{ role: "user"; content: string }] } {
  return { messages: [{ role: "user", content: `[scenario:${scenario}] ${nonce}`.trim() }] };
}

/**
 * Helpers for tests only, behind the package's `/testing` export (never its index; lint keeps
 * production code from importing it): an offline model per test file on port 0, closed even when a
 * test fails, and a client for it with short retry delays.
 */
import type { OfflineModel, Scenario } from "@metaharness/offline-model";
import { useOfflineModel as useModel } from "@metaharness/offline-model/testing";
import { createModelClient, type ModelClient } from "./client.js";
import type { ModelClientOptions } from "./options.js";

/** An offline model serving `scenarios`, started before the file's tests and closed after them. */
export function useOfflineModel(scenarios: readonly Scenario[], opts: { apiKey?: string } = {}): { get(): OfflineModel } {
  return useModel({ scenarios, ...opts });
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

// The offline model in a process of its own, so the benchmark's process measures only the client.
import { defineScenario, startOfflineModel } from "@metaharness/offline-model";
const text = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");
const model = await startOfflineModel({ scenarios: [defineScenario("bench", [{ text, ttftMs: 0, tokensPerSecond: 0 }], { onExhausted: "repeat-last" })] });
process.send?.(model.url);
process.on("disconnect", () => void model.close().then(() => process.exit(0)));

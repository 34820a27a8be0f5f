/**
 * The offline model in a process of its own (request-cpu.ts), so that the benchmark's process
 * measures only the client: one scenario, `bench`, answering 40 words at once, again and again.
 * Prints its URL; stops when its stdin closes (the benchmark ended, or died).
 */
import { defineScenario, startOfflineModel } from "@metaharness/offline-model";

const text = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");
const model = await startOfflineModel({ scenarios: [defineScenario("bench", [{ text, ttftMs: 0, tokensPerSecond: 0 }], { onExhausted: "repeat-last" })] });
process.stdout.write(`${model.url}\n`);
process.stdin.resume();
process.stdin.once("end", () => void model.close().then(() => process.exit(0)));

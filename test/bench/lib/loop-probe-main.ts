/**
 * The machine's floor of event-loop delay (loop-delay.ts idleProbe): a Node process with no work
 * but the sampler, so what it measures is its wait for a core. Each line on stdin asks for the
 * figures since the previous one, answered as a JSON line.
 */
import { createInterface } from "node:readline";
import { ownLoopDelay } from "./loop-delay.js";

const sampler = ownLoopDelay();
createInterface({ input: process.stdin })
  .on("line", () => process.stdout.write(`${JSON.stringify(sampler.read())}\n`))
  .on("close", () => sampler.stop());

/**
 * The sandbox broker's metrics (their meaning: docs/operations.md): how long a sandbox takes to
 * provision (cold, warm from the pool, or with an environment's package layer), how many run, by
 * kind (its driver: `bubblewrap`, or `external:<hand kind>`), and how many ended other than by a
 * release, by a closed cause.
 */
import { METRICS, counter, histogram, upDownCounter } from "@metaharness/telemetry";

export const provisionDuration = histogram(METRICS.provisionDuration);
export const sandboxesActive = upDownCounter(METRICS.sandboxesActive);
const losses = counter(METRICS.sandboxLosses);

/** Why a sandbox ended without its release: the label of metaharness.sandbox.losses. */
export type LossCause = "crashed" | "hand_gone" | "idle_timeout" | "lifetime" | "broker_restarted";

export function sandboxLost(cause: LossCause, count = 1): void {
  if (count > 0) losses.add(count, { cause });
}

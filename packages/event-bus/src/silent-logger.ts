/** The BusLogger used when a caller passes none: drops everything. Kept apart from kafka-log.ts
 * so the in-process bus never loads kafkajs. */
import type { BusLogger } from "./types.js";

export const silentLogger: BusLogger = {
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * kafkajs logs to the console by default. This routes its warnings and errors into our BusLogger
 * instead, as structured objects with the kafkajs namespace.
 *
 * Two adjustments keep the log honest rather than loud. kafkajs logs every failed attempt of a
 * request it is about to retry ("connection refused", "coordinator is loading", "not the leader")
 * at ERROR, from its Connection, BrokerPool and Producer namespaces; those become warnings, since
 * a failure that outlasts the retries reaches the caller as an MhError anyway. And the one warning
 * we provoke on purpose, bounding the idempotent producer's retries (kafka-publisher.ts), is dropped.
 */
import kafkajs from "kafkajs";
import type { LogEntry, logCreator } from "kafkajs";
import type { BusLogger } from "./types.js";

const { logLevel } = kafkajs;

/** Messages we cause deliberately and account for. */
const EXPECTED = new Set(["Limiting retries for the idempotent producer may invalidate EoS guarantees"]);

/** Namespaces whose errors are single attempts that kafkajs retries ("Failed to send messages"). */
const PER_ATTEMPT = new Set(["Connection", "BrokerPool", "Producer"]);

/** The level kafkajs is asked to log at; it filters below this itself. */
export const KAFKAJS_LOG_LEVEL = logLevel.WARN;

export function kafkaLogCreator(logger: BusLogger): logCreator {
  return () => (entry: LogEntry) => {
    const log = entry.log as Record<string, unknown> & { message: string };
    const { message, timestamp: _timestamp, logger: _name, ...extra } = log;
    if (EXPECTED.has(message)) return;
    const obj = { component: "kafkajs", namespace: entry.namespace, ...extra };
    const msg = `kafkajs: ${message}`;
    if (entry.level === logLevel.ERROR && !PER_ATTEMPT.has(entry.namespace)) logger.error(obj, msg);
    else if (entry.level <= logLevel.WARN) logger.warn(obj, msg);
    else logger.info(obj, msg);
  };
}

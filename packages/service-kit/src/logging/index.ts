/**
 * @metaharness/service-kit/logging: the structured logger every service writes with (pino, JSON
 * lines, secrets redacted by key), and a child logger per request or session.
 */
export {
  createLogger,
  loggerFor,
  REDACTED_KEYS,
  type LogContext,
  type Logger,
  type LoggerOptions,
  type LogLevel,
} from "./logger.js";
export { LazyChildLogger, type ContextLogger } from "./lazy-child.js";

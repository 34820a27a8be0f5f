/**
 * A service process's whole main: read the config, start telemetry and the service, stop it on
 * SIGTERM/SIGINT. A start that fails (a bad setting, PostgreSQL out of reach, a certificate that
 * cannot be checked) ends the process with exit code 1 after one structured fatal line saying
 * what failed, instead of Node's dump of an uncaught rejection, which a log pipeline reading
 * JSON lines would not even parse. Once the logger exists, the same holds for the rest of the
 * process's life: a crash is one fatal line and exit 1, and Node's warnings are warn lines.
 */
import { startTelemetry } from "@metaharness/telemetry";
import { ConfigError } from "../config/config.js";
import { metricsOptions, type MetricsSettings } from "../config/metrics-env.js";
import { createLogger, type Logger, type LoggerOptions, type LogLevel } from "../logging/logger.js";
import { installShutdown } from "./shutdown.js";

export interface RunServiceOptions<C extends ServiceBasics> {
  /** The service's name: in every log line and span. */
  readonly name: string;
  readonly loadConfig: () => C;
  readonly start: (config: C, logger: Logger) => Promise<{ stop(): Promise<void> }>;
  /** Paths to redact on top of the logger's defaults. */
  readonly redact?: LoggerOptions["redact"];
}

/** What every service's config has (a tool without traces, like the offline model, leaves out the endpoint). */
export interface ServiceBasics extends MetricsSettings {
  readonly logLevel: LogLevel;
  readonly otlpEndpoint?: string | undefined;
}

export async function runService<C extends ServiceBasics>(opts: RunServiceOptions<C>): Promise<void> {
  let config: C;
  try {
    config = opts.loadConfig();
  } catch (err) {
    // No level configured yet: the default logger says why.
    fail(createLogger({ service: opts.name }), opts.name, err);
    return;
  }
  const telemetry = startTelemetry({ serviceName: opts.name, otlpEndpoint: config.otlpEndpoint, metrics: metricsOptions(config) });
  const logger = createLogger({ service: opts.name, level: config.logLevel, ...(opts.redact === undefined ? {} : { redact: opts.redact }) });
  telemetry.metricsUrl().then(
    (url) => {
      if (url !== undefined) logger.info({ url }, `metrics for Prometheus at ${url}`);
    },
    (err: unknown) => logger.error({ err }, "the metrics endpoint could not listen"),
  );
  reportProcessEvents(logger, opts.name);
  let app: { stop(): Promise<void> };
  try {
    app = await opts.start(config, logger);
  } catch (err) {
    await telemetry.shutdown().catch(() => undefined);
    fail(logger, opts.name, err);
    return;
  }
  installShutdown(logger, [
    { name: opts.name, run: () => app.stop() },
    { name: "telemetry", run: () => telemetry.shutdown() },
  ]);
}

/**
 * Node's own reports in the service's log format. A warning (e.g. a deprecation that a dependency
 * triggers, such as grpc-js naming an IP address as a TLS server name) becomes a warn line instead
 * of Node's plain text on stderr, unless warnings are turned off (--no-warnings,
 * NODE_NO_WARNINGS=1), as Node's own printer would be. An exception nothing caught, or a rejection
 * nothing handled (Node raises it as such), becomes one fatal line, then exit 1: the process's
 * state is unknown after it, so it does not try to stop in order.
 */
function reportProcessEvents(logger: Logger, name: string): void {
  process.removeAllListeners("warning");
  if (!warningsOff()) {
    process.on("warning", (warning: Error & { code?: string; detail?: string }) => {
      logger.warn({ warning: { name: warning.name, code: warning.code, detail: warning.detail } }, warning.message);
    });
  }
  process.on("uncaughtException", (err: unknown, origin) => {
    // Anything can be thrown, null included.
    logger.fatal({ err, origin }, `${name} crashed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}

function warningsOff(): boolean {
  return process.env["NODE_NO_WARNINGS"] === "1" || process.execArgv.includes("--no-warnings") || (process.env["NODE_OPTIONS"] ?? "").split(/\s+/).includes("--no-warnings");
}

function fail(logger: Logger, name: string, err: unknown): void {
  const why =
    err instanceof ConfigError ? `invalid configuration: ${err.problems.join("; ")}` : err instanceof Error ? err.message : String(err);
  logger.fatal({ err }, `${name} could not start: ${why}`);
  // pino flushes its stdout destination on exit: the line is not lost.
  process.exit(1);
}

/**
 * Graceful shutdown on SIGTERM/SIGINT: named steps run in order, once, each logged, within an
 * overall time limit. A failed step does not stop the ones after it (the database still closes if
 * the server did not drain), but it makes the exit code 1. A second signal exits at once.
 */
import type { Logger } from "../logging/logger.js";

export interface ShutdownStep {
  readonly name: string;
  readonly run: () => Promise<void>;
}

export interface ShutdownOptions {
  /** Limit for all steps together; past it the process exits 1. Default DEFAULT_SHUTDOWN_TIMEOUT_MS. */
  readonly timeoutMs?: number;
}

export interface InstallShutdownOptions extends ShutdownOptions {
  readonly signals?: readonly NodeJS.Signals[];
  /** How the process ends; `process.exit` by default (tests pass a fake). */
  readonly exit?: (code: number) => void;
}

export interface ShutdownHandle {
  /** Runs the shutdown as a signal would (once; later calls get the same promise), then exits. */
  trigger(reason: string): Promise<number>;
  /** Removes the signal handlers. */
  uninstall(): void;
}

/** Under Kubernetes' default 30 s grace period, leaving room for the kubelet's SIGKILL. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 20_000;

/** Runs `steps` in order; resolves the exit code: 0, or 1 if a step failed or time ran out. */
export async function runShutdown(
  logger: Logger,
  steps: readonly ShutdownStep[],
  opts: ShutdownOptions = {},
): Promise<number> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
  const started = Date.now();
  let current = "";
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
    timer.unref();
  });

  const runAll = async (): Promise<number> => {
    let code = 0;
    for (const step of steps) {
      current = step.name;
      const stepStarted = Date.now();
      try {
        await step.run();
        logger.info({ step: step.name, ms: Date.now() - stepStarted }, "shutdown step done");
      } catch (err) {
        code = 1;
        logger.error({ err, step: step.name, ms: Date.now() - stepStarted }, "shutdown step failed");
      }
    }
    return code;
  };

  try {
    const outcome = await Promise.race([runAll(), timedOut]);
    if (outcome === "timeout") {
      logger.error({ step: current, timeoutMs }, "shutdown timed out");
      return 1;
    }
    logger.info({ ms: Date.now() - started, code: outcome }, "shutdown complete");
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}

/** Runs `steps` on the first SIGTERM/SIGINT, then exits with runShutdown's code. */
export function installShutdown(
  logger: Logger,
  steps: readonly ShutdownStep[],
  opts: InstallShutdownOptions = {},
): ShutdownHandle {
  const signals = opts.signals ?? ["SIGTERM", "SIGINT"];
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  let running: Promise<number> | undefined;

  const trigger = (reason: string): Promise<number> => {
    running ??= (async () => {
      logger.info({ reason, steps: steps.map((s) => s.name) }, "shutting down");
      const code = await runShutdown(logger, steps, opts);
      exit(code);
      return code;
    })();
    return running;
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    if (running !== undefined) {
      logger.warn({ signal }, "second signal during shutdown: exiting now");
      exit(1);
      return;
    }
    void trigger(signal);
  };

  for (const signal of signals) process.on(signal, onSignal);
  return {
    trigger,
    uninstall: () => signals.forEach((signal) => process.off(signal, onSignal)),
  };
}

/**
 * @metaharness/service-kit/lifecycle: a service's main (runService: one fatal line and exit 1 on
 * a failed start or a crash), idempotent graceful shutdown on SIGTERM, cleanups that run even
 * when setup fails half-way, and the clock timers read (a test's, where time is its subject).
 */
export { Cleanups } from "./cleanups.js";
export {
  installShutdown,
  runShutdown,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type InstallShutdownOptions,
  type ShutdownHandle,
  type ShutdownOptions,
  type ShutdownStep,
} from "./shutdown.js";
export { runService, type RunServiceOptions, type ServiceBasics } from "./run-service.js";
export { systemClock, type Clock, type ClockTimer } from "./clock.js";

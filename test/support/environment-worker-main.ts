/**
 * A worker machine of its own, for tests that kill it: runs the official SDK's EnvironmentWorker
 * against the gateway named by MH_WORKER_* until it is killed. See environment-worker.ts.
 */
import { startWorker } from "./environment-worker.js";

const need = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is required`);
  return value;
};

startWorker({
  baseURL: need("MH_WORKER_BASE_URL"),
  environmentId: need("MH_WORKER_ENVIRONMENT_ID"),
  environmentKey: need("MH_WORKER_ENVIRONMENT_KEY"),
  workdir: need("MH_WORKER_WORKDIR"),
  maxIdleMs: Number(need("MH_WORKER_MAX_IDLE_MS")),
});

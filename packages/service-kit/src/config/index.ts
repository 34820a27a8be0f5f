/**
 * @metaharness/service-kit/config: a service's settings read from the environment in one typed
 * place (each variable parsed by a typed helper that names what was wrong), the metrics settings
 * every service shares, and PEM files named by variables, checked at start.
 */
export {
  readConfig,
  ConfigError,
  type ConfigOf,
  type ConfigSpec,
  type EnvResult,
  type EnvSource,
  type EnvVar,
} from "./config.js";
export { METRICS_ENV, metricsOptions, type MetricsSettings } from "./metrics-env.js";
export { env, type EnvOptions, type RangeOptions, type UrlOptions } from "./env.js";
export { checkKeyPair, checkRoots, invalidSetting, readPem } from "./pem.js";

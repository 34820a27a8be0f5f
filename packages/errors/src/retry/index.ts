export { DEFAULT_RETRY_POLICY, backoffMs, retryPolicy, type RetryPolicy } from "./policy.js";
export { isRetryableError, retry, type AttemptInfo, type RetryInfo, type RetryOptions } from "./retry.js";
export { sleep } from "./sleep.js";

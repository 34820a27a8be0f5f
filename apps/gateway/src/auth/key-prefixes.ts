/**
 * The prefixes that tell the gateway's own credentials from API keys (which are configured, so
 * they may not start with them).
 */
export const ENVIRONMENT_KEY_PREFIX = "mhek_";
export const WORK_TOKEN_PREFIX = "mhwt_";
export const RESERVED_KEY_PREFIXES: readonly string[] = [ENVIRONMENT_KEY_PREFIX, WORK_TOKEN_PREFIX];
/**
 * The longest credential there is: an API key is at most this (config.ts), an environment key or
 * a sessions token 48 characters. A longer one is unknown without a lookup, and is not cached.
 */
export const MAX_KEY_CHARS = 256;

export { Code, RETRYABLE_CODES, codeName, type CodeName, type CodeNumber } from "./code.js";
export { MhError, invalidArgument, type Details, type MhErrorOptions } from "./mh-error.js";
export * from "./details/index.js";
export * from "./retry/index.js";

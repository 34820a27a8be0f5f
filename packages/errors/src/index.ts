export { Code, HTTP_STATUS, RETRYABLE_CODES, codeName, type CodeName, type CodeNumber } from "./code.js";
export { MhError, invalidArgument, type MhErrorOptions } from "./mh-error.js";

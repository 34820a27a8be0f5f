export { defineDetail, type DetailShape, type DetailValue, type ErrorDetail } from "./define.js";
export * from "./catalog.js";

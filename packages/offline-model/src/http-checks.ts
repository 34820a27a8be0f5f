/**
 * The header checks the real API makes before reading the body: a credential (`x-api-key`, or a
 * bearer token) that matches the configured key if there is one, and an `anthropic-version`.
 */
import type { IncomingHttpHeaders } from "node:http";
import { ApiError, invalidRequest } from "./api-error.js";

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function checkHeaders(headers: IncomingHttpHeaders, apiKey: string | undefined): void {
  const key = header(headers, "x-api-key") ?? /^Bearer (.+)$/i.exec(header(headers, "authorization") ?? "")?.[1];
  if (key === undefined || key === "") throw new ApiError(401, "x-api-key header is required");
  if (apiKey !== undefined && key !== apiKey) throw new ApiError(401, "invalid x-api-key");
  if (header(headers, "anthropic-version") === undefined) throw invalidRequest("anthropic-version", "header is required");
}

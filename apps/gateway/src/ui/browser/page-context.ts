/**
 * What every page gets from the app shell: where traces open, model prices, and what to do when the key
 * stops working.
 */
import type { HttpError } from "./api.js";
import type { PriceTable } from "./prices.js";

export interface PageContext {
  /** MH_TRACE_URL_TEMPLATE (or the trace page, /ui/traces/...), with `{trace_id}` (and maybe `{span_id}`) to fill in. */
  readonly traceTemplate: string;
  /** The deployment's model prices, for cost estimates. */
  readonly prices: PriceTable;
  /** The gateway refused the key (401): ask for one again. */
  unauthorized(error: HttpError): void;
}

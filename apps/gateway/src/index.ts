/**
 * The gateway as a library: tests and the single-process `mh dev` start it in-process.
 */
export { startGateway, type GatewayDeps, type GatewayHandle, type GatewaySettings } from "./app.js";
export { loadConfig, type GatewayConfig } from "./config.js";
export type { BootstrapKey } from "./auth/api-keys.js";
export { loadUiConfig, type UiConfig } from "./ui/config.js";
export { loadModelPrices } from "./ui/prices-config.js";
export { costUsd, DEFAULT_PRICES, formatUsd, inputParts, PRICES_CHECKED, totalInput, type ModelPrice, type PriceTable, type TokenUsage } from "./ui/browser/prices.js";
export { ERROR_CATALOG, ERROR_FOR_CODE, COMMON_ERRORS, type CatalogEntry, type GatewayErrorName } from "./errors/catalog.js";
export { MANAGED_AGENTS_BETA } from "./http/authenticate.js";
export { previewEventId } from "./events/previews.js";
export { hashKey } from "./auth/api-keys.js";
export type { RouteDoc } from "./http/route-doc.js";

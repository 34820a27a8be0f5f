/**
 * Routes about the gateway itself, served without an API key: the OpenAPI document and a
 * health probe (which checks the gateway's database).
 */
import type { Db } from "@metaharness/db";
import { openApiDocument } from "./openapi.js";
import type { Router } from "./router.js";

export const API_VERSION = "managed-agents-2026-04-01";

export function registerMetaRoutes(router: Router, db: Db): void {
  router.add(
    {
      method: "GET",
      url: "/openapi.json",
      sdk: "(none)",
      summary: "This document: the gateway's OpenAPI 3.1 description, generated from its routes.",
      response: "OpenAPI document",
      errors: [],
      public: true,
    },
    () => Promise.resolve(openApiDocument(router.routes, API_VERSION)),
  );
  router.add(
    {
      method: "GET",
      url: "/healthz",
      sdk: "(none)",
      summary: "Readiness: 200 when the gateway's database answers.",
      response: "{ status: 'ok' }",
      errors: ["unavailable"],
      public: true,
    },
    async () => {
      await db.query("SELECT 1");
      return { status: "ok" };
    },
  );
}

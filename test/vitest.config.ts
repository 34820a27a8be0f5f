import { defineConfig } from "vitest/config";

// Cross-service tests run against the real Postgres and Kafka that infra/up.sh starts.
export default defineConfig({
  test: {
    include: ["integration/**/*.test.ts", "fault/**/*.test.ts", "security/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Files share one broker and one Postgres server; run them one after another so timing-sensitive
    // fault tests (stopping Kafka) do not disturb the others.
    fileParallelism: false,
  },
});

import { defineConfig } from "vitest/config";

// tsc compiles the tests into dist/ along with the code; run only the sources.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
    // Every package's tests run at once on two cores (turbo run test): a test that spawns a
    // process or starts a server can take over vitest's default 5 s there. A bound, not a measure.
    testTimeout: 30_000,
  },
});

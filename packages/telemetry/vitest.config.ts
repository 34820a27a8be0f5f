import { defineConfig } from "vitest/config";

// Tests live next to the code in src/; tsc also compiles them into dist/, which must not run twice.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
    // Every package's tests run at once on two cores (turbo run test): a test that spawns a
    // process or starts a server can take over vitest's default 5 s there. A bound, not a measure.
    testTimeout: 30_000,
  },
});

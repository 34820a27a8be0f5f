import { defineConfig } from "vitest/config";

// tsc compiles the tests into dist/ along with the code; run only the sources.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
  },
});

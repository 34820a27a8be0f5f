import { defineConfig } from "vitest/config";

// Tests live next to the code in src/; tsc also compiles them into dist/, which must not run twice.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
  },
});

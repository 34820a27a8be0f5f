import { defineConfig } from "vitest/config";

// Tests live next to the code in src/; tsc also compiles them into dist/, which must not run twice.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
    // Several tests start real gRPC servers and TLS handshakes: on a loaded 2-core machine one
    // took over the default 5 s once. A bound, not a measure (no test here is about speed).
    testTimeout: 20_000,
  },
});

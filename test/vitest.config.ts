import { defineConfig } from "vitest/config";

// Cross-service tests run against the real Postgres and Kafka that infra/up.sh starts. Each file
// makes its own database, topics and service instances, so most files run two at a time (on a
// 2-core VM: the whole suite in 425 and 449 s against 656 s one file at a time, back to back).
// Files that stop a shared server (Kafka), kill processes on a clock, or start a whole stack of
// their own run afterwards, one at a time, so that nothing else runs beside them.
const ALONE = ["integration/session-log/kafka.test.ts", "fault/**/*.test.ts", "integration/stack/distributed.test.ts"];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // expect.poll's own default is 1 s: a page's render or a span's export on a busy 2-core
    // machine takes longer. A poll ends as soon as it holds, so only a failure waits this long.
    expect: { poll: { timeout: 20_000 } },
    projects: [
      {
        extends: true,
        test: {
          name: "shared",
          include: ["integration/**/*.test.ts", "security/**/*.test.ts", "fuzz/**/*.test.ts", "repository/**/*.test.ts"],
          exclude: ALONE,
          fileParallelism: true,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: "alone", include: ALONE, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});

/**
 * The alert rules (infra/prometheus/rules/metaharness.yml) and the tests' Prometheus config,
 * checked by the real promtool (built by infra/prometheus/up.sh, which the test command runs):
 * `check config`, `check rules`, and the rules' unit tests (infra/prometheus/rules.test.yml),
 * where each alert fires on the series that should fire it and stays quiet on healthy ones.
 * Also: every metric the rules name is one of the catalog's (a renamed metric fails here).
 */
import { execFile } from "node:child_process";
import { access, readFile } from "node:fs/promises";
import { promisify } from "node:util";
import { METRICS, promName } from "@metaharness/telemetry";
import { describe, expect, it } from "vitest";
import { prometheusBinary } from "../../support/prometheus.js";

const run = promisify(execFile);
const HERE = new URL("../../../infra/prometheus/", import.meta.url).pathname;
const promtool = prometheusBinary("promtool");
const missing = await access(promtool).then(() => undefined, () => `no promtool at ${promtool} (run infra/prometheus/up.sh)`);

describe.skipIf(missing !== undefined && process.env["MH_REQUIRE_PROMETHEUS"] !== "1")("the alert rules", () => {
  it("check as rules and as the Prometheus config that loads them", async () => {
    const rules = await run(promtool, ["check", "rules", "rules/metaharness.yml"], { cwd: HERE });
    expect(rules.stdout + rules.stderr).toContain("SUCCESS: 5 rules found");
    const config = await run(promtool, ["check", "config", "prometheus.yml"], { cwd: HERE });
    expect(config.stdout + config.stderr).toMatch(/SUCCESS/);
  });

  it("pass their unit tests", async () => {
    const tested = await run(promtool, ["test", "rules", "rules.test.yml"], { cwd: HERE });
    expect(tested.stdout + tested.stderr).toContain("SUCCESS");
  });

  it("name only the catalog's metrics", async () => {
    const text = await readFile(`${HERE}rules/metaharness.yml`, "utf8");
    const exprs = [...text.matchAll(/expr: (\|\n(?:\s{10}.*\n)+|.*)/g)].map((m) => m[1]!);
    const known = new Set(Object.values(METRICS).flatMap((d) => (d.kind === "histogram" ? [`${promName(d)}_count`, `${promName(d)}_sum`, `${promName(d)}_bucket`] : [promName(d)])));
    const named = exprs.flatMap((e) => [...e.matchAll(/\b((?:metaharness|rpc|http|gen_ai|messaging)_[a-z_]+)\b(?!\s*[=!~])/g)].map((m) => m[1]!));
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter((n) => !known.has(n))).toEqual([]);
  });
});

/**
 * The facts a reader needs to judge the figures of a run: the machine, Node, and the Postgres
 * server and settings the service ran against. Printed once at the top and saved with the results.
 */
import os from "node:os";
import pg from "pg";
import { ADMIN_URL } from "../../support/postgres.js";
import { KAFKA_BROKERS } from "../../support/topics.js";

export interface MachineFacts {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly loadAverage: readonly number[];
  readonly node: string;
  readonly postgres: string;
  readonly postgresSettings: Readonly<Record<string, string>>;
  readonly kafkaBrokers: string;
}

const SETTINGS = ["shared_buffers", "synchronous_commit", "fsync", "wal_level", "max_connections"];

export async function machineFacts(): Promise<MachineFacts> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    const version = await client.query<{ version: string }>("SELECT version()");
    const settings = await client.query<{ name: string; setting: string; unit: string | null }>(
      "SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1::text[]) ORDER BY name",
      [SETTINGS],
    );
    return {
      cpus: os.availableParallelism(),
      cpuModel: os.cpus()[0]?.model.trim() ?? "unknown",
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100),
      node: process.version,
      postgres: version.rows[0]?.version ?? "unknown",
      postgresSettings: Object.fromEntries(
        settings.rows.map((r) => [r.name, r.unit === null ? r.setting : `${r.setting} x ${r.unit}`]),
      ),
      kafkaBrokers: KAFKA_BROKERS,
    };
  } finally {
    await client.end();
  }
}

export function formatFacts(f: MachineFacts): string {
  const settings = Object.entries(f.postgresSettings)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
  return [
    `machine   ${f.cpus} cpus (${f.cpuModel}), ${f.memoryGiB} GiB, load average ${f.loadAverage.join(" ")}`,
    `node      ${f.node}`,
    `postgres  ${f.postgres}`,
    `          ${settings}`,
    `kafka     ${f.kafkaBrokers}`,
  ].join("\n");
}

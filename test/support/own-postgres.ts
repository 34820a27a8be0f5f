/**
 * A PostgreSQL server of a test's own, from the installed Debian binaries
 * (/usr/lib/postgresql/<n>/bin): initdb into a temp directory, on a port free right now, trust
 * authentication on 127.0.0.1 only. For fault tests that stop and restart the server: the shared
 * one (infra/postgres/up.sh) serves every other test running beside them and is never touched.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { eventually } from "./eventually.js";
import { unusedPort } from "./process.js";

const run = promisify(execFile);

export interface OwnPostgres {
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database?: string): string;
  readonly port: number;
  /** A new database on it; its URL. */
  createDatabase(name: string): Promise<string>;
  /** `pg_ctl stop -m immediate`: every backend dies at once, as in a crash; no shutdown checkpoint. */
  crash(): Promise<void>;
  /** Starts it again on the same port and data, and waits until it accepts connections. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The newest installed server's bin directory. */
function binDir(): string {
  const base = "/usr/lib/postgresql";
  const versions = existsSync(base) ? readdirSync(base).filter((v) => existsSync(join(base, v, "bin", "postgres"))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) throw new Error(`no PostgreSQL server under ${base}: infra/postgres/up.sh installs it`);
  return join(base, newest, "bin");
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = binDir();
  const dir = await mkdtemp(join(tmpdir(), "mh-own-pg-"));
  const data = join(dir, "data");
  // The server refuses to run as root: as root, it runs as the package's postgres user.
  const asUser = userInfo().uid === 0 ? "postgres" : undefined;
  if (asUser !== undefined) {
    const { stdout } = await run("id", ["-u", asUser]);
    const { stdout: gid } = await run("id", ["-g", asUser]);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const cmd = (file: string, args: string[]): [string, string[]] =>
    asUser === undefined ? [file, args] : ["runuser", ["-u", asUser, "--", file, ...args]];
  const port = await unusedPort();
  let server: ChildProcess | undefined;
  let out = "";
  const start = async (): Promise<void> => {
    const [file, args] = cmd(join(bin, "postgres"), [
      "-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
      "-c", "max_connections=100", "-c", "shared_buffers=32MB", "-c", "logging_collector=off",
    ]);
    const child = spawn(file, args, { cwd: "/", stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr?.on("data", (b: Buffer) => (out += b.toString()));
    server = child;
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`postgres exited at start:\n${out.slice(-2000)}`);
        const c = new pg.Client({ connectionString: url("postgres"), connectionTimeoutMillis: 1000 });
        try {
          await c.connect();
          await c.query("SELECT 1");
          return true;
        } catch {
          return undefined;
        } finally {
          await c.end().catch(() => undefined);
        }
      },
      () => `postgres to accept connections (30 s):\n${out.slice(-2000)}`,
      30_000,
    );
  };
  const url = (database = "postgres"): string => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const crash = async (): Promise<void> => {
    const child = server;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const [file, args] = cmd(join(bin, "pg_ctl"), ["stop", "-D", data, "-m", "immediate", "-w"]);
    await run(file, args, { cwd: "/" });
    await exited;
  };
  try {
    const [file, args] = cmd(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"]);
    await run(file, args, { cwd: "/" });
    await start();
  } catch (err) {
    await crash().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    port,
    async createDatabase(name) {
      const c = new pg.Client({ connectionString: url("postgres") });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${name}`);
      } finally {
        await c.end();
      }
      return url(name);
    },
    crash,
    start,
    async stop() {
      await crash().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Where the CPU went while a benchmark measured: the whole machine, this process (the gRPC client,
 * and the service too when it runs in-process), the service's own process when it has one,
 * Postgres, Kafka, and everything else. On a small shared machine a
 * tail latency often says more about "everything else" than about the code, so every benchmark
 * prints this next to its figures. Linux /proc only; elsewhere the figures are NaN.
 */
import { readFileSync, readdirSync } from "node:fs";
import os from "node:os";

export interface CpuUse {
  readonly cores: number;
  /** Percent of one core, averaged over the interval (so at most 100 x cores). */
  readonly machine: number;
  readonly self: number;
  /** The service's own process (NaN when it runs inside this one). */
  readonly service: number;
  readonly postgres: number;
  readonly kafka: number;
  readonly other: number;
}

interface Ticks {
  readonly machine: number;
  readonly self: number;
  readonly service: number;
  /** By pid: backends come and go, and a sum over those alive would fall when one exits. */
  readonly postgres: ReadonlyMap<string, number>;
  /** By pid too: another Kafka (a test's own broker) may start or stop inside the window. */
  readonly kafka: ReadonlyMap<string, number>;
}

export const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** Busy ticks of the whole machine (all cores), since boot. */
export function busyTicks(): number {
  const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0); // idle + iowait
  return fields.reduce((a, b) => a + b, 0) - idle;
}

/** utime + stime of one process, and its command name. */
export function processTicks(pid: string): { comm: string; ticks: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    return { comm: stat.slice(stat.indexOf("(") + 1, close), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined; // exited meanwhile
  }
}

function sample(servicePid: number | undefined): Ticks {
  const postgres = new Map<string, number>();
  const kafka = new Map<string, number>();
  let self = 0;
  let service = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    const p = processTicks(pid);
    if (p === undefined) continue;
    if (pid === String(process.pid)) self = p.ticks;
    else if (pid === String(servicePid)) service = p.ticks;
    else if (p.comm.startsWith("postgres")) postgres.set(pid, p.ticks);
    else if (p.comm === "java") kafka.set(pid, p.ticks);
  }
  return { machine: busyTicks(), self, service, postgres, kafka };
}

function safeSample(servicePid: number | undefined): Ticks | undefined {
  try {
    return sample(servicePid);
  } catch {
    return undefined;
  }
}

/**
 * Starts measuring; `stop()` returns the use since the start. `servicePid` is the service's own
 * process, if it has one. Postgres is its processes alive at the stop, less what each had at the
 * start (ticksSince): a backend that exits meanwhile is missed, never subtracted. Kafka is the
 * java processes alive at both ends (ticksOfBoth): a broker started or stopped meanwhile is
 * another test's.
 */
export function cpuMeter(servicePid?: number): { stop(): CpuUse } {
  const start = safeSample(servicePid);
  const t0 = Date.now();
  return {
    stop() {
      const end = safeSample(servicePid);
      const seconds = (Date.now() - t0) / 1000;
      const cores = os.availableParallelism();
      if (start === undefined || end === undefined || seconds <= 0) {
        return { cores, machine: NaN, self: NaN, service: NaN, postgres: NaN, kafka: NaN, other: NaN };
      }
      const pctOf = (ticks: number): number => (ticks / TICKS_PER_SECOND / seconds) * 100;
      const pct = (k: "machine" | "self" | "service"): number => pctOf(end[k] - start[k]);
      const use = {
        machine: pct("machine"),
        self: pct("self"),
        service: servicePid === undefined ? NaN : pct("service"),
        postgres: pctOf(ticksSince(start.postgres, end.postgres)),
        kafka: pctOf(ticksOfBoth(start.kafka, end.kafka)),
      };
      const known = use.self + (Number.isNaN(use.service) ? 0 : use.service) + use.postgres + use.kafka;
      return { cores, ...use, other: Math.max(0, use.machine - known) };
    },
  };
}

export function formatCpu(u: CpuUse): string {
  const p = (x: number): string => (Number.isFinite(x) ? `${Math.round(x)}%` : "-");
  return (
    `CPU busy ${p(u.machine)} of ${u.cores * 100}%: this process ${p(u.self)}, service ${p(u.service)}, postgres ${p(u.postgres)}, ` +
    `kafka ${p(u.kafka)}, other load ${p(u.other)}`
  );
}

/**
 * CPU ticks since start of the Postgres processes that serve `database` (or any of several), by pid: its backends
 * (command line `postgres: <user> <database> ...`) and the server's own shared processes (the
 * postmaster, checkpointer, background and WAL writers, launchers), but not the backends of other
 * databases, which on a shared machine are other work. Compare two samples with `ticksSince`.
 */
export function postgresTicksOf(database: string | readonly string[]): Map<string, number> {
  const databases = new Set(typeof database === "string" ? [database] : database);
  const out = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    const p = processTicks(pid);
    if (p?.comm.startsWith("postgres") !== true) continue;
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
    } catch {
      continue; // exited meanwhile
    }
    // A client's backend names its user, database and client address; an autovacuum worker its
    // database; the shared processes only their role.
    const of = /^postgres: \S+ (\S+) (?:\S+\(\d+\)|\[local\])/.exec(cmd) ?? /^postgres: autovacuum worker (\S+)/.exec(cmd);
    if (of === null || databases.has(of[1]!)) out.set(pid, p.ticks);
  }
  return out;
}

/** Ticks used between two by-pid samples: processes alive at the end, less what they had at the start (0 if started since). */
export function ticksSince(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const [pid, ticks] of after) n += ticks - (before.get(pid) ?? 0);
  return n;
}

/** CPU ticks since start of every java process (Kafka), by pid. Compare two samples with `ticksOfBoth`. */
export function javaTicks(): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    const p = processTicks(pid);
    if (p?.comm === "java") out.set(pid, p.ticks);
  }
  return out;
}

/** Ticks used between two by-pid samples by the processes alive at both. */
export function ticksOfBoth(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const [pid, ticks] of after) {
    const was = before.get(pid);
    if (was !== undefined) n += ticks - was;
  }
  return n;
}

/**
 * Runs the built `mh` (apps/cli/dist/main.js) as a user would, capturing stdout chunk by chunk
 * with their arrival times (to tell streamed tokens from a late block of text), stderr, and the
 * exit code. `waitFor` is a readiness probe on the output, never a sleep.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export const MH = fileURLToPath(new URL("../../../apps/cli/dist/main.js", import.meta.url));

export interface Chunk {
  readonly at: number;
  readonly text: string;
}

export interface MhProcess {
  readonly child: ChildProcess;
  readonly chunks: Chunk[];
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout matches, rejects if the process exits first or time runs out. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** The exit code (128 + n for a signal). */
  exited: Promise<number>;
}

export function mh(args: string[], env: Record<string, string> = {}): MhProcess {
  const child = spawn(process.execPath, [MH, ...args], {
    // No ANTHROPIC_API_KEY, MH_URL or MH_* of the caller: each test says what it means.
    env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: process.env["HOME"] ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const chunks: Chunk[] = [];
  let err = "";
  const listeners = new Set<() => void>();
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    chunks.push({ at: Date.now(), text });
    for (const l of listeners) l();
  });
  child.stderr.setEncoding("utf8").on("data", (text: string) => {
    err += text;
  });
  const exited = new Promise<number>((resolve) => {
    child.once("exit", (code, signal) => {
      for (const l of listeners) l();
      resolve(code ?? 128 + (signal === "SIGKILL" ? 9 : 15));
    });
  });
  const stdout = () => chunks.map((c) => c.text).join("");
  return {
    child,
    chunks,
    stdout,
    stderr: () => err,
    exited,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (pattern.test(stdout())) done(undefined);
          else if (child.exitCode !== null) done(new Error(`mh exited (${child.exitCode}) before printing ${String(pattern)}:\n${stdout()}\n${err}`));
        };
        const timer = setTimeout(() => done(new Error(`timed out waiting for ${String(pattern)}:\n${stdout()}\n${err}`)), timeoutMs);
        function done(e: Error | undefined): void {
          clearTimeout(timer);
          listeners.delete(check);
          if (e === undefined) resolve();
          else reject(e);
        }
        listeners.add(check);
        check();
      });
    },
  };
}

/** How many chunk boundaries fall inside the first occurrence of `text` in the output. */
export function boundariesWithin(chunks: readonly Chunk[], text: string): number {
  const all = chunks.map((c) => c.text).join("");
  const start = all.indexOf(text);
  if (start < 0) return -1;
  const end = start + text.length;
  let offset = 0;
  let inside = 0;
  for (const c of chunks) {
    offset += c.text.length;
    if (offset > start && offset < end) inside += 1;
  }
  return inside;
}

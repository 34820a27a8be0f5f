/**
 * Turning a finished process into the text the model reads: the kept head and tail of its output
 * joined by one marker line that says how much was cut, and plain words for how it ended
 * (exit code, signal, timeout, out of memory).
 */
import { constants } from "node:os";
import type { RunOutcome } from "./types.js";

export interface ProcessText {
  readonly text: string;
  readonly truncated: boolean;
}

/** Head + marker + tail when output was cut; decodes UTF-8 (a cut mid-character shows U+FFFD). */
export function outputText(result: RunOutcome, capBytes: number): ProcessText {
  const kept = result.head.length + result.tail.length;
  const omitted = result.totalBytes - kept;
  if (omitted <= 0) return { text: Buffer.concat([result.head, result.tail]).toString("utf8"), truncated: false };
  const marker =
    `\n[output truncated: ${omitted} of ${result.totalBytes} bytes omitted here; ` +
    `a call returns at most ${capBytes} bytes, the first and the last half]\n`;
  return { text: result.head.toString("utf8") + marker + result.tail.toString("utf8"), truncated: true };
}

export function signalName(n: number): string {
  const entry = Object.entries(constants.signals).find(([, v]) => v === n);
  return entry === undefined ? `signal ${n}` : entry[0];
}

/** How the process ended, when that is news to the model; undefined for a plain exit 0. */
export function endingNote(result: RunOutcome, timeoutMs: number, memoryBytes: number): string | undefined {
  if (result.timedOut) {
    return `[timed out after ${timeoutMs} ms: the command and the processes it started were killed]`;
  }
  if (result.kind === "not_started") return `[the command could not start: ${result.error}]`;
  if (result.kind === "signaled") {
    if (result.oomKilled) {
      return `[killed by ${signalName(result.code)}: out of memory (the sandbox's memory limit is ${mib(memoryBytes)})]`;
    }
    return `[killed by ${signalName(result.code)}]`;
  }
  if (result.oomKilled) return `[a process was killed: out of memory (the sandbox's memory limit is ${mib(memoryBytes)})]`;
  return undefined;
}

/** The exit code reported for the call: the code, 128 + signal like a shell, -1 when not started. */
export function exitCodeOf(result: RunOutcome): number {
  if (result.kind === "exited") return result.code;
  if (result.kind === "signaled") return 128 + result.code;
  return -1;
}

export function mib(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/** Caps text that arrived whole (an external hand's result) the same way as process output. */
export function capText(text: string, capBytes: number): ProcessText {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= capBytes) return { text, truncated: false };
  const half = Math.floor(capBytes / 2);
  return outputText(
    {
      kind: "exited",
      code: 0,
      timedOut: false,
      oomKilled: false,
      error: "",
      totalBytes: bytes.length,
      head: bytes.subarray(0, half),
      tail: bytes.subarray(bytes.length - half),
    },
    capBytes,
  );
}

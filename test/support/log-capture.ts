/**
 * Every log line of the services a test starts, kept in memory (each service logging at trace
 * level into it), so a test can scan them, e.g. for a secret that must never be logged.
 */
import { Writable } from "node:stream";
import { createLogger, type Logger } from "@metaharness/service-kit/logging";

export class LogCapture {
  readonly lines: string[] = [];

  logger(service: string): Logger {
    const lines = this.lines;
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString("utf8"));
        cb();
      },
    });
    return createLogger({ service, level: "trace", destination });
  }
}

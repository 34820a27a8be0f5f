/**
 * The logging the server needs, as an interface: a service-kit (pino) logger fits it, and the
 * default discards everything, so a test's server is quiet unless it passes a logger.
 */
export interface OfflineModelLogger {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

const noop = (): void => undefined;

export const silentLogger: OfflineModelLogger = { debug: noop, info: noop, warn: noop, error: noop };

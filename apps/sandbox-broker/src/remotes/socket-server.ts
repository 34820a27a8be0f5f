/**
 * An HTTP server on a unix socket in a sandbox's run directory: the only way out of a sandbox
 * (which has no network), scoped to that one sandbox by where the socket lives. Connections and
 * header sizes are bounded; closing it ends every connection.
 */
import { chmod } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "@metaharness/service-kit";
import { respond } from "./relay-forward.js";

export interface SocketServer {
  close(): Promise<void>;
}

export async function serveOnSocket(
  path: string,
  maxConnections: number,
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  logger: Logger,
  onConnect?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void,
): Promise<SocketServer> {
  const server = createServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    handler(req, res).catch((err: unknown) => {
      logger.warn({ err }, "relay request failed");
      respond(res, 502, "the relay failed");
    });
  });
  server.maxConnections = maxConnections;
  server.on("connect", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (onConnect === undefined) socket.destroy();
    else onConnect(req, socket, head);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
  // The sandbox runs as another user: it must be able to connect (it cannot create or replace
  // anything in the read-only directory the socket is in). No one else can: that directory is
  // open to the sandbox's user alone (SandboxRuntimeDir.runDir).
  await chmod(path, 0o666);
  let closing: Promise<void> | undefined;
  return {
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/**
 * An HTTP server on a unix socket in a sandbox's run directory: the only way out of a sandbox
 * (which has no network), scoped to that one sandbox by where the socket lives and by who may
 * connect. The directory is open to the sandbox's host uid alone; and each connection is let in
 * only if the kernel says its process runs as that uid (SO_PEERCRED, auth/peer-credentials.ts), which
 * holds even for a process that got past the directory (root, or a descriptor passed on).
 * Connections and header sizes are bounded; closing it ends every connection.
 */
import { chmod } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createNetServer, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "@metaharness/service-kit/logging";
import type { PeerGuard } from "../auth/peer-credentials.js";
import { respond } from "./relay-forward.js";

export interface SocketServer {
  close(): Promise<void>;
}

export interface SocketServerOptions {
  readonly path: string;
  readonly maxConnections: number;
  readonly logger: Logger;
  /** Undefined where sandboxes run as the broker's own uid: then only the directory guards it. */
  readonly guard: PeerGuard | undefined;
  /** CONNECT requests (none: refused). */
  readonly onConnect?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

export async function serveOnSocket(
  opts: SocketServerOptions,
  handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<SocketServer> {
  const { logger, guard, onConnect } = opts;
  const http = createServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    handler(req, res).catch((err: unknown) => {
      logger.warn({ err }, "relay request failed");
      respond(res, 502, "the relay failed");
    });
  });
  http.on("connect", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (onConnect === undefined) socket.destroy();
    else onConnect(req, socket, head);
  });
  const open = new Set<Socket>();
  let closing: Promise<void> | undefined;
  // Paused until the peer is known: nothing of the connection is read, and its fd stays open.
  const server = createNetServer({ pauseOnConnect: true }, (socket) => {
    const admitted = guard === undefined ? Promise.resolve(true) : guard.credentials.check(socket).then(
      (peer) => {
        if (peer.uid === guard.uid) return true;
        logger.warn({ peer_pid: peer.pid, peer_uid: peer.uid, sandbox_uid: guard.uid }, "a process of another user connected to a sandbox's socket: refused");
        return false;
      },
      (err: unknown) => {
        logger.error({ err }, "the peer of a sandbox socket connection could not be checked: refused");
        return false;
      },
    );
    void admitted.then((ok) => {
      if (!ok || socket.destroyed || closing !== undefined) return void socket.destroy();
      // The HTTP server never listens, so it does not track them: closing ends them here.
      open.add(socket);
      socket.once("close", () => open.delete(socket));
      http.emit("connection", socket);
      socket.resume();
    });
  });
  server.maxConnections = opts.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.path, () => resolve());
  });
  // The sandbox runs as another user: it must be able to connect (it cannot create or replace
  // anything in the read-only directory the socket is in). No one else can: that directory is
  // open to the sandbox's user alone (SandboxRuntimeDir.runDir), and the guard checks each peer.
  await chmod(opts.path, 0o666);
  return {
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of open) socket.destroy();
      });
      return closing;
    },
  };
}

/**
 * An error answer to CONNECT, written on the raw socket (there is no ServerResponse for a
 * CONNECT): the egress tunnels (egress/egress-connect.ts) and the remote endpoint's own checks
 * (http/remote-server.ts) answer with it.
 */
import type { Duplex } from "node:stream";
import { answeredItself } from "../metrics.js";

/** Its reason phrase says why, since that is what clients print (pip: "Tunnel connection failed: 403 <why>"; the body is never shown to the user). */
export function refuse(client: Duplex, status: number, why: string): void {
  answeredItself(client, "egress", status);
  const reason = why.replace(/[^\x20-\x7e]/g, " ").slice(0, 300);
  const body = `${why}\n`;
  client.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

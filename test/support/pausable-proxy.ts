/**
 * A TCP proxy whose client-to-server direction can be held: what the client sends meanwhile is
 * kept and forwarded in order at `resume()`. It stands between a service and one it calls so a
 * test can put that call "in flight, not yet arrived" for as long as it needs, with no timing.
 */
import { createServer, connect, type AddressInfo, type Socket } from "node:net";

export interface PausableProxy {
  /** host:port to give the client. */
  readonly address: string;
  /** Bytes the client sent while held, not yet forwarded. */
  readonly heldBytes: () => number;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startPausableProxy(target: string): Promise<PausableProxy> {
  const at = target.lastIndexOf(":");
  const host = target.slice(0, at);
  const port = Number(target.slice(at + 1));
  let paused = false;
  const pipes = new Set<{ client: Socket; server: Socket; held: Buffer[] }>();
  const server = createServer((client) => {
    const upstream = connect(port, host);
    const pipe = { client, server: upstream, held: [] as Buffer[] };
    pipes.add(pipe);
    client.on("data", (chunk: Buffer) => {
      if (paused) pipe.held.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => client.write(chunk));
    const end = (): void => {
      pipes.delete(pipe);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: own } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${own}`,
    heldBytes: () => [...pipes].reduce((n, p) => n + p.held.reduce((m, b) => m + b.length, 0), 0),
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
      for (const p of pipes) for (const chunk of p.held.splice(0)) p.server.write(chunk);
    },
    close: async () => {
      for (const p of pipes) {
        p.client.destroy();
        p.server.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

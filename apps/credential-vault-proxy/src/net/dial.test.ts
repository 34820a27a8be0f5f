import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dialChecked } from "./dial.js";
import { EgressRefused } from "./egress-policy.js";

describe("dialChecked", () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((socket) => {
      socket.on("error", () => undefined);
      socket.end("hi");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("refuses a private literal and a name that resolves to one, before connecting", async () => {
    for (const host of ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "::1"]) {
      const err = await dialChecked(host, port, { allowPrivate: false, timeoutMs: 2000 }).catch((e: unknown) => e);
      expect(err, host).toBeInstanceOf(EgressRefused);
    }
    const unrestricted = await dialChecked("localhost", port, { allowPrivate: false, timeoutMs: 2000, settable: false }).catch((e: unknown) => e);
    expect((unrestricted as Error).message).toContain("unrestricted egress never reaches");
  });

  it("connects to the address it checked when private networks are allowed", async () => {
    const socket = await dialChecked("localhost", port, { allowPrivate: true, timeoutMs: 2000 });
    expect(["127.0.0.1", "::1"]).toContain(socket.remoteAddress);
    socket.destroy();
  });
});

/**
 * Egress through the credential proxy, from the host (the sandbox's relays left out, so the
 * figures are the proxy's own): one HTTPS GET on a fresh connection each time, to a local HTTPS
 * server, (1) directly (the floor: TCP + TLS + request), (2) through a CONNECT tunnel (a host
 * without a credential: the proxy checks the scope and the addresses, dials, and splices), and
 * (3) through an intercepted tunnel (a host with a credential: the proxy also terminates TLS with
 * the sandbox CA's certificate, opens its own verified TLS to the host, injects and scrubs).
 * Real proxy, real Postgres (the capability and the credential are looked up per tunnel).
 *
 * Standalone: `npx tsx bench/egress.ts` from test/ (with services.env loaded). In run.ts: `egress`.
 */
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { SERVICE_AUTH_HEADER } from "@metaharness/service-kit/auth";
import { startTestLog } from "../support/session-log.js";
import { mintDevCerts } from "../support/tls.js";
import { metadataWithVaults, startTestVault, vaultWithBearer } from "../support/vault.js";
import { LATENCY_COLUMNS, latencyCells, ms, runIfMain, type Bench, type BenchReport } from "./lib/report.js";
import { nowMs, summarize, type Summary } from "./lib/stats.js";

const N = Number(process.env["MH_BENCH_EGRESS_N"] ?? 200);
const WARMUP = Math.min(20, N);
const HOST = "127.0.0.1";

/** One GET / with Connection: close over a TLS connection made on `raw` (a tunnel) or straight to the port; resolves at its end. */
function get(port: number, ca: string | Buffer, raw?: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = raw === undefined ? tlsConnect({ host: HOST, port, ca }) : tlsConnect({ socket: raw, host: HOST, ca });
    const chunks: Buffer[] = [];
    socket.on("secureConnect", () => socket.write(`GET / HTTP/1.1\r\nhost: ${HOST}:${port}\r\nconnection: close\r\n\r\n`));
    socket.on("data", (b: Buffer) => chunks.push(b));
    socket.on("error", reject);
    socket.on("end", () => {
      const answer = Buffer.concat(chunks).toString("latin1");
      socket.destroy();
      if (answer.startsWith("HTTP/1.1 200")) resolve();
      else reject(new Error(`answered ${answer.slice(0, 80)}`));
    });
  });
}

async function tunnel(proxy: URL, headers: Record<string, string>, port: number): Promise<Socket> {
  const req = httpRequest({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: `${HOST}:${port}`, headers, agent: false });
  req.end();
  const [res, socket] = (await once(req, "connect")) as [IncomingMessage, Socket];
  if (res.statusCode !== 200) throw new Error(`CONNECT answered ${res.statusCode} ${res.statusMessage}`);
  return socket;
}

async function measure(op: () => Promise<void>): Promise<Summary> {
  const samples: number[] = [];
  for (let i = 0; i < WARMUP + N; i++) {
    const t0 = nowMs();
    await op();
    if (i >= WARMUP) samples.push(nowMs() - t0);
  }
  return summarize(samples);
}

async function runBench(): Promise<BenchReport> {
  const certs = await mintDevCerts(["upstream"]);
  const upstreamCa = await readFile(certs.ca);
  const tls = { cert: await readFile(`${certs.dir}/upstream.pem`), key: await readFile(`${certs.dir}/upstream.key`) };
  const servers: Server[] = [];
  const listen = async (): Promise<number> => {
    const server = createServer(tls, (_req, res) => res.end("ok"));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
    return (server.address() as AddressInfo).port;
  };
  const plain = await listen();
  const credentialed = await listen();
  const log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  const vault = await startTestVault({ sessionLog: log.reach("proxy"), env: { MH_EGRESS_EXTRA_TRUST_FILE: certs.ca, MH_LOG_LEVEL: process.env["MH_BENCH_LOG_LEVEL"] ?? "warn" } });
  try {
    const vaultId = await vaultWithBearer(vault.client("admin"), `${HOST}:${credentialed}`, "sk_bench_egress_0123456789");
    const { session } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
    const opened = await vault.client("broker").openEgress({
      sessionId: session!.sessionId,
      sandboxId: "sbx_bench_egress",
      allowedHosts: [`${HOST}:${plain}`, `${HOST}:${credentialed}`],
      ttlSeconds: 0,
      allowPackageManagers: false,
      unrestricted: false,
    });
    const proxy = new URL(opened.proxyUrl);
    const headers = { "proxy-authorization": opened.proxyAuthorization, [SERVICE_AUTH_HEADER]: `Bearer ${vault.tokens.broker}` };
    const through = async (port: number, ca: string | Buffer): Promise<void> => {
      const raw = await tunnel(proxy, headers, port);
      await get(port, ca, raw);
    };
    const direct = await measure(() => get(plain, upstreamCa));
    const tunnelled = await measure(() => through(plain, upstreamCa));
    const intercepted = await measure(() => through(credentialed, opened.caCertificatePem));
    return {
      name: "egress",
      title: "credential proxy egress: CONNECT tunnel and interception vs a direct HTTPS request",
      tables: [
        {
          title: `one HTTPS GET on a fresh connection, from the host to a local HTTPS server (${N} sequential)`,
          columns: ["path", ...LATENCY_COLUMNS],
          rows: [
            ["direct (floor: TCP + TLS + request)", ...latencyCells(direct)],
            ["CONNECT tunnel (no credential: scope, DNS check, dial, splice)", ...latencyCells(tunnelled)],
            ["intercepted tunnel (credential: sandbox-CA TLS + upstream TLS + inject + scrub)", ...latencyCells(intercepted)],
          ],
        },
      ],
      checks: [],
      notes: [
        `tunnel overhead over the floor: p50 +${ms(tunnelled.p50 - direct.p50)} ms, p95 +${ms(tunnelled.p95 - direct.p95)} ms`,
        `interception overhead over the floor: p50 +${ms(intercepted.p50 - direct.p50)} ms, p95 +${ms(intercepted.p95 - direct.p95)} ms`,
        "the proxy looks the capability up in Postgres per tunnel, and the credential per tunnel and per intercepted request",
      ],
      data: { direct, tunnelled, intercepted },
    };
  } finally {
    await vault.stop();
    await log.stop();
    for (const s of servers) await new Promise((resolve) => s.close(resolve));
    await certs.dispose();
  }
}

export const egressBench: Bench = {
  name: "egress",
  title: "credential proxy egress: tunnel and interception vs direct HTTPS",
  run: runBench,
};

runIfMain(egressBench, import.meta.url);

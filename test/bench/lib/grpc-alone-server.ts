/**
 * A gRPC server with nothing of ours in it: grpc-js answering grpc.health.v1.Health/Check with
 * SERVING from bytes it never decodes, on 127.0.0.1 at a port of its own (it prints it). Run as its own
 * process by grpc-alone.ts, it is the least any unary call can cost on this machine with this
 * stack (Node's HTTP/2 and grpc-js), measured beside the session log's calls.
 */
import * as grpc from "@grpc/grpc-js";
import { HEALTH_CHECK } from "./health-method.js";

/** HealthCheckResponse { status: SERVING } */
const SERVING = Buffer.from([0x08, 0x01]);

const server = new grpc.Server();
server.addService(
  HEALTH_CHECK,
  { check: (_call: unknown, callback: grpc.sendUnaryData<Buffer>) => callback(null, SERVING) },
);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  process.stdout.write(`${port}\n`);
});
process.once("SIGTERM", () => server.forceShutdown());

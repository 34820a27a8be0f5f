/**
 * A Harness gRPC service that counts the Wake calls it gets and hands each, as it came, to a
 * real harness (whichever `target` names at the time): put between the gateway and the harness
 * (MH_HARNESS_ADDR), it shows which sends made a Wake RPC, with the harness's real answers. The
 * caller's token is not checked here; the calls go on with the target client's own.
 */
import * as grpc from "@grpc/grpc-js";
import { HarnessService, type ListActiveRequest, type ListActiveResponse, type WakeRequest, type WakeResponse } from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit/grpc";

export type HarnessRpc = PromiseClient<typeof HarnessService>;

export interface CountingHarness {
  /** host:port for MH_HARNESS_ADDR. */
  readonly address: string;
  /** The sessions named by the Wake calls so far, in order of arrival. */
  readonly wakes: readonly string[];
  /** Where the calls go from now on. */
  target: HarnessRpc;
  close(): Promise<void>;
}

export async function startCountingHarness(target: HarnessRpc): Promise<CountingHarness> {
  const wakes: string[] = [];
  const to = { target };
  const server = new grpc.Server();
  const forward =
    <Req, Res>(call: (req: Req) => Promise<Res>) =>
    (c: grpc.ServerUnaryCall<Req, Res>, done: grpc.sendUnaryData<Res>): void => {
      call(c.request).then(
        (res) => done(null, res),
        (err: unknown) => done(err as grpc.ServiceError),
      );
    };
  server.addService(HarnessService, {
    wake: forward((req: WakeRequest): Promise<WakeResponse> => {
      wakes.push(req.sessionId);
      return to.target.wake(req);
    }),
    listActive: forward((req: ListActiveRequest): Promise<ListActiveResponse> => to.target.listActive(req)),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err === null ? resolve(p) : reject(err))),
  );
  return {
    address: `127.0.0.1:${port}`,
    wakes,
    get target() {
      return to.target;
    },
    set target(t: HarnessRpc) {
      to.target = t;
    },
    close: () => new Promise((resolve) => server.tryShutdown(() => resolve())),
  };
}

/**
 * The metaharness.v1.SandboxBroker gRPC service: each method mapped onto the operation that
 * implements it. Errors become statuses in the service-kit wrappers; tool failures never do.
 */
import type { UntypedServiceImplementation } from "@grpc/grpc-js";
import type { SandboxBrokerServer } from "@metaharness/proto";
import { unary, type Logger } from "@metaharness/service-kit";
import type { BrokerContext } from "./broker/context.js";
import { execute } from "./broker/execute.js";
import { describe, list, release, transfer } from "./broker/manage.js";
import { provision } from "./broker/provision.js";
import { addRepositories } from "./broker/repositories.js";
import { connectHandHandler } from "./hands/connect.js";

const NAME = "metaharness.v1.SandboxBroker";

export function sandboxBrokerService(ctx: BrokerContext, logger: Logger): UntypedServiceImplementation {
  const impl: SandboxBrokerServer = {
    provision: unary(`${NAME}/Provision`, logger, (req) => provision(ctx, req)),
    addRepositories: unary(`${NAME}/AddRepositories`, logger, (req) => addRepositories(ctx, req)),
    execute: unary(`${NAME}/Execute`, logger, (req, call) => execute(ctx, req, call.signal)),
    release: unary(`${NAME}/Release`, logger, (req) => release(ctx, req)),
    listSandboxes: unary(`${NAME}/ListSandboxes`, logger, (req) => list(ctx, req)),
    describeSandbox: unary(`${NAME}/DescribeSandbox`, logger, (req) => describe(ctx, req)),
    transfer: unary(`${NAME}/Transfer`, logger, (req) => transfer(ctx, req)),
    connectHand: connectHandHandler(ctx.hands, logger.child({ rpc: `${NAME}/ConnectHand` })),
  };
  return impl;
}

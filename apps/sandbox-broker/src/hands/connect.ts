/**
 * The ConnectHand stream: a hand's first message registers it (kind, hand_id, tools and their
 * specs), later ones carry results; the broker's messages are execute requests. When the stream
 * ends, fails or is cancelled, the hand is gone and its sandboxes with it.
 */
import type { handleBidiStreamingCall } from "@grpc/grpc-js";
import { MhError, invalidArgument } from "@metaharness/errors";
import type { ConnectHandRequest, ConnectHandResponse, HandRegistration } from "@metaharness/proto";
import { UndecodableRequest, toStatusError } from "@metaharness/service-kit/grpc";
import type { Logger } from "@metaharness/service-kit/logging";
import { ConnectedHand, type HandRegistry } from "./registry.js";
import { HAND_NAME, checkToolSpecs } from "./tool-specs.js";

function checkRegistration(r: HandRegistration): void {
  if (!HAND_NAME.test(r.kind)) throw invalidArgument("register.kind", "must be 1-128 of [A-Za-z0-9._:-]");
  if (!HAND_NAME.test(r.handId)) throw invalidArgument("register.hand_id", "must be 1-128 of [A-Za-z0-9._:-]");
  checkToolSpecs(r);
}

/**
 * `kinds`: what this hand's token may register (its tokens-file entry's "scopes"); a hand is
 * trusted with the sessions' calls to its kind, so a token serves only the kinds it was given.
 */
export function connectHandHandler(
  registry: HandRegistry,
  logger: Logger,
  kinds: readonly string[],
): handleBidiStreamingCall<ConnectHandRequest, ConnectHandResponse> {
  return (call) => {
    let hand: ConnectedHand | undefined;
    let over = false;
    const finish = (reason: string): void => {
      if (over) return;
      over = true;
      if (hand === undefined) return;
      registry.remove(hand);
      hand.close(reason);
      logger.warn({ hand_id: hand.handId, kind: hand.kind, reason }, "hand disconnected");
    };
    const fail = (err: MhError): void => {
      logger.warn({ code: err.code, error: err.message }, "ConnectHand refused");
      finish(`hand ${hand?.handId ?? "?"} broke the protocol: ${err.message}`);
      call.emit("error", toStatusError(err, undefined));
    };

    call.on("data", (req: ConnectHandRequest | UndecodableRequest) => {
      if (over) return;
      if (req instanceof UndecodableRequest) {
        fail(new MhError("INVALID_ARGUMENT", `a message could not be decoded: ${req.reason}`, { field: req.field }));
        return;
      }
      const m = req.message;
      try {
        if (hand === undefined) {
          if (m?.$case !== "register") throw invalidArgument("register", "the first message must register the hand");
          checkRegistration(m.value);
          if (!kinds.includes(m.value.kind)) {
            throw new MhError("PERMISSION_DENIED", `this hand's token may register ${kinds.length === 0 ? "no kind" : kinds.join(", ")}, not ${m.value.kind}`, {
              field: "register.kind",
            });
          }
          const connected = new ConnectedHand(m.value, (msg) => call.write(msg), () => call.end());
          registry.add(connected);
          hand = connected;
          logger.info({ hand_id: hand.handId, kind: hand.kind, tools: [...hand.tools] }, "hand connected");
          return;
        }
        if (m?.$case === "result") {
          if (!hand.deliver(m.value)) logger.debug({ hand_id: hand.handId, call_id: m.value.callId }, "late or unknown hand result dropped");
          return;
        }
        throw invalidArgument("message", "after registering, a hand sends only results");
      } catch (err) {
        fail(MhError.from(err));
      }
    });
    call.on("end", () => {
      finish(`hand ${hand?.handId ?? "?"} (${hand?.kind ?? "?"}) disconnected`);
      call.end();
    });
    call.on("cancelled", () => finish(`hand ${hand?.handId ?? "?"} (${hand?.kind ?? "?"}) disconnected`));
    call.on("error", () => finish(`hand ${hand?.handId ?? "?"} (${hand?.kind ?? "?"}) lost its connection`));
  };
}

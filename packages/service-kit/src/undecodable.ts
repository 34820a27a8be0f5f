/**
 * Requests that cannot be decoded answer INVALID_ARGUMENT, not INTERNAL. grpc-js answers a
 * deserializer that throws with INTERNAL ("Error deserializing request"), which reads as the
 * server's fault, while ts-proto's decoders throw on a client's mistake too: a 64-bit integer
 * above 2^53-1 (generated with forceLong=number), a truncated message. So our services'
 * deserializers return an UndecodableRequest instead of throwing, and the handlers refuse it
 * (grpc-handlers.ts).
 */
import type { ServiceDefinition } from "@grpc/grpc-js";

export class UndecodableRequest {
  constructor(readonly reason: string) {}
}

/** `definition` with every request deserializer returning an UndecodableRequest for what it cannot decode. */
export function decodingSafely(definition: ServiceDefinition): ServiceDefinition {
  return Object.fromEntries(
    Object.entries(definition).map(([name, method]) => {
      const decode = method.requestDeserialize;
      const requestDeserialize = (bytes: Buffer): unknown => {
        try {
          return decode(bytes);
        } catch (err) {
          return new UndecodableRequest(err instanceof Error ? err.message : String(err));
        }
      };
      return [name, { ...method, requestDeserialize }];
    }),
  );
}

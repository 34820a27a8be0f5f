/**
 * Which field of a request holds a 64-bit integer that no JavaScript number holds exactly. The
 * generated code reads 64-bit fields as numbers (ts-proto, forceLong=number) and throws on one
 * beyond ±(2^53-1) without saying where ("Value is larger than Number.MAX_SAFE_INTEGER"). Only
 * for such a refusal, the same bytes are read again here with @bufbuild/protobuf, which keeps
 * them as bigint, and the first such value is named as protobuf names it: `events[2].seq`,
 * `created_at.seconds`, `labels[k]`.
 */
import { fromBinary, createFileRegistry, type FileRegistry } from "@bufbuild/protobuf";
import { reflect, isReflectList, isReflectMap, isReflectMessage, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { contractDescriptorSet } from "./descriptor.js";

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
const MIN = BigInt(Number.MIN_SAFE_INTEGER);

let registry: FileRegistry | undefined;

function contracts(): FileRegistry {
  registry ??= createFileRegistry(contractDescriptorSet());
  return registry;
}

/**
 * The path of the first integer beyond ±(2^53-1) in `bytes`, a request of the method at
 * `methodPath` ("/metaharness.v1.SessionLog/EmitEvent"); undefined when the method is not one of
 * our contracts, the bytes do not decode, or every integer fits.
 */
export function unsafeIntegerField(methodPath: string, bytes: Uint8Array): string | undefined {
  const [, service, method] = /^\/([^/]+)\/([^/]+)$/.exec(methodPath) ?? [];
  if (service === undefined || method === undefined) return undefined;
  const input = contracts().getService(service)?.methods.find((m) => m.name === method)?.input;
  if (input === undefined) return undefined;
  let message: ReflectMessage;
  try {
    message = reflect(input, fromBinary(input, bytes));
  } catch {
    return undefined;
  }
  return inMessage(message, "");
}

function inMessage(message: ReflectMessage, path: string): string | undefined {
  for (const field of message.sortedFields) {
    if (!message.isSet(field)) continue;
    const at = path === "" ? field.name : `${path}.${field.name}`;
    const found = inValue(message.get(field), at);
    if (found !== undefined) return found;
  }
  return undefined;
}

function inValue(value: unknown, at: string): string | undefined {
  if (typeof value === "bigint") return value > MAX || value < MIN ? at : undefined;
  if (isReflectMessage(value)) return inMessage(value, at);
  if (isReflectList(value)) {
    let i = 0;
    for (const item of value) {
      const found = inValue(item, `${at}[${i}]`);
      if (found !== undefined) return found;
      i += 1;
    }
    return undefined;
  }
  if (isReflectMap(value)) {
    for (const [key, item] of value) {
      const entry = `${at}[${String(key)}]`;
      if (typeof key === "bigint" && (key > MAX || key < MIN)) return entry;
      const found = inValue(item, entry);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

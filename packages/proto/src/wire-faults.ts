/**
 * Bytes the generated decoders accept although they are not protobuf. ts-proto reads a field it
 * does not know by skipping it (@bufbuild/protobuf's BinaryReader.skip), and that skip reads a
 * varint without a length limit: a request with an unknown field holding an over-long varint (11
 * bytes and more, or a 10th byte beyond the 64th bit) decoded without a word, as did a field
 * number 0 (the decoder stops there and drops the rest) and an end-group tag with no group open.
 * Known fields are read strictly (their varints throw beyond 10 bytes), so only the skipped parts
 * need a second look: this walks a request's bytes once, with the contracts' descriptors to know
 * which length-delimited fields are messages (whose unknown fields are skipped the same way), and
 * names the first fault. Strings, bytes and packed lists are left to the decoder.
 */
import { createFileRegistry, type DescMessage, type FileRegistry } from "@bufbuild/protobuf";
import { contractDescriptorSet } from "./descriptor.js";

/** A field's nested message plan: what the decoder recurses into, by field number. */
interface Plan {
  readonly fields: ReadonlyMap<number, { readonly name: string; readonly message: () => Plan | undefined }>;
}

const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;
/** As ts-proto's decoders: deeper nesting is refused anyway. */
const MAX_DEPTH = 100;

let registry: FileRegistry | undefined;
const plans = new Map<string, Plan>();
const methods = new Map<string, Plan | undefined>();

function contracts(): FileRegistry {
  registry ??= createFileRegistry(contractDescriptorSet());
  return registry;
}

/** The plan of a nested message, resolved at its first use (types refer to each other in cycles). */
function once(resolve: () => Plan): () => Plan {
  let plan: Plan | undefined;
  return () => (plan ??= resolve());
}

function planOf(desc: DescMessage): Plan {
  const known = plans.get(desc.typeName);
  if (known !== undefined) return known;
  const fields = new Map<number, { name: string; message: () => Plan | undefined }>();
  const plan: Plan = { fields };
  plans.set(desc.typeName, plan); // before the fields: messages refer to themselves (Struct, Value)
  for (const field of desc.fields) {
    if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
      fields.set(field.number, { name: field.name, message: once(() => planOf(field.message)) });
    } else if (field.fieldKind === "map") {
      // A map entry is a message of its own (key 1, value 2), decoded with its own skips.
      const value = field.mapKind === "message" ? field.message : undefined;
      const entry: Plan = { fields: new Map(value === undefined ? [] : [[2, { name: "value", message: once(() => planOf(value)) }]]) };
      fields.set(field.number, { name: field.name, message: () => entry });
    }
  }
  return plan;
}

/** A fault; `path` is filled in on the way out, so a request without one builds no names. */
class Fault extends Error {
  path: string[] = [];
}

class Walk {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  /** A varint of at most 10 bytes whose value fits 64 bits; its value as a double (exact for lengths and tags). */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new Fault("ends inside a varint");
      const b = this.buf[this.pos++]!;
      if (i === 9 && (b & 0x80) !== 0) throw new Fault("a varint longer than 10 bytes");
      if (i === 9 && b > 1) throw new Fault("a varint beyond 64 bits");
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return value;
      scale *= 128;
    }
    throw new Fault("a varint longer than 10 bytes");
  }

  skipBytes(n: number): void {
    if (n > this.buf.length - this.pos) throw new Fault("runs past the end of its message");
    this.pos += n;
  }

  /** Fields until `end`, or until the end-group tag of `group` when inside a group. */
  message(plan: Plan | undefined, end: number, depth: number, group?: number): void {
    if (depth > MAX_DEPTH) throw new Fault(`nested more than ${MAX_DEPTH} deep`);
    let number = 0;
    try {
      while (this.pos < end) {
        number = 0;
        const tag = this.varint();
        if (tag > 0xffffffff) throw new Fault("a tag beyond 32 bits");
        number = Math.floor(tag / 8);
        if (number === 0) throw new Fault("a field number 0");
        const wire = tag % 8;
        switch (wire) {
          case VARINT:
            this.varint();
            break;
          case FIXED64:
            this.skipBytes(8);
            break;
          case FIXED32:
            this.skipBytes(4);
            break;
          case LENGTH: {
            const length = this.varint();
            const start = this.pos;
            this.skipBytes(length);
            const nested = plan?.fields.get(number)?.message();
            if (nested !== undefined) {
              this.pos = start;
              this.message(nested, start + length, depth + 1);
            }
            break;
          }
          case START_GROUP:
            this.message(undefined, end, depth + 1, number);
            break;
          case END_GROUP:
            if (group !== number) throw new Fault("an end of group with no group open");
            return;
          default:
            throw new Fault(`wire type ${wire}, which protobuf does not have`);
        }
        if (this.pos > end) throw new Fault("runs past the end of its message");
      }
      number = 0; // the group's own field is named by the caller
      if (group !== undefined) throw new Fault("a group that never ends");
    } catch (err) {
      if (err instanceof Fault && number !== 0) err.path.unshift(plan?.fields.get(number)?.name ?? `field ${number}`);
      throw err;
    }
  }
}

/** The request message of `methodPath` ("/metaharness.v1.SessionLog/CreateSession"), if one of ours. */
function requestPlan(methodPath: string): Plan | undefined {
  if (methods.has(methodPath)) return methods.get(methodPath);
  const [, service, method] = /^\/([^/]+)\/([^/]+)$/.exec(methodPath) ?? [];
  const input =
    service === undefined || method === undefined ? undefined : contracts().getService(service)?.methods.find((m) => m.name === method)?.input;
  const plan = input === undefined ? undefined : planOf(input);
  methods.set(methodPath, plan);
  return plan;
}

/**
 * What is wrong with `bytes` as a request of the method at `methodPath` beyond what its decoder
 * checks, named by where it sits (`metadata.field 15: a varint longer than 10 bytes`); undefined
 * when nothing is, or when the method is not one of our contracts (then unknown fields are read
 * without a plan: the top level is still checked).
 */
export function wireFault(methodPath: string, bytes: Uint8Array): string | undefined {
  try {
    new Walk(bytes).message(requestPlan(methodPath), bytes.length, 0);
    return undefined;
  } catch (err) {
    if (!(err instanceof Fault)) throw err;
    return err.path.length === 0 ? err.message : `${err.path.join(".")}: ${err.message}`;
  }
}

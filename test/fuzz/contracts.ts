/**
 * fast-check arbitraries from the contracts themselves (buf's descriptor set, @metaharness/proto):
 * for each method of each service, its request as bytes, three ways: a message built field by
 * field from its descriptor (any value each field's type allows, ids the test knows among them),
 * such a message with bytes flipped, cut or inserted, and raw bytes.
 */
import { create, createFileRegistry, toBinary, ScalarType, type DescField, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { contractDescriptorSet } from "@metaharness/proto";
import fc from "fast-check";

/** Every service of the contracts, by full name ("metaharness.v1.SessionLog"). */
export function contractServices(): Map<string, DescService> {
  const registry = createFileRegistry(contractDescriptorSet());
  const services = new Map<string, DescService>();
  for (const file of registry.files) for (const s of file.services) services.set(s.typeName, s);
  return services;
}

/** The gRPC path of `method`. */
export const pathOf = (method: DescMethod): string => `/${method.parent.typeName}/${method.name}`;

const MAX_DEPTH = 3;

/** Strings a field may hold: anything, or one the test knows the service has (an id), or text with a NUL or a lone surrogate. */
function stringArb(known: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.string({ maxLength: 24 }) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 24 }) },
    { weight: 1, arbitrary: fc.constantFrom("", "\u0000", "\ud800", "a".repeat(300), "../etc/passwd", "1e309", "-1") },
    ...(known.length === 0 ? [] : [{ weight: 3, arbitrary: fc.constantFrom(...known) }]),
  );
}

function scalarArb(type: ScalarType, known: readonly string[]): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return stringArb(known);
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 48 });
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return fc.double();
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return fc.oneof(fc.integer({ min: -5, max: 200 }), fc.integer());
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.oneof(fc.integer({ min: 0, max: 200 }), fc.nat({ max: 0xffffffff }));
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.oneof(fc.bigInt({ min: 0n, max: 200n }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }));
    default:
      return fc.oneof(fc.bigInt({ min: -5n, max: 200n }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }));
  }
}

function valueArb(field: DescField, depth: number, known: readonly string[]): fc.Arbitrary<unknown> {
  switch (field.fieldKind) {
    case "scalar":
      return scalarArb(field.scalar, known);
    case "enum":
      return fc.oneof(fc.constantFrom(...field.enum.values.map((v) => v.number)), fc.integer({ min: -3, max: 50 }));
    case "message":
      return messageInitArb(field.message, depth + 1, known);
    case "list": {
      const element =
        field.listKind === "scalar" ? scalarArb(field.scalar, known) : field.listKind === "enum" ? fc.integer({ min: -1, max: 20 }) : messageInitArb(field.message, depth + 1, known);
      return fc.array(element, { maxLength: depth >= MAX_DEPTH ? 0 : 3 });
    }
    case "map": {
      const key = field.mapKey === ScalarType.STRING ? stringArb(known) : fc.integer({ min: -5, max: 50 }).map(String);
      const value =
        field.mapKind === "scalar" ? scalarArb(field.scalar, known) : field.mapKind === "enum" ? fc.integer({ min: 0, max: 5 }) : messageInitArb(field.message, depth + 1, known);
      return fc.dictionary(key, value, { maxKeys: depth >= MAX_DEPTH ? 0 : 3 });
    }
  }
}

/** An init object for `create(desc, init)`: each field set or left out, one case of each oneof at most. */
function messageInitArb(desc: DescMessage, depth: number, known: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  if (depth > MAX_DEPTH) return fc.constant({});
  const parts: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of desc.fields) {
    if (field.oneof !== undefined) continue;
    parts[field.localName] = fc.option(valueArb(field, depth, known), { nil: undefined, freq: 3 });
  }
  for (const oneof of desc.oneofs) {
    parts[oneof.localName] = fc.option(
      fc.oneof(...oneof.fields.map((f) => valueArb(f, depth, known).map((value) => ({ case: f.localName, value })))),
      { nil: undefined, freq: 3 },
    );
  }
  return fc.record(parts).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));
}

/** A well-formed request of `desc` as bytes. */
export function messageArb(desc: DescMessage, known: readonly string[]): fc.Arbitrary<Uint8Array> {
  return messageInitArb(desc, 0, known).map((init) => toBinary(desc, create(desc, init as never)));
}

/** `base` with a few bytes flipped, cut or inserted: mostly undecodable, sometimes a different message. */
export function mutatedArb(base: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  const edit = fc.record({ at: fc.nat(), kind: fc.constantFrom("flip", "cut", "insert"), byte: fc.integer({ min: 0, max: 255 }) });
  return fc.tuple(base, fc.array(edit, { minLength: 1, maxLength: 4 })).map(([bytes, edits]) => {
    const out = [...bytes];
    for (const e of edits) {
      const at = out.length === 0 ? 0 : e.at % out.length;
      if (e.kind === "flip" && out.length > 0) out[at] = out[at]! ^ (e.byte || 1);
      else if (e.kind === "cut") out.splice(at, 1 + (e.byte % 4));
      else out.splice(at, 0, e.byte);
    }
    return Uint8Array.from(out);
  });
}

/** Any bytes, up to 200. */
export const rawArb: fc.Arbitrary<Uint8Array> = fc.uint8Array({ maxLength: 200 });

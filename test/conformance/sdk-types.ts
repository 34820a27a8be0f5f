/**
 * The official SDK's declared shapes as a checker of JSON values: the SDK's .d.ts files under
 * resources/beta/ are loaded with the TypeScript compiler API, and a value is walked against a
 * named type. A violation is a missing required field, a field the type does not declare (unless
 * it has an index signature), a value outside a literal union (an unknown enum value or event
 * type), a value of the wrong JSON kind, or an id without the prefix its object's kind has.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { readdirSync } from "node:fs";
import ts from "typescript";

/** Ids by the object's `type`: what the SDK's docs and Anthropic's service give them. */
const ID_PREFIXES: Readonly<Record<string, string>> = {
  agent: "agent_",
  environment: "env_",
  session: "sesn_",
  vault: "vlt_",
  vault_credential: "vcrd_",
  session_thread: "sthr_",
};
const EVENT_TYPE = /^(user|agent|session|span|system)\.[a-z_]+$/;

function declarationFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return declarationFiles(path);
    return entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

export class SdkTypes {
  private readonly checker: ts.TypeChecker;
  private readonly named = new Map<string, ts.Type>();

  constructor() {
    const require = createRequire(import.meta.url);
    const root = dirname(require.resolve("@anthropic-ai/sdk"));
    const files = declarationFiles(join(root, "resources", "beta"));
    const program = ts.createProgram(files, { strict: true, noEmit: true, skipLibCheck: true, types: [] });
    this.checker = program.getTypeChecker();
    for (const file of files) {
      const source = program.getSourceFile(file);
      const module = source === undefined ? undefined : this.checker.getSymbolAtLocation(source);
      if (module === undefined) continue;
      for (const symbol of this.checker.getExportsOfModule(module)) {
        const target = symbol.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(symbol) : symbol;
        if (target.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias) && !this.named.has(symbol.name)) {
          this.named.set(symbol.name, this.checker.getDeclaredTypeOfSymbol(target));
        }
      }
    }
  }

  has(name: string): boolean {
    return this.named.has(name);
  }

  /** The violations of `value` against the SDK type `name` ("where: what"). */
  check(value: unknown, name: string, where = "$"): string[] {
    const type = this.named.get(name);
    if (type === undefined) return [`${where}: the SDK declares no type ${name}`];
    const out: string[] = [];
    this.walk(value, type, where, out);
    return out;
  }

  private walk(value: unknown, type: ts.Type, path: string, out: string[]): void {
    const F = ts.TypeFlags;
    if (type.flags & (F.Any | F.Unknown)) return;
    if (type.isUnion()) return this.walkUnion(value, type, path, out);
    if (value === null) {
      if (!(type.flags & F.Null)) out.push(`${path}: null where the SDK declares ${this.checker.typeToString(type)}`);
      return;
    }
    if (value === undefined) {
      out.push(`${path}: missing`);
      return;
    }
    if (type.flags & F.StringLiteral || type.flags & F.NumberLiteral) {
      const literal = (type as ts.LiteralType).value;
      if (value !== literal) out.push(`${path}: ${JSON.stringify(value)} is not ${JSON.stringify(literal)}`);
      return;
    }
    if (type.flags & F.BooleanLiteral) {
      if (typeof value !== "boolean" || String(value) !== this.checker.typeToString(type)) out.push(`${path}: ${JSON.stringify(value)} is not ${this.checker.typeToString(type)}`);
      return;
    }
    if (type.flags & F.StringLike) return this.kind(value, "string", path, out);
    // `string & {}`: how the SDK names known values (a model's id) while accepting any string.
    if (type.isIntersection() && type.types.some((t) => t.flags & F.String)) return this.kind(value, "string", path, out);
    if (type.flags & F.NumberLike) return this.kind(value, "number", path, out);
    if (type.flags & F.BooleanLike) return this.kind(value, "boolean", path, out);
    if (type.flags & F.Null) {
      out.push(`${path}: ${JSON.stringify(value)} where the SDK declares null`);
      return;
    }
    if (this.checker.isArrayType(type) || this.checker.isTupleType(type)) {
      if (!Array.isArray(value)) {
        out.push(`${path}: not an array`);
        return;
      }
      const element = this.checker.getTypeArguments(type as ts.TypeReference)[0];
      if (element !== undefined) value.forEach((v, i) => this.walk(v, element, `${path}[${i}]`, out));
      return;
    }
    if (type.flags & F.Object || type.isIntersection()) return this.walkObject(value, type, path, out);
  }

  private kind(value: unknown, kind: string, path: string, out: string[]): void {
    if (typeof value !== kind) out.push(`${path}: ${JSON.stringify(value)} is not a ${kind}`);
  }

  private walkUnion(value: unknown, type: ts.UnionType, path: string, out: string[]): void {
    const F = ts.TypeFlags;
    if (value === null || value === undefined) {
      const allowed = type.types.some((t) => t.flags & (value === null ? F.Null : F.Undefined));
      if (!allowed) out.push(`${path}: ${value === null ? "null" : "missing"} where the SDK declares ${this.checker.typeToString(type)}`);
      return;
    }
    const members = type.types.filter((t) => !(t.flags & (F.Null | F.Undefined)));
    if (members.length === 1) return this.walk(value, members[0]!, path, out);
    // An enum: a union of literals.
    if (members.every((t) => t.flags & (F.StringLiteral | F.NumberLiteral | F.BooleanLiteral))) {
      if (typeof value === "boolean" && members.some((t) => t.flags & F.BooleanLiteral)) return;
      if (!members.some((t) => (t as ts.LiteralType).value === value)) {
        out.push(`${path}: ${JSON.stringify(value)} is not one of ${members.map((t) => this.checker.typeToString(t)).join(" | ")}`);
      }
      return;
    }
    // Objects told apart by their `type` literal, as the SDK's unions are.
    const tagged = typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>)["type"] : undefined;
    const withTags = members.filter((m) => this.tagsOf(m) !== undefined);
    if (typeof tagged === "string" && withTags.length > 0) {
      const matching = withTags.filter((m) => this.tagsOf(m)!.includes(tagged));
      if (matching.length === 0) {
        out.push(`${path}.type: ${JSON.stringify(tagged)} is not one of ${withTags.flatMap((m) => this.tagsOf(m)!).map((t) => JSON.stringify(t)).join(" | ")}`);
        return;
      }
      if (matching.length === 1) return this.walk(value, matching[0]!, path, out);
    }
    // Otherwise the value must fit one member: report the closest one's violations.
    let best: string[] | undefined;
    for (const member of members) {
      const found: string[] = [];
      this.walk(value, member, path, found);
      if (found.length === 0) return;
      if (best === undefined || found.length < best.length) best = found;
    }
    out.push(...(best ?? [`${path}: fits no member of ${this.checker.typeToString(type)}`]));
  }

  /** The literal values of an object type's `type` property, if it has one. */
  private tagsOf(type: ts.Type): string[] | undefined {
    const prop = type.getProperty("type");
    if (prop === undefined) return undefined;
    const t = this.checker.getTypeOfSymbol(prop);
    const literals = (t.isUnion() ? t.types : [t]).filter((x) => x.flags & ts.TypeFlags.StringLiteral).map((x) => (x as ts.StringLiteralType).value);
    return literals.length > 0 ? literals : undefined;
  }

  private walkObject(value: unknown, type: ts.Type, path: string, out: string[]): void {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      out.push(`${path}: not an object (the SDK declares ${this.checker.typeToString(type)})`);
      return;
    }
    const record = value as Record<string, unknown>;
    const props = this.checker.getPropertiesOfType(type);
    const declared = new Set(props.map((p) => p.name));
    for (const prop of props) {
      const optional = (prop.flags & ts.SymbolFlags.Optional) !== 0;
      if (!(prop.name in record)) {
        if (!optional) out.push(`${path}.${prop.name}: missing (required by ${this.checker.typeToString(type)})`);
        continue;
      }
      this.walk(record[prop.name], this.checker.getTypeOfSymbol(prop), `${path}.${prop.name}`, out);
    }
    const index = this.checker.getIndexInfoOfType(type, ts.IndexKind.String);
    for (const key of Object.keys(record)) {
      if (declared.has(key)) continue;
      if (index !== undefined) this.walk(record[key], index.type, `${path}.${key}`, out);
      else out.push(`${path}.${key}: not declared by ${this.checker.typeToString(type)}`);
    }
    const kind = record["type"];
    const id = record["id"];
    if (typeof kind === "string" && typeof id === "string") {
      const prefix = EVENT_TYPE.test(kind) ? "sevt_" : ID_PREFIXES[kind];
      if (prefix !== undefined && !id.startsWith(prefix)) out.push(`${path}.id: ${JSON.stringify(id)} does not start with ${prefix} (a ${kind})`);
    }
  }
}

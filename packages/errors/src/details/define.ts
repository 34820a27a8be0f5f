/**
 * Typed error details. On the wire an MhError's details are a flat JSON object (gRPC trailer
 * `mh-error-details`); here each kind of detail is a named shape with a constructor and a reader,
 * as connect-es's `findDetails` reads a typed detail message, so no caller writes or reads a
 * detail by string key: `new MhError(code, msg, { details: LeaseHolder.of({ holder, epoch }) })`,
 * then `LeaseHolder.find(err)?.holder`.
 */
import type { Details } from "../mh-error.js";

type FieldType = "string" | "number" | "boolean";
export type DetailShape = Readonly<Record<string, FieldType>>;
export type DetailValue<S extends DetailShape> = {
  readonly [K in keyof S]: S[K] extends "string" ? string : S[K] extends "number" ? number : boolean;
};

export interface ErrorDetail<S extends DetailShape> {
  /** What the detail says, for docs and messages. */
  readonly name: string;
  readonly shape: S;
  /** The entries to put in an error's details; spread several to carry several details. */
  of(value: DetailValue<S>): Details;
  /** This detail of `err`, if it carries every field of it with the right type; else undefined. */
  find(err: unknown): DetailValue<S> | undefined;
}

export function defineDetail<S extends DetailShape>(name: string, shape: S): ErrorDetail<S> {
  return {
    name,
    shape,
    of: (value) => ({ ...value }),
    find(err) {
      if (typeof err !== "object" || err === null || !("details" in err)) return undefined;
      const details = err.details;
      if (typeof details !== "object" || details === null) return undefined;
      const found: Record<string, unknown> = {};
      for (const [key, type] of Object.entries(shape)) {
        const value = (details as Record<string, unknown>)[key];
        if (typeof value !== type) return undefined;
        found[key] = value;
      }
      return found as DetailValue<S>;
    },
  };
}

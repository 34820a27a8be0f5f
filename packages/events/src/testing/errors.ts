/** Test helper: the MhError a call throws, so tests can assert its code and field. */
import { MhError } from "@metaharness/errors";

export function thrown(fn: () => unknown): MhError {
  try {
    fn();
  } catch (err) {
    if (err instanceof MhError) return err;
    throw err;
  }
  throw new Error("expected an MhError, but nothing was thrown");
}

/** The field of the INVALID_ARGUMENT that `fn` throws. */
export function invalidField(fn: () => unknown): string | undefined {
  const err = thrown(fn);
  if (err.code !== "INVALID_ARGUMENT") throw new Error(`expected INVALID_ARGUMENT, got ${err.code}: ${err.message}`);
  return err.field;
}

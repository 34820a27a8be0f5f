/**
 * A benchmark's own flags, read from process.argv. run.ts takes every argument not starting with
 * `--` for a benchmark's name, so a flag carries its value after `=`: `--sessions=1,16`.
 */

export const hasFlag = (name: string): boolean => process.argv.includes(`--${name}`);

/** The numbers of `--name=a,b,c` (`--name=` alone: none); undefined when the flag is absent. Throws naming the flag on anything else. */
export function numbersFlag(name: string): number[] | undefined {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (arg === undefined) return undefined;
  const text = arg.slice(name.length + 3).trim();
  if (text === "") return [];
  const values = text.split(",").map((s) => (s.trim() === "" ? NaN : Number(s.trim())));
  if (values.some((v) => !Number.isFinite(v) || v < 0)) {
    throw new Error(`--${name} takes numbers >= 0 separated by commas (e.g. --${name}=1,16), got ${JSON.stringify(arg)}`);
  }
  return values;
}

/** The value of `--name=value` when it is one of `choices`, `fallback` when the flag is absent; throws naming the flag on anything else. */
export function choiceFlag<C extends string>(name: string, choices: readonly C[], fallback: C): C {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (arg === undefined) return fallback;
  const value = arg.slice(name.length + 3).trim();
  if (!(choices as readonly string[]).includes(value)) throw new Error(`--${name} takes one of ${choices.join(", ")}, got ${JSON.stringify(arg)}`);
  return value as C;
}

/**
 * The items of `--name=a,b` as strings (`--name=` alone: none); undefined when the flag is absent.
 * For node flags given to a benchmark's service processes: `--harness-node-flags=--max-semi-space-size=32`.
 */
export function listFlag(name: string): string[] | undefined {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (arg === undefined) return undefined;
  return arg
    .slice(name.length + 3)
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** The text of `--name=value` (a path, say); undefined when the flag is absent or empty. */
export function textFlag(name: string): string | undefined {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  const value = arg?.slice(name.length + 3).trim();
  return value === "" ? undefined : value;
}

/**
 * Environment package lists (the Managed Agents API's BetaPackages), checked the same way by the
 * gateway (environments.create/update: a 400 naming the entry) and the sandbox broker (BuildLayer,
 * Provision: INVALID_ARGUMENT naming it): a list the gateway stored but the broker refused would
 * fail every sandbox of the environment. Each entry is a package name with an optional version in
 * its manager's own syntax, and nothing else: no option (`-e`, `--index-url`), no URL, path or
 * whitespace, so an entry can never make a manager fetch from somewhere else or run something.
 */

export const PACKAGE_MANAGERS = ["apt", "cargo", "gem", "go", "npm", "pip"] as const;
export type PackageManager = (typeof PACKAGE_MANAGERS)[number];
export type PackageListsInput = { readonly [M in PackageManager]: readonly string[] };

/** Entries per manager, and characters per entry (the gateway's schema says the same). */
export const MAX_PACKAGES_PER_MANAGER = 256;
export const MAX_PACKAGE_SPEC_LENGTH = 256;

const VERSION_CHARS = "[A-Za-z0-9.*+~^<>=!|-]+";
const SYNTAX: { readonly [M in PackageManager]: { readonly pattern: RegExp; readonly example: string } } = {
  // Debian: lower-case names of 2+ characters; "=version" pins one.
  apt: { pattern: /^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$/, example: '"cowsay" or "cowsay=3.03+dfsg2-8"' },
  cargo: { pattern: new RegExp(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}(@${VERSION_CHARS})?$`), example: '"ripgrep" or "ripgrep@14.1.0"' },
  gem: { pattern: /^[A-Za-z0-9][A-Za-z0-9._-]*(:[A-Za-z0-9.]+)?$/, example: '"rake" or "rake:13.0.6"' },
  // A module path whose first element is a domain, then an optional @version (default @latest).
  go: { pattern: /^[a-z0-9-]+(\.[a-z0-9-]+)+(\/[A-Za-z0-9._~+-]+)+(@[A-Za-z0-9._+-]+)?$/, example: '"golang.org/x/tools/cmd/stringer@v0.28.0"' },
  npm: {
    pattern: new RegExp(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*(@${VERSION_CHARS})?$`),
    example: '"left-pad", "left-pad@1.3.0" or "@scope/name@^2"',
  },
  // PEP 508 without URLs or markers: a name, optional [extras], optional comma-separated specifiers.
  pip: {
    pattern: /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*\])?((===|==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]+(,(===|==|>=|<=|~=|!=|<|>)[A-Za-z0-9.*+!-]+)*)?$/,
    example: '"requests", "requests==2.32.3" or "requests[socks]>=2,<3"',
  },
};

export interface PackageProblem {
  /** `<manager>[<index>]`, or `<manager>` for the list itself. */
  readonly field: string;
  readonly message: string;
}

/** Every problem of `lists` (an empty array when they are usable). */
export function packageProblems(lists: PackageListsInput): PackageProblem[] {
  const problems: PackageProblem[] = [];
  for (const manager of PACKAGE_MANAGERS) {
    const list = lists[manager];
    if (list.length > MAX_PACKAGES_PER_MANAGER) {
      problems.push({ field: manager, message: `at most ${MAX_PACKAGES_PER_MANAGER} packages` });
      continue;
    }
    list.forEach((spec, i) => {
      const { pattern, example } = SYNTAX[manager];
      if (spec.length > MAX_PACKAGE_SPEC_LENGTH) {
        problems.push({ field: `${manager}[${i}]`, message: `is longer than ${MAX_PACKAGE_SPEC_LENGTH} characters` });
      } else if (!pattern.test(spec)) {
        problems.push({
          field: `${manager}[${i}]`,
          message: `${JSON.stringify(spec.slice(0, 80))} is not a package name with an optional version for ${manager} (e.g. ${example}; no options, URLs, paths or spaces)`,
        });
      }
    });
  }
  return problems;
}

/**
 * The lists in the form a layer is keyed by: each sorted and without duplicates; a go package
 * without a version gets `@latest` (what `go install` needs outside a module).
 */
export function normalizePackages(lists: PackageListsInput): { [M in PackageManager]: string[] } {
  const norm = (list: readonly string[]): string[] => [...new Set(list)].sort();
  return {
    apt: norm(lists.apt),
    cargo: norm(lists.cargo),
    gem: norm(lists.gem),
    go: norm(lists.go.map((p) => (p.includes("@") ? p : `${p}@latest`))),
    npm: norm(lists.npm),
    pip: norm(lists.pip),
  };
}

/** Whether any list names a package. */
export function hasPackages(lists: PackageListsInput | undefined): boolean {
  return lists !== undefined && PACKAGE_MANAGERS.some((m) => lists[m].length > 0);
}

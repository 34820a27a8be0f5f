import { describe, expect, it } from "vitest";
import { normalizePackages, packageProblems, type PackageListsInput } from "./packages.js";

const none: PackageListsInput = { apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };

describe("package lists", () => {
  it("takes each manager's names and versions", () => {
    expect(
      packageProblems({
        apt: ["cowsay", "sl", "libssl3=3.0.15-1~deb12u1", "g++"],
        cargo: ["ripgrep", "ripgrep@14.1.0", "cargo-edit@^0.12"],
        gem: ["rake", "rake:13.0.6"],
        go: ["golang.org/x/tools/cmd/stringer@v0.28.0", "github.com/a/b"],
        npm: ["left-pad", "left-pad@1.3.0", "@types/node@^20", "is-odd@>=3"],
        pip: ["requests", "requests==2.32.3", "requests[socks]>=2,<3", "ruamel.yaml", "six~=1.16"],
      }),
    ).toEqual([]);
  });

  it("names every entry that is an option, a URL, a path or has spaces", () => {
    const problems = packageProblems({
      ...none,
      apt: ["-o=Dir::Etc=/x", "Cowsay"],
      npm: ["git+https://evil/x", "../x", "a b"],
      pip: ["--index-url=https://x", "-e .", "pkg @ https://x/p.whl", "x; python_version<'3'"],
      go: ["stringer", "github.com/a/b@v1 -x"],
    });
    expect(problems.map((p) => p.field)).toEqual(["apt[0]", "apt[1]", "go[0]", "go[1]", "npm[0]", "npm[1]", "npm[2]", "pip[0]", "pip[1]", "pip[2]", "pip[3]"]);
    expect(problems[0]?.message).toMatch(/not a package name with an optional version for apt.*no options, URLs/);
  });

  it("refuses lists and entries over their limits", () => {
    expect(packageProblems({ ...none, pip: Array.from({ length: 257 }, (_, i) => `p${i}`) })).toEqual([{ field: "pip", message: "at most 256 packages" }]);
    expect(packageProblems({ ...none, npm: ["a".repeat(257)] })[0]?.field).toBe("npm[0]");
  });

  it("normalises for the layer key: sorted, unique, go at @latest by default", () => {
    expect(normalizePackages({ ...none, pip: ["b", "a", "b"], go: ["github.com/a/b", "github.com/c/d@v1.0.0"] })).toMatchObject({
      pip: ["a", "b"],
      go: ["github.com/a/b@latest", "github.com/c/d@v1.0.0"],
    });
  });
});

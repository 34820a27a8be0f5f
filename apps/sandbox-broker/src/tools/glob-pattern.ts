/**
 * Glob patterns as the glob tool takes them, compiled to a RegExp over a path relative to the
 * search root: `*` and `?` stay within one path segment, `**` spans any number of segments
 * (`src/**` + `/*.ts` matches `src/a.ts` and `src/x/y/a.ts`), `[abc]`/`[!a-z]` are classes and
 * `{a,b}` alternatives (not nested). Node 20 has no fs.glob, and the walk happens in the sandbox.
 */

const SPECIAL = /[.+^$()|\\]/;

export function globToRegExp(pattern: string): RegExp {
  let out = "";
  let braces = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (c === "*") {
      if (pattern.charAt(i + 1) === "*") {
        const slashAfter = pattern.charAt(i + 2) === "/";
        const atSegmentStart = i === 0 || pattern.charAt(i - 1) === "/";
        if (atSegmentStart && slashAfter) {
          out += "(?:[^/]*/)*"; // "**/": zero or more whole directories
          i += 2;
        } else {
          out += ".*";
          i += 1;
        }
      } else {
        out += "[^/]*";
      }
    } else if (c === "?") {
      out += "[^/]";
    } else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end < 0) {
        out += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, end).replace(/\\/g, "\\\\");
      if (body.startsWith("!")) body = `^${body.slice(1)}`;
      out += `[${body}]`;
      i = end;
    } else if (c === "{") {
      braces++;
      out += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      out += ")";
    } else if (c === "," && braces > 0) {
      out += "|";
    } else if (c === "}" || c === "]" || SPECIAL.test(c)) {
      out += `\\${c}`;
    } else {
      out += c;
    }
  }
  out += ")".repeat(braces);
  return new RegExp(`^${out}$`);
}

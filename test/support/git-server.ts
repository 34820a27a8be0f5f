/**
 * A real git smart-HTTP server for tests: `git http-backend` (CGI) behind a small node http
 * server that demands HTTP Basic auth with one token, so a request without it is refused (401)
 * and the only way a sandbox's push or pull can succeed is the credential proxy adding it. Bare
 * repositories live in a temp directory; `seed` creates one with a first commit.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface GitServer {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly root: string;
  /** Requests refused for a missing or wrong token. */
  readonly refused: number;
  /** Requests served. */
  readonly served: number;
  /** From now on, only this token is accepted (the old one is refused, as after a revocation). */
  accept(token: string): void;
  /** Creates bare repository `name` ("org/app.git") whose main branch holds `files`. */
  seed(name: string, files: Record<string, string>): Promise<void>;
  /** Runs git with the repository `name` as GIT_DIR (to look at it, or commit to it from the host). */
  git(name: string, ...args: string[]): string;
  /** Commits `files` to main of `name` from the host, as someone else pushing. */
  commit(name: string, files: Record<string, string>, message: string): Promise<void>;
  close(): Promise<void>;
}

const GIT_ENV = { GIT_AUTHOR_NAME: "Seed", GIT_AUTHOR_EMAIL: "seed@example.com", GIT_COMMITTER_NAME: "Seed", GIT_COMMITTER_EMAIL: "seed@example.com", HOME: tmpdir(), PATH: process.env["PATH"] ?? "/usr/bin:/bin" };

export async function startGitServer(opts: { username: string; token: string }): Promise<GitServer> {
  const root = await mkdtemp(join(tmpdir(), "mh-git-server-"));
  const basic = (token: string): string => `Basic ${Buffer.from(`${opts.username}:${token}`).toString("base64")}`;
  let expected = basic(opts.token);
  let refused = 0;
  let served = 0;
  const server = createServer((req, res) => {
    if (req.headers.authorization !== expected) {
      refused++;
      res.writeHead(401, { "www-authenticate": 'Basic realm="test git"', "content-type": "text/plain" }).end("authentication required\n");
      req.resume();
      return;
    }
    served++;
    const url = new URL(req.url ?? "/", "http://git.invalid");
    const env: Record<string, string> = {
      ...GIT_ENV,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ""),
      REQUEST_METHOD: req.method ?? "GET",
      REMOTE_USER: opts.username,
      REMOTE_ADDR: "127.0.0.1",
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      ...(req.headers["content-length"] === undefined ? {} : { CONTENT_LENGTH: req.headers["content-length"] }),
      ...(req.headers["content-encoding"] === undefined ? {} : { HTTP_CONTENT_ENCODING: req.headers["content-encoding"] }),
      ...(typeof req.headers["git-protocol"] === "string" ? { GIT_PROTOCOL: req.headers["git-protocol"] } : {}),
    };
    const cgi = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "ignore"] });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on("data", (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const colon = line.indexOf(":");
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (name === "status") status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on("close", () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const git = (name: string, ...args: string[]): string =>
    execFileSync("git", args, { env: { ...GIT_ENV, GIT_DIR: join(root, name) }, encoding: "utf8" });
  const commit = async (name: string, files: Record<string, string>, message: string): Promise<void> => {
    const work = await mkdtemp(join(tmpdir(), "mh-git-work-"));
    try {
      const run = (...args: string[]): string => execFileSync("git", args, { cwd: work, env: GIT_ENV, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      run("clone", "--quiet", join(root, name), ".");
      run("checkout", "--quiet", "-B", "main");
      for (const [path, text] of Object.entries(files)) await writeFile(join(work, path), text);
      run("add", "--all");
      run("commit", "--quiet", "-m", message);
      run("push", "--quiet", "origin", "main");
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  };
  return {
    url,
    root,
    get refused() {
      return refused;
    },
    get served() {
      return served;
    },
    accept(token) {
      expected = basic(token);
    },
    async seed(name, files) {
      execFileSync("git", ["init", "--quiet", "--bare", "--initial-branch=main", join(root, name)], { env: GIT_ENV });
      await commit(name, files, "first commit");
    },
    git,
    commit,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * A pseudo-terminal of a set size for the CLI's tests: a private tmux server (its own socket, no
 * user configuration) runs a command in a window of `width` x `height`, and the test reads the
 * screen back as a person would see it (`capture-pane`), with the history above it, colours as
 * escape sequences on request. Windows stay after their command exits, so what it printed can
 * still be read. Waits poll the screen for a condition, never sleep a fixed time.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { eventually } from "../../support/eventually.js";

const run = promisify(execFile);

/** A word for a POSIX shell, as it is. */
const quote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

export class Tmux {
  private constructor(
    private readonly dir: string,
    private readonly socket: string,
  ) {}

  /** A server with one idle window `width` columns wide. */
  static async start(width: number, height = 50): Promise<Tmux> {
    const dir = await mkdtemp(join(tmpdir(), "mh-tmux-"));
    const tmux = new Tmux(dir, join(dir, "socket"));
    await tmux.tmux("-f", "/dev/null", "new-session", "-d", "-s", "mh", "-x", String(width), "-y", String(height), "cat");
    await tmux.tmux("set-option", "-g", "remain-on-exit", "on");
    await tmux.tmux("set-option", "-g", "history-limit", "10000");
    return tmux;
  }

  /** Runs `argv` in a new window named `name`, with only the variables of `env` (TERM is tmux's own). */
  async open(name: string, argv: readonly string[], env: Readonly<Record<string, string>>): Promise<void> {
    const vars = Object.entries(env).map(([k, v]) => quote(`${k}=${v}`));
    await this.tmux("new-window", "-d", "-t", "mh", "-n", name, `exec env -i TERM=tmux-256color ${vars.join(" ")} ${argv.map(quote).join(" ")}`);
  }

  /** Everything the window shows and has scrolled past; lines the terminal wrapped are joined again (-J). */
  async screen(name: string, opts: { escapes?: boolean } = {}): Promise<string> {
    const { stdout } = await this.tmux("capture-pane", "-p", "-J", "-S", "-", ...(opts.escapes === true ? ["-e"] : []), "-t", `mh:${name}`);
    return stdout.replace(/\n+$/, "");
  }

  /** Resolves with the screen once it matches `pattern`. */
  async waitFor(name: string, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
    let text = "";
    return eventually(
      async () => {
        text = await this.screen(name);
        return pattern.test(text) ? text : undefined;
      },
      () => `${String(pattern)} in the terminal:\n${text}`,
      timeoutMs,
    );
  }

  /** Sends keys to the window, e.g. "C-c". */
  async keys(name: string, ...keys: string[]): Promise<void> {
    await this.tmux("send-keys", "-t", `mh:${name}`, ...keys);
  }

  async stop(): Promise<void> {
    await this.tmux("kill-server").catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }

  private tmux(...args: string[]): Promise<{ stdout: string }> {
    return run("tmux", ["-S", this.socket, ...args], { encoding: "utf8" });
  }
}

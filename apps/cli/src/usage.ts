/**
 * The text of `mh --help`: every command, its options, where it connects, and the exit codes.
 */
import { DEV_URL } from "./client/connect.js";
import { EXIT_CODE_HELP } from "./exit-codes.js";

export const USAGE = `mh: the command line of Meta-Harness

usage: mh <command> [options]      (mh --version: the version)

commands:
  demo                     the main job on the embedded default: an agent clones a small project
                           from a local git server into a real bubblewrap sandbox, fixes a bug and
                           pushes, streamed live (offline model); the pushed commit is shown.
                           demo, dev and run's own stack install bubblewrap when it is missing
                           (as root or with password-less sudo; else exit 7 says how), and
                           run the bwrap of MH_BWRAP_PATH when it is set
    --repo-dir DIR         keep the demo's repository in DIR/stats.git (default: a temp dir)
  dev                      every service in this process (PGlite, in-process bus, bubblewrap
                           sandboxes, the offline model or Anthropic's API, the gateway)
    --port N               gateway port (default 8080; 0: any free port)
    --host H               gateway address (default 127.0.0.1)
    --data-dir DIR         where the databases and the local API key live (default .local/dev,
                           or MH_DEV_DIR)
    --memory               keep the databases in memory (the key file is still used)
    --api-keys K:T,...     more keys, each for its tenant (or MH_GATEWAY_API_KEYS), besides the
                           local key (tenant "local")
    --log-level L          service logs on stderr: trace|debug|info|warn|error|silent (default error)
                           With MH_OTLP_ENDPOINT set its spans go there; with MH_JAEGER_QUERY_URL
                           too, the session page shows each event's trace (/ui/traces/:id).
  run "prompt"             run one prompt as a session and stream it: tokens as they come, tool
                           calls with their duration and output, a usage summary at the end
    --agent ID             use this agent (default: the CLI's mh-default agent, created once)
    --environment ID       use this environment (default: the CLI's mh-default environment)
    --model M, --system S  the default agent's model and system prompt
                           Without --url (or MH_URL), run uses the mh dev running here, or else
                           starts an embedded stack for this run; with ANTHROPIC_API_KEY set, that
                           stack's harness calls Anthropic's API (else the offline model answers).
  sessions ls              list sessions (--limit N, --all to include archived)
  sessions show ID         one session, as JSON
  sessions events ID       its events, a line each within the terminal's width, messages
                           wrapped below it (--json, --limit N); colours on a terminal
                           unless NO_COLOR is set
  sessions tail ID         its last events (-n N), then follow live, resuming after a lost
                           connection, until it terminates or Ctrl-C; says when the session
                           is idle and what it waits for
  sessions transfer ID --to ID2
                           hand session ID's sandbox, with its files, to session ID2
                           (--sandbox SBX for another of its sandboxes; --json)

connecting (run, demo, sessions):
  --url URL                the gateway (or MH_URL); sessions default to a local mh dev, ${DEV_URL}
  --api-key KEY            its API key (or MH_API_KEY; default: the key mh dev keeps in
                           .local/dev/api-key)

${EXIT_CODE_HELP}
`;

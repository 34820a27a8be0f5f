/**
 * Environment package layers with the real registries (PyPI, npm, Debian) and real bubblewrap: one
 * layer holding a pip, an npm and an apt package (cowsay, whose Perl dependency the base system
 * lacks and whose cows live under /usr/share: only an overlaid /usr finds them), built once,
 * mounted read-only, kept across a broker restart and shared by a second environment with the
 * same lists; a build that fails (an unknown package), one killed at its time limit and one over
 * its size limit, each a named failure that Provision refuses; a manager this machine cannot use
 * refused up front.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LayerState, type PackageLists } from "@metaharness/proto";
import { eventually } from "../../support/eventually.js";
import { provisionResponse, rejection, run, startTestBroker, type BrokerClient, type TestBroker } from "../../support/sandbox-broker.js";

const none: PackageLists = { apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };
const lists: PackageLists = { ...none, apt: ["cowsay"], npm: ["left-pad@1.3.0"], pip: ["six==1.16.0"] };
const BUILD_MS = 240_000;
const emptyResources = { cpuMillis: 0, memoryBytes: 0, diskBytes: 0, maxProcesses: 0, lifetimeSeconds: 0, idleTimeoutSeconds: 0, network: undefined, files: [], repositories: [] };

let dir: string;
const brokers: TestBroker[] = [];

async function broker(env: Record<string, string> = {}): Promise<TestBroker> {
  const b = await startTestBroker({ MH_LAYER_DIR: dir, ...env });
  brokers.push(b);
  return b;
}

async function settled(client: BrokerClient, packages: PackageLists, timeoutMs = BUILD_MS) {
  return eventually(
    async () => {
      const { layer } = await client.describeLayer({ packages });
      return layer?.state === LayerState.LAYER_STATE_BUILDING ? undefined : layer;
    },
    "the layer build to end",
    timeoutMs,
  );
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mh-layers-test-"));
});
afterAll(async () => {
  for (const b of brokers) await b.stop();
  // The overlay mounts of the layers built here go first.
  await import("node:child_process").then(({ spawnSync }) => spawnSync("sh", ["-c", `for m in ${dir}/mounts/*; do umount -l "$m" 2>/dev/null; done; true`]));
  await rm(dir, { recursive: true, force: true });
});

describe("package layers", () => {
  it(
    "builds pip, npm and apt packages once into a read-only layer every sandbox of the lists mounts",
    async () => {
      const b = await broker();
      const started = await b.clientAs("gateway").buildLayer({ packages: lists, retryFailed: true });
      expect(started.layer?.state).toBe(LayerState.LAYER_STATE_BUILDING);
      // Provision waits for the build under way rather than starting another.
      // Three sandboxes wait for it at once, and all start when it is ready.
      const waiting = await Promise.all(
        [1, 2, 3].map(() =>
          b.clientAs("harness").provision({ fork: undefined, key: "", sessionId: "sesn_layers", handKind: "", resources: { ...emptyResources, packages: lists } }, { deadlineMs: BUILD_MS }),
        ),
      );
      const id = waiting[0]!.sandbox!.sandboxId;
      const layer = await settled(b.client, lists);
      expect(layer).toMatchObject({ layerId: started.layer!.layerId, state: LayerState.LAYER_STATE_READY });
      // Its Debian files are overlaid on /usr by one mount, however many sandboxes raced for it.
      const mountPoint = join(dir, "mounts", layer.layerId);
      expect((await readFile("/proc/self/mountinfo", "utf8")).split("\n").filter((l) => l.split(" ")[4] === mountPoint)).toHaveLength(1);
      expect(layer.sizeBytes).toBeGreaterThan(0);

      const out = await run(b.client, id, "bash", {
        command: 'python3 -c "import six; print(six.__version__)" && node -e "console.log(require(\'left-pad\')(\'7\', 3, \'0\'))" && cowsay moo',
      });
      expect(out.output.split("\n").slice(0, 2)).toEqual(["1.16.0", "007"]);
      expect(out.output).toMatch(/< moo >[\s\S]*\(oo\)/);
      // The layer is read-only to the sandbox; the workspace is not; pip installs go to the user site.
      const ro = await run(b.client, id, "bash", { command: "touch /opt/layer/x 2>&1; touch /usr/games/x 2>&1; python3 -c 'import site; print(site.ENABLE_USER_SITE)'" });
      expect(ro.output).toMatch(/Read-only file system[\s\S]*Read-only file system[\s\S]*True/);
      // A bare sandbox beside it has none of it.
      const bare = await provisionResponse(b.clientAs("harness"), "sesn_layers");
      const plain = await run(b.client, bare.sandbox!.sandboxId, "bash", { command: "command -v cowsay; ls /opt/layer 2>&1; echo done" });
      expect(plain.output).toMatch(/No such file or directory\ndone$/);

      // Another broker life on the same directory: built already, mounted without a build.
      await b.stop();
      const again = await broker();
      expect((await again.client.describeLayer({ packages: lists })).layer?.state).toBe(LayerState.LAYER_STATE_READY);
      // The same lists in another order and with a duplicate: the same layer.
      const shuffled = { ...lists, apt: ["cowsay", "cowsay"], pip: ["six==1.16.0"] };
      expect((await again.clientAs("gateway").buildLayer({ packages: shuffled, retryFailed: true })).layer).toMatchObject({
        layerId: layer.layerId,
        state: LayerState.LAYER_STATE_READY,
      });
      const second = await provisionResponse(again.clientAs("harness"), "sesn_layers_2", { packages: shuffled });
      expect((await run(again.client, second.sandbox!.sandboxId, "bash", { command: "cowsay hi | head -2 | tail -1" })).output).toBe("< hi >");
    },
    BUILD_MS + 60_000,
  );

  it(
    "steps after apt see its packages: pip finds a requirement a Debian package of the same layer satisfies",
    async () => {
      const b = await broker();
      const both = { ...none, apt: ["python3-tabulate"], pip: ["tabulate"] };
      const res = await b.clientAs("harness").provision(
        { fork: undefined, key: "", sessionId: "sesn_layers_apt_pip", handKind: "", resources: { ...emptyResources, packages: both } },
        { deadlineMs: BUILD_MS },
      );
      const out = await run(b.client, res.sandbox!.sandboxId, "bash", {
        command: "python3 -c 'import tabulate; print(tabulate.__file__)'; ls /opt/layer/venv/lib/python3*/site-packages | grep -ci tabulate",
      });
      expect(out.output).toBe("/usr/lib/python3/dist-packages/tabulate.py\n0");
    },
    BUILD_MS,
  );

  it(
    "an unknown package fails its build, naming the manager with its output; Provision refuses it",
    async () => {
      const b = await broker();
      const bad = { ...none, pip: ["mh-no-such-package-a7f3e9"] };
      await b.clientAs("gateway").buildLayer({ packages: bad, retryFailed: true });
      const layer = await settled(b.client, bad);
      expect(layer).toMatchObject({ state: LayerState.LAYER_STATE_FAILED, manager: "pip" });
      expect(layer.output).toMatch(/^pip: exited with code 1\n[\s\S]*No matching distribution found for mh-no-such-package-a7f3e9/);
      const refused = await rejection(provisionResponse(b.clientAs("harness"), "sesn_layers_bad", { packages: bad }));
      expect(refused).toMatchObject({ code: "FAILED_PRECONDITION", field: "resources.packages.pip" });
      expect(refused.message).toContain("No matching distribution found");
      // Unknown to apt too: its own words, under its own name.
      const noDeb = { ...none, apt: ["mh-no-such-deb"] };
      await b.clientAs("gateway").buildLayer({ packages: noDeb, retryFailed: true });
      const noDebLayer = await settled(b.client, noDeb);
      expect(noDebLayer).toMatchObject({ state: LayerState.LAYER_STATE_FAILED, manager: "apt" });
      expect(noDebLayer.output).toContain("Unable to locate package mh-no-such-deb");
    },
    BUILD_MS,
  );

  it(
    "a step that outlives the build's time limit is killed and named; a layer over the size limit fails as such",
    async () => {
      const slow = await broker({ MH_LAYER_BUILD_TIMEOUT_MS: "300" });
      const hanging = { ...none, pip: ["six==1.15.0"] };
      await slow.clientAs("gateway").buildLayer({ packages: hanging, retryFailed: true });
      const killed = await settled(slow.client, hanging, 30_000);
      expect(killed).toMatchObject({ state: LayerState.LAYER_STATE_FAILED, manager: "pip" });
      expect(killed.output).toMatch(/^pip: killed: the build's time limit \(\d+ ms\) ran out while pip ran/);
      const small = await broker({ MH_LAYER_MAX_BYTES: String(1024 * 1024) });
      const big = { ...none, npm: ["left-pad@1.2.0"], pip: ["six==1.14.0"] };
      await small.clientAs("gateway").buildLayer({ packages: big, retryFailed: true });
      const over = await settled(small.client, big, 120_000);
      expect(over).toMatchObject({ state: LayerState.LAYER_STATE_FAILED, manager: "size" });
      expect(over.output).toMatch(/size limit/);
      const refused = await rejection(provisionResponse(small.clientAs("harness"), "sesn_layers_big", { packages: big }));
      expect(refused).toMatchObject({ code: "FAILED_PRECONDITION", field: "resources.packages" });
    },
    BUILD_MS,
  );

  it("refuses up front a manager this machine cannot use and a malformed entry, naming them", async () => {
    const b = await broker();
    const gem = await rejection(b.clientAs("gateway").buildLayer({ packages: { ...none, gem: ["rake"] }, retryFailed: true }));
    expect(gem).toMatchObject({ code: "INVALID_ARGUMENT", field: "packages.gem" });
    expect(gem.message).toMatch(/^packages\.gem: (gem is not installed on this machine|this machine cannot reach gem's registry)/);
    const option = await rejection(b.clientAs("gateway").buildLayer({ packages: { ...none, pip: ["--index-url=http://x"] }, retryFailed: true }));
    expect(option).toMatchObject({ code: "INVALID_ARGUMENT", field: "packages.pip[0]" });
    // The gateway's role builds layers and does nothing else.
    expect(await rejection(provisionResponse(b.clientAs("gateway"), "sesn_layers_gw"))).toMatchObject({ code: "PERMISSION_DENIED" });
  });
});

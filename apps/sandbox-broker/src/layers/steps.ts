/**
 * How each package manager installs into a layer without root: one shell step per manager, run in
 * the build sandbox (build-sandbox.ts) with the packages as its arguments (never interpolated into
 * the script). The layer is built at LAYER_ROOT, the very path sandboxes see it at, because a
 * venv, an npm prefix and their scripts' shebangs hold absolute paths.
 *   apt    `apt-get install --simulate` resolves what the base system lacks, `apt-get download`
 *          fetches exactly those, `dpkg-deb -x` unpacks them into apt/ (maintainer scripts do not
 *          run); sandboxes, and the steps after this one, see apt/usr overlaid on /usr, so files
 *          are where the packages expect.
 *   pip    a venv (with the system's site-packages) at venv/.
 *   npm    a global install into the prefix npm/ (npm/bin, npm/lib/node_modules).
 *   cargo  `cargo install --root cargo/`; go: `go install` with GOBIN=go/bin; gem: gem/.
 * Downloads and caches go to /scratch, which is not part of the layer.
 */
import type { PackageManager } from "@metaharness/events";
import { GO_TOOL } from "./managers.js";

/** Where a layer is, in its build sandbox and in every sandbox that mounts it. */
export const LAYER_ROOT = "/opt/layer";
export const SCRATCH = "/scratch";

/** The order steps run in: Debian packages first (libraries others may need at run time). */
export const STEP_ORDER: readonly PackageManager[] = ["apt", "pip", "npm", "cargo", "go", "gem"];

const APT_OPTS = "-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o Debug::NoLocking=1";

const SCRIPTS: { readonly [M in PackageManager]: string } = {
  apt: `set -eu
if ! plan=$(apt-get ${APT_OPTS} --simulate --no-install-recommends install "$@" 2>&1); then printf '%s\\n' "$plan"; exit 1; fi
fetch=$(printf '%s\\n' "$plan" | sed -n 's/^Inst \\([^ ]*\\) (\\([^ ]*\\) .*/\\1=\\2/p')
echo "apt: the base system lacks: $(echo $fetch)"
mkdir -p ${SCRATCH}/debs ${LAYER_ROOT}/apt
cd ${SCRATCH}/debs
[ -z "$fetch" ] || apt-get ${APT_OPTS} download $fetch
for deb in ${SCRATCH}/debs/*.deb; do [ -e "$deb" ] || continue; dpkg-deb -x "$deb" ${LAYER_ROOT}/apt; done
cd ${LAYER_ROOT}/apt
# Merged /usr: what a package ships under /bin, /lib, ... belongs under usr/.
for d in bin sbin lib lib32 lib64 libx32; do
  if [ -d "$d" ] && [ ! -L "$d" ]; then mkdir -p "usr/$d"; cp -a "$d/." "usr/$d/"; rm -rf "$d"; fi
done`,
  pip: `set -eu
/usr/bin/python3 -m venv --system-site-packages ${LAYER_ROOT}/venv
${LAYER_ROOT}/venv/bin/python -m pip install --no-input --disable-pip-version-check --progress-bar off "$@"`,
  npm: `set -eu
npm install --global --prefix ${LAYER_ROOT}/npm --no-audit --no-fund --no-update-notifier --cache ${SCRATCH}/npm-cache "$@"`,
  cargo: `set -eu
cargo install --root ${LAYER_ROOT}/cargo "$@"`,
  go: `set -eu
mkdir -p ${LAYER_ROOT}/go/bin
for p in "$@"; do ${GO_TOOL} install "$p"; done`,
  gem: `set -eu
for g in "$@"; do
  name=\${g%%:*}; if [ "$name" = "$g" ]; then gem install --no-document --install-dir ${LAYER_ROOT}/gem --bindir ${LAYER_ROOT}/gem/bin "$name"
  else gem install --no-document --install-dir ${LAYER_ROOT}/gem --bindir ${LAYER_ROOT}/gem/bin "$name" -v "\${g#*:}"; fi
done`,
};

/** Variables a step runs with, besides the build sandbox's own (PATH, HOME, locale). */
const STEP_ENV: { readonly [M in PackageManager]: Readonly<Record<string, string>> } = {
  apt: {},
  pip: { PIP_CACHE_DIR: `${SCRATCH}/pip-cache`, PIP_NO_WARN_SCRIPT_LOCATION: "1" },
  // Node trusts its own CA list unless told; the system's is what the host trusts.
  npm: { npm_config_update_notifier: "false", NODE_EXTRA_CA_CERTS: "/etc/ssl/certs/ca-certificates.crt" },
  cargo: { CARGO_HOME: `${SCRATCH}/cargo-home`, CARGO_TARGET_DIR: `${SCRATCH}/cargo-target` },
  go: { GOBIN: `${LAYER_ROOT}/go/bin`, GOPATH: `${SCRATCH}/gopath`, GOCACHE: `${SCRATCH}/gocache`, GOFLAGS: "-modcacherw", GOTOOLCHAIN: "local" },
  gem: { GEM_HOME: `${LAYER_ROOT}/gem` },
};

export interface Step {
  readonly manager: PackageManager;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

export function stepFor(manager: PackageManager, packages: readonly string[]): Step {
  return { manager, argv: ["/bin/sh", "-c", SCRIPTS[manager], manager, ...packages], env: STEP_ENV[manager] };
}

/**
 * What a sandbox that mounts a layer holding `managers` runs its tools with: their bin
 * directories first on PATH (after the user's own ~/.local/bin), and their language paths. The
 * venv is read-only, so `pip install` in the sandbox goes to the user site (~/.local, in the
 * writable workspace), which the venv sees because it includes the system site-packages.
 */
export function layerEnv(managers: readonly PackageManager[], basePath: string): string[] {
  const bins: string[] = [];
  const vars: string[] = [];
  if (managers.includes("pip")) {
    bins.push(`${LAYER_ROOT}/venv/bin`);
    vars.push(`VIRTUAL_ENV=${LAYER_ROOT}/venv`, "PIP_USER=1", "PIP_DISABLE_PIP_VERSION_CHECK=1");
  }
  if (managers.includes("npm")) {
    bins.push(`${LAYER_ROOT}/npm/bin`);
    vars.push(`NODE_PATH=${LAYER_ROOT}/npm/lib/node_modules`);
  }
  if (managers.includes("cargo")) bins.push(`${LAYER_ROOT}/cargo/bin`);
  if (managers.includes("go")) bins.push(`${LAYER_ROOT}/go/bin`);
  if (managers.includes("gem")) {
    bins.push(`${LAYER_ROOT}/gem/bin`);
    vars.push(`GEM_PATH=${LAYER_ROOT}/gem`);
  }
  // Debian puts games (cowsay, sl) in /usr/games, which a plain PATH lacks.
  const games = managers.includes("apt") ? ":/usr/games" : "";
  const localBin = managers.includes("pip") ? "/workspace/.local/bin:" : "";
  return [`PATH=${localBin}${bins.map((b) => `${b}:`).join("")}${basePath}${games}`, ...vars];
}

#!/usr/bin/env bash
# Makes sure the sandbox broker's local driver can run here: installs bubblewrap (apt-get) when
# `bwrap` is missing, then starts one throw-away sandbox with the flags the broker uses, so a
# kernel that refuses namespaces fails here, loudly, and not in the middle of a test run. Safe to
# run any number of times: quick when bwrap is already there. Also reports which cgroup
# controllers the broker will be able to use (it detects them again itself at start).
# stdout: the path of bwrap. Progress goes to stderr.
set -euo pipefail
MH_LOG_TAG=sandbox
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

t0=$(now_ms)
take_lock "$MH_LOCAL/sandbox/up.lock"

if ! command -v bwrap >/dev/null 2>&1; then
  apt_install bubblewrap
fi
bwrap_bin="$(command -v bwrap)" || die "bubblewrap was installed but bwrap is not on PATH"

# Environment package layers (apps/sandbox-broker/src/layers/): pip builds a venv with the
# system's python3, and apt resolves packages from the host's package lists, which a fresh
# machine may not have yet.
if [[ -x /usr/bin/python3 ]] && ! /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  apt_install python3-venv
fi
if command -v apt-get >/dev/null 2>&1 && ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
  log "apt-get update (the package lists that environment layers resolve Debian packages from)"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 update >>"${MH_LOCAL}/apt.log" 2>&1 || log "apt-get update failed: apt packages in environments will not resolve"
fi

# The same isolation the broker asks for (apps/sandbox-broker/src/driver/bwrap-args.ts).
# shellcheck disable=SC2016 # the $(id -u) is for the sandbox's shell to expand
smoke=(
  "$bwrap_bin" --unshare-all --die-with-parent --new-session --clearenv
  --uid 65534 --gid 65534 --cap-drop ALL
  --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64
  --proc /proc --dev /dev --tmpfs /tmp --chdir /tmp
  /usr/bin/sh -c 'test "$(id -u)" = 65534 && touch /tmp/ok && ! touch /usr/mh-probe 2>/dev/null'
)
if ! out=$("${smoke[@]}" 2>&1); then
  log "bwrap is installed but a sandbox cannot start: ${out:-no output}"
  die "check that this kernel allows user, pid, mount and network namespaces (as root, or with unprivileged user namespaces)"
fi

# Which cgroup controllers accept a child group (informational; nothing is left behind).
controllers=()
for c in memory pids cpu; do
  dir="/sys/fs/cgroup/$c"
  [[ -d $dir ]] || continue
  probe="$dir/mh-probe-$$"
  if mkdir "$probe" 2>/dev/null; then
    controllers+=("$c(v1)")
    rmdir "$probe" 2>/dev/null || true
  fi
done
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  controllers+=("unified(v2): $(tr '\n' ' ' </sys/fs/cgroup/cgroup.controllers)")
fi
if (( ${#controllers[@]} == 0 )); then
  log "no writable cgroup controller: the broker will fall back to prlimit (weaker limits)"
else
  log "writable cgroups: ${controllers[*]}"
fi

log "$("$bwrap_bin" --version) works ($(elapsed "$t0"))"
echo "$bwrap_bin"

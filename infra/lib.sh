# shellcheck shell=bash
# Shared helpers for the infra scripts. Source it; do not run it.
#
# Sets MH_ROOT (the repository), MH_LOCAL (its git-ignored state folder, <repo>/.local) and
# MH_CACHE (binaries built from source, outside the checkout; see build_cached).

MH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MH_LOCAL="${MH_ROOT}/.local"
# Binaries built from source take minutes each on 2 cores (Jaeger about 6): they are kept outside
# the checkout, one folder per name and build key, so that a fresh clone on the same machine reuses
# them instead of building again. Go's module cache lives there too (GOPATH).
MH_CACHE="${MH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/metaharness}"
MH_GOPATH="${MH_CACHE}/go"
MH_LOG_TAG="${MH_LOG_TAG:-infra}"

log() { printf '[%s] %s\n' "$MH_LOG_TAG" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Seconds since the epoch with milliseconds, for the "done in Ns" lines.
now_ms() { date +%s%3N; }
elapsed() { local s=$1; printf '%d.%01ds' $(( ($(now_ms) - s) / 1000 )) $(( ($(now_ms) - s) % 1000 / 100 )); }

# Runs a command as root: directly when we are root, otherwise through non-interactive sudo.
as_root() {
  if [[ $EUID -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo -n "$@"
  else
    die "need root (or passwordless sudo) to run: $*"
  fi
}

# apt-get install of the given Debian packages, non-interactive, waiting for the dpkg lock.
apt_install() {
  log "apt-get install $* (this takes a while once)"
  local aptlog="${MH_LOCAL}/apt.log"
  mkdir -p "$MH_LOCAL"
  local opts=(-y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install --no-install-recommends "$@" >>"$aptlog" 2>&1; then
    log "install failed without an index refresh; running apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=300 update >>"$aptlog" 2>&1 \
      || { tail -n 20 "$aptlog" >&2; die "apt-get update failed (log: $aptlog)"; }
    as_root env DEBIAN_FRONTEND=noninteractive apt-get "${opts[@]}" install --no-install-recommends "$@" >>"$aptlog" 2>&1 \
      || { tail -n 20 "$aptlog" >&2; die "apt-get install $* failed (log: $aptlog)"; }
  fi
}

# A fresh virtualenv at $1, with pip's packages $2...: python3 (and Debian's python3-venv when
# `python3 -m venv` cannot make one) installed first; removed again when pip fails.
make_venv() {
  local venv=$1
  shift
  command -v python3 >/dev/null || apt_install python3
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    apt_install python3-venv
    python3 -m venv "$venv" || die "python3 -m venv failed after installing python3-venv"
  fi
  log "pip install $* into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" >&2 \
    || { rm -rf "$venv"; die "pip install $* failed"; }
}

# True when something accepts TCP connections on 127.0.0.1:$1.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Takes an exclusive lock for the rest of the calling script (fd 9), so that concurrent calls of the
# same up/down script (parallel test workers, two terminals) queue instead of racing.
# Daemons started while holding it must be started with `9>&-`, or they keep the lock forever.
take_lock() {
  local file=$1
  mkdir -p "$(dirname "$file")"
  exec 9>"$file"
  if ! flock -n 9; then
    log "waiting for another run to finish (lock $file)"
    flock -w 600 9 || die "lock $file still held after 600s"
  fi
}

# Prints the path of the go command (on PATH, else Go's default /usr/local/go), or dies saying
# what needs it ($1, e.g. "ghz is built from source").
find_go() {
  local go_bin
  go_bin=$(command -v go || true)
  [[ -n $go_bin ]] || go_bin=/usr/local/go/bin/go
  [[ -x $go_bin ]] || die "go not found on PATH or in /usr/local/go/bin: $1"
  echo "$go_bin"
}

# Prints where binary $1 built with key $2 (a version, or a hash of what it is built from) lives in
# MH_CACHE; it exists only once a build_cached of that name and key succeeded.
cached_bin() { printf '%s/%s/%s/%s\n' "$MH_CACHE" "$1" "$2" "$1"; }

# build_cached NAME KEY LOG CMD...: makes `cached_bin NAME KEY` exist, running CMD only when it does
# not yet. CMD must write the binary NAME into the folder $MH_BUILD_STAGE, with its output going to
# LOG; it runs with Go's settings for our builds ($MH_GO_ENV: the shared module cache, made writable
# so that `rm -rf` works, a build cache in the stage that goes with it, never another Go, no cgo).
# A lock shared by every checkout keeps two of them from building the same thing at once, and the
# binary is renamed into place only after CMD succeeded, so a failed or killed build leaves nothing
# that looks built.
build_cached() {
  local name=$1 key=$2 buildlog=$3
  shift 3
  local final
  final=$(cached_bin "$name" "$key")
  [[ -x $final ]] && return 0
  mkdir -p "$MH_CACHE/$name" "$(dirname "$buildlog")"
  (
    exec 8>"$MH_CACHE/$name/build.lock"
    if ! flock -n 8; then
      log "waiting for another checkout's build of $name (lock $MH_CACHE/$name/build.lock)"
      flock -w 1800 8 || die "lock $MH_CACHE/$name/build.lock still held after 1800s"
    fi
    [[ -x $final ]] && exit 0
    local stage
    stage=$(mktemp -d "$MH_CACHE/$name/.stage.XXXXXX")
    # 8>&- 9>&-: the compiler must not inherit our locks.
    if ! env MH_BUILD_STAGE="$stage" GOPATH="$MH_GOPATH" GOMODCACHE="$MH_GOPATH/pkg/mod" GOCACHE="$stage/.gocache" \
        GOFLAGS="-modcacherw" GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 "$@" >"$buildlog" 2>&1 8>&- 9>&-; then
      chmod -R u+w "$stage" 2>/dev/null || true
      rm -rf "$stage"
      show_tail 30 "$buildlog"
      die "building $name failed (log: $buildlog)"
    fi
    [[ -x $stage/$name ]] || die "the build of $name finished without writing $stage/$name"
    mkdir -p "$(dirname "$final")"
    mv "$stage/$name" "$final"
    chmod -R u+w "$stage" 2>/dev/null || true
    rm -rf "$stage"
  )
}

# Prints the last lines of each given file that exists, to stderr.
show_tail() {
  local n=$1; shift
  local f
  for f in "$@"; do
    [[ -s $f ]] || continue
    printf -- '----- last %d lines of %s -----\n' "$n" "$f" >&2
    tail -n "$n" "$f" >&2
  done
}

# True when pid $1 exists and is not a zombie (an exited child that nobody has reaped yet, which
# `kill -0` would still report as alive).
pid_alive() {
  local state
  [[ -r /proc/$1/stat ]] || return 1
  state=$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z && $state != X ]]
}

# Stops pid $1: SIGTERM, then SIGKILL after $2 seconds; fails if it survives SIGKILL.
stop_pid() {
  local pid=$1 timeout=$2 deadline
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(( SECONDS + timeout ))
  while pid_alive "$pid"; do
    if (( SECONDS >= deadline )); then
      log "still running after ${timeout}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 50); do pid_alive "$pid" || break; sleep 0.1; done
      pid_alive "$pid" && die "pid $pid survived SIGKILL"
      break
    fi
    sleep 0.1
  done
}

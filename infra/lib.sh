# shellcheck shell=bash
# Shared helpers for the infra scripts. Source it; do not run it.
#
# Sets MH_ROOT (the repository) and MH_LOCAL (its git-ignored state folder, <repo>/.local).

MH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MH_LOCAL="${MH_ROOT}/.local"
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

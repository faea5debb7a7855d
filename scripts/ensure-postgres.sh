#!/usr/bin/env bash
# Starts (once) a throwaway PostgreSQL cluster for the tests and prints, as
# its last line on standard output, a URL on which a test may create
# databases:
#
#   postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
#
# Called again while that cluster runs, it prints the same URL. Everything
# else it says goes to standard error.
#
#   scripts/ensure-postgres.sh         start the cluster if needed, print its URL
#   scripts/ensure-postgres.sh stop    stop the cluster and delete its files
#
# It installs Debian's postgresql package when missing (with sudo when not
# root). The cluster lives in a temporary directory, listens on 127.0.0.1
# only, on a free port, with its unix socket in that directory, and runs
# without fsync: it is for tests, and its data is lost on a crash. Anyone
# on this machine may connect to it as the superuser without a password.
#
# State, shared by every caller on the machine of the same user:
# $SWITCHBOARD_PG_STATE, default ${XDG_RUNTIME_DIR:-/tmp}/switchboard-postgres,
# holds a lock (concurrent callers wait for the first, so two clusters
# never start) and the file "cluster" (its directory, port and URL).
set -euo pipefail

state=${SWITCHBOARD_PG_STATE:-${XDG_RUNTIME_DIR:-/tmp}/switchboard-postgres}
lock_wait=600 # seconds: an install of the package can take minutes

say() { echo "ensure-postgres: $*" >&2; }
die() { say "$*"; exit 1; }

# bindir finds the server's programs: Debian keeps them in
# /usr/lib/postgresql/VERSION/bin, outside PATH. The newest version wins.
bindir() {
  if [ -n "${PG_BINDIR:-}" ]; then echo "$PG_BINDIR"; return; fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    if [ -x "$d/initdb" ]; then echo "$d"; return; fi
  done
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
  return 1
}

install_postgres() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 ||
      die "PostgreSQL is missing and this user cannot install it; run as root: apt-get install postgresql"
    sudo="sudo"
  fi
  command -v apt-get >/dev/null 2>&1 ||
    die "PostgreSQL is missing and this is not a Debian system; install the PostgreSQL server and set PG_BINDIR to its bin directory"
  say "installing Debian's postgresql for the tests"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
}

# as_owner runs a command as the cluster's owner: postgres when this is
# root (the server refuses to run as root), else this user. The lock's
# descriptor is closed for it, so a server it starts does not hold the
# lock for its lifetime.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@" 9>&-
  else
    "$@" 9>&-
  fi
}

# read_state loads the recorded cluster's dir, port and url, or fails.
read_state() {
  dir="" port="" url=""
  [ -f "$state/cluster" ] || return 1
  local key value
  while IFS='=' read -r key value; do
    case $key in
      dir) dir=$value ;;
      port) port=$value ;;
      url) url=$value ;;
    esac
  done <"$state/cluster"
  [ -n "$dir" ] && [ -n "$port" ] && [ -n "$url" ]
}

# running reports whether the server of the recorded cluster's directory
# runs: the process its postmaster.pid names exists and is that
# directory's server, not another process that got the same ID after a
# crash or a reboot.
running() {
  local pid
  pid=$(sed -n 1p "$dir/data/postmaster.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-D $dir/data"
}

# alive reports whether the recorded cluster's server is running and
# accepting connections on its port. pg_isready alone is not enough: after
# a crash another server may have taken the port. A server still starting
# or shutting down is waited for.
alive() {
  local rc tries=0
  running || return 1
  [ "$(sed -n 4p "$dir/data/postmaster.pid")" = "$port" ] || return 1
  while :; do
    rc=0
    "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -t 10 || rc=$?
    case $rc in
      0) return 0 ;;
      2) return 1 ;; # no answer
      1) # rejecting connections: starting up or shutting down
        tries=$((tries + 1))
        [ "$tries" -lt 30 ] || return 1
        sleep 1 ;;
      *) die "$bin/pg_isready failed (exit status $rc); the cluster was left as it is" ;;
    esac
  done
}

# remove_cluster stops the recorded server if it still runs and deletes
# its directory. Only a directory this script made is deleted.
remove_cluster() {
  local shm
  shm=$(sed -n 7p "$dir/data/postmaster.pid" 2>/dev/null) || true
  if running; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 ||
      as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  running || remove_shm $shm
  case $dir in
    */switchboard-pg.*) [ -d "$dir" ] && rm -rf -- "$dir" ;;
  esac
  rm -f "$state/cluster"
}

# remove_shm removes the small System V segment (key $1, id $2) of a
# server that was killed: a server that stops on its own removes it, a
# killed one leaves it behind. It is removed only when it is still the
# one the server made and nothing is attached to it.
remove_shm() {
  [ $# -eq 2 ] || return 0
  local key
  key=$(printf '0x%08x' "$1" 2>/dev/null) || return 0
  if ipcs -m 2>/dev/null | awk -v k="$key" -v id="$2" '$1 == k && $2 == id && $6 == 0 { found = 1 } END { exit !found }'; then
    ipcrm -m "$2" 2>/dev/null || true
  fi
}

# port_taken reports whether something listens on 127.0.0.1:$1.
port_taken() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# new_dir makes the cluster's directory in the temporary directory, owned
# by its owner. When this is root and the postgres user cannot reach
# $TMPDIR, /tmp is used.
new_dir() {
  local base=${TMPDIR:-/tmp}
  dir=$(mktemp -d "$base/switchboard-pg.XXXXXXXX")
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
    if ! runuser -u postgres -- test -w "$dir" 2>/dev/null; then
      rm -rf -- "$dir"
      dir=$(mktemp -d /tmp/switchboard-pg.XXXXXXXX)
      chown postgres: "$dir"
    fi
  fi
}

# start_failed shows the end of a log, deletes the new cluster's
# directory and exits.
start_failed() {
  tail -n 20 "$2" >&2 2>/dev/null || true
  if running; then # a server too slow to start
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  rm -rf -- "$dir"
  die "$1"
}

start_cluster() {
  local started=$SECONDS
  new_dir
  say "creating a throwaway cluster in $dir"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-locale -E UTF8 --no-sync \
    >"$dir/initdb.log" 2>&1 || start_failed "initdb failed" "$dir/initdb.log"
  cat >>"$dir/data/postgresql.conf" <<EOF

# scripts/ensure-postgres.sh: a throwaway cluster for tests.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  local tries=0
  while :; do
    tries=$((tries + 1))
    [ "$tries" -le 50 ] || die "found no free port"
    port=$((20000 + RANDOM % 40000))
    if port_taken "$port"; then continue; fi
    # setsid: the server gets a session of its own, so a Ctrl-C in the
    # terminal that ran the tests does not stop it under other callers.
    if as_owner setsid -w "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w -t 60 start \
      </dev/null >>"$dir/pg_ctl.log" 2>&1; then
      break
    fi
    # Another process may have taken the port between the check and the
    # start; anything else is a real failure.
    if [ "$tries" -lt 50 ] && grep -q "could not bind\|Address already in use" "$dir/server.log" 2>/dev/null; then
      continue
    fi
    start_failed "the server did not start" "$dir/server.log"
  done
  url="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  printf 'dir=%s\nport=%s\nurl=%s\n' "$dir" "$port" "$url" >"$state/cluster.tmp"
  mv "$state/cluster.tmp" "$state/cluster"
  say "cluster up on 127.0.0.1:$port in $((SECONDS - started)) s; stop it with: $0 stop"
}

# lock makes the state directory (refusing one owned by someone else) and
# takes its lock on descriptor 9 until the script exits.
lock() {
  mkdir -p -m 0700 "$state"
  [ -O "$state" ] || die "$state belongs to another user; set SWITCHBOARD_PG_STATE to a directory of yours"
  exec 9>"$state/lock"
  flock -w "$lock_wait" 9 || die "timed out after ${lock_wait}s waiting for $state/lock"
}

cmd=${1:-start}
case $cmd in
  start)
    lock
    bin=$(bindir) || { install_postgres; bin=$(bindir) || die "PostgreSQL was installed but initdb is not found"; }
    if read_state; then
      if alive; then
        echo "$url"
        exit 0
      fi
      say "the recorded cluster ($dir, port $port) is not answering; starting a new one"
      remove_cluster
    fi
    start_cluster
    echo "$url"
    ;;
  stop)
    lock
    if ! read_state; then
      say "no cluster recorded in $state"
      exit 0
    fi
    bin=$(bindir) || die "PostgreSQL's programs are not found"
    remove_cluster
    say "stopped the cluster on port $port and deleted $dir"
    ;;
  *)
    echo "usage: $0 [start|stop]" >&2
    exit 2
    ;;
esac

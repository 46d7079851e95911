#!/usr/bin/env bash
# Manages a throwaway PostgreSQL cluster for tests, CI and benchmarks.
#
#   scripts/pg-cluster.sh start DIR PORT   initdb DIR if needed, start it on 127.0.0.1:PORT, create database
#                                          `tessera`, and print its URL as the only line on stdout
#   scripts/pg-cluster.sh stop DIR         fast shutdown; does nothing when the cluster is not running
#
# The cluster trades durability for speed (fsync off): never keep data in it you want back.
# Progress and errors go to stderr so that stdout can be captured: URL=$(scripts/pg-cluster.sh start …)
set -euo pipefail

PROG=$(basename "$0")

die() {
  echo "$PROG: $*" >&2
  exit 1
}

usage() {
  echo "Usage: $PROG start DIR PORT | stop DIR" >&2
  exit 2
}

# The newest /usr/lib/postgresql/<version>/bin (Debian layout), else whatever pg_ctl is on PATH.
find_bindir() {
  local dir best="" best_version=-1 version
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/pg_ctl" ] && [ -x "$dir/initdb" ] || continue
    version=$(basename "$(dirname "$dir")")
    # Versions are integers since 10; anything else (e.g. 9.6) sorts below them.
    [[ "$version" =~ ^[0-9]+$ ]] || version=0
    if [ "$version" -gt "$best_version" ]; then
      best=$dir
      best_version=$version
    fi
  done
  if [ -z "$best" ] && command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    best=$(dirname "$(command -v pg_ctl)")
  fi
  [ -n "$best" ] || die "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and PATH); install them with: apt-get install postgresql"
  echo "$best"
}

# initdb and postgres refuse to run as root, so as root everything runs as the `postgres` OS user.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' OS user to own the cluster (apt-get install postgresql creates it)"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# pg_ctl status exits 0 when running, 3 when not running, 4 when DIR is not a data directory.
is_running() {
  as_pg "$BINDIR/pg_ctl" status -D "$1" >/dev/null 2>&1
}

cmd_start() {
  local dir=$1 port=$2
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "PORT must be a number from 1 to 65535 (got '$port')"

  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # Every ancestor must be traversable by the postgres user (mktemp -d makes 0700 dirs owned by root).
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$dir"
    chmod 0700 "$dir"
    as_pg test -x "$dir" || die "user 'postgres' cannot reach $dir; choose a directory whose parents are world-executable (e.g. under /tmp)"
  fi

  if [ -z "$(ls -A "$dir")" ]; then
    echo "$PROG: initdb $dir" >&2
    # --no-sync: nothing here needs to survive a crash. Trust auth: the server listens on loopback only.
    as_pg "$BINDIR/initdb" -D "$dir" --username=postgres --auth=trust --encoding=UTF8 --locale=C --no-sync >&2 \
      || die "initdb failed for $dir"
  elif [ ! -f "$dir/PG_VERSION" ]; then
    die "$dir is neither empty nor a PostgreSQL data directory"
  fi

  if is_running "$dir"; then
    echo "$PROG: a server is already running in $dir" >&2
  else
    # listen_addresses keeps TCP on loopback; the unix socket lives in DIR so that clusters never collide
    # in /var/run/postgresql (which may not exist or be writable).
    local options="-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir"
    options+=" -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    # -w waits up to -t seconds for the server to accept connections; the log tells why it did not.
    if ! as_pg "$BINDIR/pg_ctl" start -D "$dir" -l "$dir/server.log" -w -t 30 -o "$options" >&2; then
      tail -n 20 "$dir/server.log" >&2 2>/dev/null || true
      die "PostgreSQL did not start in $dir on port $port (log: $dir/server.log)"
    fi
  fi

  # pg_ctl -w already waited, but an existing cluster may still be starting or on another port: check the port asked for.
  local tries=0
  until "$BINDIR/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres; do
    tries=$((tries + 1))
    [ "$tries" -lt 60 ] || die "PostgreSQL in $dir is not accepting connections on 127.0.0.1:$port after 30 s (log: $dir/server.log)"
    sleep 0.5
  done

  local exists
  exists=$("$BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -XtAq -c "select 1 from pg_database where datname = 'tessera'")
  if [ "$exists" != "1" ]; then
    "$BINDIR/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Xq -v ON_ERROR_STOP=1 \
      -c "create database tessera owner postgres encoding 'UTF8'" >&2 || die "could not create database tessera"
  fi

  echo "postgres://postgres@127.0.0.1:$port/tessera"
}

cmd_stop() {
  local dir=$1
  if [ ! -f "$dir/PG_VERSION" ]; then
    echo "$PROG: $dir is not a PostgreSQL data directory; nothing to stop" >&2
    return 0
  fi
  if ! is_running "$dir"; then
    echo "$PROG: no server running in $dir" >&2
    return 0
  fi
  as_pg "$BINDIR/pg_ctl" stop -D "$dir" -m fast -w -t 30 >&2 || die "PostgreSQL in $dir did not stop"
}

[ $# -ge 1 ] || usage
case "$1" in
  start)
    [ $# -eq 3 ] || usage
    BINDIR=$(find_bindir)
    cmd_start "$2" "$3"
    ;;
  stop)
    [ $# -eq 2 ] || usage
    BINDIR=$(find_bindir)
    cmd_stop "$2"
    ;;
  *)
    usage
    ;;
esac

#!/usr/bin/env bash
# Manages a throwaway PgBouncer in transaction pooling mode in front of a local PostgreSQL, for tests and CI.
#
#   scripts/pgbouncer.sh start DIR PORT UPSTREAM_PORT   write DIR/pgbouncer.ini, start PgBouncer on 127.0.0.1:PORT
#                                                       in front of PostgreSQL on 127.0.0.1:UPSTREAM_PORT, and
#                                                       print its URL (database `tessera`) as the only line on stdout
#   scripts/pgbouncer.sh stop DIR                        stop it; does nothing when it is not running
#
# Every database name routes to the database of that name upstream (`* =`), so a test may create a database
# directly on PostgreSQL and reach it through PgBouncer at once. Authentication is `trust` on loopback, for the
# user `postgres` only: never expose this PgBouncer. Sizes (environment, optional):
#   PGBOUNCER_POOL_SIZE         server connections per database (default 50: at least the largest client pool a
#                               test opens on one database, so that PgBouncer never queues a test behind itself)
#   PGBOUNCER_MAX_SERVER_CONNS  server connections in all (default 150: below the test cluster's max_connections
#                               of 200, leaving room for the direct connections that LISTEN and migrate)
# Progress and errors go to stderr so that stdout can be captured: URL=$(scripts/pgbouncer.sh start …)
set -euo pipefail

PROG=$(basename "$0")

die() {
  echo "$PROG: $*" >&2
  exit 1
}

usage() {
  echo "Usage: $PROG start DIR PORT UPSTREAM_PORT | stop DIR" >&2
  exit 2
}

find_pgbouncer() {
  if [ -x /usr/sbin/pgbouncer ]; then
    echo /usr/sbin/pgbouncer
  elif command -v pgbouncer >/dev/null 2>&1; then
    command -v pgbouncer
  else
    die "pgbouncer not found (looked in /usr/sbin and PATH); install it with: apt-get install pgbouncer"
  fi
}

# PgBouncer refuses to run as root, so as root it runs as the `postgres` OS user (as the test cluster does).
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root needs a 'postgres' OS user to run PgBouncer (apt-get install postgresql creates it)"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pid_of() {
  local pidfile=$1/pgbouncer.pid
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

check_port() {
  [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 65535 ] || die "$1 must be a number from 1 to 65535 (got '$2')"
}

cmd_start() {
  local dir=$1 port=$2 upstream=$3
  check_port PORT "$port"
  check_port UPSTREAM_PORT "$upstream"
  local pool_size=${PGBOUNCER_POOL_SIZE:-50} max_server=${PGBOUNCER_MAX_SERVER_CONNS:-150}
  [[ "$pool_size" =~ ^[1-9][0-9]*$ ]] || die "PGBOUNCER_POOL_SIZE must be a positive integer (got '$pool_size')"
  [[ "$max_server" =~ ^[1-9][0-9]*$ ]] || die "PGBOUNCER_MAX_SERVER_CONNS must be a positive integer (got '$max_server')"

  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if pid_of "$dir" >/dev/null; then
    echo "$PROG: PgBouncer is already running in $dir" >&2
  else
    # Trust needs the user listed; the password is never checked.
    printf '"postgres" ""\n' >"$dir/userlist.txt"
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$upstream

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
pool_mode = transaction
; Test files open many short-lived pools; each waits in PgBouncer rather than failing.
max_client_conn = 2000
default_pool_size = $pool_size
max_user_connections = $max_server
; The suite creates a database per test context: their idle server connections go soon (their pools stay,
; empty, so that SHOW STATS still counts what went through them).
server_idle_timeout = 10
log_connections = 0
log_disconnections = 0
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
    if [ "$(id -u)" -eq 0 ]; then
      chown -R postgres:postgres "$dir"
      as_pg test -w "$dir" || die "user 'postgres' cannot write to $dir; choose a directory whose parents are world-executable (e.g. under /tmp)"
    fi
    # Every client and server connection is a file descriptor: raise the soft limit as far as allowed.
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 4096 2>/dev/null || true
    as_pg "$PGBOUNCER" -d -q "$dir/pgbouncer.ini" >&2 || { tail -n 20 "$dir/pgbouncer.log" >&2 2>/dev/null || true; die "PgBouncer did not start in $dir (log: $dir/pgbouncer.log)"; }
  fi

  local tries=0
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    tries=$((tries + 1))
    # The daemon writes its pid file a moment after it forks: only after a few tries does a missing one mean it died.
    if [ "$tries" -ge 60 ] || { [ "$tries" -ge 6 ] && ! pid_of "$dir" >/dev/null; }; then
      tail -n 20 "$dir/pgbouncer.log" >&2 2>/dev/null || true
      die "PgBouncer in $dir is not accepting connections on 127.0.0.1:$port (log: $dir/pgbouncer.log)"
    fi
    sleep 0.5
  done
  echo "postgres://postgres@127.0.0.1:$port/tessera"
}

cmd_stop() {
  local dir=$1 pid
  if ! pid=$(pid_of "$dir"); then
    echo "$PROG: no PgBouncer running in $dir" >&2
    return 0
  fi
  # SIGTERM: immediate shutdown (the clients are gone or being torn down anyway).
  kill -TERM "$pid"
  local tries=0
  while kill -0 "$pid" 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || die "PgBouncer (pid $pid) in $dir did not stop"
    sleep 0.1
  done
}

[ $# -ge 1 ] || usage
case "$1" in
  start)
    [ $# -eq 4 ] || usage
    PGBOUNCER=$(find_pgbouncer)
    cmd_start "$2" "$3" "$4"
    ;;
  stop)
    [ $# -eq 2 ] || usage
    cmd_stop "$2"
    ;;
  *)
    usage
    ;;
esac

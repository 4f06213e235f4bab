#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and manual checks: Debian's server
# binaries, run as an unprivileged user (PostgreSQL refuses root: as root the
# cluster runs as the `postgres` user the package creates), listening only on
# a unix socket inside DIR, fsync off. Nothing outside DIR is touched.
#
#   pg-test-cluster.sh start DIR [PID]
#                                  creates DIR, starts the server, prints its
#                                  URL: postgresql:///postgres?host=DIR&user=idlegrid;
#                                  with PID, a watcher stops it once that
#                                  process is gone (a test binary killed mid-run)
#   pg-test-cluster.sh stop DIR    stops it and removes DIR
#   pg-test-cluster.sh crash DIR   stops the server as a crash would (immediate
#                                  mode: no checkpoint, clients cut), keeps DIR
#   pg-test-cluster.sh resume DIR  starts a crashed server again (crash recovery)
#
# The superuser `idlegrid` connects without a password (trust, socket only).
# With IG_PG_TCP_PORT=PORT set at start, the server also listens on
# 127.0.0.1:PORT and the URL printed is postgresql://idlegrid@127.0.0.1:PORT/
# postgres (the fault tests cut that link with iptables).
# IDLEGRID_PG_BINDIR overrides where initdb/pg_ctl are looked for.
set -euo pipefail

die() { echo "pg-test-cluster: $*" >&2; exit 1; }

find_bindir() {
  if [ -n "${IDLEGRID_PG_BINDIR:-}" ]; then echo "$IDLEGRID_PG_BINDIR"; return; fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
  done
  die "PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin; install the Debian package 'postgresql' (scripts/install-deps.sh does)"
}

# Runs a command as the cluster's owner.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root needs the 'postgres' user (created by the Debian package 'postgresql')"
    setpriv --reuid=postgres --regid=postgres --init-groups --reset-env -- "$@"
  else
    "$@"
  fi
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start DIR [PID] | stop DIR | crash DIR | resume DIR"
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac

case "$cmd" in
  start)
    bindir=$(find_bindir)
    mkdir -p "$dir"
    [ -e "$dir/data" ] && die "$dir/data already exists"
    # Unix socket paths are limited to 107 bytes.
    [ ${#dir} -le 80 ] || die "directory path too long for a unix socket: $dir"
    if [ "$(id -u)" -eq 0 ]; then
      id postgres >/dev/null 2>&1 || die "running as root needs the 'postgres' user (created by the Debian package 'postgresql')"
      chown postgres: "$dir"
    fi
    chmod 0700 "$dir"
    as_owner test -w "$dir" || die "the cluster's owner cannot write $dir (is a parent directory private to root?)"
    as_owner "$bindir/initdb" --pgdata="$dir/data" --username=idlegrid --auth=trust --encoding=UTF8 \
      --locale=C --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '${IG_PG_TCP_PORT:+127.0.0.1}'
unix_socket_directories = '$dir'
port = ${IG_PG_TCP_PORT:-5432}
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 300
shared_buffers = 64MB
max_pred_locks_per_transaction = 256
log_min_messages = warning
EOF
    as_owner "$bindir/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" --wait --timeout=60 \
      --silent start || { cat "$dir/server.log" >&2; die "the server did not start"; }
    owner=${3:-}
    if [ -n "$owner" ]; then
      nohup setsid bash -c 'while kill -0 "$1" 2>/dev/null && [ -d "$2/data" ]; do sleep 1; done; "$0" stop "$2"' \
        "$(readlink -f "$0")" "$owner" "$dir" </dev/null >/dev/null 2>&1 &
    fi
    if [ -n "${IG_PG_TCP_PORT:-}" ]; then
      echo "postgresql://idlegrid@127.0.0.1:$IG_PG_TCP_PORT/postgres"
    else
      echo "postgresql:///postgres?host=$dir&user=idlegrid"
    fi
    ;;
  stop)
    bindir=$(find_bindir)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$bindir/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait --silent stop || true
    fi
    rm -rf "$dir"
    ;;
  crash)
    bindir=$(find_bindir)
    as_owner "$bindir/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait --silent stop
    ;;
  resume)
    bindir=$(find_bindir)
    as_owner "$bindir/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" --wait --timeout=60 \
      --silent start || { cat "$dir/server.log" >&2; die "the server did not start"; }
    ;;
  *)
    die "usage: $0 start DIR [PID] | stop DIR | crash DIR | resume DIR"
    ;;
esac

#!/usr/bin/env bash
# Starts the lock servers the lease-elect backend tests use: PostgreSQL, etcd and Redis, each on
# loopback on a fixed non-default port in a temporary directory, and stops them again.
#
# Two ways to use it:
#   bash scripts/servers.sh CMD [ARGS...]   start the servers, run CMD with the variables below
#                                           exported, stop the servers, exit with CMD's status
#   source scripts/servers.sh               start the servers and export the variables into the
#                                           current shell; `lease_elect_servers_stop` stops them
#
# Packages are installed by scripts/deps.sh (postgresql, etcd-server, redis-server, redis-tools,
# protobuf-compiler, libprotobuf-dev, ...) when anything it checks for is missing, and it then
# checks that every binary and file is present. PostgreSQL refuses to run as root, so it runs as the
# system user $LEASE_ELECT_PG_USER (created when missing).
#
# Exported:
#   LEASE_ELECT_PG_URL          postgres://...@127.0.0.1:55432/postgres
#   LEASE_ELECT_ETCD_ENDPOINT   http://127.0.0.1:52379
#   LEASE_ELECT_REDIS_URL       redis://127.0.0.1:56379/
#   LEASE_ELECT_PG_BINDIR       directory holding initdb and postgres
#   LEASE_ELECT_PG_USER         the unprivileged user PostgreSQL runs as when we are root
#   LEASE_ELECT_SERVERS_DIR     the temporary directory holding data and logs
# The fault tests start and stop servers of their own (on ports they pick) from the same binaries,
# so these shared servers are never stopped under another test.
# Ports: 55432, 52379 (and 52380 for etcd's peers), 56379, or the next free ones in steps of 10
# when another run holds them; set LEASE_ELECT_PG_PORT, LEASE_ELECT_ETCD_PORT,
# LEASE_ELECT_REDIS_PORT to choose.

_le_sourced=0
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then _le_sourced=1; fi

_le_log() { echo "servers.sh: $*" >&2; }

# shellcheck source=scripts/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/deps.sh"
_le_pg_bindir() { lease_elect_pg_bindir; }
_le_install() { lease_elect_deps_install; }

_le_wait() { # name, seconds, command...
  local name=$1 secs=$2; shift 2
  local i
  for ((i = 0; i < secs * 20; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  _le_log "$name did not answer within ${secs}s"
  return 1
}

lease_elect_servers_stop() {
  local dir=${LEASE_ELECT_SERVERS_DIR:-}
  [[ -n "$dir" && -d "$dir" ]] || return 0
  if [[ -f "$dir/redis.pid" ]]; then kill "$(cat "$dir/redis.pid")" 2>/dev/null || true; fi
  if [[ -f "$dir/etcd.pid" ]]; then kill "$(cat "$dir/etcd.pid")" 2>/dev/null || true; fi
  if [[ -f "$dir/pg/postmaster.pid" ]]; then
    # SIGINT = PostgreSQL's fast shutdown.
    kill -INT "$(head -1 "$dir/pg/postmaster.pid")" 2>/dev/null || true
  fi
  local i
  for ((i = 0; i < 100; i++)); do
    local alive=0 p
    for p in "$dir/redis.pid" "$dir/etcd.pid"; do
      [[ -f "$p" ]] && kill -0 "$(cat "$p")" 2>/dev/null && alive=1
    done
    [[ -f "$dir/pg/postmaster.pid" ]] && kill -0 "$(head -1 "$dir/pg/postmaster.pid" 2>/dev/null)" 2>/dev/null && alive=1
    ((alive)) || break
    sleep 0.05
  done
  rm -rf "$dir"
  unset LEASE_ELECT_SERVERS_DIR
}

_le_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The first free port of $1, $1+10, $1+20, ... (another run may hold the fixed one).
_le_free_port() {
  local p=$1 i
  for ((i = 0; i < 50; i++)); do
    if ! _le_port_busy "$p" && ! _le_port_busy "$((p + 1))"; then echo "$p"; return 0; fi
    p=$((p + 10))
  done
  return 1
}

lease_elect_servers_start() {
  _le_install || return 1
  local pg_port etcd_port redis_port
  pg_port=${LEASE_ELECT_PG_PORT:-$(_le_free_port 55432)} || return 1
  etcd_port=${LEASE_ELECT_ETCD_PORT:-$(_le_free_port 52379)} || return 1
  redis_port=${LEASE_ELECT_REDIS_PORT:-$(_le_free_port 56379)} || return 1
  local bindir
  bindir=$(_le_pg_bindir) || { _le_log "no PostgreSQL binaries found"; return 1; }
  local dir
  dir=$(mktemp -d /tmp/lease-elect-servers.XXXXXX) || return 1
  chmod 755 "$dir"
  export LEASE_ELECT_SERVERS_DIR=$dir
  export LEASE_ELECT_PG_BINDIR=$bindir

  # Redis: no persistence, loopback only.
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$dir" --daemonize no --notify-keyspace-events KEA >"$dir/redis.log" 2>&1 &
  echo $! >"$dir/redis.pid"

  # etcd: single member, its own data dir, unsafe-no-fsync to start and write fast.
  etcd --name lease-elect-test --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-cluster "lease-elect-test=http://127.0.0.1:$((etcd_port + 1))" \
    --unsafe-no-fsync --log-level error >"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/etcd.pid"

  # PostgreSQL: as an unprivileged user when we are root.
  local run=()
  if [[ $(id -u) -eq 0 ]]; then
    local user=${LEASE_ELECT_PG_USER:-leaseelect}
    if ! id "$user" >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin "$user" || return 1
    fi
    export LEASE_ELECT_PG_USER=$user
    mkdir -p "$dir/pg" && chown "$user" "$dir/pg" && chmod 700 "$dir/pg"
    run=(runuser -u "$user" --)
  else
    export LEASE_ELECT_PG_USER=$(id -un)
  fi
  "${run[@]}" "$bindir/initdb" -D "$dir/pg" -U postgres -A trust -N --no-instructions \
    >"$dir/pg-initdb.log" 2>&1 || { _le_log "initdb failed:"; cat "$dir/pg-initdb.log" >&2; return 1; }
  "${run[@]}" "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/pg/server.log" -w -t 20 -s \
    -o "-p $pg_port -c listen_addresses=127.0.0.1 -k $dir/pg -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null || { _le_log "PostgreSQL failed:"; cat "$dir/pg/server.log" >&2; return 1; }

  export LEASE_ELECT_PG_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"
  export LEASE_ELECT_ETCD_ENDPOINT="http://127.0.0.1:$etcd_port"
  export LEASE_ELECT_REDIS_URL="redis://127.0.0.1:$redis_port/"

  _le_wait redis 10 redis-cli -p "$redis_port" ping || { cat "$dir/redis.log" >&2; return 1; }
  _le_wait etcd 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$etcd_port && printf 'GET /health HTTP/1.0\r\n\r\n' >&3 && grep -q '\"health\":\"true\"' <&3" \
    || { cat "$dir/etcd.log" >&2; return 1; }
  _le_wait postgresql 10 "$bindir/pg_isready" -q -h 127.0.0.1 -p "$pg_port" || return 1
  _le_log "up: $LEASE_ELECT_PG_URL $LEASE_ELECT_ETCD_ENDPOINT $LEASE_ELECT_REDIS_URL"
}

if ((_le_sourced)); then
  lease_elect_servers_start || { lease_elect_servers_stop; return 1; }
else
  set -uo pipefail
  if (($# == 0)); then
    echo "usage: bash scripts/servers.sh CMD [ARGS...]  or  source scripts/servers.sh" >&2
    exit 2
  fi
  trap lease_elect_servers_stop EXIT
  trap 'exit 130' INT TERM
  lease_elect_servers_start || exit 1
  "$@"
  exit $?
fi

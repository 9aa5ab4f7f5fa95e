#!/usr/bin/env bash
# Starts the lock servers the lease-elect backend tests use: PostgreSQL, etcd and Redis, and a
# Kubernetes API server (kube-apiserver v1.34.4 on an etcd v3.6.4 of its own, both built from
# reference/ by scripts/reference.sh), each on loopback on a fixed non-default port in a temporary
# directory, and stops them again.
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
# system user $LEASE_ELECT_PG_USER (created when missing). kube-apiserver and its etcd come from
# $KUBE_REFERENCE_BIN (default target/reference/bin; scripts/test.sh sources scripts/reference.sh,
# which builds them and sets it); when either binary is missing this fails naming it: build them
# with `bash scripts/reference.sh`. The API server serves TLS with the certificate it generates
# itself in its directory and authenticates a static admin token (group system:masters) made at
# start; openssl makes the token and its service-account signing key.
#
# Exported:
#   LEASE_ELECT_PG_URL          postgres://...@127.0.0.1:55432/postgres
#   LEASE_ELECT_ETCD_ENDPOINT   http://127.0.0.1:52379
#   LEASE_ELECT_REDIS_URL       redis://127.0.0.1:56379/
#   LEASE_ELECT_PG_BINDIR       directory holding initdb and postgres
#   LEASE_ELECT_PG_USER         the unprivileged user PostgreSQL runs as when we are root
#   LEASE_ELECT_KUBE_URL        https://127.0.0.1:56443 (kube-apiserver)
#   LEASE_ELECT_KUBE_TOKEN      its admin bearer token (made at start, gone with the directory)
#   LEASE_ELECT_KUBE_CA         the PEM file of its serving certificate and the CA that signed it
#   LEASE_ELECT_KUBE_ETCD_ENDPOINT  http://127.0.0.1:52479, the API server's own etcd
#   KUBE_REFERENCE_BIN          the directory holding kube-apiserver and etcd (for the tests that
#                               start API servers of their own)
#   LEASE_ELECT_SERVERS_DIR     the temporary directory holding data and logs
# The fault tests start and stop servers of their own (on ports they pick) from the same binaries,
# so these shared servers are never stopped under another test.
# Ports: 55432, 52379 (and 52380 for etcd's peers), 56379, 56443, 52479 (and 52480), or the next
# free ones in steps of 10 when another run holds them; set LEASE_ELECT_PG_PORT,
# LEASE_ELECT_ETCD_PORT, LEASE_ELECT_REDIS_PORT, LEASE_ELECT_KUBE_PORT, LEASE_ELECT_KUBE_ETCD_PORT
# to choose.

_le_sourced=0
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then _le_sourced=1; fi

_le_log() { echo "servers.sh: $*" >&2; }
_le_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

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
  local pidfiles=("$dir/redis.pid" "$dir/etcd.pid" "$dir/kube-apiserver.pid" "$dir/kube-etcd.pid")
  local p i
  # kube-apiserver first: its graceful shutdown writes to its etcd (it removes its own Lease
  # and endpoint), and waits for it when that etcd is gone.
  p=$dir/kube-apiserver.pid
  if [[ -f "$p" ]] && kill "$(cat "$p")" 2>/dev/null; then
    for ((i = 0; i < 100; i++)); do
      kill -0 "$(cat "$p")" 2>/dev/null || break
      sleep 0.05
    done
  fi
  for p in "${pidfiles[@]}"; do
    if [[ -f "$p" ]]; then kill "$(cat "$p")" 2>/dev/null || true; fi
  done
  if [[ -f "$dir/pg/postmaster.pid" ]]; then
    # SIGINT = PostgreSQL's fast shutdown.
    kill -INT "$(head -1 "$dir/pg/postmaster.pid")" 2>/dev/null || true
  fi
  for ((i = 0; i < 100; i++)); do
    local alive=0
    for p in "${pidfiles[@]}"; do
      [[ -f "$p" ]] && kill -0 "$(cat "$p")" 2>/dev/null && alive=1
    done
    [[ -f "$dir/pg/postmaster.pid" ]] && kill -0 "$(head -1 "$dir/pg/postmaster.pid" 2>/dev/null)" 2>/dev/null && alive=1
    ((alive)) || break
    sleep 0.05
  done
  # Whatever did not stop within 5 s.
  for p in "${pidfiles[@]}"; do
    if [[ -f "$p" ]]; then kill -KILL "$(cat "$p")" 2>/dev/null || true; fi
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

# The kube-apiserver and etcd binaries built from reference/; names each missing file.
_le_kube_binaries() {
  local bin=${KUBE_REFERENCE_BIN:-$_le_root/target/reference/bin} f what missing=0
  while read -r f what; do
    if [[ ! -x $bin/$f ]]; then
      _le_log "missing: $bin/$f ($what, built from reference/)"
      missing=1
    fi
  done <<<"kube-apiserver kube-apiserver v1.34.4
etcd etcd v3.6.4"
  if ((missing)); then
    _le_log "build them with: bash scripts/reference.sh (about 5 minutes)"
    return 1
  fi
  export KUBE_REFERENCE_BIN=$bin
}

# Starts etcd (client port $1, peers $1+1) and kube-apiserver (port $2) in $3, in the background.
_le_kube_start() {
  local etcd_port=$1 port=$2 dir=$3
  mkdir -p "$dir" && chmod 700 "$dir" || return 1
  openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null || { _le_log "openssl genrsa failed"; return 1; }
  local token
  token=$(openssl rand -hex 24) || return 1
  (umask 077 && echo "$token,lease-elect-admin,lease-elect-admin,system:masters" >"$dir/tokens.csv") || return 1
  "$KUBE_REFERENCE_BIN/etcd" --name kube --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-cluster "kube=http://127.0.0.1:$((etcd_port + 1))" \
    --unsafe-no-fsync --log-level error >"$dir/etcd.log" 2>&1 &
  echo $! >"$LEASE_ELECT_SERVERS_DIR/kube-etcd.pid"
  # It waits for its etcd by itself. The serving certificate and its CA, generated on first
  # start, land in $dir/certs/apiserver.crt (valid for 127.0.0.1).
  "$KUBE_REFERENCE_BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" \
    --bind-address=127.0.0.1 --secure-port="$port" --cert-dir="$dir/certs" \
    --token-auth-file="$dir/tokens.csv" --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$dir/sa.key" --service-account-signing-key-file="$dir/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 --disable-admission-plugins=ServiceAccount \
    >"$dir/kube-apiserver.log" 2>&1 &
  echo $! >"$LEASE_ELECT_SERVERS_DIR/kube-apiserver.pid"
  export LEASE_ELECT_KUBE_URL="https://127.0.0.1:$port"
  export LEASE_ELECT_KUBE_TOKEN=$token
  export LEASE_ELECT_KUBE_CA=$dir/certs/apiserver.crt
  export LEASE_ELECT_KUBE_ETCD_ENDPOINT="http://127.0.0.1:$etcd_port"
}

_le_kube_ready() {
  [[ -r $LEASE_ELECT_KUBE_CA ]] &&
    curl -sf --max-time 2 --cacert "$LEASE_ELECT_KUBE_CA" \
      -H "Authorization: Bearer $LEASE_ELECT_KUBE_TOKEN" "$LEASE_ELECT_KUBE_URL/readyz"
}

lease_elect_servers_start() {
  _le_install || return 1
  _le_kube_binaries || return 1
  local pg_port etcd_port redis_port kube_port kube_etcd_port
  pg_port=${LEASE_ELECT_PG_PORT:-$(_le_free_port 55432)} || return 1
  etcd_port=${LEASE_ELECT_ETCD_PORT:-$(_le_free_port 52379)} || return 1
  redis_port=${LEASE_ELECT_REDIS_PORT:-$(_le_free_port 56379)} || return 1
  kube_port=${LEASE_ELECT_KUBE_PORT:-$(_le_free_port 56443)} || return 1
  kube_etcd_port=${LEASE_ELECT_KUBE_ETCD_PORT:-$(_le_free_port 52479)} || return 1
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

  # Kubernetes: etcd and kube-apiserver from reference/, in their own directory.
  _le_kube_start "$kube_etcd_port" "$kube_port" "$dir/kube" || return 1
  local kube_started
  kube_started=$(date +%s%3N)

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
  # About 3 s on an idle 2-core machine; much longer when it is busy.
  _le_wait kube-apiserver 120 _le_kube_ready || {
    tail -n 30 "$dir/kube/kube-apiserver.log" >&2
    return 1
  }
  _le_log "kube-apiserver ready $(($(date +%s%3N) - kube_started)) ms after its start"
  _le_log "up: $LEASE_ELECT_PG_URL $LEASE_ELECT_ETCD_ENDPOINT $LEASE_ELECT_REDIS_URL $LEASE_ELECT_KUBE_URL"
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

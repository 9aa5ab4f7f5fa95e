#!/usr/bin/env bash
# Installs the Debian packages that building and testing this workspace need, then checks that
# every binary and file the build and the tests use is present, naming the package of anything
# missing. The check runs whether or not anything was installed, so a machine that happens to
# have extra packages cannot hide a missing install step.
#
#   bash scripts/deps.sh            install what is missing (apt-get; root or sudo), then check
#   bash scripts/deps.sh --check    only check; exit 1 naming the missing packages
#   source scripts/deps.sh          defines lease_elect_deps_install / lease_elect_deps_check
#
# Packages (Debian 12):
#   postgresql        initdb, postgres, pg_ctl, pg_isready (the PostgreSQL lock's tests)
#   etcd-server       etcd (the etcd lock's tests)
#   redis-server      redis-server (the Redis lock's tests)
#   redis-tools       redis-cli (readiness check of the test Redis)
#   protobuf-compiler protoc (the etcd client's build script compiles etcd's .proto files)
#   libprotobuf-dev   google/protobuf/*.proto, the well-known types those .proto files import
#   gcc               cc (ring and other crates build C code)
#   util-linux, passwd  runuser, useradd (PostgreSQL refuses to run as root), flock (a fault test holds FileLock's OS lock)
#   python3           scripts/check-layers.py (the module layering check)
#   openssl           the test kube-apiserver's admin token and service-account key (scripts/servers.sh
#                     and the tests that start API servers of their own)
#   curl              readiness check of the test kube-apiserver (/readyz over TLS)

# One line per requirement: kind (cmd | file | pgbin), what, Debian package.
_le_deps_manifest() {
  cat <<'EOF'
cmd protoc protobuf-compiler
file /usr/include/google/protobuf/descriptor.proto libprotobuf-dev
file /usr/include/google/protobuf/struct.proto libprotobuf-dev
file /usr/include/google/protobuf/timestamp.proto libprotobuf-dev
file /usr/include/google/protobuf/any.proto libprotobuf-dev
cmd etcd etcd-server
cmd redis-server redis-server
cmd redis-cli redis-tools
pgbin initdb postgresql
pgbin postgres postgresql
pgbin pg_ctl postgresql
pgbin pg_isready postgresql
cmd cc gcc
cmd runuser util-linux
cmd flock util-linux
cmd useradd passwd
cmd python3 python3
cmd openssl openssl
cmd curl curl
EOF
}

_le_deps_log() { echo "deps.sh: $*" >&2; }

# The newest PostgreSQL server bin directory Debian installed.
lease_elect_pg_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$d/initdb" && -x "$d/postgres" ]]; then echo "$d"; return 0; fi
  done
  return 1
}

# Prints "what package" for each requirement that is not met; nothing when all are.
_le_deps_missing() {
  local kind what pkg bindir
  bindir=$(lease_elect_pg_bindir 2>/dev/null || true)
  while read -r kind what pkg; do
    case $kind in
      # A program on PATH, not a shell builtin of the same name: the tests exec it.
      cmd) type -P "$what" >/dev/null 2>&1 || echo "$what $pkg" ;;
      file) [[ -r $what ]] || echo "$what $pkg" ;;
      pgbin) [[ -n $bindir && -x $bindir/$what ]] || echo "$what $pkg" ;;
    esac
  done < <(_le_deps_manifest)
}

# Checks every requirement; on failure names each missing binary or file and its package.
lease_elect_deps_check() {
  local missing
  missing=$(_le_deps_missing)
  if [[ -z $missing ]]; then return 0; fi
  _le_deps_log "missing (binary or file, Debian package):"
  while read -r what pkg; do _le_deps_log "  $what  (package $pkg)"; done <<<"$missing"
  _le_deps_log "install them: apt-get install $(awk '{print $2}' <<<"$missing" | sort -u | tr '\n' ' ')"
  return 1
}

# Installs the packages of every unmet requirement, then checks all of them again.
lease_elect_deps_install() {
  local missing pkgs=()
  missing=$(_le_deps_missing)
  if [[ -n $missing ]]; then
    mapfile -t pkgs < <(awk '{print $2}' <<<"$missing" | sort -u)
    _le_deps_log "installing ${pkgs[*]}"
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
      if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
        _le_deps_log "missing ${pkgs[*]} and not root: install them first"
        lease_elect_deps_check
        return 1
      fi
    fi
    "${sudo[@]}" apt-get update -qq >/dev/null || { _le_deps_log "apt-get update failed"; return 1; }
    # The packages' own services may start on their default ports; ours use others.
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
      "${pkgs[@]}" >/dev/null || { _le_deps_log "apt-get install ${pkgs[*]} failed"; return 1; }
  fi
  lease_elect_deps_check
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -uo pipefail
  case ${1:-} in
    --check) lease_elect_deps_check ;;
    "") lease_elect_deps_install ;;
    *) echo "usage: bash scripts/deps.sh [--check]" >&2; exit 2 ;;
  esac
  exit $?
fi

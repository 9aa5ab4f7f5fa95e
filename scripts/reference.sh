#!/usr/bin/env bash
# Builds kube itself, the project's reference, from the Go module in reference/ (k8s.io/kubernetes
# v1.34.4 and its staging modules at v0.34.4, etcd v3.6.4: the versions reference/go.mod pins),
# then checks by their files that every binary is there. Go is needed by the tests only; library
# users need none.
#
#   bash scripts/reference.sh           build what is missing or stale, then check
#   bash scripts/reference.sh --check   only check; exit 1 naming what is missing
#   bash scripts/reference.sh --lint    gofmt and go vet on reference/
#   source scripts/reference.sh         build, check and export the variables below
#
# Binaries (target/reference/bin):
#   oracle           kube-scheduler v1.34.4 in process on a case folder (reference/cmd/oracle)
#   perf             kube's scheduler_perf workloads through kube-scheduler in process (reference/cmd/perf)
#   kube-apiserver   k8s.io/kubernetes/cmd/kube-apiserver v1.34.4
#   kube-scheduler   k8s.io/kubernetes/cmd/kube-scheduler v1.34.4 (sched-kube's peer on a real API server)
#   etcd             go.etcd.io/etcd/server/v3 v3.6.4 (reference/cmd/etcd)
# Exported when sourced:
#   KUBE_REFERENCE_BIN       the directory above
#   KUBE_REFERENCE_VERSION   v1.34.4
#
# Needs: `go` (1.24 or newer; go.mod says 1.24.0) on PATH, and the Go module proxy (or a module
# cache that already holds the modules). Go's build cache is reused between runs.

_kr_sourced=0
if [[ "${BASH_SOURCE[0]}" != "$0" ]]; then _kr_sourced=1; fi

_kr_log() { echo "reference.sh: $*" >&2; }

KUBE_REFERENCE_VERSION=v1.34.4
_kr_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_kr_mod=$_kr_root/reference
KUBE_REFERENCE_BIN=${KUBE_REFERENCE_BIN:-$_kr_root/target/reference/bin}

# What the build must leave behind, one per line: file, what it is.
_kr_manifest() {
  cat <<EOF
$KUBE_REFERENCE_BIN/oracle kube-scheduler oracle (reference/cmd/oracle)
$KUBE_REFERENCE_BIN/perf kube-scheduler benchmark peer (reference/cmd/perf)
$KUBE_REFERENCE_BIN/kube-apiserver kube-apiserver $KUBE_REFERENCE_VERSION (k8s.io/kubernetes/cmd/kube-apiserver)
$KUBE_REFERENCE_BIN/kube-scheduler kube-scheduler $KUBE_REFERENCE_VERSION (k8s.io/kubernetes/cmd/kube-scheduler)
$KUBE_REFERENCE_BIN/etcd etcd v3.6.4 (reference/cmd/etcd)
EOF
}

# The k8s.io/kubernetes module's directory in Go's module cache (its scheduler_perf files are
# the benchmark's workloads).
kube_reference_module_dir() {
  (cd "$_kr_mod" && go list -m -f '{{.Dir}}' k8s.io/kubernetes 2>/dev/null)
}

# Checks every binary and the module's files; names each missing one. Returns 1 when one is
# missing.
kube_reference_check() {
  local file what missing=0
  while read -r file what; do
    if [[ ! -x $file ]]; then
      _kr_log "missing: $file ($what)"
      missing=1
    fi
  done < <(_kr_manifest)
  if ! type -P go >/dev/null 2>&1; then
    _kr_log "missing: the Go toolchain (\`go\` on PATH, 1.24 or newer)"
    missing=1
  else
    local dir
    dir=$(kube_reference_module_dir)
    for file in go.mod test/integration/scheduler_perf/misc/performance-config.yaml \
      test/integration/scheduler_perf/templates/pod-default.yaml; do
      if [[ -z $dir || ! -r $dir/$file ]]; then
        local where=${dir:-the Go module cache}
        _kr_log "missing: k8s.io/kubernetes $KUBE_REFERENCE_VERSION module file $file (in $where; run go mod download in reference/)"
        missing=1
      fi
    done
  fi
  if ((missing)); then
    _kr_log "build them with: bash scripts/reference.sh"
    return 1
  fi
}

kube_reference_build() {
  if ! type -P go >/dev/null 2>&1; then
    _kr_log "missing: the Go toolchain (\`go\` on PATH, 1.24 or newer): the reference module"
    _kr_log "  reference/go.mod builds kube-scheduler, kube-apiserver and etcd for the tests"
    return 1
  fi
  local have
  have=$(go env GOVERSION 2>/dev/null) || have=unknown
  case $have in
    go1.2[4-9]* | go1.[3-9][0-9]* | go[2-9]*) ;;
    *)
      _kr_log "Go $have is too old: reference/go.mod needs go 1.24 or newer"
      return 1
      ;;
  esac
  (
    cd "$_kr_mod" || exit 1
    if ! go mod download >"$KUBE_REFERENCE_BIN.download.log" 2>&1; then
      _kr_log "go mod download failed in reference/ (k8s.io/kubernetes $KUBE_REFERENCE_VERSION and its"
      _kr_log "  staging modules v0.34.4 come from the Go module proxy, $(go env GOPROXY)):"
      tail -n 20 "$KUBE_REFERENCE_BIN.download.log" >&2
      exit 1
    fi
    # The version kube's own build stamps in (hack/lib/version.sh), so /version says v1.34.4.
    local pkg=k8s.io/component-base/version
    local ldflags="-X $pkg.gitVersion=$KUBE_REFERENCE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=34"
    ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_REFERENCE_VERSION"
    if ! go build -trimpath -ldflags "$ldflags" -o "$KUBE_REFERENCE_BIN/" ./cmd/oracle ./cmd/perf ./cmd/etcd \
      || ! go build -trimpath -ldflags "$ldflags" -o "$KUBE_REFERENCE_BIN/kube-apiserver" \
        k8s.io/kubernetes/cmd/kube-apiserver \
      || ! go build -trimpath -ldflags "$ldflags" -o "$KUBE_REFERENCE_BIN/kube-scheduler" \
        k8s.io/kubernetes/cmd/kube-scheduler; then
      _kr_log "go build failed in reference/"
      exit 1
    fi
  ) || return 1
  kube_reference_check
}

# gofmt and go vet on the module's own code.
kube_reference_lint() {
  local unformatted
  unformatted=$(cd "$_kr_mod" && gofmt -l .) || return 1
  if [[ -n $unformatted ]]; then
    _kr_log "gofmt would change: $unformatted"
    return 1
  fi
  (cd "$_kr_mod" && go vet ./...)
}

kube_reference_main() {
  mkdir -p "$KUBE_REFERENCE_BIN" || return 1
  case ${1:-} in
    --check) kube_reference_check ;;
    --lint) kube_reference_lint ;;
    "")
      _kr_log "building kube $KUBE_REFERENCE_VERSION from reference/ into $KUBE_REFERENCE_BIN"
      local start=$SECONDS
      kube_reference_build || return 1
      _kr_log "built in $((SECONDS - start)) s"
      ;;
    *) echo "usage: bash scripts/reference.sh [--check | --lint]" >&2; return 2 ;;
  esac
}

if ((_kr_sourced)); then
  kube_reference_main "$@" || return 1
  export KUBE_REFERENCE_BIN KUBE_REFERENCE_VERSION
else
  set -uo pipefail
  kube_reference_main "$@"
  exit $?
fi

#!/usr/bin/env bash
# Installs the Debian packages the demo and the tests need, if any is missing.
# Idempotent and cheap to re-run: one dpkg-query, no network when nothing is missing.
# Needs root (or passwordless sudo) only when something has to be installed.
set -euo pipefail

packages=(
  mariadb-server   # mariadbd, mariadb-install-db (mysqlctl init)
  mariadb-backup   # mariabackup, mbstream (the engines' backup tool)
  mariadb-client   # mariadb / mysql client (handy for troubleshooting)
  etcd-server      # topology server for Vitess
  etcd-client      # etcdctl
  zstd             # external compressor option
  ca-certificates
  git
  make
  procps           # ps/pkill in troubleshooting; Go tests do not need it
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done
# Azurite, the Azure test server (make tools), is an npm package: Node.js and npm from
# Debian, unless the machine has its own (a nodesource nodejs brings npm and conflicts
# with Debian's npm package).
command -v npm >/dev/null || missing+=(nodejs npm)

if ((${#missing[@]})); then
  echo "setup: installing missing Debian packages: ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Do not let the package scripts start the system mariadb/etcd services: we never use
  # them (every test and the demo start their own mysqld and etcd on free ports).
  policy=/usr/sbin/policy-rc.d created_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod +x "$policy"
    created_policy=1
  fi
  trap '[[ $created_policy == 1 ]] && "${sudo[@]}" rm -f "$policy"' EXIT
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Go: the module needs the version named in go.mod. We do not install Go from Debian
# (bookworm's is too old); with Go >= 1.21 present, GOTOOLCHAIN=auto fetches the right one
# from the Go module proxy.
if ! command -v go >/dev/null; then
  for d in /usr/local/go/bin /usr/lib/go/bin; do
    [[ -x $d/go ]] && { echo "setup: Go found in $d but not in PATH; add it: export PATH=\$PATH:$d" >&2; exit 1; }
  done
  echo "setup: Go is not installed. Install Go >= 1.21 (https://go.dev/dl/); it will fetch the toolchain go.mod asks for." >&2
  exit 1
fi
need=$(awk '$1=="go"{print $2; exit}' go.mod)
have=$(go env GOVERSION | sed 's/^go//')
if [[ $(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1) != "$need" ]]; then
  echo "setup: Go $have is older than go.mod's $need; run with GOTOOLCHAIN=auto or install Go $need" >&2
  exit 1
fi

# Tools the tests and the demo run.
for t in mariadbd mariabackup mbstream etcd; do
  command -v "$t" >/dev/null || [[ -x /usr/sbin/$t ]] || { echo "setup: $t not found after install" >&2; exit 1; }
done

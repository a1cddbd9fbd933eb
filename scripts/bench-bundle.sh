#!/usr/bin/env bash
# Carries the side-by-side benchmark to a bigger x86-64 Linux host that has
# neither MariaDB nor a network (how the 16-core figures were taken).
#
#   scripts/bench-bundle.sh pack        # here: build/bench-bundle/bundle.tar.gz (~50 MiB)
#   BENCH_...=... scripts/bench-bundle.sh run OUTDIR   # there, as root, in a copy of this repository
#
# BENCH_TIME_LIMIT_S=N stops the benchmark after N seconds (a lent host's
# call has a limit): what it measured by then stays (results.json is saved
# after every cell), and OUTDIR gets results.json, bench.log and logs.tgz
# (each run's log and profiles) either way. A stopped run leaves its
# temporary directories under $TMPDIR (a lent host is given back anyway).
#
# pack: the compiled benchmark (stripped), the files of Debian's mariadb-server-core,
# mariadb-backup and mariadb-client-core and mysqladmin, the libraries they link
# besides glibc and libstdc++, and the xtrabackup stand-in the benchmark would
# build with go. run: unpacks the binaries under /usr (never over an existing
# file, so the host's own files stay as they are), the libraries in /usr/lib/mysql (reached
# through LD_LIBRARY_PATH only: the directory Vitess's mysqlctl names there for the
# mysqld it starts) and the benchmark in /opt/vtfifo-bench, adds the mysql user, runs the benchmark
# with the BENCH_ variables it was given (scripts/bench.sh lists them) and leaves
# results.json and bench.log in OUTDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=build/bench-bundle/bundle.tar.gz

pack() {
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage/usr/lib/mysql" "$(dirname "$bundle")"
  go test -c -ldflags='-s -w' -o "$stage/opt/vtfifo-bench/sidebyside.test" ./go/testutil/benchdata/sidebyside/
  # The programs the benchmark would build with go before it runs (testbin).
  go build -ldflags='-s -w' -o "$stage/opt/vtfifo-bench/bin/xtrabackup" ./go/testutil/xtrabackupstandin
  dpkg -L mariadb-server-core mariadb-backup mariadb-client-core |
    grep -Ev '/share/(man|doc|lintian)/' |
    while read -r f; do if [[ -f "$f" ]]; then echo "${f#/}"; fi; done >"$stage/files"
  # Vitess's mysqlctl stops mysqld with mysqladmin (package mariadb-client).
  printf '%s\n' usr/bin/mariadb-admin usr/bin/mysqladmin >>"$stage/files"
  # Every library these programs link, except the C and C++ runtimes the host has.
  while read -r f; do ldd "/$f" 2>/dev/null || true; done <"$stage/files" |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libgcc_s|libstdc\+\+|ld-linux-x86-64)\.so' |
    xargs -I{} cp -L {} "$stage/usr/lib/mysql/"
  tar -C / -cf "$stage/bundle.tar" -T "$stage/files"
  tar -C "$stage" -rf "$stage/bundle.tar" opt usr/lib/mysql
  gzip -9 -c "$stage/bundle.tar" >"$bundle"
  ls -l "$bundle"
}

run() {
  local out=${1:?usage: scripts/bench-bundle.sh run OUTDIR}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  tar -C / --skip-old-files -xzf "$bundle" usr
  tar -C / -xzf "$bundle" opt
  id mysql >/dev/null 2>&1 || useradd --system --no-create-home mysql
  export LD_LIBRARY_PATH=/usr/lib/mysql TESTBIN_PREBUILT_DIR=/opt/vtfifo-bench/bin
  export BENCH_OUT="${BENCH_OUT:-$out/bench}" BENCH_DOC=-
  if [[ -z "${BENCH_COMMAND:-}" ]]; then
    BENCH_COMMAND="$(env | { grep -E '^BENCH_[A-Z_]+=' | grep -Ev '^BENCH_(OUT|DOC|TIME_LIMIT_S)=' || true; } | sort | tr '\n' ' ')scripts/bench-bundle.sh run OUTDIR"
  fi
  export BENCH_COMMAND
  local limit=() rc=0
  if [[ -n "${BENCH_TIME_LIMIT_S:-}" ]]; then
    limit=(timeout -k 10 "$BENCH_TIME_LIMIT_S")
  fi
  # go test runs a package's tests in its directory.
  (cd go/testutil/benchdata/sidebyside &&
    "${limit[@]}" /opt/vtfifo-bench/sidebyside.test -test.run '^$' -test.bench BenchmarkSideBySide \
      -test.benchtime 1x -test.timeout 0 -test.v) >"$out/bench.log" 2>&1 || rc=$?
  cp "$BENCH_OUT/results.json" "$out/results.json" 2>/dev/null || echo "bench-bundle: no results.json" >&2
  if [[ -d "$BENCH_OUT/logs" ]]; then tar -C "$BENCH_OUT" -czf "$out/logs.tgz" logs; fi
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    echo "bench-bundle: stopped at BENCH_TIME_LIMIT_S=$BENCH_TIME_LIMIT_S; the cells measured by then are in $out/results.json" >&2
  fi
  grep -E 'bench:|^(---|ok|FAIL|PASS)' "$out/bench.log" || true
  return "$rc"
}

case "${1:-}" in
pack) pack ;;
run) shift; run "$@" ;;
*) echo "usage: scripts/bench-bundle.sh pack | run OUTDIR" >&2; exit 2 ;;
esac

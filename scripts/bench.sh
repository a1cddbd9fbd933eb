#!/usr/bin/env bash
# Side-by-side benchmarks: fifo+split vs Vitess's xtrabackup engine, and the
# ceilings of the machine. Writes build/bench/results.json, build/bench/logs/,
# docs/benchmarks/side-by-side.md and docs/benchmarks/img/side-by-side-time.svg
# (docs/benchmarks/README.md lists every page).
#
#   scripts/bench.sh                     # standard: every axis, ~75 min on 2 cores (what docs/benchmarks/side-by-side.md publishes):
#                                        #   mixed 1 GiB N=1,2,4,8 local+S3 zstd, pgzip N=2, part sweep;
#                                        #   many/giant 1 GiB N=2,8; mixed 4 GiB N=2,8 + part sweep
#   BENCH_PROFILE=quick scripts/bench.sh # 1 GiB mixed, N=1,2 (S3: N=2), zstd: a 10-minute smoke run
#   BENCH_PROFILE=full scripts/bench.sh  # every combination (1 and 4 GiB, 3 shapes, N=1,2,4,8, zstd+pgzip, local+S3)
#
# Overrides (comma lists): BENCH_SIZES_MIB (<= 32768), BENCH_SHAPES (many,giant,mixed),
# BENCH_LANES, BENCH_S3_LANES, BENCH_COMPRESSORS (zstd,pgzip,lz4), BENCH_STORAGES (local,s3),
# BENCH_ENGINES (xtrabackup,fifo-stdout,fifo-fifo-standin), BENCH_REPEAT, BENCH_PART_SIZES_MIB, BENCH_SWEEP_SIZES_MIB, BENCH_SWEEP_REPEAT, BENCH_SWEEP_LANES, BENCH_SEED,
# (overriding a list replaces the standard plan by the product of the lists),
# BENCH_PLANS (data sets of the profile to run, e.g. mixed-1024), BENCH_OUT (results dir),
# BENCH_DOC (markdown path, "-" for none), BENCH_CPU_PROFILE=1 (each run's CPU and blocking profiles
# under logs/: where a many-core run's time goes), BENCH_ALLOC_PROFILE=1 (its allocations),
# BENCH_STORAGE_DIR (an existing directory, e.g. on tmpfs: the local storages and the split spool
# go in a directory of the run's own there, removed after; what their writes cost the tool's
# reads; default beside the tablet, on its disk), BENCH_TOOL_PARALLEL (the tool's
# --parallel in every engine and ceiling, default 4).
# A re-run data set replaces the first run's figures with
#   go run ./go/testutil/benchdata/sidebyside/render build/bench/results.json RERUN/results.json
# Needs MariaDB 10.11 + mariadb-backup (make setup) and versitygw (make tools) for S3.
# On a bigger host with neither Go, MariaDB nor a network: scripts/bench-bundle.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export VERSITYGW_BIN="${VERSITYGW_BIN:-$PWD/build/tools/versitygw}"
# The command the report publishes: this one, with the BENCH_ variables it was given.
if [[ -z "${BENCH_COMMAND:-}" ]]; then
  BENCH_COMMAND="$(env | { grep -E '^BENCH_[A-Z_]+=' || true; } | sort | tr '\n' ' ')scripts/bench.sh"
fi
export BENCH_COMMAND
mkdir -p build/bench
# go test runs in the package's directory: relative paths are the caller's.
for v in BENCH_OUT BENCH_DOC; do
  p="${!v:-}"
  if [[ -n "$p" && "$p" != "-" && "$p" != /* ]]; then export "$v=$PWD/$p"; fi
done
go test -run '^$' -bench BenchmarkSideBySide -benchtime 1x -timeout 0 -v \
  ./go/testutil/benchdata/sidebyside/ 2>&1 | tee build/bench/bench.log | grep --line-buffered -E 'bench:|^(---|ok|FAIL|PASS)|Error'

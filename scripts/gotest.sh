#!/usr/bin/env bash
# Runs the tests of ./... with ARGS (go test flags only: -timeout, -count, -v, -run, and build
# flags such as -race or -tags), the slow packages split into shards that run beside the rest,
# and keeps the whole output in build/test-output.log. When a run fails it ends with a summary
# of what failed: every "--- FAIL" line with the test's own messages, panics, timeouts and
# test binaries killed by a signal (the tests log a lot: mysqld, Vitess, so the cause may be
# far above the last lines a CI keeps).
#
#   scripts/gotest.sh -timeout 75m -count=1
#
# Why shards: a package's tests run one after another in one process, and the slow ones
# (real MariaDB, clusters) mostly wait on processes starting and stopping, so one package
# leaves the CPUs idle. Each slow package is compiled once (go test -c) and its top-level
# tests are dealt into processes of that binary (-test.run), one per TEST_SHARD_SECONDS of
# their weight, the heaviest first into the lightest shard, by the weights in
# scripts/test-weights.tsv (whole seconds measured on 2 cores; an unknown test weighs 1);
# every shard runs at once with the other packages (go test -p), in its package's directory
# as go test runs it. Vitess keeps engine and storage in globals, so tests of one package
# cannot share a process in parallel: separate processes can. The helper programs the tests
# run (go/testutil/testbin) are built once, before, for every process.
set -uo pipefail
cd "$(dirname "$0")/.."
for a in "$@"; do
  if [[ $a == ./* ]]; then
    echo "scripts/gotest.sh: $a: give go test flags only; it runs ./..." >&2
    exit 2
  fi
done
go=${GO:-go}
shard_seconds=${TEST_SHARD_SECONDS:-250}
slow=(./go/vt/mysqlctl/fifobackupengine ./test/endtoend ./test/reliability)
log=build/test-output.log
logs=build/test-logs
bins=$PWD/build/test-bins
rm -rf "$logs" "$bins" && mkdir -p "$logs" "$bins"

declare -A weight=()
while IFS=$'\t' read -r name secs; do
  [[ -z $name || $name == \#* ]] || weight[$name]=$secs
done < scripts/test-weights.tsv

# The go test flags split: those the test binary takes (as -test.X) and the build flags.
test_flags=() build_flags=()
while (( $# > 0 )); do
  case $1 in
    -timeout|-count|-run|-parallel|-cpu)
      test_flags+=("-test.${1#-}=$2"); shift 2; continue ;;
    -timeout=*|-count=*|-run=*|-parallel=*|-cpu=*|-v|-v=*|-short|-failfast)
      test_flags+=("-test.${1#-}") ;;
    *) build_flags+=("$1") ;;
  esac
  shift
done

# deal PKG: prints one -run pattern per shard, the heaviest tests first, each into the
# shard with the least weight so far.
deal() {
  local pkg=$1 name i best shards total=0
  local -a load=() sets=() tests=()
  mapfile -t tests < <("$bins/$(basename "$pkg").test" -test.list '.' 2>/dev/null | grep -E '^(Test|Fuzz|Example)' |
    while read -r t; do printf '%s\t%s\n' "${weight[$pkg.$t]:-1}" "$t"; done | sort -t$'\t' -k1,1 -rn | cut -f2)
  for name in "${tests[@]}"; do (( total += ${weight[$pkg.$name]:-1} )); done
  shards=$(( (total + shard_seconds - 1) / shard_seconds ))
  (( shards >= 1 )) || shards=1
  for ((i = 0; i < shards; i++)); do load[i]=0; sets[i]=; done
  for name in "${tests[@]}"; do
    best=0
    for ((i = 1; i < shards; i++)); do
      (( load[i] < load[best] )) && best=$i
    done
    (( load[best] += ${weight[$pkg.$name]:-1} ))
    sets[best]+="${sets[best]:+|}$name"
  done
  for ((i = 0; i < shards; i++)); do
    [[ -n ${sets[i]} ]] && echo "^(${sets[i]})\$"
  done
}

jobs=()
# start NAME DIR CMD...: one process in the background, in DIR, its output in $logs/NAME.
start() {
  local name=$1 dir=$2; shift 2
  jobs+=("$name")
  if [[ -n ${TEST_DRY_RUN:-} ]]; then # print the processes, run nothing
    echo "$name: (cd $dir && $*)" >"$logs/$name"; echo 0 >"$logs/$name.status"
    return
  fi
  ( cd "$dir" && "$@" >"$OLDPWD/$logs/$name" 2>&1; echo $? >"$OLDPWD/$logs/$name.status" ) &
}

# shard NAME IMPORTPATH BINARY PATTERN TESTFLAGS...: the package's test binary on the tests
# PATTERN matches, with a last line as go test prints it.
shard() {
  local name=$1 path=$2 bin=$3 pattern=$4 t0 rc
  shift 4
  t0=$(date +%s)
  "$bin" -test.run "$pattern" "$@"
  rc=$?
  (( rc == 0 )) && echo "ok  	$path [$name]	$(( $(date +%s) - t0 ))s" || echo "FAIL	$path [$name]	$(( $(date +%s) - t0 ))s"
  return $rc
}
export -f shard

built=0
"$go" build -o "$bins/" ./go/cmd/fifoverify ./test/reliability/internal/backupproc >"$logs/build" 2>&1 &&
  "$go" build -o "$bins/xtrabackup" ./go/testutil/xtrabackupstandin >>"$logs/build" 2>&1 || built=1
for p in "${slow[@]}"; do
  "$go" test -c "${build_flags[@]}" -o "$bins/$(basename "$p").test" "$p" >>"$logs/build" 2>&1 || built=1
done
if (( built != 0 )); then
  cat "$logs/build"
  echo "gotest: building the tests failed"
  exit 1
fi
export TESTBIN_PREBUILT_DIR=$bins

rest=$("$go" list ./... | grep -vxF -f <(for p in "${slow[@]}"; do "$go" list "$p"; done))
t0=$(date +%s)
for p in "${slow[@]}"; do
  n=0
  while read -r pattern; do
    name=$(basename "$p")-$((++n))
    start "$name" "$p" bash -c 'shard "$@"' _ "$name" "$("$go" list "$p")" "$bins/$(basename "$p").test" "$pattern" "${test_flags[@]}"
  done < <(deal "$p")
done
# shellcheck disable=SC2086
start rest . "$go" test "${build_flags[@]}" "${test_flags[@]/#-test./-}" $rest
wait

status=0
: >"$log"
for j in "${jobs[@]}"; do
  cat "$logs/$j" | tee -a "$log"
  (( $(cat "$logs/$j.status") == 0 )) || status=1
done
echo "gotest: ${#jobs[@]} test processes (${jobs[*]}) finished in $(( $(date +%s) - t0 ))s, after building the tests"
if (( status != 0 )); then
  echo
  echo "==== test summary: go test failed; whole output in $log ===="
  # A failed test's messages follow its "--- FAIL" line, indented.
  awk '
    /^[ \t]*--- FAIL/ { print; keep = 40; next }
    keep > 0 && /^[ \t]/ { print; keep--; next }
    { keep = 0 }
    /^panic:|^\*\*\* Test killed|^signal: |^FAIL|^fatal error:|^testing: / { print }
  ' "$log"
fi
exit "$status"

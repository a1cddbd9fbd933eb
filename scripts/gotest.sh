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
# scripts/test-weights.tsv (whole seconds measured on 2 cores; an unknown test weighs 1; a
# test whose subtests have weights, the end-to-end tests with a cluster per backend, is dealt
# subtest by subtest); every shard runs at once with the other packages (go test -p), in its package's directory
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
# Test binaries carry no DWARF tables unless asked (-ldflags): stack traces come from the
# pclntab, and leaving DWARF out takes about a third off every link.
[[ " ${build_flags[*]} " == *" -ldflags"* ]] || build_flags=(-ldflags=-w "${build_flags[@]}")

# re NAME: NAME as a regular expression that matches it alone.
re() { sed 's/[][\\.*^$+?(){}|]/\\&/g' <<<"$1"; }

# units PKG: what there is to deal, one "WEIGHT<TAB>RUN<TAB>SKIP" line each (SKIP "-": none):
# a top-level test whole (RUN is its name), or, where the weights name its subtests
# (PKG.Test/sub: tests whose subtests are independent, each with its own cluster), each of
# those subtests, and the test once more without them, so that one added since still runs.
units() {
  local pkg=$1 t k sub subs
  while read -r t; do
    subs=
    for k in "${!weight[@]}"; do
      [[ $k == "$pkg.$t/"* ]] || continue
      sub=$(re "${k#"$pkg.$t/"}")
      printf '%s\t^%s$/^%s$\t-\n' "${weight[$k]}" "$t" "$sub"
      subs+="${subs:+|}$sub"
    done
    if [[ -n $subs ]]; then
      printf '1\t^%s$\t^%s$/^(%s)$\n' "$t" "$t" "$subs"
    else
      printf '%s\t%s\t-\n' "${weight[$pkg.$t]:-1}" "$t"
    fi
  done < <("$bins/$(basename "$pkg").test" -test.list '.' 2>/dev/null | grep -E '^(Test|Fuzz|Example)')
}

# deal PKG: prints one line per shard, the heaviest units first, each into the shard with
# the least weight so far: tab-separated RUN SKIP pairs, one run of the test binary each
# (the whole tests of a shard share one).
deal() {
  local pkg=$1 u w run skip i best shards line total=0
  local -a load=() whole=() parts=() all=()
  mapfile -t all < <(units "$pkg" | sort -t$'\t' -k1,1 -rn)
  for u in "${all[@]}"; do (( total += ${u%%$'\t'*} )); done
  shards=$(( (total + shard_seconds - 1) / shard_seconds ))
  (( shards >= 1 )) || shards=1
  for ((i = 0; i < shards; i++)); do load[i]=0; whole[i]=; parts[i]=; done
  for u in "${all[@]}"; do
    IFS=$'\t' read -r w run skip <<<"$u"
    best=0
    for ((i = 1; i < shards; i++)); do
      (( load[i] < load[best] )) && best=$i
    done
    (( load[best] += w ))
    if [[ $run == ^* ]]; then
      parts[best]+="${parts[best]:+$'\t'}$run"$'\t'"$skip"
    else
      whole[best]+="${whole[best]:+|}$run"
    fi
  done
  for ((i = 0; i < shards; i++)); do
    line=${parts[i]}
    [[ -n ${whole[i]} ]] && line="^(${whole[i]})\$"$'\t'"-${line:+$'\t'}$line"
    [[ -n $line ]] && echo "$line"
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

# shard NAME IMPORTPATH BINARY RUNS TESTFLAGS...: the package's test binary once per
# RUN SKIP pair of RUNS (as deal prints them), with a last line as go test prints it.
shard() {
  local name=$1 path=$2 bin=$3 t0 i rc=0
  local -a runs skip
  IFS=$'\t' read -ra runs <<<"$4"
  shift 4
  t0=$(date +%s)
  for ((i = 0; i < ${#runs[@]}; i += 2)); do
    skip=()
    [[ ${runs[i+1]} == - ]] || skip=(-test.skip "${runs[i+1]}")
    "$bin" -test.run "${runs[i]}" "${skip[@]}" "$@" || rc=1
  done
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
  while read -r runs; do
    name=$(basename "$p")-$((++n))
    start "$name" "$p" bash -c 'shard "$@"' _ "$name" "$("$go" list "$p")" "$bins/$(basename "$p").test" "$runs" "${test_flags[@]}"
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

#!/usr/bin/env bash
# Runs the tests of ./... with ARGS (go test flags only: -timeout, -count, -v, -run, and build
# flags such as -race or -tags), the slow packages' tests taken from a queue by several
# processes beside the rest, and keeps the whole output in build/test-output.log. When a run
# fails it ends with a summary of what failed: every "--- FAIL" line with the test's own
# messages, panics, timeouts and test binaries killed by a signal (the tests log a lot:
# mysqld, Vitess, so the cause may be far above the last lines a CI keeps).
#
#   scripts/gotest.sh -timeout 75m -count=1
#
# Why a queue: a package's tests run one after another in one process, and the slow ones
# (real MariaDB, clusters) mostly wait on processes starting and stopping, so one package
# leaves the CPUs idle; Vitess keeps engine and storage in globals, so tests of one package
# cannot run in parallel inside one process, but separate processes can. Each slow package
# is compiled once (go test -c). Its top-level tests, and the subtests the weights name (the
# end-to-end tests that start a cluster per backend), go into one queue, heaviest first by
# scripts/test-weights.tsv (seconds each took in a `make test` run on 2 cores; an unknown
# test weighs 1). TEST_WORKERS workers (default 10) each take the next test when they finish
# one and run the package's binary on it in the package's directory, as go test would,
# beside the other packages' go test. The helper programs the tests run (go/testutil/testbin)
# are built once, before, for every process. TEST_DRY_RUN=1 prints the queue; TEST_CPU=1
# (as root) counts each test's CPU-seconds with those of the processes it starts.
set -uo pipefail
cd "$(dirname "$0")/.."
for a in "$@"; do
  if [[ $a == ./* ]]; then
    echo "scripts/gotest.sh: $a: give go test flags only; it runs ./..." >&2
    exit 2
  fi
done
go=${GO:-go}
workers=${TEST_WORKERS:-10}
slow=(./go/vt/mysqlctl/fifobackupengine ./go/vt/mysqlctl/tableimport ./test/endtoend ./test/reliability)
log=build/test-output.log
logs=build/test-logs
bins=$PWD/build/test-bins
rm -rf "$logs" "$bins" && mkdir -p "$logs" "$bins"

declare -A weight=()
while IFS=$'\t' read -r name secs; do
  [[ -z $name || $name == \#* ]] || weight[$name]=$secs
done < scripts/test-weights.tsv

# The go test flags split: those the test binary takes (as -test.X) and the build flags.
# -run is the queue's (each entry has its own): kept apart.
test_flags=() build_flags=() user_run=
while (( $# > 0 )); do
  case $1 in
    -run) user_run=$2; shift 2; continue ;;
    -run=*) user_run=${1#-run=} ;;
    -timeout|-count|-parallel|-cpu)
      test_flags+=("-test.${1#-}=$2"); shift 2; continue ;;
    -timeout=*|-count=*|-parallel=*|-cpu=*|-v|-v=*|-short|-failfast)
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

# units PKG: the package's entries of the queue, "WEIGHT<TAB>PKG<TAB>NAME<TAB>RUN<TAB>SKIP"
# (SKIP "-": none): each top-level test, or, where the weights name its subtests
# (PKG.Test/sub: tests whose subtests are independent), each of those subtests and the test
# once more without them, so that one added since still runs. The tests that take a second
# or two share one entry. With -run, the package once.
units() {
  local pkg=$1 base t k sub subs quick= nquick=0 tests
  base=$(basename "$pkg")
  # A binary that cannot list its tests runs whole, so that its failure shows.
  if [[ -n $user_run ]] || ! tests=$("$bins/$base.test" -test.list '.' 2>/dev/null | grep -E '^(Test|Fuzz|Example)'); then
    printf '1\t%s\t%s\t%s\t-\n' "$pkg" "$base" "${user_run:-.}"
    return
  fi
  while read -r t; do
    subs=
    for k in "${!weight[@]}"; do
      [[ $k == "$pkg.$t/"* ]] || continue
      sub=${k#"$pkg.$t/"}
      printf '%s\t%s\t%s.%s.%s\t^%s$/^%s$\t-\n' "${weight[$k]}" "$pkg" "$base" "$t" "$sub" "$t" "$(re "$sub")"
      subs+="${subs:+|}$(re "$sub")"
    done
    if [[ -n $subs ]]; then
      printf '1\t%s\t%s.%s\t^%s$\t^%s$/^(%s)$\n' "$pkg" "$base" "$t" "$t" "$t" "$subs"
    elif (( ${weight[$pkg.$t]:-1} <= 2 )); then
      quick+="${quick:+|}$t"
      (( nquick += ${weight[$pkg.$t]:-1} ))
    else
      printf '%s\t%s\t%s.%s\t^%s$\t-\n' "${weight[$pkg.$t]}" "$pkg" "$base" "$t" "$t"
    fi
  done <<<"$tests"
  if [[ -n $quick ]]; then
    printf '%s\t%s\t%s.quick\t^(%s)$\t-\n' "$nquick" "$pkg" "$base" "$quick"
  fi
}

# With TEST_CPU=1 (as root) each test run is counted in a cgroup of its own, with every
# process it starts (mysqld, vttablet, ...): its line then ends with its CPU-seconds.
# cpu_group NAME: creates that cgroup and prints its directory (nothing without TEST_CPU).
cpu_group() {
  [[ -n ${TEST_CPU:-} ]] || return 0
  local d=/sys/fs/cgroup/cpuacct # v1; v2: its cpu.stat is there without any controller
  [[ -d $d ]] || d=/sys/fs/cgroup
  mkdir -p "$d/gotest-$$-$1" && echo "$d/gotest-$$-$1"
}

# cpu_seconds DIR: the CPU time counted in DIR, then the cgroup removed.
cpu_seconds() {
  local ns
  if [[ -f $1/cpuacct.usage ]]; then ns=$(<"$1/cpuacct.usage"); else ns=$(( $(awk '$1 == "usage_usec" {print $2}' "$1/cpu.stat") * 1000 )); fi
  rmdir "$1" 2>/dev/null
  echo " $(( ns / 1000000000 )) CPU-s"
}

# counted CG CMD...: CMD in place of this (sub)shell, counted in the cgroup CG, if any.
counted() {
  local cg=$1
  shift
  [[ -z $cg ]] || echo "$BASHPID" >"$cg/cgroup.procs"
  exec "$@"
}

# worker: runs the next entry of the queue until none is left, in the package's directory;
# its output in $logs/NAME, ending with a line as go test prints it, its status in
# $logs/NAME.status.
worker() {
  local n w pkg name run skip t0 rc cg
  local -a skip_flags
  while n=$(flock "$queue.lock" bash -c 'n=$(<"$1"); echo $((n + 1)) >"$1"; echo "$n"' _ "$queue.next") &&
    IFS=$'\t' read -r w pkg name run skip < <(sed -n "$((n + 1))p" "$queue"); do
    skip_flags=()
    [[ $skip == - ]] || skip_flags=(-test.skip "$skip")
    t0=$(date +%s)
    cg=$(cpu_group "$name")
    (cd "$pkg" && counted "$cg" "$bins/$(basename "$pkg").test" -test.run "$run" "${skip_flags[@]}" "${test_flags[@]}") >"$logs/$name" 2>&1
    rc=$?
    echo "$rc" >"$logs/$name.status"
    (( rc == 0 )) && echo -n "ok  " >>"$logs/$name" || echo -n "FAIL" >>"$logs/$name"
    echo "	${import_path[$pkg]} [$name]	$(( $(date +%s) - t0 ))s${cg:+$(cpu_seconds "$cg")}" >>"$logs/$name"
  done
}

built=0
"$go" build -o "$bins/" ./go/cmd/fifoverify ./go/cmd/vtfifo ./test/reliability/internal/backupproc >"$logs/build" 2>&1 &&
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

declare -A import_path=()
for p in "${slow[@]}"; do import_path[$p]=$("$go" list "$p"); done
rest=$("$go" list ./... | grep -vxF -f <(printf '%s\n' "${import_path[@]}"))
queue=$logs/queue
for p in "${slow[@]}"; do units "$p"; done | sort -t$'\t' -k1,1 -rn >"$queue"
echo 0 >"$queue.next"
mapfile -t jobs < <(cut -f3 "$queue")
jobs+=(rest)
if [[ -n ${TEST_DRY_RUN:-} ]]; then
  echo "gotest: $workers workers would take, in this order:"
  cut -f1,3- "$queue"
  echo "beside: go test ${build_flags[*]} ${test_flags[*]/#-test./-} ${user_run:+-run $user_run} $(wc -w <<<"$rest") other packages"
  exit 0
fi
t0=$(date +%s)
for ((i = 0; i < workers; i++)); do worker & done
# go vet ran before, in make check (a superset of the checks go test runs): not again here.
cg=$(cpu_group rest)
{
  # shellcheck disable=SC2086
  (counted "$cg" "$go" test -vet=off "${build_flags[@]}" "${test_flags[@]/#-test./-}" ${user_run:+-run "$user_run"} $rest) >"$logs/rest" 2>&1
  echo $? >"$logs/rest.status"
  [[ -z $cg ]] || echo "rest: go test of the other packages:$(cpu_seconds "$cg")" >>"$logs/rest"
} &
wait

status=0
: >"$log"
for j in "${jobs[@]}"; do
  cat "$logs/$j" | tee -a "$log"
  (( $(cat "$logs/$j.status") == 0 )) || status=1
done
echo "gotest: ${#jobs[@]} test runs ($workers workers beside go test of the other packages) finished in $(( $(date +%s) - t0 ))s, after building the tests"
if [[ -n ${TEST_CPU:-} ]]; then
  echo "gotest: CPU-seconds of each test run with the processes it started, most first:"
  sed -nE 's/^(ok  |FAIL)\t\S+ \[(\S+)\]\t\S+ ([0-9]+) CPU-s$/\3\t\2/p; s/^rest: (.*): ([0-9]+) CPU-s$/\2\t\1/p' "$log" | sort -rn
fi
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

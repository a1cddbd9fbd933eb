#!/usr/bin/env bash
# Runs the tests of ./... with ARGS (go test flags only: -timeout, -count, ...), the slow
# packages split into shards that run beside the rest, and keeps the whole output in
# build/test-output.log. When a run fails it ends with a summary of what failed: every
# "--- FAIL" line with the test's own messages, panics, timeouts and test binaries killed
# by a signal (the tests log a lot: mysqld, Vitess, so the cause may be far above the last
# lines a CI keeps).
#
#   scripts/gotest.sh -timeout 75m -count=1
#
# Why shards: a package's tests run one after another in one process, and the slow ones
# (real MariaDB, clusters) mostly wait on processes starting and stopping, so one package
# leaves the CPUs idle. Each slow package's top-level tests are dealt into go test processes
# (-run), one per TEST_SHARD_SECONDS of their weight, the heaviest first into the lightest
# shard, by the weights in scripts/test-weights.tsv (whole seconds measured on 2 cores; an
# unknown test weighs 1), and every shard runs at once with the other packages (go test -p).
# Vitess keeps engine and storage in globals, so tests of one package cannot share a process
# in parallel: separate processes can.
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
rm -rf "$logs" && mkdir -p "$logs"

declare -A weight=()
while IFS=$'\t' read -r name secs; do
  [[ -z $name || $name == \#* ]] || weight[$name]=$secs
done < scripts/test-weights.tsv

# deal PKG: prints one -run pattern per shard, the heaviest tests first, each into the
# shard with the least weight so far.
deal() {
  local pkg=$1 name i best shards total=0
  local -a load=() sets=() tests=()
  mapfile -t tests < <("$go" test -list '.' "$pkg" | grep -E '^(Test|Fuzz|Example)' |
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
run() { # run NAME ARGS...: one go test process in the background, its output in $logs/NAME
  local name=$1; shift
  jobs+=("$name")
  if [[ -n ${TEST_DRY_RUN:-} ]]; then # print the processes, run nothing
    echo "$name: go test $*" >"$logs/$name"; echo 0 >"$logs/$name.status"
    return
  fi
  ( "$go" test "$@" >"$logs/$name" 2>&1; echo $? >"$logs/$name.status" ) &
}

rest=$("$go" list ./... | grep -vxF -f <(for p in "${slow[@]}"; do "$go" list "$p"; done))
start=$(date +%s)
for p in "${slow[@]}"; do
  n=0
  while read -r pattern; do
    run "$(basename "$p")-$((++n))" "$@" -run "$pattern" "$p"
  done < <(deal "$p")
done
# shellcheck disable=SC2086
run rest "$@" $rest
wait

status=0
: >"$log"
for j in "${jobs[@]}"; do
  cat "$logs/$j" | tee -a "$log"
  (( $(cat "$logs/$j.status") == 0 )) || status=1
done
echo "gotest: ${#jobs[@]} go test processes (${jobs[*]}) finished in $(( $(date +%s) - start ))s"
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

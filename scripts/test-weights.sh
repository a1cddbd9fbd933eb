#!/usr/bin/env bash
# Writes scripts/test-weights.tsv, the weights by which scripts/gotest.sh orders its queue,
# from the `-v` output of a run of the slow packages' tests:
#   make test TEST_FLAGS=-v && scripts/test-weights.sh
# reads what that run left in build/test-logs; or from go test -v logs given as LOG:PACKAGE:
#   go test -v -count=1 ./test/endtoend > /tmp/e2e.log
#   scripts/test-weights.sh /tmp/e2e.log:./test/endtoend
# Tests of other packages already in the file are kept. A test whose subtests have lines of
# their own (package.Test/sub, added by hand for tests whose subtests are independent) is
# queued subtest by subtest: those lines are refreshed instead of the test's own.
set -euo pipefail
cd "$(dirname "$0")/.."
out=scripts/test-weights.tsv
if (( $# == 0 )); then
  # The packages the file already weighs: the ones gotest.sh queues.
  for p in $(sed -nE 's/^([^#][^\t]*)\.Test[^\t]*\t.*/\1/p' "$out" | sort -u); do
    logs=(build/test-logs/"$(basename "$p")".*)
    [[ -e ${logs[0]} ]] || { echo "test-weights.sh: no build/test-logs/$(basename "$p").*: run make test TEST_FLAGS=-v first" >&2; exit 2; }
    cat "${logs[@]}" >"build/test-logs/weights-$(basename "$p")"
    set -- "$@" "build/test-logs/weights-$(basename "$p"):$p"
  done
fi
declare -A w=()
while IFS=$'\t' read -r name secs; do
  [[ -z $name || $name == \#* ]] || w[$name]=$secs
done < "$out"
declare -A split=() # package.Test of the tests queued subtest by subtest
for k in "${!w[@]}"; do
  if [[ $k =~ ^(.*\.Test[^/]*)/ ]]; then split[${BASH_REMATCH[1]}]=1; fi
done
for k in "${!split[@]}"; do unset "w[$k]"; done
for pair in "$@"; do
  log=${pair%%:*} pkg=${pair#*:}
  while read -r name secs; do
    if [[ $name == */* ]]; then
      [[ -z ${split[$pkg.${name%%/*}]:-} ]] || w[$pkg.$name]=$secs
    elif [[ -z ${split[$pkg.$name]:-} ]]; then
      w[$pkg.$name]=$secs
    fi
  done < <(sed -nE 's/^(    )?--- (PASS|FAIL): (Test[^/ ]+(\/[^/ ]+)?) \(([0-9]+)\.[0-9]+s\)$/\3 \5/p' "$log")
done
{
  echo "# package.Test<TAB>whole seconds it took in a make test run (2 cores): scripts/gotest.sh"
  echo "# queues the slow packages' tests, heaviest first, by them. Refresh with scripts/test-weights.sh."
  for k in "${!w[@]}"; do if (( w[$k] > 0 )); then printf '%s\t%s\n' "$k" "${w[$k]}"; fi; done | sort
} > "$out.new"
mv "$out.new" "$out"

#!/usr/bin/env bash
# Writes scripts/test-weights.tsv from `go test -v` logs of the slow packages, given as
# LOG:PACKAGE pairs, e.g.
#   go test -v -count=1 ./test/endtoend > /tmp/e2e.log
#   scripts/test-weights.sh /tmp/e2e.log:./test/endtoend /tmp/engine.log:./go/vt/mysqlctl/fifobackupengine
# Tests of other packages already in the file are kept. A test whose subtests have lines of
# their own (package.Test/sub, added by hand for tests whose subtests are independent) is
# dealt subtest by subtest: their lines are refreshed from the logs too.
set -euo pipefail
cd "$(dirname "$0")/.."
out=scripts/test-weights.tsv
declare -A w=()
while IFS=$'\t' read -r name secs; do
  [[ -z $name || $name == \#* ]] || w[$name]=$secs
done < "$out"
declare -A split=() # package.Test of the tests dealt subtest by subtest
for k in "${!w[@]}"; do
  if [[ $k =~ ^(.*\.Test[^/]*)/ ]]; then split[${BASH_REMATCH[1]}]=1; fi
done
for pair in "$@"; do
  log=${pair%%:*} pkg=${pair#*:}
  while read -r name secs; do
    if [[ $name != */* || -n ${split[$pkg.${name%%/*}]:-} ]]; then w[$pkg.$name]=$secs; fi
  done < <(sed -nE 's/^(    )?--- (PASS|FAIL): (Test[^/ ]+(\/[^/ ]+)?) \(([0-9]+)\.[0-9]+s\)$/\3 \5/p' "$log")
done
{
  echo "# package.Test<TAB>whole seconds it took (go test -v, 2 cores): scripts/gotest.sh deals the"
  echo "# slow packages' tests into shards by them. Refresh with scripts/test-weights.sh."
  for k in "${!w[@]}"; do (( w[$k] > 0 )) && printf '%s\t%s\n' "$k" "${w[$k]}"; done | sort
} > "$out.new"
mv "$out.new" "$out"

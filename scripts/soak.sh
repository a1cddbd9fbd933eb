#!/usr/bin/env bash
# Runs the tests that depend on timing, injected faults or kills many times in a
# row while a CPU burner keeps one core busy, and prints how many runs passed.
#
#   scripts/soak.sh COUNT PACKAGE REGEXP [PACKAGE REGEXP ...]
#   e.g. scripts/soak.sh 30 ./go/vt/mysqlctl/splitstorage/ 'TestFaultsChosenRequests'
#
# BUSY=0 runs without the burner. Each run is a separate `go test -count=1`, so a
# failure names its run; the log of every failed run is kept in build/soak/.
set -uo pipefail
cd "$(dirname "$0")/.."
count=$1; shift
(( $# >= 2 && $# % 2 == 0 )) || { echo "usage: $0 COUNT PACKAGE REGEXP [PACKAGE REGEXP ...]" >&2; exit 2; }
mkdir -p build/soak
burner=
if [[ ${BUSY:-1} != 0 ]]; then
  yes >/dev/null &
  burner=$!
  trap 'kill $burner 2>/dev/null' EXIT
fi
export VTFIFO_E2E=${VTFIFO_E2E:-require}
status=0
while (( $# )); do
  pkg=$1 re=$2; shift 2
  go test -c -o build/soak/pkg.test "$pkg" >/dev/null || { echo "soak: $pkg does not build" >&2; exit 1; }
  pass=0 fail=0
  for ((i = 1; i <= count; i++)); do
    log=build/soak/$(basename "$pkg")-$i.log
    start=$(date +%s)
    if (cd "$pkg" && "$OLDPWD/build/soak/pkg.test" -test.count=1 -test.timeout=30m -test.run "$re") >"$log" 2>&1; then
      pass=$((pass + 1)); rm -f "$log"
    else
      fail=$((fail + 1)); status=1
      echo "soak: $pkg -run '$re' run $i FAILED ($(( $(date +%s) - start ))s), log in $log"
      grep -E '^\s*(--- FAIL|.*_test.go:[0-9]+:)' "$log" | head -8
    fi
  done
  echo "soak: $pkg -run '$re': $pass of $count passed"
done
exit $status

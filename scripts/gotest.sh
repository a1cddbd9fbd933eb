#!/usr/bin/env bash
# Runs `go test ARGS...`, keeps the whole output in build/test-output.log and, when
# the run fails, ends with a summary of what failed: every "--- FAIL" line with the
# test's own messages, panics, timeouts and test binaries killed by a signal. The
# tests log a lot (mysqld, Vitess), so without it the cause may be far above the
# last lines a CI keeps.
#
#   scripts/gotest.sh -timeout 75m -count=1 ./...
set -uo pipefail
cd "$(dirname "$0")/.."
log=build/test-output.log
mkdir -p build
"${GO:-go}" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if (( status != 0 )); then
  echo
  echo "==== test summary: go test exited with $status; whole output in $log ===="
  # A failed test's messages follow its "--- FAIL" line, indented.
  awk '
    /^[ \t]*--- FAIL/ { print; keep = 40; next }
    keep > 0 && /^[ \t]/ { print; keep--; next }
    { keep = 0 }
    /^panic:|^\*\*\* Test killed|^signal: |^FAIL|^fatal error:|^testing: / { print }
  ' "$log"
fi
exit "$status"

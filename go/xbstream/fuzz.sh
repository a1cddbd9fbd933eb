#!/usr/bin/env bash
# Runs each fuzz target of go/xbstream for a set time (default 60 s each).
# Usage: go/xbstream/fuzz.sh [seconds]   (FUZZTIME=90s also works)
# New crashers land in go/xbstream/testdata/fuzz/<Target>/ : commit them with the fix.
set -euo pipefail
t="${1:-${FUZZTIME:-60}}"
t="${t%s}s"
cd "$(dirname "$0")"
for target in FuzzReader FuzzExtract; do
	echo "== $target ($t)"
	go test . -run '^$' -fuzz "^${target}\$" -fuzztime "$t"
done

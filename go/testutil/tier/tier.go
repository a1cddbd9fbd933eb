// Package tier separates the test tiers. `make test-unit` runs `go test
// -short`: Go only, no MariaDB, no object-storage server, no Vitess binary.
// Every helper that starts or runs one of those calls Integration first, so a
// test that needs them is skipped there, by the one helper, and runs in
// `make test` (which CI calls, with VTFIFO_E2E=require: a missing
// prerequisite there is a failure, never a skip).
package tier

import "testing"

// Integration skips t under -short: it needs what the unit tier has not.
func Integration(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("integration test (needs %s): skipped by -short (make test-unit); make test runs it", needs)
	}
}

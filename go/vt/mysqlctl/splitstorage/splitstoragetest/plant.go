package splitstoragetest

import (
	"context"
	"testing"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
)

// Plant stores a complete backup dir/name in bs holding only a MANIFEST
// (manifest; "{}" names no engine): enough for listing, retention, records
// and choices by time.
func Plant(t testing.TB, bs backupstorage.BackupStorage, dir, name, manifest string) backupstorage.BackupHandle {
	t.Helper()
	bh, err := plant(context.Background(), bs, dir, name, manifest)
	if err != nil {
		t.Fatalf("planting %s/%s: %v", dir, name, err)
	}
	return bh
}

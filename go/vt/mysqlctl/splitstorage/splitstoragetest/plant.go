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
	ctx := context.Background()
	bh, err := bs.StartBackup(ctx, dir, name)
	if err != nil {
		t.Fatalf("planting %s/%s: %v", dir, name, err)
	}
	w, err := bh.AddFile(ctx, "MANIFEST", int64(len(manifest)))
	if err == nil {
		_, err = w.Write([]byte(manifest))
	}
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = bh.EndBackup(ctx)
	}
	if err != nil {
		t.Fatalf("planting %s/%s: %v", dir, name, err)
	}
	return bh
}

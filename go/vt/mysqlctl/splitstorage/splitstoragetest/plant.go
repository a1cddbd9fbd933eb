package splitstoragetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
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

// PlantForeignLease puts a read lease on dir/name as a reader on another
// host whose clock is off by off would: its term (since to since+term) by
// that clock, holder naming it, what saying what it reads for.
func PlantForeignLease(t testing.TB, be backend.Backend, dir, name, holder, what string, off, term time.Duration) {
	t.Helper()
	since := time.Now().UTC().Add(off).Truncate(time.Second)
	doc, err := json.Marshal(map[string]any{"holder": holder, "what": what, "since": since, "until": since.Add(term), "host": "another-host"})
	if err != nil {
		t.Fatal(err)
	}
	Put(t, be, dir+"/"+name+"/.reading-"+holder, doc)
}

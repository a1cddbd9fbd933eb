package splitstoragetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
)

// A simulated fleet for tests and benchmarks of what spans every shard
// (the fleet view, its exporter, retention): shards x backups planted
// through the storage's own writer, as backups of the fifo engine (a
// MANIFEST only), every other one with a passed test restore record, and
// per shard one incomplete backup; names and times one day apart, the
// newest now.

// FleetShard is the directory of shard i of a simulated fleet.
func FleetShard(i int) string { return fmt.Sprintf("fleet/s%04d", i) }

// PlantFleet plants shards x backups in bs, conc shards at a time.
func PlantFleet(t testing.TB, bs backupstorage.BackupStorage, shards, backups, conc int) {
	t.Helper()
	ctx := context.Background()
	sem := make(chan struct{}, max(conc, 1))
	errs := make(chan error, shards)
	now := time.Now().UTC()
	for i := range shards {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- plantShard(ctx, bs, FleetShard(i), backups, now)
		}()
	}
	for range shards {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func plantShard(ctx context.Context, bs backupstorage.BackupStorage, dir string, backups int, now time.Time) error {
	for j := range backups {
		at := now.Add(time.Duration(j-backups) * 24 * time.Hour)
		name := at.Format("2006-01-02.150405") + ".zone1-0000000100"
		doc, _ := json.Marshal(map[string]any{"BackupMethod": "fifo", "BackupName": name, "BackupTime": at.Format(time.RFC3339),
			"Lanes": []map[string]any{{"File": "lane-000.xbstream", "RawBytes": 1 << 30}}, "RawBytes": 1 << 30})
		bh, err := plant(ctx, bs, dir, name, string(doc))
		if err != nil {
			return err
		}
		if j%2 == 0 {
			rec, _ := json.Marshal(map[string]any{"version": 1, "backup": dir + "/" + name, "outcome": "passed", "started": at, "duration": "1m"})
			if sc, ok := bh.(interface {
				PutSidecar(context.Context, string, []byte) error
			}); ok {
				// "verification" is testrestore.RecordName.
				if err := sc.PutSidecar(ctx, "verification", rec); err != nil {
					return err
				}
			}
		}
	}
	// One incomplete backup: started, never ended.
	_, err := bs.StartBackup(ctx, dir, now.Format("2006-01-02.150405")+".zone1-0000000101")
	return err
}

// plant is Plant without a testing.TB: a complete backup holding a MANIFEST.
func plant(ctx context.Context, bs backupstorage.BackupStorage, dir, name, manifest string) (backupstorage.BackupHandle, error) {
	bh, err := bs.StartBackup(ctx, dir, name)
	if err != nil {
		return nil, err
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
	return bh, err
}

package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// Manifest is the part of a backup's MANIFEST the tests look at.
type Manifest struct {
	BackupName   string
	BackupMethod string // the engine that took the backup
	Position     string
	TabletAlias  string
	Raw          map[string]any `json:"-"`
}

// ReadManifests reads the MANIFEST of every backup in dir ("keyspace/shard") straight from
// a storage opened in this process (vtctld's GetBackups does not read manifests in v24).
func ReadManifests(ctx context.Context, bs backupstorage.BackupStorage, dir string) ([]Manifest, error) {
	handles, err := bs.ListBackups(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("list backups in %s: %w", dir, err)
	}
	var out []Manifest
	for _, h := range handles {
		_, data, err := fifobackupengine.ReadAnyManifest(ctx, h) // the engine's one bounded read, any engine's MANIFEST
		if err != nil {
			return nil, fmt.Errorf("read MANIFEST of %s: %w", h.Name(), err)
		}
		var m Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("parse MANIFEST of %s: %w", h.Name(), err)
		}
		_ = json.Unmarshal(data, &m.Raw)
		out = append(out, m)
	}
	return out, nil
}

package reliability

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestRemoveDuringBackup: a backup removed while it runs, by another
// storage instance as vtctld's RemoveBackup does, or by fifoverify
// --remove-incomplete, fails instead of completing over its missing parts;
// it is never listed, and the older backup stays the one a restore picks.
// On local disk and S3.
func TestRemoveDuringBackup(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, kind := range splitstoragetest.LocalAndRemote() {
		t.Run(kind, func(t *testing.T) {
			srv := splitstoragetest.Start(t, kind)
			srv.Setenv(t)
			cfg := srv.Config
			cfg.PartSize = 1 << 20
			st := f.useStorage(t, cfg)
			require.NoError(t, f.backup(ctx, nil))
			older := f.list(t)
			require.Len(t, older, 1)

			for _, remover := range []string{"RemoveBackup", "fifoverify --remove-incomplete"} {
				var removed atomic.Bool
				backupstorage.BackupStorageMap[storageName] = &addFileHook{BackupStorage: st, fn: func(dir, name string) {
					// Called as the backup opens its last lane: it has
					// written its start marker and is writing parts.
					switch remover {
					case "RemoveBackup":
						other, err := splitstorage.New(cfg)
						require.NoError(t, err)
						defer other.Close()
						require.NoError(t, other.RemoveBackup(ctx, dir, name))
					default:
						code, out := runVerify(t, cfg, nil, "--remove-incomplete", "--incomplete-min-age=0s")
						require.Equal(t, 0, code, out)
						require.Contains(t, out, name)
					}
					removed.Store(true)
				}}
				err := f.backup(ctx, nil)
				backupstorage.BackupStorageMap[storageName] = st
				require.True(t, removed.Load(), "%s: the removal ran during the backup", remover)
				require.Error(t, err, "%s: a backup removed while it ran must fail", remover)
				assert.Contains(t, err.Error(), "was the backup removed while it ran?", remover)
				assert.Equal(t, older, f.list(t), "%s: only the older backup is listed", remover)
				inc, err := f.st.ListIncomplete(ctx, backupDir)
				require.NoError(t, err)
				assert.Empty(t, inc, "%s: the failed backup's leftovers were cleaned up", remover)
			}
			_, err := f.restore(ctx, nil)
			require.NoError(t, err)
			f.requireSourceData(t, "restore of the older backup")
		})
	}
}

// addFileHook is a backup storage that calls fn(dir, name) once per backup,
// when the backup adds its third lane file.
type addFileHook struct {
	backupstorage.BackupStorage
	fn func(dir, name string)
}

func (h *addFileHook) WithParams(p backupstorage.Params) backupstorage.BackupStorage {
	return &addFileHook{BackupStorage: h.BackupStorage.WithParams(p), fn: h.fn}
}

func (h *addFileHook) StartBackup(ctx context.Context, dir, name string) (backupstorage.BackupHandle, error) {
	bh, err := h.BackupStorage.StartBackup(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	return &addFileHandle{BackupHandle: bh, fn: h.fn}, nil
}

type addFileHandle struct {
	backupstorage.BackupHandle
	fn    func(dir, name string)
	lanes atomic.Int32
}

func (b *addFileHandle) AddFile(ctx context.Context, filename string, filesize int64) (io.WriteCloser, error) {
	if strings.HasPrefix(filename, "lane-") && b.lanes.Add(1) == 3 {
		b.fn(b.Directory(), b.Name())
	}
	return b.BackupHandle.AddFile(ctx, filename, filesize)
}

package endtoend

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// backupNameLayout is the time at the start of a Vitess backup's name
// (mysqlctl.BackupTimestampFormat), followed by the tablet's alias.
const backupNameLayout = "2006-01-02.150405"

// nameOneSecondLater is a backup name like name, one second later.
func nameOneSecondLater(name string) (string, error) {
	at, err := time.Parse(backupNameLayout, name[:len(backupNameLayout)])
	if err != nil {
		return "", fmt.Errorf("backup name %q: %w", name, err)
	}
	return at.Add(time.Second).Format(backupNameLayout) + name[len(backupNameLayout):], nil
}

// copyByHand copies backup dir/from of the split storage cfg describes to
// dir/to, object by object, as an operator's cp -r or aws s3 cp would: the
// bytes as they are; on local disk owned by the user the cluster runs as,
// as that user's cp would leave them.
func copyByHand(ctx context.Context, c *cluster.Cluster, cfg splitstorage.Config, dir, from, to string) error {
	be, err := splitstorage.OpenBackend(ctx, cfg)
	if err != nil {
		return err
	}
	defer be.Close()
	objs, err := be.List(ctx, dir+"/"+from+"/", false)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return fmt.Errorf("copying %s/%s by hand: no object", dir, from)
	}
	for _, o := range objs {
		key := dir + "/" + to + strings.TrimPrefix(o.Key, dir+"/"+from)
		if err := copyObject(ctx, c, cfg, be, o.Key, key); err != nil {
			return fmt.Errorf("copying %s by hand to %s: %w", o.Key, key, err)
		}
	}
	return nil
}

func copyObject(ctx context.Context, c *cluster.Cluster, cfg splitstorage.Config, be backend.Backend, from, to string) error {
	r, err := be.Get(ctx, from, 0, -1)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return err
	}
	if cfg.Backend != splitstorage.BackendFile {
		return be.Put(ctx, to, bytes.NewReader(b), int64(len(b)), backend.PutOptions{CRC32C: crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))})
	}
	path := filepath.Join(cfg.File.Root, filepath.FromSlash(to))
	var parents []string
	for d := filepath.Dir(path); d != cfg.File.Root && d != "/"; d = filepath.Dir(d) {
		parents = append(parents, d)
	}
	for i := len(parents) - 1; i >= 0; i-- {
		if err := c.MkdirOwned(parents[i]); err != nil {
			return err
		}
	}
	return c.WriteFileOwned(path, b, 0o640)
}

// copyNewestByHand copies the newest of the shard's backups (names, from
// GetBackups) by hand under a name one second later, on the split storage,
// and checks that Vitess does not list the copy: it is another backup's,
// which no restore takes. It returns the copy's name ("" on another
// storage).
func copyNewestByHand(ctx context.Context, t *testing.T, c *cluster.Cluster, sb storageBackend, names []string) string {
	t.Helper()
	if sb.config == nil {
		return ""
	}
	newest := names[len(names)-1]
	copied, err := nameOneSecondLater(newest)
	must(t, err)
	must(t, copyByHand(ctx, c, sb.config(), c.Keyspace+"/"+c.Shard, newest, copied))
	listed, err := c.GetBackups(ctx)
	must(t, err)
	if !slices.Equal(listed, names) {
		t.Fatalf("GetBackups after %s was copied by hand to %s: %v, want %v (a copy is no backup of the shard)", newest, copied, listed, names)
	}
	return copied
}

// checkCopyKept checks that the backup copied by hand is still there,
// as vtfifo's commands list it.
func checkCopyKept(ctx context.Context, t *testing.T, c *cluster.Cluster, sb storageBackend, copied string) {
	t.Helper()
	if copied == "" {
		return
	}
	st, err := splitstorage.New(sb.config())
	must(t, err)
	bhs, err := st.ListingCopies().ListBackups(ctx, c.Keyspace+"/"+c.Shard)
	must(t, err)
	if !slices.ContainsFunc(bhs, func(bh backupstorage.BackupHandle) bool { return bh.Name() == copied }) {
		t.Fatalf("the backup copied by hand (%s) was removed: only what the storage wrote is removed", copied)
	}
}

package splitstorage_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestCopyAndRepairNeedASplitPeer: a copy's destination and a repair's
// copy are split storages; another storage is a usage error naming its
// role and its type, before anything is read or written.
func TestCopyAndRepairNeedASplitPeer(t *testing.T) {
	ctx := context.Background()
	bs, err := splitstorage.New(splitstoragetest.Local(t).Config)
	require.NoError(t, err)
	defer bs.Close()
	other := &filebackupstorage.FileBackupStorage{}

	_, err = bs.CopyBackup(ctx, other, "ks/0", "b", splitstorage.CopyOptions{})
	assert.True(t, flagvalue.IsContradiction(err), "%v", err)
	assert.EqualError(t, err, "a copy's destination must be a split storage, not *filebackupstorage.FileBackupStorage")

	_, err = bs.RepairBackup(ctx, other, "ks/0", "b")
	assert.True(t, flagvalue.IsContradiction(err), "%v", err)
	assert.EqualError(t, err, "a repair's copy must be a split storage, not *filebackupstorage.FileBackupStorage")
}

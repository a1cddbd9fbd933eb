package tableimport

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// TestAnImportStoppedByAnotherSessionIsNoProof: an import that another
// session's lock holds up past the server's lock_wait_timeout (FLUSH TABLES
// WITH READ LOCK, as a backup tool takes it) fails with the server's own
// error, which says nothing of the files imported: this host's failure,
// naming the lock (the CLI's exit 3, never 1). Nothing of the import is
// left, and once the lock is gone the same import succeeds.
func TestAnImportStoppedByAnotherSessionIsNoProof(t *testing.T) {
	srv := mariadbtest.Start(t)
	srv.Exec(t, "CREATE DATABASE d")
	srv.Exec(t, "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(32)) ENGINE=InnoDB")
	srv.Exec(t, "INSERT INTO d.t SELECT seq, MD5(seq) FROM d.seq_1_to_500")
	src := restoredTable(t, srv, "t")
	ctx := context.Background()
	to := Target{"d", "t_r"}

	srv.Exec(t, "SET GLOBAL lock_wait_timeout = 1")
	lock, err := srv.DB().Conn(ctx)
	require.NoError(t, err)
	_, err = lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK")
	require.NoError(t, err)
	_, err = Import(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	require.ErrorContains(t, err, "Lock wait timeout exceeded")
	assert.True(t, unreadable.Is(err), "%v", err)
	assert.Equal(t, "another session held a lock past the server's lock_wait_timeout", unreadable.HostFault(err))

	_, err = lock.ExecContext(ctx, "UNLOCK TABLES")
	require.NoError(t, err)
	require.NoError(t, lock.Close())
	srv.Exec(t, "SET GLOBAL lock_wait_timeout = DEFAULT")
	require.NoError(t, Absent(ctx, srv.DB(), to))
	left, err := Leftovers(ctx, srv.DB(), to)
	require.NoError(t, err)
	assert.Empty(t, left)
	res, err := Import(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	require.NoError(t, err)
	assert.Equal(t, int64(500), res.Rows)
}

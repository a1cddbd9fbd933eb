package testrestore

import (
	"context"
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// TestAServerThatStopsAcceptingIsNoVerdict: a throwaway server whose socket
// takes a connection and never sends its handshake (mariadbd out of open
// files: "Error in accept: Too many open files") fails the connection
// within connectTimeout, as this host's failure with the error log's
// words, instead of leaving the run waiting for ever.
func TestAServerThatStopsAcceptingIsNoVerdict(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mysqld.err"), []byte("[ERROR] Error in accept: Too many open files\n"), 0o600))
	l, err := net.Listen("unix", filepath.Join(dir, "mysqld.sock"))
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	defer func(d time.Duration) { connectTimeout = d }(connectTimeout)
	connectTimeout = 300 * time.Millisecond

	c := mysql.NewConfig()
	c.User, c.Net, c.Addr = "root", "unix", filepath.Join(dir, "mysqld.sock")
	connector, err := mysql.NewConnector(c)
	require.NoError(t, err)
	db := sql.OpenDB(boundedConnector{connector, &server{dir: dir}})
	defer db.Close()
	done := make(chan error, 1)
	go func() { done <- db.PingContext(context.Background()) }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the connection waited for a handshake that never comes")
	}
	require.Error(t, err)
	assert.ErrorContains(t, err, "mysqld did not accept a connection within 300ms")
	assert.ErrorContains(t, err, "its error log ends:\n[ERROR] Error in accept: Too many open files")
	assert.True(t, unreadable.Is(err), "%v", err)
	assert.Equal(t, "too many open files", unreadable.HostFault(err))

	// A cancelled run is the run's, not the server's.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = db.PingContext(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, unreadable.HostFault(err))
}

package testrestore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/testutil/tier"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// TestMissingPlugins: on a real MariaDB, the storage engines a MANIFEST
// records that the server has not loaded are to be loaded (BLACKHOLE, a
// library of Debian's package), other kinds are not (an audit plugin), and
// a library the host lacks makes the run one that could not be made here
// (unreadable, never a verdict), naming the plugin and the directory.
func TestMissingPlugins(t *testing.T) {
	tier.Integration(t, "MariaDB")
	srv := mariadbtest.Start(t)
	ctx := context.Background()
	engine := fifobackupengine.ServerPlugin{Name: "BLACKHOLE", Library: "ha_blackhole.so", Type: "STORAGE ENGINE"}
	audit := fifobackupengine.ServerPlugin{Name: "SERVER_AUDIT", Library: "server_audit.so", Type: "AUDIT"}

	load, err := missingPlugins(ctx, srv.DB(), []fifobackupengine.ServerPlugin{engine, audit, engine})
	require.NoError(t, err)
	assert.Equal(t, []plugin{{name: "BLACKHOLE", library: "ha_blackhole.so"}}, load, "the engine once, the audit plugin not at all")

	absent := fifobackupengine.ServerPlugin{Name: "NOPE", Library: "ha_nope.so", Type: "STORAGE ENGINE"}
	_, err = missingPlugins(ctx, srv.DB(), []fifobackupengine.ServerPlugin{engine, absent})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errCouldNotRun) && unreadable.Is(err), "could not run here, never damage: %v", err)
	assert.Contains(t, err.Error(), "NOPE (ha_nope.so)")
	assert.Contains(t, err.Error(), "does not have in its plugin directory")
	assert.NotContains(t, err.Error(), "BLACKHOLE", "only what is lacking is named")
}

// TestAServerWhosePluginsFailIsStopped: a throwaway server whose backup
// needs a plugin library this host lacks is stopped before the error (no
// verdict) leaves: no mariadbd is left running on the scratch directory
// (it was, until the process that started it exited).
func TestAServerWhosePluginsFailIsStopped(t *testing.T) {
	tier.Integration(t, "MariaDB")
	src := mariadbtest.Start(t)
	src.Stop()
	mysqld, err := mysqlinstall.FindMysqld("")
	require.NoError(t, err)
	s, args := scratchServer(t, mysqld, true, src.DataDir)
	absent := fifobackupengine.ServerPlugin{Name: "NOPE", Library: "ha_nope.so", Type: "STORAGE ENGINE"}
	db, _, err := s.startLoaded(context.Background(), args, []fifobackupengine.ServerPlugin{absent}, time.Minute)
	require.Error(t, err)
	assert.Nil(t, db)
	assert.True(t, errors.Is(err, errCouldNotRun) && unreadable.Is(err), "could not run here, never damage: %v", err)
	assert.Nil(t, s.cmd, "the server is stopped")
	assertNoServerOn(t, s.dir)
}

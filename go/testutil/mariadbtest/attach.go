package mariadbtest

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vtfifo/vtfifo/go/testutil/tier"
)

// Attach wraps a server started elsewhere (for example a Vitess tablet's
// mysqld) so LoadSampleData and the query helpers work on it. Its owner
// starts and stops it: do not call Restart on an attached server.
func Attach(t testing.TB, socket, dataDir, user, password string) *Server {
	t.Helper()
	tier.Integration(t, "a running MariaDB")
	s := &Server{Socket: socket, DataDir: dataDir, User: user, Password: password, t: t}
	db, err := sql.Open("mysql", s.DSN(""))
	require.NoError(t, err)
	require.NoError(t, db.Ping(), "mariadbtest: cannot connect to %s as %s", socket, user)
	s.db = db
	t.Cleanup(func() { db.Close() })
	return s
}

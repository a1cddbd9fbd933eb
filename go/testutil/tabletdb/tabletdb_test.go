package tabletdb

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStartServesQueries(t *testing.T) {
	tb := Start(t)
	db := tb.DB(t, "")
	var version string
	require.NoError(t, db.QueryRow("SELECT VERSION()").Scan(&version))
	require.Contains(t, version, "MariaDB")
	_, err := db.Exec("CREATE DATABASE vt_test; CREATE TABLE vt_test.t (id INT PRIMARY KEY); INSERT INTO vt_test.t VALUES (1),(2)")
	require.NoError(t, err)
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM vt_test.t").Scan(&n))
	require.Equal(t, 2, n)
}

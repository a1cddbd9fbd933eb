package mariadbtest

import (
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Checksums returns "checksum=N rows=M" (CHECKSUM TABLE and COUNT(*)) for
// every table of database except the skipped ones, to compare a restored
// server with its source.
func Checksums(t testing.TB, db *sql.DB, database string, skip ...string) map[string]string {
	t.Helper()
	rows, err := db.Query("SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name", database)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		if !slices.Contains(skip, name) {
			tables = append(tables, name)
		}
	}
	require.NoError(t, rows.Err())
	rows.Close()
	out := map[string]string{}
	for _, table := range tables {
		var name string
		var sum sql.NullInt64
		require.NoError(t, db.QueryRow(fmt.Sprintf("CHECKSUM TABLE `%s`.`%s`", database, table)).Scan(&name, &sum))
		var count int64
		require.NoError(t, db.QueryRow(fmt.Sprintf("SELECT COUNT(*) FROM `%s`.`%s`", database, table)).Scan(&count))
		out[table] = fmt.Sprintf("checksum=%d rows=%d", sum.Int64, count)
	}
	return out
}

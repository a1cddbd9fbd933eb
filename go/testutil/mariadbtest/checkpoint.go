package mariadbtest

import (
	"database/sql"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Checkpoint has InnoDB flush its dirty pages and waits until its last
// checkpoint has passed the LSN it had when asked: a backup taken then has
// next to no redo to apply at its prepare.
func Checkpoint(t testing.TB, db *sql.DB) {
	t.Helper()
	_, err := db.Exec("SET GLOBAL innodb_max_dirty_pages_pct = 0")
	require.NoError(t, err)
	defer db.Exec("SET GLOBAL innodb_max_dirty_pages_pct = 90")
	read := func(re *regexp.Regexp) int64 {
		var typ, name, status string
		require.NoError(t, db.QueryRow("SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status))
		m := re.FindStringSubmatch(status)
		require.NotNil(t, m, "no %v in SHOW ENGINE INNODB STATUS", re)
		n, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		return n
	}
	lsn := regexp.MustCompile(`Log sequence number\s+(\d+)`)
	ckpt := regexp.MustCompile(`Last checkpoint at\s+(\d+)`)
	target := read(lsn)
	// Past the LSN of the ask; or, on an idle server, as near the current
	// LSN as it gets (a checkpoint's own record is after it).
	require.Eventually(t, func() bool { c := read(ckpt); return c >= target || read(lsn)-c < 4096 },
		time.Minute, 200*time.Millisecond, "InnoDB did not checkpoint past %d", target)
}

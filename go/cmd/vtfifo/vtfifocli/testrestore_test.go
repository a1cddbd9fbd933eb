package vtfifocli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestAPassWithTablesOfAnOlderFormatSaysSo: the OK line of a test restore
// that passed with tables the server reads only after a rebuild names them
// and says they are no damage.
func TestAPassWithTablesOfAnOlderFormatSaysSo(t *testing.T) {
	var out bytes.Buffer
	TestRestoreResult{Record: testrestore.Record{Backup: "ks/0/b", Outcome: testrestore.Passed, Duration: "9s", Tool: "mariabackup", Server: "10.11",
		Tables: 5, Rows: 3, NeedsRebuild: []string{"`k`.`old`: Table rebuild required. Please do \"ALTER TABLE `old` FORCE\" or dump/reload to fix it!"}},
		Stored: "stored beside the backup"}.print(&out)
	assert.Contains(t, out.String(), "OK: test restore of ks/0/b passed in 9s: ")
	assert.Contains(t, out.String(), "CHECK TABLE on 5 tables (1 of them in an older server's format, kept as the source had it, which this server "+
		"reads only after a rebuild or upgrade: not damage, neither checked nor counted: `k`.`old`: Table rebuild required. Please do \"ALTER TABLE "+
		"`old` FORCE\" or dump/reload to fix it!), 3 rows; record stored beside the backup")
}

package testrestore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTablesOnDisk: the tables a restored directory holds, as the server
// must then show them: MariaDB by .frm (views left out), MySQL 8 by .ibd
// (one per partition, FTS auxiliary tables left out), names decoded.
func TestTablesOnDisk(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"shop/orders.frm": "\xfe\x01", "shop/v.frm": "TYPE=VIEW\n", "shop/p#P#p0.ibd": "", "shop/p.frm": "x",
		"my@002ddb/t@0024x.frm": "x", "shop/#sql-1.frm": "x", "performance_schema/x.frm": "x",
		"shop/orders.ibd": "", "shop/q#p#p0.ibd": "", "shop/q#p#p1.ibd": "", "shop/fts_0000000000000453_being_deleted.ibd": "",
		"mysql.ibd": "",
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o640))
	}
	maria, err := tablesOnDisk(dir, true)
	require.NoError(t, err)
	assert.ElementsMatch(t, [][2]string{{"my-db.t$x", "my@002ddb/t@0024x.frm"}, {"shop.orders", "shop/orders.frm"}, {"shop.p", "shop/p.frm"}}, maria)
	mysql, err := tablesOnDisk(dir, false)
	require.NoError(t, err)
	assert.ElementsMatch(t, [][2]string{{"shop.orders", "shop/orders.ibd"}, {"shop.p", "shop/p#P#p0.ibd"}, {"shop.q", "shop/q#p#p0.ibd"}}, mysql)
}

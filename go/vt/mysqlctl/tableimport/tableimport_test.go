package tableimport

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTablespacesAndNames(t *testing.T) {
	sp, err := tablespaces(Source{DB: "d", Table: "t", Files: []string{"d/t.cfg", "d/t.frm", "d/t.ibd"}})
	require.NoError(t, err)
	assert.Equal(t, []tablespace{{base: "d/t"}}, sp)

	sp, err = tablespaces(Source{DB: "d", Table: "p", Files: []string{"d/p#P#a.cfg", "d/p#P#a.ibd", "d/p#p#b.ibd", "d/p.frm"}})
	require.NoError(t, err)
	assert.Equal(t, []tablespace{{base: "d/p#P#a", partition: "a"}, {base: "d/p#p#b", partition: "b"}}, sp)

	_, err = tablespaces(Source{DB: "d", Table: "s", Files: []string{"d/s#P#a#SP#x.ibd"}})
	assert.ErrorContains(t, err, "subpartitioned")
	// Not InnoDB: no tablespace, the files are the table (importFiles).
	sp, err = tablespaces(Source{DB: "d", Table: "a", Files: []string{"d/a.frm", "d/a.MAD", "d/a.MAI"}})
	require.NoError(t, err)
	assert.Nil(t, sp)

	for name, file := range map[string]string{"orders_restored_2": "orders_restored_2", "a-b": "a@002db", "tâble_é": "t@0ible_@0p", "a`b": "a@0060b"} {
		got, err := fileName(name)
		require.NoError(t, err)
		assert.Equal(t, file, got)
	}
	for _, bad := range []string{"", "t😀"} {
		_, err := fileName(bad)
		assert.Error(t, err, bad)
	}

	create, err := renamed(Source{DB: "d", Table: "t", Create: "CREATE TABLE `t` (\n  `id` int\n) ENGINE=InnoDB"}, Target{"d2", "t2"})
	require.NoError(t, err)
	assert.Equal(t, "CREATE TABLE `d2`.`t2` (\n  `id` int\n) ENGINE=InnoDB", create)
	_, err = renamed(Source{DB: "d", Table: "t", Create: "CREATE TABLE `u` (id int)"}, Target{"d", "t"})
	assert.ErrorContains(t, err, "does not start with")
}

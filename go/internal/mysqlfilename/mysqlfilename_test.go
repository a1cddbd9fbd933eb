package mysqlfilename

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// TestNamesAndTheirFiles: names in several scripts, punctuation and old
// (#mysql50#) names, both ways, as MariaDB 10.11 writes them.
func TestNamesAndTheirFiles(t *testing.T) {
	for name, file := range map[string]string{
		"t_1":          "t_1",
		"données":      "donn@0pes",
		"tâble_é_3":    "t@0ible_@0p_3",
		"t-x€ü":        "t@002dx@20ac@1o",
		"a.b c":        "a@002eb@0020c",
		"Δοκιμή":       "@6O@6z@6u@6t@6w@6i",
		"表":            "@8868",
		"#mysql50#a-b": "a-b",
	} {
		got, err := Encode(name)
		require.NoError(t, err, name)
		assert.Equal(t, file, got, "Encode(%q)", name)
		assert.Equal(t, name, Decode(file), "Decode(%q)", file)
	}
	_, err := Encode("t😀")
	assert.ErrorContains(t, err, `name "t😀": '😀' has no file name`)
	assert.Equal(t, "#mysql50#t@zz", Decode("t@zz"), "not an encoding: an old name")
	assert.Equal(t, "#mysql50#t@00E9", Decode("t@00E9"), "upper-case hex is not the servers' encoding")
}

// TestEncodingAsTheServerDoes compares Encode and Decode with a real
// server's own conversion for every code point a name may hold.
func TestEncodingAsTheServerDoes(t *testing.T) {
	srv := mariadbtest.Start(t)
	db := srv.DB()
	_, err := db.Exec("SET SESSION max_recursive_iterations = 100000")
	require.NoError(t, err)
	rows, err := db.Query(`WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM seq WHERE n < 65535)
		SELECT n, CAST(CONVERT(CHAR(n USING utf32) USING filename) AS BINARY) FROM seq WHERE n NOT BETWEEN 55296 AND 57343`)
	require.NoError(t, err)
	defer rows.Close()
	var checked, wrong int
	for rows.Next() {
		var n int
		var file string
		require.NoError(t, rows.Scan(&n, &file))
		got, err := Encode(string(rune(n)))
		require.NoError(t, err)
		if got != file || Decode(file) != string(rune(n)) {
			if wrong++; wrong < 10 {
				t.Errorf("U+%04X: server %q, Encode %q, Decode %q", n, file, got, Decode(file))
			}
		}
		checked++
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, 65535-2048, checked)
	assert.Zero(t, wrong)
	assert.True(t, strings.HasPrefix(srv.Query(t, "SELECT CONVERT(CONVERT(CAST('t@0ible_@0p_3' AS BINARY) USING filename) USING utf8mb4)"), "tâble_é_3"))
}

package mariadbtest

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Options describes the sample data LoadSampleData creates.
type Options struct {
	// Database is the schema to create (default "sample").
	Database string
	// Tables is the number of small InnoDB tables (default 200).
	Tables int
	// RowsPerTable is the number of rows in each small table (default 20).
	RowsPerTable int
	// BigTableBytes is the minimum on-disk size of the big InnoDB table
	// (sample.big, file big.ibd); 0 means no big table.
	BigTableBytes int64
	// SkipOtherEngines leaves out the Aria, MyISAM and partitioned tables.
	SkipOtherEngines bool
}

func (o *Options) defaults() {
	if o.Database == "" {
		o.Database = "sample"
	}
	if o.Tables == 0 {
		o.Tables = 200
	}
	if o.RowsPerTable == 0 {
		o.RowsPerTable = 20
	}
}

// LoadSampleData creates deterministic data: o.Tables small InnoDB tables
// (t0000..), one big InnoDB table "big" whose .ibd is at least o.BigTableBytes,
// plus an Aria table, a MyISAM table and a partitioned InnoDB table. The big
// table is filled with INSERT ... SELECT from the sequence engine in batches,
// which takes a few seconds per 100 MB on 2 cores.
func LoadSampleData(t testing.TB, srv *Server, o Options) {
	t.Helper()
	o.defaults()
	start := time.Now()
	_, err := srv.DB().Exec(fmt.Sprintf("CREATE DATABASE IF NOT EXISTS `%s`", o.Database))
	require.NoError(t, err)
	// The sequence engine's seq_1_to_N tables need a current database.
	db, err := sql.Open("mysql", srv.DSN(o.Database))
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string) {
		t.Helper()
		_, err := db.Exec(q)
		require.NoError(t, err, "query: %.200s", q)
	}

	// Small tables: batched into multi-statements to save round trips.
	var b strings.Builder
	for i := 0; i < o.Tables; i++ {
		fmt.Fprintf(&b, "CREATE TABLE `%s`.t%04d (id INT PRIMARY KEY, v VARCHAR(100) NOT NULL, n BIGINT NOT NULL) ENGINE=InnoDB;", o.Database, i)
		fmt.Fprintf(&b, "INSERT INTO `%s`.t%04d SELECT seq, CONCAT('row-', seq, '-of-t%04d-', MD5(seq * %d)), seq * %d FROM seq_1_to_%d;",
			o.Database, i, i, i+1, i+7, o.RowsPerTable)
		if i%25 == 24 || i == o.Tables-1 {
			exec(b.String())
			b.Reset()
		}
	}

	if !o.SkipOtherEngines {
		exec(fmt.Sprintf("CREATE TABLE `%[1]s`.aria_t (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=Aria;"+
			"INSERT INTO `%[1]s`.aria_t SELECT seq, REPEAT(MD5(seq), 4) FROM seq_1_to_5000;"+
			"CREATE TABLE `%[1]s`.myisam_t (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=MyISAM;"+
			"INSERT INTO `%[1]s`.myisam_t SELECT seq, REPEAT(SHA1(seq), 3) FROM seq_1_to_5000;"+
			"CREATE TABLE `%[1]s`.part_t (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB PARTITION BY HASH(id) PARTITIONS 4;"+
			"INSERT INTO `%[1]s`.part_t SELECT seq, REPEAT(MD5(seq + 1), 5) FROM seq_1_to_20000;", o.Database))
	}

	if o.BigTableBytes > 0 {
		// ~3.9 KB rows stay in-page (4 per 16 KiB page), so the .ibd grows by
		// roughly 4.2 KB per row; content is a function of id (deterministic,
		// not trivially compressible across rows).
		exec(fmt.Sprintf("CREATE TABLE `%s`.big (id BIGINT PRIMARY KEY, pad VARBINARY(4000) NOT NULL) ENGINE=InnoDB", o.Database))
		ibd := filepath.Join(srv.DataDir, o.Database, "big.ibd")
		const batch = 8192
		next := int64(1)
		for {
			exec(fmt.Sprintf("INSERT INTO `%s`.big SELECT seq, REPEAT(UNHEX(SHA2(seq, 512)), 60) FROM seq_%d_to_%d",
				o.Database, next, next+batch-1))
			next += batch
			fi, err := os.Stat(ibd)
			require.NoError(t, err)
			if fi.Size() >= o.BigTableBytes {
				break
			}
		}
	}
	t.Logf("mariadbtest: loaded %d tables (big table %d MiB) in %v", o.Tables, o.BigTableBytes>>20, time.Since(start).Round(time.Millisecond))
}

package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// DBName is the database Vitess uses for the keyspace.
func (c *Cluster) DBName() string { return "vt_" + c.Keyspace }

// SampleTables are the tables LoadSampleData creates.
var SampleTables = []string{"orders", "customers", "events_aria", "notes_myisam", "metrics_part"}

// LoadSampleData creates a few tables in the keyspace's database with about rows rows in the
// biggest one (InnoDB, Aria, MyISAM and a partitioned InnoDB table), using MariaDB's
// SEQUENCE engine so no data travels over the connection.
func (t *Tablet) LoadSampleData(ctx context.Context, rows int) error {
	db := t.c.DBName()
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS " + db,
		"CREATE TABLE IF NOT EXISTS " + db + ".orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(12,2), note VARCHAR(255), payload " +
			"BLOB, KEY (customer_id)) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS " + db + ".customers (id INT PRIMARY KEY, name VARCHAR(64), email VARCHAR(128)) ENGINE=InnoDB",
		"CREATE TABLE IF NOT EXISTS " + db + ".events_aria (id INT PRIMARY KEY, kind VARCHAR(16), body TEXT) ENGINE=Aria",
		"CREATE TABLE IF NOT EXISTS " + db + ".notes_myisam (id INT PRIMARY KEY, body VARCHAR(255)) ENGINE=MyISAM",
		"CREATE TABLE IF NOT EXISTS " + db + ".metrics_part (id INT NOT NULL, ts INT NOT NULL, v DOUBLE, PRIMARY KEY (id, ts)) ENGINE=InnoDB PARTITION " +
			"BY HASH (id) PARTITIONS 4",
		fmt.Sprintf("INSERT INTO %s.orders SELECT seq, seq %% 997, ROUND(seq * 1.37, 2), MD5(seq), REPEAT(SHA2(seq, 256), 8) FROM %s.seq_1_to_%d", db, db, rows),
		fmt.Sprintf("INSERT INTO %s.customers SELECT seq, CONCAT('customer-', seq), CONCAT('c', seq, '@example.com') FROM %s.seq_1_to_%d", db, db, max(rows/10, 1)),
		fmt.Sprintf("INSERT INTO %s.events_aria SELECT seq, ELT(1 + seq %% 3, 'click', 'view', 'buy'), REPEAT(MD5(seq), 4) FROM %s.seq_1_to_%d", db, db,
			max(rows/4, 1)),
		fmt.Sprintf("INSERT INTO %s.notes_myisam SELECT seq, SHA1(seq) FROM %s.seq_1_to_%d", db, db, max(rows/4, 1)),
		fmt.Sprintf("INSERT INTO %s.metrics_part SELECT seq %% 100, seq, seq / 7 FROM %s.seq_1_to_%d", db, db, max(rows/2, 1)),
	}
	for _, s := range stmts {
		if _, err := t.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// LoadManyTables creates n small InnoDB tables t00001, t00002, ... in database db, a few rows
// each, with one procedure call: the thousands of tables a real shard has around the ones a
// test restores.
func (t *Tablet) LoadManyTables(ctx context.Context, db string, n int) error {
	table := "CONCAT('`" + db + "`.t', LPAD(i, 5, '0'))"
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS " + db,
		"CREATE PROCEDURE " + db + ".vtfifo_many(n INT) BEGIN DECLARE i INT DEFAULT 1; WHILE i <= n DO " +
			"SET @q = CONCAT('CREATE TABLE ', " + table + ", ' (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB'); PREPARE s FROM @q; EXECUTE s; " +
			"SET @q = CONCAT('INSERT INTO ', " + table + ", ' VALUES (1, MD5(', i, ')), (2, SHA1(', i, ')), (', i + 2, ', NULL)'); PREPARE s FROM @q; EXECUTE s; " +
			"DEALLOCATE PREPARE s; SET i = i + 1; END WHILE; END",
		fmt.Sprintf("CALL %s.vtfifo_many(%d)", db, n),
		"DROP PROCEDURE " + db + ".vtfifo_many",
	}
	for _, s := range stmts {
		if _, err := t.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// AddRows inserts n more rows into orders, starting after the current maximum id. Used to
// make data that exists only after a backup (catch-up, new backups).
func (t *Tablet) AddRows(ctx context.Context, n int) error {
	db := t.c.DBName()
	_, err := t.Exec(ctx, fmt.Sprintf(
		"INSERT INTO %[1]s.orders SELECT m.base + seq, seq %% 997, seq, 'added later', NULL FROM %[1]s.seq_1_to_%[2]d, (SELECT COALESCE(MAX(id), 0) AS "+
			"base FROM %[1]s.orders) m", db, n))
	return err
}

// TableSum is one table's row count and CHECKSUM TABLE value.
type TableSum struct {
	Table    string
	Rows     int64
	Checksum string
}

// Checksums returns row counts and CHECKSUM TABLE for every table of the keyspace's database,
// sorted by table name.
func (t *Tablet) Checksums(ctx context.Context) ([]TableSum, error) {
	db := t.c.DBName()
	res, err := t.Exec(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = '"+db+"' AND table_type = 'BASE TABLE'")
	if err != nil {
		return nil, err
	}
	var sums []TableSum
	for _, row := range res.Rows {
		name := row[0].ToString()
		cnt, err := t.Exec(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s.`%s`", db, name))
		if err != nil {
			return nil, err
		}
		n, _ := cnt.Rows[0][0].ToInt64()
		cs, err := t.Exec(ctx, fmt.Sprintf("CHECKSUM TABLE %s.`%s` EXTENDED", db, name))
		if err != nil {
			return nil, err
		}
		sums = append(sums, TableSum{Table: name, Rows: n, Checksum: cs.Rows[0][1].ToString()})
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i].Table < sums[j].Table })
	return sums, nil
}

// CompareChecksums returns "" when a and b are equal, or a description of the differences.
func CompareChecksums(a, b []TableSum) string {
	am := map[string]TableSum{}
	for _, s := range a {
		am[s.Table] = s
	}
	var diffs []string
	seen := map[string]bool{}
	for _, s := range b {
		seen[s.Table] = true
		o, ok := am[s.Table]
		switch {
		case !ok:
			diffs = append(diffs, s.Table+": only after")
		case o != s:
			diffs = append(diffs, fmt.Sprintf("%s: rows %d vs %d, checksum %s vs %s", s.Table, o.Rows, s.Rows, o.Checksum, s.Checksum))
		}
	}
	for _, s := range a {
		if !seen[s.Table] {
			diffs = append(diffs, s.Table+": only before")
		}
	}
	return strings.Join(diffs, "; ")
}

// FormatChecksums renders two checksum lists side by side.
func FormatChecksums(leftTitle string, left []TableSum, rightTitle string, right []TableSum) string {
	rm := map[string]TableSum{}
	for _, s := range right {
		rm[s.Table] = s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-14s | %-24s | %-24s | %s\n", "table", leftTitle+" rows/checksum", rightTitle+" rows/checksum", "match")
	fmt.Fprintf(&b, "%s\n", strings.Repeat("-", 78))
	for _, l := range left {
		r := rm[l.Table]
		match := "yes"
		if l != r {
			match = "NO"
		}
		fmt.Fprintf(&b, "%-14s | %8d %-15s | %8d %-15s | %s\n", l.Table, l.Rows, l.Checksum, r.Rows, r.Checksum, match)
	}
	return b.String()
}

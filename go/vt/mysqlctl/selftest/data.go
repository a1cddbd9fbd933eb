package selftest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"vitess.io/vitess/go/sqlescape"
)

// The data set's schemas: one plain, one whose name needs escaping in file
// names (my-db is my@002ddb on disk).
const (
	dataDB    = "selftest"
	escapedDB = "selftest-esc"
)

// shape is what the data set holds besides its small tables.
type shape struct {
	scale   int
	mariadb bool
	// externalDir holds the DATA DIRECTORY table's file.
	externalDir string
	// encryption makes a table encrypted ("" makes none).
	encryption string
}

// loadData creates the shaped data set: scale small InnoDB tables, a
// partitioned one, a wide one, names that need escaping, a table whose file
// lives outside the data directory (DATA DIRECTORY), a general tablespace
// (MySQL), an encrypted table when a keyring is loaded, non-InnoDB tables
// (MyISAM; Aria on MariaDB) and the writer's table. It returns what it made,
// for the report.
func loadData(ctx context.Context, db *sql.DB, sh shape) (string, error) {
	stmts := []string{
		"CREATE DATABASE `" + dataDB + "`",
		"CREATE DATABASE `" + escapedDB + "`",
		"CREATE TABLE `" + dataDB + "`.writes (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(64) NOT NULL) ENGINE=InnoDB",
		"CREATE TABLE `" + dataDB + "`.part (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB PARTITION BY HASH(id) PARTITIONS 4",
		"CREATE TABLE `" + dataDB + "`.wide (id INT PRIMARY KEY, v VARCHAR(255) NOT NULL, KEY (v(20))) ENGINE=InnoDB",
		"CREATE TABLE `" + escapedDB + "`.`t$x-1` (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB",
		"CREATE TABLE `" + dataDB + "`.my (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=MyISAM",
		"CREATE TABLE `" + dataDB + "`.remote (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB DATA DIRECTORY='" + sh.externalDir + "'",
	}
	fill := []string{"my", "remote"}
	kinds := []string{"partitioned", "wide", "escaped names (`selftest-esc`.`t$x-1`)", "DATA DIRECTORY (" + sh.externalDir + ")", "MyISAM"}
	if sh.mariadb {
		stmts = append(stmts, "CREATE TABLE `"+dataDB+"`.aria (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=Aria")
		fill, kinds = append(fill, "aria"), append(kinds, "Aria")
	} else {
		stmts = append(stmts, "CREATE TABLESPACE selftest_ts ADD DATAFILE 'selftest_ts.ibd' ENGINE=InnoDB",
			"CREATE TABLE `"+dataDB+"`.in_ts (id INT PRIMARY KEY, v VARCHAR(40)) TABLESPACE selftest_ts")
		fill, kinds = append(fill, "in_ts"), append(kinds, "general tablespace (selftest_ts)")
	}
	if sh.encryption != "" {
		stmts = append(stmts, "CREATE TABLE `"+dataDB+"`.secret (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=InnoDB "+sh.encryption)
		fill, kinds = append(fill, "secret"), append(kinds, "encrypted ("+sh.encryption+")")
	}
	for i := 0; i < sh.scale; i++ {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE `%s`.t%04d (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL, n BIGINT NOT NULL, KEY (n)) ENGINE=InnoDB",
			dataDB, i))
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("%s: %w", q, err)
		}
	}
	if err := fillTables(ctx, db, sh, fill); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d small InnoDB tables; %s", sh.scale, strings.Join(kinds, ", ")), nil
}

// fillTables puts rows in every table with INSERT ... SELECT from a
// generated sequence (a recursive CTE: MySQL 8 and MariaDB alike); the
// tables named in plain get 500 rows each.
func fillTables(ctx context.Context, db *sql.DB, sh shape, plain []string) error {
	seq := func(n int) string {
		return fmt.Sprintf("WITH RECURSIVE s (k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM s WHERE k < %d) ", n)
	}
	fill := []string{
		"INSERT INTO `" + dataDB + "`.part " + seq(1000) + "SELECT k, MD5(k) FROM s",
		"INSERT INTO `" + dataDB + "`.wide " + seq(20000) + "SELECT k, REPEAT(MD5(k), 7) FROM s",
		"INSERT INTO `" + escapedDB + "`.`t$x-1` " + seq(100) + "SELECT k, MD5(k) FROM s",
	}
	for _, t := range plain {
		fill = append(fill, "INSERT INTO `"+dataDB+"`."+t+" "+seq(500)+"SELECT k, MD5(k) FROM s")
	}
	for i := 0; i < sh.scale; i++ {
		fill = append(fill, fmt.Sprintf("INSERT INTO `%s`.t%04d %sSELECT k, MD5(k * %d), k * %d FROM s", dataDB, i, seq(20), i+1, i+7))
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Both stop a recursive CTE at 1000 rows by default.
	limit := "SET SESSION cte_max_recursion_depth = 100000"
	if sh.mariadb {
		limit = "SET SESSION max_recursive_iterations = 100000"
	}
	if _, err := conn.ExecContext(ctx, limit); err != nil {
		return err
	}
	for _, q := range fill {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%.120s: %w", q, err)
		}
	}
	return nil
}

// writer commits rows and runs DDL while a backup runs, as a live shard
// would: one row per transaction, and a table created, altered and dropped
// in a loop (under a backup lock the DDL waits, as on a real host).
type writer struct {
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	rows int
	ddl  int
}

func startWriter(ctx context.Context, db *sql.DB) *writer {
	w := &writer{stop: make(chan struct{})}
	w.wg.Go(func() { w.loop(ctx, db, w.insert) })
	w.wg.Go(func() { w.loop(ctx, db, w.alter) })
	return w
}

func (w *writer) loop(ctx context.Context, db *sql.DB, step func(context.Context, *sql.DB, int) error) {
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if err := step(ctx, db, i); err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
	}
}

func (w *writer) insert(ctx context.Context, db *sql.DB, i int) error {
	_, err := db.ExecContext(ctx, "INSERT INTO `"+dataDB+"`.writes (v) VALUES (?)", fmt.Sprintf("row %d at %s", i, time.Now().Format(time.RFC3339Nano)))
	if err == nil {
		w.mu.Lock()
		w.rows++
		w.mu.Unlock()
	}
	time.Sleep(2 * time.Millisecond)
	return err
}

func (w *writer) alter(ctx context.Context, db *sql.DB, i int) error {
	name := fmt.Sprintf("`%s`.ddl_%d", dataDB, i%3)
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + name,
		"CREATE TABLE " + name + " (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO " + name + " VALUES (1, 1), (2, 2)",
		"ALTER TABLE " + name + " ADD COLUMN w INT NOT NULL DEFAULT 7, ADD KEY (v)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	w.mu.Lock()
	w.ddl++
	w.mu.Unlock()
	time.Sleep(200 * time.Millisecond)
	return nil
}

// finish stops the writer and returns what it did, or its error.
func (w *writer) finish() (rows, ddl int, err error) {
	close(w.stop)
	w.wg.Wait()
	return w.rows, w.ddl, w.err
}

// tableSums is every table of the data set's schemas with its row count and
// CHECKSUM TABLE, keyed `db`.`table`.
func tableSums(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (?, ?) AND TABLE_TYPE = "+
		"'BASE TABLE'", dataDB, escapedDB)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var s, t string
		if err := rows.Scan(&s, &t); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, sqlescape.EscapeID(s)+"."+sqlescape.EscapeID(t))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		var count int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+n).Scan(&count); err != nil {
			return nil, fmt.Errorf("counting %s: %w", n, err)
		}
		var name string
		var sum sql.NullString
		if err := db.QueryRowContext(ctx, "CHECKSUM TABLE "+n).Scan(&name, &sum); err != nil {
			return nil, fmt.Errorf("CHECKSUM TABLE %s: %w", n, err)
		}
		out[n] = fmt.Sprintf("rows=%d checksum=%s", count, sum.String)
	}
	return out, nil
}

// diffSums names the tables whose sums differ or that one side lacks.
func diffSums(want, got map[string]string) error {
	var bad []string
	for n, w := range want {
		if g, ok := got[n]; !ok {
			bad = append(bad, n+" missing")
		} else if g != w {
			bad = append(bad, fmt.Sprintf("%s: %s, the source %s", n, g, w))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			bad = append(bad, n+" not in the source")
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d tables differ from the source: %s", len(bad), len(want), strings.Join(bad[:min(len(bad), 10)], "; "))
	}
	return nil
}

// Package benchdata loads deterministic benchmark data into a MariaDB server:
// a chosen number of bytes on disk, in one of three shapes, with a realistic
// compression ratio (about 2-4x with zstd level 1: every row mixes random
// bytes, numbers, dates and text).
//
// Everything is computed by the server from the sequence engine
// (INSERT ... SELECT ... FROM seq_1_to_N) with hashes of the row number and
// the seed, so the same seed, shape and size give the same rows on any
// machine, and loading costs no client round trips per row.
package benchdata

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// Shape is the layout of the data.
type Shape string

const (
	// Many is thousands of small InnoDB tables (2,000 by default).
	Many Shape = "many"
	// Giant is one table holding 80% of the bytes, plus 100 small tables.
	Giant Shape = "giant"
	// Mixed is InnoDB, Aria, MyISAM, partitioned InnoDB and InnoDB with
	// off-page blobs.
	Mixed Shape = "mixed"
)

// Shapes lists every shape.
var Shapes = []Shape{Many, Giant, Mixed}

// ParseShape checks a shape name.
func ParseShape(s string) (Shape, error) {
	for _, sh := range Shapes {
		if string(sh) == s {
			return sh, nil
		}
	}
	return "", fmt.Errorf("benchdata: unknown shape %q (want many, giant or mixed)", s)
}

// MaxBytes is the largest data set Load accepts (32 GiB).
const MaxBytes = 32 << 30

// Options say what to load.
type Options struct {
	Shape    Shape
	Bytes    int64  // bytes on disk of the tables' files, approximately (within a few %)
	Seed     uint64 // same seed, same rows
	Database string // default "bench"
	// DataDir is the server's datadir, to measure the table files.
	DataDir string
	// ManyTables overrides the number of tables of the Many shape (default 2000).
	ManyTables int
	// Log, if set, gets one line per step.
	Log func(format string, args ...any)
}

// Report says what was loaded.
type Report struct {
	Shape    Shape         `json:"shape"`
	Bytes    int64         `json:"bytes"` // bytes on disk of the database directory
	Tables   int           `json:"tables"`
	Rows     int64         `json:"rows"`
	Seed     uint64        `json:"seed"`
	Duration time.Duration `json:"duration_ns"`
}

// lorem is the text the rows' prose is cut from (at a hashed offset).
const lorem = "Backups are only as good as the restores that were tested. The replica fell behind " +
	"during the nightly batch, so the operator paused the resharding workflow, checked the " +
	"binary log position, and resumed once the lag was under ten seconds. Customer order " +
	"shipped from the warehouse in Lisbon; invoice pending approval by finance; refund " +
	"requested because the parcel arrived damaged. Temperature sensor reported a reading " +
	"outside the expected range, maintenance ticket opened, technician assigned for Tuesday " +
	"morning. The quick brown fox jumps over the lazy dog while the database keeps serving " +
	"queries at a steady rate of several thousand per second across every shard of the keyspace. "

var words = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"}

// rowColumns is the common table layout.
const rowColumns = "id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL, created DATETIME NOT NULL, " +
	"amount DECIMAL(12,2) NOT NULL, name VARCHAR(64) NOT NULL, note VARCHAR(400) NOT NULL, " +
	"token VARBINARY(160) NOT NULL, KEY k (k)"

// rowSelect returns the SELECT list for rowColumns; tag distinguishes tables.
// h1..h3 are independent 32-bit hashes of (seed, tag, seq).
func rowSelect(seed uint64, tag int) string {
	h := func(i int) string { return fmt.Sprintf("CRC32(CONCAT(%d,':%d:%d:',seq))", seed, tag, i) }
	wordList := "'" + strings.Join(words, "','") + "'"
	return fmt.Sprintf("seq, %[1]s %% 1000000, "+
		"TIMESTAMP('2020-01-01') + INTERVAL (%[2]s %% 126144000) SECOND, "+
		"(%[3]s %% 10000000) / 100, "+
		"CONCAT(ELT(1 + %[1]s %% 16, %[4]s), ' ', ELT(1 + %[2]s %% 16, %[4]s), ' #', %[3]s %% 9999), "+
		"CONCAT('order ', seq, ' qty ', %[1]s %% 97, ' ', SUBSTRING(@lorem, 1 + %[2]s %% %[5]d, 80 + %[3]s %% 170)), "+
		"UNHEX(CONCAT(SHA2(CONCAT(%[6]d, ':%[7]d:', seq), 512), SUBSTRING(SHA2(CONCAT(%[6]d, ':%[7]d:', seq), 256), 1, %[8]d), "+
		"SUBSTRING(SHA2(CONCAT(%[6]d, ':%[7]d:x', seq), 512), 1, 80)))",
		h(1), h(2), h(3), wordList, len(lorem)-260, seed, tag, 2*(16+int(seed%8)))
}

// blobSelect is rowSelect plus a ~9 KB blob (stored off-page by InnoDB)
// built from distinct hashes and text, so it compresses like the rows.
func blobSelect(seed uint64, tag int) string {
	var parts []string
	for i := range 56 {
		parts = append(parts, fmt.Sprintf("UNHEX(SHA2(CONCAT(%d,':%d:%d:',seq), 512))", seed, tag, i))
		parts = append(parts, fmt.Sprintf("CAST(SUBSTRING(@lorem, 1 + CRC32(CONCAT(%d,':b%d:',seq)) %% %d, 170) AS BINARY)", seed, i, len(lorem)-200))
	}
	return rowSelect(seed, tag) + ", CONCAT(" + strings.Join(parts, ", ") + ")"
}

// Load creates o.Database and fills it. It disables the binary log for its
// own session, so the load does not double the disk writes.
func Load(ctx context.Context, db *sql.DB, o Options) (Report, error) {
	if o.Database == "" {
		o.Database = "bench"
	}
	if o.Bytes <= 0 || o.Bytes > MaxBytes {
		return Report{}, fmt.Errorf("benchdata: size %d out of range (1 .. 32 GiB)", o.Bytes)
	}
	if o.ManyTables == 0 {
		o.ManyTables = 2000
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	start := time.Now()
	l, release, err := session(ctx, db, o)
	if err != nil {
		return Report{}, err
	}
	defer release()
	r := Report{Shape: o.Shape, Seed: o.Seed}
	switch o.Shape {
	case Many:
		err = l.many(&r)
	case Giant:
		err = l.giant(&r)
	case Mixed:
		err = l.mixed(&r)
	default:
		_, err = ParseShape(string(o.Shape))
	}
	if err != nil {
		return r, err
	}
	if err := l.exec("FLUSH TABLES"); err != nil {
		return r, err
	}
	// InnoDB keeps the new pages in the buffer pool (the .ibd files hold
	// zeros until a checkpoint): write them out, as a server that has been
	// running a while would have, so a backup copies real pages.
	if err := l.flushDirty(); err != nil {
		return r, err
	}
	r.Bytes = dirSize(l.dir)
	r.Duration = time.Since(start)
	return r, nil
}

type loader struct {
	ctx  context.Context
	db   *sql.DB
	conn *sql.Conn
	o    Options
	dir  string
	tag  int
}

// session is a loader on a connection of its own, set up to load: no
// binary log, the database, the text the rows quote. release gives the
// connection back with its binary log on.
func session(ctx context.Context, db *sql.DB, o Options) (*loader, func(), error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		_, _ = conn.ExecContext(context.Background(), "SET SESSION sql_log_bin = 1")
		conn.Close()
	}
	l := &loader{ctx: ctx, db: db, conn: conn, o: o, dir: filepath.Join(o.DataDir, o.Database)}
	for _, q := range []string{"SET SESSION sql_log_bin = 0", fmt.Sprintf("CREATE DATABASE IF NOT EXISTS `%s`", o.Database),
		fmt.Sprintf("USE `%s`", o.Database), fmt.Sprintf("SET @lorem = '%s'", lorem+lorem)} {
		if err := l.exec(q); err != nil {
			release()
			return nil, nil, err
		}
	}
	return l, release, nil
}

// table is one table's load: it runs on a session of its own and returns
// the rows it inserted.
type table func(w *loader) (rows int64, err error)

// loadTables runs the loads on up to one session per CPU (at most 8, at
// least 2, fewer where db's pool is smaller): the server fills tables in
// parallel, so a 4 GiB set on 16 cores no longer takes most of a short
// benchmark's time. Each table's rows are its seed and tag's whatever the
// order, so the data stay deterministic.
func (l *loader) loadTables(r *Report, tables []table) error {
	sessions := min(max(runtime.NumCPU(), 2), 8)
	if m := l.db.Stats().MaxOpenConnections; m > 0 {
		sessions = min(sessions, m-1) // l holds one
	}
	if sessions < 1 { // a pool of one connection: l's, in turn
		for _, t := range tables {
			rows, err := t(l)
			if err != nil {
				return err
			}
			r.Rows += rows
			r.Tables++
		}
		return nil
	}
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(l.ctx) // the first failure stops the other loads
	g.SetLimit(sessions)
	for _, t := range tables {
		g.Go(func() error {
			w, release, err := session(ctx, l.db, l.o)
			if err != nil {
				return err
			}
			defer release()
			rows, err := t(w)
			if err != nil {
				return err
			}
			mu.Lock()
			r.Rows += rows
			r.Tables++
			mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

func (l *loader) exec(q string) error {
	if _, err := l.conn.ExecContext(l.ctx, q); err != nil {
		return fmt.Errorf("benchdata: %w (query: %.200s)", err, q)
	}
	return nil
}

// tableSize is the bytes on disk of a table's files (partitions included).
func (l *loader) tableSize(name string) int64 {
	var n int64
	for _, pat := range []string{name + ".*", name + "#P#*"} {
		m, _ := filepath.Glob(filepath.Join(l.dir, pat))
		for _, p := range m {
			if fi, err := os.Stat(p); err == nil && !strings.HasSuffix(p, ".frm") {
				n += fi.Size()
			}
		}
	}
	return n
}

// fill inserts rows into table until its files reach target bytes. The
// first batch is sized from rowBytes (an estimate of bytes per row on
// disk); later batches from what the table measured so far.
func (l *loader) fill(table, sel string, target, rowBytes int64, flush bool) (int64, error) {
	var rows int64
	for {
		size := l.tableSize(table)
		if size >= target*97/100 {
			return rows, nil
		}
		if rows > 0 && size > 0 {
			rowBytes = max(size/rows, 16)
		}
		n := max((target-size)/rowBytes, 64)
		if rows > 0 {
			n = max(n, rows/16) // the files grow in steps: do not creep
		}
		for n > 0 {
			b := min(n, 200000)
			q := fmt.Sprintf("INSERT INTO `%s` SELECT %s FROM seq_%d_to_%d", table, sel, rows+1, rows+b)
			if err := l.exec(q); err != nil {
				return rows, err
			}
			rows += b
			n -= b
		}
		if flush {
			// Aria/MyISAM sizes show after a flush; InnoDB extends its file as it goes.
			if err := l.exec("FLUSH TABLES `" + table + "`"); err != nil {
				return rows, err
			}
		}
	}
}

func (l *loader) create(table, columns, suffix string) error {
	return l.exec(fmt.Sprintf("CREATE TABLE `%s` (%s) %s", table, columns, suffix))
}

// rowBytesEstimate is bytes on disk per row of rowColumns in InnoDB
// (measured: ~330 bytes of row + the secondary index + page fill).
const rowBytesEstimate = 420

func (l *loader) smallTables(r *Report, prefix string, count int, total int64) error {
	per := total / int64(count)
	base := l.tag
	l.tag += count
	name := func(i int) string { return fmt.Sprintf("%s%04d", prefix, i) }
	// Calibrate on the first table, then size the others from it in one insert each.
	if err := l.create(name(0), rowColumns, "ENGINE=InnoDB"); err != nil {
		return err
	}
	rows, err := l.fill(name(0), rowSelect(l.o.Seed, base+1), per, rowBytesEstimate, false)
	if err != nil {
		return err
	}
	r.Rows += rows
	r.Tables++
	rowBytes := int64(rowBytesEstimate)
	if rows > 0 {
		rowBytes = max(l.tableSize(name(0))/rows, 16)
	}
	var done atomic.Int64
	tables := make([]table, 0, count-1)
	for i := 1; i < count; i++ {
		tables = append(tables, func(w *loader) (int64, error) {
			if err := w.create(name(i), rowColumns, "ENGINE=InnoDB"); err != nil {
				return 0, err
			}
			rows := max(per/rowBytes, 1)
			if err := w.exec(fmt.Sprintf("INSERT INTO `%s` SELECT %s FROM seq_1_to_%d", name(i), rowSelect(l.o.Seed, base+i+1), rows)); err != nil {
				return 0, err
			}
			if n := done.Add(1) + 1; n%500 == 0 {
				l.o.Log("benchdata: %d/%d tables", n, count)
			}
			return rows, nil
		})
	}
	return l.loadTables(r, tables)
}

func (l *loader) many(r *Report) error {
	return l.smallTables(r, "t", l.o.ManyTables, l.o.Bytes)
}

func (l *loader) giant(r *Report) error {
	big := l.o.Bytes * 8 / 10
	if err := l.create("giant", rowColumns, "ENGINE=InnoDB"); err != nil {
		return err
	}
	l.tag++
	rows, err := l.fill("giant", rowSelect(l.o.Seed, l.tag), big, rowBytesEstimate, false)
	if err != nil {
		return err
	}
	r.Rows += rows
	r.Tables++
	l.o.Log("benchdata: giant table %d MiB", l.tableSize("giant")>>20)
	return l.smallTables(r, "t", 100, l.o.Bytes-l.tableSize("giant"))
}

func (l *loader) mixed(r *Report) error {
	b := l.o.Bytes
	type part struct {
		name, columns, suffix, sel string
		bytes                      int64
		flush                      bool
	}
	blobCols := rowColumns + ", payload MEDIUMBLOB NOT NULL"
	l.tag += 10
	parts := []part{
		{"aria_t", rowColumns, "ENGINE=Aria", rowSelect(l.o.Seed, l.tag+1), b * 15 / 100, true},
		{"myisam_t", rowColumns, "ENGINE=MyISAM", rowSelect(l.o.Seed, l.tag+2), b * 10 / 100, true},
		{"part_t", rowColumns, "ENGINE=InnoDB PARTITION BY HASH(id) PARTITIONS 4", rowSelect(l.o.Seed, l.tag+3), b * 20 / 100, false},
		{"blob_t", blobCols, "ENGINE=InnoDB ROW_FORMAT=DYNAMIC", blobSelect(l.o.Seed, l.tag+4), b * 20 / 100, false},
	}
	tables := make([]table, 0, len(parts))
	for _, p := range parts {
		tables = append(tables, func(w *loader) (int64, error) {
			if err := w.create(p.name, p.columns, p.suffix); err != nil {
				return 0, err
			}
			est := int64(rowBytesEstimate)
			if strings.HasPrefix(p.name, "blob") {
				est = 16 << 10
			}
			rows, err := w.fill(p.name, p.sel, p.bytes, est, p.flush)
			if err == nil {
				l.o.Log("benchdata: %s %d MiB", p.name, w.tableSize(p.name)>>20)
			}
			return rows, err
		})
	}
	if err := l.loadTables(r, tables); err != nil {
		return err
	}
	var used int64
	for _, p := range parts {
		used += l.tableSize(p.name)
	}
	// The rest in 40 ordinary InnoDB tables.
	return l.smallTables(r, "t", 40, b-used)
}

func (l *loader) flushDirty() error {
	var old float64
	if err := l.conn.QueryRowContext(l.ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct").Scan(&old); err != nil {
		return err
	}
	var oldCap, oldCapMax int64
	if err := l.conn.QueryRowContext(l.ctx, "SELECT @@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max").Scan(&oldCap, &oldCapMax); err != nil {
		return err
	}
	for _, q := range []string{"SET GLOBAL innodb_io_capacity_max = 100000", "SET GLOBAL innodb_io_capacity = 50000",
		"SET GLOBAL innodb_max_dirty_pages_pct = 0"} {
		if err := l.exec(q); err != nil {
			return err
		}
	}
	defer func() {
		for _, q := range []string{
			fmt.Sprintf("SET GLOBAL innodb_max_dirty_pages_pct = %g", old),
			fmt.Sprintf("SET GLOBAL innodb_io_capacity = %d", oldCap),
			fmt.Sprintf("SET GLOBAL innodb_io_capacity_max = %d", oldCapMax),
		} {
			_ = l.exec(q)
		}
	}()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		var name string
		var dirty int64
		if err := l.conn.QueryRowContext(l.ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &dirty); err != nil {
			return err
		}
		if dirty == 0 {
			return nil
		}
		select {
		case <-l.ctx.Done():
			return l.ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("benchdata: dirty pages not flushed within 10 minutes")
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

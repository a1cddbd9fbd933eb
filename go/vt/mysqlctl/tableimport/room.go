package tableimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/vtfifo/vtfifo/go/internal/diskspace"
)

// An import writes into the live server's file systems: the table's files
// (Import), and, through the binary log, its rows again as a copy and as
// events (ImportReplicated). A server that cannot write stops serving
// (MySQL 8 aborts when it cannot write its binary log, with its default
// binlog_error_action=ABORT_SERVER: sql/binlog.cc,
// exec_binlog_error_action_abort, read, not run here; MariaDB 10.11 blocks
// every write waiting for room, seen here), and a
// copy that fills its disk fails only once it has. So an import whose
// writes would leave a file system of the server with less free than a
// tenth of them or 1 % of its size is refused before anything is created.

// roomFor refuses such an import of src into the server of conn, whose
// data directory is dataDir: copies is how many times the table's bytes go
// there (1: its files; 2: its local copy and the copy through the log),
// logged whether they go to the binary log too. The table's bytes are its
// files' (rows take no more once in the server). A file system not on this
// host, or a file that cannot be read, refuses nothing.
func roomFor(ctx context.Context, conn *sql.Conn, dataDir string, src Source, copies int, logged bool) error {
	size, ok := filesSize(src)
	if !ok || size == 0 {
		return nil
	}
	dataDir = filepath.Clean(dataDir)
	writes := []fsWrite{{dataDir, "the data directory", int64(copies) * size}}
	if logged {
		writes = append(writes, fsWrite{binlogDir(ctx, conn, dataDir), "the binary log", size})
	}
	return checkWrites(writes, src)
}

// binlogDir is the directory of the server's binary log (log_bin_basename,
// MySQL 8's sql/binlog.cc and MariaDB's), relative ones under dataDir; the
// data directory where the server does not say.
func binlogDir(ctx context.Context, conn *sql.Conn, dataDir string) string {
	var base sql.NullString
	if conn.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin_basename").Scan(&base) != nil || base.String == "" {
		return dataDir
	}
	if !filepath.IsAbs(base.String) {
		return filepath.Dir(filepath.Join(dataDir, base.String))
	}
	return filepath.Dir(base.String)
}

// ErrNoRoom says the live server's disk has too little room for an import
// (errors.Is): this host's, no verdict on the backup.
var ErrNoRoom = errors.New("the live server's disk has too little room for the table")

// noRoom is roomFor's refusal, in its own words, and ErrNoRoom.
type noRoom struct{ error }

func (noRoom) Is(target error) bool { return target == ErrNoRoom }

// fsWrite is what an import writes under dir.
type fsWrite struct {
	dir, what string
	bytes     int64
}

// checkWrites adds up writes by file system and refuses the first that
// would leave too little free.
func checkWrites(writes []fsWrite, src Source) error {
	type fsNeed struct {
		dir   string
		what  []string
		bytes int64
		free  int64
		size  int64
	}
	byDev := map[uint64]*fsNeed{}
	var devs []uint64
	for _, w := range writes {
		fi, err := os.Stat(w.dir)
		if err != nil {
			continue // not on this host
		}
		free, size, err := diskspace.Of(w.dir)
		if err != nil {
			continue
		}
		dev := fi.Sys().(*syscall.Stat_t).Dev
		n := byDev[dev]
		if n == nil {
			n = &fsNeed{dir: w.dir, free: free, size: size}
			byDev[dev] = n
			devs = append(devs, dev)
		}
		n.what, n.bytes = append(n.what, w.what), n.bytes+w.bytes
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i] < devs[j] })
	for _, dev := range devs {
		n := byDev[dev]
		keep := max(n.bytes/10, n.size/100)
		if n.free-n.bytes >= keep {
			continue
		}
		return noRoom{fmt.Errorf("%s.%s: the live server's file system of %s (%s) has %d bytes free, and the import writes about "+
			"%d there: it would leave less than %d (a tenth of that, or 1%% of the file system) for the server's own writes, and a server "+
			"that cannot write its binary log stops: nothing was created in the live server; make room there", src.DB, src.Table,
			strings.Join(n.what, " and "), n.dir, n.free, n.bytes, keep)}
	}
	return nil
}

// filesSize is the bytes of src's files that an import copies in (its
// trigger definitions are not); false where one cannot be read.
func filesSize(src Source) (int64, bool) {
	var n int64
	for _, f := range src.Files {
		if triggerFiles[filepath.Ext(f)] {
			continue
		}
		fi, err := os.Stat(filepath.Join(src.Dir, filepath.FromSlash(f)))
		if err != nil {
			return 0, false
		}
		n += fi.Size()
	}
	return n, true
}

package tableimport

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"vitess.io/vitess/go/vt/logutil"
)

// While an import waits for its checkpoint, the live server's
// innodb_max_dirty_pages_pct is 0 (durable.go). A run killed then cannot
// put it back, so the server's own value is recorded first, in a file of
// the server's data directory with the server's start time, and the record
// removed once the value is back. The next import, or restore-table's start
// (RestoreSettings), finds a record left: on the same server start, the
// value still what the stopped run set, it puts the recorded value back
// and says so; after a restart the server's configured value is in force
// and the record is only removed; a value changed since is left as it is,
// and said.

// settingsRecord is the record's name in the server's data directory.
const settingsRecord = "vtfifo-import-settings.json"

type settingsDoc struct {
	MaxDirtyPagesPct string `json:"innodb_max_dirty_pages_pct"` // the server's own
	Set              string `json:"set"`                        // what the run set
	ServerStarted    int64  `json:"server_started"`             // Unix seconds: NOW() - Uptime
	PID              int    `json:"pid"`
}

// ErrForeignRecord is returned where the settings record's name holds a
// file restore-table did not write: nothing is done until it is moved.
var ErrForeignRecord = errors.New("a file restore-table did not write is in its place")

// flushing is the page cleaner set to flush every dirty page.
type flushing struct {
	path string
	doc  settingsDoc
}

// flushAll records the server's innodb_max_dirty_pages_pct and sets it to
// 0. Call it with checkpointLock held.
func flushAll(ctx context.Context, conn *sql.Conn, logger logutil.Logger) (*flushing, error) {
	if err := settle(ctx, conn, logger); err != nil {
		return nil, err
	}
	path, started, err := recordOf(ctx, conn)
	if err != nil {
		return nil, err
	}
	f := &flushing{path: path, doc: settingsDoc{Set: "0", ServerStarted: started, PID: os.Getpid()}}
	if err := conn.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct").Scan(&f.doc.MaxDirtyPagesPct); err != nil {
		return nil, err
	}
	if err := writeRecord(path, f.doc); err != nil {
		return nil, fmt.Errorf("cannot record the server's innodb_max_dirty_pages_pct before changing it: %w", err)
	}
	if err := stmt(ctx, conn, "SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("cannot have the server flush its dirty pages: %w", err)
	}
	return f, nil
}

// restore puts the recorded value back, on a context of its own, and
// removes the record; when it cannot, the record stays for the next run.
func (f *flushing) restore(ctx context.Context, conn *sql.Conn, logger logutil.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = "+f.doc.MaxDirtyPagesPct); err != nil {
		logger.Warningf("restore-table: cannot put innodb_max_dirty_pages_pct back to %s (%v): the next restore-table run on this server puts it back "+
			"from %s", f.doc.MaxDirtyPagesPct, err, f.path)
		return
	}
	os.Remove(f.path)
}

// settle deals with a record a stopped run left. Call it with
// checkpointLock held: the record is then no live run's.
func settle(ctx context.Context, conn *sql.Conn, logger logutil.Logger) error {
	path, started, err := recordOf(ctx, conn)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s, left by a stopped import: %w", path, err)
	}
	var doc settingsDoc
	if json.Unmarshal(b, &doc) != nil || doc.PID <= 0 || doc.Set == "" || doc.MaxDirtyPagesPct == "" || doc.ServerStarted <= 0 {
		// Written whole (writeRecord), so never cut short: a file of that
		// name that is no such record is not ours to remove or overwrite.
		return fmt.Errorf("%w: %s is not a record restore-table writes (%q): it is neither removed nor written over; move it away, "+
			"check the server's innodb_max_dirty_pages_pct, and run again", ErrForeignRecord, path, excerpt(b))
	}
	var now string
	if err := conn.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct").Scan(&now); err != nil {
		return err
	}
	switch {
	case math.Abs(float64(doc.ServerStarted-started)) > 2:
		logger.Infof("restore-table: an import stopped (pid %d) before the server's last restart: its configured innodb_max_dirty_pages_pct is in force (%s)",
			doc.PID, now)
	case sameNumber(now, doc.Set):
		if err := stmt(ctx, conn, "SET GLOBAL innodb_max_dirty_pages_pct = "+doc.MaxDirtyPagesPct); err != nil {
			return err
		}
		logger.Warningf("restore-table: a stopped import (pid %d) left innodb_max_dirty_pages_pct at %s: put back to %s, the value it recorded",
			doc.PID, now, doc.MaxDirtyPagesPct)
	default:
		logger.Warningf("restore-table: a stopped import (pid %d) recorded innodb_max_dirty_pages_pct %s and set %s; it is %s now, set since by "+
			"someone else: left as it is", doc.PID, doc.MaxDirtyPagesPct, doc.Set, now)
	}
	return os.Remove(path)
}

// RestoreSettings puts back what a stopped import left changed in the live
// server (settle), when no import of another run is waiting for its
// checkpoint now.
func RestoreSettings(ctx context.Context, db *sql.DB, logger logutil.Logger) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", checkpointLock).Scan(&got); err != nil {
		return fmt.Errorf("taking the lock %s: %w", checkpointLock, err)
	}
	if got.Int64 != 1 {
		return nil // a live import's record
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", checkpointLock)
	return settle(ctx, conn, logger)
}

// recordOf returns the record's path and the server's start time.
func recordOf(ctx context.Context, conn *sql.Conn) (string, int64, error) {
	var dataDir string
	var now int64
	if err := conn.QueryRowContext(ctx, "SELECT @@datadir, UNIX_TIMESTAMP()").Scan(&dataDir, &now); err != nil {
		return "", 0, err
	}
	var name, uptime string
	if err := conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Uptime'").Scan(&name, &uptime); err != nil {
		return "", 0, err
	}
	up, err := strconv.ParseInt(uptime, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("the server's Uptime %q: %w", uptime, err)
	}
	return filepath.Join(dataDir, settingsRecord), now - up, nil
}

// writeRecord writes doc to path whole (a temporary file renamed over it,
// synced).
func writeRecord(path string, doc settingsDoc) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// excerpt is the start of a file's content, for an error.
func excerpt(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

func sameNumber(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

package vtfifocli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/topo/topoproto"

	topodatapb "vitess.io/vitess/go/vt/proto/topodata"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
)

// liveServer is the server a table restore imports into: reached and
// checked before anything is downloaded, its targets claimed (one run per
// target) once the backup's tables are known.
type liveServer struct {
	db      *sql.DB
	release func()
	resumed map[tableimport.Target]bool // copies a stopped run left that go on
}

func (l *liveServer) close() {
	if l.release != nil {
		l.release()
	}
	l.db.Close()
}

// openLive connects to the live server (by its socket, or a tablet's on
// this host) and checks, before anything is downloaded: that it may be
// written to (tableimport.Writable; a tablet the topology knows is its
// shard's primary), what a stopped run left changed is put back, every
// target's database exists and no named target exists.
func openLive(s *session, f restoreTableFlags, patterns []fifobackupengine.TablePattern,
	targetFor func(db, table string) tableimport.Target) (*liveServer, error) {
	socket := f.intoMySQL
	if f.intoTablet != "" {
		var err error
		if socket, err = tabletSocket(f.intoTablet); err != nil {
			return nil, err
		}
		if err := s.tabletIsPrimary(f.intoTablet); err != nil {
			return nil, err
		}
	}
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr = f.user, os.Getenv("MYSQL_PWD"), "unix", socket
	db, err := sql.Open("mysql", c.FormatDSN())
	if err == nil {
		err = db.PingContext(s.ctx)
	}
	if err != nil {
		return nil, unreadable.Error(fmt.Errorf("cannot reach the live server at %s as %s: %w", socket, f.user, err))
	}
	l := &liveServer{db: db, resumed: map[tableimport.Target]bool{}}
	if err := l.check(s, f.standalone, patterns, targetFor); err != nil {
		db.Close()
		return nil, err
	}
	return l, nil
}

// check is openLive's checks on the server reached.
func (l *liveServer) check(s *session, standalone bool, patterns []fifobackupengine.TablePattern,
	targetFor func(db, table string) tableimport.Target) error {
	if err := tableimport.Writable(s.ctx, l.db, standalone); err != nil {
		if errors.Is(err, tableimport.ErrReplica) {
			return flagvalue.Contradiction(err)
		}
		return unreadable.Error(err) // the server did not say (access)
	}
	if err := tableimport.RestoreSettings(s.ctx, l.db, s.logger); err != nil {
		if errors.Is(err, tableimport.ErrForeignRecord) {
			return flagvalue.Contradiction(err)
		}
		return err
	}
	var named []fifobackupengine.TableFiles
	for _, p := range patterns {
		if err := databaseExists(s.ctx, l.db, targetFor(p.DB, p.Table).DB); err != nil {
			return err
		}
		if p.Table != "*" {
			named = append(named, fifobackupengine.TableFiles{DB: p.DB, Table: p.Table})
		}
	}
	return targetsAbsent(s.ctx, l.db, named, targetFor)
}

// databaseExists refuses a target database the live server lacks: a
// restore creates tables, not databases.
func databaseExists(ctx context.Context, db *sql.DB, name string) error {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return flagvalue.Contradiction(fmt.Errorf("the live server has no database %s: nothing was downloaded or changed; create it (CREATE "+
			"DATABASE, through the binary log on a primary) or choose another (--as)", name))
	}
	return nil
}

// tabletIsPrimary refuses a tablet the topology says is not its shard's
// primary, when the topology flags name one; without them, Writable
// refuses a replica or read-only mysqld as Vitess keeps every tablet but
// the primary.
func (s *session) tabletIsPrimary(alias string) error {
	ts, where, err := s.openTopology()
	if err != nil || ts == nil {
		return err
	}
	defer ts.Close()
	a, err := topoproto.ParseTabletAlias(alias)
	if err != nil {
		return err
	}
	ti, err := ts.GetTablet(s.ctx, a)
	if err != nil {
		return unreadable.Error(fmt.Errorf("cannot read tablet %s in %s: %v", alias, where, err))
	}
	if ti.Type != topodatapb.TabletType_PRIMARY {
		return flagvalue.Contradiction(fmt.Errorf("tablet %s is a %s, not its shard's primary (%s): a restore writes to a primary only, whose "+
			"replicas get the table through the binary log; nothing was downloaded or changed", alias, strings.ToLower(ti.Type.String()), where))
	}
	return nil
}

// claim takes the backup's targets for this run (tableimport.Claim), once
// their names are known and before their frames are read: no target may
// exist, and what a stopped run for one left is dealt with
// (tableimport.Settle), each said; then the user's privileges are probed in
// each target database (tableimport.Probe).
func (l *liveServer) claim(s *session, tables []fifobackupengine.TableFiles, targetFor func(db, table string) tableimport.Target, f restoreTableFlags) error {
	resume, user := f.resume, f.user
	if l == nil {
		return nil
	}
	if err := targetsAbsent(s.ctx, l.db, tables, targetFor); err != nil {
		return err
	}
	targets := make([]tableimport.Target, len(tables))
	for i, t := range tables {
		targets[i] = targetFor(t.DB, t.Table)
	}
	release, err := tableimport.Claim(s.ctx, l.db, targets)
	if err != nil {
		return err
	}
	l.release = release
	for _, to := range targets {
		resumed, said, err := tableimport.Settle(s.ctx, l.db, to, resume)
		if err != nil {
			return err
		}
		l.resumed[to] = resumed
		if said != "" {
			fmt.Fprintf(s.o.notes, "restore-table: %s\n", said)
		}
	}
	probed := map[string]bool{}
	for _, to := range targets {
		if probed[to.DB] {
			continue
		}
		probed[to.DB] = true
		if err := tableimport.Probe(s.ctx, l.db, to.DB); err != nil {
			if errors.Is(err, tableimport.ErrNotAllowed) {
				return unreadable.Error(fmt.Errorf("as %s, in database %s: %w; %s", user, to.DB, err, probeMend(err)))
			}
			return err
		}
	}
	return nil
}

// targetsAbsent checks that no target of tables exists in the live server:
// a run of several tables (db.*) changes nothing when one is in the way.
func targetsAbsent(ctx context.Context, live *sql.DB, tables []fifobackupengine.TableFiles, targetFor func(db, table string) tableimport.Target) error {
	var in []string
	for _, t := range tables {
		to := targetFor(t.DB, t.Table)
		err := tableimport.Absent(ctx, live, to)
		if err == nil {
			err = tableimport.NoFilesOf(ctx, live, to)
		}
		switch {
		case errors.Is(err, tableimport.ErrFileInTheWay):
			return flagvalue.Contradiction(fmt.Errorf("%w: nothing was downloaded or changed", err))
		case errors.Is(err, tableimport.ErrExists):
			in = append(in, to.String())
		case err != nil:
			return err
		}
	}
	// The live server contradicts the request as it is made: a usage
	// error (exit 2), nothing judged, nothing changed.
	if len(in) > 0 {
		return flagvalue.Contradiction(fmt.Errorf("%s: %w: nothing was downloaded or changed; choose another name (--as) or drop them first",
			strings.Join(in, ", "), tableimport.ErrExists))
	}
	return nil
}

// probeMend is what mends a refusal Probe met: a privilege to grant the
// user, or else a server that refuses such changes whatever its user may
// do.
func probeMend(err error) string {
	if unreadable.RefusedToUser(err) {
		return `grant its user what it lacks (docs/table-restore.md, "Privileges")`
	}
	return "the server refuses it whatever its user may do (its state or settings: innodb_read_only, innodb_force_recovery, read_only, an " +
		"engine it lacks): import into a server that takes such changes, or restore the table's files only (leave out --into-*)"
}

// checkPageSize refuses, before anything is downloaded, a live server of
// another innodb_page_size than the backup's server's
// (fifobackupengine.CheckImportPageSize). A MANIFEST that does not parse
// is the restore's to judge.
func (l *liveServer) checkPageSize(s *session, bh backupstorage.BackupHandle) error {
	m, err := fifobackupengine.ParseManifest(s.manifestOf(bh))
	if err != nil {
		return nil
	}
	return fifobackupengine.CheckImportPageSize(s.ctx, tableimport.TextRows(l.db), m)
}

package vtfifocli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// session is a subcommand's parsed flags and open storage.
type session struct {
	o      *options
	ctx    context.Context
	bs     backupstorage.BackupStorage
	logger logutil.Logger
	close  func()
	// lease keeps rm and prune elsewhere off the backup being read.
	lease *splitstorage.Lease
	// manifest is the MANIFEST of the backup openBackup picked, as read
	// when it was picked (readsOnly): a restore takes it from here rather
	// than read it again.
	manifest manifestDoc
	// clockNote is the last note said about this host's clock (clock.go).
	clockNote string
}

// openSession parses args (the backup flags, plus the subcommand's own that
// extra declares, returning their check or nil), validates them and opens
// the storage. A nil session comes with the exit status; otherwise the
// caller calls close.
func openSession(ctx context.Context, prog string, args []string, stdout, stderr io.Writer,
	extra func(*pflag.FlagSet, *options) func() error) (*session, int) {
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	o := registerBackupFlags(fs, prog)
	o.console = &console{w: stderr}
	o.notes = o.console
	check := extra(fs, o)
	if code := parse(fs, prog, args, stdout, stderr); code >= 0 {
		return nil, code
	}
	err := o.files.apply(fs, prog, stderr)
	if err == nil {
		err = o.validateBackup()
	}
	if err == nil && check != nil {
		err = check()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", prog, errtext.Line(err))
		return nil, 2
	}
	ctx, cancel := o.withTimeout(ctx)
	bs, logger, err := o.openStorage(o.console)
	if err != nil {
		cancel()
		return nil, o.failf(exitUnreachable, "cannot open %s: %v", storageLocation(o), err)
	}
	s := &session{o: o, ctx: ctx, bs: bs, logger: logger, close: func() { bs.Close(); cancel() }}
	if code := s.checkRoot(bs); code >= 0 {
		s.close()
		return nil, code
	}
	return s, -1
}

// checkRoot refuses a storage whose root is provably not one of its own
// (exit 3, naming it): one level off, or another storage's. Nothing in it
// is listed, judged or removed. A root that could not be read is left to
// the command, which says what it could not read in its own words.
func (s *session) checkRoot(bs backupstorage.BackupStorage) int {
	rc, ok := has[rootChecker](bs)
	if !ok {
		return -1
	}
	if err := rc.CheckRoot(s.ctx); errors.Is(err, splitstorage.ErrNotSplitRoot) {
		return s.o.failf(exitUnreachable, "refused: %v", err)
	}
	return -1
}

// openBackup is openSession for the subcommands that read one fifo backup:
// it also picks the backup the flags name (pickBackup) and refuses another
// engine's (readsOnly). A nil session comes with the exit status; otherwise
// the caller calls close.
func openBackup(ctx context.Context, prog string, args []string, stdout, stderr io.Writer,
	extra func(*pflag.FlagSet, *options) func() error) (*session, backupstorage.BackupHandle, int) {
	return openBackupOf(ctx, fifoEngine, prog, args, stdout, stderr, extra)
}

// openBackupOf is openBackup for a command that reads the backups of
// engines (fifoEngine, or streamEngines).
func openBackupOf(ctx context.Context, engines []string, prog string, args []string, stdout, stderr io.Writer,
	extra func(*pflag.FlagSet, *options) func() error) (*session, backupstorage.BackupHandle, int) {
	s, bh, code := openAnyBackup(ctx, prog, args, stdout, stderr, extra)
	if s == nil {
		return nil, nil, code
	}
	if code := s.readsOnly(bh, engines); code >= 0 {
		s.close()
		return nil, nil, code
	}
	return s, bh, -1
}

// openAnyBackup is openBackup for a command that handles any engine's
// backup (copy of a legacy storage's).
func openAnyBackup(ctx context.Context, prog string, args []string, stdout, stderr io.Writer,
	extra func(*pflag.FlagSet, *options) func() error) (*session, backupstorage.BackupHandle, int) {
	s, code := openSession(ctx, prog, args, stdout, stderr, extra)
	if s == nil {
		return nil, nil, code
	}
	bh, code := s.o.pickBackup(s.ctx, s.bs)
	if bh == nil {
		s.close()
		return nil, nil, code
	}
	s.holdForReading(bh)
	return s, bh, -1
}

// The engines whose backups a command reads: fifo's alone, or also the
// stream of Vitess's xtrabackup engine (verify, test-restore, restore: an
// adopted fleet's older backups; fifobackupengine.ReadRestorable).
var (
	fifoEngine    = []string{"fifo"}
	streamEngines = []string{"fifo", "xtrabackup"}
)

// readsOnly refuses, with exitUsage and a line saying why, a backup
// another engine took (Vitess's builtin, say, listed through the split
// storage's legacy storage or in Vitess's own storage): the command reads
// the backups of engines only, and must never call such a backup damaged.
// -1: go on (a MANIFEST that cannot be read is the command's to report).
func (s *session) readsOnly(bh backupstorage.BackupHandle, engines []string) int {
	m, doc, err := fifobackupengine.ReadAnyManifest(s.ctx, bh)
	if err == nil {
		s.manifest = manifestDoc{backup: bh.Name(), doc: doc}
	}
	if err != nil || m.BackupMethod == "" || m.BackupMethod == "fifo" {
		return -1 // a MANIFEST naming no engine is the command's to judge
	}
	if slices.Contains(engines, m.BackupMethod) {
		var why fifobackupengine.NotRead
		if _, err := fifobackupengine.ParseRestorable(bh.Name(), doc); errors.As(err, &why) {
			return s.o.failf(exitUsage, "backup %s/%s was taken by Vitess's %s engine (in the %s storage): %s cannot read it: %s; Vitess restores it "+
				"with its own engine (--restore-from-backup)", bh.Directory(), bh.Name(), m.BackupMethod, s.origin(bh), s.o.prog, why)
		}
		return -1
	}
	return s.o.failf(exitUsage, "backup %s/%s was taken by Vitess's %s engine (in the %s storage): %s reads %s backups only; Vitess restores it "+
		"with its own engine (--restore-from-backup), and vtfifo rm, prune and ls handle it", bh.Directory(), bh.Name(), m.BackupMethod, s.origin(bh), s.o.prog,
		strings.Join(engines, " and "))
}

// openPeer opens the split storage cfg describes, beside the session's: a
// copy's destination, a repair's copy. The one place the CLI builds a
// storage itself (the session's own comes from Vitess's registry,
// openStorage).
func openPeer(cfg splitstorage.Config) (peerStorage, error) {
	st, err := splitstorage.New(cfg)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// manifestDoc is a backup's MANIFEST as stored.
type manifestDoc struct {
	backup string
	doc    []byte
}

// manifestOf is bh's MANIFEST where the session has read it, else nil
// (RestoreDirOptions.ManifestDoc: then it is read).
func (s *session) manifestOf(bh backupstorage.BackupHandle) []byte {
	if s.manifest.backup == bh.Name() {
		return s.manifest.doc
	}
	return nil
}

// readLeaseTTL bounds a read lease whose holder died without releasing it.
const readLeaseTTL = 24 * time.Hour

// holdForReading puts a read lease on bh (split storage) until the session
// closes, so that rm and prune elsewhere keep off it. A storage that takes
// no lease (read-only credentials) is said on stderr, not fatal.
func (s *session) holdForReading(bh backupstorage.BackupHandle) {
	st, ok := has[leaseHolder](s.bs)
	if !ok {
		return
	}
	lease, err := st.Hold(s.ctx, bh.Directory(), bh.Name(), s.o.prog, readLeaseTTL)
	if err != nil {
		s.o.notef("cannot hold backup %s/%s for reading (%s): rm and prune elsewhere are not kept off it", bh.Directory(), bh.Name(), errtext.Line(err))
		return
	}
	s.lease = lease
	closeSession := s.close
	s.close = func() {
		s.releaseLease()
		closeSession()
	}
}

// releaseLease ends the session's read lease, if it holds one (before it
// removes the backup itself: copy --remove-source).
func (s *session) releaseLease() {
	_ = s.lease.Release(s.ctx)
	s.lease = nil
}

// withTimeout applies --timeout to ctx.
func (o *options) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.timeout > 0 {
		return context.WithTimeout(ctx, o.timeout)
	}
	return context.WithCancel(ctx)
}

// openStorage opens the backup storage the flags name, logging to stderr.
// The split storage lists the backups copied or renamed by hand, which
// Vitess's listing leaves out: the commands say what each is.
func (o *options) openStorage(stderr io.Writer) (backupstorage.BackupStorage, logutil.Logger, error) {
	base, err := backupstorage.GetBackupStorage()
	if err != nil {
		return nil, nil, err
	}
	logger := o.log.logger(stderr)
	bs := base.WithParams(backupstorage.Params{Logger: logger, Stats: backupstats.NoStats()})
	if st, ok := bs.(*splitstorage.Storage); ok {
		bs = st.ListingCopies()
	}
	return bs, logger, nil
}

// shardBackups lists the complete backups of the shard the flags name, or
// fails (exitUnreachable, naming it) on a location that is not one: a root
// that does not exist, a listing that fails, a directory with no backup at
// all, complete or not (a wrong keyspace or shard, a root one level off).
// A shard whose backups are all incomplete lists none, and passes.
func (s *session) shardBackups() ([]backupstorage.BackupHandle, int) {
	bhs, code := s.o.listComplete(s.ctx, s.bs)
	if code != exitOK {
		return nil, code
	}
	if len(bhs) == 0 && s.holdsNothing(s.o.dir()) {
		return nil, s.o.failf(exitUnreachable, "no backups at all in %s: check --keyspace, --shard and the storage flags", s.o.where())
	}
	return bhs, exitOK
}

// holdsNothing reports whether dir has no backup at all, complete or not
// (a wrong keyspace or shard); false when it cannot tell.
func (s *session) holdsNothing(dir string) bool {
	sp, ok := has[incompleteLister](s.bs)
	if !ok {
		return false
	}
	inc, err := sp.ListIncomplete(s.ctx, dir)
	return err == nil && len(inc) == 0
}

// exists reports whether dir holds a backup named name, complete or not
// (true when it cannot tell: the caller's own error is then the one said).
func (s *session) exists(dir, name string) bool {
	bhs, err := s.bs.ListBackups(s.ctx, dir)
	if err != nil {
		return true
	}
	for _, bh := range bhs {
		if bh.Name() == name {
			return true
		}
	}
	sp, ok := has[incompleteLister](s.bs)
	if !ok {
		return true
	}
	inc, err := sp.ListIncomplete(s.ctx, dir)
	return err != nil || slices.ContainsFunc(inc, func(b splitstorage.IncompleteBackup) bool { return b.Name == name })
}

// noSuchBackup is why dir/name, which no listing holds, is no backup to
// take.
func noSuchBackup(ctx context.Context, bs backupstorage.BackupStorage, dir, name string) string {
	return cmp.Or(othersThere(ctx, bs, dir, name), "no such backup") + checkTheNames
}

// checkTheNames ends a line saying a named backup is not there.
const checkTheNames = ": check --backup, --keyspace and --shard"

// othersThere says what is there by a backup name that no listing holds
// where the storage knows: objects it did not write, which are left as
// they are (ownChecker); "" where there is nothing, or it cannot tell.
func othersThere(ctx context.Context, bs backupstorage.BackupStorage, dir, name string) string {
	if c, ok := has[ownChecker](bs); ok {
		if err := c.CheckOwn(ctx, dir, name); errors.Is(err, splitstorage.ErrNotOurs) {
			return err.Error()
		}
	}
	return ""
}

// fromLegacy reports whether bh is the legacy storage's, listed by the
// split storage beside its own.
func (s *session) fromLegacy(bh backupstorage.BackupHandle) bool {
	o, ok := has[originNamer](s.bs)
	return ok && o.Origin(bh) != splitstorage.Name
}

// origin names the storage bh is in (originNamer), else the one in use.
func (s *session) origin(bh backupstorage.BackupHandle) string {
	if o, ok := has[originNamer](s.bs); ok {
		return o.Origin(bh)
	}
	return backupstorage.BackupStorageImplementation
}

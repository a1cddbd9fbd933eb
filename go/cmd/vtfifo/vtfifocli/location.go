package vtfifocli

import (
	"slices"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// shardBackups lists the complete backups of the shard the flags name, or
// fails (exitUnreachable, naming it) on a location that is not one: a root
// that does not exist, a listing that fails, a directory with no backup at
// all, complete or not (a wrong keyspace or shard, a root one level off).
// A shard whose backups are all incomplete lists none, and passes.
func (s *session) shardBackups() ([]backupstorage.BackupHandle, int) {
	if root, missing := missingRoot(s.o); missing {
		return nil, s.o.failf(exitUnreachable, "the storage root %s does not exist: check the storage flags", root)
	}
	bhs, err := s.bs.ListBackups(s.ctx, s.o.dir())
	if err != nil {
		return nil, s.o.failf(exitUnreachable, "cannot list the backups of %s: %v", s.o.where(), err)
	}
	if len(bhs) == 0 && s.holdsNothing(s.o.dir()) {
		return nil, s.o.failf(exitUnreachable, "no backups at all in %s: check --keyspace, --shard and the storage flags", s.o.where())
	}
	return bhs, exitOK
}

// holdsNothing reports whether dir has no backup at all, complete or not
// (a wrong keyspace or shard); false when it cannot tell.
func (s *session) holdsNothing(dir string) bool {
	sp, ok := s.bs.(incompleteLister)
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
	sp, ok := s.bs.(incompleteLister)
	if !ok {
		return true
	}
	inc, err := sp.ListIncomplete(s.ctx, dir)
	return err != nil || slices.ContainsFunc(inc, func(b splitstorage.IncompleteBackup) bool { return b.Name == name })
}

// origin names the storage bh is in (originNamer), else the one in use.
// fromLegacy reports whether bh is the legacy storage's, listed by the
// split storage beside its own.
func (s *session) fromLegacy(bh backupstorage.BackupHandle) bool {
	o, ok := s.bs.(originNamer)
	return ok && o.Origin(bh) != splitstorage.Name
}

func (s *session) origin(bh backupstorage.BackupHandle) string {
	if o, ok := s.bs.(originNamer); ok {
		return o.Origin(bh)
	}
	return backupstorage.BackupStorageImplementation
}

package vtfifocli

import (
	"fmt"
	"strings"
)

// removalText says what a removal does (action: "removed", or "would
// remove" in a dry run); of a base of incremental backups, that it leaves
// the list while its objects stay for its dependents.
func removalText(action string, dependents []string) string {
	if len(dependents) == 0 {
		return action
	}
	return fmt.Sprintf("%s from the list (its objects stay as the base of %s, and go with the last of them):", action, strings.Join(dependents, ", "))
}

// removeBackup removes one backup and returns, for the base of incremental
// backups in the split storage, which ones: it left the list, and is kept
// until they go.
func removeBackup(s *session, dir, name string) ([]string, error) {
	sp, ok := has[guardedRemover](s.bs)
	if !ok {
		if err := onlyItsOwnFiles(dir, name); err != nil {
			return nil, err
		}
		return nil, s.bs.RemoveBackup(s.ctx, dir, name)
	}
	deps, err := sp.Dependents(s.ctx, dir, name)
	if err != nil {
		return nil, err
	}
	return deps, sp.RemoveUnread(s.ctx, dir, name) // never under a reader's lease
}

// checkRemovable is removeBackup's decision without the removal (a dry
// run): the same refusal of a backup under a read lease.
func checkRemovable(s *session, dir, name string) ([]string, error) {
	sp, ok := has[guardedRemover](s.bs)
	if !ok {
		return nil, onlyItsOwnFiles(dir, name)
	}
	deps, err := sp.Dependents(s.ctx, dir, name)
	if err != nil {
		return nil, err
	}
	return deps, sp.CheckUnread(s.ctx, dir, name)
}

package testrestore

import (
	"fmt"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/relver"
)

// A server older than the one that took the backup may refuse its data
// directory (MySQL 8: "Cannot boot server version 80036 on data directory
// built by version 80400. Downgrade is not supported"; MariaDB: a redo log
// format it does not know). Such a refusal is this host's server, not the
// backup: a throwaway server that exits at start, and is older than the
// backup's, is no verdict, and the error says which server to give.

// olderThanBackup says whether this host's server (its --version output:
// "/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server
// - GPL)", "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for
// debian-linux-gnu on x86_64 (Debian 12)") is older than the backup's (its
// MANIFEST's MySQLVersion, as Vitess records it, "Ver 8.0.36 ...", or as
// VERSION() says it, "8.0.36"); false when either cannot be read. The
// release is the one after "Ver ", not one in the binary's path.
func olderThanBackup(serverVersion, backupVersion string) bool {
	_, release, ok := strings.Cut(serverVersion, " Ver ")
	return ok && relver.Older(release, backupVersion)
}

// olderServer is err, a start that failed, marked as this host's where its
// server is older than the backup's.
func (s *server) olderServer(err error) error {
	if err == nil || !olderThanBackup(s.version, s.backupVersion) {
		return err
	}
	need := relver.Of(s.backupVersion)
	return flagvalue.Contradiction(fmt.Errorf("%w; %s is older than the server that took the backup (%s), and a server refuses data of a later "+
		"version: that is no proof about the backup; give a server of %s or later (--mysqld-path)", err, s.version, s.backupVersion, need))
}

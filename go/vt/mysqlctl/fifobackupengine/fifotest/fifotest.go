// Package fifotest re-exports, for tests outside go/ (test/reliability), the
// test helpers of go/internal that Go's internal-package rule keeps from
// them: a tablet mysqld started with Vitess's mysqlctl (tabletdb) and
// MariaDB sample data (mariadbtest). It adds nothing of its own.
package fifotest

import (
	"testing"

	"github.com/vtfifo/vtfifo/go/internal/mariadbtest"
	"github.com/vtfifo/vtfifo/go/internal/tabletdb"
)

type (
	// Tablet is tabletdb.Tablet.
	Tablet = tabletdb.Tablet
	// Server is mariadbtest.Server.
	Server = mariadbtest.Server
	// DataOptions is mariadbtest.Options.
	DataOptions = mariadbtest.Options
)

// StartTablet is tabletdb.Start.
func StartTablet(t testing.TB) *Tablet { return tabletdb.Start(t) }

// Attach is mariadbtest.Attach.
func Attach(t testing.TB, socket, dataDir, user, password string) *Server {
	return mariadbtest.Attach(t, socket, dataDir, user, password)
}

// LoadSampleData is mariadbtest.LoadSampleData.
func LoadSampleData(t testing.TB, srv *Server, o DataOptions) { mariadbtest.LoadSampleData(t, srv, o) }

// StandinPackage is the import path of the xtrabackup stand-in program
// (go/internal/xtrabackupstandin), for `go build`.
const StandinPackage = "github.com/vtfifo/vtfifo/go/internal/xtrabackupstandin"

package vtfifocli

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// The servers a table restore reaches besides the live one: the replicas
// its copy is paced by, and the throwaway server that reads the rows of
// tables whose files cannot be imported.

// openReplicas reaches each --replica (host:port, or a socket path) as
// user, before anything is downloaded.
func openReplicas(ctx context.Context, addrs []string, user string) ([]tableimport.Replica, error) {
	var out []tableimport.Replica
	for _, a := range addrs {
		c := mysql.NewConfig()
		c.User, c.Passwd, c.Net, c.Addr = user, os.Getenv("MYSQL_PWD"), "tcp", a
		// A socket is a path: absolute, or relative as a path on the
		// command line is (./mysql.sock, data/mysql.sock, mysql.sock).
		if strings.Contains(a, "/") || strings.HasSuffix(a, ".sock") {
			abs, err := filepath.Abs(a)
			if err != nil {
				return nil, err
			}
			c.Net, c.Addr = "unix", abs
		}
		db, err := sql.Open("mysql", c.FormatDSN())
		if err == nil {
			err = db.PingContext(ctx)
		}
		if err != nil {
			closeReplicas(out)
			return nil, unreadable.Error(fmt.Errorf("cannot reach the replica %s (--replica) as %s: %w", a, user, err))
		}
		out = append(out, tableimport.Replica{Name: a, DB: db})
	}
	return out, nil
}

func closeReplicas(rs []tableimport.Replica) {
	for _, r := range rs {
		r.DB.Close()
	}
}

// rowsSource is the throwaway server on the restored files that reads the
// rows of the tables loaded as rows; nil when there are none.
type rowsSource struct{ scratch *testrestore.Scratch }

// openRows starts it where a table is loaded as rows.
func openRows(s *session, dir string, restored restoredDefs, f restoreTableFlags) (*rowsSource, error) {
	if len(restored.rows) == 0 {
		return nil, nil
	}
	sc, err := testrestore.Open(s.ctx, dir, "the rows of the tables whose files cannot be imported", f.scratchOptions(s))
	if err != nil {
		return nil, fmt.Errorf("starting a throwaway server to read the rows of the tables whose files cannot be imported: %w", err)
	}
	return &rowsSource{scratch: sc}, nil
}

func (r *rowsSource) close() {
	if r != nil {
		r.scratch.Close()
	}
}

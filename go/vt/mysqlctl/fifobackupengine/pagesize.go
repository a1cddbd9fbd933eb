package fifobackupengine

import (
	"context"
	"strconv"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// innodbPageSize is a server's innodb_page_size, through query (every
// column as text).
func innodbPageSize(ctx context.Context, query func(context.Context, string) ([][]string, error)) (int64, error) {
	rows, err := query(ctx, "SELECT @@GLOBAL.innodb_page_size")
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return 0, errtext.Errorf(vtrpcpb.Code_INTERNAL, "innodb_page_size: %d rows", len(rows))
	}
	return strconv.ParseInt(rows[0][0], 10, 64)
}

// CheckImportPageSize refuses, before anything is downloaded, a table
// restore into a live server whose innodb_page_size is not the backup's
// server's: InnoDB imports a tablespace only into a server of its page
// size (it would refuse it at IMPORT TABLESPACE, error 1808), which is
// this request against that server, never the backup's damage. A backup
// that did not record its page size is not checked here. query runs a
// query on the live server, every column as text.
func CheckImportPageSize(ctx context.Context, query func(context.Context, string) ([][]string, error), m *Manifest) error {
	if m.InnoDBPageSize == 0 {
		return nil
	}
	live, err := innodbPageSize(ctx, query)
	if err != nil {
		return errtext.Wrapf(err, "reading the live server's innodb_page_size")
	}
	if live == m.InnoDBPageSize {
		return nil
	}
	return flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "the live server's innodb_page_size is %d, the backup's "+
		"server's %d: InnoDB imports a tablespace only into a server of its page size: nothing was downloaded; import into such a server, or "+
		"restore the table's files only (leave out --into-*)", live, m.InnoDBPageSize))
}

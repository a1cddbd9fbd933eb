package testrestore

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/mysqlfilename"
)

// checkPresent fails, naming them, when tables whose files the restored
// data directory holds are not tables of the server started on it: a table
// a restore brought back must be one the server sees, not only files
// (MariaDB: each table's .frm; MySQL 8: each file-per-table .ibd, one per
// partition). Names with encodings other than @XXXX are not checked.
func checkPresent(ctx context.Context, db *sql.DB, dataDir string, mariadb bool) error {
	want, err := tablesOnDisk(dataDir, mariadb)
	if err != nil {
		return err
	}
	have, err := serverTables(ctx, db)
	if err != nil {
		return err
	}
	var missing []string
	for _, t := range want {
		if !have[t[0]] && !have[strings.ToLower(t[0])] {
			missing = append(missing, fmt.Sprintf("%s (%s)", t[0], t[1]))
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("the restored files hold %d tables the server started on them does not have: %s", len(missing),
			strings.Join(missing[:min(len(missing), 10)], ", "))
	}
	return nil
}

var (
	partitionSuffix = regexp.MustCompile(`(?i)#p#.*$`)
	ftsAuxiliary    = regexp.MustCompile(`^fts_[0-9a-f]{16}_`)
)

// tablesOnDisk lists schema.table and the file that says so.
func tablesOnDisk(dataDir string, mariadb bool) ([][2]string, error) {
	dbs, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, err
	}
	ext := ".ibd"
	if mariadb {
		ext = ".frm"
	}
	seen := map[string]bool{}
	var out [][2]string
	for _, d := range dbs {
		if !d.IsDir() || strings.HasPrefix(d.Name(), "#") || d.Name() == "performance_schema" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dataDir, d.Name(), "*"+ext))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			base := partitionSuffix.ReplaceAllString(strings.TrimSuffix(filepath.Base(f), ext), "")
			if ftsAuxiliary.MatchString(base) || strings.HasPrefix(base, "#sql") || (mariadb && isView(f)) {
				continue
			}
			name := mysqlfilename.Decode(d.Name()) + "." + mysqlfilename.Decode(base)
			if !seen[name] {
				seen[name] = true
				out = append(out, [2]string{name, d.Name() + "/" + filepath.Base(f)})
			}
		}
	}
	return out, nil
}

// isView: a MariaDB view's .frm is text starting TYPE=VIEW.
func isView(frm string) bool {
	f, err := os.Open(frm)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 9)
	n, _ := f.Read(head)
	return bytes.Equal(head[:n], []byte("TYPE=VIEW"))
}

// serverTables is every table the server knows, schema.table.
func serverTables(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES")
	if err != nil {
		return nil, fmt.Errorf("listing the tables: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var s, t string
		if err := rows.Scan(&s, &t); err != nil {
			return nil, err
		}
		out[s+"."+t] = true
	}
	return out, rows.Err()
}

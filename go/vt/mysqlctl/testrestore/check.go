package testrestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"vitess.io/vitess/go/sqlescape"
	"vitess.io/vitess/go/vt/logutil"
)

// checkTables runs CHECK TABLE and counts the rows of every table.
func checkTables(ctx context.Context, db *sql.DB, workers int, rec *Record, logger logutil.Logger) error {
	rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "+
		"WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema') "+
		"ORDER BY TABLE_SCHEMA, TABLE_NAME")
	if err != nil {
		return fmt.Errorf("listing the tables: %w", err)
	}
	var tables []string
	for rows.Next() {
		var schema, name string
		if err := rows.Scan(&schema, &name); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, sqlescape.EscapeID(schema)+"."+sqlescape.EscapeID(name))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("listing the tables: %w", err)
	}
	logger.Infof("test restore: checking %d tables", len(tables))

	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	ch := make(chan string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				ok, checked, n, err := checkTable(ctx, db, t)
				mu.Lock()
				switch {
				case err != nil:
					rec.TablesFailed = append(rec.TablesFailed, err.Error())
				case !ok:
					rec.TablesFailed = append(rec.TablesFailed, t)
				}
				rec.Tables++
				if !checked {
					rec.Uncheckable++
				}
				rec.Rows += n
				mu.Unlock()
			}
		}()
	}
	for _, t := range tables {
		select {
		case ch <- t:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(ch)
	wg.Wait()
	sort.Strings(rec.TablesFailed)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case len(rec.TablesFailed) > 0 && slices.ContainsFunc(rec.TablesFailed, lacksEngine):
		// The server, not the backup: an engine loaded at the source by
		// an option (plugin_load_add) rather than mysql.plugin.
		return couldNotRun(fmt.Errorf("the throwaway server lacks a storage engine the backup's tables use: %s: load it with --mysqld-flags "+
			"(--plugin-load-add=...); nothing says the backup is damaged", strings.Join(first(filter(rec.TablesFailed, lacksEngine), 10), ", ")))
	case len(rec.TablesFailed) > 0:
		return fmt.Errorf("CHECK TABLE failed on %d of %d tables: %s", len(rec.TablesFailed), len(tables), strings.Join(first(rec.TablesFailed, 10), ", "))
	case len(tables) == 0:
		return errors.New("the restored server has no table at all")
	}
	return nil
}

// lacksEngine says whether a table's failure is the server's missing
// storage engine (ER_UNKNOWN_STORAGE_ENGINE).
func lacksEngine(failure string) bool { return strings.Contains(failure, "Unknown storage engine") }

func filter(s []string, keep func(string) bool) []string {
	var out []string
	for _, v := range s {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// checkTable runs CHECK TABLE (ok: no error and a final status OK; checked:
// the engine supports it) and counts the table's rows.
func checkTable(ctx context.Context, db *sql.DB, table string) (ok, checked bool, n int64, err error) {
	rows, err := db.QueryContext(ctx, "CHECK TABLE "+table)
	if err != nil {
		return false, false, 0, fmt.Errorf("CHECK TABLE %s: %w", table, err)
	}
	ok, checked = true, true
	status := ""
	for rows.Next() {
		var tbl, op, typ, text sql.NullString
		if err := rows.Scan(&tbl, &op, &typ, &text); err != nil {
			rows.Close()
			return false, false, 0, fmt.Errorf("CHECK TABLE %s: %w", table, err)
		}
		switch strings.ToLower(typ.String) {
		case "error":
			ok = false
			if lacksEngine(text.String) {
				rows.Close()
				return false, false, 0, fmt.Errorf("CHECK TABLE %s: %s", table, text.String)
			}
		case "note":
			if strings.Contains(text.String, "doesn't support check") {
				checked = false
			}
		case "status":
			status = text.String
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, false, 0, fmt.Errorf("CHECK TABLE %s: %w", table, err)
	}
	if checked && status != "OK" && status != "Table is already up to date" {
		ok = false
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		return false, checked, 0, fmt.Errorf("counting the rows of %s: %w", table, err)
	}
	return ok, checked, n, nil
}

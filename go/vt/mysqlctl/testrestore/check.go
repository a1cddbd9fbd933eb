package testrestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"vitess.io/vitess/go/sqlescape"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
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
		mu         sync.Mutex
		wg         sync.WaitGroup
		hostFault  error // the first table this host failed to check
		hostFailed int   // the tables this host failed to check
	)
	ch := make(chan string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				r := checkTable(ctx, db, t)
				mu.Lock()
				rec.Tables++
				switch {
				case r.err != nil:
					if unreadable.Is(r.err) {
						hostFault = cmp.Or(hostFault, r.err)
						hostFailed++
					}
					rec.TablesFailed = append(rec.TablesFailed, r.err.Error())
				case r.rebuild != "":
					rec.NeedsRebuild = append(rec.NeedsRebuild, t+": "+r.rebuild)
				case !r.ok:
					rec.TablesFailed = append(rec.TablesFailed, t)
				}
				if !r.checked {
					rec.Uncheckable++
				}
				rec.Rows += r.rows
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
	sort.Strings(rec.NeedsRebuild)
	if len(rec.NeedsRebuild) > 0 {
		logger.Warningf("test restore: %d tables need a rebuild or upgrade on this server before it reads them (a format of an older server, "+
			"kept as the source had it; not damage): %s", len(rec.NeedsRebuild), strings.Join(first(rec.NeedsRebuild, 10), "; "))
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case hostFault != nil:
		// This host, not the backup, failed a check: what the other tables
		// said is no verdict either (the same shortage may have caused it).
		return fmt.Errorf("CHECK TABLE could not be run on %d of %d tables here (%d failed in all): %w", hostFailed, len(tables),
			len(rec.TablesFailed), hostFault)
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

// tableCheck is one table's CHECK TABLE and row count.
type tableCheck struct {
	ok      bool  // no error, and a final status OK
	checked bool  // the engine supports CHECK
	rows    int64 // counted
	// rebuild is the server's refusal to check or read the table before it
	// is rebuilt or upgraded (ER_TABLE_NEEDS_REBUILD, ER_TABLE_NEEDS_UPGRADE):
	// the format of an older server, which the backup keeps as its source
	// had it, or this server newer than the source's. No damage: neither
	// checked nor counted.
	rebuild string
	err     error
}

// needsRebuild matches those refusals, as CHECK TABLE's Msg_text and a
// query's error say them: MySQL 8's "Table upgrade required. Please do
// \"REPAIR TABLE `t`\"...", MariaDB's "Upgrade required. Please do \"REPAIR
// TABLE `t`\"...", and both servers' "Table rebuild required. Please do
// \"ALTER TABLE `t` FORCE\"...".
var needsRebuild = regexp.MustCompile(`(?i)\b(upgrade|rebuild) required\. Please do`)

// checkTable runs CHECK TABLE and counts the table's rows.
func checkTable(ctx context.Context, db *sql.DB, table string) tableCheck {
	rows, err := db.QueryContext(ctx, "CHECK TABLE "+table)
	if err != nil {
		return tableCheck{err: unreadable.InText(fmt.Errorf("CHECK TABLE %s: %w", table, err))}
	}
	r := tableCheck{ok: true, checked: true}
	status := ""
	for rows.Next() {
		var tbl, op, typ, text sql.NullString
		if err := rows.Scan(&tbl, &op, &typ, &text); err != nil {
			rows.Close()
			return tableCheck{err: unreadable.InText(fmt.Errorf("CHECK TABLE %s: %w", table, err))}
		}
		switch strings.ToLower(typ.String) {
		case "error":
			r.ok = false
			switch {
			case lacksEngine(text.String):
				rows.Close()
				return tableCheck{err: fmt.Errorf("CHECK TABLE %s: %s", table, text.String)}
			case unreadable.InOutput(text.String) != "":
				rows.Close()
				return tableCheck{err: unreadable.InText(fmt.Errorf("CHECK TABLE %s: %s", table, text.String))}
			case needsRebuild.MatchString(text.String):
				r.rebuild = text.String
			}
		case "note":
			if strings.Contains(text.String, "doesn't support check") {
				r.checked = false
			}
		case "status":
			status = text.String
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return tableCheck{err: unreadable.InText(fmt.Errorf("CHECK TABLE %s: %w", table, err))}
	}
	if r.rebuild != "" {
		return tableCheck{checked: true, rebuild: r.rebuild}
	}
	if r.checked && status != "OK" && status != "Table is already up to date" {
		r.ok = false
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&r.rows); err != nil {
		if needsRebuild.MatchString(err.Error()) {
			return tableCheck{checked: true, rebuild: err.Error()}
		}
		return tableCheck{checked: r.checked, err: unreadable.InText(fmt.Errorf("counting the rows of %s: %w", table, err))}
	}
	return r
}

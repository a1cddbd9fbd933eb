package testrestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// The throwaway server runs --skip-grant-tables, which also skips the
// plugins the source server installed with INSTALL PLUGIN / INSTALL SONAME
// (mysql.plugin): MariaDB's sql/mysqld.cc passes PLUGIN_INIT_SKIP_PLUGIN_TABLE
// to plugin_init when opt_noacl, MySQL 8's init_server_components to
// plugin_register_dynamic_and_init_all (read in their sources; run here on
// MariaDB only, docs/compatibility.md). And it never reads the source's
// option files, where plugin_load_add loads others. A table of a storage
// engine such as ARCHIVE or BLACKHOLE, a plugin on Debian's MariaDB, then
// fails CHECK TABLE with "Unknown storage engine", which says nothing about
// the backup. The server loads what the backup's own mysql.plugin lists and
// the storage engines its MANIFEST records as loaded
// (fifobackupengine.ServerPlugin), as the source did; a library this host
// lacks is a run that could not be made here, never a verdict.

// startLoaded starts the server, and when the backup's server had plugins
// it has not loaded, starts it again with each one (--plugin-load-add),
// once the host is known to have their libraries. It returns the arguments
// of its last start, also where that failed.
func (s *server) startLoaded(ctx context.Context, args []string, recorded []fifobackupengine.ServerPlugin, timeout time.Duration) (*sql.DB, []string, error) {
	db, args, err := s.startMatched(ctx, args, timeout)
	if err != nil {
		return nil, args, s.olderServer(err)
	}
	load, err := missingPlugins(ctx, db, recorded)
	if err != nil {
		// The server is stopped before the error leaves: whoever gets it
		// has no server to stop.
		err = s.lost(err)
		db.Close()
		s.stop()
		return nil, args, err
	}
	if len(load) == 0 {
		return db, args, nil
	}
	db.Close()
	s.stop()
	for _, p := range load {
		args = append(args, "--plugin-load-add="+p.name+"="+p.library)
	}
	s.logger.Infof("test restore: restarting %s with the plugins the backup's server loaded: %s", s.bin, pluginNames(load))
	db, err = s.start(ctx, args, timeout)
	return db, args, err
}

type plugin struct{ name, library string }

func pluginNames(ps []plugin) string {
	var names []string
	for _, p := range ps {
		names = append(names, p.name+" ("+p.library+")")
	}
	return strings.Join(names, ", ")
}

// missingPlugins lists the plugins the running server has not loaded: those
// of the backup's mysql.plugin and the storage engines of recorded, each
// library checked in its plugin directory: one this host lacks is an error
// that marks the run as one that could not be made here.
func missingPlugins(ctx context.Context, db *sql.DB, recorded []fifobackupengine.ServerPlugin) ([]plugin, error) {
	wanted, err := installedPlugins(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, p := range recorded {
		if p.StorageEngine() {
			wanted = append(wanted, plugin{name: p.Name, library: p.Library})
		}
	}
	active, err := activePlugins(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []plugin
	for _, p := range wanted {
		if !active[strings.ToUpper(p.name)] {
			active[strings.ToUpper(p.name)] = true // once
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	var dir string
	if err := db.QueryRowContext(ctx, "SELECT @@plugin_dir").Scan(&dir); err != nil {
		return nil, fmt.Errorf("SELECT @@plugin_dir: %w", err)
	}
	var lacking []string
	for _, p := range out {
		if !libraryIn(dir, p.library) {
			lacking = append(lacking, p.name+" ("+p.library+")")
		}
	}
	if len(lacking) > 0 {
		return nil, couldNotRun(fmt.Errorf("the backup's server loads plugins this host does not have in its plugin directory %s: %s: install them "+
			"(the server package's plugins) to test this backup here; nothing says the backup is damaged", dir, strings.Join(lacking, ", ")))
	}
	return out, nil
}

// installedPlugins reads the backup's mysql.plugin. A backup without it (a
// copy of the dictionary alone) has none.
func installedPlugins(ctx context.Context, db *sql.DB) ([]plugin, error) {
	rows, err := db.QueryContext(ctx, "SELECT name, dl FROM mysql.plugin ORDER BY name")
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == erNoSuchTable {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the backup's mysql.plugin: %w", err)
	}
	defer rows.Close()
	var out []plugin
	for rows.Next() {
		var p plugin
		if err := rows.Scan(&p.name, &p.library); err != nil {
			return nil, fmt.Errorf("reading the backup's mysql.plugin: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// activePlugins are the running server's, by upper-case name.
func activePlugins(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT UPPER(PLUGIN_NAME) FROM information_schema.PLUGINS WHERE PLUGIN_STATUS = 'ACTIVE'")
	if err != nil {
		return nil, fmt.Errorf("reading the throwaway server's plugins: %w", err)
	}
	defer rows.Close()
	active := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("reading the throwaway server's plugins: %w", err)
		}
		active[name] = true
	}
	return active, rows.Err()
}

// erNoSuchTable is ER_NO_SUCH_TABLE.
const erNoSuchTable = 1146

// libraryIn says whether the plugin library is in dir, as the server looks
// for it (the platform's extension added when the name has none).
func libraryIn(dir, library string) bool {
	if strings.ContainsAny(library, "/\\") {
		return false // the server refuses a path too
	}
	for _, name := range []string{library, library + ".so"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

package fifobackupengine

import (
	"context"
	"strings"
)

// A server loads plugins from libraries two ways: those installed with
// INSTALL PLUGIN / INSTALL SONAME, listed in mysql.plugin and so in the
// backup; and those an option loads (plugin_load_add, plugin_load,
// early-plugin-load), which live in the host's option files, not in the
// backup. A server started on the backup elsewhere (a test restore,
// restore-table's scratch server) needs the storage engines among both, or
// its tables fail as "Unknown storage engine", which says nothing about the
// backup. The MANIFEST records what was loaded at the start of the backup.

// ServerPlugin is a plugin the server had loaded from a library.
type ServerPlugin struct {
	Name    string // PLUGIN_NAME
	Library string // PLUGIN_LIBRARY, such as ha_archive.so
	Type    string // PLUGIN_TYPE, such as STORAGE ENGINE
}

// StorageEngine says whether a table can need the plugin to be opened.
func (p ServerPlugin) StorageEngine() bool { return strings.EqualFold(p.Type, "STORAGE ENGINE") }

// serverPlugins lists the active plugins loaded from a library
// (information_schema.PLUGINS; a built-in one has no PLUGIN_LIBRARY). Run
// here on MariaDB 10.11 only; MySQL 8.0/8.4 have the same table and
// columns (MySQL Reference Manual, "The INFORMATION_SCHEMA PLUGINS Table";
// mysql-server sql/sql_show.cc, fill_plugins), written from those, not run.
func serverPlugins(ctx context.Context, query func(context.Context, string) ([][]string, error)) ([]ServerPlugin, error) {
	rows, err := query(ctx, "SELECT PLUGIN_NAME, PLUGIN_LIBRARY, PLUGIN_TYPE FROM information_schema.PLUGINS "+
		"WHERE PLUGIN_STATUS = 'ACTIVE' AND PLUGIN_LIBRARY IS NOT NULL ORDER BY PLUGIN_NAME")
	if err != nil {
		return nil, err
	}
	var out []ServerPlugin
	for _, r := range rows {
		if len(r) == 3 && r[0] != "" && r[1] != "" {
			out = append(out, ServerPlugin{Name: r[0], Library: r[1], Type: r[2]})
		}
	}
	return out, nil
}

// Package vtusers gives Vitess's database users the names its flags would,
// for a process that parses no Vitess flags (vtfifo selftest, a test's
// tablet).
package vtusers

import "vitess.io/vitess/go/vt/dbconfigs"

// UseDefaults names every user that has no name yet as Vitess's flags would.
func UseDefaults() {
	for _, u := range []struct {
		cfg  *dbconfigs.UserConfig
		name string
	}{
		{&dbconfigs.GlobalDBConfigs.Dba, "vt_dba"},
		{&dbconfigs.GlobalDBConfigs.App, "vt_app"},
		{&dbconfigs.GlobalDBConfigs.Allprivs, "vt_allprivs"},
		{&dbconfigs.GlobalDBConfigs.Repl, "vt_repl"},
		{&dbconfigs.GlobalDBConfigs.Filtered, "vt_filtered"},
	} {
		if u.cfg.User == "" {
			u.cfg.User = u.name
		}
	}
}

// Package vtversion says which Vitess a binary is built against, so that no
// file but go.mod names it.
package vtversion

import (
	"runtime/debug"
	"strings"

	"vitess.io/vitess/go/vt/servenv"
)

// Module is the vitess.io/vitess module version of this build ("v0.24.4"):
// as the Go build records it, or, in a test binary (which records no
// modules), from Vitess's own version ("24.0.4").
func Module() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "vitess.io/vitess" {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	major, rest, _ := strings.Cut(servenv.AppVersion.ToStringMap()["version"], ".")
	return "v0." + major + "." + strings.TrimPrefix(rest, "0.")
}

// plugin is this project's version, set when the binaries are linked
// (Makefile: -X ...vtversion.plugin=$(git describe)); empty otherwise.
var plugin string

// Plugin is this project's version: the one the build was stamped with,
// else the module's, else "devel".
func Plugin() string {
	if plugin != "" {
		return plugin
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

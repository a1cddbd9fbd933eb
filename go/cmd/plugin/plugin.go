// Package plugin links backup plugins into Vitess's stock cobra commands: their flags go
// into the command's flag set (so they show in --help and are parsed with the others), and
// their flag validation runs right after Vitess's own PreRunE, so a bad value stops the
// process at startup instead of at the first backup.
package plugin

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Plugin is what a plugin package exports for the mains.
type Plugin struct {
	Name          string                  // e.g. "fifo" (engine) or "split" (storage)
	RegisterFlags func(fs *pflag.FlagSet) // adds the plugin's flags to fs
	ValidateFlags func() error            // checks the parsed values; nil if none
	// InUse reports, after flag parsing, whether the process is configured to use the
	// plugin; ValidateFlags runs only then. nil means always. A storage that is not the
	// --backup-storage-implementation must not stop a process whose own flags are fine.
	InUse func() bool
	// UseFlagSet, if set, is given the command's own flag set, so the plugin
	// can read Vitess flags it shares (e.g. --compression-level) whichever
	// flag set it registered into.
	UseFlagSet func(fs *pflag.FlagSet)
}

// Install adds the plugins' flags to cmd.Flags() and wraps cmd.PreRunE to validate them.
// A flag the command already has (for example because the plugin also registered it with
// servenv.OnParseFor and the cli package copied it in) is left as it is.
func Install(cmd *cobra.Command, plugins ...Plugin) {
	for _, p := range plugins {
		if p.RegisterFlags != nil {
			fs := pflag.NewFlagSet(p.Name, pflag.ContinueOnError)
			p.RegisterFlags(fs)
			fs.VisitAll(func(f *pflag.Flag) {
				if cmd.Flags().Lookup(f.Name) == nil {
					cmd.Flags().AddFlag(f)
				}
			})
		}
		if p.UseFlagSet != nil {
			p.UseFlagSet(cmd.Flags())
		}
	}
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(c, args); err != nil {
				return err
			}
		}
		for _, p := range plugins {
			if p.ValidateFlags == nil || p.InUse != nil && !p.InUse() {
				continue
			}
			if err := p.ValidateFlags(); err != nil {
				return fmt.Errorf("invalid %s plugin flags: %w", p.Name, err)
			}
		}
		return nil
	}
}

// FlagNames lists the flags the plugins register (without the leading dashes).
func FlagNames(plugins ...Plugin) []string {
	var names []string
	for _, p := range plugins {
		if p.RegisterFlags == nil {
			continue
		}
		fs := pflag.NewFlagSet(p.Name, pflag.ContinueOnError)
		p.RegisterFlags(fs)
		fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	}
	return names
}

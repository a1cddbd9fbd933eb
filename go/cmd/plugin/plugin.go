// Package plugin links backup plugins into Vitess's stock cobra commands: their flags are
// declared in the command's own flag set (so they show in --help and are parsed with the
// others), and their validation runs right after Vitess's own PreRunE, so a bad value stops
// the process at startup instead of at the first backup. It is the one way the plugins'
// flags reach a Vitess binary.
package plugin

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Plugin is what a plugin package exports for the mains: two functions, both given the
// command's own flag set.
type Plugin struct {
	Name string // e.g. "fifo" (engine) or "split" (storage)
	// RegisterFlags declares the plugin's flags in fs.
	RegisterFlags func(fs *pflag.FlagSet)
	// ValidateFlags checks the parsed values; it reads from fs the Vitess flags it depends
	// on (e.g. --backup-engine-implementation), and decides itself whether the process
	// uses the plugin. nil if none.
	ValidateFlags func(fs *pflag.FlagSet) error
}

// Install declares the plugins' flags in cmd.Flags() and wraps cmd.PreRunE to validate
// them. A plugin flag with the name of one the command has is a programming error: pflag
// panics, naming it.
func Install(cmd *cobra.Command, plugins ...Plugin) {
	for _, p := range plugins {
		if p.RegisterFlags != nil {
			p.RegisterFlags(cmd.Flags())
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
			if p.ValidateFlags == nil {
				continue
			}
			if err := p.ValidateFlags(c.Flags()); err != nil {
				return fmt.Errorf("invalid %s plugin flags: %w", p.Name, err)
			}
		}
		return nil
	}
}

// FlagNames lists the flags the plugins declare (without the leading dashes).
func FlagNames(plugins ...Plugin) []string {
	var names []string
	fs := pflag.NewFlagSet("names", pflag.ContinueOnError)
	for _, p := range plugins {
		if p.RegisterFlags != nil {
			p.RegisterFlags(fs)
		}
	}
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

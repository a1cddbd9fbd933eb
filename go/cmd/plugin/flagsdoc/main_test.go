package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/engines"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/plugintest"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/storages"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/testrestoreplugin"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// TestEveryConstrainedFlagIsDocumented: every plugin flag either records
// its allowed values where it is declared (what docs/flags.md prints), or
// is one the bad-flags table calls free; and the errors the table expects
// for a bad value name the same text the declaration records.
func TestEveryConstrainedFlagIsDocumented(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	for _, p := range append(append(slices.Clone(engines.All), storages.All...), []plugin.Plugin{testrestoreplugin.Plugin}...) {
		p.RegisterFlags(fs)
	}
	documented := flagvalue.Documented()
	table := map[string]plugintest.Flag{}
	for _, f := range plugintest.All() {
		table[f.Name] = f
	}
	fs.VisitAll(func(f *pflag.Flag) {
		allowed, ok := documented[f.Name]
		row, inTable := table[f.Name]
		switch {
		case inTable && row.Free != "":
			return
		case !ok:
			t.Errorf("--%s records no allowed values (flagvalue.Document) and the bad-flags table does not call it free", f.Name)
		case inTable && row.Allowed != "" && !strings.Contains(allowed, row.Allowed) && !strings.Contains(row.Allowed, allowed):
			assert.Failf(t, "the flag's errors and its documentation differ", "--%s: declared %q, errors name %q", f.Name, allowed, row.Allowed)
		}
	})
}

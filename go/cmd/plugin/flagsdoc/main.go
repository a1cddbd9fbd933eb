// Command flagsdoc prints the allowed values of every plugin flag as the
// flags' declarations record them (flagvalue.Document), one
// "--name<TAB>allowed" line each, sorted: scripts/gen-flags-doc.sh puts
// them in docs/flags.md, so the reference, the help and the errors say the
// same.
package main

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/engines"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/storages"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/testrestoreplugin"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

func main() {
	fs := pflag.NewFlagSet("flagsdoc", pflag.ContinueOnError)
	for _, p := range append(append(slices.Clone(engines.All), storages.All...), []plugin.Plugin{testrestoreplugin.Plugin}...) {
		p.RegisterFlags(fs)
	}
	allowed := flagvalue.Documented()
	names := make([]string, 0, len(allowed))
	for n := range allowed {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Printf("--%s\t%s\n", n, allowed[n])
	}
}

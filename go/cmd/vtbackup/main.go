// Command vtbackup is Vitess's stock vtbackup with the fifo backup engine and the
// split backup storage linked in.
package main

import (
	"fmt"

	"vitess.io/vitess/go/cmd/vtbackup/cli"
	"vitess.io/vitess/go/exit"
	"vitess.io/vitess/go/vt/log"
	"vitess.io/vitess/go/vt/utils"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/engines"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/storages"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/testrestoreplugin"
)

func main() {
	defer exit.Recover()
	plugin.Install(cli.Main, append(append([]plugin.Plugin{testrestoreplugin.Plugin}, engines.All...), storages.All...)...)
	testrestoreplugin.Wrap(cli.Main)
	cli.Main.SetGlobalNormalizationFunc(utils.NormalizeUnderscoresToDashes)
	if err := cli.Main.Execute(); err != nil {
		log.Error(fmt.Sprint(err))
		exit.Return(1)
	}
}

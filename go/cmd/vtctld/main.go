// Command vtctld is Vitess's stock vtctld with the fifo backup engine and the split
// backup storage linked in.
package main

import (
	"fmt"
	"os"

	"vitess.io/vitess/go/cmd/vtctld/cli"
	"vitess.io/vitess/go/vt/log"
	"vitess.io/vitess/go/vt/utils"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/storages"
)

func main() {
	plugin.Install(cli.Main, storages.All...)
	cli.Main.SetGlobalNormalizationFunc(utils.NormalizeUnderscoresToDashes)
	if err := cli.Main.Execute(); err != nil {
		log.Error(fmt.Sprint(err))
		os.Exit(1)
	}
}

// Command vtbackup is Vitess's stock vtbackup with the fifo backup engine and the
// split backup storage linked in.
package main

import (
	"fmt"

	"vitess.io/vitess/go/cmd/vtbackup/cli"
	"vitess.io/vitess/go/exit"
	"vitess.io/vitess/go/vt/log"
	"vitess.io/vitess/go/vt/utils"
)

func main() {
	defer exit.Recover()
	cli.Main.SetGlobalNormalizationFunc(utils.NormalizeUnderscoresToDashes)
	if err := cli.Main.Execute(); err != nil {
		log.Error(fmt.Sprint(err))
		exit.Return(1)
	}
}

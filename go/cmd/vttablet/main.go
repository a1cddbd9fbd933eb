// Command vttablet is Vitess's stock vttablet with the fifo backup engine and the split
// backup storage linked in.
package main

import (
	"fmt"
	"os"

	"vitess.io/vitess/go/cmd/vttablet/cli"
	"vitess.io/vitess/go/vt/log"
	"vitess.io/vitess/go/vt/utils"
)

func main() {
	cli.Main.SetGlobalNormalizationFunc(utils.NormalizeUnderscoresToDashes)
	if err := cli.Main.Execute(); err != nil {
		log.Error(fmt.Sprint(err))
		os.Exit(1)
	}
}

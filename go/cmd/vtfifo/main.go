// Command vtfifo is the operator's command line for fifo backups: verify and
// export backups where they are stored, through the same storage flags as
// vttablet, without a Vitess cluster (see docs/operations.md).
package main

import (
	"context"
	"os"

	"github.com/vtfifo/vtfifo/go/cmd/vtfifo/vtfifocli"
)

func main() {
	vtfifocli.Run(func(ctx context.Context) int { return vtfifocli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

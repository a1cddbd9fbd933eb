// Command fifoverify checks a fifo backup where it is stored, without
// restoring it and without touching a database: it reads the backup through
// the same storage flags as vttablet, checks every part's size and checksum
// (split storage), decompresses every lane, parses every xbstream chunk and
// its CRC32, and reports OK or exactly what is wrong (backup, file, part,
// offset). It exits 0 when the backup is good, 1 when it is damaged or cannot
// be read, 2 on a usage error.
//
//	fifoverify --backup-storage-implementation=split --split-storage-backend=s3 ... \
//	    --keyspace=commerce --shard=0 [--backup=NAME] [--sample=5%]
//
// With --list-incomplete or --remove-incomplete it lists, or removes, the
// backups that were started and never completed (a killed backup leaves
// one); see docs/reliability.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: the tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("fifoverify", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o := registerFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: fifoverify [flags]\n\nChecks a fifo backup in its storage without restoring it (see docs/reliability.md).\nExit status: 0 OK, 1 damaged or unreadable, 2 usage error.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "fifoverify: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "fifoverify: %v\n", err)
		return 2
	}
	return o.run(ctx, stdout, stderr)
}

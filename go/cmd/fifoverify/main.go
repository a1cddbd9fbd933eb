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
// one); see docs/reliability.md. It is `vtfifo verify` under its first name:
// one code path (go/cmd/vtfifo/vtfifocli).
package main

import (
	"context"
	"os"

	"github.com/vtfifo/vtfifo/go/cmd/vtfifo/vtfifocli"
)

func main() {
	vtfifocli.Run(func(ctx context.Context) int {
		return vtfifocli.Verify(ctx, "fifoverify", os.Args[1:], os.Stdout, os.Stderr)
	})
}

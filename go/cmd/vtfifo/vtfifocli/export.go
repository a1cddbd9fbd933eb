package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// exportDoc is `vtfifo export`'s help.
var exportDoc = commandDoc{"export", "Write a backup as one stock xbstream (for xbstream -x / mbstream -x)",
	"Writes the backup's lanes merged back into one standard xbstream, which Percona's `xbstream -x` or\n" +
		"MariaDB's `mbstream -x` extract into the tool's files; then `xtrabackup --prepare` (or mariabackup's)\n" +
		"makes a data directory. Every chunk's CRC32 and every lane's length are checked on the way.\n" +
		"Refuses to write to a terminal.",
	"  vtfifo export --backup-storage-implementation=split --split-storage-root=/backups \\\n" +
		"      --keyspace=commerce --shard=0 -o - | mbstream -x -C /restore/datadir"}

// Export is `vtfifo export`: the backup as one stock xbstream on stdout or
// in a new file (never over an existing one; removed if the export fails).
func Export(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var output *string
	s, bh, code := openBackup(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			output = fs.StringP("output", "o", "-", "where the stream goes: - (stdout, not a terminal) or a file that does not exist yet")
			o.registerProgressFlags(fs)
			return func() error {
				if *output == "-" && isTerminal(stdout) {
					return errors.New("refusing to write a binary stream to a terminal: give -o FILE, or redirect or pipe stdout")
				}
				return o.validateProgress()
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	var w io.Writer = stdout
	var file *os.File
	var err error
	if *output != "-" {
		if file, err = os.OpenFile(*output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640); err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", prog, errText(err))
			return 2
		}
		w = file
	}
	p := newProgress(s.o, stderr, prog+" "+s.o.dir()+"/"+bh.Name())
	n, err := fifobackupengine.Export(s.ctx, bh, w, fifobackupengine.ExportOptions{Compression: fifobackupengine.CompressionFromFlags(s.o.flags),
		OnManifest: p.setLanes, OnRead: p.addLane, Logger: s.logger})
	p.stop()
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(*output)
		}
	}
	if err != nil {
		return s.fail(err)
	}
	fmt.Fprintf(stderr, "%s: wrote %d bytes of backup %s/%s to %s\n", prog, n, s.o.dir(), bh.Name(), *output)
	return 0
}

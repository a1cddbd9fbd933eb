package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
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
// in a new file (never over an existing one; written under a partial name
// beside it and given its name only once whole: see partialFile).
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
				if *output != "-" {
					if err := outsideRoot(o, "--output", *output); err != nil {
						return err
					}
				}
				return o.validateProgress()
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	var w io.Writer = stdout
	var file *partialFile
	if *output != "-" {
		var err error
		if file, err = newPartialFile(*output, s.logger); err != nil {
			return s.o.failf(failureStatus(err), "%s", errtext.Line(err))
		}
		w = file
	}
	p := newProgress(s.o, stderr, prog+" "+s.o.dir()+"/"+bh.Name())
	n, err := fifobackupengine.Export(s.ctx, bh, w, fifobackupengine.ExportOptions{Compression: fifobackupengine.CompressionFromFlags(s.o.flags),
		OnManifest: p.setLanes, OnRead: p.addLane, Logger: s.logger})
	p.stop()
	if file != nil {
		err = file.finish(err)
	}
	if err != nil {
		return s.fail(err)
	}
	fmt.Fprintf(stderr, "%s: wrote %d bytes of backup %s/%s to %s\n", prog, n, s.o.dir(), bh.Name(), *output)
	return 0
}

// partialFile is export's output file while it is written: a hidden name
// beside the one asked for (.NAME.partial-*), synced and linked to NAME
// only once the stream is whole, so that an export killed at any point
// (SIGKILL, a power loss) never leaves a file of NAME that is a truncated
// stream; what it leaves is named partial, and named for its process
// (fifobackupengine.CreateOwnedFile), so that the next export to NAME
// removes it once that process is provably gone. NAME is never written over.
type partialFile struct {
	*os.File
	name string
}

func newPartialFile(name string, logger logutil.Logger) (*partialFile, error) {
	if st, err := os.Lstat(name); err == nil {
		what := "a file"
		if st.IsDir() {
			what = "a directory"
		}
		return nil, flagvalue.Contradiction(fmt.Errorf("%s is %s already: export never writes over one; give the name of a new file", name, what))
	}
	f, err := fifobackupengine.CreateOwnedFile(filepath.Dir(name), "."+filepath.Base(name)+".partial-", logger)
	if err == nil {
		err = f.Chmod(0o640)
	}
	if err != nil {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
		if errors.Is(err, syscall.ENAMETOOLONG) {
			return nil, flagvalue.Contradiction(fmt.Errorf("--output %s: the name is too long for the partial file it is written as first "+
				"(.%s.partial-<pid>-<start>-<32 hex>): give a shorter name", name, filepath.Base(name)))
		}
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, flagvalue.Contradiction(fmt.Errorf("--output %s: %s is not a directory that exists: create it, or give another", name,
				filepath.Dir(name)))
		}
		return nil, unreadable.Error(fmt.Errorf("--output %s: cannot write in %s here: %w", name, filepath.Dir(name), err))
	}
	return &partialFile{File: f, name: name}, nil
}

// finish gives the file its name when err is nil and the file is synced,
// and removes it otherwise; it returns the first error.
func (p *partialFile) finish(err error) error {
	if err == nil {
		err = p.Sync()
	}
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(p.Name(), p.name) // fails, never replaces, if NAME appeared meanwhile
	}
	_ = os.Remove(p.Name())
	return err
}

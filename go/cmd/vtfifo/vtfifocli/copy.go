package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// copyDoc is `vtfifo copy`'s help.
var copyDoc = commandDoc{"copy", "Copy a backup to a second split storage (another bucket, region, prefix or backend), verified there",
	"Copies the backup (--backup, or the newest complete one) to the storage that --to-flags-file (its --split-storage-*\n" +
		"lines) and --to describe. Every object goes through a temporary file; the destination is verified (every index,\n" +
		"every part's size and CRC32C read back) before its completion marker is written, so it is never listed there\n" +
		"before it is whole. A copy that stopped is resumed by running it again; --remove-source makes it a move.\n" +
		"A backup of the legacy storage (--split-storage-legacy), of any engine, is copied file by file into the\n" +
		"destination, each file read back and compared, and keeps its engine (docs/migration.md).",
	"  vtfifo copy --flags-file=/etc/vitess/vttablet.flags --keyspace=commerce --shard=0 \\\n" +
		"      --to-flags-file=/etc/vitess/dr-region.flags --to=--split-storage-s3-prefix=protected"}

// Copy is `vtfifo copy`: a complete backup, of any engine, copied to a
// second split storage (another bucket, region, prefix or backend),
// verified there before it is listed there; resumable; --remove-source
// moves it. A backup of the legacy storage is copied file by file
// (copylegacy.go), into the same split storage or another.
func Copy(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var toArgs peerFlags
	var removeSource, asJSON *bool
	var concurrency *int
	var dst splitstorage.Config
	s, bh, code := openAnyBackup(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			toArgs.register(fs)
			removeSource = fs.Bool("remove-source", false, "remove the backup from the source once it is copied and verified (a move)")
			concurrency = fs.Int("concurrency", 0, "objects copied at once (0: the destination's --split-storage-upload-concurrency)")
			asJSON = fs.Bool("json", false, "print one JSON object (backup, destination, bases copied first, objects, bytes, source removed) instead of lines")
			o.registerProgressFlags(fs)
			return func() error {
				if *concurrency < 0 || *concurrency > 256 {
					return invalid("concurrency", fmt.Sprint(*concurrency), "0 (the destination's upload concurrency) or 1..256")
				}
				var err error
				if dst, err = toArgs.config(); err != nil {
					return err
				}
				return o.validateProgress()
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	legacy := s.fromLegacy(bh)
	if legacy && *removeSource {
		return s.o.failf(exitUsage, "backup %s/%s is the legacy %s storage's: --remove-source is refused for it (once copied, the copy is listed in "+
			"its place; retire the legacy storage as a whole, docs/migration.md)", bh.Directory(), bh.Name(), s.origin(bh))
	}
	if *removeSource {
		if lock := lockHolding(s.ctx, bh); lock != "" {
			return s.o.failf(exitUsage, "backup %s/%s is %s: --remove-source cannot remove it before then; copy it without "+
				"--remove-source (vtfifo show shows its lock)", bh.Directory(), bh.Name(), lock)
		}
	}
	src, err := can[backupCopier](s.bs, "copy a backup")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	to, err := openPeer(dst)
	if err != nil {
		fmt.Fprintf(stderr, "FAIL: the destination: %s\n", errtext.Line(err))
		return failureStatus(err)
	}
	defer to.Close()
	if !dst.SameStore(splitstorage.FlagConfig()) { // the session's root is checked already
		if code := s.checkRoot(to); code >= 0 {
			return code
		}
	}
	var res CopyResult
	if legacy {
		res = CopyResult{Backup: s.o.dir() + "/" + bh.Name(), Destination: dst.Location(), FromLegacy: s.origin(bh)}
		var rep splitstorage.CopyReport
		if rep, err = copyLegacy(s.ctx, bh, to, s.o.dir()); err == nil {
			res.Copy = &rep
		}
	} else {
		res, err = copyBackup(s, src, to, dst.Location(), bh, *concurrency, *removeSource, stderr)
	}
	if *asJSON {
		writeJSON(stdout, res)
	} else {
		res.print(stdout)
	}
	if err != nil {
		return reportFailure(stderr, err)
	}
	return 0
}

// CopyResult is what copy did (--json prints it).
type CopyResult struct {
	Backup      string `json:"backup"`
	Destination string `json:"destination"`
	// BasesCopied are the bases of an incremental backup that the
	// destination lacked, copied first, the oldest first.
	BasesCopied []CopiedBase `json:"bases_copied,omitempty"`
	// Copy is nil when the backup itself was not copied.
	Copy          *splitstorage.CopyReport `json:"copy,omitempty"`
	SourceRemoved bool                     `json:"source_removed"`
	// FromLegacy names the legacy storage a backup was copied from, file
	// by file (copylegacy.go).
	FromLegacy string `json:"from_legacy,omitempty"`
}

// CopiedBase is a base copied before the backup that needs it.
type CopiedBase struct {
	Backup string `json:"backup"`
	splitstorage.CopyReport
}

// copyBackup copies bh with the bases the destination lacks, and removes the
// source when asked; the result says how far it went.
func copyBackup(s *session, src backupCopier, to peerStorage, dest string, bh backupstorage.BackupHandle, concurrency int, move bool,
	stderr io.Writer) (CopyResult, error) {
	dir, name := s.o.dir(), bh.Name()
	where := dir + "/" + name
	res := CopyResult{Backup: where, Destination: dest}
	// An incremental backup is of use only where its chain is: its bases
	// missing at the destination are copied first, the oldest first.
	bases, err := missingBases(s.ctx, src, to, dir, bh)
	if err != nil {
		return res, err
	}
	for _, base := range bases {
		rep, err := src.CopyBackup(s.ctx, to, dir, base, splitstorage.CopyOptions{Concurrency: concurrency})
		if err != nil {
			return res, fmt.Errorf("copying %s, a base of %s: %w", dir+"/"+base, where, err)
		}
		res.BasesCopied = append(res.BasesCopied, CopiedBase{Backup: dir + "/" + base, CopyReport: rep})
	}
	p := newProgress(s.o, stderr, s.o.prog+" "+where)
	rep, err := src.CopyBackup(s.ctx, to, dir, name, splitstorage.CopyOptions{
		Concurrency: concurrency,
		Move:        move,
		OnObject:    func(_ string, size int64, _ bool) { p.add(size, 1) },
	})
	p.stop()
	if err != nil {
		return res, err
	}
	res.Copy = &rep
	if move {
		s.releaseLease() // this copy's own
		if err := src.RemoveBackup(s.ctx, dir, name); err != nil {
			return res, fmt.Errorf("the copy is complete, but removing the source failed: %w", err)
		}
		res.SourceRemoved = true
	}
	return res, nil
}

// print writes one line per backup copied, and for the source removed.
func (r CopyResult) print(w io.Writer) {
	for _, b := range r.BasesCopied {
		fmt.Fprintf(w, "OK: base %s of %s copied first: %d objects (%s)\n", b.Backup, r.Backup, b.Objects, humanize.IBytes(uint64(b.Bytes)))
	}
	if c := r.Copy; c != nil && r.FromLegacy != "" {
		fmt.Fprintf(w, "OK: backup %s of the legacy %s storage copied file by file: %d files (%s), each read back from the copy and compared; "+
			"it keeps its engine\n", r.Backup, r.FromLegacy, c.Objects, humanize.IBytes(uint64(c.Bytes)))
	} else if c != nil {
		fmt.Fprintf(w, "OK: backup %s copied: %d objects (%s), %d copied (%s; %d of them by the storage service, server-side), "+
			"the rest already there; verified at the destination\n",
			r.Backup, c.Objects, humanize.IBytes(uint64(c.Bytes)), c.Copied, humanize.IBytes(uint64(c.CopiedBytes)), c.ServerSide)
	}
	if r.SourceRemoved {
		fmt.Fprintf(w, "removed the source %s\n", r.Backup)
	}
}

// missingBases lists the bases of bh's chain that the destination lacks,
// the oldest first.
func missingBases(ctx context.Context, src backupCopier, dst backupOpener, dir string, bh backupstorage.BackupHandle) ([]string, error) {
	var missing []string
	for cur := bh; ; {
		m, err := fifobackupengine.ReadManifest(ctx, cur)
		if err != nil {
			if len(missing) == 0 {
				return nil, nil // not a fifo backup: no chain
			}
			return nil, err
		}
		if m.BaseBackup == "" {
			break
		}
		if _, err := dst.OpenBackup(ctx, dir, m.BaseBackup); err == nil {
			break
		} else if !errors.Is(err, splitstorage.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, m.BaseBackup)
		if len(missing) > 1000 {
			return nil, fmt.Errorf("backup %s/%s: its chain is longer than 1000 backups", dir, bh.Name())
		}
		if cur, err = src.OpenBackup(ctx, dir, m.BaseBackup); err != nil {
			return nil, fmt.Errorf("backup %s/%s: its base %s: %w", dir, bh.Name(), m.BaseBackup, err)
		}
	}
	slices.Reverse(missing)
	return missing, nil
}

// peerFlags are --to-flags-file and --to: the second storage of a copy or
// a promotion, its destination.
type peerFlags struct{ files, flags []string }

func (p *peerFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&p.files, "to-flags-file", nil, "the destination's storage: a flag file whose --split-storage-* lines are read (other lines "+
		"skipped), e.g. another tablet's; repeatable")
	fs.StringArrayVar(&p.flags, "to", nil, "a destination storage flag, after those of --to-flags-file, e.g. "+
		"--to=--split-storage-s3-bucket=backups-dr; repeatable")
}

// config is the destination's configuration, or an error naming the flags.
func (p *peerFlags) config() (splitstorage.Config, error) {
	if len(p.files) == 0 && len(p.flags) == 0 {
		return splitstorage.Config{}, errors.New("--to-flags-file or --to is required: the destination storage")
	}
	cfg, err := storageConfig("to", p.files, p.flags)
	if err != nil {
		return cfg, fmt.Errorf("the destination (--to-flags-file, --to): %w", err)
	}
	return cfg, nil
}

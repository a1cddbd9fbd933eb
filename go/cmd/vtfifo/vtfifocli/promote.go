package vtfifocli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// promoteDoc is `vtfifo promote`'s help.
var promoteDoc = commandDoc{"promote", "Copy a proven backup to a protected storage, verify it there and lock it there",
	"The staged flow in one step: the backup --backup names, whose latest test restore passed, is copied to the\n" +
		"protected storage --to-flags-file/--to name (another bucket, prefix or storage class; with the backups it needs\n" +
		"and its test record), verified there, then locked there until --until or for --for (S3 Object Lock, GCS\n" +
		"retention, Azure immutability, or read-only files on local disk). Until it finishes, no removal in this\n" +
		"storage takes the backup (retention included); cut short anywhere, running it again resumes it without\n" +
		"copying twice. show prints where and until when a backup was promoted.",
	"  vtfifo promote --backup-storage-implementation=split --split-storage-backend=s3 --split-storage-s3-bucket=backups \\\n" +
		"      --keyspace=commerce --shard=0 --backup=2026-11-23.162035.zone1-0000000100 \\\n" +
		"      --to-flags-file=/etc/vitess/tablet.flags --to=--split-storage-s3-bucket=backups-protected --for=720h --mode=compliance"}

// Promote is `vtfifo promote`: a proven backup copied to a protected
// storage, verified and locked there.
func Promote(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var f lockFlags
	var toArgs peerFlags
	var dst splitstorage.Config
	s, bh, code := openBackup(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			f.register(fs)
			toArgs.register(fs)
			required := o.requireBackup(fs, "promote promotes the backup it names, never one it picks")
			return func() error {
				if err := required(); err != nil {
					return err
				}
				if err := f.check(); err != nil {
					return err
				}
				var err error
				dst, err = toArgs.config()
				return err
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	pr, err := can[promoter](s.bs, "promote a backup")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	if code := f.dateByStoreClock(s); code >= 0 {
		return code
	}
	dir, name := s.o.dir(), bh.Name()
	rec, err := testrestore.Load(s.ctx, bh)
	switch {
	case err != nil:
		return s.o.failf(exitUsage, "backup %s/%s is not promoted: its test restore record cannot be read (%v): only a proven backup is", dir, name, err)
	case rec == nil || rec.Outcome != testrestore.Passed:
		return s.o.failf(exitUsage, "backup %s/%s is not promoted: no passed test restore (run vtfifo test-restore --backup=%s): only a proven backup is",
			dir, name, name)
	}
	to, err := openPeer(dst)
	if err != nil {
		fmt.Fprintf(stderr, "FAIL: the destination: %s\n", errtext.Line(err))
		return failureStatus(err)
	}
	defer to.Close()
	if dst.SameStore(splitstorage.FlagConfig()) {
		return s.o.failf(exitUsage, "the destination (--to-flags-file, --to) is this storage, %s: a promotion copies to another one "+
			"(vtfifo lock locks a backup where it is)", dst.Location())
	}
	if code := s.checkRoot(to); code >= 0 {
		return code
	}
	rep, err := pr.Promote(s.ctx, to, dir, name, f.lockWanted, splitstorage.CopyOptions{})
	if err != nil {
		return s.fail(fmt.Errorf("%w; run promote again to resume it", err))
	}
	if f.asJSON {
		writeJSON(stdout, rep)
		return exitOK
	}
	copied := "nothing copied (the destination held it)"
	if len(rep.Copied) > 0 {
		copied = fmt.Sprintf("copied %s (%d objects)", strings.Join(rep.Copied, ", "), rep.Copy.Copied)
	}
	fmt.Fprintf(stdout, "promoted %s/%s to %s: %s, verified there, %s there\n", dir, name, rep.Destination, copied, rep.Lock.Lock)
	return exitOK
}

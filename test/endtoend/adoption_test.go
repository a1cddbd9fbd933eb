package endtoend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// TestAdoptionFromVitessStorage: a shard whose backups Vitess's xtrabackup
// engine (over mariabackup) wrote into Vitess's own file storage (or its s3
// storage) moves onto fifo + split with that storage named as the legacy one
// (--split-storage-legacy=file and its usual --file-backup-storage-root; or
// =s3 and its --s3-backup-* flags, the split storage on S3 too):
//   - GetBackups through vtctld and vtfifo ls list the legacy backup (ls
//     with its engine and storage; the fleet view, from the topology, too);
//     vtfifo verify reads its stream, test-restore starts it, and restore
//     --prepare leaves a data directory a stock mariadbd starts on with the
//     source's data;
//   - a new tablet restores it, with Vitess's xtrabackup engine from the
//     file storage's own handle, and has the source's data;
//   - its first fifo backup goes to the split storage, listed beside it;
//   - a restore to the time of the legacy backup picks the legacy one, and
//     has its data;
//   - vtfifo copy brings the legacy backup into the split storage (listed
//     there with its engine); the old storage's copy removed, a new tablet
//     restores it from the split storage with Vitess's xtrabackup engine;
//   - rolled back to the stock engine with the split storage kept, a tablet
//     restores the newest (fifo) backup, and the stock engine's next backup
//     goes to the split storage and restores;
//   - rolled back to the old storage, the stock engine's backup goes there,
//     and Vitess's own vttablet (no plugin) restores it.
//
// With the file storage and the split storage on one root (file-shared,
// which docs/migration.md allows), the flow runs to the restore to a time
// before the switch; then a cleanup of incomplete backups of any age
// removes nothing, both backups are still listed, and a copy of the legacy
// backup into the split storage on the same root is refused.
func TestAdoptionFromVitessStorage(t *testing.T) {
	for _, l := range []legacyStorage{fileLegacy(), sharedFileLegacy(), s3Legacy()} {
		name := l.name
		if l.shared {
			name += "-shared"
		}
		t.Run(name, func(t *testing.T) { runAdoption(t, l) })
	}
}

// legacyStorage is one of Vitess's storages a fleet adopts from: the split
// storage it moves to, the legacy storage's flags beside the split
// storage's, and how the operator retires one of its backups.
type legacyStorage struct {
	name   string
	split  storageBackend
	flags  func(c *cluster.Cluster, st cluster.Storage) ([]string, error)
	retire func(ctx context.Context, c *cluster.Cluster, st cluster.Storage, name string) error
	shared bool // the two storages on one root
}

// fileLegacy: Vitess's file storage, the split storage on local disk.
func fileLegacy() legacyStorage {
	root := func(c *cluster.Cluster) string { return filepath.Join(c.Root, "vitess-file-backups") }
	return legacyStorage{name: "file", split: splitBackend("split-local", "file", false, false),
		flags: func(c *cluster.Cluster, _ cluster.Storage) ([]string, error) {
			return []string{"--file-backup-storage-root=" + root(c)}, c.MkdirOwned(root(c))
		},
		retire: func(_ context.Context, c *cluster.Cluster, _ cluster.Storage, name string) error {
			return os.RemoveAll(filepath.Join(root(c), c.Keyspace, c.Shard, name))
		}}
}

// sharedFileLegacy: Vitess's file storage on the split storage's own root.
func sharedFileLegacy() legacyStorage {
	return legacyStorage{name: "file", split: splitBackend("split-local", "file", false, false), shared: true,
		flags: func(_ *cluster.Cluster, st cluster.Storage) ([]string, error) {
			return []string{"--file-backup-storage-root=" + flagValue(st.Flags, "--split-storage-root")}, nil
		}}
}

// s3Legacy: Vitess's s3 storage (its own flags, the AWS keys in the
// environment) beside the split storage on S3, on one versitygw under
// another root: the split storage takes the keys out of the environment
// and must share them with it.
func s3Legacy() legacyStorage {
	const root = "vitess-legacy"
	return legacyStorage{name: "s3", split: splitBackend("split-s3", "s3", false, false),
		flags: func(_ *cluster.Cluster, st cluster.Storage) ([]string, error) {
			endpoint := flagValue(st.Flags, "--split-storage-s3-endpoint")
			return []string{"--s3-backup-aws-endpoint=" + endpoint, "--s3-backup-aws-region=us-east-1", "--s3-backup-force-path-style",
				"--s3-backup-storage-bucket=" + splitstoragetest.Bucket, "--s3-backup-storage-root=" + root}, nil
		},
		retire: func(ctx context.Context, c *cluster.Cluster, st cluster.Storage, name string) error {
			return deleteS3Prefix(ctx, st, splitstoragetest.Bucket, root+"/"+c.Keyspace+"/"+c.Shard+"/"+name+"/")
		}}
}

// runAdoption is TestAdoptionFromVitessStorage on one legacy storage.
func runAdoption(t *testing.T, l legacyStorage) {
	prepare := l.split.prepare(t)
	var storage cluster.Storage
	var legacy []string // the legacy storage's own flags
	c := startCluster(t, cluster.Options{PrepareStorage: func(c *cluster.Cluster) (cluster.Storage, error) {
		st, err := prepare(c)
		if err != nil {
			return st, err
		}
		legacy, err = l.flags(c, st)
		st.Flags = append(append(st.Flags, "--split-storage-legacy="+l.name), legacy...)
		storage = st
		return st, err
	}})
	ctx := ctxFor(t, 30*time.Minute)
	tablet := func(uid int, engine string, extra ...string) *cluster.Tablet {
		tab, err := c.NewTablet(uid)
		must(t, err)
		tab.Engine = engineFor(c, engine)
		tab.ExtraArgs = extra
		must(t, tab.InitMySQL(ctx))
		return tab
	}

	// Before the switch: the stock engine and storage.
	p := tablet(100, "xtrabackup", "--backup-storage-implementation="+l.name)
	must(t, startSampledPrimary(ctx, c, p, sampleRows))
	must(t, p.Backup(ctx, true, ""))
	legacySums, err := p.Checksums(ctx)
	must(t, err)
	names, err := c.GetBackups(ctx)
	must(t, err)
	if len(names) != 1 {
		t.Fatalf("GetBackups through vtctld (split storage, legacy %s): %v, want the one legacy backup", l.name, names)
	}
	legacyName := names[0]
	out, code, err := c.Vtfifo(ctx, "ls")
	must(t, err)
	if code != 0 || !regexpMatch(`(?m)^`+legacyName+`\s+xtrabackup\s+`+l.name+`\s`, out) {
		t.Fatalf("vtfifo ls: exit %d, want %s listed with engine xtrabackup in storage %s:\n%s", code, legacyName, l.name, out)
	}
	// The fleet view, with the topology's flags, finds the shard though the
	// split storage holds nothing of it yet.
	out, code, err = c.VtfifoFleet(ctx, "ls", "--json")
	must(t, err)
	if code != 0 || !strings.Contains(out, legacyName) {
		t.Fatalf("vtfifo ls (the fleet, from the topology): exit %d, want the shard with %s:\n%s", code, legacyName, out)
	}

	t.Run("legacy-backup-verified-and-test-restored", func(t *testing.T) {
		// vtfifo reads Vitess's xtrabackup engine's stream from the legacy
		// storage: verify decodes every chunk; test-restore prepares it
		// and starts a throwaway mariadbd on it (its record cannot be kept
		// in Vitess's storage, which says so).
		vtfifo := vtfifoRunner(ctx, c)
		out := vtfifo(t, 0, "verify", "--backup="+legacyName, "--progress=never")
		if !regexpMatch(`OK: backup \S+/`+legacyName+`: Vitess's xtrabackup engine's stream in 2 stored files, \d+ files`, out) {
			t.Fatalf("vtfifo verify of the legacy backup:\n%s", out)
		}
		t.Logf("vtfifo verify of the legacy backup:\n%s", out)
		out = vtfifo(t, 0, append([]string{"test-restore", "--backup=" + legacyName}, toolFlags(c)...)...)
		if !regexpMatch(`OK: test restore of \S+/`+legacyName+` passed in .*prepared by mariabackup.*CHECK TABLE on \d+ tables.*record not stored: `, out) {
			t.Fatalf("vtfifo test-restore of the legacy backup:\n%s", out)
		}
		t.Logf("vtfifo test-restore of the legacy backup:\n%s", out)
		// And into a directory a stock mariadbd starts on, with the data.
		restored := filepath.Join(c.TmpDir, "legacy-restored")
		out = vtfifo(t, 0, append([]string{"restore", "--backup=" + legacyName, "--target-dir=" + restored, "--prepare"}, toolFlags(c)...)...)
		if !strings.Contains(out, "OK: backup ") || !strings.Contains(out, "prepared with mariabackup") {
			t.Fatalf("vtfifo restore --prepare of the legacy backup:\n%s", out)
		}
		srv, proc, err := c.StartMysqld(ctx, "legacy-restored-mysqld", restored)
		must(t, err)
		defer proc.Stop(time.Minute)
		checkData(ctx, t, srv, legacySums)
	})
	if t.Failed() {
		return
	}

	// After the switch: fifo + split, the legacy storage named. (One tablet
	// at a time: a MariaDB replica cannot attach beside a primary in
	// Vitess v24, docs/compatibility.md.)
	must(t, p.Destroy(ctx))
	time.Sleep(time.Second) // backup names have seconds
	r := tablet(101, "fifo")
	t.Run("new-tablet-restores-the-legacy-backup", func(t *testing.T) {
		restoresTo(ctx, t, r, legacyName, legacySums)
	})
	if t.Failed() {
		return
	}
	t.Run("first-fifo-backup-listed-beside", func(t *testing.T) {
		must(t, promote(ctx, t, c, r))
		must(t, r.Backup(ctx, true, ""))
		names, err := c.GetBackups(ctx)
		must(t, err)
		if len(names) != 2 || names[0] != legacyName {
			t.Fatalf("GetBackups: %v, want %s then the fifo backup", names, legacyName)
		}
		out, code, err := c.Vtfifo(ctx, "ls")
		must(t, err)
		if code != 0 || !regexpMatch(`(?m)^`+names[1]+`\s+fifo\s+split\s`, out) || !regexpMatch(`(?m)^`+legacyName+`\s+xtrabackup\s+`+l.name+`\s`, out) {
			t.Fatalf("vtfifo ls: exit %d, want both backups with their engine and storage:\n%s", code, out)
		}
	})
	if t.Failed() {
		return
	}
	must(t, r.Destroy(ctx))
	t.Run("restore-to-a-time-before-the-switch", func(t *testing.T) {
		ts, _, _ := strings.Cut(legacyName, ".zone")
		q := tablet(102, "fifo", "--restore-from-backup-ts="+ts)
		restoresTo(ctx, t, q, legacyName, legacySums)
		out, code, err := c.Vtfifo(ctx, "ls", "--as-of="+ts)
		must(t, err)
		if code != 0 || !strings.Contains(out, "restores "+c.Keyspace+"/"+c.Shard+"/"+legacyName) {
			t.Fatalf("vtfifo ls --as-of=%s: exit %d:\n%s", ts, code, out)
		}
		must(t, q.Destroy(ctx))
	})
	if t.Failed() || l.shared {
		if l.shared {
			t.Run("shared-root-cleanup-removes-nothing", func(t *testing.T) { sharedRootKept(ctx, t, c, legacyName) })
		}
		return
	}
	t.Run("legacy-backup-copied-into-split-then-the-old-storage-retired", func(t *testing.T) {
		// The copy's destination is the tablets' own split storage.
		var to []string
		for _, f := range c.Storage.Flags {
			if strings.HasPrefix(f, "--split-storage-") && !strings.HasPrefix(f, "--split-storage-legacy") {
				to = append(to, "--to="+f)
			}
		}
		out, code, err := c.Vtfifo(ctx, append([]string{"copy", "--backup=" + legacyName}, to...)...)
		must(t, err)
		if code != 0 || !strings.Contains(out, "of the legacy "+l.name+" storage copied file by file") {
			t.Fatalf("vtfifo copy of the legacy backup: exit %d:\n%s", code, out)
		}
		out, code, err = c.Vtfifo(ctx, "ls")
		must(t, err)
		if code != 0 || !regexpMatch(`(?m)^`+legacyName+`\s+xtrabackup\s+split\s`, out) {
			t.Fatalf("vtfifo ls after the copy: exit %d, want %s with engine xtrabackup in storage split:\n%s", code, legacyName, out)
		}
		// The old storage retired: Vitess's xtrabackup engine restores the
		// copy from the split storage.
		must(t, l.retire(ctx, c, storage, legacyName))
		ts, _, _ := strings.Cut(legacyName, ".zone")
		q := tablet(103, "fifo", "--restore-from-backup-ts="+ts)
		restoresTo(ctx, t, q, legacyName, legacySums)
		must(t, q.Destroy(ctx))
	})
	if t.Failed() {
		return
	}
	var u *cluster.Tablet // the stock engine's tablet on the split storage
	t.Run("rollback-the-engine-with-the-split-storage-kept", func(t *testing.T) {
		// Vitess's stock engine again, the split storage kept: the newest
		// backup (fifo) restores with the engine its MANIFEST names, and the
		// stock engine's next backup goes to the split storage and restores.
		s := tablet(104, "xtrabackup")
		must(t, s.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, s, legacySums)
		must(t, promote(ctx, t, c, s))
		time.Sleep(time.Second) // backup names have seconds
		must(t, s.Backup(ctx, true, ""))
		names, err := c.GetBackups(ctx)
		must(t, err)
		stock := names[len(names)-1]
		out, code, err := c.Vtfifo(ctx, "ls")
		must(t, err)
		if code != 0 || !regexpMatch(`(?m)^`+stock+`\s+xtrabackup\s+split\s`, out) {
			t.Fatalf("vtfifo ls: exit %d, want the stock engine's backup %s in the split storage:\n%s", code, stock, out)
		}
		must(t, s.Destroy(ctx))
		u = tablet(105, "xtrabackup")
		restoresTo(ctx, t, u, stock, legacySums)
	})
	if t.Failed() {
		return
	}
	t.Run("rollback-the-storage-then-the-binaries", func(t *testing.T) {
		// The storage back to the old one (docs/migration.md, "Going back"):
		// the primary's vttablet restarted with the stock engine on the old
		// storage alone takes one stock backup into it; then Vitess's own
		// vttablet, built without our plugin, with the same flags, restores
		// that backup on a new tablet.
		old := cluster.Storage{Name: l.name, Flags: append([]string{"--backup-storage-implementation=" + l.name}, legacy...), Env: storage.Env}
		must(t, promote(ctx, t, c, u))
		u.StopVttablet()
		u.Engine, u.Storage = stockEngine(c), &old
		must(t, u.Start(ctx, cluster.StartOptions{WaitForType: "PRIMARY"}))
		must(t, u.AddRows(ctx, 1000))
		sums, err := u.Checksums(ctx)
		must(t, err)
		time.Sleep(time.Second) // backup names have seconds
		must(t, u.Backup(ctx, true, ""))
		// vtctld and vtfifo, still on the split storage with the legacy one
		// named, find it in the old storage.
		names, err := c.GetBackups(ctx)
		must(t, err)
		stock := names[len(names)-1]
		out, code, err := c.Vtfifo(ctx, "ls")
		must(t, err)
		if code != 0 || !regexpMatch(`(?m)^`+stock+`\s+xtrabackup\s+`+l.name+`\s`, out) {
			t.Fatalf("vtfifo ls: exit %d, want the stock backup %s in the old %s storage:\n%s", code, stock, l.name, out)
		}
		must(t, u.Destroy(ctx))
		w, err := c.NewTablet(106)
		must(t, err)
		w.Stock, w.Engine, w.Storage = true, stockEngine(c), &old
		must(t, w.InitMySQL(ctx))
		restoresTo(ctx, t, w, stock, sums)
	})
}

// sharedRootKept: on a root both storages share, a cleanup of incomplete
// backups of any age removes nothing (the legacy backup's files are not the
// split storage's), ls still lists both backups, and a copy of the legacy
// backup into the split storage on that root is refused, nothing written.
func sharedRootKept(ctx context.Context, t *testing.T, c *cluster.Cluster, legacyName string) {
	root := flagValue(c.Storage.Flags, "--split-storage-root")
	before, err := os.ReadDir(filepath.Join(root, c.Keyspace, c.Shard))
	must(t, err)
	out, code, err := c.Vtfifo(ctx, "verify", "--remove-incomplete", "--incomplete-min-age=0")
	must(t, err)
	if code != 0 || strings.Contains(out, "removed") {
		t.Fatalf("vtfifo verify --remove-incomplete on the shared root: exit %d, want nothing removed:\n%s", code, out)
	}
	after, err := os.ReadDir(filepath.Join(root, c.Keyspace, c.Shard))
	must(t, err)
	if len(after) != len(before) {
		t.Fatalf("the shard's directory held %d entries, now %d", len(before), len(after))
	}
	out, code, err = c.Vtfifo(ctx, "ls")
	must(t, err)
	if code != 0 || !regexpMatch(`(?m)^`+legacyName+`\s+xtrabackup\s+file\s`, out) || !regexpMatch(`(?m)^\S+\s+fifo\s+split\s`, out) {
		t.Fatalf("vtfifo ls on the shared root: exit %d, want the legacy backup in file and the fifo one in split:\n%s", code, out)
	}
	out, code, err = c.Vtfifo(ctx, "copy", "--backup="+legacyName, "--to=--split-storage-root="+root)
	must(t, err)
	if code != 2 || !strings.Contains(out, "another storage's backup of that name; nothing was written") {
		t.Fatalf("vtfifo copy of the legacy backup onto the shared root: exit %d, want 2, refused:\n%s", code, out)
	}
}

// restoresTo starts tab with --restore-from-backup and checks that it
// restored backup (its vttablet's log names it) with the data of sums.
func restoresTo(ctx context.Context, t *testing.T, tab *cluster.Tablet, backup string, sums []cluster.TableSum) {
	t.Helper()
	must(t, tab.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
	checkData(ctx, t, tab, sums)
	if log := tab.Vttablet.Tail(1 << 20); !strings.Contains(log, backup) {
		t.Errorf("%s's restore log does not name %s:\n%s", tab.Alias, backup, tab.Vttablet.Tail(4000))
	}
}

// regexpMatch reports whether the pattern matches s.
func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// flagValue is the value of the last --name=value among flags ("" if none).
func flagValue(flags []string, name string) string {
	v := ""
	for _, f := range flags {
		if rest, ok := strings.CutPrefix(f, name+"="); ok {
			v = rest
		}
	}
	return v
}

// deleteS3Prefix deletes every object under prefix in bucket, on the S3
// server the split storage's flags name, with its environment's keys.
func deleteS3Prefix(ctx context.Context, st cluster.Storage, bucket, prefix string) error {
	env := map[string]string{}
	for _, kv := range st.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(flagValue(st.Flags, "--split-storage-s3-endpoint")), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], "")})
	objs, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		return err
	}
	if len(objs.Contents) == 0 {
		return fmt.Errorf("nothing under s3://%s/%s", bucket, prefix)
	}
	for _, o := range objs.Contents {
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
			return err
		}
	}
	return nil
}

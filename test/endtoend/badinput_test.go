package endtoend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"vitess.io/vitess/go/vt/topo/topoproto"

	vtctldatapb "vitess.io/vitess/go/vt/proto/vtctldata"
	vtctlservicepb "vitess.io/vitess/go/vt/proto/vtctlservice"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// hostileCase is one request with hostile keyspace, shard or backup name.
type hostileCase struct{ keyspace, shard, name string }

// TestHostileBackupNamesThroughVtctld: only etcd and vtctld (split storage,
// file backend), no tablet. RemoveBackup and GetBackups are sent with
// keyspace, shard and backup names that lead out of the storage root or
// alias other keys ("../victim", "ks/../../victim", absolute paths, ".",
// "..", backslashes, control characters, NUL), through vtctldclient and,
// for what a command line cannot carry (NUL and other control characters),
// straight over gRPC. Where the names point, outside the root, lies a
// complete backup owned by the user vtctld runs as (a missing check would
// list and delete it); inside the root lies a sibling backup. Every
// RemoveBackup must be refused with an error naming the invalid name; every
// GetBackups whose directory (as vtctld builds it) leaves the root must be
// refused too, and none may list the victim; afterwards every file outside
// the root and in the root is unchanged, and a legitimate RemoveBackup
// through the same vtctld still works (so the victims were deletable).
func TestHostileBackupNamesThroughVtctld(t *testing.T) {
	discoverBinaries(t)
	var root string
	var cfg splitstorage.Config
	c := startCluster(t, cluster.Options{PrepareStorage: func(c *cluster.Cluster) (cluster.Storage, error) {
		root = filepath.Join(c.Root, "split-backups")
		if err := c.MkdirOwned(root); err != nil {
			return cluster.Storage{}, err
		}
		cfg = splitstoragetest.TestConfig()
		cfg.Backend = splitstorage.BackendFile
		cfg.File.Root = root
		srv := &splitstoragetest.Server{Kind: splitstorage.BackendFile, Config: cfg, Env: map[string]string{}, Dir: root}
		return cluster.Storage{Name: "split-local", Flags: srv.Flags()}, nil
	}})
	ctx := ctxFor(t, 5*time.Minute)

	// Backups inside the root: the sibling "b" (must survive), and "c" (the
	// legitimate removal at the end). Outside the root, at <cluster>/victim,
	// complete backups where the hostile names lead, and a plain file.
	inside, err := splitstorage.New(cfg)
	must(t, err)
	writeTestBackup(ctx, t, inside, "ks/0", "b")
	writeTestBackup(ctx, t, inside, "ks/0", "c")
	outsideCfg := cfg
	outsideCfg.File.Root = c.Root
	outside, err := splitstorage.New(outsideCfg)
	must(t, err)
	writeTestBackup(ctx, t, outside, "victim/0", "b")
	writeTestBackup(ctx, t, outside, "victim/0", "victim-outside")
	victimFile := filepath.Join(c.Root, "victim.txt")
	must(t, os.WriteFile(victimFile, []byte("victim"), 0o644))
	// Owned by the user vtctld runs as: nothing but the checks stops it.
	st, err := os.Stat(c.Root)
	must(t, err)
	uid, gid := int(st.Sys().(*syscall.Stat_t).Uid), int(st.Sys().(*syscall.Stat_t).Gid)
	for _, p := range []string{root, filepath.Join(c.Root, "victim"), victimFile} {
		must(t, filepath.WalkDir(p, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		}))
	}
	watched := []string{root, filepath.Join(c.Root, "victim"), victimFile}
	before := map[string]string{}
	for _, p := range watched {
		hashTree(t, p, before)
	}
	if names, err := c.GetBackups(ctx); err != nil || strings.Join(names, ",") != "b,c" {
		t.Fatalf("GetBackups ks/0 before = %v, %v; want [b c]", names, err)
	}

	abs := filepath.Join(c.Root, "victim")
	// vtctldclient arguments: <keyspace/shard> (or <keyspace:shard>) and a
	// name, as an operator would type them.
	cli := []struct{ arg, name string }{
		{"../victim/0", "b"}, // refused by vtctldclient's own parsing
		{"../victim:0", "b"}, // parsed as keyspace ".." and shard "victim:0"
		{"ks:../../victim/0", "b"},
		{"ks/../../victim:0", "b"},
		{"ks/../../x:0", "b"},
		{"..\\victim/0", "b"},
		{"ks/0\\..\\..\\..\\victim\\0", "b"},
		{abs + ":0", "b"},
		{"./.", "b"},
		{"../..", "b"},
		{"ks/.", "b"},
		{"./0", "b"},
		{"ks/..", "b"},
		{":", "b"},
		{"ks:", "b"},
		{"ks/0", "../../../victim/0/b"},
		{"ks/0", "..\\..\\..\\victim\\0\\b"},
		{"ks/0", abs + "/0/b"},
		{"ks/0", "."},
		{"ks/0", ".."},
		{"ks/0", ""},
		{"ks/0", ".complete"},
		{"ks/0", "b/../c"},
	}
	// The same over gRPC, where keyspace and shard are separate fields, plus
	// what a command line cannot carry (NUL and other control characters).
	raw := []hostileCase{
		{"../victim", "0", "b"},
		{"ks", "../../victim/0", "b"},
		{"ks/../../victim", "0", "b"},
		{abs, "0", "b"},
		{"..", "..", "b"},
		{".", ".", "b"},
		{"ks", ".", "b"},
		{"ks", "0/.", "b"},
		{"", "", "b"},
		{"ks", "0", "../../../victim/0/b"},
		{"ks", "0", abs + "/0/b"},
		{"ks", "0", ".."},
		{"ks", "0", "b\x00"},
		{"ks", "0", "b\x00/../../../victim/0/b"},
		{"ks\x00", "0", "b"},
		{"ks", "0\n", "b"},
		{"ks", "0", "b\n"},
		{"ks", "0", "b\t"},
		{"ks", "0\x7f", "b"},
		{"../victim\x00", "0", "b"},
	}

	type outcome struct {
		call     string
		remove   bool
		dir      string // the directory vtctld hands the storage
		err, out string
	}
	var outcomes []outcome
	for _, h := range cli {
		ks, sh, perr := topoproto.ParseKeyspaceShard(h.arg)
		out, err := c.Vtctldclient(ctx, "RemoveBackup", h.arg, h.name)
		outcomes = append(outcomes, outcome{fmt.Sprintf("vtctldclient RemoveBackup %q %q", h.arg, h.name), true, ks + "/" + sh, errString(err), out})
		if h.arg == "ks/0" {
			continue // a hostile name with the real shard: GetBackups is below
		}
		out, err = c.Vtctldclient(ctx, "GetBackups", h.arg)
		dir := filepath.Join(ks, sh)
		if perr != nil {
			dir = ""
		}
		outcomes = append(outcomes, outcome{fmt.Sprintf("vtctldclient GetBackups %q", h.arg), false, dir, errString(err), out})
	}
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", c.VtctldGRPC), grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	defer conn.Close()
	client := vtctlservicepb.NewVtctldClient(conn)
	for _, h := range raw {
		_, err := client.RemoveBackup(ctx, &vtctldatapb.RemoveBackupRequest{Keyspace: h.keyspace, Shard: h.shard, Name: h.name})
		outcomes = append(outcomes, outcome{fmt.Sprintf("gRPC RemoveBackup %q %q %q", h.keyspace, h.shard, h.name), true, h.keyspace + "/" + h.shard,
			errString(err), ""})
		if h.keyspace == "ks" && h.shard == "0" {
			continue
		}
		resp, err := client.GetBackups(ctx, &vtctldatapb.GetBackupsRequest{Keyspace: h.keyspace, Shard: h.shard})
		out := ""
		if resp != nil {
			out = fmt.Sprint(resp.Backups)
		}
		outcomes = append(outcomes, outcome{fmt.Sprintf("gRPC GetBackups %q %q", h.keyspace, h.shard), false, filepath.Join(h.keyspace, h.shard),
			errString(err), out})
	}

	refusedN, mustN := 0, 0
	for _, o := range outcomes {
		t.Logf("%s: err=%q out=%q", o.call, firstLine(o.err), strings.TrimSpace(o.out))
		if strings.Contains(o.out, "victim-outside") || strings.Contains(o.err, "victim-outside") {
			t.Errorf("%s listed the backup outside the storage root:\n%s%s", o.call, o.err, o.out)
		}
		// Every RemoveBackup here is hostile. vtctld builds GetBackups'
		// directory with filepath.Join, which cleans "ks/." into "ks" and
		// "./0" into "0": directories inside the root, listed harmlessly
		// (nothing in them is a complete backup). The rest must be refused.
		mustRefuse := o.remove || hostileAfterJoin(o.dir)
		if mustRefuse {
			mustN++
		}
		switch {
		case o.err == "" && mustRefuse:
			t.Errorf("%s was not refused (output %q)", o.call, o.out)
		case o.err == "" || !mustRefuse:
		case strings.Contains(o.err, "invalid shard path"):
			refusedN++ // vtctldclient's own parsing refused it before vtctld
		case !strings.Contains(o.err, "split storage: invalid"):
			t.Errorf("%s: refused, but not with the storage's clear error: %s", o.call, o.err)
		default:
			refusedN++
		}
	}
	t.Logf("%d requests to refuse: %d refused; %d GetBackups of a directory vtctld cleans into the root: answered, nothing from outside", mustN,
		refusedN, len(outcomes)-mustN)

	after := map[string]string{}
	for _, p := range watched {
		hashTree(t, p, after)
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed: was %q, now %q", p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was created", p)
		}
	}
	if done, err := c.Vtctld.Exited(); done {
		t.Fatalf("vtctld exited: %v\n%s", err, c.Vtctld.Tail(3000))
	}
	// The victims were removable: a legitimate RemoveBackup through the same
	// vtctld deletes the sibling "c".
	must(t, c.RemoveBackup(ctx, "c"))
	if names, err := c.GetBackups(ctx); err != nil || strings.Join(names, ",") != "b" {
		t.Fatalf("GetBackups ks/0 after removing c = %v, %v; want [b]", names, err)
	}
	if _, err := os.Stat(filepath.Join(root, "ks", "0", "c")); !os.IsNotExist(err) {
		t.Fatalf("the legitimate RemoveBackup left ks/0/c: %v", err)
	}
}

// hostileAfterJoin: a GetBackups directory (after vtctld's filepath.Join)
// that leaves the root or is not a name.
func hostileAfterJoin(dir string) bool {
	if dir == "." || dir == ".." || strings.HasPrefix(dir, "../") || filepath.IsAbs(dir) || dir == "" {
		return true
	}
	for _, r := range dir {
		if r == '\\' || r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// writeTestBackup stores a complete backup with one small file.
func writeTestBackup(ctx context.Context, t *testing.T, s *splitstorage.Storage, dir, name string) {
	t.Helper()
	h, err := s.StartBackup(ctx, dir, name)
	must(t, err)
	w, err := h.AddFile(ctx, "MANIFEST", 0)
	must(t, err)
	_, err = io.WriteString(w, `{"BackupName":"`+name+`"}`)
	must(t, err)
	must(t, w.Close())
	must(t, h.EndBackup(ctx))
}

// hashTree records the mode and content hash of every path under p.
func hashTree(t *testing.T, p string, into map[string]string) {
	t.Helper()
	must(t, filepath.WalkDir(p, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:])
		}
		into[p] = v
		return nil
	}))
}

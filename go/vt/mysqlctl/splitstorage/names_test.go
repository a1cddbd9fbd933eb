package splitstorage_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// hostileDirs are keyspace/shard directories the storage must refuse: each
// one, used as a key prefix, escapes the root, aliases another directory
// once a path is cleaned, or is not a name at all.
var hostileDirs = []string{
	"", ".", "..", "/", "./ks", "ks/.", "ks/./0", "ks/..", "../victim/0", "ks/../../victim/0",
	"ks/0/../../../victim/0", "/abs/victim/0", "ks//0", "ks/0/", "/ks/0", "ks/.hidden",
	"ks\\..\\..\\victim", "ks\\0", "ks/0\x00", "ks\x00/0", "ks/0\n", "ks/\x7f", "ks/\u0085",
	"ks/0\xff", "..\\victim/0",
}

// hostileNames are backup (and file) names the storage must refuse.
var hostileNames = []string{
	"", ".", "..", "...", "../victim", "../../../victim/0/b", "b/../../x", "/b", "/abs/victim", "b/",
	"a/b", ".complete", ".started", "..\\..\\victim", "b\\c", "b\x00", "b\x00/../../x", "b\n", "b\r",
	"b\t", "b\x1b", "b\xff\xfe", ".b",
}

// goodNames must keep working: what Vitess, vtbackup and the engines use.
var goodDirs = []string{"ks/0", "commerce/-80", "commerce/80-", "customer/40-80", "ks_1/0", "ks-x/0"}
var goodNames = []string{"2026-02-01.120000.zone1-0000000100", "c", "MANIFEST", "lane-001.xbstream.zst", "0", "1", "backup.b.c"}

// treeHash maps every path under dir (relative) to its mode and a hash of
// its content, to show that nothing changed.
// treeHash is every file and directory under dir with its mode and the
// hash of its bytes, but for the change marks and summaries the storage
// keeps under .fleet/ of a root.
func treeHash(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".fleet" {
			return filepath.SkipDir // the storage's own bookkeeping of changes (changes.go)
		}
		rel, _ := filepath.Rel(dir, p)
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
		out[rel] = v
		return nil
	}))
	return out
}

// TestHostileNames: every entry point that turns names into keys refuses
// directories, backup names and file names that could leave the root or
// alias another key, with an error naming what was refused; and nothing
// outside the root, nor a sibling backup, is touched or created. The
// victims are complete backups laid out where the hostile names point (a
// missing check would find, list and delete them).
func TestHostileNames(t *testing.T) {
	ctx := context.Background()
	top := t.TempDir()
	root := filepath.Join(top, "root")
	cfg := splitstoragetest.TestConfig()
	cfg.Backend = splitstorage.BackendFile
	cfg.File.Root = root
	s, err := splitstorage.New(cfg)
	require.NoError(t, err)

	writeBackup := func(s *splitstorage.Storage, dir, name string) {
		t.Helper()
		h, err := s.StartBackup(ctx, dir, name)
		require.NoError(t, err)
		w, err := h.AddFile(ctx, "MANIFEST", 0)
		require.NoError(t, err)
		_, err = io.WriteString(w, "victim data "+dir+"/"+name)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoError(t, h.EndBackup(ctx))
	}
	// The sibling backup, inside the root.
	writeBackup(s, "ks/0", "b")
	// Victims outside the root: complete backups where "../victim/0" and
	// friends lead, and the same at the absolute path.
	outside := cfg
	outside.File.Root = top
	so, err := splitstorage.New(outside)
	require.NoError(t, err)
	writeBackup(so, "victim/0", "b")
	writeBackup(so, "victim/0", "victim")
	require.NoError(t, os.WriteFile(filepath.Join(top, "victim.txt"), []byte("victim"), 0o640))
	before := treeHash(t, top)
	require.Contains(t, before, filepath.Join("victim", "0", "b", ".complete"))

	refused := func(what string, err error) {
		t.Helper()
		if assert.Error(t, err, what) {
			assert.Contains(t, err.Error(), "split storage: invalid", what)
		}
	}
	abs := filepath.Join(top, "victim", "0")
	for _, dir := range append(hostileDirs, abs, strings.TrimPrefix(abs, "/")+"/../../..") {
		_, err := s.ListBackups(ctx, dir)
		refused("ListBackups("+dir+")", err)
		_, err = s.ListIncomplete(ctx, dir)
		refused("ListIncomplete("+dir+")", err)
		_, err = s.StartBackup(ctx, dir, "b")
		refused("StartBackup("+dir+")", err)
		refused("RemoveBackup("+dir+")", s.RemoveBackup(ctx, dir, "b"))
	}
	for _, name := range hostileNames {
		_, err = s.StartBackup(ctx, "ks/0", name)
		refused("StartBackup(ks/0, "+name+")", err)
		refused("RemoveBackup(ks/0, "+name+")", s.RemoveBackup(ctx, "ks/0", name))
	}
	// File names, on a backup in progress and on a complete one.
	h, err := s.StartBackup(ctx, "ks/0", "in-progress")
	require.NoError(t, err)
	for _, name := range hostileNames {
		_, err := h.AddFile(ctx, name, 0)
		refused("AddFile("+name+")", err)
	}
	require.NoError(t, h.AbortBackup(ctx))
	bhs, err := s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 1)
	for _, name := range hostileNames {
		_, err := bhs[0].ReadFile(ctx, name)
		refused("ReadFile("+name+")", err)
	}

	assert.Equal(t, before, treeHash(t, top), "files outside the root or the sibling backup changed")

	// What Vitess uses keeps working.
	for _, dir := range goodDirs {
		for _, name := range goodNames {
			writeBackup(s, dir, name)
		}
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		var listed []string
		for _, bh := range bhs {
			listed = append(listed, bh.Name())
		}
		for _, name := range goodNames {
			assert.Contains(t, listed, name, dir)
		}
		for _, name := range goodNames {
			require.NoError(t, s.RemoveBackup(ctx, dir, name))
		}
	}
	// And the sibling backup was there all along.
	bhs, err = s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 1)
	assert.Equal(t, "b", bhs[0].Name())
}

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A checkout under a private directory (/root is 0700) must be staged where the cluster's
// unprivileged user can reach it.
func TestStageFileFromPrivateDir(t *testing.T) {
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(private, "vttablet")
	if err := os.WriteFile(src, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if reachableByOthers(src) {
		t.Fatalf("%s reported reachable through a 0700 directory", src)
	}
	dst := t.TempDir()
	if err := os.Chmod(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	staged, err := stageFile(src, dst, &runAs{name: "nobody", uid: 65534, gid: 65534})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(staged, dst) {
		t.Fatalf("staged at %s, want under %s", staged, dst)
	}
	if got, err := stageFile(staged, dst, nil); err != nil || got != staged {
		t.Fatalf("without a run-as user files are used in place: got %s, %v", got, err)
	}
}

package endtoend

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// TestExampleFlagFiles checks every config/*.flags file against the built binary it is for:
// every flag exists and the plugins' startup validation accepts the values.
func TestExampleFlagFiles(t *testing.T) {
	paths := discoverBinaries(t)
	root, err := cluster.RepoRoot()
	must(t, err)
	files, err := filepath.Glob(filepath.Join(root, "config", "*.flags"))
	must(t, err)
	if len(files) == 0 {
		t.Fatal("no config/*.flags files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			bin, _, _ := strings.Cut(filepath.Base(f), "-")
			flags := readFlagFile(t, f)
			// Fail right after flag validation: an unknown topology implementation.
			args := append(flags, "--config-file-not-found-handling=ignore", "--topo-implementation=none-on-purpose")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(paths.BinDir, bin), args...)
			cmd.Dir = t.TempDir()
			out, _ := cmd.CombinedOutput()
			for _, bad := range []string{"unknown flag", "plugin flags", "invalid argument"} {
				if strings.Contains(string(out), bad) {
					t.Fatalf("%s rejects %s (%q):\n%s", bin, filepath.Base(f), bad, lastLines(string(out), 20))
				}
			}
		})
	}
}

func readFlagFile(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	var flags []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		flags = append(flags, os.Expand(l, func(string) string { return "example" }))
	}
	must(t, sc.Err())
	return flags
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestDefaultsPassStartupValidation: with fifo as the engine and split as the storage and no
// other plugin flag but the storage's root, vttablet and vtbackup get past the plugins'
// startup validation whatever the host's CPU count (--fifo-backup-lanes defaults to auto),
// and with 64 explicit lanes; lanes whose parts exceed the spool's whole file system are
// refused at startup, naming the flags.
func TestDefaultsPassStartupValidation(t *testing.T) {
	paths := discoverBinaries(t)
	for _, bin := range []string{"vttablet", "vtbackup"} {
		for _, c := range []struct {
			extra []string
			ok    bool
		}{
			{nil, true},
			{[]string{"--fifo-backup-lanes=64"}, true},
			{[]string{"--fifo-backup-lanes=64", "--split-storage-part-size=16MiB"}, true},
			// 64 lanes and 256 uploads of 5 GiB parts (1.6 TB) exceed any test machine's spool.
			{[]string{"--fifo-backup-lanes=64", "--split-storage-part-size=5GiB", "--split-storage-upload-concurrency=256"}, false},
		} {
			t.Run(fmt.Sprintf("%s/%v", bin, c.extra), func(t *testing.T) {
				args := append([]string{"--config-file-not-found-handling=ignore", "--topo-implementation=none-on-purpose",
					"--backup-engine-implementation=fifo", "--backup-storage-implementation=split", "--split-storage-root=" + t.TempDir()}, c.extra...)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, filepath.Join(paths.BinDir, bin), args...)
				cmd.Dir = t.TempDir()
				out, _ := cmd.CombinedOutput()
				refused := strings.Contains(string(out), "plugin flags")
				if c.ok && (refused || !strings.Contains(string(out), "servenv.Init")) {
					t.Fatalf("%s did not get past the plugins' validation (to servenv.Init) with %v:\n%s", bin, args, lastLines(string(out), 10))
				}
				if !c.ok && (!refused || !strings.Contains(string(out), "--split-storage-spool-dir")) {
					t.Fatalf("%s must refuse %v at startup naming the spool:\n%s", bin, args, lastLines(string(out), 10))
				}
			})
		}
	}
}

package endtoend

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/engines"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/plugintest"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/storages"
)

// TestHelpListsPluginFlags checks the built binaries: engine flags in vttablet and vtbackup,
// storage flags in vttablet, vtbackup and vtctld.
func TestHelpListsPluginFlags(t *testing.T) {
	paths := discoverBinaries(t)
	engineFlags := plugin.FlagNames(engines.All...)
	storageFlags := plugin.FlagNames(storages.All...)
	if len(engineFlags) == 0 || len(storageFlags) == 0 {
		t.Fatalf("plugins linked in: %d engine flags, %d storage flags; want both", len(engineFlags), len(storageFlags))
	}
	for _, tc := range []struct {
		bin  string
		want []string
	}{
		{"vttablet", append(append([]string{"backup-engine-implementation", "backup-storage-implementation"}, engineFlags...), storageFlags...)},
		{"vtbackup", append(append([]string{"backup-engine-implementation", "backup-storage-implementation", "min-retention-count"}, engineFlags...),
			storageFlags...)},
		{"vtctld", append([]string{"backup-storage-implementation"}, storageFlags...)},
	} {
		t.Run(tc.bin, func(t *testing.T) {
			out, err := exec.Command(filepath.Join(paths.BinDir, tc.bin), "--help").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --help: %v\n%s", tc.bin, err, out)
			}
			help := string(out)
			for _, f := range tc.want {
				if !strings.Contains(help, "--"+f+" ") && !strings.Contains(help, "--"+f+"\n") {
					t.Errorf("%s --help does not list --%s", tc.bin, f)
				}
			}
		})
	}
}

// TestBadPluginFlagStopsStartup runs the built binaries with every invalid value of every
// plugin flag (and every rule between flags) in go/cmd/plugin/plugintest: each must exit
// non-zero at startup, at once, with an error naming the flag and its allowed values. One
// process per case, on one of the binaries that take its flags in turn; a few at a time.
// It also fails when a plugin flag the binaries' --help lists has no entry in the table.
func TestBadPluginFlagStopsStartup(t *testing.T) {
	paths := discoverBinaries(t)
	var listed []string
	for _, bin := range []string{"vttablet", "vtbackup", "vtctld"} {
		out, err := exec.Command(filepath.Join(paths.BinDir, bin), "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", bin, err, out)
		}
		for _, m := range pluginFlagInHelp.FindAllStringSubmatch(string(out), -1) {
			if !slices.Contains(listed, m[1]) {
				listed = append(listed, m[1])
			}
		}
	}
	missing, stale := plugintest.Uncovered(listed)
	if len(missing) > 0 {
		t.Errorf("plugin flags in the binaries' --help with no entry in plugintest.Flags: %v", missing)
	}
	if len(stale) > 0 {
		t.Errorf("plugintest.Flags lists flags the binaries do not have: %v", stale)
	}

	sem := make(chan struct{}, min(4, runtime.NumCPU()))
	for i, c := range plugintest.Cases() {
		bins := c.Binaries()
		bin := bins[i%len(bins)]
		t.Run(bin+"/"+c.Name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append(append([]string{"--config-file-not-found-handling=ignore"}, plugintest.BaseArgs...), c.Args...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(paths.BinDir, bin), args...)
			cmd.Dir = t.TempDir()
			out, err := cmd.CombinedOutput()
			line := bin + " " + strings.Join(c.Args, " ")
			if ctx.Err() != nil {
				t.Fatalf("%s: still running after a minute, not stopped at startup\n%s", line, out)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("%s: exited 0 (%v)\n%s", line, err, out)
			}
			msg := startupError(string(out))
			if msg == "" {
				t.Fatalf("%s: exit %d without an error line\n%s", line, exit.ExitCode(), out)
			}
			if missing := c.Check(msg); missing != "" {
				t.Fatalf("%s: the error does not name %s:\n%s", line, missing, msg)
			}
		})
	}
}

// pluginFlagInHelp matches a plugin flag in --help.
var pluginFlagInHelp = regexp.MustCompile(`(?m)^\s+--((?:fifo-backup|split-storage)-[a-z0-9-]+)\b`)

// startupError is the error cobra printed ("Error: ..."), up to the usage that follows, so
// that the flags and allowed values listed in the usage do not count as named by the error.
func startupError(out string) string {
	_, msg, ok := strings.Cut(out, "Error: ")
	if !ok {
		return ""
	}
	for _, end := range []string{"\nUsage:", "\nExamples:", "\nFlags:"} {
		msg, _, _ = strings.Cut(msg, end)
	}
	return msg
}

// TestUnusedStorageFlagsNotValidated: a binary configured with a stock storage must not be
// stopped by the split storage's unset flags (the drop-in binaries keep stock behaviour).
func TestUnusedStorageFlagsNotValidated(t *testing.T) {
	paths := discoverBinaries(t)
	cmd := exec.Command(filepath.Join(paths.BinDir, "vtctld"), "--backup-storage-implementation=file",
		"--file-backup-storage-root="+t.TempDir(), "--config-file-not-found-handling=ignore", "--port=-1")
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "invalid split plugin flags") {
		t.Fatalf("vtctld with file storage was stopped by the split storage's flags:\n%s", out)
	}
}

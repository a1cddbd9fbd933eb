package endtoend

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/engines"
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
		{"vtbackup", append(append([]string{"backup-engine-implementation", "backup-storage-implementation", "min-retention-count"}, engineFlags...), storageFlags...)},
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

// TestBadPluginFlagStopsStartup checks that ValidateFlags runs at startup: a bad value stops
// the process with an error naming the flag, before it does anything else.
func TestBadPluginFlagStopsStartup(t *testing.T) {
	paths := discoverBinaries(t)
	for _, tc := range []struct {
		bin, flag string
		extra     []string
	}{
		{"vttablet", "--fifo-backup-lanes=0", nil},
		{"vtbackup", "--fifo-backup-source=pipe", nil},
		{"vtctld", "--split-storage-backend=tape", []string{"--backup-storage-implementation=split"}},
		{"vttablet", "--split-storage-part-size=0", []string{"--backup-storage-implementation=split", "--split-storage-root=/nonexistent"}},
	} {
		t.Run(tc.bin+tc.flag, func(t *testing.T) {
			args := append([]string{tc.flag, "--config-file-not-found-handling=ignore"}, tc.extra...)
			cmd := exec.Command(filepath.Join(paths.BinDir, tc.bin), args...)
			cmd.Dir = t.TempDir()
			out, err := cmd.CombinedOutput()
			name, _, _ := strings.Cut(strings.TrimPrefix(tc.flag, "--"), "=")
			if err == nil {
				t.Fatalf("%s %s exited 0\n%s", tc.bin, tc.flag, out)
			}
			named := false
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, "invalid") && strings.Contains(l, name) {
					named = true
				}
			}
			if !named {
				t.Fatalf("%s %s: error does not name --%s:\n%s", tc.bin, tc.flag, name, out)
			}
		})
	}
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

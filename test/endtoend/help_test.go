package endtoend

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/engines"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/storages"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// TestHelpListsPluginFlags checks the built binaries: engine flags in vttablet and vtbackup,
// storage flags in vttablet, vtbackup and vtctld.
func TestHelpListsPluginFlags(t *testing.T) {
	paths, err := cluster.Discover(cluster.Paths{})
	if errors.Is(err, cluster.ErrPrereq) && os.Getenv("VTFIFO_E2E") != "require" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	engineFlags := plugin.FlagNames(engines.All...)
	storageFlags := plugin.FlagNames(storages.All...)
	if len(engineFlags) == 0 || len(storageFlags) == 0 {
		t.Logf("plugins linked in: %d engine flags, %d storage flags", len(engineFlags), len(storageFlags))
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

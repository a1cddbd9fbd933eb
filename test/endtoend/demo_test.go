package endtoend

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vtfifo/vtfifo/go/testutil/tier"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// TestDemo runs the README's demo (smaller data) so `make demo` cannot rot unnoticed.
func TestDemo(t *testing.T) {
	tier.Integration(t, "a local Vitess cluster")
	if _, err := cluster.Discover(cluster.Paths{}); err != nil {
		if errors.Is(err, cluster.ErrPrereq) && os.Getenv("VTFIFO_E2E") != "require" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	root, err := cluster.RepoRoot()
	must(t, err)
	cmd := exec.Command("go", "run", "./test/endtoend/cmd/demo")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "VTFIFO_DEMO_ROWS=5000")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{"DEMO PASSED", "orders", "per-phase stats", "BackupEngine   Fifo", "RestoreBytes"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

package sidebyside

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestRender re-renders docs/benchmarks.md and the chart from
// build/bench/results.json (BENCH_RESULTS overrides); it skips when no
// results exist, so it costs nothing in `make test`.
func TestRender(t *testing.T) {
	root := splitstoragetest.RepoRoot()
	path := envOr("BENCH_RESULTS", filepath.Join(root, "build", "bench", "results.json"))
	res, err := Load(path)
	if os.IsNotExist(err) {
		t.Skipf("no %s: run make bench first", path)
	}
	require.NoError(t, err)
	doc := envOr("BENCH_DOC", filepath.Join(root, "docs", "benchmarks.md"))
	require.NoError(t, Render(res, doc, filepath.Join(filepath.Dir(doc), "img", "benchmarks-time.svg")))
}

func TestMedian(t *testing.T) {
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	require.Equal(t, 0.0, median(nil))
}

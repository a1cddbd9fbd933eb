// Package layers holds the test of the project's import rules
// (docs/architecture.md, "Who may import whom").
package layers

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mod = "github.com/vtfifo/vtfifo/"

// rules: a package (its non-test files, and everything they import,
// transitively) may depend on nothing of ours but what allowed lists.
var rules = map[string][]string{
	"go/xbstream":                 {},
	"go/internal/flagvalue":       {},
	"go/internal/mysqlfilename":   {},
	"go/internal/unreadable":      {},
	"go/internal/mysqlinstall":    {},
	"go/internal/retention":       {},
	"go/internal/vtusers":         {},
	"go/internal/hostmem":         {},
	"go/internal/procident":       {},
	"go/vt/vtversion":             {},
	"go/vt/mysqlctl/backuphandle": {},
	"go/vt/mysqlctl/splitstorage": {"go/internal/flagvalue", "go/vt/mysqlctl/splitstorage/backend/...",
		"go/vt/mysqlctl/splitstorage/crypt", "go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/procident"},
	"go/vt/mysqlctl/splitstorage/backend":         {"go/internal/flagvalue", "go/internal/unreadable"},
	"go/vt/mysqlctl/splitstorage/crypt":           {},
	"go/vt/mysqlctl/splitstorage/backend/local":   {"go/vt/mysqlctl/splitstorage/backend", "go/internal/flagvalue", "go/internal/unreadable"},
	"go/vt/mysqlctl/splitstorage/backend/s3":      {"go/vt/mysqlctl/splitstorage/backend", "go/internal/flagvalue", "go/internal/unreadable"},
	"go/vt/mysqlctl/splitstorage/backend/gcs":     {"go/vt/mysqlctl/splitstorage/backend", "go/internal/flagvalue", "go/internal/unreadable"},
	"go/vt/mysqlctl/splitstorage/backend/azure":   {"go/vt/mysqlctl/splitstorage/backend", "go/internal/flagvalue", "go/internal/unreadable"},
	"go/vt/mysqlctl/splitstorage/backend/retry":   {"go/vt/mysqlctl/splitstorage/backend", "go/internal/flagvalue", "go/internal/unreadable"},
	"go/vt/mysqlctl/splitstorage/backend/limiter": {"go/vt/mysqlctl/splitstorage/backend", "go/internal/flagvalue", "go/internal/unreadable"},
	"go/vt/mysqlctl/fifobackupengine":             {"go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename", "go/internal/unreadable", "go/xbstream", "go/vt/mysqlctl/backuphandle", "go/internal/procident"},
	"go/vt/mysqlctl/tableimport":                  {"go/internal/mysqlfilename"},
	"go/vt/mysqlctl/testrestore": {"go/internal/mysqlinstall", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename", "go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage",
		"go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt", "go/xbstream", "go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/procident"},
	"go/cmd/plugin": {"go/internal/flagvalue"},
	"go/cmd/plugin/testrestoreplugin": {"go/cmd/plugin", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename", "go/vt/mysqlctl/fifobackupengine",
		"go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt", "go/vt/mysqlctl/testrestore",
		"go/xbstream", "go/internal/retention", "go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/mysqlinstall", "go/internal/procident"},
	"go/cmd/plugin/storages": {"go/cmd/plugin", "go/internal/flagvalue", "go/vt/mysqlctl/splitstorage",
		"go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt", "go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/procident"},
	"go/cmd/plugin/engines": {"go/cmd/plugin", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename", "go/vt/mysqlctl/fifobackupengine",
		"go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt", "go/xbstream",
		"go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/procident"},
	"go/cmd/vtfifo/vtfifocli": {"go/vt/mysqlctl/tableimport", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename", "go/vt/mysqlctl/fifobackupengine",
		"go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt", "go/xbstream",
		"go/vt/mysqlctl/testrestore", "go/internal/retention", "go/vt/mysqlctl/selftest", "go/internal/vtusers", "go/vt/vtversion",
		"go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/mysqlinstall", "go/internal/procident"},
	"go/cmd/vtfifo": {"go/vt/mysqlctl/tableimport", "go/cmd/vtfifo/vtfifocli", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename",
		"go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt",
		"go/xbstream", "go/vt/mysqlctl/testrestore", "go/internal/retention", "go/vt/mysqlctl/selftest", "go/internal/vtusers", "go/vt/vtversion",
		"go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/mysqlinstall", "go/internal/procident"},
	"go/cmd/fifoverify": {"go/vt/mysqlctl/tableimport", "go/cmd/vtfifo/vtfifocli", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename",
		"go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt",
		"go/xbstream", "go/vt/mysqlctl/testrestore", "go/internal/retention", "go/vt/mysqlctl/selftest", "go/internal/vtusers", "go/vt/vtversion",
		"go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/mysqlinstall", "go/internal/procident"},
	"go/cmd/vttablet": {"go/cmd/plugin", "go/cmd/plugin/engines", "go/cmd/plugin/storages", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename",
		"go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt",
		"go/xbstream", "go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/procident"},
	"go/cmd/vtbackup": {"go/cmd/plugin", "go/cmd/plugin/engines", "go/cmd/plugin/storages", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename",
		"go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt",
		"go/xbstream", "go/cmd/plugin/testrestoreplugin", "go/vt/mysqlctl/testrestore", "go/internal/retention", "go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/mysqlinstall", "go/internal/procident"},
	"go/cmd/vtctld": {"go/cmd/plugin", "go/cmd/plugin/storages", "go/internal/flagvalue", "go/vt/mysqlctl/splitstorage",
		"go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt", "go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/procident"},
	"go/testutil/xtrabackupstandin": {"go/xbstream"},
	"go/vt/mysqlctl/selftest": {"go/internal/vtusers", "go/internal/flagvalue", "go/internal/hostmem", "go/internal/mysqlfilename", "go/vt/mysqlctl/fifobackupengine",
		"go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt", "go/vt/mysqlctl/tableimport",
		"go/vt/mysqlctl/testrestore", "go/xbstream", "go/internal/retention", "go/vt/vtversion", "go/vt/mysqlctl/backuphandle", "go/internal/unreadable", "go/internal/mysqlinstall", "go/internal/procident"},
}

// TestImportRules: lower layers never import higher ones (xbstream nothing
// of ours; the storage and the engine not each other; no product code the
// test helpers), so each layer can be changed and tested on its own.
func TestImportRules(t *testing.T) {
	args := []string{"list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}
	for pkg := range rules {
		args = append(args, mod+pkg)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		allowed, ok := rules[pkg]
		require.True(t, ok, "go list answered for %s", fields[0])
		seen++
		for _, dep := range fields[1:] {
			ours, isOurs := strings.CutPrefix(dep, mod)
			if !isOurs {
				continue
			}
			assert.True(t, allows(allowed, ours), "%s depends on %s, which its layer may not (docs/architecture.md)", pkg, ours)
		}
	}
	assert.Equal(t, len(rules), seen, "every ruled package listed")
}

// allows says whether dep is in allowed, where "p/..." stands for p and every
// package under it.
func allows(allowed []string, dep string) bool {
	for _, a := range allowed {
		if tree, ok := strings.CutSuffix(a, "/..."); ok && (dep == tree || strings.HasPrefix(dep, tree+"/")) {
			return true
		}
		if a == dep {
			return true
		}
	}
	return false
}

// testSupport are the packages that only tests, benchmarks and generators
// import: no rule above allows them, so no product package depends on them.
var testSupport = []string{"go/testutil/...", "test/...", "go/internal/layers", "go/cmd/plugin/flagsdoc", "go/cmd/plugin/plugintest",
	"go/vt/mysqlctl/splitstorage/backend/backendtest", "go/vt/mysqlctl/splitstorage/splitstoragetest", "go/internal/unreadable"}

// TestEveryPackageHasARule: a new package of the project is either given a
// rule (what it may import) or named test support; it is never unchecked.
func TestEveryPackageHasARule(t *testing.T) {
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = "../../.."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, line := range strings.Fields(string(out)) {
		pkg := strings.TrimPrefix(line, mod)
		_, ruled := rules[pkg]
		assert.True(t, ruled || allows(testSupport, pkg), "package %s has no rule in layers_test.go and is not test support: say what it may import", pkg)
	}
}

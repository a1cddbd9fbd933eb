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

// rules: what of ours a package's own (non-test) files may import: its
// direct allowances, where "p/..." stands for p and every package under it.
// What it may depend on through them is their closure (closure below): a
// new leaf package is one line here and one in the rule of each package
// that imports it.
var rules = map[string][]string{
	"go/xbstream":                 {},
	"go/internal/flagvalue":       {},
	"go/internal/mysqlfilename":   {},
	"go/internal/unreadable":      {},
	"go/internal/errtext":         {},
	"go/internal/mysqlinstall":    {},
	"go/internal/retention":       {},
	"go/internal/vtusers":         {},
	"go/internal/hostmem":         {},
	"go/internal/diskspace":       {},
	"go/internal/procident":       {},
	"go/internal/relver":          {},
	"go/internal/pathin":          {},
	"go/vt/vtversion":             {},
	"go/vt/mysqlctl/backuphandle": {},

	// The storage: its backends below it, each knowing only the backend
	// contract; it knows nothing of the engine.
	"go/vt/mysqlctl/splitstorage": {"go/vt/mysqlctl/splitstorage/backend/...", "go/vt/mysqlctl/splitstorage/crypt",
		"go/vt/mysqlctl/backuphandle", "go/internal/flagvalue", "go/internal/unreadable", "go/internal/procident", "go/internal/diskspace"},
	"go/vt/mysqlctl/splitstorage/crypt":           {},
	"go/vt/mysqlctl/splitstorage/backend":         {"go/internal/flagvalue", "go/internal/unreadable"},
	"go/vt/mysqlctl/splitstorage/backend/local":   backendRule,
	"go/vt/mysqlctl/splitstorage/backend/s3":      backendRule,
	"go/vt/mysqlctl/splitstorage/backend/gcs":     backendRule,
	"go/vt/mysqlctl/splitstorage/backend/azure":   backendRule,
	"go/vt/mysqlctl/splitstorage/backend/retry":   backendRule,
	"go/vt/mysqlctl/splitstorage/backend/limiter": backendRule,

	// The engine: the stream format and small helpers; nothing of the storage.
	"go/vt/mysqlctl/fifobackupengine": {"go/xbstream", "go/vt/mysqlctl/backuphandle", "go/internal/flagvalue", "go/internal/hostmem",
		"go/internal/mysqlfilename", "go/internal/unreadable", "go/internal/procident", "go/internal/errtext", "go/internal/relver",
		"go/internal/diskspace", "go/internal/pathin"},
	"go/vt/mysqlctl/tableimport": {"go/internal/mysqlfilename", "go/internal/diskspace"},
	"go/vt/mysqlctl/testrestore": {"go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage", "go/internal/mysqlinstall",
		"go/internal/flagvalue", "go/internal/mysqlfilename", "go/internal/unreadable", "go/internal/relver", "go/internal/errtext"},
	"go/vt/mysqlctl/selftest": {"go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/tableimport",
		"go/vt/mysqlctl/testrestore", "go/internal/mysqlinstall", "go/internal/vtusers", "go/vt/vtversion", "go/internal/unreadable"},

	// The commands wire them.
	"go/cmd/plugin":          {"go/internal/flagvalue"},
	"go/cmd/plugin/engines":  {"go/cmd/plugin", "go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage"},
	"go/cmd/plugin/storages": {"go/cmd/plugin", "go/vt/mysqlctl/splitstorage"},
	"go/cmd/plugin/testrestoreplugin": {"go/cmd/plugin", "go/vt/mysqlctl/testrestore", "go/vt/mysqlctl/splitstorage",
		"go/internal/flagvalue", "go/internal/retention", "go/internal/unreadable"},
	"go/cmd/vtfifo/vtfifocli": {"go/vt/mysqlctl/fifobackupengine", "go/vt/mysqlctl/splitstorage", "go/vt/mysqlctl/splitstorage/crypt",
		"go/vt/mysqlctl/tableimport", "go/vt/mysqlctl/testrestore", "go/vt/mysqlctl/selftest", "go/vt/vtversion", "go/internal/flagvalue",
		"go/internal/mysqlinstall", "go/internal/retention", "go/internal/unreadable", "go/internal/errtext", "go/internal/pathin"},
	"go/cmd/vtfifo":                 {"go/cmd/vtfifo/vtfifocli"},
	"go/cmd/fifoverify":             {"go/cmd/vtfifo/vtfifocli"},
	"go/cmd/vttablet":               {"go/cmd/plugin", "go/cmd/plugin/engines", "go/cmd/plugin/storages"},
	"go/cmd/vtbackup":               {"go/cmd/plugin", "go/cmd/plugin/engines", "go/cmd/plugin/storages", "go/cmd/plugin/testrestoreplugin"},
	"go/cmd/vtctld":                 {"go/cmd/plugin", "go/cmd/plugin/storages"},
	"go/testutil/xtrabackupstandin": {"go/xbstream"},
}

// backendRule: a backend knows the backend contract and small helpers only.
var backendRule = []string{"go/vt/mysqlctl/splitstorage/backend", "go/internal/flagvalue", "go/internal/unreadable"}

// listed is what go list says of each ruled package: its own imports and
// every package it depends on, ours only.
type listed struct{ imports, deps []string }

func goList(t *testing.T) map[string]listed {
	args := []string{"list", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`}
	for pkg := range rules {
		args = append(args, mod+pkg)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	ours := func(s string) []string {
		var out []string
		for _, p := range strings.Fields(s) {
			if o, ok := strings.CutPrefix(p, mod); ok {
				out = append(out, o)
			}
		}
		return out
	}
	got := map[string]listed{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		require.Len(t, f, 3, line)
		got[strings.TrimPrefix(f[0], mod)] = listed{imports: ours(f[1]), deps: ours(f[2])}
	}
	return got
}

// closure is what pkg may depend on: its allowances, theirs, and so on,
// each "p/..." expanded over the ruled packages.
func closure(pkg string) map[string]bool {
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		for _, a := range rules[p] {
			for ruled := range rules {
				if allows([]string{a}, ruled) && !seen[ruled] {
					seen[ruled] = true
					walk(ruled)
				}
			}
		}
	}
	walk(pkg)
	return seen
}

// TestImportRules: lower layers never import higher ones (xbstream nothing
// of ours; the storage and the engine not each other; no product code the
// test helpers), so each layer can be changed and tested on its own. Each
// package imports only its allowances, and depends, through them, only on
// their closure.
func TestImportRules(t *testing.T) {
	got := goList(t)
	assert.Len(t, got, len(rules), "every ruled package listed")
	for pkg, l := range got {
		allowed, ok := rules[pkg]
		require.True(t, ok, "go list answered for %s", pkg)
		for _, imp := range l.imports {
			assert.True(t, allows(allowed, imp), "%s imports %s, which its rule does not allow (docs/architecture.md)", pkg, imp)
		}
		within := closure(pkg)
		for _, dep := range l.deps {
			assert.True(t, within[dep], "%s depends on %s, outside the closure of its rule (docs/architecture.md)", pkg, dep)
		}
	}
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
var testSupport = []string{"go/testutil/...", "test/...", "go/internal/layers", "go/internal/codeshape", "go/cmd/plugin/flagsdoc", "go/cmd/plugin/plugintest",
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

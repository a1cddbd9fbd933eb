package vtfifocli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJSONKeysOneConvention: every key vtfifo's --json prints is
// snake_case (docs/operations.md, "JSON"); the one exception is show's
// "manifest", the MANIFEST as stored, in Vitess's own names.
func TestJSONKeysOneConvention(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	seen := map[reflect.Type]bool{}
	var check func(path string, typ reflect.Type)
	check = func(path string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() == "time" {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				check(path, f.Type)
				continue
			}
			if name == "-" {
				continue
			}
			assert.Regexp(t, snake, name, "%s.%s: json key %q", path, f.Name, name)
			check(path+"."+name, f.Type)
		}
	}
	for _, v := range []any{AsOfResult{}, CopyResult{}, ShardStatus{}, shardSummary{}, KeyCheckResult{}, BackupInfo{}, RemoveResult{}, PruneResult{}, LockResult{}, RepairResult{},
		RestoreResult{}, TestRestoreResult{}, RestoreTableResult{}, ShowReport{}, VerifyResult{}} {
		check(reflect.TypeOf(v).Name(), reflect.TypeOf(v))
	}
	// A type of this package with JSON keys that the list above does not
	// reach (a new command's result) fails until it is added there.
	reached := map[string]bool{}
	for typ := range seen {
		if typ.PkgPath() == reflect.TypeOf(VerifyResult{}).PkgPath() {
			reached[typ.Name()] = true
		}
	}
	for _, name := range jsonTypes(t) {
		assert.True(t, reached[name], "type %s has JSON keys but is not among the results this test checks: add it to the list", name)
	}
}

// jsonTypes are the struct types declared in this package's own files
// with a field that has a json tag.
func jsonTypes(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := spec.Type.(*ast.StructType); ok {
				for _, fld := range st.Fields.List {
					if fld.Tag != nil && strings.Contains(fld.Tag.Value, `json:"`) {
						out = append(out, spec.Name.Name)
						break
					}
				}
			}
			return true
		})
	}
	require.NotEmpty(t, out, "the package's result types")
	return out
}

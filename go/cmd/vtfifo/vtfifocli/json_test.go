package vtfifocli

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
	for _, v := range []any{AsOfResult{}, CopyResult{}, ShardStatus{}, KeyCheckResult{}, BackupInfo{}, RemoveResult{}, PruneResult{}, RepairResult{},
		RestoreResult{}, TestRestoreResult{}, RestoreTableResult{}, ShowReport{}, VerifyResult{}} {
		check(reflect.TypeOf(v).Name(), reflect.TypeOf(v))
	}
}

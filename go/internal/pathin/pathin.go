// Package pathin says whether a path lies in a directory, as named or as
// the file system resolves both: a path named inside it, named through a
// symbolic link to it, or leading into it, is in it.
package pathin

import (
	"path/filepath"
	"strings"
)

// Resolved is p made absolute and clean, with the symbolic links of its
// longest existing ancestor resolved (the rest, not there yet, as named).
func Resolved(p string) string {
	p = abs(p)
	var rest []string
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if filepath.Dir(dir) == dir {
			return p
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// Dir reports whether p is dir or inside it, as named (absolute and
// clean) or as the file system resolves both: named inside, it goes
// wherever dir goes; resolved inside, it is dir's.
func Dir(p, dir string) bool {
	return in(abs(p), abs(dir)) || in(Resolved(p), Resolved(dir))
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

func in(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

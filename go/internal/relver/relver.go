// Package relver compares the releases (MAJOR.MINOR.PATCH) that servers and
// backup tools print in their --version output and that a MANIFEST keeps.
package relver

import (
	"regexp"
	"strconv"
)

var triple = regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)`)

// Of is the first MAJOR.MINOR.PATCH in s ("8.0.35" of "8.0.35-30", "10.11.19"
// of "10.11.19-MariaDB-0+deb12u1"); "" when it has none.
func Of(s string) string { return triple.FindString(s) }

// Older reports whether release have (its first MAJOR.MINOR.PATCH) comes
// before than's; false when either has none.
func Older(have, than string) bool {
	h, t := triple.FindStringSubmatch(have), triple.FindStringSubmatch(than)
	if h == nil || t == nil {
		return false
	}
	for i := 1; i <= 3; i++ {
		hv, _ := strconv.Atoi(h[i])
		tv, _ := strconv.Atoi(t[i])
		if hv != tv {
			return hv < tv
		}
	}
	return false
}

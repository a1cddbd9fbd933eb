package mariadbtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// Entry describes one path of a directory tree.
type Entry struct {
	Kind string // "dir", "file" or "symlink"
	Size int64
	Hash string // sha256 of the content (files) or the link target (symlinks)
}

// Tree walks dir and returns its entries keyed by slash-separated relative path.
func Tree(t testing.TB, dir string) map[string]Entry {
	t.Helper()
	out := map[string]Entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256([]byte(target))
			out[rel] = Entry{Kind: "symlink", Hash: hex.EncodeToString(sum[:])}
		case d.IsDir():
			out[rel] = Entry{Kind: "dir"}
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			n, err := io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			out[rel] = Entry{Kind: "file", Size: n, Hash: hex.EncodeToString(h.Sum(nil))}
		default:
			out[rel] = Entry{Kind: d.Type().String()}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TreeDiff lists the differences between two trees (empty when equal).
func TreeDiff(a, b map[string]Entry) []string {
	var diffs []string
	for p, ea := range a {
		eb, ok := b[p]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("only in first: %s (%s, %d bytes)", p, ea.Kind, ea.Size))
		case ea != eb:
			diffs = append(diffs, fmt.Sprintf("differs: %s: %+v vs %+v", p, ea, eb))
		}
	}
	for p, eb := range b {
		if _, ok := a[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("only in second: %s (%s, %d bytes)", p, eb.Kind, eb.Size))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// TreesEqual fails the test unless directories a and b hold the same names,
// kinds, sizes and content hashes. It returns the number of entries compared.
func TreesEqual(t testing.TB, a, b string) int {
	t.Helper()
	ta, tb := Tree(t, a), Tree(t, b)
	diffs := TreeDiff(ta, tb)
	if len(diffs) > 20 {
		diffs = append(diffs[:20], fmt.Sprintf("... and %d more", len(diffs)-20))
	}
	require.Empty(t, diffs, "trees %s and %s differ", a, b)
	return len(ta)
}
